// Measures, on a machine with a real GPU, the figures the cuda-13.0-r580 profile of the CUDA model
// uses (mock/gpu/cuda_profile.cc): pinned and pageable copy rates in both directions, the host's
// one-thread memcpy rate with a cache-warm and a cache-cold source, MemTotal and the host caches.
// Build: nvcc -O2 -cudart static -o measure_copies mock/gpu/tools/measure_copies.cu
// Every rate is a median of `kPasses` timed passes, in GB/s (1e9 B/s).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr int kPasses = 20;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

bool Check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::printf("%s failed: %d %s\n", what, static_cast<int>(e), cudaGetErrorName(e));
    return false;
  }
  return true;
}

double CopyGBps(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<double> rates;
  cudaMemcpy(dst, src, bytes, kind);  // warm-up
  for (int i = 0; i < kPasses; ++i) {
    cudaEventRecord(a);
    cudaMemcpy(dst, src, bytes, kind);
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    rates.push_back(bytes / (ms * 1e-3) / 1e9);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return Median(rates);
}

double HostMemcpyGBps(size_t bytes, bool warm) {
  // Cold: rotate through a pool 8x larger than the copy so the source is not cache-resident.
  const size_t pool = warm ? bytes : bytes * 8;
  std::vector<char> src(pool, 1), dst(bytes, 2);
  std::vector<double> rates;
  for (int i = 0; i < kPasses; ++i) {
    const char* s = src.data() + (warm ? 0 : (i % 8) * bytes);
    auto t0 = std::chrono::steady_clock::now();
    std::memcpy(dst.data(), s, bytes);
    auto t1 = std::chrono::steady_clock::now();
    rates.push_back(bytes / std::chrono::duration<double>(t1 - t0).count() / 1e9);
  }
  volatile char sink = dst[bytes / 2];
  (void)sink;
  return Median(rates);
}

}  // namespace

int main() {
  std::system("grep -E 'MemTotal|Hugepagesize' /proc/meminfo; nproc;"
              " grep -m1 'model name' /proc/cpuinfo;"
              " for i in 0 1 2 3; do f=/sys/devices/system/cpu/cpu0/cache/index$i;"
              " [ -d $f ] && echo cache L$(cat $f/level) $(cat $f/type) $(cat $f/size); done");
  for (size_t mib : {16, 256}) {
    const size_t bytes = mib << 20;
    std::printf("host memcpy 1 thread %zu MiB: warm %.2f cold %.2f GB/s\n", mib,
                HostMemcpyGBps(bytes, true), HostMemcpyGBps(bytes, false));
  }
  void* dev = nullptr;
  if (!Check(cudaMalloc(&dev, 256u << 20), "cudaMalloc")) return 1;
  for (size_t mib : {16, 256}) {
    const size_t bytes = mib << 20;
    void* pinned = nullptr;
    if (!Check(cudaMallocHost(&pinned, bytes), "cudaMallocHost")) return 1;
    std::memset(pinned, 3, bytes);
    std::vector<char> pageable(bytes, 4);
    std::printf("%zu MiB pinned H2D %.2f D2H %.2f; pageable H2D %.2f D2H %.2f GB/s\n", mib,
                CopyGBps(dev, pinned, bytes, cudaMemcpyHostToDevice),
                CopyGBps(pinned, dev, bytes, cudaMemcpyDeviceToHost),
                CopyGBps(dev, pageable.data(), bytes, cudaMemcpyHostToDevice),
                CopyGBps(pageable.data(), dev, bytes, cudaMemcpyDeviceToHost));
    cudaFreeHost(pinned);
  }
  cudaFree(dev);
  return 0;
}
