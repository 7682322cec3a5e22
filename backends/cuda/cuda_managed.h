// Managed memory on the real GPU (backends/api/managed.h) through the CUDA runtime:
// cudaMallocManaged, a kernel or the CPU touching every word, cudaMemPrefetchAsync, cudaMemAdvise
// (CUDA 13 signatures, with a cudaMemLocation). Times are the steady clock around the synchronised
// operation; the fault and migration counters are the model's only (ManagedStats::counted false).
// Every touch checks the words it reads against what the last whole-range write wrote.
// No BAR mapping of GPU memory can be made here: ReadDeviceThroughBar is Unavailable with why.
#ifndef RESMEM_BACKENDS_CUDA_CUDA_MANAGED_H_
#define RESMEM_BACKENDS_CUDA_CUDA_MANAGED_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/api/managed.h"

namespace resmem::cuda {

class CudaManaged : public ManagedMemory {
 public:
  // Unavailable where there is no GPU (the runtime's code, and --backend sim as the way out). Where
  // the device cannot migrate on faults (cudaDevAttrConcurrentManagedAccess 0) it is made, and
  // Alloc says so.
  static Result<std::unique_ptr<CudaManaged>> Create(int device = 0);
  ~CudaManaged() override;

  std::string name() const override { return "cuda"; }
  Result<ManagedInfo> Info() override;
  Status ReserveDevice(uint64_t leave_free) override;
  Result<uint64_t> Alloc(uint64_t bytes) override;
  Status Free(uint64_t id) override;
  Result<ManagedStats> Touch(uint64_t id, uint64_t offset, uint64_t length, Processor by, bool write,
                             int rounds) override;
  Result<ManagedStats> Prefetch(uint64_t id, uint64_t offset, uint64_t length, Processor to) override;
  Status Advise(uint64_t id, uint64_t offset, uint64_t length, ManagedAdvice advice,
                Processor target) override;
  Result<ManagedStats> PingPong(uint64_t id, uint64_t offset, uint64_t length, int rounds) override;
  Result<ManagedStats> ReadDeviceThroughBar(uint64_t length) override;

 private:
  CudaManaged() = default;
  struct Allocation {
    uint64_t* p = nullptr;
    uint64_t bytes = 0;
    std::optional<uint64_t> key;  // what the last write of the whole allocation wrote
  };
  Result<Allocation*> Range(uint64_t id, uint64_t offset, uint64_t length);
  // One touch of [offset, offset+length) by `by`; adds mismatched words to *bad.
  Status TouchOnce(Allocation& a, uint64_t offset, uint64_t length, Processor by, bool write,
                   uint64_t key, uint64_t* bad);
  uint64_t NextKey() { return 0x5eed0000ull + ++writes_; }

  int device_ = 0;
  void* stream_ = nullptr;                    // cudaStream_t
  unsigned long long* dev_count_ = nullptr;   // the kernel's mismatch counter
  std::map<uint64_t, Allocation> allocs_;
  uint64_t next_id_ = 1, writes_ = 0;
  std::vector<void*> ballast_;                // ReserveDevice's cudaMalloc pieces
  std::string unavailable_;                   // why Alloc refuses, where it does
};

}  // namespace resmem::cuda

#endif  // RESMEM_BACKENDS_CUDA_CUDA_MANAGED_H_
