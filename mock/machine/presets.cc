// Named machines: the preset files of the machine format (mock/machine/presets/*.toml), compiled
// into the binary by embed_presets.sh. Every number's source is a comment in its file.
#include "mock/machine/machine.h"
#include "mock/machine/machine_file.h"
#include "mock/machine/preset_texts.h"

namespace resmem::sim {

std::vector<std::string> MachinePresetNames() {
  std::vector<std::string> names;
  for (int i = 0; i < kEmbeddedPresetCount; ++i) names.push_back(kEmbeddedPresets[i].name);
  return names;
}

Result<MachineSpec> MachinePreset(const std::string& name) {
  for (int i = 0; i < kEmbeddedPresetCount; ++i) {
    if (name != kEmbeddedPresets[i].name) continue;
    auto spec = ParseMachineText(kEmbeddedPresets[i].text, kEmbeddedPresets[i].path);
    if (!spec.ok()) return spec.status().WithContext("preset '" + name + "' is broken");
    return spec;
  }
  std::string known;
  for (const auto& n : MachinePresetNames()) known += (known.empty() ? "" : ", ") + n;
  return Status::Error(kNotFound, "unknown machine preset '" + name + "'; known presets: " +
                                      known + " (or describe the machine yourself)");
}

}  // namespace resmem::sim
