// The module resmem_seq runs against (docs/reliability.md "Random syscall sequences"): its name,
// file and parameters, the ranges it was loaded with and its devices, all read before the runs;
// and the kernel's view of it that the oracles read (/proc/iomem, kmemleak).
#ifndef RESMEM_KMOD_TESTS_RESMEM_SEQ_WORLD_H_
#define RESMEM_KMOD_TESTS_RESMEM_SEQ_WORLD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "kmod/uapi/resmem_ioctl.h"

namespace resmem::seq {

struct Range {
  uint64_t start, size;
};

struct Device {
  std::string path;
  resmem_info info;
};

struct World {
  std::string module_name = "resmem";
  std::string module_file = "/resmem.ko";
  std::string params;         // the parameter string the module was loaded with (reload uses it)
  std::vector<Range> ranges;  // the configured ranges (module parameters)
  std::vector<Device> devices;
  std::vector<char> image;    // the module file, for init_module
};

// The module's parameters as a load string, and the ranges they configure. "" or why not.
std::string ReadModuleSetup(World* w);
// Every /dev/resmemN and its INFO. "" or why not.
std::string FindDevices(World* w);
// Whether physical address pa lies in a configured range.
bool InsideRanges(const World& w, uint64_t pa);
// init_module of the module file with the parameters it was loaded with. "" or why not.
std::string LoadModule(World* w);
// Lines of /proc/iomem naming needle; not resmem_edu's PCI regions (its edu devices' BARs).
std::vector<std::string> IomemLines(const char* needle);
// kmemleak: scans and returns the reports ("" when clean, "-" when kmemleak is not there).
std::string KmemleakScan();
void KmemleakClear();

}  // namespace resmem::seq

#endif  // RESMEM_KMOD_TESTS_RESMEM_SEQ_WORLD_H_
