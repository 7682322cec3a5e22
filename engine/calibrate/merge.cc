// MergeProfiles and BandwidthRangeOf: several runs of one GPU model as one format-2 profile
// (calibrate.h).
#include <algorithm>
#include <map>
#include <set>

#include "backends/api/median.h"
#include "engine/calibrate/calibrate.h"
#include "engine/calibrate/profile_json.h"

namespace resmem::calibrate {
namespace {

// Entries of one array of several profiles, merged by key in first-seen order.
class Keyed {
 public:
  json* Find(const std::string& key) {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second];
  }
  json& Add(const std::string& key, json item) {
    index_[key] = items_.size();
    items_.push_back(std::move(item));
    return items_.back();
  }
  json ToArray() const {
    json a = json::array();
    for (const auto& i : items_) a.push_back(i);
    return a;
  }

 private:
  std::map<std::string, size_t> index_;
  std::vector<json> items_;
};

void AppendCodes(json& merged, const json& entry) {
  for (int c : CodesOf(entry)) merged["code_runs"].push_back(c);
}

Result<BandwidthRange> BandwidthRangeOfUnchecked(const json& entry) {
  BandwidthRange r;
  r.run_gbps = RunGbpsOf(entry);
  if (r.run_gbps.empty() || *std::min_element(r.run_gbps.begin(), r.run_gbps.end()) <= 0)
    return Status::InvalidArgument("bandwidth entry '" + BandwidthKey(entry) +
                                   "' has no measured rate (\"run_gbps\" or \"gbps\" > 0)");
  r.min_gbps = *std::min_element(r.run_gbps.begin(), r.run_gbps.end());
  r.max_gbps = *std::max_element(r.run_gbps.begin(), r.run_gbps.end());
  r.median_gbps = MedianMean(r.run_gbps);
  return r;
}

// Profiles that may be merged: calibration profiles, one source name each, of one device and
// driver era.
Status CheckMergeable(const std::vector<json>& profiles, const std::vector<std::string>& sources) {
  if (profiles.empty()) return Status::InvalidArgument("no profiles to merge");
  if (sources.size() != profiles.size())
    return Status::InvalidArgument("MergeProfiles: one source name per profile");
  for (size_t i = 0; i < profiles.size(); ++i)
    if (!profiles[i].is_object() || !profiles[i].contains("registration"))
      return Status::InvalidArgument(sources[i] + " is not a calibration profile (no "
                                     "\"registration\"): make one with resmem calibrate --out FILE");
  const json& first = profiles[0];
  for (size_t i = 1; i < profiles.size(); ++i) {
    for (const char* key : {"driver_profile", "device"}) {
      if (profiles[i].value(key, json()) != first.value(key, json()))
        return Status::InvalidArgument(
            sources[i] + " and " + sources[0] + " differ in \"" + key + "\" (" +
            profiles[i].value(key, json()).dump() + " vs " + first.value(key, json()).dump() +
            "): merge only runs of one GPU model and driver");
    }
  }
  return Status::Ok();
}

// The merge being built: each array's entries by key, the memcpy rates of every run.
class Merge {
 public:
  explicit Merge(const json& first) : first_(first) {
    out_["format"] = 2;
    for (const char* key : {"backend", "gpu", "driver_profile", "device", "host_mem_total"})
      if (first.contains(key)) out_[key] = first[key];
    out_["runs"] = json::array();
  }

  // One input: its runs (a merge's, named inside `source`, or itself as one run) and entries.
  Status Add(const json& p, const std::string& source, const std::string& first_source) {
    AddRuns(p, source, first_source);
    for (const auto& c : Field(p, "registration")) {
      const std::string key = c.value("kind", std::string()) + " " +
                              std::to_string(WholeOr<uint64_t>(c, "size", 0)) + " " +
                              std::to_string(WholeOr<uint32_t>(c, "flag_bits", 0u));
      AppendCodes(Entry(registration_, key, c), c);
    }
    for (const auto& c : p.value("dmabuf", json::array()))
      AppendCodes(Entry(dmabuf_, c.value("name", std::string()), c), c);
    for (const auto& s : p.value("sequences", json::array()))
      RESMEM_RETURN_IF_ERROR(AddSequence(s, source));
    for (const auto& b : p.value("bandwidth", json::array())) RESMEM_RETURN_IF_ERROR(AddBandwidth(b));
    AddMemcpy(p);
    for (const auto& s : p.value("skipped", json::array()))
      if (skipped_seen_.insert(s.get<std::string>()).second) out_["skipped"].push_back(s);
    return Status::Ok();
  }

