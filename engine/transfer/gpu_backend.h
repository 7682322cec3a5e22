// The GPU side the bench, stream and calibrate commands run on, by name:
//   cuda  the real GPU (backends/cuda), steady clock;
//   sim   the CUDA model (mock/gpu) with the "cuda-13.0-r580" profile and the "h100-host" machine
//         preset's host performance (mock/machine), on a virtual clock, so the commands run on CI
//         without a GPU. Host memory is real either way (backends/host stand-ins): the sim judges
//         real mappings by their smaps facts.
// Also a minimal "--key value" / "--key=value" reader for those commands.
#ifndef RESMEM_ENGINE_TRANSFER_GPU_BACKEND_H_
#define RESMEM_ENGINE_TRANSFER_GPU_BACKEND_H_

#include <map>
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

// Parsed command arguments: "--key value" or "--key=value"; "--flag" alone where listed in flags.
class Args {
 public:
  // Refuses unknown keys by name, listing the known ones.
  static Result<Args> Parse(const std::vector<std::string>& args,
                            const std::vector<std::string>& keys,
                            const std::vector<std::string>& flags);
  bool Has(const std::string& key) const { return values_.count(key) > 0; }
  std::string Get(const std::string& key, const std::string& dflt) const;
  // Sizes ("16M", "64K") via ParseSize; numbers via strtod. Errors name the option.
  Result<uint64_t> Size(const std::string& key, uint64_t dflt) const;
  Result<double> Number(const std::string& key, double dflt) const;
  // Comma-separated list.
  std::vector<std::string> List(const std::string& key, const std::string& dflt) const;

 private:
  std::map<std::string, std::string> values_;
};

// The staged path's tuning options, shared by bench and stream (transfer_engine.h says what each
// does): --lanes N, --chunk SIZE, --buffers N, --min-unit SIZE, --units-per-lane N,
// --spin-us N; flags --pin-lanes, --stream-to-host, --lane-units. Absent keys keep what `o` holds.
std::vector<std::string> StagingKeys();
std::vector<std::string> StagingFlags();
extern const char* const kStagingUsage;  // one usage paragraph for the options above
Status ApplyStagingArgs(const Args& args, TransferOptions* o);
// Args::Parse of a command that also takes the staged path's options above (bench, stream).
Result<Args> ParseWithStagingArgs(const std::vector<std::string>& args,
                                  std::vector<std::string> keys, std::vector<std::string> flags);

}  // namespace resmem::transfer

#endif  // RESMEM_ENGINE_TRANSFER_GPU_BACKEND_H_
