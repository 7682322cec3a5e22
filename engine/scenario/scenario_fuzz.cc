// Fuzz target: scenario files (engine/scenario: TOML, the schema, [sweep], the [machine] table).
// Property: the loader returns a value or an error, never crashes, hangs or runs out of memory;
// an error names the file.
#include <cstdint>
#include <string>

#include "backends/fuzz/fuzz_check.h"
#include "engine/scenario/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto loaded = resmem::scenario::ParseScenarioText(text, "fuzz.toml");
  if (!loaded.ok()) {
    const std::string message = loaded.status().ToString();
    if (message.find("fuzz.toml") == std::string::npos)
      resmem::fuzz::Finding("a scenario error that does not name the file: " + message);
  }
  return 0;
}
