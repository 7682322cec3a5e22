// The simulator at scale: a sweep of generated cases (reservation sizes x MTRR layouts x driver
// profiles) on seed 000's machine. Each case boots the machine with `mem=4G memmap=NG$4G`, opens
// the simulated driver's device, maps the whole reservation, and registers 16 MiB of it with the
// simulated GPU; what each step must show comes from the rules the kernel and the CUDA driver
// follow (sweep.cc, ExpectedOutcome), written independently of the model, and the runner judges
// every step as it judges a scenario file.
#ifndef RESMEM_ENGINE_SUITE_SWEEP_H_
#define RESMEM_ENGINE_SUITE_SWEEP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "backends/api/gpu.h"
#include "backends/api/region.h"
#include "engine/runner/runner.h"
#include "engine/scenario/scenario.h"
#include "mock/machine/machine.h"

namespace resmem::engine {

// One MTRR layout: the write-back coverage a BIOS programs from address 0 (as power-of-two
// variable ranges, largest first: the hardware wants each range aligned to its size), plus the
// uncached PCI window [3 GiB, 4 GiB) that every layout keeps, as seed 000's BIOS does.
struct MtrrLayout {
  std::string name;        // "wb-80G"
  uint64_t wb_bytes = 0;   // write-back coverage from 0
  std::vector<sim::MtrrRange> ranges;
};

// One driver profile: the simulated driver's mapping mode and cache type, the CUDA profile, and
// the flags the program registers with.
struct DriverProfile {
  std::string name;  // "pfnmap/wb/cuda-13.0-r580/iomemory"
  MapMode mode = MapMode::kPfnmap;
  CacheType cache = CacheType::kWriteBack;
  std::string cuda_profile = "cuda-13.0-r580";
  bool iomemory = false;  // cudaHostRegisterIoMemory
};

struct SweepCase {
  uint64_t reservation_bytes = 0;  // memmap=NG$4G
  const MtrrLayout* layout = nullptr;
  const DriverProfile* profile = nullptr;
  std::string Label() const;  // "res=77G mtrr=wb-80G drv=pfnmap/wb/cuda-4.1-r285/default"
};

// What a case must show: the mapping's memory type and the registration's error (empty: success).
struct ExpectedOutcome {
  std::string memory_type;     // "WB", "WC", "UC-"
  std::string register_error;  // CUDA error name in the profile's era, "" for success
};

struct SweepSpace {
  std::vector<uint64_t> reservations;
  std::vector<MtrrLayout> layouts;
  std::vector<DriverProfile> profiles;
  size_t size() const { return reservations.size() * layouts.size() * profiles.size(); }
  // Case i of the space, reservations varying fastest.
  SweepCase At(size_t i) const;
};

// The standard space: 28 reservation sizes (1-188 GiB) x 20 layouts (WB coverage 8-192 GiB) x
// 18 profiles (pfnmap|pages x wb|wc|uc x r285 default, r580 default, r580 iomemory) = 10,080.
SweepSpace StandardSweepSpace();

ExpectedOutcome ExpectedOutcomeOf(const SweepCase& c);

// The case as a scenario (kind "check"), with the expectations of ExpectedOutcomeOf. `machine` is
// seed 000's preset, loaded once by the caller.
scenario::Scenario MakeSweepScenario(const SweepCase& c, const sim::MachineSpec& machine);

struct SweepTotals {
  size_t cases = 0, passed = 0, failed = 0;
  std::vector<std::string> failures;  // the first few, with the step that failed
};

// Runs cases [first, first + count) of the space on the simulator.
Result<SweepTotals> RunSweep(const SweepSpace& space, size_t first, size_t count);

}  // namespace resmem::engine

#endif  // RESMEM_ENGINE_SUITE_SWEEP_H_
