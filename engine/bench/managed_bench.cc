#include "engine/bench/managed_bench.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "backends/cuda/cuda_managed.h"
#include "mock/gpu/sim_managed.h"

namespace resmem::bench {
namespace {

// One measured pass: the bytes it moved, its seconds, and the data verdict of its touch.
struct Pass {
  double seconds = 0;
  std::string data;
};

std::string Fmt(const char* fmt, double v) {
  char b[64];
  std::snprintf(b, sizeof b, fmt, v);
  return b;
}

// Runs `once` `passes` times; the row's rates are bytes / seconds of each pass.
Result<ManagedRow> Measure(const std::string& name, const std::string& baseline, uint64_t bytes, int passes,
                           const std::function<Result<Pass>()>& once) {
  ManagedRow row;
  row.name = name;
  row.baseline = baseline;
  row.bytes = bytes;
  std::vector<double> gbps, seconds;
  for (int i = 0; i < passes; ++i) {
    RESMEM_ASSIGN_OR_RETURN(Pass p, once());
    if (p.seconds <= 0) return Status::Internal(name + ": a pass took no time");
    gbps.push_back(bytes / p.seconds / 1e9);
    seconds.push_back(p.seconds);
    if (!p.data.empty() && row.data != "mismatch") row.data = p.data;
  }
  std::sort(gbps.begin(), gbps.end());
  std::sort(seconds.begin(), seconds.end());
  row.median_gbps = gbps[gbps.size() / 2];
  row.min_gbps = gbps.front();
  row.max_gbps = gbps.back();
  row.round_us = seconds[seconds.size() / 2] * 1e6;
  return row;
}

Result<Pass> FromStats(const Result<ManagedStats>& s) {
  if (!s.ok()) return s.status();
  return Pass{s->seconds, s->data};
}

}  // namespace

Result<std::unique_ptr<ManagedMemory>> MakeBenchManaged(const std::string& backend, std::shared_ptr<Clock> clock) {
  if (backend == "cuda") {
    RESMEM_ASSIGN_OR_RETURN(auto m, cuda::CudaManaged::Create(0));
    return std::unique_ptr<ManagedMemory>(std::move(m));
  }
  if (backend == "sim") {
    RESMEM_ASSIGN_OR_RETURN(sim::CudaProfile profile, sim::CudaProfileByName("cuda-13.0-r580"));
    return sim::MakeSimManaged(profile, sim::ManagedModelFor(profile), std::move(clock));
  }
  return Status::InvalidArgument("no managed memory for backend '" + backend + "': use cuda or sim");
}

Result<ManagedBenchResult> RunManagedBench(Gpu& gpu, ManagedMemory& mm, const std::string& backend,
                                           const ManagedBenchOptions& o) {
  if (o.size < (2u << 20) || o.size % 8 || o.pingpong_size % 8 || o.pingpong_size == 0)
    return Status::InvalidArgument("--managed-size must be at least 2 MiB and sizes multiples of 8 bytes");
  ManagedBenchResult r;
  r.backend = backend;
  r.options = o;
  const uint64_t n = o.size;
  // Pinned cudaMemcpy baselines of the same size, in this run.
  RESMEM_ASSIGN_OR_RETURN(auto pinned, gpu.AllocPinned(n, kRegisterDefault));
  RESMEM_ASSIGN_OR_RETURN(auto dev, gpu.AllocDevice(n));
  for (CopyDirection d : {CopyDirection::kHostToDevice, CopyDirection::kDeviceToHost}) {
    const bool h2d = d == CopyDirection::kHostToDevice;
    RESMEM_ASSIGN_OR_RETURN(ManagedRow row, Measure(h2d ? "pinned-h2d" : "pinned-d2h", "", n, o.passes, [&]() -> Result<Pass> {
      RESMEM_ASSIGN_OR_RETURN(CopyStats cs, gpu.Copy(d, *pinned, 0, *dev, 0, n));
      return Pass{cs.seconds, ""};
    }));
    r.rows.push_back(row);
  }
  dev.reset();
  pinned.reset();

  RESMEM_ASSIGN_OR_RETURN(uint64_t buf, mm.Alloc(n));
  auto host_resident = [&]() { return mm.Touch(buf, 0, n, Processor::kCpu, true, 1).status(); };
  auto gpu_resident = [&]() { return mm.Touch(buf, 0, n, Processor::kGpu, true, 1).status(); };
  struct Case {
    const char* name;
    const char* baseline;
    std::function<Status()> setup;
    std::function<Result<ManagedStats>()> timed;
    const char* note;
  };
  const std::vector<Case> cases = {
      {"first-touch-gpu-read", "pinned-h2d", host_resident,
       [&] { return mm.Touch(buf, 0, n, Processor::kGpu, false, 1); },
       "a kernel reads managed memory the CPU wrote: fault-driven migration"},
      {"prefetch-h2d", "pinned-h2d", host_resident,
       [&] { return mm.Prefetch(buf, 0, n, Processor::kGpu); }, "cudaMemPrefetchAsync to the GPU"},
      {"resident-gpu-read", "pinned-h2d", [&] { return mm.Prefetch(buf, 0, n, Processor::kGpu).status(); },
       [&] { return mm.Touch(buf, 0, n, Processor::kGpu, false, 1); }, "a kernel reads managed memory already on the GPU"},
      {"prefetch-d2h", "pinned-d2h", gpu_resident,
       [&] { return mm.Prefetch(buf, 0, n, Processor::kCpu); }, "cudaMemPrefetchAsync to the host"},
      {"cpu-fault-back-read", "pinned-d2h", gpu_resident,
       [&] { return mm.Touch(buf, 0, n, Processor::kCpu, false, 1); },
       "one CPU thread reads results a kernel wrote: faults them back"},
      {"cpu-resident-read", "pinned-d2h", [&] { return mm.Prefetch(buf, 0, n, Processor::kCpu).status(); },
       [&] { return mm.Touch(buf, 0, n, Processor::kCpu, false, 1); }, "one CPU thread reads managed memory already on the host"},
  };
  for (const Case& c : cases) {
    auto row = Measure(c.name, c.baseline, n, o.passes, [&]() -> Result<Pass> {
      RESMEM_RETURN_IF_ERROR(c.setup());
      return FromStats(c.timed());
    });
    if (!row.ok()) {
      r.notes.push_back(std::string(c.name) + ": " + row.status().ToString());
      continue;
    }
    row->note = c.note;
    r.rows.push_back(*row);
  }
  RESMEM_RETURN_IF_ERROR(mm.Free(buf));

  // Ping-pong: each variant its own allocation (advice sticks to it).
  struct Advice {
    const char* name;
    std::vector<std::pair<ManagedAdvice, Processor>> advice;
    const char* note;
  };
  const std::vector<Advice> variants = {
      {"pingpong-no-advice", {}, "the driver's thrashing heuristic decides"},
      {"pingpong-preferred-gpu", {{ManagedAdvice::kPreferredLocation, Processor::kGpu}},
       "preferred on the GPU: never pinned, thrashes every round"},
      {"pingpong-host-mapped",
       {{ManagedAdvice::kPreferredLocation, Processor::kCpu}, {ManagedAdvice::kAccessedBy, Processor::kGpu}},
       "preferred on the host, mapped by the GPU: nothing migrates"},
  };
  const uint64_t pp = o.pingpong_size;
  for (const Advice& v : variants) {
    auto id = mm.Alloc(pp);
    if (!id.ok()) return id.status();
    Status st = mm.Touch(*id, 0, pp, Processor::kCpu, true, 1).status();
    for (const auto& [a, p] : v.advice)
      if (st.ok()) st = mm.Advise(*id, 0, pp, a, p);
    auto row = st.ok() ? Measure(v.name, "pinned-h2d", 2 * pp, o.passes, [&]() -> Result<Pass> {
      RESMEM_ASSIGN_OR_RETURN(ManagedStats s, mm.PingPong(*id, 0, pp, o.pingpong_rounds));
      return Pass{s.seconds / o.pingpong_rounds, s.data};
    }) : Result<ManagedRow>(st);
    (void)mm.Free(*id);
    if (!row.ok()) {
      r.notes.push_back(std::string(v.name) + ": " + row.status().ToString());
      continue;
    }
    row->note = v.note;
    r.rows.push_back(*row);
  }

  std::map<std::string, double> base;
  for (const auto& row : r.rows)
    if (row.baseline.empty()) base[row.name] = row.median_gbps;
  for (auto& row : r.rows)
    if (!row.baseline.empty() && base[row.baseline] > 0) row.ratio = row.median_gbps / base[row.baseline];
  return r;
}

bool ManagedBenchResult::DataMismatch() const {
  for (const auto& row : rows)
    if (row.data == "mismatch") return true;
  return false;
}

std::string ManagedBenchResult::ToTable() const {
  std::string out = "managed memory on " + backend + ", " + Fmt("%.0f MiB", options.size / 1048576.0) +
                    " per migration row, ping-pong " + Fmt("%.0f KiB", options.pingpong_size / 1024.0) +
                    " x " + std::to_string(options.pingpong_rounds) + " rounds, medians of " +
                    std::to_string(options.passes) + " passes\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-24s %10s %10s %10s %9s %11s  %s\n", "row", "GB/s", "min", "max",
                "ratio", "us/round", "data");
  out += line;
  for (const auto& row : rows) {
    const bool pp = row.name.rfind("pingpong", 0) == 0;
    std::snprintf(line, sizeof line, "%-24s %10.2f %10.2f %10.2f %9s %11s  %s\n", row.name.c_str(),
                  row.median_gbps, row.min_gbps, row.max_gbps,
                  row.baseline.empty() ? "-" : Fmt("%.1f%%", row.ratio * 100).c_str(),
                  pp ? Fmt("%.1f", row.round_us).c_str() : "-", row.data.empty() ? "-" : row.data.c_str());
    out += line;
  }
  out += "ratios: to pinned-h2d (first touch, prefetch-h2d, resident read, ping-pong: both sides' bytes per "
         "round) or pinned-d2h (prefetch-d2h, CPU reads)\n";
  for (const auto& n : notes) out += "not measured: " + n + "\n";
  return out;
}

std::string ManagedBenchResult::ToJson() const {
  nlohmann::json j;
  j["backend"] = backend;
  j["size"] = options.size;
  j["passes"] = options.passes;
  j["pingpong_size"] = options.pingpong_size;
  j["pingpong_rounds"] = options.pingpong_rounds;
  j["rows"] = nlohmann::json::array();
  for (const auto& row : rows) {
    nlohmann::json x = {{"name", row.name}, {"bytes", row.bytes}, {"median_gbps", row.median_gbps},
                        {"min_gbps", row.min_gbps}, {"max_gbps", row.max_gbps}, {"note", row.note}};
    if (!row.baseline.empty()) {
      x["baseline"] = row.baseline;
      x["ratio"] = row.ratio;
    }
    if (row.name.rfind("pingpong", 0) == 0) x["round_us"] = row.round_us;
    if (!row.data.empty()) x["data"] = row.data;
    j["rows"].push_back(x);
  }
  j["notes"] = notes;
  return j.dump(2);
}

}  // namespace resmem::bench
