#include "engine/calibrate/profile_json.h"

#include <cstdio>

namespace resmem::calibrate {

const json& Field(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  const auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

json FactsToJson(const MappingFacts& f) {
  return {{"readable", f.readable}, {"writable", f.writable},   {"shared", f.shared},
          {"vm_io", f.vm_io},       {"vm_pfnmap", f.vm_pfnmap}, {"vm_mixedmap", f.vm_mixedmap},
          {"locked", f.locked},     {"backing", BackingName(f.backing)},
          {"page_size", f.page_size}, {"pinned", f.pinned}, {"origin", f.origin}};
}

MappingFacts FactsFromJson(const json& j, uint64_t length) {
  MappingFacts f;
  f.length = length;
  f.readable = j.value("readable", true);
  f.writable = j.value("writable", true);
  f.shared = j.value("shared", false);
  f.vm_io = j.value("vm_io", false);
  f.vm_pfnmap = j.value("vm_pfnmap", false);
  f.vm_mixedmap = j.value("vm_mixedmap", false);
  f.locked = j.value("locked", false);
  f.backing = ParseBacking(j.value("backing", "unknown")).value_or(Backing::kUnknown);
  f.page_size = WholeOr<uint64_t>(j, "page_size", 4096);
  f.pinned = j.value("pinned", false);
  f.origin = "profile";
  return f;
}

std::vector<int> CodesOf(const json& entry) {
  std::vector<int> codes;
  if (entry.contains("code_runs"))
    for (const auto& c : Field(entry, "code_runs")) codes.push_back(WholeNumber<int>(c, "code_runs"));
  else
    codes.push_back(WholeOr<int>(entry, "code", -1));
  return codes;
}

std::vector<double> RunGbpsOf(const json& entry) {
  std::vector<double> v;
  if (entry.contains("run_gbps"))
    for (const auto& g : Field(entry, "run_gbps")) v.push_back(g.get<double>());
  else if (entry.contains("gbps"))
    v.push_back(Field(entry, "gbps").get<double>());
  return v;
}

std::string BandwidthKey(const json& b) {
  return b.value("class", std::string()) + " " + b.value("direction", std::string()) + " " +
         FormatSize(WholeOr<uint64_t>(b, "size", 0));
}

std::string Percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", 100 * fraction);
  return text;
}

std::string GbpsText(double gbps) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GB/s", gbps);
  return text;
}

Status NotAProfile(const std::string& what, const json::exception& e) {
  return Status::InvalidArgument(what + " is not a calibration profile of the expected shape (" +
                                 e.what() + "): make one with resmem calibrate --out FILE");
}

}  // namespace resmem::calibrate
