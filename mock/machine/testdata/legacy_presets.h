// The presets as C++ built them before mock/machine/presets/*.toml (test-only reference).
#ifndef RESMEM_MOCK_MACHINE_TESTDATA_LEGACY_PRESETS_H_
#define RESMEM_MOCK_MACHINE_TESTDATA_LEGACY_PRESETS_H_

#include <string>
#include <vector>

#include "mock/machine/machine.h"

namespace resmem::sim::legacy {

Result<MachineSpec> LegacyPreset(const std::string& name);
std::vector<std::string> LegacyPresetNames();

}  // namespace resmem::sim::legacy

#endif  // RESMEM_MOCK_MACHINE_TESTDATA_LEGACY_PRESETS_H_
