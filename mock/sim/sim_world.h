// One simulated machine shared by the sim Platform, Region and Gpu: the spec, the booted kernel,
// sparse physical memory (content exists only where written, so 188 GB costs nothing), the
// process's page tables, the virtual clock and the fault injector.
#ifndef RESMEM_MOCK_SIM_SIM_WORLD_H_
#define RESMEM_MOCK_SIM_SIM_WORLD_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/api/clock.h"
#include "backends/api/platform.h"
#include "backends/fault/fault_injector.h"
#include "backends/fault/rng.h"
#include "mock/machine/machine.h"
#include "mock/machine/physical_memory.h"

namespace resmem::sim {

// One live entry of the kernel's memtype tree (arch/x86/mm/pat/memtype.c): a physical range some
// mapping holds with a cache type. /sys/kernel/debug/x86/pat_memtype_list prints these.
struct MemtypeEntry {
  uint64_t id = 0;
  uint64_t start = 0;
  uint64_t end = 0;  // exclusive
  MemoryType type = MemoryType::kWriteBack;
};

struct SimWorld {
  MachineSpec spec;
  BootedKernel kernel;
  std::shared_ptr<VirtualClock> clock;
  std::shared_ptr<FaultInjector> faults;
  PhysicalMemory memory;      // sparse, with holes where the firmware has no RAM
  uint64_t next_user_va = 0x7f0000000000ull;  // bump allocator for simulated mappings
  std::vector<std::string> dmesg;             // what the simulated kernel printed
  // Random choices of the simulated machine (an ioremap address, ...), seeded by the run seed
  // (MakeSimWorld forks it from the seed, so fault probabilities draw from their own stream).
  DeterministicRng rng{0};
  int oops_count = 0;                         // "[#N]" of the next oops the kernel prints
  std::vector<MemtypeEntry> memtypes;         // live device mappings' memory types
  uint64_t next_memtype_id = 1;
  // Guards dmesg, next_user_va, rng, oops_count and memtypes: mappings of one world may be used
  // from several threads (the stream's producer and consumer).
  mutable std::mutex mu;

  // Reserves `length` bytes of user virtual address space, 2 MiB aligned. A 2 MiB guard gap
  // separates consecutive reservations, as unrelated mmaps rarely abut.
  uint64_t AllocateVa(uint64_t length);
  // Appends one kernel log line (thread-safe).
  void Log(std::string line);
  // A copy of the log so far (thread-safe).
  std::vector<std::string> DmesgSnapshot() const;
  // Adds/removes a memtype entry (thread-safe); Add returns the id to remove it with.
  uint64_t AddMemtype(uint64_t start, uint64_t end, MemoryType type);
  void RemoveMemtype(uint64_t id);
  // Next oops number, starting at 1 (thread-safe).
  int NextOops();
  // A draw from the world's RNG (thread-safe).
  uint64_t RandomBelow(uint64_t n);
};

// Boots the spec and builds the world. Fails with the boot error (a malformed command line).
// Physical memory has RAM behind every firmware e820 RAM entry (memmap=nn$ss only changes how the
// kernel uses RAM, the DIMMs stay); everything else is a hole.
Result<std::shared_ptr<SimWorld>> MakeSimWorld(const MachineSpec& spec, uint64_t seed);

// The simulated Platform over a world: renders its texts, allocates simulated pageable memory
// (first touch charged per page), and costs memcpy by the memory types at both ends.
//   ReadSource serves /proc/iomem, /proc/mtrr, /proc/cmdline, /proc/meminfo,
//   /sys/firmware/memmap, /proc/cpuinfo, /proc/version, "dmesg" (the kernel log: the boot's
//   map lines, then the drivers' messages, one per line) and, when PAT is enabled,
//   /sys/kernel/debug/x86/pat_memtype_list (the live device mappings); where the machine
//   describes them, the IOMMU's sysfs (mock/machine/iommu.h) and the module policy's files and
//   the installed module's signature (mock/machine/module_policy.h: modules_disabled, lockdown,
//   sig_enforce, the SecureBoot efivar, fw_platform_size, /proc/keys, "module-signature:resmem");
//   any other path is errno ENOENT naming the sources it has.
//   AllocPageable returns a SimHostMemory (mock/sim/sim_memory.h): anonymous, WB, private.
//   CopyHost consults fault point "host.memcpy" (address: the destination's virtual address)
//   with effects error/signal (returned), delay (charged), corrupt (one destination byte
//   flipped), short (only the first bytes arrive); charges
//   length / min(read rate of the source type with memcpy_load_bytes loads, write rate of the
//   destination type) + page_fault_us per first-touched page of an anonymous destination,
//   and returns those seconds.
std::unique_ptr<Platform> MakeSimPlatform(std::shared_ptr<SimWorld> world);

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_SIM_SIM_WORLD_H_
