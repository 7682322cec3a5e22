// Load-time checks of the simulated driver: the list kmod/resmem.c applies (check_and_claim), in
// its order and with its errnos, so the driver never becomes a /dev/mem. Each refusal has its own
// errno and a message naming the problem and the way out; the driver prints it to dmesg.
//
//   check (in this order)                                  errno
//   size is 0                                              ERANGE
//   phys + size wraps, or ends past the CPU's address      EOVERFLOW
//     width (MachineSpec::phys_addr_bits)
//   phys or size not a multiple of 4 KiB                   EDOM
//   intersects System RAM the booted kernel manages        EPERM   (would hand out the
//                                                                   kernel's own pages)
//   starts below 1 MiB (legacy BIOS/VGA/ROM area)          ENXIO
//   not entirely inside ranges the kernel marked Reserved  EADDRNOTAVAIL
//     (memmap=nn$ss, firmware-reserved e820 entries)
//   overlaps a range an earlier device already serves      EBUSY   (request_mem_region)
//   some part has no RAM behind it (MMIO window / hole)    ENXIO   (FACTS.md: the kernel
//                                                                   accepts memmap= over the PCI
//                                                                   hole and reads return 0)
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
