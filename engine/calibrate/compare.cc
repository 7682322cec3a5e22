// CompareWithSim: a profile replayed on the simulator's CUDA model, case by case (calibrate.h),
// and the fidelity report it makes.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>

#include "backends/api/facts_memory.h"
#include "backends/fault/fault_injector.h"
#include "engine/calibrate/calibrate.h"
#include "engine/calibrate/profile_json.h"
#include "mock/gpu/sim_gpu.h"
#include "mock/machine/machine.h"

namespace resmem::calibrate {
namespace {

// The host the simulator replays a profile on: the "h100-host" preset, with the memcpy rates a
// calibration on real hardware ("gpu": "cuda") measured on its own host (host_memcpy_gbps: GB/s
// with 1, 2, 4, 8, 16 threads) where the profile has them. The r580 model's pageable copies are
// multiples of the host's one-thread memcpy (mock/gpu/cuda_profile.cc), so a host that copies
// slower stages slower: the H200 host of docs/hil/2026-11-28-h200-nightly copied 7.8-8.2 GB/s on
// one thread against the preset's 11, and its pageable copies ran 15-30% under the preset's
// model, at the model's ratios to its own memcpy (over the sixteen runs of both hosts each
// pageable class follows the one-thread rate, correlation 0.65-0.84). One run's ratio still
// spreads: 1.14-1.64 over the H100's runs (docs/hil/2026-11-28-h200-staged13, section 9).
// Returns what the report says of the host.
std::string UseMeasuredHost(const json& profile, sim::HostPerf& perf) {
  // A simulator's profile was made on the preset's host model: the memcpy it timed beside is the
  // machine that ran the simulator, not the host it simulated.
  if (profile.value("gpu", std::string()) != "cuda")
    return "the h100-host preset (a simulator's profile): one memcpy thread " + GbpsText(perf.wb_copy_gbps);
  const json memcpy = profile.value("host_memcpy_gbps", json::object());
  auto rate = [&](const char* threads) {
    auto it = memcpy.find(threads);
    return it != memcpy.end() && it->is_number() && it->get<double>() > 0 ? it->get<double>() : 0.0;
  };
  const double one = rate("1");
  if (one <= 0)
    return "the h100-host preset (the profile measured no host memcpy): one memcpy thread " +
           GbpsText(perf.wb_copy_gbps);
  perf.wb_copy_gbps = one;
  std::vector<double> threads;
  for (const char* t : {"1", "2", "4", "8", "16"}) {
    const double g = rate(t);
    if (g <= 0) break;
    threads.push_back(g);
  }
  perf.memcpy_threads_gbps = threads;
  std::string text = "the h100-host preset with the memcpy rates measured beside the profile: ";
  const char* names[] = {"1 thread", "2", "4", "8", "16 threads"};
  for (size_t i = 0; i < threads.size(); ++i)
    text += (i ? ", " : "") + std::string(names[i]) + " " + GbpsText(threads[i]);
  return text;
}

// Whether a case reached the driver in every run (a -1 code never did: nothing to compare).
bool ReachedTheDriver(const std::vector<int>& codes) {
  return !codes.empty() && *std::min_element(codes.begin(), codes.end()) >= 0;
}

// One replay of a profile on the simulator: the report it fills, case by case.
class Replay {
 public:
  Replay(FidelityReport& r, std::unique_ptr<Gpu> gpu) : r_(r), gpu_(std::move(gpu)) {}

  Status Attributes(const json& profile);
  void Registrations(const json& profile);
  void Sequences(const json& profile);
  Status DmaBufs(const json& profile);
  Status Bandwidth(const json& profile, double margin);

 private:
  std::string Named(int code) const { return std::to_string(code) + " " + CudaErrorName(r_.sim_profile, code); }
  static int CodeOf(const Status& st) { return st.ok() ? 0 : st.code(); }
  void CompareCodes(const std::string& what, const std::vector<int>& measured, int simulated);
  Status ExportOnSim(const json& c, Result<DmaBufExport>* e);
  Result<FidelityReport::Bandwidth> BandwidthRow(const json& b, uint64_t max_bw, HostMemory& pinned,
                                                 DeviceBuffer& dev, double margin);

