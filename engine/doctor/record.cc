#include "engine/doctor/record.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/paste/paste.h"
#include "engine/import/scenario_writer.h"
#include "mock/machine/machine_file.h"

namespace resmem::engine {
namespace {

namespace fs = std::filesystem;

Status WriteFile(const fs::path& path, const std::string& text, Recording* rec) {
  const auto& names = RecordedFileNames();
  if (std::find(names.begin(), names.end(), path.filename().string()) == names.end())
    return Status::Internal("the recording's file " + path.filename().string() +
                            " is not in RecordedFileNames() (engine/doctor/record.cc): add it there, "
                            "so that doctor checks it before it reads anything");
  std::ofstream out(path);
  out << text;
  if (!out) return Status::Errno(errno ? errno : EIO, "cannot write " + path.string());
  rec->files.push_back(path.string());
  return Status::Ok();
}

std::string FirstLineStartingWith(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(prefix, 0) == 0) return line + "\n";
  return "";
}

// The module policy as the doctor read it, in the machine format's terms; what the format cannot
// hold, or what the replay's rules would not reproduce, is noted.
sim::ModulePolicySpec RecordedModulePolicy(const MachineFacts::ModulePolicy& mp,
                                           std::vector<std::string>* notes) {
  sim::ModulePolicySpec p;
  p.described = true;
  p.efi = mp.secure_boot != SecureBootState::kNotEfi;
  p.secure_boot = mp.secure_boot == SecureBootState::kEnabled;
  p.modules_disabled = mp.modules_disabled;
  p.module_sig = mp.module_sig;
  p.lockdown_lsm = mp.kernel.lockdown_lsm;
  p.trusted_keys = mp.keys;
  if (mp.module_absent) {
    p.resmem_ko.state = sim::ModuleFileSpec::State::kAbsent;
  } else if (mp.module_read && mp.module.state == "no") {
    p.resmem_ko.state = sim::ModuleFileSpec::State::kUnsigned;
  } else if (mp.module_read && mp.module.state == "yes" && !mp.module.signature.signer.empty()) {
    p.resmem_ko.signer = mp.module.signature.signer;
  } else {
    notes->push_back("resmem.ko's signature (" + (mp.module_read ? mp.module.state : mp.module_error) +
                     ") cannot be written in the machine format; recorded as dkms-signed "
                     "(module_policy.resmem_ko), so the replay may judge the load differently");
  }
  if (mp.kernel.sig_enforce != mp.rules.sig_enforce || mp.kernel.lockdown != mp.rules.lockdown)
    notes->push_back("this kernel's sig_enforce/lockdown (" + std::string(mp.kernel.sig_enforce ? "Y" : "N") +
                     "/" + LockdownWord(mp.kernel.lockdown) + ") do not follow from Secure Boot and its "
                     "command line by Debian 6.1's rules; the replay's kernel follows the rules");
  return p;
}


// What the record reads, in memory: each source's text under the file name it is recorded as
// (those `resmem import` reads first, in the order it reads them), and what could not be read.
struct MachineSources {
  std::vector<std::pair<std::string, std::string>> pasted;  // read by `resmem import`
  std::vector<std::pair<std::string, std::string>> sysfs;   // the IOMMU's sysfs
  std::vector<std::string> notes;
};

MachineSources ReadMachineSources(Platform& platform) {
  MachineSources src;
  auto read = [&](const std::string& source) -> std::string {
    auto r = platform.ReadSource(source);
    if (!r.ok()) {
      src.notes.push_back(source + " not recorded: " + r.status().message());
      return "";
    }
    return *r;
  };
  auto keep = [&](const std::string& name, const std::string& text) {
    if (text.empty()) src.notes.push_back(name + " not written: the source is empty or missing on this machine");
    else src.pasted.push_back({name, text});
  };
  keep("iomem.txt", read("/proc/iomem"));
  // The platform gives /sys/firmware/memmap as "start end type" lines; the record keeps the
  // dump users paste (`grep . */*` in that folder), which `resmem import` reads.
  if (std::string memmap = read("/sys/firmware/memmap"); !memmap.empty()) {
    auto entries = ParseFirmwareMemmap(memmap);
    if (!entries.ok()) {
      src.notes.push_back("/sys/firmware/memmap not recorded: " + entries.status().message());
    } else {
      std::vector<import::MemmapDumpEntry> dump;
      for (const auto& e : *entries) dump.push_back({e.start, e.end, e.type});
      keep("firmware_memmap.txt", import::RenderFirmwareMemmapDump(dump));
    }
  }
  keep("mtrr.txt", read("/proc/mtrr"));
  keep("cpuinfo.txt", FirstLineStartingWith(read("/proc/cpuinfo"), "address sizes"));
  keep("meminfo.txt", read("/proc/meminfo"));
  keep("version.txt", read("/proc/version"));
  // `resmem import` reads a one-line file named *cmdline* as /proc/cmdline (the machine takes the
  // doctor's reading of it below; read here too, the import does not warn of a paste without one).
  keep("cmdline.txt", read("/proc/cmdline"));
  // The IOMMU's sysfs as the platform renders it (proc_parsers.h); an empty folder is kept as an
  // empty file, which says "read, nothing there".
  for (const auto& [source, name] : {std::pair<std::string, std::string>{"/sys/class/iommu", "iommu_units.txt"},
                                     {"/sys/kernel/iommu_groups", "iommu_groups.txt"},
                                     {"/sys/firmware/acpi/tables", "acpi_tables.txt"}}) {
    auto text = platform.ReadSource(source);
    if (!text.ok()) src.notes.push_back(source + " not recorded: " + text.status().message());
    else src.sysfs.push_back({name, *text});
  }
  return src;
}

// The kernel's own edits of the firmware map show in /proc/iomem as top-level Reserved ranges
// inside firmware RAM that no memmap= made (e.g. the first page, e820.c
// e820__reserve_... "e820: update [mem 0x00000000-0x00000fff] usable ==> reserved").
void AddEarlyEdits(const MachineFacts& facts, sim::MachineSpec& m, std::vector<std::string>* notes) {
  for (const auto& e : facts.iomem) {
    if (e.depth != 0 || e.name != "Reserved") continue;
    bool in_ram = false, reserved_by_option = false;
    for (const auto& fw : facts.firmware)
      in_ram = in_ram || (fw.type == "System RAM" && fw.start <= e.start && e.end <= fw.end);
    for (const auto& r : facts.reservations)
      reserved_by_option = reserved_by_option || (r.start < e.end && e.start < r.end);
    if (!in_ram || reserved_by_option) continue;
    sim::E820Edit edit;
    edit.start = e.start;
    edit.end = e.end;
    edit.from = sim::E820Type::kRam;
    edit.to = sim::E820Type::kReserved;
    char buf[96];
    std::snprintf(buf, sizeof buf, "e820: update [mem 0x%08llx-0x%08llx] usable ==> reserved",
                  static_cast<unsigned long long>(e.start), static_cast<unsigned long long>(e.end - 1));
    edit.line = buf;
    m.early_edits.push_back(edit);
    notes->push_back(std::string("early edit reconstructed from /proc/iomem: ") + buf);
  }
}

// The machine the sources describe: `resmem import` of the pasted ones (each named `prefix` +
// its file name in notes), with what the doctor understood of the rest (`report`).
Result<sim::MachineSpec> MachineFromSources(const MachineSources& src, const std::string& prefix,
                                            const std::string& platform_name, const DoctorReport& report,
                                            std::vector<std::string>* notes) {
  std::vector<import::PasteInput> inputs;
  for (const auto& [name, text] : src.pasted) inputs.push_back({prefix + name, text});
  import::Imported imported = import::ReadPaste(inputs);
  for (const auto& n : imported.notes)
    if (n.verdict == import::Verdict::kError || n.verdict == import::Verdict::kWarning)
      notes->push_back(n.file + (n.line ? ":" + std::to_string(n.line) : "") + ": " + n.what);
  if (!imported.has_firmware_map)
    return Status::Error(kFailedPrecondition,
                         "no firmware map could be recorded (neither /sys/firmware/memmap nor a "
                         "readable /proc/iomem); run as root on a machine that has them");
  sim::MachineSpec m = imported.machine;
  // The platform's own name ("sim:NAME" or "host") names the machine, so the replay's evidence
  // reads the same.
  m.name = platform_name.rfind("sim:", 0) == 0 ? platform_name.substr(4) : platform_name;
  m.description = "recorded by `resmem doctor --record` from platform " + platform_name;
  m.cmdline = report.facts.cmdline;
  m.cmdline_source = "kernel";
  // The IOMMU as the doctor understood it: the firmware's table, the units and their devices, and
  // the kernel's VT-d default it inferred. Not known, not written: the replay says "unknown" too.
  const MachineFacts::Iommu& io = report.facts.iommu;
  if (io.state != MachineFacts::Iommu::State::kUnknown && io.firmware_known) {
    m.iommu = io.spec;
  } else if (io.state != MachineFacts::Iommu::State::kUnknown) {
    notes->push_back("the IOMMU is not recorded: its state is known but not which firmware "
                     "table (DMAR or IVRS) it comes from (/sys/firmware/acpi/tables unreadable)");
  }
  // The module policy (EFI, Secure Boot, modules_disabled, the trusted keys, resmem.ko's
  // signature). Not known, not written: the replay says nothing about it either.
  if (report.facts.module_policy.known)
    m.module_policy = RecordedModulePolicy(report.facts.module_policy, notes);
  // The kernel's share: the System RAM it manages (/proc/iomem) less MemTotal.
  if (report.facts.usable_ram > report.facts.mem_total && report.facts.mem_total)
    m.kernel_reserved_bytes = report.facts.usable_ram - report.facts.mem_total;
  AddEarlyEdits(report.facts, m, notes);
  return m;
}

}  // namespace

