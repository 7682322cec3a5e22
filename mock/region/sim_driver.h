// The simulated reserved-memory driver: what kmod/resmem.c does, and the seeds' buggy variants of
// it, on a simulated machine. It serves the same ioctls (kmod/uapi/resmem_ioctl.h).
#ifndef RESMEM_MOCK_REGION_SIM_DRIVER_H_
#define RESMEM_MOCK_REGION_SIM_DRIVER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "backends/api/region.h"
#include "mock/sim/sim_world.h"

namespace resmem::sim {

struct SimDriverSpec {
  MapMode mode = MapMode::kPfnmap;
  CacheType cache = CacheType::kWriteBack;
  // Seed 002's bug: the driver hands remap_pfn_range the kernel virtual address of its ioremap
  // instead of the physical address >> PAGE_SHIFT.
  enum class PfnSource { kPhysical, kKernelVirtual } pfn_source = PfnSource::kPhysical;
  // The mmap length passes through an int (the truncation DESIGN.md lists).
  bool length_as_int32 = false;
  // Refuse ranges that are not reserved, overlap System RAM or have no RAM behind them (what
  // kmod/resmem.c checks at load). The forum drivers had no such check.
  bool range_check = true;
  // Fault in lazily (modern driver) instead of remapping the whole VMA at mmap time.
  bool lazy_fault = true;
  uint32_t abi_version = 1;
  // Ranges the driver serves; empty = every memmap=nn$ss reservation, one device each.
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // (phys, size)
};

// Creates the provider: devices "/dev/resmem0", ... over the world's booted machine. Load-time
// refusals (range_check) do not fail creation: the device is absent and Open() reports the
// refusal the driver logged, as dmesg would.
std::unique_ptr<RegionProvider> MakeSimRegionProvider(std::shared_ptr<SimWorld> world,
                                                      const SimDriverSpec& spec);

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_REGION_SIM_DRIVER_H_
