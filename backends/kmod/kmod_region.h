// The Region backend over the real kernel module: /dev/resmemN devices of kmod/resmem.c, driven
// through the ioctl ABI in kmod/uapi/resmem_ioctl.h. A mapping's facts come from the kernel
// (/proc/self/smaps VmFlags of the mapping) plus the driver's info ioctl (physical address, cache
// type); nothing is assumed from the mode's name.
#ifndef RESMEM_BACKENDS_KMOD_KMOD_REGION_H_
#define RESMEM_BACKENDS_KMOD_KMOD_REGION_H_

#include <cstdint>
#include <memory>
#include <string>

#include "backends/api/region.h"
#include "backends/api/status.h"

namespace resmem {

// Devices matching `dev_glob`. List() is empty (not an error) when no module is loaded; Open()
// then answers Unavailable with the way out (load the module, see docs/kmod.md).
std::unique_ptr<RegionProvider> MakeKmodRegionProvider(std::string dev_glob = "/dev/resmem*");

// The ioctl ABI this library was built with (RESMEM_ABI_VERSION).
uint32_t KmodLibraryAbiVersion();

// Version skew between the loaded module and this library, for the doctor.
struct AbiSkew {
  std::string device;        // the device asked
  uint32_t module_abi = 0;   // what the module's info ioctl reports
  uint32_t library_abi = 0;  // KmodLibraryAbiVersion()
  bool skewed = false;       // module_abi != library_abi
  std::string message;       // one line: agreement, or which side to rebuild/reload
};
// Pure comparison (unit-testable without a module).
AbiSkew CompareAbi(const std::string& device, uint32_t module_abi, uint32_t library_abi);
// Asks the device (RESMEM_IOC_INFO). Errors: the open/ioctl errno with the device named;
// ENOTTY means the device is not a resmem device (or predates the info ioctl).
Result<AbiSkew> CheckKmodAbi(const std::string& device);

}  // namespace resmem

#endif  // RESMEM_BACKENDS_KMOD_KMOD_REGION_H_
