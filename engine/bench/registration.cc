#include "engine/bench/registration.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "backends/api/facts_memory.h"
#include "backends/api/median.h"
#include "backends/host/host_region.h"
#include "backends/host/modelled_memory.h"

namespace resmem::bench {
namespace {

constexpr uint64_t k2M = 2ull << 20;
constexpr uint64_t kGiB = 1ull << 30;

struct Backing {
  host::HostKind kind;
  host::HostMapOptions map;
};

Backing BackingFor(const std::string& name) {
  Backing b{host::HostKind::kAnonymous, {}};
  if (name == "anon") b.map.transparent_huge = 0;
  if (name == "anon-thp") b.map.transparent_huge = 1;
  if (name == "memfd") b.kind = host::HostKind::kMemfd;
  if (name == "hugetlb-2m") b.kind = host::HostKind::kHugetlb;
  if (name == "hugetlb-1g") {
    b.kind = host::HostKind::kHugetlb;
    b.map.huge_page_size = kGiB;
  }
  return b;
}

// On a virtual clock (the simulator) nothing is mapped: the span is the facts a mapping of this
// backing would have (as backends/host reads them from smaps), touched or not, so any size and
// any page size runs on any build machine - one without 1 GiB pages (no pdpe1gb) included - and
// the model charges the registration from the facts.
std::unique_ptr<HostMemory> ModelledMapping(const std::string& name, uint64_t size, bool touched) {
  Backing b = BackingFor(name);
  b.map.populate = touched;
  return std::make_unique<FactsMemory>(host::ModelledFacts(b.kind, size, b.map));
}

// The span of one row: mapped for real (and touched: every page written once while mapping,
// HostMapOptions::populate, so the facts read afterwards say resident), or modelled on a
// virtual clock. The time it took goes to the row.
Result<std::unique_ptr<HostMemory>> MappingFor(const std::string& name, uint64_t size, bool touched, Clock& clock,
                                                RegistrationRow& row) {
  if (clock.is_virtual()) return ModelledMapping(name, size, touched);
  Backing b = BackingFor(name);
  b.map.populate = touched;
  const double t0 = clock.NowSeconds();
  auto mapped = host::MapHostMemory(b.kind, size, b.map);
  (touched ? row.touch_seconds : row.map_seconds) = clock.NowSeconds() - t0;
  return mapped;
}

// Registers `mem` in pieces and unregisters it, `repeats` times: the median times and the calls.
void TimeRegistration(Gpu& gpu, Clock& clock, HostMemory& mem, int repeats, RegistrationRow& row) {
  const uint64_t size = row.size, piece = row.chunk ? row.chunk : size;
  std::vector<double> reg, unreg;
  for (int rep = 0; rep < repeats && row.error.empty(); ++rep) {
    std::vector<uint64_t> done;
    double t0 = clock.NowSeconds();
    for (uint64_t off = 0; off < size; off += piece) {
      Status st = gpu.Register(mem, off, std::min(piece, size - off), 0);
      if (!st.ok()) {
        row.error = st.ToString();
        break;
      }
      done.push_back(off);
    }
    reg.push_back(clock.NowSeconds() - t0);
    row.calls = static_cast<int>(done.size());
    t0 = clock.NowSeconds();
    for (uint64_t off : done) {
      Status st = gpu.Unregister(mem, off);
      if (!st.ok() && row.error.empty()) row.error = "unregister: " + st.ToString();
    }
    unreg.push_back(clock.NowSeconds() - t0);
  }
  row.register_seconds = MedianUpper(reg);
  row.unregister_seconds = MedianUpper(unreg);
}

Status CheckOptions(const std::vector<uint64_t>& sizes, const std::vector<uint64_t>& chunks,
                    const std::vector<std::string>& backings, int repeats) {
  for (uint64_t s : sizes)
    if (s == 0 || s % k2M)
      return Status::InvalidArgument("registration size " + FormatSize(s) +
                                     " is not a positive multiple of 2 MiB");
  for (uint64_t c : chunks)
    if (c % k2M)
      return Status::InvalidArgument("registration piece " + FormatSize(c) +
                                     " is not a multiple of 2 MiB (0 = one call)");
  const auto all = RegistrationBackings();
  for (const auto& b : backings) {
    if (std::find(all.begin(), all.end(), b) == all.end()) {
      std::string names;
      for (const auto& n : all) names += " " + n;
      return Status::InvalidArgument("unknown registration backing '" + b + "'; choose from:" + names);
    }
  }
  if (repeats < 1) return Status::InvalidArgument("repeats must be at least 1");
  return Status::Ok();
}

}  // namespace

std::vector<std::string> RegistrationBackings() {
  return {"anon", "anon-thp", "memfd", "hugetlb-2m", "hugetlb-1g"};
}

Result<RegistrationResult> RunRegistrationBench(Gpu& gpu, Clock& clock, const std::string& backend,
                                                const RegistrationOptions& o) {
  std::vector<uint64_t> sizes = o.sizes;
  if (sizes.empty()) sizes = {1 * kGiB, 4 * kGiB, 16 * kGiB};
  std::vector<uint64_t> chunks = o.chunks.empty() ? std::vector<uint64_t>{0} : o.chunks;
  std::vector<std::string> backings = o.backings.empty() ? RegistrationBackings() : o.backings;
  RESMEM_RETURN_IF_ERROR(CheckOptions(sizes, chunks, backings, o.repeats));
  RegistrationResult result;
  result.backend = backend;
  for (const auto& name : backings)
    for (bool touched : o.touched)
      for (uint64_t size : sizes)
        for (uint64_t chunk : chunks) {
          if (chunk && chunk >= size && chunks.size() > 1) continue;  // same as one call
          RegistrationRow row;
          row.backing = name;
          row.touched = touched;
          row.size = size;
          row.chunk = chunk >= size ? 0 : chunk;
          if (name == "hugetlb-1g" && size % kGiB) {
            row.skipped = "not a whole number of 1 GiB pages";
          } else if (auto mem = MappingFor(name, size, touched, clock, row); !mem.ok()) {
            row.skipped = mem.status().message();
          } else {
            TimeRegistration(gpu, clock, **mem, o.repeats, row);
          }
          result.rows.push_back(row);
        }
  return result;
}

std::string RegistrationResult::ToTable() const {
  std::string out = "backend " + backend +
                    "; cudaHostRegister wall time (median of repeats), flags 0\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-11s %-9s %9s %9s %5s %9s %9s %9s %9s  %s\n", "backing",
                "state", "size", "piece", "calls", "touch s", "reg s", "s/GiB", "unreg s",
                "outcome");
  out += line;
  for (const auto& r : rows) {
    std::string outcome = !r.skipped.empty() ? "skipped: " + r.skipped
                          : !r.error.empty() ? "refused: " + r.error
                                             : "ok";
    std::snprintf(line, sizeof line, "%-11s %-9s %9s %9s %5d %9.3f %9.3f %9.4f %9.3f  %s\n",
                  r.backing.c_str(), r.touched ? "touched" : "untouched",
                  FormatSize(r.size).c_str(), r.chunk ? FormatSize(r.chunk).c_str() : "whole",
                  r.calls, r.touch_seconds, r.register_seconds, r.RegisterSecondsPerGiB(),
                  r.unregister_seconds, outcome.c_str());
    out += line;
  }
  return out;
}

std::string RegistrationResult::ToJson() const {
  nlohmann::json j;
  j["backend"] = backend;
  j["rows"] = nlohmann::json::array();
  for (const auto& r : rows)
    j["rows"].push_back({{"backing", r.backing},
                         {"touched", r.touched},
                         {"size", r.size},
                         {"chunk", r.chunk},
                         {"calls", r.calls},
                         {"map_seconds", r.map_seconds},
                         {"touch_seconds", r.touch_seconds},
                         {"register_seconds", r.register_seconds},
                         {"register_seconds_per_gib", r.RegisterSecondsPerGiB()},
                         {"unregister_seconds", r.unregister_seconds},
                         {"skipped", r.skipped},
                         {"error", r.error}});
  return j.dump(1);
}

}  // namespace resmem::bench
