// Device-side helpers built by nvcc (kernels.cu, sm_90) and called from cuda_gpu.cc. Plain C++
// signatures: streams are passed as void* (a cudaStream_t). Each returns a cudaError_t as int.
#ifndef RESMEM_BACKENDS_CUDA_KERNELS_H_
#define RESMEM_BACKENDS_CUDA_KERNELS_H_

#include <cstdint>

namespace resmem::cuda {

// Counts the 64-bit words of dev[0, len) that differ from the block pattern (block_pattern.h)
// for (seq, fill_seed); the count lands in *dev_count (device memory, zeroed by the caller).
int LaunchCountPatternMismatches(const void* dev, uint64_t len, uint64_t seq, uint64_t fill_seed,
                                 unsigned long long* dev_count, void* stream);

// Copies len bytes from src to dst with a kernel: the zero-copy path, where one side is host
// memory the device reaches through a mapped (or pageable, with HMM) pointer.
int LaunchKernelCopy(void* dst, const void* src, uint64_t len, void* stream);

// The kernel of a copy/kernel pipeline (seed 001): sums the 64-bit words of src[0, len) into
// *dev_sum (device memory) and holds its SMs until `busy_ns` nanoseconds after it started
// (%globaltimer), so the kernel's length is set, not guessed from arithmetic.
int LaunchReadAndHold(const void* src, uint64_t len, uint64_t busy_ns,
                      unsigned long long* dev_sum, void* stream);

}  // namespace resmem::cuda

#endif  // RESMEM_BACKENDS_CUDA_KERNELS_H_
