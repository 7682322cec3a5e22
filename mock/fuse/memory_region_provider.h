// A plain memory-backed RegionProvider: each device is a shmem file (a memfd, or a file of a private
// tmpfs with 2 MiB pages: DevicePages) mapped MAP_SHARED in this process,
// with the RegionInfo (phys, mode, cache) a test chooses. It stands in for a reserved-memory driver
// where only the bytes matter: FUSE tests, the FUSE benchmark, and any test that wants a real,
// addressable region without the simulator. Map() returns views into the device's memory, so
// writes through one mapping are seen by every other mapping of the same device.
#ifndef RESMEM_MOCK_FUSE_MEMORY_REGION_PROVIDER_H_
#define RESMEM_MOCK_FUSE_MEMORY_REGION_PROVIDER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/api/region.h"

namespace resmem::fuse_emu {

// Where the device's memory comes from. A cold read (the first read through a new mapping of a
// device holding data) costs a page fault per 16 pages of 4 KiB, and mapping 4 KiB folios one by
// one; 2 MiB folios are mapped a folio at a time (a PMD where the mapping is 2 MiB aligned), which
// brings the cold read to memory speed (docs/fuse.md "Cold read").
enum class DevicePages {
  // A private tmpfs mounted with huge=always (fsopen/fsmount, never attached to any directory),
  // when the process may mount (CAP_SYS_ADMIN, which FUSE passthrough needs too) and the kernel
  // gives its files 2 MiB pages; otherwise a memfd, 4 KiB pages unless the machine's
  // /sys/kernel/mm/transparent_hugepage/shmem_enabled says otherwise. The device's backing says
  // which it got and why (HostMemory::FileSpan::backing, the FUSE control file's `backing` line).
  kHugeWherePossible,
  // A memfd, as the machine's shmem settings make it (4 KiB pages by default).
  kMemfd,
};

struct MemoryDeviceSpec {
  std::string device = "/dev/resmem0";
  uint64_t size = 64ull << 20;          // bytes; a multiple of 4096
  uint64_t phys_addr = 0x100000000ull;  // what INFO/PHYS report (seed 000's range starts at 4 GiB)
  MapMode mode = MapMode::kPfnmap;
  CacheType cache = CacheType::kWriteBack;
  uint32_t abi_version = 1;
  DevicePages pages = DevicePages::kHugeWherePossible;
};

// Fails with InvalidArgument when a size is 0 or not page aligned, or a device name repeats.
Result<std::unique_ptr<RegionProvider>> MakeMemoryRegionProvider(
    std::vector<MemoryDeviceSpec> devices);

}  // namespace resmem::fuse_emu

#endif  // RESMEM_MOCK_FUSE_MEMORY_REGION_PROVIDER_H_
