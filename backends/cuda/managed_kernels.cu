// Device code for the managed-memory backend: a kernel that touches every word of a range.
#include <cuda_runtime.h>

#include "backends/cuda/managed_kernels.h"

namespace resmem::cuda {
namespace {

__global__ void TouchKernel(uint64_t* p, uint64_t words, uint64_t first, bool write, uint64_t key,
                            unsigned long long* mismatches) {
  unsigned long long bad = 0;
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < words;
       i += (uint64_t)gridDim.x * blockDim.x) {
    const uint64_t want = ((first + i) * 0x9e3779b97f4a7c15ull) ^ key;
    if (write) p[i] = want;
    else bad += p[i] != want;
  }
  if (bad) atomicAdd(mismatches, bad);
}

}  // namespace

int LaunchManagedTouch(uint64_t* p, uint64_t words, uint64_t first, bool write, uint64_t key,
                       unsigned long long* dev_mismatches, void* stream) {
  uint64_t blocks = (words + 255) / 256;
  if (blocks < 1) blocks = 1;
  if (blocks > 1056) blocks = 1056;  // 8 per SM on 132 SMs, as kernels.cu
  TouchKernel<<<static_cast<unsigned>(blocks), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      p, words, first, write, key, dev_mismatches);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace resmem::cuda
