// Fuzz target: calibration profiles (engine/calibrate: the JSON `resmem calibrate --compare` and
// `--merge` read, written on the GPU machine or by hand). The text is parsed as the command
// parses it (nlohmann::json, no exceptions), then compared with the simulator and merged with
// itself. Properties: no crash, hang, OOM or escaping exception: a profile that is not one gives
// an error.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/calibrate/calibrate.h"
#include "engine/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace resmem::calibrate;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json profile = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (profile.is_discarded()) return 0;
  auto report = CompareWithSim(profile);
  if (report.ok()) {
    (void)report.value().ToMarkdown();
    (void)report.value().ToJson().dump(1);
  }
  auto merged = MergeProfiles({profile, profile}, {"a.json", "b.json"});
  if (merged.ok()) (void)CompareWithSim(merged.value());
  if (profile.is_object() && profile.contains("bandwidth") && profile["bandwidth"].is_array())
    for (const auto& entry : profile["bandwidth"]) (void)BandwidthRangeOf(entry);
  return 0;
}
