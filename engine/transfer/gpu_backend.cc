#include "engine/transfer/gpu_backend.h"

#include "backends/cuda/cuda_gpu.h"
#include "backends/fault/fault_injector.h"
#include "mock/gpu/sim_gpu.h"
#include "mock/machine/machine.h"

namespace resmem::transfer {

Result<GpuBackend> MakeGpuBackend(const std::string& name, uint64_t seed,
                                  std::shared_ptr<FaultInjector> faults) {
  GpuBackend b;
  if (name == "cuda") {
    RESMEM_ASSIGN_OR_RETURN(auto gpu, cuda::CudaGpu::Create(0));
    b.name = "cuda";
    b.clock = std::make_shared<SteadyClock>();
    b.gpu = std::move(gpu);
    return b;
  }
  if (name == "sim") {
    RESMEM_ASSIGN_OR_RETURN(sim::CudaProfile profile, sim::CudaProfileByName("cuda-13.0-r580"));
    RESMEM_ASSIGN_OR_RETURN(sim::MachineSpec machine, sim::MachinePreset("h100-host"));
    b.clock = std::make_shared<VirtualClock>();
    b.gpu = sim::MakeSimGpu(profile, machine.perf, b.clock,
                            faults ? faults : std::make_shared<FaultInjector>(seed));
    b.name = b.gpu->name();
    return b;
  }
  return Status::InvalidArgument("unknown --backend '" + name +
                                 "': use cuda (the real GPU) or sim (the CUDA model)");
}

}  // namespace resmem::transfer
