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

// A staged copy moved by the SMs instead of copy-engine DMAs (CudaGpu::LaunchPieceCopy). The
// copy is cut into pieces of `piece` bytes numbered base+1 .. base+n; piece p lives in ring slot
// p % slots. Host to device: the kernel waits for cpu_words[slot] to reach the piece's number
// (the CPU filled it), reads it from the ring, and sets gpu_words[slot] (consumed). Device to
// host: it waits for cpu_words[slot] to reach the number of the slot's previous piece (drained),
// writes the piece into the ring, and sets gpu_words[slot] (filled). Numbers compare cyclically.
// The last block sets done_word[2 * kWordStride] to the kernel's block count and then
// done_word[0] = base + n; done_word[kWordStride] == base tells the kernel the CPU abandoned the
// copy (every waiting block then stops). piece and length are multiples of 16.
// Each word sits alone in a 64-byte line (kWordStride words apart): the CPU lanes and the
// device's polls then never share a cache line.
constexpr uint32_t kWordStride = 16;
struct PieceCopyArgs {
  uint8_t* dev = nullptr;   // the device side, at the copy's offset
  uint8_t* ring = nullptr;  // the device's view of the pinned ring (slots * piece bytes)
  uint64_t length = 0, piece = 0;
  uint32_t slots = 0, base = 0;
  bool h2d = true;
  volatile uint32_t* cpu_words = nullptr;  // device views of mapped host words
  volatile uint32_t* gpu_words = nullptr;
  volatile uint32_t* done_word = nullptr;  // [0] done, [kWordStride] abandoned, [2 kWordStride] blocks
  unsigned int* blocks_done = nullptr;     // device memory, 0 between launches
  int blocks = 0;  // the kernel's blocks (CudaGpu::PieceRing::blocks: at most one per SM)
};
int LaunchPieceCopy(const PieceCopyArgs& args, void* stream);

}  // namespace resmem::cuda

#endif  // RESMEM_BACKENDS_CUDA_KERNELS_H_
