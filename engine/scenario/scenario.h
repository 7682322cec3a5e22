// A scenario file: a machine, a driver, a CUDA profile, faults, a seed, steps, and what each step
// must show on each backend. TOML, read once into typed values: the steps are checked against
// their definitions (step_defs.h) and built as the typed steps of steps.h; a mistake names the
// file, the line and the key. See docs/scenarios.md for the format.
#ifndef RESMEM_ENGINE_SCENARIO_SCENARIO_H_
#define RESMEM_ENGINE_SCENARIO_SCENARIO_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backends/api/status.h"
#include "backends/fault/fault_injector.h"
#include "engine/scenario/steps.h"
#include "mock/machine/machine.h"
#include "mock/region/sim_driver.h"

namespace resmem::scenario {

struct Scenario {
  std::string file;          // path as given
  std::string name;          // [scenario] name
  std::string title;
  std::string kind;          // "bug" (reproduces a seed bug) or "fix" (its twin with the remedy)
                             // or "check" (a property, neither)
  std::string seed_file;     // the seed it reproduces ("000_bd71b0f62b937591.txt")
  std::string cites;         // the seed's words
  std::string twin;          // name of the twin scenario
  std::string remedy;        // for a fix: what the remedy is
  uint64_t seed = 1;
  std::string case_label;    // "reservation=64G" for one case of a sweep; "" otherwise
  // backend -> reason (whole scenario). Written per sweep case as a table
  // (not_applicable.cuda = { "128G" = "why" }), only the cases it names are not applicable.
  std::map<std::string, std::string> not_applicable;

  sim::MachineSpec machine;
  sim::SimDriverSpec driver;
  std::string cuda_profile = "cuda-13.0-r580";
  int gpu_count = 1;
  std::vector<FaultRule> faults;
  std::vector<Step> steps;
};

// A file can expand to several cases through [sweep] (one variable, a list of values): every
// "${var}" in the file's strings is replaced and keyed expectations ({ "1G" = ..., ... }) pick
// the entry of the case. Parse errors say "FILE:LINE: key 'x': problem; fix".
Result<std::vector<Scenario>> LoadScenarioFile(const std::string& path);
Result<std::vector<Scenario>> ParseScenarioText(const std::string& text, const std::string& path);

// A machine from files: one machine file (a .toml file or any file with a [machine] table in the
// machine format, mock/machine/machine_file.h), or sources `resmem import` reads (a dmesg,
// /proc/iomem, ..., a /sys/firmware/memmap folder, a folder of captured sources), read together.
// A paste with an unreadable line or no firmware map fails naming the line.
Result<sim::MachineSpec> LoadMachineSource(const std::vector<std::string>& paths);

// What a command's --machine names: an existing file or folder (LoadMachineSource), else a
// preset name (sim::MachinePreset, whose error lists the known ones).
Result<sim::MachineSpec> LoadMachineArgument(const std::string& preset_or_path);

// Files under a directory (recursively, *.toml, sorted) or the file itself.
Result<std::vector<std::string>> CollectScenarioFiles(const std::string& path);

}  // namespace resmem::scenario

#endif  // RESMEM_ENGINE_SCENARIO_SCENARIO_H_
