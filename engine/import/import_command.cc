// `resmem import FILE...|-`: what a user pasted about their machine -> a scenario file.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "engine/cli/command.h"
#include "engine/cli/options.h"
#include "engine/import/paste.h"
#include "engine/import/scenario_writer.h"
#include "mock/machine/cmdline.h"
#include "mock/machine/e820_table.h"
#include "mock/machine/linux_rules.h"
#include "mock/machine/machine_file.h"

namespace resmem::cli {
namespace {

namespace fs = std::filesystem;

const char kUsage[] =
    "usage: resmem import [options] FILE...|-\n"
    "  Reads what you paste about a machine, mixed in any order, with or without dmesg\n"
    "  timestamps or syslog prefixes: dmesg's BIOS-e820 lines (old 'A - B (usable)' form, end\n"
    "  exclusive, and '[mem A-B] usable' form, end inclusive), its 'e820: update/remove' lines,\n"
    "  the 'user:' lines of a user-defined map (the expected result), 'Linux version',\n"
    "  'Command line:' / 'Kernel command line:', /proc/iomem (as root), /sys/firmware/memmap (a\n"
    "  folder, or the output of `cd /sys/firmware/memmap && grep . */*`), /proc/mtrr,\n"
    "  /proc/cpuinfo's address sizes, /proc/meminfo's MemTotal, /etc/default/grub's\n"
    "  GRUB_CMDLINE_LINUX[_DEFAULT] and grub.cfg 'linux' lines, a file named *cmdline* as\n"
    "  /proc/cmdline. '-' reads standard input; a folder is read file by file.\n"
    "  Writes a scenario: the machine, the memmap= reservations, a boot step expecting the\n"
    "  logged user map and usable RAM, a doctor step. Says for every input line what it used and\n"
    "  what it could not read.\n"
    "options:\n"
    "  -o, --output FILE    write the scenario here (default: standard output)\n"
    "  --machine-file FILE  write the machine to its own file too; the scenario says from = it\n"
    "                       (needs -o; the machine file goes beside the scenario)\n"
    "  --report FILE        the per-line report goes here (default: standard error)\n"
    "  --name NAME          the scenario's name (default: imported-FIRST-FILE)\n"
    "  --cmdline TEXT       the kernel's command line, when the paste has none (or to replace\n"
    "                       the logged one): as the kernel received it\n"
    "  --kernel VERSION     the Linux version whose rules apply (\"2.6.9\"), when the paste has no\n"
    "                       'Linux version' line\n"
    "  --arch ARCH          x86_64 or i386 (a 32-bit kernel), when the paste does not show it\n"
    "                       (before 2.6.27 the two follow different mem= rules)\n"
    "exit: 0 scenario written, 2 bad input (no firmware map, unreadable file), 4 internal error\n";

// Does the command line or an early edit change the firmware map (mem=, memmap=, e820 edits)?
bool ChangesTheMap(const sim::MachineSpec& m) {
  if (!m.early_edits.empty()) return true;
  for (const auto& opt : sim::SplitKernelCmdline(m.cmdline))
    if (opt.key == "mem" || opt.key == "memmap") return true;
  return false;
}

void Report(const import::Imported& imported, std::ostream& out) {
  int used = 0, not_used = 0;
  for (const auto& n : imported.notes) {
    if (n.verdict == import::Verdict::kUsed) ++used;
    if (n.verdict == import::Verdict::kNotUsed) ++not_used;
    out << (n.file.empty() ? "import" : n.file);
    if (n.line > 0) out << ":" << n.line;
    out << ": " << import::VerdictName(n.verdict) << ": " << n.what << "\n";
  }
  out << "import: " << used << " used, " << not_used << " not used, " << imported.warnings
      << " warnings, " << imported.errors << " errors";
  if (imported.has_firmware_map)
    out << "; firmware map from " << imported.firmware_source << " ("
        << imported.machine.firmware_e820.size() << " entries)";
  out << "\n";
}

int Import(const std::vector<std::string>& args) {
  Options opts;
  std::vector<std::string> spelled = args;  // -o is --output (the parser knows only --words)
  for (auto& a : spelled)
    if (a == "-o") a = "--output";
  Status st = opts.Parse(spelled, {"--output", "--machine-file", "--report", "--name", "--cmdline", "--arch", "--kernel"}, {});
  if (!st.ok() || opts.positional.empty()) {
    std::cerr << "resmem import: " << (st.ok() ? "give the files to read, or - for standard input" : st.message())
              << "\n" << kUsage;
    return kExitBadInput;
  }
  const std::string out_path = opts.Get("--output", "");
  const std::string machine_path = opts.Get("--machine-file", "");
  if (!machine_path.empty() && out_path.empty()) {
    std::cerr << "resmem import: --machine-file needs -o (the scenario names the machine file "
                 "relative to itself)\n";
    return kExitBadInput;
  }
  std::vector<import::PasteInput> inputs;
  std::vector<std::string> files;
  for (const auto& p : opts.positional) {
    if (p != "-") {
      files.push_back(p);
      continue;
    }
    std::stringstream ss;
    ss << std::cin.rdbuf();
    inputs.push_back({"-", ss.str()});
  }
  auto read = import::ReadPasteFiles(files);
  if (!read.ok()) {
    std::cerr << "resmem import: " << read.status().message() << "\n";
    return kExitBadInput;
  }
  inputs.insert(inputs.end(), read->begin(), read->end());
  import::GivenFacts given;
  given.has_cmdline = opts.Has("--cmdline");
  given.cmdline = opts.Get("--cmdline", "");
  given.arch = opts.Get("--arch", "");
  given.kernel_version = opts.Get("--kernel", "");
  if (opts.Has("--kernel")) {
    if (auto rules = sim::LinuxRulesFor(given.kernel_version); !rules.ok()) {
      std::cerr << "resmem import: --kernel: " << rules.status().message() << "\n";
      return kExitBadInput;
    }
  }
  if (!given.arch.empty() && given.arch != "x86_64" && given.arch != "i386") {
    std::cerr << "resmem import: --arch '" << given.arch
              << "' is not x86_64 or i386 (a 32-bit kernel)\n";
    return kExitBadInput;
  }
  import::Imported imported = import::ReadPaste(inputs, given);
  std::ofstream report_file;
  if (opts.Has("--report")) {
    report_file.open(opts.Get("--report", ""));
    if (!report_file) {
      std::cerr << "resmem import: cannot write the report to '" << opts.Get("--report", "") << "'\n";
      return kExitBadInput;
    }
  }
  std::ostream& report = opts.Has("--report") ? report_file : std::cerr;
  Report(imported, report);
  if (!imported.has_firmware_map) {
    std::cerr << "resmem import: no scenario written: nothing in the input gives the firmware "
                 "memory map (see the report)\n";
    return kExitBadInput;
  }

  import::ScenarioDraft draft;
  const std::string first = opts.positional[0] == "-" ? "stdin" : opts.positional[0];
  draft.name = opts.Get("--name", "imported-" + import::ScenarioNameFrom(first));
  draft.machine = imported.machine;
  draft.machine.name = draft.name;
  draft.title = "a machine imported from " + first;
  std::string cmd = "resmem import";
  for (const auto& a : args) cmd += " " + a;
  draft.header = {"Written by `" + cmd + "`.",
                  "Firmware map from " + imported.firmware_source + "; " +
                      std::to_string(imported.warnings) + " warnings, " +
                      std::to_string(imported.errors) + " errors in the import report.",
                  "Architecture " + (draft.machine.arch.empty() ? std::string("x86_64")
                                                                : draft.machine.arch) +
                      ": " + imported.arch_source + "."};
  draft.user_map = imported.user_map;
  if (!imported.user_map.empty()) {
    draft.usable_ram = imported.user_map_usable;
  } else if (!ChangesTheMap(imported.machine)) {
    // No user-defined map: the kernel uses the firmware's usable RAM as it is.
    uint64_t usable = 0;
    for (const auto& e : sim::SanitizeE820(imported.machine.firmware_e820))
      if (e.type == sim::E820Type::kRam || e.type == sim::E820Type::kReservedKern) usable += e.end - e.start;
    draft.usable_ram = usable;
  }
  std::string scenario_path = out_path.empty() ? "<stdout>" : out_path;
  if (!machine_path.empty()) {
    const fs::path mp = fs::path(out_path).parent_path() / machine_path;
    std::ofstream mf(mp);
    mf << "# Written by `" << cmd << "`.\n" << sim::WriteMachineToml(draft.machine);
    if (!mf) {
      std::cerr << "resmem import: cannot write '" << mp.string() << "'\n";
      return kExitBadInput;
    }
    mf.close();
    draft.machine_from = machine_path;
  }
  auto text = import::WriteScenarioChecked(draft, scenario_path);
  if (!text.ok()) {
    std::cerr << "resmem import: " << text.status().message() << "\n";
    return kExitInternal;
  }
  if (out_path.empty()) {
    std::cout << *text;
  } else {
    std::ofstream of(out_path);
    of << *text;
    if (!of) {
      std::cerr << "resmem import: cannot write '" << out_path << "'\n";
      return kExitBadInput;
    }
    std::cerr << "resmem import: wrote " << out_path
              << (machine_path.empty() ? "" : " and " + machine_path) << "; run it with `resmem run "
              << out_path << "`\n";
  }
  return kExitOk;
}

RESMEM_REGISTER_COMMAND(import, Command{"import", "turn a pasted dmesg, /proc/iomem, memmap, MTRRs, GRUB lines into a scenario", kUsage, Import});

}  // namespace
}  // namespace resmem::cli
