// Parsers of the kernel's memory fact files, shared by the real Platform and the simulator
// (which renders the same texts), so the doctor reads both the same way. Each parser accepts
// exactly what the kernel prints and names the first line it cannot read.
#ifndef RESMEM_BACKENDS_PLATFORM_PROC_PARSERS_H_
#define RESMEM_BACKENDS_PLATFORM_PROC_PARSERS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "backends/api/memory.h"
#include "backends/api/status.h"

namespace resmem {

// `s` without the blanks (spaces, tabs, CR/LF) at either end.
std::string TrimBlanks(const std::string& s);

// One line of /proc/iomem: "  fec00000-fec003ff : IOAPIC 0" -> depth 1 (two spaces a level,
// kernel/resource.c r_show), start 0xfec00000, end 0xfec00400 (exclusive: the file's inclusive
// end + 1), name "IOAPIC 0".
struct IomemEntry {
  int depth = 0;
  uint64_t start = 0;
  uint64_t end = 0;  // exclusive
  std::string name;
};
// Fails with kFailedPrecondition when every address reads 0 (the kernel hides them from
// non-root readers): the way out is to read it as root.
Result<std::vector<IomemEntry>> ParseIomem(const std::string& text);

// One line of /proc/mtrr: "reg01: base=0x0c0000000 ( 3072MB), size= 1024MB, count=1:
// uncachable" (arch/x86/kernel/cpu/mtrr/if.c). type is kUnknown for write-through and
// write-protect, which MemoryType does not name; type_name keeps the file's word.
struct MtrrLine {
  int reg = 0;
  uint64_t base = 0;
  uint64_t size = 0;
  int count = 0;
  MemoryType type = MemoryType::kUnknown;
  std::string type_name;
};
Result<std::vector<MtrrLine>> ParseMtrr(const std::string& text);

// /sys/firmware/memmap as "start end type" lines (start and inclusive end in hex, as the
// entry directories' files hold them): the firmware's map before memmap= edits.
struct FirmwareMemmapEntry {
  uint64_t start = 0;
  uint64_t end = 0;  // exclusive
  std::string type;  // "System RAM", "Reserved", "ACPI Tables", ...
};
Result<std::vector<FirmwareMemmapEntry>> ParseFirmwareMemmap(const std::string& text);

// /proc/meminfo's "MemTotal:  3062532 kB", in bytes.
Result<uint64_t> ParseMeminfoTotal(const std::string& text);

// /proc/cpuinfo's "address sizes\t: 46 bits physical, 48 bits virtual" -> 46 (first CPU).
Result<int> ParsePhysAddressBits(const std::string& text);

// /proc/cmdline split as the kernel does (lib/cmdline.c next_arg: spaces separate, double
// quotes group and are removed): "mem=4G memmap=188G$4G quiet".
struct CmdlineOption {
  std::string key;    // "memmap"
  std::string value;  // "188G$4G"
  bool has_value = false;
};
std::vector<CmdlineOption> ParseCmdlineOptions(const std::string& text);

// The IOMMU as sysfs shows it. The Platform renders the folders as text, one line per entry
// (host_platform.cc reads the folders, the simulator renders the same lines):
//   /sys/class/iommu         "UNIT: DEV DEV ..."   one line per remapping unit
//                            (drivers/iommu/iommu-sysfs.c: a class device per unit, named by its
//                            driver: "dmar0" for Intel VT-d, "ivhd0" for AMD-Vi; its devices/
//                            folder links each PCI device it translates for, by name)
//   /sys/kernel/iommu_groups "N TYPE DEV DEV ..."  one line per group (drivers/iommu/iommu.c:
//                            groups/N/type as iommu_group_show_type prints it, groups/N/devices/)
// An empty text is an existing, empty folder: the kernel has IOMMU support and no unit is on.
struct IommuUnit {
  std::string name;                  // "dmar0", "ivhd0"
  std::vector<std::string> devices;  // "0000:00:02.0"
};
Result<std::vector<IommuUnit>> ParseIommuUnits(const std::string& text);

// A group's default domain as groups/N/type names it (iommu_group_show_type, Linux 5.11+;
// "DMA-FQ" from 5.15).
enum class IommuDomainType {
  kBlocked,    // "blocked": no DMA passes
  kIdentity,   // "identity": bus address = physical address (iommu=pt)
  kUnmanaged,  // "unmanaged": owned by a user (VFIO) or a driver's own domain
  kDma,        // "DMA": translated, IOTLB flushed on every unmap (strict)
  kDmaFq,      // "DMA-FQ": translated, flushes batched in a queue (lazy)
  kUnknown,    // "unknown", or a word this parser does not know
};
const char* IommuDomainTypeName(IommuDomainType t);  // the sysfs word
bool IommuDomainTranslates(IommuDomainType t);       // DMA or DMA-FQ: devices see IOVAs
struct IommuGroup {
  int id = 0;
  IommuDomainType type = IommuDomainType::kUnknown;
  std::string type_word;             // as the file read
  std::vector<std::string> devices;
};
Result<std::vector<IommuGroup>> ParseIommuGroups(const std::string& text);

// /sys/firmware/acpi/tables as its entry names, one a line ("DMAR", "IVRS", "DSDT", ...): the
// folder is readable by anyone though the tables are not. DMAR describes Intel VT-d remapping
// units, IVRS AMD-Vi ones (drivers/iommu/intel/dmar.c, drivers/iommu/amd/init.c): without the
// table the kernel finds no IOMMU, whatever the command line says.
std::vector<std::string> ParseAcpiTableNames(const std::string& text);

// /proc/cpuinfo's first "vendor_id : GenuineIntel" -> "GenuineIntel"; "" when absent.
std::string ParseCpuVendor(const std::string& text);

}  // namespace resmem

#endif  // RESMEM_BACKENDS_PLATFORM_PROC_PARSERS_H_