Result<sim::MachineSpec> ReadMachine(Platform& platform, const DoctorReport& report,
                                     std::vector<std::string>* notes) {
  MachineSources src = ReadMachineSources(platform);
  std::vector<std::string> dropped;
  if (!notes) notes = &dropped;
  notes->insert(notes->end(), src.notes.begin(), src.notes.end());
  return MachineFromSources(src, "", platform.name(), report, notes);
}

const std::vector<std::string>& RecordedFileNames() {
  static const std::vector<std::string> names = {
      "iomem.txt",        "firmware_memmap.txt", "mtrr.txt",     "cmdline.txt",
      "meminfo.txt",      "version.txt",         "cpuinfo.txt",  "iommu_units.txt",
      "iommu_groups.txt", "acpi_tables.txt",     "machine.toml", "scenario.toml",
  };
  return names;
}

Result<Recording> RecordMachine(Platform& platform, const DoctorReport& report, const std::string& dir) {
  Recording rec;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::Errno(ec.value(), "cannot create " + dir + ": " + ec.message());
  const fs::path d(dir);
  MachineSources src = ReadMachineSources(platform);
  rec.notes = src.notes;
  for (const auto* group : {&src.pasted, &src.sysfs})
    for (const auto& [name, text] : *group) RESMEM_RETURN_IF_ERROR(WriteFile(d / name, text, &rec));
  const std::string pname = platform.name();
  RESMEM_ASSIGN_OR_RETURN(sim::MachineSpec m,
                          MachineFromSources(src, (d / "").string(), pname, report, &rec.notes));
  rec.machine = m;
  RESMEM_RETURN_IF_ERROR(WriteFile(d / "machine.toml",
                                   "# Recorded by `resmem doctor --record` from platform " + pname +
                                       "; the raw sources are beside it.\n" + sim::WriteMachineToml(m),
                                   &rec));
  import::ScenarioDraft draft;
  draft.name = "recorded-" + import::ScenarioNameFrom(m.name);
  draft.title = "the machine recorded from " + pname + ", replayed on the simulator";
  draft.header = {"Written by `resmem doctor --record`: boots the recorded machine on the "
                  "simulator and expects the doctor's findings of the recording."};
  draft.machine = m;
  draft.machine_from = "machine.toml";
  draft.usable_ram = report.facts.usable_ram;
  std::vector<std::string> ids;
  for (const auto& f : report.findings) ids.push_back(f.id);
  draft.findings = ids;
  draft.doctor_devices = false;
  const std::string scenario_path = (d / "scenario.toml").string();
  RESMEM_ASSIGN_OR_RETURN(std::string text, import::WriteScenarioChecked(draft, scenario_path));
  RESMEM_RETURN_IF_ERROR(WriteFile(scenario_path, text, &rec));
  return rec;
}

}  // namespace resmem::engine
