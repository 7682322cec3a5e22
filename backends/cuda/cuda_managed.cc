#include "backends/cuda/cuda_managed.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>

#include "backends/cuda/cuda_gpu.h"
#include "backends/cuda/managed_kernels.h"

namespace resmem::cuda {
namespace {

Status Err(cudaError_t err, const std::string& call) {
  cudaGetLastError();  // clear a non-sticky error; return it as a value
  return Status::Cuda(static_cast<int>(err), call + " -> " + CudaCodeText(static_cast<int>(err)));
}

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

cudaMemLocation Location(Processor p, int device) {
  cudaMemLocation loc{};
  if (p == Processor::kGpu) {
    loc.type = cudaMemLocationTypeDevice;
    loc.id = device;
  } else {
    loc.type = cudaMemLocationTypeHost;
    loc.id = 0;
  }
  return loc;
}

}  // namespace

Result<std::unique_ptr<CudaManaged>> CudaManaged::Create(int device) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    cudaGetLastError();
    return Status::Unavailable("no GPU: cudaGetDeviceCount -> " +
                               (err != cudaSuccess ? CudaCodeText(err) : std::string("0 devices")) +
                               "; run on a machine with an NVIDIA GPU and driver, or use --backend sim");
  }
  if ((err = cudaSetDevice(device)) != cudaSuccess) return Err(err, "cudaSetDevice");
  int concurrent = 0;
  if ((err = cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, device)) != cudaSuccess)
    return Err(err, "cudaDeviceGetAttribute(ConcurrentManagedAccess)");
  std::unique_ptr<CudaManaged> m(new CudaManaged());
  m->device_ = device;
  if (!concurrent)
    m->unavailable_ = "device " + std::to_string(device) +
                      " reports cudaDevAttrConcurrentManagedAccess 0: managed memory does not migrate on "
                      "faults there (pre-Pascal, or Windows); use --backend sim";
  cudaStream_t s;
  if ((err = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)) != cudaSuccess)
    return Err(err, "cudaStreamCreate");
  m->stream_ = s;
  if ((err = cudaMalloc(reinterpret_cast<void**>(&m->dev_count_), sizeof(unsigned long long))) != cudaSuccess)
    return Err(err, "cudaMalloc(counter)");
  return m;
}

