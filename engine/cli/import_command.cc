// `resmem import FILE...|-`: what a user pasted about their machine -> a scenario file.
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "engine/cli/command.h"
#include "engine/cli/output_files.h"
#include "engine/cli/values.h"
#include "engine/paste/paste.h"
#include "engine/import/scenario_writer.h"
#include "mock/machine/cmdline.h"
#include "mock/machine/e820_table.h"
#include "mock/machine/linux_rules.h"
#include "mock/machine/machine_file.h"

namespace resmem::cli {
namespace {

namespace fs = std::filesystem;

// The UTF-8 sequence at text[i]: its length, or 0 where it is none (a stray or missing
// continuation byte, an overlong form, a surrogate, past U+10FFFF).
size_t Utf8Length(const std::string& text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  const size_t len =
      c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  if (len == 0 || i + len > text.size()) return 0;
  uint32_t cp = len == 1 ? c : c & (0x7f >> len);
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3f);
  }
  static const uint32_t kLeast[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kLeast[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return len;
}

// An option's value as the scenario holds it: every option is spelled in the scenario's header
// comment, and --name and --cmdline go into its strings. TOML holds UTF-8 with no control
// character but the tab; anything else would make a scenario that does not load.
Status TomlText(const std::string& text) {
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const std::string at = "byte " + std::to_string(i + 1) + " (0x" +
                           std::string(1, "0123456789abcdef"[c >> 4]) +
                           std::string(1, "0123456789abcdef"[c & 0xf]) + ")";
    if ((c < 0x20 && c != '\t') || c == 0x7f)
      return Status::InvalidArgument(at + " is a control character, which the scenario file "
                                     "(TOML) cannot hold; give the value without it");
    const size_t len = Utf8Length(text, i);
    if (len == 0)
      return Status::InvalidArgument(at + " is not UTF-8, and the scenario file (TOML) holds "
                                     "UTF-8 text only; give the value as UTF-8");
    i += len;
  }
  return Status::Ok();
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

// What `resmem import` is given, as its definition below binds it.
struct ImportArgs {
  std::vector<std::string> inputs;  // files, folders, "-" for standard input
  std::string output, machine_file, report, name, kernel, arch;
  std::optional<std::string> cmdline;  // absent unless given
  std::vector<std::string> spelled;  // the arguments as given, for the scenario's header
};

int Import(const ImportArgs& a);

Action Define(CLI::App& app) {
  auto a = std::make_shared<ImportArgs>();
  app.footer(
      "Reads what you paste about a machine, mixed in any order, with or without dmesg\n"
      "timestamps or syslog prefixes: dmesg's BIOS-e820 lines (old 'A - B (usable)' form, end\n"
      "exclusive, and '[mem A-B] usable' form, end inclusive), its 'e820: update/remove' lines,\n"
      "the 'user:' lines of a user-defined map (the expected result), 'Linux version',\n"
      "'Command line:' / 'Kernel command line:', /proc/iomem (as root), /sys/firmware/memmap (a\n"
      "folder, or the output of `cd /sys/firmware/memmap && grep . */*`), /proc/mtrr,\n"
      "/proc/cpuinfo's address sizes, /proc/meminfo's MemTotal, /etc/default/grub's\n"
      "GRUB_CMDLINE_LINUX[_DEFAULT] and grub.cfg 'linux' lines, a file named *cmdline* as\n"
      "/proc/cmdline. '-' reads standard input; a folder is read file by file.\n"
      "Writes a scenario: the machine, the memmap= reservations, a boot step expecting the\n"
      "logged user map and usable RAM, a doctor step. Says for every input line what it used and\n"
      "what it could not read; where it could not read a line (an error), it writes no\n"
      "scenario. Every file is checked before anything is read: none may be an input or another\n"
      "output, each is written whole or not at all.\n"
      "exit: 0 scenario written, 2 bad input (no firmware map, an error in the report, an\n"
      "unreadable input, an output that cannot be written), 4 internal error");
  const CLI::Validator toml_text = CheckedBy("TEXT", TomlText);
  app.add_option("FILE", a->inputs, "the pasted files or folders; '-' reads standard input")
      ->required()
      ->type_name("FILE|-")
      ->check(toml_text);
  CLI::Option* output =
      app.add_option("-o,--output", a->output,
                     "write the scenario here (default: standard output)")
          ->type_name("FILE")
          ->check(PathNamed())
          ->check(toml_text);
  app.add_option("--machine-file", a->machine_file,
                 "write the machine to its own file too (a path from here, as -o is); the "
                 "scenario names it with from =, relative to itself")
      ->type_name("FILE")
      ->check(PathNamed())
      ->check(toml_text)
      ->needs(output);
  app.add_option("--report", a->report,
                 "the per-line report goes here (default: standard error)")
      ->type_name("FILE")
      ->check(PathNamed())
      ->check(toml_text);
  app.add_option("--name", a->name, "the scenario's name (default: imported-FIRST-FILE)")
      ->type_name("NAME")
      ->check(toml_text);
  app.add_option("--cmdline", a->cmdline,
                 "the kernel's command line, when the paste has none (or to replace the logged "
                 "one): as the kernel received it")
      ->type_name("TEXT")
      ->check(toml_text);
  app.add_option("--kernel", a->kernel,
                 "the Linux version whose rules apply (\"2.6.9\"), when the paste has no "
                 "'Linux version' line")
      ->type_name("VERSION")
      ->check(CheckedBy("VERSION", [](const std::string& version) {
        return sim::LinuxRulesFor(version).status();  // the Linux versions the simulator knows
      }));
  app.add_option("--arch", a->arch,
                 "x86_64 or i386 (a 32-bit kernel), when the paste does not show it (before "
                 "2.6.27 the two follow different mem= rules)")
      ->type_name("ARCH")
      ->check(CLI::IsMember({"x86_64", "i386"}));
  return [a, &app] {
    a->spelled.clear();
    for (const CLI::Option* opt : app.get_options()) {
      if (opt->get_name() == "FILE" || opt->count() == 0) continue;
      for (const auto& v : opt->results()) a->spelled.push_back(opt->get_name() + " " + v);
    }
    return Import(*a);
  };
}

// The inputs: files and folders as resmem import reads them, '-' as standard input.
Result<std::vector<import::PasteInput>> ReadInputs(const ImportArgs& a) {
  std::vector<import::PasteInput> inputs;
  std::vector<std::string> files;
  for (const auto& p : a.inputs) {
    if (p != "-") {
      files.push_back(p);
      continue;
    }
    std::stringstream ss;
    ss << std::cin.rdbuf();
    inputs.push_back({"-", ss.str()});
  }
  RESMEM_ASSIGN_OR_RETURN(auto read, import::ReadPasteFiles(files));
  inputs.insert(inputs.end(), read.begin(), read.end());
  return inputs;
}

// The command as the user typed it, for the files' headers.
std::string CommandLineOf(const ImportArgs& a) {
  std::string cmd = "resmem import";
  for (const auto& p : a.inputs) cmd += " " + p;
  for (const auto& o : a.spelled) cmd += " " + o;
  return cmd;
}

// The scenario the import makes: the machine, a header saying where it came from, and the
// usable RAM to expect (the logged user map's, or the model's boot of a map nothing edits).
import::ScenarioDraft DraftOf(const ImportArgs& a, const import::Imported& imported) {
  import::ScenarioDraft draft;
  const std::string first = a.inputs[0] == "-" ? "stdin" : a.inputs[0];
  draft.name = a.name.empty() ? "imported-" + import::ScenarioNameFrom(first) : a.name;
  draft.machine = imported.machine;
  draft.machine.name = draft.name;
  draft.title = "a machine imported from " + first;
  draft.header = {"Written by `" + CommandLineOf(a) + "`.",
                  "Firmware map from " + imported.firmware_source + "; " +
                      std::to_string(imported.warnings) + " warnings, " +
                      std::to_string(imported.errors) + " errors in the import report.",
                  "Architecture " + (draft.machine.arch.empty() ? std::string("x86_64")
                                                                : draft.machine.arch) +
                      ": " + imported.arch_source + "."};
  draft.user_map = imported.user_map;
  if (!imported.user_map.empty()) {
    draft.usable_ram = imported.user_map_usable;
  } else if (auto booted = sim::Boot(imported.machine);
             booted.ok() && booted->memory_options.empty() && imported.machine.early_edits.empty()) {
    // No user-defined map and nothing that edits one: the kernel uses the firmware's usable RAM
    // as it is, which the model's boot counts (the one reader of the map for every command).
    draft.usable_ram = booted->usable_ram;
  }
  return draft;
}

// The files the import writes and the files it reads ('-' is standard input, no file).
std::vector<NamedPath> Outputs(const ImportArgs& a) {
  return {{"-o", a.output, "the scenario"},
          {"--machine-file", a.machine_file, "the machine file"},
          {"--report", a.report, "the import report"}};
}

std::vector<NamedPath> Inputs(const ImportArgs& a) {
  std::vector<NamedPath> inputs;
  for (const auto& p : a.inputs)
    if (p != "-") inputs.push_back({"FILE", p, ""});
  return inputs;
}

// --machine-file: the machine in a file of its own, which the scenario names by `from =`.
// Both paths are the user's, from where the command runs (as every path on a command line);
// the scenario names the machine file relative to its own folder, as `from =` is read.
Status WriteMachineFile(const ImportArgs& a, import::ScenarioDraft& draft) {
  const fs::path mp = a.machine_file;
  const fs::path scenario_dir = fs::absolute(fs::path(a.output)).parent_path();
  RESMEM_RETURN_IF_ERROR(WriteOutput(Outputs(a)[1], "# Written by `" + CommandLineOf(a) + "`.\n" +
                                                         sim::WriteMachineToml(draft.machine)));
  draft.machine_from = fs::absolute(mp).lexically_normal().lexically_relative(scenario_dir).string();
  return Status::Ok();
}

// The scenario, to -o or standard output, and the machine to --machine-file. The scenario is
// checked with its machine inline before any file is written; a failure after the checks up
// front is an internal error (exit 4).
int WriteScenario(const ImportArgs& a, import::ScenarioDraft draft) {
  const std::string where = a.output.empty() ? "<stdout>" : a.output;
  auto text = import::WriteScenarioChecked(draft, where);
  Status st = text.status();
  if (st.ok() && !a.machine_file.empty()) {
    st = WriteMachineFile(a, draft);
    if (st.ok()) text = import::WriteScenarioChecked(draft, where);
    if (st.ok()) st = text.status();
  }
  if (st.ok() && !a.output.empty()) st = WriteOutput(Outputs(a)[0], *text);
  if (!st.ok()) {
    std::cerr << "resmem import: " << st.message() << "\n";
    return kExitInternal;
  }
  if (a.output.empty()) {
    std::cout << *text;
    return kExitOk;
  }
  std::cerr << "resmem import: wrote " << a.output
            << (a.machine_file.empty() ? "" : " and " + a.machine_file) << "; run it with `resmem run "
            << a.output << "`\n";
  return kExitOk;
}

// The per-line report, to --report or standard error; an exit code.
int WriteReport(const ImportArgs& a, const import::Imported& imported) {
  if (a.report.empty()) {
    Report(imported, std::cerr);
    return kExitOk;
  }
  std::ostringstream text;
  Report(imported, text);
  const Status st = WriteOutput(Outputs(a)[2], text.str());
  if (st.ok()) return kExitOk;
  std::cerr << "resmem import: " << st.message() << "\n";
  return kExitInternal;
}

// Where the import found errors: "paste.txt:2, paste.txt:5" (a file alone: the whole input).
std::string ErrorLines(const import::Imported& imported) {
  std::string lines;
  for (const auto& n : imported.notes) {
    if (n.verdict != import::Verdict::kError) continue;
    lines += (lines.empty() ? "" : ", ") + (n.file.empty() ? "import" : n.file);
    if (n.line > 0) lines += ":" + std::to_string(n.line);
  }
  return lines;
}

int Import(const ImportArgs& a) {
  if (Status st = CheckOutputs(Outputs(a), Inputs(a)); !st.ok()) {
    std::cerr << "resmem import: " << st.message() << "\n";
    return kExitBadInput;
  }
  auto inputs = ReadInputs(a);
  if (!inputs.ok()) {
    std::cerr << "resmem import: " << inputs.status().message() << "\n";
    return kExitBadInput;
  }
  import::GivenFacts given;
  given.has_cmdline = a.cmdline.has_value();
  given.cmdline = a.cmdline.value_or("");
  given.arch = a.arch;
  given.kernel_version = a.kernel;
  const import::Imported imported = import::ReadPaste(*inputs, given);
  if (int rc = WriteReport(a, imported); rc != kExitOk) return rc;
  if (!imported.has_firmware_map) {
    std::cerr << "resmem import: no scenario written: nothing in the input gives the firmware "
                 "memory map (see the report)\n";
    return kExitBadInput;
  }
  if (imported.errors > 0) {
    std::cerr << "resmem import: no scenario written: " << imported.errors
              << (imported.errors == 1 ? " error" : " errors") << " in the import ("
              << ErrorLines(imported)
              << "; the report says why): correct or delete those lines and import again\n";
    return kExitBadInput;
  }
  return WriteScenario(a, DraftOf(a, imported));
}

RESMEM_REGISTER_COMMAND(import, Command{"import", "turn a pasted dmesg, /proc/iomem, memmap, MTRRs, GRUB lines into a scenario", Define});

}  // namespace
}  // namespace resmem::cli
