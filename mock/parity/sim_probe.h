// The parity probe (probe.h) on the simulated driver (mock/region), which has no file descriptor:
// its table of calls is SimDeviceFile (mock/region/sim_file.h) for open/read/write/lseek/fstat/
// ioctl, the driver's mappings for mmap, and HostMemory::Read/Write for loads and stores.
#ifndef RESMEM_MOCK_PARITY_SIM_PROBE_H_
#define RESMEM_MOCK_PARITY_SIM_PROBE_H_

#include <cstdint>
#include <string>

#include "backends/api/status.h"

namespace resmem::parity {

struct SimProbeOptions {
  std::string preset = "qemu-q35-5g";
  // The reservation the device serves: 64 MiB at 5 GiB, RAM on qemu-q35-5g.
  std::string reservation = "memmap=64M$0x140000000";
  std::string device = "/dev/resmem0";
  uint64_t seed = 1;
};

// Boots the preset with the reservation, loads the sim driver (pfnmap, cache wb, range checks:
// the production module's defaults) and returns the probe's transcript of the device.
Result<std::string> RunSimProbe(const SimProbeOptions& options = SimProbeOptions());

}  // namespace resmem::parity

#endif  // RESMEM_MOCK_PARITY_SIM_PROBE_H_
