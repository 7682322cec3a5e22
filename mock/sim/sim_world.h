// One simulated machine shared by the sim Platform, Region and Gpu: the spec, the booted kernel,
// sparse physical memory (content exists only where written, so 188 GB costs nothing), the
// process's page tables, the virtual clock and the fault injector.
#ifndef RESMEM_MOCK_SIM_SIM_WORLD_H_
#define RESMEM_MOCK_SIM_SIM_WORLD_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/api/clock.h"
#include "backends/api/platform.h"
#include "backends/fault/fault_injector.h"
#include "mock/machine/machine.h"
#include "mock/machine/physical_memory.h"

namespace resmem::sim {

struct SimWorld {
  MachineSpec spec;
  BootedKernel kernel;
  std::shared_ptr<VirtualClock> clock;
  std::shared_ptr<FaultInjector> faults;
  PhysicalMemory memory;      // sparse, with holes where the firmware has no RAM
  uint64_t next_user_va = 0x7f0000000000ull;  // bump allocator for simulated mappings
  std::vector<std::string> dmesg;             // what the simulated kernel printed

  // Reserves `length` bytes of user virtual address space, 2 MiB aligned.
  uint64_t AllocateVa(uint64_t length);
};

// Boots the spec and builds the world. Fails with the boot error (a malformed command line).
Result<std::shared_ptr<SimWorld>> MakeSimWorld(const MachineSpec& spec, uint64_t seed);

// The simulated Platform over a world: renders its texts, allocates simulated pageable memory
// (first touch charged per page), and costs memcpy by the memory types at both ends.
std::unique_ptr<Platform> MakeSimPlatform(std::shared_ptr<SimWorld> world);

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_SIM_SIM_WORLD_H_