  FidelityReport& r_;
  std::unique_ptr<Gpu> gpu_;
};

// Agreement: every run returned what the simulator returns.
void Replay::CompareCodes(const std::string& what, const std::vector<int>& measured, int simulated) {
  ++r_.code_cases;
  std::map<int, int> runs_of;
  for (int c : measured) ++runs_of[c];
  std::string m;
  if (runs_of.size() == 1) {
    m = Named(measured[0]);
  } else {
    for (const auto& [code, n] : runs_of)
      m += (m.empty() ? "" : ", ") + Named(code) + " in " + std::to_string(n) + " of " +
           std::to_string(measured.size()) + " runs";
  }
  std::string line = what + ": measured " + m + ", sim " + Named(simulated);
  const bool agree = runs_of.size() == 1 && measured[0] == simulated;
  (agree ? r_.agreements : r_.disagreements).push_back(line);
}

Status Replay::Attributes(const json& profile) {
  RESMEM_ASSIGN_OR_RETURN(DeviceAttributes a, gpu_->Attributes(0));
  const json& d = Field(profile, "device");
  auto attr = [&](const char* key, int sim_value) {
    ++r_.code_cases;
    const int m = d.value(key, -1);
    std::string line = std::string("attribute ") + key + ": measured " + std::to_string(m) + ", sim " +
                       std::to_string(sim_value);
    (m == sim_value ? r_.agreements : r_.disagreements).push_back(line);
  };
  attr("host_register_supported", a.host_register_supported);
  attr("read_only_host_register_supported", a.read_only_host_register_supported);
  attr("pageable_memory_access", a.pageable_memory_access);
  attr("async_engine_count", a.async_engine_count);
  return Status::Ok();
}

void Replay::Registrations(const json& profile) {
  for (const auto& c : Field(profile, "registration")) {
    std::vector<int> measured = CodesOf(c);
    if (!ReachedTheDriver(measured)) continue;
    const uint64_t size = WholeOr<uint64_t>(c, "size", 0);
    FactsMemory mem(FactsFromJson(Field(c, "facts"), size));
    const uint32_t flags = WholeOr<uint32_t>(c, "flag_bits", 0u);
    Status st = gpu_->Register(mem, 0, size, flags);
    if (st.ok()) gpu_->Unregister(mem, 0);
    CompareCodes("register " + c.value("kind", std::string("?")) + " " + FormatSize(size) + " " +
                     c.value("flags", std::string("?")),
                 measured, CodeOf(st));
  }
}

void Replay::Sequences(const json& profile) {
  for (const auto& s : profile.value("sequences", json::array())) {
    FactsMemory mem(FactsFromJson(Field(s, "facts"), WholeOr<uint64_t>(s, "size", 0)));
    int i = 0;
    for (const auto& op : Field(s, "ops")) {
      ++i;
      std::vector<int> measured = CodesOf(op);
      Status st = op.value("op", std::string()) == "register"
                      ? gpu_->Register(mem, WholeOr<uint64_t>(op, "offset", 0), WholeOr<uint64_t>(op, "length", 0),
                                       WholeOr<uint32_t>(op, "flag_bits", 0u))
                      : gpu_->Unregister(mem, WholeOr<uint64_t>(op, "offset", 0));
      if (!ReachedTheDriver(measured)) continue;
      CompareCodes("sequence '" + s.value("name", std::string()) + "' call " + std::to_string(i) + " (" +
                       op.value("op", std::string()) + ")",
                   measured, CodeOf(st));
    }
  }
}

// A dma-buf case's export on the simulator, from the memory its target names, into `e`. An
// allocation the simulator refuses is the replay's error.
Status Replay::ExportOnSim(const json& c, Result<DmaBufExport>* e) {
  const std::string target = c.value("target", std::string());
  const uint64_t alloc = WholeOr<uint64_t>(c, "alloc", 0), offset = WholeOr<uint64_t>(c, "offset", 0),
                 length = WholeOr<uint64_t>(c, "length", 0);
  if (target == "device" || target == "vmm" || target == "vmm-no-rdma") {
    RESMEM_ASSIGN_OR_RETURN(auto dev, target == "device" ? gpu_->AllocDevice(alloc)
                                                         : gpu_->AllocDeviceVmm(alloc, target == "vmm"));
    *e = gpu_->ExportDmaBuf(*dev, offset, length);
  } else if (target == "pinned") {
    RESMEM_ASSIGN_OR_RETURN(auto pinned, gpu_->AllocPinned(alloc, 0));
    *e = gpu_->ExportDmaBufHost(*pinned, offset, length);
  } else {
    FactsMemory mem(FactsFromJson(Field(c, "facts"), alloc));
    const bool reg = target == "registered" && gpu_->Register(mem, 0, alloc, 0).ok();
    *e = gpu_->ExportDmaBufHost(mem, offset, length);
    if (reg) gpu_->Unregister(mem, 0);
  }
  return Status::Ok();
}

// dma-buf export cases: the code, and for a success the fd's size.
Status Replay::DmaBufs(const json& profile) {
  for (const auto& c : profile.value("dmabuf", json::array())) {
    std::vector<int> measured = CodesOf(c);
    if (!ReachedTheDriver(measured)) continue;
    Result<DmaBufExport> e = Status::Internal("no such target");
    RESMEM_RETURN_IF_ERROR(ExportOnSim(c, &e));
    const std::string what = "dmabuf " + c.value("target", std::string()) + " '" + c.value("name", std::string()) + "'";
    CompareCodes(what, measured, e.ok() ? 0 : (e.status().space() == ErrorSpace::kCuda ? e.status().code() : -1));
    if (e.ok() && c.contains("fd_size")) {
      ++r_.code_cases;
      const uint64_t fd_size = WholeOr<uint64_t>(c, "fd_size", 0);
      const std::string line = what + " fd size: measured " + std::to_string(fd_size) + ", sim " + std::to_string(e->size);
      (fd_size == e->size ? r_.agreements : r_.disagreements).push_back(line);
    }
  }
  return Status::Ok();
}

// The simulator's copy rate of one bandwidth class against the measured spread, widened by the
// margin.
Result<FidelityReport::Bandwidth> Replay::BandwidthRow(const json& b, uint64_t max_bw, HostMemory& pinned,
                                                       DeviceBuffer& dev, double margin) {
  FidelityReport::Bandwidth row;
  row.cls = b.value("class", std::string());
  row.direction = b.value("direction", std::string());
  row.size = WholeOr<uint64_t>(b, "size", 0);
  RESMEM_ASSIGN_OR_RETURN(row.measured, BandwidthRangeOf(b));
  const CopyDirection dir = row.direction == "H2D" ? CopyDirection::kHostToDevice : CopyDirection::kDeviceToHost;
  FactsMemory mem(FactsFromJson(Field(b, "facts"), max_bw));
  HostMemory* host = row.cls == "pinned" ? &pinned : &mem;
  if (row.cls == "registered") RESMEM_RETURN_IF_ERROR(gpu_->Register(mem, 0, max_bw, 0));
  auto s = gpu_->Copy(dir, *host, 0, dev, 0, row.size);
  if (row.cls == "registered") gpu_->Unregister(mem, 0);
  if (!s.ok()) return s.status().WithContext("sim copy for " + row.cls);
  row.sim_gbps = s->GBps();
  const BandwidthRange& m = row.measured;
  row.inside = row.sim_gbps >= m.min_gbps * (1 - margin) && row.sim_gbps <= m.max_gbps * (1 + margin);
  return row;
}

// "bandwidth pinned H2D 16 MiB: measured ..., sim ... (where)": one run's figure and the
// simulator's difference, or the runs' spread and where the simulator lies in it.
std::string BandwidthLine(const FidelityReport::Bandwidth& row) {
  const BandwidthRange& m = row.measured;
  const std::string what = "bandwidth " + row.cls + " " + row.direction + " " + FormatSize(row.size);
  char line[320];
  if (m.runs() == 1) {
    std::snprintf(line, sizeof line, "%s: measured %.2f GB/s, sim %.2f GB/s (%+.1f%%)", what.c_str(),
                  m.median_gbps, row.sim_gbps, 100 * (row.sim_gbps / m.median_gbps - 1));
    return line;
  }
  std::string where = row.sim_gbps < m.min_gbps   ? "below the min by " + Percent(1 - row.sim_gbps / m.min_gbps)
                      : row.sim_gbps > m.max_gbps ? "above the max by " + Percent(row.sim_gbps / m.max_gbps - 1)
                                                  : std::string("inside the spread");
  std::snprintf(line, sizeof line, "%s: measured %.2f-%.2f GB/s (median %.2f, %d runs), sim %.2f GB/s (%s)",
                what.c_str(), m.min_gbps, m.max_gbps, m.median_gbps, m.runs(), row.sim_gbps, where.c_str());
  return line;
}

Status Replay::Bandwidth(const json& profile, double margin) {
  uint64_t max_bw = 0;
  for (const auto& b : profile.value("bandwidth", json::array()))
    max_bw = std::max(max_bw, WholeOr<uint64_t>(b, "size", 0));
  if (!max_bw) return Status::Ok();
  RESMEM_ASSIGN_OR_RETURN(auto dev, gpu_->AllocDevice(max_bw));
  RESMEM_ASSIGN_OR_RETURN(auto pinned, gpu_->AllocPinned(max_bw, 0));
  for (const auto& b : Field(profile, "bandwidth")) {
    RESMEM_ASSIGN_OR_RETURN(FidelityReport::Bandwidth row, BandwidthRow(b, max_bw, *pinned, *dev, margin));
    ++r_.bandwidth_cases;
    r_.runs = std::max(r_.runs, row.measured.runs());
    (row.inside ? r_.agreements : r_.disagreements).push_back(BandwidthLine(row));
    r_.bandwidth.push_back(std::move(row));
  }
  return Status::Ok();
}

Result<FidelityReport> CompareWithSimUnchecked(const json& profile, const std::string& sim_profile, double margin) {
  if (!profile.contains("registration"))
    return Status::InvalidArgument("not a calibration profile (no \"registration\"): make one "
                                   "with resmem calibrate --out FILE");
  if (!(margin >= 0 && margin < 1))
    return Status::InvalidArgument("bandwidth margin must be in [0, 1), got " + std::to_string(margin));
  RESMEM_ASSIGN_OR_RETURN(sim::CudaProfile cp, sim::CudaProfileByName(sim_profile));
  RESMEM_ASSIGN_OR_RETURN(sim::MachineSpec machine, sim::MachinePreset("h100-host"));
  FidelityReport r;
  r.host = UseMeasuredHost(profile, machine.perf);
  sim::SimGpuOptions so;
  so.host_mem_total = WholeOr<uint64_t>(profile, "host_mem_total", 0);
  r.sim_profile = sim_profile;
  r.margin = margin;
  Replay replay(r, sim::MakeSimGpu(cp, machine.perf, std::make_shared<VirtualClock>(),
                                   std::make_shared<FaultInjector>(1), so));
  RESMEM_RETURN_IF_ERROR(replay.Attributes(profile));
  replay.Registrations(profile);
  replay.Sequences(profile);
  RESMEM_RETURN_IF_ERROR(replay.DmaBufs(profile));
  RESMEM_RETURN_IF_ERROR(replay.Bandwidth(profile, margin));
  return r;
}

}  // namespace

Result<FidelityReport> CompareWithSim(const json& profile, const std::string& sim_profile, double margin) {
  try {
    return CompareWithSimUnchecked(profile, sim_profile, margin);
  } catch (const json::exception& e) {
    return NotAProfile("the profile", e);
  }
}

std::string FidelityReport::ToMarkdown() const {
  std::ostringstream out;
  char margin_text[64];
  std::snprintf(margin_text, sizeof margin_text, "%.0f%%", 100 * margin);
  out << "# Fidelity: measured profile vs simulator profile `" << sim_profile << "`\n\n"
      << "Return-code and attribute cases: " << code_cases << " (every run must agree); "
      << "bandwidth classes: " << bandwidth_cases << ", measured in " << runs
      << (runs == 1 ? " run" : " runs") << ". A class agrees when the simulator's rate lies "
      << "inside the measured spread widened by a margin of " << margin_text
      << " (min x (1 - margin) <= sim <= max x (1 + margin)).\n\n";
  if (!host.empty()) out << "The simulator's host: " << host << ".\n\n";
  if (!bandwidth.empty()) {
    out << "| class | dir | size | min GB/s | median | max | spread | runs | sim GB/s | verdict |\n"
        << "|---|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& b : bandwidth) {
      char row[320];
      const BandwidthRange& m = b.measured;
      std::snprintf(row, sizeof row, "| %s | %s | %s | %.2f | %.2f | %.2f | %.0f%% | %d | %.2f | %s |\n",
                    b.cls.c_str(), b.direction.c_str(), FormatSize(b.size).c_str(), m.min_gbps,
                    m.median_gbps, m.max_gbps, 100 * (m.max_gbps - m.min_gbps) / m.median_gbps,
                    m.runs(), b.sim_gbps, b.inside ? "agrees" : "DISAGREES");
      out << row;
    }
    out << "\n";
  }
  out << "## Disagreements (" << disagreements.size() << ")\n\n";
  if (disagreements.empty()) out << "None.\n";
  for (const auto& d : disagreements) out << "- " << d << "\n";
  out << "\n## Agreements (" << agreements.size() << ")\n\n";
  for (const auto& a : agreements) out << "- " << a << "\n";
  return out.str();
}

json FidelityReport::ToJson() const {
  json bw = json::array();
  for (const auto& b : bandwidth)
    bw.push_back({{"class", b.cls}, {"direction", b.direction}, {"size", b.size},
                  {"min_gbps", b.measured.min_gbps}, {"median_gbps", b.measured.median_gbps},
                  {"max_gbps", b.measured.max_gbps}, {"runs", b.measured.runs()},
                  {"sim_gbps", b.sim_gbps}, {"inside", b.inside}});
  return {{"sim_profile", sim_profile}, {"host", host}, {"margin", margin}, {"runs", runs},
          {"code_cases", code_cases}, {"bandwidth_cases", bandwidth_cases}, {"bandwidth", bw},
          {"disagreements", disagreements}, {"agreements", agreements}};
}

}  // namespace resmem::calibrate
