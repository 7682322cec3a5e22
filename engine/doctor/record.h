// `resmem doctor --record DIR`: this machine's facts, written so the simulator can replay them.
// Raw copies of what the doctor reads, a machine file of the machine format built from them, and
// a scenario that boots that machine on the simulator and expects the same doctor findings.
#ifndef RESMEM_ENGINE_DOCTOR_RECORD_H_
#define RESMEM_ENGINE_DOCTOR_RECORD_H_

#include <string>
#include <vector>

#include "backends/api/platform.h"
#include "backends/api/status.h"
#include "engine/doctor/doctor.h"
#include "mock/machine/machine.h"

namespace resmem::engine {

struct Recording {
  std::vector<std::string> files;  // paths written, in the order written
  sim::MachineSpec machine;        // what machine.toml holds
  std::vector<std::string> notes;  // what could not be recorded, and why
};

// Writes into `dir` (created if missing):
//   iomem.txt            /proc/iomem as read
//   firmware_memmap.txt  /sys/firmware/memmap as `cd /sys/firmware/memmap && grep . */*` prints it
//   mtrr.txt, cmdline.txt, meminfo.txt, version.txt   /proc/mtrr, /proc/cmdline, /proc/meminfo,
//                        /proc/version as read
//   cpuinfo.txt          /proc/cpuinfo's "address sizes" line
//   iommu_units.txt, iommu_groups.txt, acpi_tables.txt   /sys/class/iommu,
//                        /sys/kernel/iommu_groups, /sys/firmware/acpi/tables as the platform
//                        renders them (backends/platform/proc_parsers.h)
//   machine.toml         the machine (`resmem import` of the files above, with the command line of
//                        /proc/cmdline, the kernel's share of RAM, the IOMMU and the module policy
//                        (EFI, Secure Boot, modules_disabled, the trusted keys, resmem.ko's
//                        signature) from `report`)
//   scenario.toml        [machine] from = "machine.toml", a boot step, a doctor step expecting
//                        exactly `report`'s findings about the machine (devices = false: a
//                        device's findings depend on its driver, which is not the machine)
// A source the platform lacks is noted, not fatal; a machine with no firmware map is an error.
// `report` is the doctor's diagnosis of `platform` without devices (Diagnose(platform, nullptr)).
Result<Recording> RecordMachine(Platform& platform, const DoctorReport& report, const std::string& dir);

// The names of every file RecordMachine may write into its folder (those above), for a caller to
// check up front; RecordMachine refuses (kInternal) to write one not listed here.
const std::vector<std::string>& RecordedFileNames();

// The machine RecordMachine would write as machine.toml, read without writing anything (`resmem
// plan` of this machine). `notes` (optional) gets what could not be read, as Recording::notes.
Result<sim::MachineSpec> ReadMachine(Platform& platform, const DoctorReport& report,
                                     std::vector<std::string>* notes = nullptr);

}  // namespace resmem::engine

#endif  // RESMEM_ENGINE_DOCTOR_RECORD_H_
