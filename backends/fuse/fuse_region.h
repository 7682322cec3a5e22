// The `fuse` Region backend: opens the files of a FUSE-emulated device mount (mock/fuse) the way
// a program opens /dev/resmemN, asks the module's ioctls, and maps them for real (mmap(2) of the
// file). Its MappingFacts describe the emulated device, not the FUSE file: the mode from
// RESMEM_IOC_INFO (pfnmap -> VM_IO|VM_PFNMAP, backing device-pfn; pages -> VM_MIXEDMAP, backing
// device-pages), the cache type as memory type, origin "fuse-emulated", so the CUDA model judges
// the mapping as it would the real device's. Reads and writes through a mapping that the daemon
// fails (an EIO range, a dead daemon) come back as Status::Signal(SIGBUS), not a crash.
#ifndef RESMEM_BACKENDS_FUSE_FUSE_REGION_H_
#define RESMEM_BACKENDS_FUSE_FUSE_REGION_H_

#include <memory>
#include <string>

#include "backends/api/region.h"

namespace resmem {

// Devices are listed as "/dev/<file>" for each device file in mount_dir (the control file and
// other dot-files are not devices). Open() accepts "/dev/resmemN", the bare name "resmemN", or a
// path inside mount_dir. When mount_dir does not exist List/Open fail Unavailable, naming how to
// mount it.
std::unique_ptr<RegionProvider> MakeFuseRegionProvider(std::string mount_dir);

}  // namespace resmem

#endif  // RESMEM_BACKENDS_FUSE_FUSE_REGION_H_
