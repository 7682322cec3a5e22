#include "engine/bench/registration.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "backends/api/median.h"
#include "backends/host/host_region.h"

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

// On a virtual clock (the simulator) the memory is mapped for real but never touched, so any size
// runs on a small build machine: its facts say what a touch would have made of it (every page
// present), and the model charges the registration accordingly.
class ModelledTouch : public HostMemory {
 public:
  explicit ModelledTouch(std::unique_ptr<HostMemory> inner) : inner_(std::move(inner)) {
    facts_ = inner_->facts();
    facts_.resident = true;
  }
  uint64_t size() const override { return inner_->size(); }
  const MappingFacts& facts() const override { return facts_; }
  uint64_t address() const override { return inner_->address(); }
  uint8_t* data() override { return inner_->data(); }
  Status Read(uint64_t offset, void* out, uint64_t len) override {
    return inner_->Read(offset, out, len);
  }
  Status Write(uint64_t offset, const void* in, uint64_t len) override {
    return inner_->Write(offset, in, len);
  }
  std::string Describe() const override { return inner_->Describe() + " (touch modelled)"; }

 private:
  std::unique_ptr<HostMemory> inner_;
  MappingFacts facts_;
};

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
  for (uint64_t s : sizes)
    if (s == 0 || s % k2M)
      return Status::InvalidArgument("registration size " + FormatSize(s) +
                                     " is not a positive multiple of 2 MiB");
  for (uint64_t c : chunks)
    if (c % k2M)
      return Status::InvalidArgument("registration piece " + FormatSize(c) +
                                     " is not a multiple of 2 MiB (0 = one call)");
  for (const auto& b : backings) {
    auto all = RegistrationBackings();
    if (std::find(all.begin(), all.end(), b) == all.end()) {
      std::string names;
      for (const auto& n : all) names += " " + n;
      return Status::InvalidArgument("unknown registration backing '" + b + "'; choose from:" +
                                     names);
    }
  }
  if (o.repeats < 1) return Status::InvalidArgument("repeats must be at least 1");

  RegistrationResult result;
  result.backend = backend;
  for (const auto& name : backings)
    for (bool touched : o.touched)
      for (uint64_t size : sizes)
        for (uint64_t chunk : chunks) {
          RegistrationRow row;
          row.backing = name;
          row.touched = touched;
          row.size = size;
          row.chunk = chunk >= size ? 0 : chunk;
          if (chunk && chunk >= size && chunks.size() > 1) continue;  // same as one call
          Backing b = BackingFor(name);
          if (name == "hugetlb-1g" && size % kGiB) {
            row.skipped = "not a whole number of 1 GiB pages";
            result.rows.push_back(row);
            continue;
          }
          // Touched: every page written once while mapping (HostMapOptions::populate), so the
          // facts read afterwards say resident; the simulator models the touch instead.
          const bool modelled = clock.is_virtual();
          b.map.populate = touched && !modelled;
          b.map.noreserve = modelled;
          double t0 = clock.NowSeconds();
          auto mapped = host::MapHostMemory(b.kind, size, b.map);
          (touched ? row.touch_seconds : row.map_seconds) = clock.NowSeconds() - t0;
          if (!mapped.ok()) {
            row.skipped = mapped.status().message();
            result.rows.push_back(row);
            continue;
          }
          std::unique_ptr<HostMemory> mem = std::move(mapped).value();
          if (touched && modelled) mem = std::make_unique<ModelledTouch>(std::move(mem));
          const uint64_t piece = row.chunk ? row.chunk : size;
          std::vector<double> reg, unreg;
          for (int rep = 0; rep < o.repeats && row.error.empty(); ++rep) {
            std::vector<uint64_t> done;
            t0 = clock.NowSeconds();
            for (uint64_t off = 0; off < size; off += piece) {
              Status st = gpu.Register(*mem, off, std::min(piece, size - off), 0);
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
              Status st = gpu.Unregister(*mem, off);
              if (!st.ok() && row.error.empty()) row.error = "unregister: " + st.ToString();
            }
            unreg.push_back(clock.NowSeconds() - t0);
          }
          row.register_seconds = MedianUpper(reg);
          row.unregister_seconds = MedianUpper(unreg);
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
