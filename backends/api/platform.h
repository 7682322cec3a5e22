// The machine's facts and its host-side memory operations. The real Platform reads /proc/iomem,
// /sys/firmware/memmap, /proc/mtrr, /proc/cmdline, /proc/meminfo and PAT state from this machine;
// the simulated one renders the same texts from a scenario's machine model. Parsers of those
// texts (backends/platform) are shared, so the doctor runs unchanged on both.
#ifndef RESMEM_BACKENDS_API_PLATFORM_H_
#define RESMEM_BACKENDS_API_PLATFORM_H_

#include <cstdint>
#include <memory>
#include <string>

#include "backends/api/clock.h"
#include "backends/api/memory.h"
#include "backends/api/status.h"

namespace resmem {

class Platform {
 public:
  virtual ~Platform() = default;
  virtual std::string name() const = 0;  // "sim:seed000-workstation", "host"

  // The text of a kernel source of facts, exactly as the file reads: "/proc/iomem",
  // "/proc/cmdline", "/proc/mtrr", "/proc/meminfo", "/sys/firmware/memmap" (rendered as lines
  // "start end type", one per entry directory), "/sys/kernel/debug/x86/pat_memtype_list",
  // "/proc/cpuinfo", and the IOMMU's "/sys/class/iommu", "/sys/kernel/iommu_groups",
  // "/sys/firmware/acpi/tables" (folders rendered as lines: backends/platform/proc_parsers.h);
  // the module policy's "/proc/sys/kernel/modules_disabled", "/sys/kernel/security/lockdown",
  // "/sys/module/module/parameters/sig_enforce", the SecureBoot efivar (its bytes),
  // "/sys/firmware/efi/fw_platform_size", "/proc/keys", and the pseudo-source
  // "module-signature:resmem" (or "module-signature:/PATH"): the module's appended signature as
  // text (backends/platform/module_policy_parsers.h, module_signature.h); and "uname:machine",
  // what `uname -m` prints ("x86_64", "i686"): the kernel's architecture, whose option rules
  // differ (mock/machine/linux_rules.h). For `resmem doctor --bandwidth`: "/sys/bus/pci/devices"
  // (the device names, one a line) and its devices' vendor, class, numa_node, current_link_speed,
  // current_link_width, max_link_speed, max_link_width; "/sys/kernel/mm/transparent_hugepage/enabled";
  // and "getcpu", the calling thread's "CPU NODE" (backends/platform/pci_link.h).
  // NotFound/errno status when this machine does not have it.
  virtual Result<std::string> ReadSource(const std::string& path) = 0;

  // malloc/new: pageable anonymous memory of this process (first touch faults pages in).
  virtual Result<std::unique_ptr<HostMemory>> AllocPageable(uint64_t bytes) = 0;

  // memcpy between two host spans, through the CPU. Costs what the memory types cost (UC reads
  // one load at a time, WB at memcpy speed). Returns the seconds it took on the clock.
  virtual Result<double> CopyHost(HostMemory& dst, uint64_t dst_offset, HostMemory& src,
                                  uint64_t src_offset, uint64_t length) = 0;

  virtual Clock& clock() = 0;
};

}  // namespace resmem

#endif  // RESMEM_BACKENDS_API_PLATFORM_H_