  // The format-2 profile: each bandwidth class's spread over the runs, the memcpy medians.
  Result<json> Finish() {
    out_["registration"] = registration_.ToArray();
    out_["sequences"] = sequences_.ToArray();
    if (!dmabuf_.ToArray().empty()) out_["dmabuf"] = dmabuf_.ToArray();
    out_["bandwidth"] = bandwidth_.ToArray();
    for (auto& b : out_["bandwidth"]) {
      RESMEM_ASSIGN_OR_RETURN(BandwidthRange r, BandwidthRangeOf(b));
      b["gbps"] = r.median_gbps;
      b["range"] = {{"min", r.min_gbps}, {"median", r.median_gbps}, {"max", r.max_gbps}, {"runs", r.runs()}};
    }
    for (const auto& [t, v] : memcpy_runs_) {
      out_["host_memcpy_gbps"][t] = MedianMean(v);
      out_["host_memcpy_runs"][t] = v;
    }
    return std::move(out_);
  }

 private:
  // The merged entry for `key`, made from `entry` with an empty "code_runs" when first seen.
  static json& Entry(Keyed& keyed, const std::string& key, const json& entry) {
    if (json* m = keyed.Find(key)) return *m;
    json fresh = entry;
    fresh["code_runs"] = json::array();
    return keyed.Add(key, fresh);
  }

  void AddRuns(const json& p, const std::string& source, const std::string& first_source) {
    if (p.contains("runs")) {  // a merge: its runs, named inside this source
      for (json r : Field(p, "runs")) {
        r["source"] = source + ": " + r.value("source", std::string("?"));
        out_["runs"].push_back(r);
      }
    } else {
      json run = {{"source", source},
                  {"backend", p.value("backend", std::string())},
                  {"host_mem_total", WholeOr<uint64_t>(p, "host_mem_total", 0)}};
      if (p.contains("date")) run["date"] = p["date"];
      out_["runs"].push_back(run);
    }
    const uint64_t mem = WholeOr<uint64_t>(p, "host_mem_total", 0), first = WholeOr<uint64_t>(first_, "host_mem_total", 0);
    if (mem != first)
      out_["notes"].push_back(source + ": host_mem_total " + std::to_string(mem) + " (" + first_source +
                              ": " + std::to_string(first) + ")");
  }

  Status AddSequence(const json& s, const std::string& source) {
    const std::string key = s.value("name", std::string());
    json* m = sequences_.Find(key);
    if (!m) {
      json fresh = s;
      for (auto& op : fresh["ops"]) op["code_runs"] = json::array();
      m = &sequences_.Add(key, fresh);
    }
    if ((*m)["ops"].size() != Field(s, "ops").size())
      return Status::InvalidArgument(source + ": sequence '" + key + "' has " +
                                     std::to_string(Field(s, "ops").size()) + " calls, an earlier run " +
                                     std::to_string((*m)["ops"].size()));
    for (size_t k = 0; k < Field(s, "ops").size(); ++k) AppendCodes((*m)["ops"][k], Field(s, "ops")[k]);
    return Status::Ok();
  }

  Status AddBandwidth(const json& b) {
    RESMEM_ASSIGN_OR_RETURN(BandwidthRange r, BandwidthRangeOf(b));
    const std::string key = BandwidthKey(b);
    json* m = bandwidth_.Find(key);
    if (!m) {
      json fresh = b;
      fresh["run_gbps"] = json::array();
      fresh["pass_gbps"] = json::array();
      m = &bandwidth_.Add(key, fresh);
    }
    for (double g : r.run_gbps) (*m)["run_gbps"].push_back(g);
    for (const auto& g : b.value("pass_gbps", json::array())) (*m)["pass_gbps"].push_back(g);
    return Status::Ok();
  }

  void AddMemcpy(const json& p) {
    if (p.contains("host_memcpy_runs")) {
      for (const auto& [t, v] : Field(p, "host_memcpy_runs").items())
        for (const auto& g : v) memcpy_runs_[t].push_back(g.get<double>());
      return;
    }
    const json memcpy = p.value("host_memcpy_gbps", json::object());
    for (const auto& [t, g] : memcpy.items()) memcpy_runs_[t].push_back(g.get<double>());
  }

  const json& first_;
  json out_ = json::object();
  Keyed registration_, sequences_, bandwidth_, dmabuf_;
  std::map<std::string, std::vector<double>> memcpy_runs_;
  std::set<std::string> skipped_seen_;
};

Result<json> MergeProfilesUnchecked(const std::vector<json>& profiles, const std::vector<std::string>& sources) {
  RESMEM_RETURN_IF_ERROR(CheckMergeable(profiles, sources));
  Merge merge(profiles[0]);
  for (size_t i = 0; i < profiles.size(); ++i) RESMEM_RETURN_IF_ERROR(merge.Add(profiles[i], sources[i], sources[0]));
  return merge.Finish();
}

}  // namespace

Result<BandwidthRange> BandwidthRangeOf(const json& bandwidth_entry) {
  try {
    return BandwidthRangeOfUnchecked(bandwidth_entry);
  } catch (const json::exception& e) {
    return NotAProfile("a bandwidth entry", e);
  }
}

Result<json> MergeProfiles(const std::vector<json>& profiles, const std::vector<std::string>& sources) {
  try {
    return MergeProfilesUnchecked(profiles, sources);
  } catch (const json::exception& e) {
    return NotAProfile("an input", e);
  }
}

}  // namespace resmem::calibrate
