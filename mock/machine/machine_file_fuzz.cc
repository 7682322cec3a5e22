// Fuzz target: the machine format (mock/machine/machine_file.h), the [machine] table of scenario
// files, machine files and presets. Properties: no crash, hang or OOM; a machine that parses
// boots (Boot() returns a value or a contract error, never crashes) and is written back by
// WriteMachineToml to a text that parses to an equal machine (the round trip
// `resmem import` and `resmem doctor --record` rely on).
#include <cstdint>
#include <string>

#include "backends/fuzz/fuzz_check.h"
#include "mock/machine/machine.h"
#include "mock/machine/machine_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace resmem::sim;
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto parsed = ParseMachineText(text, "fuzz.toml");
  if (!parsed.ok()) return 0;
  const MachineSpec& spec = parsed.value();
  (void)Boot(spec);
  const std::string written = WriteMachineToml(spec);
  auto again = ParseMachineText(written, "written.toml");
  if (!again.ok())
    resmem::fuzz::Finding("a parsed machine, written back, does not parse: " +
                          again.status().ToString() + "\n--- written:\n" + written);
  std::string diff;
  if (!SameMachine(spec, again.value(), &diff))
    resmem::fuzz::Finding("a parsed machine, written back and parsed, differs: " + diff +
                          "\n--- written:\n" + written);
  return 0;
}
