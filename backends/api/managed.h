// Memory the CPU and the GPU share (seed 004, LWN 2017 "Unaddressable device memory"): CUDA's
// managed memory (cudaMallocManaged), which the driver migrates between system and GPU memory on
// page faults or on request (cudaMemPrefetchAsync), steered by hints (cudaMemAdvise); and the
// CPU reading GPU memory through a BAR mapping, which is not cache-coherent. One seam for the real
// CUDA backend (backends/cuda/cuda_managed.cc) and the model (mock/gpu/sim_managed.cc).
//
// Contract of every call: errors are values (a CUDA-space Status for a runtime error, Unavailable
// where this backend cannot do the operation, with the reason). Allocations are named by the id
// Alloc returned.
#ifndef RESMEM_BACKENDS_API_MANAGED_H_
#define RESMEM_BACKENDS_API_MANAGED_H_

#include <cstdint>
#include <string>
#include <vector>

#include "backends/api/status.h"

namespace resmem {

enum class Processor { kCpu, kGpu };
const char* ProcessorName(Processor p);  // "cpu", "gpu"

// cudaMemAdvise's advice, each set for one processor (the `location` argument).
enum class ManagedAdvice {
  kReadMostly,         // cudaMemAdviseSetReadMostly: read-only copies where it is read
  kPreferredLocation,  // cudaMemAdviseSetPreferredLocation
  kAccessedBy,         // cudaMemAdviseSetAccessedBy: mapped there, not migrated on access
};
const char* ManagedAdviceName(ManagedAdvice a);  // "read-mostly", "preferred-location", "accessed-by"

struct ManagedInfo {
  uint64_t gpu_memory_total = 0;
  uint64_t gpu_memory_free = 0;
  int concurrent_managed_access = 0;  // cudaDevAttrConcurrentManagedAccess
  int pageable_memory_access = 0;     // cudaDevAttrPageableMemoryAccess (HMM on x86)
};

// What one operation did, on the backend's clock. The counters are the model's (the simulator);
// the real backend measures time only and leaves them 0, `counted` false.
struct ManagedStats {
  uint64_t bytes = 0;        // bytes the operation touched or moved, every round
  double seconds = 0;
  int rounds = 1;
  bool counted = false;      // the counters below are known
  uint64_t faults = 0;       // page-fault groups serviced (GPU and CPU)
  uint64_t migrated = 0;     // bytes moved between system and GPU memory
  uint64_t evicted = 0;      // bytes pushed out of GPU memory to make room
  uint64_t remote = 0;       // bytes accessed over the link without migrating (a mapping)
  std::string data;          // "intact", "mismatch", or "" when not checked
  std::vector<std::string> events;  // what the driver did that a user would want to know
};

class ManagedMemory {
 public:
  virtual ~ManagedMemory() = default;
  virtual std::string name() const = 0;

  virtual Result<ManagedInfo> Info() = 0;
  // cudaMalloc of GPU memory until only `leave_free` bytes are free: a smaller GPU, so that
  // oversubscription needs gigabytes, not the whole card. Given back when the backend ends.
  virtual Status ReserveDevice(uint64_t leave_free) = 0;

  // cudaMallocManaged(cudaMemAttachGlobal) / cudaFree.
  virtual Result<uint64_t> Alloc(uint64_t bytes) = 0;
  virtual Status Free(uint64_t id) = 0;

  // A processor touches [offset, offset+length) of an allocation `rounds` times over: a kernel
  // reading (or writing) every word, or the CPU doing so. Pages elsewhere fault and migrate,
  // or are accessed over the link where a mapping allows it.
  virtual Result<ManagedStats> Touch(uint64_t id, uint64_t offset, uint64_t length, Processor by,
                                     bool write, int rounds) = 0;
  // cudaMemPrefetchAsync of the range to a processor, then a stream synchronize.
  virtual Result<ManagedStats> Prefetch(uint64_t id, uint64_t offset, uint64_t length, Processor to) = 0;
  // cudaMemAdvise(advice, location = `target`).
  virtual Status Advise(uint64_t id, uint64_t offset, uint64_t length, ManagedAdvice advice,
                        Processor target) = 0;
  // CPU and GPU take turns writing the range, `rounds` times each (GPU first).
  virtual Result<ManagedStats> PingPong(uint64_t id, uint64_t offset, uint64_t length, int rounds) = 0;

  // The CPU reads `length` bytes of GPU memory through a mapping of the GPU's BAR (as gdrcopy
  // maps it): uncached reads across PCIe.
  virtual Result<ManagedStats> ReadDeviceThroughBar(uint64_t length) = 0;
};

}  // namespace resmem

#endif  // RESMEM_BACKENDS_API_MANAGED_H_
