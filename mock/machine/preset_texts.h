// The preset machine files (mock/machine/presets/*.toml), compiled in by embed_presets.sh in the
// order MachinePresetNames() lists them. Internal to mock/machine.
#ifndef RESMEM_MOCK_MACHINE_PRESET_TEXTS_H_
#define RESMEM_MOCK_MACHINE_PRESET_TEXTS_H_

namespace resmem::sim {

struct EmbeddedPreset {
  const char* name;  // the file's stem: "seed000-workstation"
  const char* path;  // "mock/machine/presets/seed000-workstation.toml", for messages
  const char* text;  // the file's text
};
extern const EmbeddedPreset kEmbeddedPresets[];
extern const int kEmbeddedPresetCount;

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_MACHINE_PRESET_TEXTS_H_
