// Device code for the managed-memory backend (managed_kernels.cu, sm_90), called from
// cuda_managed.cc. Plain C++ signatures; streams as void*; each returns a cudaError_t as int.
#ifndef RESMEM_BACKENDS_CUDA_MANAGED_KERNELS_H_
#define RESMEM_BACKENDS_CUDA_MANAGED_KERNELS_H_

#include <cstdint>

namespace resmem::cuda {

// The word at index i of a touched range holds ManagedWord(i, key).
inline uint64_t ManagedWord(uint64_t i, uint64_t key) { return (i * 0x9e3779b97f4a7c15ull) ^ key; }

// A kernel touches every 64-bit word of p[0, words): writes ManagedWord(first + i, key), or reads
// each and adds the ones that differ from it to *dev_mismatches (device memory).
int LaunchManagedTouch(uint64_t* p, uint64_t words, uint64_t first, bool write, uint64_t key,
                       unsigned long long* dev_mismatches, void* stream);

}  // namespace resmem::cuda

#endif  // RESMEM_BACKENDS_CUDA_MANAGED_KERNELS_H_
