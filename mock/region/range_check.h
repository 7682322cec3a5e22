// Load-time checks of the simulated driver: the same list kmod/resmem.c applies to each range it
// is asked to serve, so the driver never becomes a /dev/mem. Each refusal has its own errno
// (except the two malformed-parameter cases, which share EINVAL as the kernel's parameter checks
// do) and a message naming the problem and the way out; the driver prints it to dmesg.
//
//   check (in this order)                                errno
//   size is 0                                            EINVAL
//   phys + size wraps past 2^64                          EOVERFLOW
//   phys or size not a multiple of 4 KiB                 EINVAL
//   intersects System RAM the booted kernel manages      EPERM   (serving it would hand out
//                                                                 the kernel's own pages)
//   not inside one memmap=nn$ss reservation              ENXIO
//   some part has no RAM behind it (hole / MMIO window)  ENODEV  (FACTS.md: the kernel accepts
//                                                                 memmap= over the PCI hole and
//                                                                 reads return 0)
//   overlaps a range an earlier device already serves    EBUSY   (request_mem_region's answer)
#ifndef RESMEM_MOCK_REGION_RANGE_CHECK_H_
#define RESMEM_MOCK_REGION_RANGE_CHECK_H_

#include <cstdint>
#include <vector>

#include "backends/api/status.h"
#include "mock/sim/sim_world.h"

namespace resmem::sim {

struct DriverRange {
  uint64_t phys = 0;
  uint64_t size = 0;
};

// OK when the driver may serve `range`; otherwise an errno status per the table above. `served`
// are the ranges of devices already loaded.
Status CheckDriverRange(const SimWorld& world, const DriverRange& range,
                        const std::vector<DriverRange>& served);

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_REGION_RANGE_CHECK_H_
