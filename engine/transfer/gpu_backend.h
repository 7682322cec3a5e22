// The GPU side the bench, stream and calibrate commands run on, by name:
//   cuda  the real GPU (backends/cuda), steady clock;
//   sim   the CUDA model (mock/gpu) with the "cuda-13.0-r580" profile and the "h100-host" machine
//         preset's host performance (mock/machine), on a virtual clock, so the commands run on CI
//         without a GPU. Host memory is real either way (backends/host stand-ins): the sim judges
//         real mappings by their smaps facts.
// The command-line options those commands share: engine/cli/transfer_options.h.
#ifndef RESMEM_ENGINE_TRANSFER_GPU_BACKEND_H_
#define RESMEM_ENGINE_TRANSFER_GPU_BACKEND_H_

#include <memory>
#include <string>
#include <vector>

#include "backends/api/clock.h"
#include "backends/api/gpu.h"
#include "backends/fault/fault_injector.h"
#include "engine/transfer/transfer_engine.h"

namespace resmem::transfer {

struct GpuBackend {
  std::string name;  // "cuda", "sim:cuda-13.0-r580"
  std::shared_ptr<Clock> clock;
  std::unique_ptr<Gpu> gpu;
};

// Unavailable (no GPU) for "cuda" where there is none; InvalidArgument naming the choices for an
// unknown name. `faults`: the injector the sim consults (gpu.copy, ...); null: a fresh one with
// no rules. The cuda backend takes none here.
Result<GpuBackend> MakeGpuBackend(const std::string& name, uint64_t seed = 1,
                                  std::shared_ptr<FaultInjector> faults = nullptr);

}  // namespace resmem::transfer

#endif  // RESMEM_ENGINE_TRANSFER_GPU_BACKEND_H_
