// Device code for the CUDA backend: the pattern check and the zero-copy kernel copy.
#include <cuda_runtime.h>

#include "backends/cuda/block_pattern.h"
#include "backends/cuda/kernels.h"

namespace resmem::cuda {
namespace {

__global__ void CountMismatchesKernel(const uint64_t* w, uint64_t words, uint64_t seq,
                                      uint64_t fill_seed, unsigned long long* count) {
  unsigned long long bad = 0;
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < words;
       i += (uint64_t)gridDim.x * blockDim.x)
    bad += w[i] != pattern::Word(i, seq, fill_seed);
  if (bad) atomicAdd(count, bad);
}

__global__ void CopyKernel(uint4* dst, const uint4* src, uint64_t n16, unsigned char* dst_tail,
                           const unsigned char* src_tail, uint64_t tail) {
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n16;
       i += (uint64_t)gridDim.x * blockDim.x)
    dst[i] = src[i];
  if (blockIdx.x == 0 && threadIdx.x < tail) dst_tail[threadIdx.x] = src_tail[threadIdx.x];
}

__device__ uint64_t GlobalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// One block per SM (resident together): each reads its share, then waits out busy_ns from its
// own start.
__global__ void ReadAndHoldKernel(const uint64_t* w, uint64_t words, uint64_t busy_ns,
                                  unsigned long long* sum) {
  const uint64_t start = GlobalTimerNs();
  unsigned long long s = 0;
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < words;
       i += (uint64_t)gridDim.x * blockDim.x)
    s += w[i];
  if (s) atomicAdd(sum, s);
  while (GlobalTimerNs() - start < busy_ns) {
  }
}

unsigned Blocks(uint64_t items) {
  uint64_t b = (items + 255) / 256;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 1056 ? 1056 : b));  // 8 per SM on 132 SMs
}

}  // namespace

int LaunchCountPatternMismatches(const void* dev, uint64_t len, uint64_t seq, uint64_t fill_seed,
                                 unsigned long long* dev_count, void* stream) {
  uint64_t words = len / 8;
  CountMismatchesKernel<<<Blocks(words), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const uint64_t*>(dev), words, seq, fill_seed, dev_count);
  return static_cast<int>(cudaGetLastError());
}

int LaunchReadAndHold(const void* src, uint64_t len, uint64_t busy_ns,
                      unsigned long long* dev_sum, void* stream) {
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  ReadAndHoldKernel<<<sms > 0 ? sms : 1, 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const uint64_t*>(src), len / 8, busy_ns, dev_sum);
  return static_cast<int>(cudaGetLastError());
}

int LaunchKernelCopy(void* dst, const void* src, uint64_t len, void* stream) {
  // Vector loads need 16-byte alignment of both sides; otherwise copy bytes through the tail path
  // in pieces of at most 256 bytes (slow, but correct).
  bool aligned = (reinterpret_cast<uintptr_t>(dst) % 16 == 0) &&
                 (reinterpret_cast<uintptr_t>(src) % 16 == 0);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (aligned) {
    uint64_t n16 = len / 16, tail = len % 16;
    CopyKernel<<<Blocks(n16), 256, 0, s>>>(
        static_cast<uint4*>(dst), static_cast<const uint4*>(src), n16,
        static_cast<unsigned char*>(dst) + n16 * 16,
        static_cast<const unsigned char*>(src) + n16 * 16, tail);
  } else {
    for (uint64_t off = 0; off < len; off += 256) {
      uint64_t piece = len - off < 256 ? len - off : 256;
      CopyKernel<<<1, 256, 0, s>>>(nullptr, nullptr, 0, static_cast<unsigned char*>(dst) + off,
                                   static_cast<const unsigned char*>(src) + off, piece);
    }
  }
  return static_cast<int>(cudaGetLastError());
}

}  // namespace resmem::cuda
