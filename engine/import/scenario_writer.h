// Scenario files written by `resmem import` and `resmem doctor --record`: the machine (inline or
// a machine file beside it), the reservations its command line makes, a boot step that expects
// the logged user map and usable RAM, and a doctor step. Every text written here loads
// (WriteScenarioChecked parses it before handing it out).
#ifndef RESMEM_ENGINE_IMPORT_SCENARIO_WRITER_H_
#define RESMEM_ENGINE_IMPORT_SCENARIO_WRITER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backends/api/status.h"
#include "mock/machine/machine.h"

namespace resmem::import {

struct ScenarioDraft {
  std::string name;                   // [scenario] name
  std::string title;
  std::vector<std::string> header;    // comment lines at the top (without "# ")
  sim::MachineSpec machine;
  std::string machine_from;           // when set: [machine] from = this, instead of inline
  std::vector<std::string> user_map;  // expected "user:" lines (empty: none expected)
  std::optional<uint64_t> usable_ram; // expected usable RAM, exact
  std::optional<std::vector<std::string>> findings;  // exact doctor findings, when known
  bool doctor_devices = true;         // false: the doctor step diagnoses the machine alone
};

// The driver ranges ("SIZE$PHYS") the machine's kernel reserves, in order: the model's boot
// (sim::Boot) reads the command line, GRUB's expansion of its source included. A machine that
// cannot boot reserves nothing.
std::vector<std::string> ReservationsOf(const sim::MachineSpec& machine);

// A scenario name from a file name: lower-case letters, digits and '-'.
std::string ScenarioNameFrom(const std::string& path);

// The scenario text. `scenario_path` is where it will be written (for `from`, which is read
// relative to it); the text is parsed as the loader would before it is returned, and a text that
// does not load is an internal error naming why.
Result<std::string> WriteScenarioChecked(const ScenarioDraft& draft, const std::string& scenario_path);

}  // namespace resmem::import

#endif  // RESMEM_ENGINE_IMPORT_SCENARIO_WRITER_H_
