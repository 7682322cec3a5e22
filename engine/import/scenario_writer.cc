#include "engine/import/scenario_writer.h"

#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <filesystem>

#include "engine/scenario/scenario.h"
#include "mock/machine/cmdline.h"
#include "mock/machine/machine_file.h"
#include "backends/api/memory.h"

namespace resmem::import {

std::vector<std::string> ReservationsOf(const sim::MachineSpec& machine) {
  // The model's boot reads the command line (GRUB's expansion of a grub.cfg or /etc/default/grub
  // line included): the same reader as the simulator, the doctor and the plan. A machine that
  // cannot boot reserves nothing.
  auto booted = sim::Boot(machine);
  if (!booted.ok()) return {};
  std::vector<std::string> out;
  for (const auto& r : booted->reservations)
    out.push_back(HexAddress(r.end - r.start) + "$" + HexAddress(r.start));
  return out;
}

std::string ScenarioNameFrom(const std::string& path) {
  std::string stem = std::filesystem::path(path).stem().string();
  std::string out;
  for (unsigned char c : stem) {
    if (std::isalnum(c)) out += static_cast<char>(std::tolower(c));
    else if (!out.empty() && out.back() != '-') out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "stdin" : out;
}

Result<std::string> WriteScenarioChecked(const ScenarioDraft& d, const std::string& scenario_path) {
  std::string o;
  for (const auto& h : d.header) o += "# " + h + "\n";
  o += "[scenario]\nname = " + sim::TomlQuote(d.name) + "\n";
  if (!d.title.empty()) o += "title = " + sim::TomlQuote(d.title) + "\n";
  o += "kind = \"check\"\nseed = 1\n";
  o += "not_applicable.kmod = \"a machine from data runs on the simulator; the QEMU lane boots "
       "its own machine\"\n";
  o += "not_applicable.cuda = \"a machine from data runs on the simulator\"\n";
  o += "not_applicable.host = \"a machine from data runs on the simulator\"\n\n";
  if (!d.machine_from.empty()) {
    o += "[machine]\nfrom = " + sim::TomlQuote(d.machine_from) + "\n\n";
  } else {
    o += sim::WriteMachineToml(d.machine) + "\n";
  }
  const auto ranges = ReservationsOf(d.machine);
  if (!ranges.empty()) {
    o += "# The module's ranges: the memmap=nn$ss reservations of the command line.\n[driver]\nranges = [";
    for (size_t i = 0; i < ranges.size(); ++i) o += (i ? ", " : "") + sim::TomlQuote(ranges[i]);
    o += "]\n\n";
  }
  o += "[[step]]\ndo = \"boot\"\n";
  if (d.usable_ram) o += "expect.usable_ram = " + std::to_string(*d.usable_ram) + "  # bytes\nexpect.tolerance = 0.0\n";
  if (!d.user_map.empty()) {
    o += "# The kernel's own user-defined map, as logged: the simulator must print it line for line.\n";
    o += "expect.user_map = [\n";
    for (const auto& l : d.user_map) o += "  " + sim::TomlQuote(l) + ",\n";
    o += "]\n";
  }
  o += "\n[[step]]\ndo = \"doctor\"\n";
  if (!d.doctor_devices) o += "devices = false  # the machine's findings, as recorded\n";
  if (d.findings) {
    o += "expect.findings = [";
    for (size_t i = 0; i < d.findings->size(); ++i) o += (i ? ", " : "") + sim::TomlQuote((*d.findings)[i]);
    o += "]\n";
  }
  auto parsed = scenario::ParseScenarioText(o, scenario_path);
  if (!parsed.ok())
    return Status::Error(kInternal, "the written scenario does not load (" +
                                        parsed.status().message() + "); please report this with the input");
  return o;
}

}  // namespace resmem::import
