// What the CUDA runtime answers for ranges that run past a host mapping or a device allocation.
#include <cuda_runtime.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cstdio>
#include <cstring>

static void say(const char* what, cudaError_t e) {
  std::printf("%-70s -> %d %s\n", what, (int)e, cudaGetErrorName(e));
  cudaGetLastError();
}

int main() {
  const size_t K64 = 64 << 10, M4 = 4 << 20;
  setvbuf(stdout, nullptr, _IONBF, 0);
  cudaFree(0);
  // Host: 128 KiB mapped, last 64 KiB unmapped.
  char* h = (char*)mmap(nullptr, 2 * K64, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  memset(h, 1, 2 * K64);
  munmap(h + K64, K64);
  say("cudaHostRegister 128K over 64K mapped + 64K unmapped", cudaHostRegister(h, 2 * K64, 0));
  say("cudaHostRegister 64K mapped", cudaHostRegister(h, K64, 0));
  cudaHostUnregister(h);
  // Two adjacent mappings.
  char* a = (char*)mmap(nullptr, 2 * K64, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  memset(a, 1, 2 * K64);
  munmap(a + K64, K64);
  char* b = (char*)mmap(a + K64, K64, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  memset(b, 1, K64);
  say("cudaHostRegister 128K over two adjacent mappings (private+shared)", cudaHostRegister(a, 2 * K64, 0));
  cudaHostUnregister(a);
  // Device: one 4 MiB allocation, copies past its end.
  char* host = nullptr;
  cudaMallocHost(&host, 2 * M4);
  char *d1 = nullptr, *d2 = nullptr;
  cudaMalloc(&d1, M4);
  say("cudaMemcpy H2D 4M at +2M into a 4M allocation (alone)", cudaMemcpy(d1 + M4 / 2, host, M4, cudaMemcpyHostToDevice));
  say("cudaMemcpy D2H 4M from +2M of a 4M allocation (alone)", cudaMemcpy(host, d1 + M4 / 2, M4, cudaMemcpyDeviceToHost));
  say("cudaMemcpyAsync H2D 4M at +2M (alone)", cudaMemcpyAsync(d1 + M4 / 2, host, M4, cudaMemcpyHostToDevice, 0));
  say("  sync", cudaDeviceSynchronize());
  say("cudaMemset 4M at +2M (alone)", cudaMemset(d1 + M4 / 2, 0, M4));
  say("  sync", cudaDeviceSynchronize());
  cudaMalloc(&d2, M4);
  std::printf("d1 %p d2 %p (d2 - d1 = %lld)\n", (void*)d1, (void*)d2, (long long)(d2 - d1));
  char* lower = d1 < d2 ? d1 : d2;
  say("cudaMemcpy H2D 4M at +2M of the lower of two allocations", cudaMemcpy(lower + M4 / 2, host, M4, cudaMemcpyHostToDevice));
  say("cudaMemcpy D2H 4M from +2M of the lower of two allocations", cudaMemcpy(host, lower + M4 / 2, M4, cudaMemcpyDeviceToHost));
  say("cudaMemcpy H2D 1 byte past the end (alone-sized copy 4M+1 at +0)", cudaMemcpy(d1, host, M4 + 1, cudaMemcpyHostToDevice));
  // Unregistered host source running into unmapped pages.
  char* u = (char*)mmap(nullptr, 2 * K64, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  memset(u, 1, 2 * K64);
  munmap(u + K64, K64);
  say("cudaMemcpy H2D 128K from pageable 64K mapped + 64K unmapped", cudaMemcpy(d1, u, 2 * K64, cudaMemcpyHostToDevice));
  say("cudaMemcpy D2H 128K into pageable 64K mapped + 64K unmapped", cudaMemcpy(u, d1, 2 * K64, cudaMemcpyDeviceToHost));
  say("last error", cudaGetLastError());
  return 0;
}
