#include "engine/transfer/gpu_backend.h"

#include <algorithm>
#include <cstdlib>

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

Result<Args> Args::Parse(const std::vector<std::string>& args, const std::vector<std::string>& keys,
                         const std::vector<std::string>& flags) {
  Args out;
  auto known = [](const std::vector<std::string>& l, const std::string& k) {
    return std::find(l.begin(), l.end(), k) != l.end();
  };
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    if (a.rfind("--", 0) != 0)
      return Status::InvalidArgument("unexpected argument '" + a + "': options start with --");
    std::string key = a.substr(2), value;
    bool inline_value = false;
    if (auto eq = key.find('='); eq != std::string::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
      inline_value = true;
    }
    if (known(flags, key)) {
      out.values_[key] = "1";
      continue;
    }
    if (!known(keys, key)) {
      std::string all;
      for (const auto& k : keys) all += " --" + k + " VALUE";
      for (const auto& k : flags) all += " --" + k;
      return Status::InvalidArgument("unknown option --" + key + "; this command takes:" + all);
    }
    if (!inline_value) {
      if (i + 1 >= args.size()) return Status::InvalidArgument("option --" + key + " needs a value");
      value = args[++i];
    }
    out.values_[key] = value;
  }
  return out;
}

std::string Args::Get(const std::string& key, const std::string& dflt) const {
  auto it = values_.find(key);
  return it == values_.end() ? dflt : it->second;
}

Result<uint64_t> Args::Size(const std::string& key, uint64_t dflt) const {
  if (!Has(key)) return dflt;
  auto v = ParseSize(Get(key, ""));
  if (!v.ok())
    return Status::InvalidArgument("--" + key + " '" + Get(key, "") + "': " + v.status().message());
  return v;
}

Result<double> Args::Number(const std::string& key, double dflt) const {
  if (!Has(key)) return dflt;
  std::string s = Get(key, "");
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0')
    return Status::InvalidArgument("--" + key + " '" + s + "' is not a number");
  return v;
}

std::vector<std::string> Args::List(const std::string& key, const std::string& dflt) const {
  std::string s = Get(key, dflt);
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

std::vector<std::string> StagingKeys() {
  return {"lanes", "chunk", "buffers", "min-unit", "units-per-lane", "spin-us", "min-segments",
          "ramp-first"};
}
std::vector<std::string> StagingFlags() {
  return {"pin-lanes", "stream-to-host", "lane-units", "cached-fill"};
}

const char* const kStagingUsage =
    "staged path: --lanes N (16) --chunk SIZE (pinned buffer, largest unit) --buffers N per lane\n"
    "  --min-unit SIZE --units-per-lane N --spin-us N (idle lanes poll before sleeping)\n"
    "  --min-segments N (segments per copy, 8) --ramp-first SIZE (first segment of a copy, each\n"
    "  next one twice as large; 0 = equal segments)\n"
    "  --pin-lanes (pin lane threads to CPUs) --stream-to-host (non-temporal stores, D2H)\n"
    "  --lane-units (each lane DMAs its own units instead of one DMA per shared segment)\n"
    "  --cached-fill (fill every pinned segment with ordinary stores; by default segments\n"
    "  under 8 MiB are filled with non-temporal stores)";

Result<Args> ParseWithStagingArgs(const std::vector<std::string>& args,
                                  std::vector<std::string> keys, std::vector<std::string> flags) {
  for (const auto& k : StagingKeys()) keys.push_back(k);
  for (const auto& f : StagingFlags()) flags.push_back(f);
  return Args::Parse(args, keys, flags);
}

Status ApplyStagingArgs(const Args& args, TransferOptions* o) {
  auto lanes = args.Number("lanes", o->staging_lanes);
  auto chunk = args.Size("chunk", o->staging_chunk);
  auto buffers = args.Number("buffers", o->staging_buffers);
  auto min_unit = args.Size("min-unit", o->staging_min_unit);
  auto per_lane = args.Number("units-per-lane", o->staging_units_per_lane);
  auto spin = args.Number("spin-us", o->staging_spin_us);
  auto min_segments = args.Number("min-segments", o->staging_min_segments);
  auto ramp = args.Size("ramp-first", o->staging_ramp_first);
  for (const Status& st : {lanes.status(), chunk.status(), buffers.status(), min_unit.status(),
                           per_lane.status(), spin.status(), min_segments.status(),
                           ramp.status()})
    RESMEM_RETURN_IF_ERROR(st);
  if (*lanes < 1 || *lanes > 1024)
    return Status::InvalidArgument("--lanes " + std::to_string(*lanes) + ": give 1..1024");
  if (*buffers < 1 || *buffers > 16)
    return Status::InvalidArgument("--buffers " + std::to_string(*buffers) +
                                   ": give 1..16 pinned buffers per lane (2 double-buffers)");
  if (*chunk < 4096 || *min_unit < 4096)
    return Status::InvalidArgument("--chunk and --min-unit must be at least 4K");
  if (*per_lane < 1) return Status::InvalidArgument("--units-per-lane must be at least 1");
  if (*spin < 0) return Status::InvalidArgument("--spin-us must be >= 0 (0: sleep at once)");
  if (*min_segments < 1 || *min_segments > 64)
    return Status::InvalidArgument("--min-segments " + std::to_string(*min_segments) +
                                   ": give 1..64");
  if (*ramp % 4096)
    return Status::InvalidArgument("--ramp-first must be a multiple of 4K (0: no ramp)");
  o->staging_min_segments = static_cast<int>(*min_segments);
  o->staging_ramp_first = *ramp;
  o->staging_lanes = static_cast<int>(*lanes);
  o->staging_chunk = *chunk;
  o->staging_buffers = static_cast<int>(*buffers);
  o->staging_min_unit = *min_unit;
  o->staging_units_per_lane = static_cast<int>(*per_lane);
  o->staging_spin_us = static_cast<int>(*spin);
  if (args.Has("pin-lanes")) o->staging_pin_threads = true;
  if (args.Has("stream-to-host")) o->staging_stream_to_host = true;
  if (args.Has("lane-units")) o->staging_segments = false;
  if (args.Has("cached-fill")) o->staging_nt_fill_below = 0;
  return Status::Ok();
}

}  // namespace resmem::transfer