CudaManaged::~CudaManaged() {
  cudaSetDevice(device_);
  for (auto& [id, a] : allocs_) cudaFree(a.p);
  for (void* p : ballast_) cudaFree(p);
  if (dev_count_) cudaFree(dev_count_);
  if (stream_) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

Result<ManagedInfo> CudaManaged::Info() {
  cudaSetDevice(device_);
  ManagedInfo i;
  size_t free = 0, total = 0;
  cudaError_t err = cudaMemGetInfo(&free, &total);
  if (err != cudaSuccess) return Err(err, "cudaMemGetInfo");
  i.gpu_memory_free = free;
  i.gpu_memory_total = total;
  cudaDeviceGetAttribute(&i.concurrent_managed_access, cudaDevAttrConcurrentManagedAccess, device_);
  cudaDeviceGetAttribute(&i.pageable_memory_access, cudaDevAttrPageableMemoryAccess, device_);
  return i;
}

Status CudaManaged::ReserveDevice(uint64_t leave_free) {
  constexpr uint64_t kPiece = 1ull << 30, kAlign = 2ull << 20;
  if (leave_free < kAlign) return Status::InvalidArgument("leave at least 2 MiB of GPU memory free");
  cudaSetDevice(device_);
  for (;;) {
    size_t free = 0, total = 0;
    cudaError_t err = cudaMemGetInfo(&free, &total);
    if (err != cudaSuccess) return Err(err, "cudaMemGetInfo");
    if (free <= leave_free + kAlign) return Status::Ok();
    const uint64_t piece = std::min<uint64_t>(kPiece, (free - leave_free) / kAlign * kAlign);
    void* p = nullptr;
    if ((err = cudaMalloc(&p, piece)) != cudaSuccess)
      return Err(err, "cudaMalloc(" + std::to_string(piece) + ") of the ballast (" +
                      std::to_string(free) + " bytes free)");
    ballast_.push_back(p);
  }
}

Result<uint64_t> CudaManaged::Alloc(uint64_t bytes) {
  if (!unavailable_.empty()) return Status::Unavailable(unavailable_);
  cudaSetDevice(device_);
  void* p = nullptr;
  cudaError_t err = cudaMallocManaged(&p, bytes, cudaMemAttachGlobal);
  if (err != cudaSuccess) return Err(err, "cudaMallocManaged(" + std::to_string(bytes) + ")");
  allocs_[next_id_] = Allocation{static_cast<uint64_t*>(p), bytes, std::nullopt};
  return next_id_++;
}

Status CudaManaged::Free(uint64_t id) {
  auto it = allocs_.find(id);
  if (it == allocs_.end()) return Status::InvalidArgument("no managed allocation with id " + std::to_string(id));
  cudaError_t err = cudaFree(it->second.p);
  allocs_.erase(it);
  return err == cudaSuccess ? Status::Ok() : Err(err, "cudaFree");
}

Result<CudaManaged::Allocation*> CudaManaged::Range(uint64_t id, uint64_t offset, uint64_t length) {
  auto it = allocs_.find(id);
  if (it == allocs_.end()) return Status::InvalidArgument("no managed allocation with id " + std::to_string(id));
  if (length == 0 || offset > it->second.bytes || length > it->second.bytes - offset)
    return Status::Cuda(cudaErrorInvalidValue, "the range [" + std::to_string(offset) + ", +" +
                        std::to_string(length) + ") is empty or runs past the allocation");
  if (offset % 8 || length % 8)
    return Status::InvalidArgument("managed touches work on 64-bit words: give an offset and length "
                                   "that are multiples of 8");
  cudaSetDevice(device_);
  return &it->second;
}

Status CudaManaged::TouchOnce(Allocation& a, uint64_t offset, uint64_t length, Processor by, bool write,
                              uint64_t key, uint64_t* bad) {
  uint64_t* p = a.p + offset / 8;
  const uint64_t words = length / 8, first = offset / 8;
  if (by == Processor::kGpu) {
    cudaStream_t s = static_cast<cudaStream_t>(stream_);
    cudaError_t err = cudaMemsetAsync(dev_count_, 0, sizeof *dev_count_, s);
    if (err != cudaSuccess) return Err(err, "cudaMemsetAsync(counter)");
    err = static_cast<cudaError_t>(LaunchManagedTouch(p, words, first, write, key, dev_count_, s));
    if (err != cudaSuccess) return Err(err, "the touch kernel's launch");
    if ((err = cudaStreamSynchronize(s)) != cudaSuccess) return Err(err, "cudaStreamSynchronize after the touch kernel");
    if (!write) {
      unsigned long long n = 0;
      if ((err = cudaMemcpy(&n, dev_count_, sizeof n, cudaMemcpyDeviceToHost)) != cudaSuccess)
        return Err(err, "cudaMemcpy(counter)");
      *bad += n;
    }
    return Status::Ok();
  }
  if (write) {
    for (uint64_t i = 0; i < words; ++i) p[i] = ManagedWord(first + i, key);
  } else {
    uint64_t n = 0;
    for (uint64_t i = 0; i < words; ++i) n += p[i] != ManagedWord(first + i, key);
    *bad += n;
  }
  return Status::Ok();
}

Result<ManagedStats> CudaManaged::Touch(uint64_t id, uint64_t offset, uint64_t length, Processor by,
                                        bool write, int rounds) {
  RESMEM_ASSIGN_OR_RETURN(Allocation * a, Range(id, offset, length));
  ManagedStats s;
  s.bytes = length;
  s.rounds = rounds;
  const bool whole = offset == 0 && length == a->bytes;
  const std::optional<uint64_t> expect = a->key;
  const uint64_t key = write ? NextKey() : expect.value_or(0);
  uint64_t bad = 0;
  const double t0 = Now();
  for (int r = 0; r < rounds; ++r) RESMEM_RETURN_IF_ERROR(TouchOnce(*a, offset, length, by, write, key, &bad));
  s.seconds = Now() - t0;
  if (write) a->key = whole ? std::optional<uint64_t>(key) : std::nullopt;
  else if (expect) s.data = bad == 0 ? "intact" : "mismatch";
  return s;
}

Result<ManagedStats> CudaManaged::Prefetch(uint64_t id, uint64_t offset, uint64_t length, Processor to) {
  RESMEM_ASSIGN_OR_RETURN(Allocation * a, Range(id, offset, length));
  ManagedStats s;
  s.bytes = length;
  cudaStream_t st = static_cast<cudaStream_t>(stream_);
  const double t0 = Now();
  cudaError_t err = cudaMemPrefetchAsync(reinterpret_cast<char*>(a->p) + offset, length,
                                         Location(to, device_), 0, st);
  if (err != cudaSuccess) return Err(err, std::string("cudaMemPrefetchAsync(to ") + ProcessorName(to) + ")");
  if ((err = cudaStreamSynchronize(st)) != cudaSuccess) return Err(err, "cudaStreamSynchronize after the prefetch");
  s.seconds = Now() - t0;
  return s;
}

Status CudaManaged::Advise(uint64_t id, uint64_t offset, uint64_t length, ManagedAdvice advice,
                           Processor target) {
  RESMEM_ASSIGN_OR_RETURN(Allocation * a, Range(id, offset, length));
  cudaMemoryAdvise adv = cudaMemAdviseSetReadMostly;
  if (advice == ManagedAdvice::kPreferredLocation) adv = cudaMemAdviseSetPreferredLocation;
  if (advice == ManagedAdvice::kAccessedBy) adv = cudaMemAdviseSetAccessedBy;
  cudaError_t err = cudaMemAdvise(reinterpret_cast<char*>(a->p) + offset, length, adv, Location(target, device_));
  if (err != cudaSuccess)
    return Err(err, std::string("cudaMemAdvise(") + ManagedAdviceName(advice) + ", " + ProcessorName(target) + ")");
  return Status::Ok();
}

Result<ManagedStats> CudaManaged::PingPong(uint64_t id, uint64_t offset, uint64_t length, int rounds) {
  RESMEM_ASSIGN_OR_RETURN(Allocation * a, Range(id, offset, length));
  ManagedStats s;
  s.bytes = length;
  s.rounds = rounds;
  uint64_t bad = 0, key = 0;
  const double t0 = Now();
  for (int r = 0; r < rounds; ++r) {
    RESMEM_RETURN_IF_ERROR(TouchOnce(*a, offset, length, Processor::kGpu, true, NextKey(), &bad));
    key = NextKey();
    RESMEM_RETURN_IF_ERROR(TouchOnce(*a, offset, length, Processor::kCpu, true, key, &bad));
  }
  s.seconds = Now() - t0;
  // The last writer was the CPU: the GPU must read what it wrote.
  RESMEM_RETURN_IF_ERROR(TouchOnce(*a, offset, length, Processor::kGpu, false, key, &bad));
  s.data = bad == 0 ? "intact" : "mismatch";
  a->key = std::nullopt;
  return s;
}

Result<ManagedStats> CudaManaged::ReadDeviceThroughBar(uint64_t) {
  return Status::Unavailable(
      "no CPU mapping of GPU memory can be made here: a BAR1 mapping needs a kernel module such as "
      "gdrdrv (this machine loads none: FACTS.md), and the dma-buf fd of device memory cannot be "
      "mmapped (FACTS.md 2026-11-22); the simulator models it (--backend sim)");
}

}  // namespace resmem::cuda
