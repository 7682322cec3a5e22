// Fuzz target: calibration profiles (engine/calibrate: the JSON `resmem calibrate --compare` and
// `--merge` read, written on the GPU machine or by hand). The text is parsed as the command
// parses it (nlohmann::json, no exceptions), then compared with the simulator and merged with
// itself. Properties: no crash, hang, OOM or escaping exception: a profile that is not one gives
// an error.
//
// Every "size" is capped at 1 MiB before the comparison: CompareWithSim replays each case on the
// simulator, which moves the bytes it names (the H100 profile's 256 MiB copies take seconds under
// the sanitizers, a profile's honest request, not a hang of the parser), and fuzzing needs
// thousands of inputs a second. The shape of the profile, which is what is fuzzed, is kept.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/fuzz/fuzz_check.h"
#include "engine/calibrate/calibrate.h"

namespace {
void CapSizes(nlohmann::json& root) {  // iterative: the input may nest deeply
  std::vector<nlohmann::json*> todo = {&root};
  while (!todo.empty()) {
    nlohmann::json& j = *todo.back();
    todo.pop_back();
    if (j.is_object()) {
      for (auto& [key, value] : j.items()) {
        if (key == "size" && value.is_number_unsigned() && value.get<uint64_t>() > (1u << 20))
          value = 1u << 20;
        todo.push_back(&value);
      }
    } else if (j.is_array()) {
      for (auto& value : j) todo.push_back(&value);
    }
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace resmem::calibrate;
  const std::string text(reinterpret_cast<const char*>(data), size);
  nlohmann::json profile = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (profile.is_discarded()) return 0;
  CapSizes(profile);
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
