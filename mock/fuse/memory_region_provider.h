// A plain memory-backed RegionProvider: each device is a memfd mapped MAP_SHARED in this process,
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

struct MemoryDeviceSpec {
  std::string device = "/dev/resmem0";
  uint64_t size = 64ull << 20;          // bytes; a multiple of 4096
  uint64_t phys_addr = 0x100000000ull;  // what INFO/PHYS report (seed 000's range starts at 4 GiB)
  MapMode mode = MapMode::kPfnmap;
  CacheType cache = CacheType::kWriteBack;
  uint32_t abi_version = 1;
};

// Fails with InvalidArgument when a size is 0 or not page aligned, or a device name repeats.
Result<std::unique_ptr<RegionProvider>> MakeMemoryRegionProvider(
    std::vector<MemoryDeviceSpec> devices);

}  // namespace resmem::fuse_emu

#endif  // RESMEM_MOCK_FUSE_MEMORY_REGION_PROVIDER_H_
