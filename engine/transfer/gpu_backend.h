// The GPU side the bench, stream and calibrate commands run on, by name:
//   cuda  the real GPU (backends/cuda), steady clock;
//   sim   the CUDA model (mock/gpu) with the "cuda-13.0-r580" profile and the "h100-host" machine
//         preset's host performance (mock/machine), on a virtual clock, so the commands run on CI
//         without a GPU. Host memory is real either way (backends/host stand-ins): the sim judges
//         real mappings by their smaps facts.
// Also the command-line options those commands share (CLI11, engine/cli/command.h).
#ifndef RESMEM_ENGINE_TRANSFER_GPU_BACKEND_H_
#define RESMEM_ENGINE_TRANSFER_GPU_BACKEND_H_

#include <memory>
#include <string>
#include <vector>

#include "backends/api/clock.h"
#include "backends/api/gpu.h"
#include "CLI/CLI.hpp"
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

// The staged path's tuning options, shared by bench and stream (transfer_engine.h says what each
// does), declared on a command's app under the heading "staged path" and bound to `*o`, whose
// values are the defaults: --lanes N, --chunk SIZE, --buffers N, --min-unit SIZE,
// --units-per-lane N, --spin-us N; flags --pin-lanes, --stream-to-host, --lane-units,
// --cached-fill. Ranges are checked by the parse. `o` must outlive the parse.
void AddStagingOptions(CLI::App& app, TransferOptions* o);

// --backend cuda|sim for the commands above, bound to `*name` (its value is the default).
CLI::Option* AddGpuBackendOption(CLI::App& app, std::string* name);

}  // namespace resmem::transfer

#endif  // RESMEM_ENGINE_TRANSFER_GPU_BACKEND_H_
