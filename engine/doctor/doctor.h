// resmem doctor: reads a Platform's facts (/proc/iomem, /sys/firmware/memmap, /proc/mtrr,
// /proc/cmdline, /proc/meminfo, /proc/cpuinfo, the IOMMU's /sys/class/iommu,
// /sys/kernel/iommu_groups and /sys/firmware/acpi/tables, the module policy's modules_disabled,
// lockdown, sig_enforce, Secure Boot and /proc/keys, and the installed resmem.ko's signature) and
// names the known failures this machine would hit, each with its evidence, the remedy, and the
// seed it comes from. The same code reads a real machine (platform=host) and a simulated one
// (platform=sim), so every finding has a scenario.
#ifndef RESMEM_ENGINE_DOCTOR_DOCTOR_H_
#define RESMEM_ENGINE_DOCTOR_DOCTOR_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "backends/api/platform.h"
#include "backends/api/region.h"
#include "backends/platform/module_policy_parsers.h"
#include "backends/platform/module_signature.h"
#include "backends/platform/proc_parsers.h"
#include "mock/machine/machine.h"
#include "mock/machine/module_policy.h"

namespace resmem::engine {

struct MachineFacts {
  std::string cmdline;
  std::vector<CmdlineOption> options;
  uint64_t mem_total = 0;      // /proc/meminfo MemTotal
  uint64_t usable_ram = 0;     // "System RAM" at the top level of /proc/iomem
  uint64_t firmware_ram = 0;   // "System RAM" in /sys/firmware/memmap (0 when unreadable)
  int phys_addr_bits = 0;      // 0 when unknown
  std::vector<IomemEntry> iomem;
  std::vector<FirmwareMemmapEntry> firmware;
  std::vector<MtrrLine> mtrr;
  struct Reservation {
    uint64_t start = 0, end = 0;  // exclusive end
    std::string option;           // "memmap=188G$4G"
    bool firmware_known = false;  // the firmware map was readable
    bool over_ram = false;        // firmware RAM under all of it
    bool over_hole = false;       // some part has no firmware RAM behind it
    std::string conflict;         // what is there instead
    bool overlaps_system_ram = false;  // the kernel uses part of it as System RAM
    bool mtrr_known = false;
    bool uniform_write_back = false;   // MTRRs make the whole range WB
    std::string mtrr_detail;
  };
  std::vector<Reservation> reservations;
  std::vector<std::string> unreadable;  // "path: why"
  // The kernel's own reading of the command line's memory options (sim::Boot() over this
  // machine's firmware map, /proc/cmdline and /proc/sys/kernel/osrelease): one parser for the
  // simulator and the doctor.
  std::string kernel_version;                          // "" when unreadable: newest rules
  std::string arch;                                    // "x86_64", "i386" (uname -m); "": x86_64
  std::vector<sim::MemoryOptionOutcome> memory_options;
  std::vector<sim::OptionIssue> cmdline_issues;
  std::string kernel_panic;                            // the map the kernel would panic on
  sim::LinuxRules kernel_rules = sim::LinuxRulesFor("").value();  // the rules that reading used
                                                                  // (newest: version unreadable)

  // The IOMMU: what sysfs shows (the truth on this machine) and the kernel's reading of the
  // command line on this firmware (sim::ReadIommuOptions, the simulator's rules), which says
  // why it is so and which IOMMU options the kernel did not take.
  struct Iommu {
    bool units_known = false;              // /sys/class/iommu readable
    std::vector<IommuUnit> units;
    bool groups_known = false;             // /sys/kernel/iommu_groups readable
    std::vector<IommuGroup> groups;
    bool tables_known = false;             // /sys/firmware/acpi/tables readable
    std::vector<std::string> acpi_tables;
    std::string cpu_vendor;                // /proc/cpuinfo vendor_id
    bool firmware_known = false;           // the tables or the units' names say which
    sim::IommuVendor firmware = sim::IommuVendor::kNone;  // DMAR: intel, IVRS: amd
    std::string firmware_source;           // how firmware was told
    enum class State { kUnknown, kOff, kTranslating, kPassthrough, kOnOther };
    State state = State::kUnknown;
    IommuDomainType domain = IommuDomainType::kUnknown;  // the translating or identity type seen
    int translated_devices = 0, identity_devices = 0, other_devices = 0;
    sim::IommuSpec spec;                   // the firmware as far as it is known, for the rules
    sim::IommuKernel kernel;               // the rules' reading of /proc/cmdline on it
    bool rules_agree = true;               // the rules predict what sysfs shows
  };
  Iommu iommu;

  // Whether this kernel would load resmem.ko: the policy's files as read, the module's signature,
  // and the rules of mock/machine/module_policy.h, which explain the files (why the kernel is
  // locked down, why signatures are enforced), stand in for a file that is absent, and decide
  // the load (`modprobe resmem` with no parameters) the way the simulated kernel does.
  struct ModulePolicy {
    bool known = false;                 // /proc/sys/kernel/modules_disabled was readable: the
                                        // rest means something (a kernel with modules)
    bool modules_disabled = false;
    bool lockdown_read = false;         // /sys/kernel/security/lockdown was read
    std::string lockdown_source;        // how the level below was told
    bool sig_enforce_read = false;      // /sys/module/module/parameters/sig_enforce was read
    bool module_sig = true;             // false: sig_enforce is absent (no CONFIG_MODULE_SIG)
    SecureBootState secure_boot = SecureBootState::kNotEfi;
    std::string secure_boot_source;     // the file it was told from
    bool keys_known = false;            // /proc/keys was read
    std::vector<std::string> keys;      // its asymmetric keys' subjects
    std::string module_source;          // "module-signature:resmem" or "module-signature:/PATH"
    bool module_read = false;           // the pseudo-source gave a text
    bool module_absent = false;         // ENOENT: not installed (or no such file)
    std::string module_error;           // why it could not be read
    ModuleSignatureFacts module;        // what it says
    sim::ModuleKernel rules;            // the rules' reading of /proc/cmdline on this firmware
    sim::ModuleKernel kernel;           // what the load is decided with: the files where read,
                                        // the rules where not
    bool decided = false;               // enough is known to decide the load
    std::string undecided_why;          // what is missing when not
    sim::ModuleLoad load;               // the decision, when decided
  };
  ModulePolicy module_policy;
};

// What the doctor is asked about beyond the machine.
struct DoctorOptions {
  // The module whose signature is checked: a name (the installed module depmod would load) or
  // an absolute path (`resmem doctor --module PATH`).
  std::string module = "resmem";
};

// Reads and parses every source; a source this machine lacks is noted, not fatal.
Result<MachineFacts> CollectMachineFacts(Platform& platform, const DoctorOptions& options = {});

struct Finding {
  std::string id;        // stable: "reservation-not-write-back"
  std::string severity;  // "error" (will fail), "warning" (slow or fragile), "info"
  std::string title;
  std::string evidence;
  std::string remedy;
  std::string seed;      // the seed file it comes from
};

struct DoctorReport {
  std::string platform;
  MachineFacts facts;
  std::vector<Finding> findings;
  std::vector<RegionInfo> devices;  // reserved-memory devices found, when a region part was given
  bool has_errors() const;
};

// `regions` may be null; when given, each device's info is checked (mode, ABI version).
Result<DoctorReport> Diagnose(Platform& platform, RegionProvider* regions,
                              const DoctorOptions& options = {});

void RenderDoctor(const DoctorReport& report, std::ostream& out);
std::string DoctorJson(const DoctorReport& report);

}  // namespace resmem::engine

#endif  // RESMEM_ENGINE_DOCTOR_DOCTOR_H_
