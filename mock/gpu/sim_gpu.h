// The CUDA model. It decides each return code from the facts of the host memory involved (VM
// flags, backing, protections, size, pinned state) and a driver profile, and costs each copy with
// a bandwidth model on the backend's clock. Because it decides from facts, it judges real mappings
// (the kmod Region in QEMU, read from /proc/self/smaps) as well as simulated ones.
#ifndef RESMEM_MOCK_GPU_SIM_GPU_H_
#define RESMEM_MOCK_GPU_SIM_GPU_H_

#include <memory>
#include <string>
#include <vector>

#include "backends/api/clock.h"
#include "backends/api/gpu.h"
#include "backends/fault/fault_injector.h"
#include "mock/machine/machine.h"

namespace resmem::sim {

// A driver profile: one era's behaviour. Every field cites its source in cuda_profile.cc.
struct CudaProfile {
  std::string name;                   // "cuda-4.1-r285", "cuda-13.0-r580"
  std::string device_name;            // "Tesla M2090", "NVIDIA H100 80GB HBM3"
  uint64_t device_memory = 0;
  double link_h2d_gbps = 0;           // pinned DMA host->device
  double link_d2h_gbps = 0;
  double pageable_pipeline_efficiency = 0.95;  // staged pageable copy vs the slower of its stages
  int staging_load_bytes = 16;        // width of the driver's loads when staging (UC reads)
  bool has_iomemory_flag = false;     // cudaHostRegisterIoMemory exists
  bool has_readonly_flag = false;
  bool pfnmap_error_is_unknown = true;  // 2012: 30 cudaErrorUnknown; r580: 1 InvalidValue
  uint64_t max_single_registration = 0; // 0 = none; r580: 512 GiB (FACTS.md)
  bool non_portable_slow_in_other_context = false;  // 2012: 20-200x slower (seed 000)
  double other_context_slowdown = 1;
  int async_engine_count = 1;
  int pageable_memory_access = 0;
  int read_only_host_register_supported = 0;
  double register_fixed_seconds = 0;  // per call
  HostPerf default_host;              // host model when no simulated machine is given
};

Result<CudaProfile> CudaProfileByName(const std::string& name);
std::vector<std::string> CudaProfileNames();

struct SimGpuOptions {
  int device_count = 1;
};

// `host` is the machine the GPU sits in (its memory speeds); the clock and faults are shared with
// the rest of the backend.
std::unique_ptr<Gpu> MakeSimGpu(const CudaProfile& profile, const HostPerf& host,
                                std::shared_ptr<Clock> clock, std::shared_ptr<FaultInjector> faults,
                                const SimGpuOptions& options = {});

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_GPU_SIM_GPU_H_
