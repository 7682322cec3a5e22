// The IOMMU of a simulated machine: what the firmware offers (the machine format's `iommu` key)
// and what the kernel makes of it with the command line's IOMMU options. The same reading serves
// the simulator, which renders /sys/class/iommu, /sys/kernel/iommu_groups and
// /sys/firmware/acpi/tables from it, and the doctor, which explains a real machine's sysfs with
// it (which option turned the IOMMU on or off, which one the kernel did not take).
//
// The rules are Linux 6.1's with Debian's 6.1 configuration (the QEMU lane's kernel,
// /usr/src/linux-headers-6.1.0-56-amd64/.config): CONFIG_INTEL_IOMMU=y, CONFIG_AMD_IOMMU=y,
// CONFIG_IOMMU_DEFAULT_DMA_LAZY=y, CONFIG_GART_IOMMU=y, and Debian's three-way choice in place
// of CONFIG_INTEL_IOMMU_DEFAULT_ON: CONFIG_INTEL_IOMMU_DEFAULT_ON_INTGPU_OFF=y. Debian's patch
// debian/patches/features/x86/intel-iommu-add-kconfig-option-to-exclude-igpu-by-default.patch
// (bug 935270) makes that "dmar_disabled = IS_ENABLED(CONFIG_INTEL_IOMMU_DEFAULT_OFF)", so VT-d
// is ON by default on Debian's 6.1 wherever the firmware has a DMAR table, the integrated GPU
// excepted (dmar_map_intgpu = 0, identity for it); intel-iommu-add-option-to-exclude-integrated-
// gpu-only.patch adds the item intel_iommu=intgpu_off. A kernel built with VT-d off by default
// (upstream with CONFIG_INTEL_IOMMU_DEFAULT_ON=n, CONFIG_INTEL_IOMMU_DEFAULT_OFF=y) is the
// machine format's intel_default_on = false.
// Sources (6.1):
//   arch/x86/kernel/pci-dma.c     iommu_setup (early_param "iommu")
//   drivers/iommu/intel/iommu.c   intel_iommu_setup (__setup "intel_iommu="), dmar_disabled,
//                                 intel_iommu_init (no_iommu || dmar_disabled: nothing set up)
//   drivers/iommu/intel/dmar.c    detect_intel_iommu (needs the ACPI DMAR table)
//   drivers/iommu/amd/init.c      parse_amd_iommu_options (__setup "amd_iommu="),
//                                 amd_iommu_detect (no_iommu, amd_iommu_disabled, the IVRS table)
//   drivers/iommu/iommu.c         iommu_set_def_domain_type (early_param "iommu.passthrough"),
//                                 iommu_dma_setup (early_param "iommu.strict"),
//                                 iommu_subsys_init (the default domain: identity, DMA, DMA-FQ),
//                                 iommu_group_show_type (the words of groups/N/type)
//   init/main.c                   do_early_param ("Malformed early option '%s'" when an early
//                                 parameter's function returns non-zero), obsolete_checksetup and
//                                 unknown_bootoption (a word without '=' that only a "name="
//                                 __setup knows goes to init), print_unknown_bootoptions (5.14+)
//   kernel/params.c               parameq: '-' and '_' are the same in a parameter's name
//   lib/kstrtox.c                 kstrtobool: y Y 1 / n N 0 / on / off by the first characters
//                                 (e E / d D too from 6.15: linux_rules.h)
//   Documentation/admin-guide/kernel-parameters.txt  iommu=, intel_iommu=, amd_iommu=,
//                                 iommu.passthrough=, iommu.strict=
// Not modelled: the DMAR platform opt-in flag (Thunderbolt DMA protection turns VT-d on where it
// is off by default), Intel's caching mode (a virtual VT-d with caching-mode=on forces strict
// flushing), the identity domain of graphics devices (igfx_off, Debian's integrated-GPU default
// and intgpu_off: the model's devices are never GPUs), and which unit scopes which device (the
// model deals the devices out to the units in turn).
#ifndef RESMEM_MOCK_MACHINE_IOMMU_H_
#define RESMEM_MOCK_MACHINE_IOMMU_H_

#include <string>
#include <vector>

#include "backends/platform/proc_parsers.h"
#include "mock/machine/linux_rules.h"

