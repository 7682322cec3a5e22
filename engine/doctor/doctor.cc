#include "engine/doctor/doctor.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cctype>
#include <functional>
#include <set>

#include "kmod/uapi/resmem_ioctl.h"
#include "nlohmann/json.hpp"
#include "engine/doctor/grub_stages.h"
#include "engine/doctor/module_policy_doctor.h"
#include "backends/api/memory.h"

namespace resmem::engine {
namespace {

std::string Range(uint64_t start, uint64_t end) {
  return "[" + HexAddress(start) + ", " + HexAddress(end) + ") " + FormatSize(end - start);
}

// /sys/firmware/memmap's type names back to e820 types (e820.c, e820_type_to_string).
sim::E820Type FirmwareType(const std::string& name) {
  if (name == "System RAM") return sim::E820Type::kRam;
  if (name == "ACPI Tables") return sim::E820Type::kAcpi;
  if (name == "ACPI Non-volatile Storage") return sim::E820Type::kNvs;
  if (name == "Unusable memory") return sim::E820Type::kUnusable;
  if (name == "Persistent Memory") return sim::E820Type::kPmem;
  if (name == "Persistent Memory (legacy)") return sim::E820Type::kPram;
  if (name == "Soft Reserved") return sim::E820Type::kSoftReserved;
  return sim::E820Type::kReserved;  // "Reserved", "reserved", "Unknown E820 type"
}

// The kernel's reading of this machine's command line: sim::Boot() with the firmware map,
// the line and the version (the same code that boots the simulated machine).
void InterpretCmdline(MachineFacts& f) {
  sim::MachineSpec spec;
  spec.name = "this machine";
  spec.cmdline = f.cmdline;
  spec.kernel_version = f.kernel_version;
  spec.arch = f.arch;
  for (const auto& e : f.firmware)
    spec.firmware_e820.push_back({e.start, e.end, FirmwareType(e.type)});
  auto booted = sim::Boot(spec);
  if (!booted.ok()) {
    // Only a version string the model cannot read gets here: use the newest rules.
    spec.kernel_version.clear();
    booted = sim::Boot(spec);
    if (!booted.ok()) return;
  }
  f.memory_options = booted->memory_options;
  f.cmdline_issues = booted->cmdline_issues;
  f.kernel_rules = booted->rules;
  // The reservations the line makes. Without the firmware map the model's table is empty and
  // its boot stops there, so they come from the options it took.
  auto add = [&](uint64_t start, uint64_t end, const std::string& option) {
    MachineFacts::Reservation r;
    r.start = start;
    r.end = end;
    r.option = option;
    f.reservations.push_back(r);
  };
  if (!f.firmware.empty()) {
    for (const auto& b : booted->reservations) add(b.start, b.end, b.option);
  } else {
    for (const auto& o : booted->memory_options)
      if (o.ReservesForADriver()) add(o.start, o.end, o.Label());
  }
  // Without the firmware map the table the model starts from is empty: its panics and map
  // judgements say nothing about this machine.
  if (!f.firmware.empty()) f.kernel_panic = booted->panic;
}

// The IOMMU's sysfs as the platform shows it: units, groups, ACPI table names, the CPU vendor.
void ReadIommuSysfs(Platform& platform, MachineFacts& f) {
  MachineFacts::Iommu& io = f.iommu;
  auto read = [&](const std::string& path, bool* known) -> std::string {
    auto r = platform.ReadSource(path);
    *known = r.ok();
    if (!r.ok()) {
      f.unreadable.push_back(path + ": " + r.status().message());
      return "";
    }
    return *r;
  };
  const std::string units = read("/sys/class/iommu", &io.units_known);
  if (io.units_known) {
    auto u = ParseIommuUnits(units);
    if (u.ok()) io.units = *u;
    else {
      io.units_known = false;
      f.unreadable.push_back("/sys/class/iommu: " + u.status().message());
    }
  }
  const std::string groups = read("/sys/kernel/iommu_groups", &io.groups_known);
  if (io.groups_known) {
    auto g = ParseIommuGroups(groups);
    if (g.ok()) io.groups = *g;
    else {
      io.groups_known = false;
      f.unreadable.push_back("/sys/kernel/iommu_groups: " + g.status().message());
    }
  }
  const std::string tables = read("/sys/firmware/acpi/tables", &io.tables_known);
  if (io.tables_known) io.acpi_tables = ParseAcpiTableNames(tables);
  if (auto c = platform.ReadSource("/proc/cpuinfo"); c.ok()) io.cpu_vendor = ParseCpuVendor(*c);
}

// Which remapping hardware the firmware describes: the ACPI table names say it; else the
// units' names (dmarN: VT-d, ivhdN: AMD-Vi).
void IdentifyIommuFirmware(MachineFacts::Iommu& io) {
  auto has = [&](const char* t) {
    return std::find(io.acpi_tables.begin(), io.acpi_tables.end(), t) != io.acpi_tables.end();
  };
  if (io.tables_known) {
    io.firmware_known = true;
    io.firmware = has("DMAR") ? sim::IommuVendor::kIntel
                  : has("IVRS") ? sim::IommuVendor::kAmd : sim::IommuVendor::kNone;
    io.firmware_source = "/sys/firmware/acpi/tables " +
                         std::string(has("DMAR") ? "has DMAR" : has("IVRS") ? "has IVRS"
                                                                           : "has neither DMAR nor IVRS");
  } else if (!io.units.empty()) {
    io.firmware_known = true;
    io.firmware = io.units[0].name.rfind("ivhd", 0) == 0 ? sim::IommuVendor::kAmd
                                                         : sim::IommuVendor::kIntel;
    io.firmware_source = "/sys/class/iommu names " + io.units[0].name;
  }
}

// What sysfs shows: the devices by their group's domain type, and every device named. A group's
// devices count once each; groups of other types (unmanaged: VFIO; blocked) are neither
// translated by the DMA API nor identity.
std::set<std::string> CountIommuDevices(MachineFacts::Iommu& io) {
  std::set<std::string> devices;
  for (const auto& u : io.units) devices.insert(u.devices.begin(), u.devices.end());
  for (const auto& g : io.groups) {
    const int n = static_cast<int>(g.devices.size());
    if (IommuDomainTranslates(g.type)) {
      io.translated_devices += n;
      io.domain = g.type;
    } else if (g.type == IommuDomainType::kIdentity) {
      io.identity_devices += n;
    } else {
      io.other_devices += n;
    }
    devices.insert(g.devices.begin(), g.devices.end());
  }
  return devices;
}

// The rules on this firmware. The kernel's default for VT-d is read from what it did: units on
// with no intel_iommu=on means a default-on kernel (Debian's 6.1), units off with nothing
// turning them off a default-off one.
void ApplyIommuRules(const std::string& cmdline, const sim::LinuxRules& rules,
                     const std::set<std::string>& devices, bool known, bool on, MachineFacts::Iommu& io) {
  io.spec.described = true;
  io.spec.vendor = io.firmware_known ? io.firmware : sim::IommuVendor::kNone;
  io.spec.units = std::max<int>(1, static_cast<int>(io.units.size()));
  io.spec.devices.assign(devices.begin(), devices.end());
  io.kernel = sim::ReadIommuOptions(cmdline, io.spec, rules);
  if (known && io.spec.vendor == sim::IommuVendor::kIntel && on != io.kernel.on()) {
    sim::IommuSpec other = io.spec;
    other.intel_default_on = !other.intel_default_on;
    const sim::IommuKernel k = sim::ReadIommuOptions(cmdline, other, rules);
    if (k.on() == on) {
      io.spec = other;
      io.kernel = k;
    }
  }
}

// The IOMMU's state from what sysfs showed, the rules' default domain where it showed no type.
void SetIommuState(bool known, bool on, MachineFacts::Iommu& io) {
  using Iommu = MachineFacts::Iommu;
  if (!known) {
    io.state = Iommu::State::kUnknown;
  } else if (!on) {
    io.state = Iommu::State::kOff;
  } else if (io.translated_devices > 0) {
    io.state = Iommu::State::kTranslating;
  } else if (io.identity_devices > 0) {
    io.state = Iommu::State::kPassthrough;
    io.domain = IommuDomainType::kIdentity;
  } else if (io.other_devices == 0 && IommuDomainTranslates(io.kernel.default_domain)) {
    // Units on, no group with a type this kernel shows (before 5.11): the rules' default.
    io.state = Iommu::State::kTranslating;
    io.domain = io.kernel.default_domain;
  } else if (io.other_devices == 0 && io.kernel.default_domain == IommuDomainType::kIdentity) {
    io.state = Iommu::State::kPassthrough;
    io.domain = IommuDomainType::kIdentity;
  } else {
    io.state = Iommu::State::kOnOther;
  }
  if (known && io.firmware_known) {
    const bool translating = io.state == Iommu::State::kTranslating;
    io.rules_agree = io.kernel.on() == on &&
                     (!on || translating == IommuDomainTranslates(io.kernel.default_domain));
  }
}

// The IOMMU's sysfs and what the rules make of the command line on the same firmware.
void CollectIommu(Platform& platform, MachineFacts& f) {
  MachineFacts::Iommu& io = f.iommu;
  ReadIommuSysfs(platform, f);
  IdentifyIommuFirmware(io);
  const std::set<std::string> devices = CountIommuDevices(io);
  const bool on = io.units_known ? !io.units.empty() : io.groups_known && !io.groups.empty();
  const bool known = io.units_known || io.groups_known;
  ApplyIommuRules(f.cmdline, f.kernel_rules, devices, known, on, io);
  SetIommuState(known, on, io);
}

}  // namespace

bool DoctorReport::has_errors() const {
  return std::any_of(findings.begin(), findings.end(),
                     [](const Finding& f) { return f.severity == "error"; });
}

namespace {

// The memory facts the kernel's files show: command line, MemTotal, /proc/iomem and its System
// RAM, the firmware map and its RAM, the MTRRs, the address width, the version and arch.
void ReadMemoryFacts(Platform& platform, MachineFacts& f) {
  auto read = [&](const std::string& path) -> std::string {
    auto r = platform.ReadSource(path);
    if (!r.ok()) {
      f.unreadable.push_back(path + ": " + r.status().message());
      return "";
    }
    return *r;
  };
  // Each source parsed by its reader; what does not parse is named as unreadable.
  auto parse = [&](const char* path, auto parser, auto& into) {
    if (std::string t = read(path); !t.empty()) {
      auto m = parser(t);
      if (m.ok()) into = *m;
      else f.unreadable.push_back(std::string(path) + ": " + m.status().message());
    }
  };
  f.cmdline = read("/proc/cmdline");
  while (!f.cmdline.empty() && (f.cmdline.back() == '\n' || f.cmdline.back() == ' ')) f.cmdline.pop_back();
  f.options = ParseCmdlineOptions(f.cmdline);
  parse("/proc/meminfo", ParseMeminfoTotal, f.mem_total);
  parse("/proc/iomem", ParseIomem, f.iomem);
  for (const auto& e : f.iomem)
    if (e.depth == 0 && e.name == "System RAM") f.usable_ram += e.end - e.start;
  parse("/sys/firmware/memmap", ParseFirmwareMemmap, f.firmware);
  for (const auto& e : f.firmware)
    if (e.type == "System RAM") f.firmware_ram += e.end - e.start;
  parse("/proc/mtrr", ParseMtrr, f.mtrr);
  if (std::string t = read("/proc/cpuinfo"); !t.empty()) {
    auto m = ParsePhysAddressBits(t);
    if (m.ok()) f.phys_addr_bits = *m;
  }
  if (auto v = platform.ReadSource("/proc/sys/kernel/osrelease"); v.ok()) f.kernel_version = TrimBlanks(*v);
  if (auto m = platform.ReadSource("uname:machine"); m.ok()) {
    // uname -m: i386 to i686 are the 32-bit tree, whose option rules differ (linux_rules.h).
    const std::string machine = TrimBlanks(*m);
    f.arch = machine.size() == 4 && machine[0] == 'i' && machine.substr(2) == "86" ? "i386" : machine;
  }
}

// A reservation (the model's) judged against what this machine's own files show: firmware RAM
// under it or what is there instead, System RAM the kernel uses in it, its MTRR type.
void JudgeReservation(const MachineFacts& f, MachineFacts::Reservation& r) {
  r.firmware_known = !f.firmware.empty();
  if (r.firmware_known) {
    // Walk the firmware RAM entries over the range.
    uint64_t covered = 0;
    for (const auto& e : f.firmware) {
      if (e.type != "System RAM") continue;
      const uint64_t a = std::max(e.start, r.start), b = std::min(e.end, r.end);
      if (a < b) covered += b - a;
    }
    r.over_ram = covered == r.end - r.start;
    r.over_hole = !r.over_ram;
    if (r.over_hole) {
      for (const auto& e : f.firmware)
        if (e.type != "System RAM" && e.start < r.end && e.end > r.start) r.conflict = e.type + " " + Range(e.start, e.end);
      for (const auto& e : f.iomem)
        if (e.name != "System RAM" && e.name != "Reserved" && e.start < r.end && e.end > r.start && r.conflict.empty())
          r.conflict = e.name + " " + Range(e.start, e.end);
      if (r.conflict.empty()) r.conflict = "no firmware RAM entry (a hole)";
    }
  }
  for (const auto& e : f.iomem)
    if (e.depth == 0 && e.name == "System RAM" && e.start < r.end && e.end > r.start) r.overlaps_system_ram = true;
  r.mtrr_known = !f.mtrr.empty();
  if (r.mtrr_known) {
    // The model's one reading of MTRRs over a range (mock/machine, MtrrWriteBackOver), on the
    // MTRRs /proc/mtrr shows (MtrrFromProcMtrr infers the default type it does not show).
    const sim::MtrrCoverage wb = sim::MtrrWriteBackOver(sim::MtrrFromProcMtrr(f.mtrr), r.start, r.end);
    r.uniform_write_back = wb.write_back;
    r.mtrr_detail = wb.detail;
  }
}

}  // namespace

Result<MachineFacts> CollectMachineFacts(Platform& platform, const DoctorOptions& options) {
  MachineFacts f;
  ReadMemoryFacts(platform, f);
  InterpretCmdline(f);
  CollectIommu(platform, f);
  CollectModulePolicy(platform, options.module, f);
  // The reservations are the model's: the kernel's reading of the line (InterpretCmdline).
  for (MachineFacts::Reservation& r : f.reservations) JudgeReservation(f, r);
  return f;
}

namespace {

// What each kind of misread option means for its author, and the way out.
struct OptionKind {
  sim::OptionProblem kind;
  const char* id;
  const char* severity;
  const char* lead;  // put before the detail
  const char* remedy;
  const char* seed;
};
const OptionKind kOptionKinds[] = {
    {sim::OptionProblem::kActsAsMem, "memmap-without-reservation", "error", "reserves nothing: ",
     "write memmap=SIZE$START; escape the dollar (grub.cfg: memmap=SIZE\\$START; "
     "/etc/default/grub, in double quotes: memmap=SIZE\\\\\\$START) or GRUB expands it",
     "002_94e4d7274f023a25.txt"},
    {sim::OptionProblem::kUnknownForm, "option-unknown-form", "error", "",
     "use a form this kernel knows (memmap=SIZE$START reserves on every version), or a newer "
     "kernel",
     ""},
    {sim::OptionProblem::kNoStartAddress, "memmap-no-start-address", "error", "reserves from address 0: ",
     "give the start address after the operator: memmap=SIZE$START", ""},
    {sim::OptionProblem::kRemovesAllRam, "memmap-removes-all-ram", "error", "",
     "memmap= needs SIZE$START (or @ # ! %); a bare size is a memory limit", ""},
    {sim::OptionProblem::kEndWraps, "memmap-end-wraps", "error", "",
     "keep START + SIZE below the end of physical memory", ""},
    {sim::OptionProblem::kSameTypes, "memmap-same-types", "error", "",
     "memmap=SIZE%START-OLD+NEW needs two different types", ""},
    {sim::OptionProblem::kLineCut, "cmdline-cut", "error", "",
     "shorten the command line below 2048 characters; put the memory options first", ""},
    {sim::OptionProblem::kMalformed, "option-malformed", "warning", "partly read: ",
     "write the option exactly in one of the forms of Documentation/admin-guide/"
     "kernel-parameters.txt (mem=SIZE, memmap=SIZE$START, ...)",
     ""},
    {sim::OptionProblem::kTrailingIgnored, "option-trailing-ignored", "warning", "",
     "drop the trailing characters (sizes take one of K M G T P E, no 'B')", ""},
    {sim::OptionProblem::kNoEffect, "option-no-effect", "warning", "has no effect: ",
     "start the value with a number: mem=SIZE, memmap=SIZE$START", ""},
    {sim::OptionProblem::kZeroSize, "option-zero-size", "warning", "", "give a size above 0", ""},
    {sim::OptionProblem::kIgnoredAfterDashDash, "option-after-dashdash", "warning", "",
     "move the option before \"--\"", ""},
    {sim::OptionProblem::kOverlapsReservation, "reservations-overlap", "warning", "",
     "give each memmap=SIZE$START its own range", ""},
    {sim::OptionProblem::kMemBelowReservation, "mem-below-reservation", "warning", "",
     "drop mem=: memmap=SIZE$START alone reserves the range and the kernel keeps the rest",
     "000_bd71b0f62b937591.txt"},
    {sim::OptionProblem::kNopentium, "option-no-effect", "info", "", "drop mem=nopentium", ""},
    // kOverNonRam: reservation-over-hole says it, from the firmware map.
};

// One finding per memory option that did not do what its author meant, from the kernel's own
// reading of it (FactsFor -> sim::Boot; rules and sources in mock/machine/linux_rules.h).
void AddOptionFindings(const MachineFacts& f, const std::function<void(Finding)>& add) {
  using P = sim::OptionProblem;
  const std::string version =
      f.kernel_version.empty() ? std::string("the newest Linux") : "Linux " + f.kernel_version;
  const std::string evidence = "/proc/cmdline: " + f.cmdline + "; read with " + version +
                               "'s rules (arch/x86/kernel/e820.c parse_memopt, parse_memmap_one)";
  auto finding = [&](P kind, const std::string& option, const std::string& detail) {
    for (const OptionKind& k : kOptionKinds) {
      if (k.kind != kind) continue;
      const std::string head = option.empty() ? "" : "'" + option + "': ";
      add({k.id, k.severity, head + k.lead + detail, evidence, k.remedy, k.seed});
      return;
    }
  };
  for (const auto& issue : f.cmdline_issues) finding(issue.kind, "", issue.detail);
  std::set<std::string> said;  // one finding per option and kind
  for (const auto& o : f.memory_options) {
    const std::string option = o.Label();
    for (const auto& issue : o.issues) {
      if (!said.insert(option + "#" + std::to_string(static_cast<int>(issue.kind))).second)
        continue;
      // A -EINVAL that only repeats what another issue of the same option explains.
      if (issue.kind == P::kMalformed && o.issues.size() > 1 && o.issues[0].kind != P::kMalformed)
        continue;
      finding(issue.kind, option, issue.detail);
    }
  }
  if (!f.kernel_panic.empty())
    add({"kernel-panics-on-map", "error",
         "this command line stops the kernel before it boots: " + f.kernel_panic, evidence,
         "fix the memory options the other findings name", ""});
}


const char* VendorName(sim::IommuVendor v) {
  switch (v) {
    case sim::IommuVendor::kIntel: return "Intel VT-d";
    case sim::IommuVendor::kAmd: return "AMD-Vi";
    case sim::IommuVendor::kNone: return "none";
  }
  return "none";
}

// What the evidence of an IOMMU finding says about sysfs: unit names, device counts per domain
// kind (counts, not group numbers: a replay on the simulator groups devices one to a group).
std::string IommuSysfsEvidence(const MachineFacts::Iommu& io) {
  std::string units;
  int devices = 0;
  for (const auto& u : io.units) {
    units += (units.empty() ? "" : ", ") + u.name;
    devices += static_cast<int>(u.devices.size());
  }
  std::string e = "/sys/class/iommu: " +
                  (!io.units_known ? std::string("unreadable")
                                   : units.empty() ? std::string("no unit")
                                                   : units + " (" + std::to_string(devices) + " devices)");
  e += "; /sys/kernel/iommu_groups: ";
  if (!io.groups_known) {
    e += "unreadable";
  } else if (io.groups.empty()) {
    e += "no group";
  } else {
    std::string parts;
    auto part = [&](int n, const std::string& what) {
      if (n > 0) parts += (parts.empty() ? "" : ", ") + std::to_string(n) + " " + what;
    };
    part(io.translated_devices, std::string("devices in ") + IommuDomainTypeName(io.domain) + " (translated) domains");
    part(io.identity_devices, "devices in identity domains");
    part(io.other_devices, "devices in other domains (unmanaged, blocked)");
    e += parts.empty() ? "groups without devices" : parts;
  }
  if (io.firmware_known) e += "; " + io.firmware_source;
  return e;
}

// The way out for one IOMMU option the kernel did not take as meant.
std::string IommuOptionRemedy(const sim::IommuOptionOutcome& o) {
  using P = sim::IommuOptionProblem;
  const std::string turn_on =
      "Intel VT-d: intel_iommu=on (Debian's 6.1 has it on already where the firmware has a DMAR "
      "table); AMD-Vi is on by default wherever the firmware has an IVRS table; iommu=pt keeps "
      "it on with identity domains, iommu=off turns every IOMMU off";
  switch (o.problem) {
    case P::kUnknownValue:
      if (o.key == "amd_iommu" && o.item.rfind("on", 0) == 0)
        return "drop amd_iommu=on: AMD-Vi is on wherever the firmware has an IVRS table, and "
               "amd_iommu=off is its only switch (Documentation/admin-guide/kernel-parameters.txt)";
      return "write one of the items this parameter knows (" + o.effect.substr(0, o.effect.find(';')) +
             "), e.g. " + o.key + "=on or " + o.key + "=off";
    case P::kSilentlyIgnored:
      if (o.key == "iommu") return "drop 'iommu=" + o.item + "'; to choose: " + turn_on;
      return "give the parameter a value or drop it";
    case P::kMalformed:
      if (o.key == "iommu") return "give a value: iommu=pt or iommu=off";
      return "write " + o.key + "=1 or " + o.key + "=0 (kstrtobool reads y/n, t/f, 1/0, on/off by their first letters)";
    case P::kNotAParameter:
      if (o.key == "intel_iommu" || o.key == "amd_iommu")
        return "write it with its '=': " + o.key + "=on or " + o.key + "=off";
      return "the kernel's IOMMU parameters are iommu=, intel_iommu=, amd_iommu=, "
             "iommu.passthrough= and iommu.strict= (Documentation/admin-guide/kernel-parameters.txt); " +
             turn_on;
    case P::kAfterDashDash:
      return "move it before \"--\": what follows is init's";
    case P::kNoEffect:
      if (o.effect.find("no DMAR table") != std::string::npos)
        return "turn VT-d on in the firmware setup (the kernel then finds a DMAR table); without "
               "it no option turns an Intel IOMMU on";
      if (o.effect.find("no IVRS table") != std::string::npos)
        return "turn the IOMMU (AMD-Vi) on in the firmware setup; without an IVRS table no "
               "option turns it on";
      if (o.effect.find("does not touch") != std::string::npos)
        return "use the option of this machine's IOMMU (intel_iommu= for VT-d, amd_iommu= for "
               "AMD-Vi), or drop it";
      return "drop it, or first turn an IOMMU on (" + turn_on + ")";
    case P::kDeprecated:
      return o.dmesg.empty() ? "use iommu.strict=1" : o.dmesg.substr(o.dmesg.find("use "));
    case P::kNone:
      return "";
  }
  return "";
}

// One finding per IOMMU option the kernel did not take as its author meant.
void AddIommuOptionFindings(const MachineFacts& f, const std::function<void(Finding)>& add) {
  using P = sim::IommuOptionProblem;
  const MachineFacts::Iommu& io = f.iommu;
  const std::string rules =
      "read with Linux 6.1's rules and Debian's configuration (arch/x86/kernel/pci-dma.c "
      "iommu_setup, drivers/iommu/intel/iommu.c intel_iommu_setup, drivers/iommu/amd/init.c "
      "parse_amd_iommu_options, drivers/iommu/iommu.c, init/main.c do_early_param)";
  for (const auto& o : io.kernel.options) {
    if (o.problem == P::kNone) continue;
    // "No effect" depends on the firmware: only where it is known.
    if (o.problem == P::kNoEffect && !io.firmware_known) continue;
    const char* id = o.problem == P::kNoEffect     ? "iommu-option-no-effect"
                     : o.problem == P::kDeprecated ? "iommu-option-deprecated"
                                                   : "iommu-option-ignored";
    const char* severity = o.problem == P::kDeprecated ? "info" : "warning";
    const std::string head = "'" + o.option + "'" +
                             (o.item.empty() || o.option == o.key + "=" + o.item ? "" : " (item '" + o.item + "')");
    add({id, severity, head + ": " + o.effect,
         "/proc/cmdline: " + f.cmdline + "; the kernel prints " +
             (o.dmesg.empty() ? std::string("nothing about it") : "'" + o.dmesg + "'") + "; " + rules,
         IommuOptionRemedy(o), ""});
  }
}

// What the IOMMU's state means for a device reaching the reservation.
struct IommuContext {
  const MachineFacts& f;
  bool above_4g = false;
  std::string high;       // the reservation above 4 GiB
  std::string vendor;     // "Intel VT-d", ...
  std::string evidence;   // sysfs and the rules' reason
  std::string below_4g;   // what a 32-bit card needs
};

IommuContext IommuContextOf(const MachineFacts& f) {
  const MachineFacts::Iommu& io = f.iommu;
  IommuContext c{f, false, "", "", "", ""};
  for (const auto& r : f.reservations)
    if (r.end > (1ull << 32)) {
      c.above_4g = true;
      c.high = r.option;
    }
  c.vendor = VendorName(io.firmware_known ? io.firmware : sim::IommuVendor::kNone);
  std::string why = io.kernel.why;
  if (!io.firmware_known) why = "the firmware's ACPI tables cannot be read here";
  else if (!io.rules_agree)
    why += " (so say the rules; this kernel did otherwise: it is configured differently from "
           "Debian's 6.1)";
  c.evidence = IommuSysfsEvidence(io) + "; " + why;
  c.below_4g =
      "a 32-bit DMA card needs its buffer below 4 GiB, in RAM clear of the PCI hole and the "
      "firmware areas below 4 GiB where seed 002's ranges fell (memmap=64M$0x40000000; /proc/iomem "
      "shows what is there; resmem_edu refuses a range its device cannot reach with ERANGE)";
  return c;
}

// How to turn translation on from the IOMMU-off state: drop the option that turned it off, add
// intel_iommu=on on a default-off kernel, else the firmware setup.
std::string TurnIommuOn(const MachineFacts::Iommu& io) {
  using P = sim::IommuOptionProblem;
  std::string turn_on = "enable VT-d / AMD-Vi (the IOMMU) in the firmware setup";
  for (const auto& o : io.kernel.options) {
    if (o.problem != P::kNone) continue;
    if (o.key == "iommu" && o.item.rfind("off", 0) == 0) turn_on = "drop " + o.option;
    if ((o.key == "intel_iommu" || o.key == "amd_iommu") && o.item.rfind("off", 0) == 0)
      turn_on = "drop " + o.option;
  }
  if (io.firmware == sim::IommuVendor::kIntel && !io.spec.intel_default_on && turn_on.rfind("drop", 0) != 0)
    turn_on = "add intel_iommu=on";
  return turn_on;
}

Finding TranslatingFinding(const IommuContext& c) {
  return {"iommu-translating", "warning",
          std::string("the IOMMU (") + c.vendor + ") translates DMA: devices see I/O virtual "
          "addresses (IOVAs), not physical ones" +
              (c.f.reservations.empty() ? "" : "; the reservation reaches a device only through a DMA-API mapping"),
          c.evidence,
          "map the reservation for the device with the DMA API and give the device the address it "
          "returns: dma_map_resource for a pfnmap range (no struct pages), dma_map_page or "
          "dma_map_sg where the range has struct pages (resmem_edu picks per transfer). A driver "
          "that hands the device physical addresses gets DMAR faults and no data (the QEMU "
          "lane: the write to 0x40000000 faulted with 'DMAR: [DMA Write NO_PASID] Request device "
          "[00:10.0] fault "
          "addr 0x40000000 [fault reason 0x05] PTE Write access is not set', where the DMA API "
          "had given IOVA 0xffffe000; docs/rdma.md). A 32-bit card reaches RAM above 4 GiB "
          "through 32-bit IOVAs. GPUDirect RDMA: the guide's nvidia_p2p_get_pages hands out "
          "physical addresses and says the IOMMU must be disabled; map with "
          "nvidia_p2p_dma_map_pages, or boot with iommu=pt (identity domains)",
          "003_abde52ad60696996.txt"};
}

// The finding for the IOMMU's state: one of five.
void AddIommuStateFinding(const MachineFacts& f, const std::function<void(Finding)>& add) {
  using Iommu = MachineFacts::Iommu;
  const Iommu& io = f.iommu;
  const IommuContext c = IommuContextOf(f);
  switch (io.state) {
    case Iommu::State::kUnknown:
      add({"iommu-state-unknown", "info", "the IOMMU's state cannot be read here",
           IommuSysfsEvidence(io) + " (" +
               (f.unreadable.empty() ? std::string("no source") : "see the unreadable sources") + ")",
           "run the doctor on the machine itself with /sys mounted (not in a container); "
           "`ls /sys/class/iommu /sys/kernel/iommu_groups` lists the units and groups, and a kernel "
           "without CONFIG_IOMMU_API has neither and no IOMMU",
           ""});
      break;
    case Iommu::State::kTranslating:
      add(TranslatingFinding(c));
      break;
    case Iommu::State::kPassthrough:
      add({"iommu-passthrough", "info",
           std::string("the IOMMU (") + c.vendor + ") is on with identity domains: devices use "
           "physical addresses" + (c.above_4g ? "; a 32-bit DMA card cannot reach " + c.high : ""),
           c.evidence,
           "bus addresses are physical addresses, as without an IOMMU: " + c.below_4g +
               ". GPUDirect RDMA's guide-era API works here. For translation (a 32-bit card "
               "above 4 GiB, isolation) drop iommu=pt / iommu.passthrough=1",
           "002_94e4d7274f023a25.txt"});
      break;
    case Iommu::State::kOff:
      add({"iommu-off", "info",
           "no IOMMU translates DMA: devices use physical addresses" +
               (c.above_4g ? "; a 32-bit DMA card cannot reach " + c.high : std::string()),
           c.evidence,
           c.below_4g + ". GPUDirect RDMA's guide-era API needs exactly this state. For "
           "translation: " + (io.firmware_known ? TurnIommuOn(io) : std::string("enable the IOMMU in the "
           "firmware setup and check the command line")),
           "002_94e4d7274f023a25.txt"});
      break;
    case Iommu::State::kOnOther:
      add({"iommu-on-unmanaged", "info",
           std::string("the IOMMU (") + c.vendor + ") is on; its groups are owned by VFIO or blocked",
           c.evidence, "a device in such a group is not the kernel driver's: bind it to its driver", ""});
      break;
  }
}

// One finding per IOMMU option the kernel did not take as meant, and one for the IOMMU's state
// with what it means for device DMA into the reservation (docs/rdma.md).
void AddIommuFindings(const MachineFacts& f, const std::function<void(Finding)>& add) {
  AddIommuOptionFindings(f, add);
  AddIommuStateFinding(f, add);
}

}  // namespace

namespace {

// mem= below the PCI hole leaves the hole's size unusable.
void AddMemLimitFindings(const MachineFacts& f, const std::function<void(Finding)>& add) {
  for (const auto& o : f.memory_options) {
    if (o.key != "mem" || !o.applied || o.action != sim::MemoryOptionOutcome::Action::kLimit ||
        f.usable_ram == 0)
      continue;
    const uint64_t limit = o.start;
    if (f.usable_ram + (256ull << 20) < limit)
      add({"mem-limit-below-hole", "warning",
           "mem=" + o.item + " leaves " + FormatSize(f.usable_ram) + " usable, not " + FormatSize(limit),
           "System RAM in /proc/iomem adds up to " + FormatSize(f.usable_ram) +
               "; addresses below " + FormatSize(limit) + " include the firmware's PCI/MMIO hole" +
               (f.firmware_ram ? " (firmware RAM in all: " + FormatSize(f.firmware_ram) + ")" : ""),
           "drop mem= and reserve with memmap=SIZE$START alone, where the firmware map has RAM "
           "(/sys/firmware/memmap); the kernel then keeps every byte you did not reserve",
           "002_94e4d7274f023a25.txt"});
  }
}

// One finding per thing wrong with a reservation, or that there is none.
void AddReservationFindings(const MachineFacts& f, const std::function<void(Finding)>& add) {
  if (f.reservations.empty())
    add({"no-reservation", "info", "no memmap= reservation on the kernel command line",
         "/proc/cmdline: " + (f.cmdline.empty() ? std::string("(empty)") : f.cmdline),
         "reserve RAM at boot with memmap=SIZE$START (docs/kmod.md: choosing a range)", ""});
  for (const auto& r : f.reservations) {
    if (r.over_hole)
      add({"reservation-over-hole", "error",
           r.option + " covers memory with no RAM behind it: reads return zeros, writes vanish",
           "firmware map: " + r.conflict + "; the kernel accepts such a memmap= and only prints a resource conflict",
           "choose a range the firmware lists as System RAM (/sys/firmware/memmap), e.g. above 4 GB; "
           "resmem.ko refuses such ranges at load",
           "002_94e4d7274f023a25.txt"});
    if (!r.firmware_known)
      add({"reservation-unverified", "info",
           r.option + ": cannot check the range against the firmware map",
           "/sys/firmware/memmap is not readable here", "run as root on the machine itself", ""});
    if (r.overlaps_system_ram)
      add({"reservation-is-system-ram", "error",
           r.option + " overlaps memory the kernel uses as System RAM",
           "/proc/iomem lists System RAM inside " + Range(r.start, r.end),
           "the reservation did not take effect: check the command line the kernel received", ""});
    if (r.mtrr_known && !r.uniform_write_back)
      add({"reservation-not-write-back", "warning",
           r.option + " is not write-back throughout: the kernel maps it UC-",
           r.mtrr_detail + " (/proc/mtrr); a mapping's memory type is decided over the whole range "
           "(arch/x86/mm/pat/memtype.c), so CPU reads run one uncached load at a time "
           "(seed 000: ~80 MB/s memcpy, ~150 MB/s cudaMemcpy past 64 GB)",
           "make the firmware's MTRRs cover all RAM as write-back (BIOS setting or update), or keep the "
           "reservation inside the covered part",
           "000_bd71b0f62b937591.txt"});
    if (f.phys_addr_bits > 0 && f.phys_addr_bits < 64 && r.end > (1ull << f.phys_addr_bits))
      add({"reservation-beyond-address-width", "error",
           r.option + " ends above the CPU's " + std::to_string(f.phys_addr_bits) + "-bit physical address width",
           "/proc/cpuinfo address sizes", "the range cannot exist on this CPU: fix the numbers", ""});
    if (f.mem_total > 0 && r.end - r.start > f.mem_total)
      add({"register-larger-than-memtotal", "warning",
           "one cudaHostRegister over all of " + r.option + " fails with out of memory",
           FormatSize(r.end - r.start) + " reserved > MemTotal " + FormatSize(f.mem_total) +
               " (seed 000: error 2 for 188 GB; FACTS.md: r580 refuses a call larger than MemTotal)",
           "register in chunks no larger than MemTotal (resmem transfer engine: registered-chunked)",
           "000_bd71b0f62b937591.txt"});
  }
}

// The resmem devices this machine has: what each says of itself (ABI, mode).
void AddDeviceFindings(RegionProvider& regions, DoctorReport& rep, const std::function<void(Finding)>& add) {
  auto list = regions.List();
  if (!list.ok()) return;
  for (const auto& path : *list) {
    OpenRequest req;
    req.path = path;
    auto h = regions.Open(req);
    if (!h.ok()) {
      add({"device-refused", "error", path + " cannot be opened", h.status().ToString(),
           "dmesg says what the driver refused and why", ""});
      continue;
    }
    auto info = (*h)->Info();
    if (!info.ok()) continue;
    rep.devices.push_back(*info);
    if (info->abi_version != RESMEM_ABI_VERSION)
      add({"abi-version-skew", "error",
           path + " speaks ioctl ABI " + std::to_string(info->abi_version) + ", this resmem speaks " +
               std::to_string(RESMEM_ABI_VERSION),
           info->Describe(), "load the resmem.ko built from this tree (dkms), or use the matching resmem", ""});
    if (info->mode == MapMode::kPfnmap)
      add({"pfnmap-needs-iomemory", "info",
           path + " maps VM_IO|VM_PFNMAP: plain cudaHostRegister fails on it",
           "mode=pfnmap (no struct pages); the 2012 driver said 30, driver 580 says 1",
           "register with cudaHostRegisterIoMemory, or load the module with mode=pages",
           "000_bd71b0f62b937591.txt"});
  }
}

}  // namespace

Result<DoctorReport> Diagnose(Platform& platform, RegionProvider* regions,
                              const DoctorOptions& options) {
  DoctorReport rep;
  rep.platform = platform.name();
  RESMEM_ASSIGN_OR_RETURN(rep.facts, CollectMachineFacts(platform, options));
  const MachineFacts& f = rep.facts;
  auto add = [&](Finding x) { rep.findings.push_back(std::move(x)); };

  AddOptionFindings(f, add);
  // How the command line was made from /etc/default/grub and grub.cfg: each stage, before and
  // after (engine/doctor/grub_stages.h).
  for (auto& g : GrubStageFindings(platform)) add(std::move(g));
  AddMemLimitFindings(f, add);
  AddReservationFindings(f, add);
  AddIommuFindings(f, add);
  // Whether the kernel loads resmem.ko at all, and with which parameters
  // (engine/doctor/module_policy_doctor.h).
  AddModulePolicyFindings(f, add);
  if (regions) AddDeviceFindings(*regions, rep, add);
  return rep;
}

void RenderDoctor(const DoctorReport& rep, std::ostream& out) {
  const MachineFacts& f = rep.facts;
  out << "resmem doctor (platform " << rep.platform << ")\n";
  out << "  cmdline:    " << (f.cmdline.empty() ? "(unreadable)" : f.cmdline) << "\n";
  out << "  MemTotal:   " << FormatSize(f.mem_total) << "   System RAM: " << FormatSize(f.usable_ram)
      << "   firmware RAM: " << (f.firmware_ram ? FormatSize(f.firmware_ram) : std::string("(unreadable)")) << "\n";
  if (f.phys_addr_bits) out << "  address width: " << f.phys_addr_bits << " bits\n";
  for (const auto& r : f.reservations)
    out << "  reservation " << r.option << ": " << Range(r.start, r.end)
        << (r.firmware_known ? (r.over_ram ? ", RAM behind it" : ", NOT all RAM") : "")
        << (r.mtrr_known ? (r.uniform_write_back ? ", write-back" : ", not write-back") : "") << "\n";
  {
    const auto& io = f.iommu;
    static const char* const kState[] = {"unknown", "off", "translating", "passthrough",
                                         "on, groups unmanaged"};
    out << "  IOMMU: " << kState[static_cast<int>(io.state)];
    if (io.firmware_known) out << " (firmware: " << VendorName(io.firmware) << ")";
    if (io.state != MachineFacts::Iommu::State::kUnknown)
      out << ", " << io.units.size() << " units, " << io.groups.size() << " groups";
    out << "\n";
  }
  RenderModulePolicy(f.module_policy, out);
  for (const auto& d : rep.devices) out << "  device: " << d.Describe() << "\n";
  for (const auto& u : f.unreadable) out << "  unreadable: " << u << "\n";
  out << "\n";
  if (rep.findings.empty()) out << "no known failure applies to this machine\n";
  for (const auto& x : rep.findings) {
    out << "[" << x.severity << "] " << x.id << ": " << x.title << "\n"
        << "    evidence: " << x.evidence << "\n"
        << "    remedy:   " << x.remedy << "\n";
    if (!x.seed.empty()) out << "    seed:     " << x.seed << "\n";
  }
}

std::string DoctorJson(const DoctorReport& rep) {
  nlohmann::ordered_json j;
  j["platform"] = rep.platform;
  j["cmdline"] = rep.facts.cmdline;
  j["mem_total"] = rep.facts.mem_total;
  j["usable_ram"] = rep.facts.usable_ram;
  j["firmware_ram"] = rep.facts.firmware_ram;
  j["unreadable"] = rep.facts.unreadable;
  auto& res = j["reservations"] = nlohmann::ordered_json::array();
  for (const auto& r : rep.facts.reservations)
    res.push_back({{"option", r.option}, {"start", r.start}, {"end", r.end}, {"over_hole", r.over_hole},
                   {"uniform_write_back", r.uniform_write_back}, {"mtrr", r.mtrr_detail}});
  {
    const auto& io = rep.facts.iommu;
    static const char* const kState[] = {"unknown", "off", "translating", "passthrough", "on-unmanaged"};
    auto& ij = j["iommu"];
    ij["state"] = kState[static_cast<int>(io.state)];
    ij["firmware"] = io.firmware_known ? sim::IommuVendorWord(io.firmware) : "unknown";
    auto& units = ij["units"] = nlohmann::ordered_json::array();
    for (const auto& u : io.units) units.push_back({{"name", u.name}, {"devices", u.devices}});
    auto& groups = ij["groups"] = nlohmann::ordered_json::array();
    for (const auto& g : io.groups)
      groups.push_back({{"id", g.id}, {"type", g.type_word}, {"devices", g.devices}});
    ij["why"] = io.kernel.why;
  }
  j["module_policy"] = ModulePolicyJson(rep.facts.module_policy);
  auto& fs = j["findings"] = nlohmann::ordered_json::array();
  for (const auto& x : rep.findings)
    fs.push_back({{"id", x.id}, {"severity", x.severity}, {"title", x.title}, {"evidence", x.evidence},
                  {"remedy", x.remedy}, {"seed", x.seed}});
  // Text from the user's paste or command line may not be UTF-8: replaced (U+FFFD), never a throw.
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace resmem::engine
