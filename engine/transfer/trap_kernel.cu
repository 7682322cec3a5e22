// trap_kernel.h's kernel, compiled by the toolkit's nvcc for sm_90 (BUILD: trap_kernel_obj).
#include "engine/transfer/trap_kernel.h"

#include <cuda_runtime.h>

namespace resmem::transfer {
namespace {

__global__ void TrapAfter(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
  __trap();
}

}  // namespace

int LaunchTrapAfter(long long cycles) {
  cudaStream_t s = nullptr;
  cudaError_t err = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (err != cudaSuccess) return err;
  TrapAfter<<<1, 1, 0, s>>>(cycles);
  err = cudaGetLastError();
  cudaStreamDestroy(s);  // the kernel runs on; the stream goes when it ends
  return err;
}

}  // namespace resmem::transfer