namespace resmem::sim {

// Which remapping hardware the firmware describes to the kernel.
enum class IommuVendor {
  kNone,   // no DMAR or IVRS table: no IOMMU, or VT-d / AMD-Vi turned off in the firmware setup
  kIntel,  // an ACPI DMAR table: Intel VT-d units ("dmar0", ...)
  kAmd,    // an ACPI IVRS table: AMD-Vi units ("ivhd0", ...)
};
const char* IommuVendorWord(IommuVendor v);  // "none", "intel", "amd"

// The machine format's `iommu = { vendor, units, devices, intel_default_on }`.
struct IommuSpec {
  bool described = false;            // false: the machine says nothing; its sysfs is not served
  IommuVendor vendor = IommuVendor::kNone;
  int units = 1;                     // remapping units (DMAR DRHD / IVRS IVHD entries)
  std::vector<std::string> devices;  // PCI devices behind them ("0000:00:02.0"), one group each
  bool intel_default_on = true;      // VT-d on without intel_iommu=on (Debian 6.1: yes, see
                                     // above; false for a kernel built DEFAULT_OFF)
};

// What went wrong with one IOMMU option.
enum class IommuOptionProblem {
  kNone,
  kUnknownValue,     // intel_iommu= / amd_iommu= item the parser does not know: it prints
                     // "DMAR: Unknown option - '...'" / "AMD-Vi: Unknown option - '...'"
  kSilentlyIgnored,  // iommu=on, iommu=1, intel_iommu= (empty): read, matched nothing, no message
  kMalformed,        // an early parameter's function failed: "Malformed early option '...'"
  kNotAParameter,    // no such parameter (intel_iommu without '=', iommu_passthrough=1): handed
                     // to init, listed in "Unknown kernel command line parameters"
  kAfterDashDash,    // after "--": init's argument, never read by the kernel
  kNoEffect,         // taken, but nothing here acts on it (intel_iommu=on with no DMAR table,
                     // iommu=pt with no IOMMU on, amd_iommu=off on an Intel machine)
  kDeprecated,       // taken, with a deprecation warning (intel_iommu=strict, amd_iommu=fullflush)
};

struct IommuOptionOutcome {
  std::string option;  // the argument as on the line: "intel_iommu=on,sm_on"
  std::string key;     // "intel_iommu", "amd_iommu", "iommu", "iommu.passthrough", "iommu.strict"
  std::string item;    // the comma item this is about ("on"); the whole value for the others
  IommuOptionProblem problem = IommuOptionProblem::kNone;
  std::string effect;  // what the kernel did with it, one phrase with the source
  std::string dmesg;   // the line the kernel prints for it, "" when it prints none of its own
};

// The kernel's IOMMU after boot.
struct IommuKernel {
  IommuVendor active = IommuVendor::kNone;  // the driver that translates (kNone: no IOMMU on)
  bool on() const { return active != IommuVendor::kNone; }
  IommuDomainType default_domain = IommuDomainType::kDmaFq;  // each group's, when on
  bool domain_from_cmdline = false;  // iommu=pt/nopt or iommu.passthrough= set it
  bool strict = false;               // iommu.strict=1 (DMA, not DMA-FQ)
  std::string why;                   // why it is on or off, one sentence with the source
  std::vector<IommuOptionOutcome> options;  // every IOMMU option item, in command-line order
  std::vector<std::string> dmesg;  // the options' own lines in the order the kernel prints them
                                   // (early parameters first, then the __setup ones)
};

// The kernel's reading of `cmdline` (as /proc/cmdline reads) on firmware `hw`, with a kernel
// version's rules (its kstrtobool: LinuxRules::kstrtobool_enable_disable); without them, Linux
// 6.1's. hw.described is not looked at: a machine whose firmware is unknown is read as one
// without a table.
IommuKernel ReadIommuOptions(const std::string& cmdline, const IommuSpec& hw,
                             const LinuxRules& rules);
IommuKernel ReadIommuOptions(const std::string& cmdline, const IommuSpec& hw);

// The sysfs texts, in the forms backends/platform/proc_parsers.h reads. Only for a described
// machine (the caller serves nothing otherwise).
std::string RenderIommuUnits(const IommuSpec& hw, const IommuKernel& k);   // /sys/class/iommu
std::string RenderIommuGroups(const IommuSpec& hw, const IommuKernel& k);  // /sys/kernel/iommu_groups
std::string RenderAcpiTables(const IommuSpec& hw);                         // /sys/firmware/acpi/tables

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_MACHINE_IOMMU_H_
