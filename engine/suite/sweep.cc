#include "engine/suite/sweep.h"

#include <algorithm>

namespace resmem::engine {
namespace {

constexpr uint64_t kGiB = 1ull << 30;
constexpr uint64_t kReservationBase = 4 * kGiB;  // memmap=NG$4G, as seed 000

std::string Gib(uint64_t bytes) { return std::to_string(bytes / kGiB) + "G"; }

// An expectation as a file would write it (the runner prints `written`).
scenario::Expected<std::string> ExpectText(const std::string& s) {
  scenario::Expected<std::string> e;
  e.value = s;
  e.written = s;
  return e;
}

// Write-back from 0 as the hardware allows it: variable ranges are powers of two aligned to their
// size (Intel SDM vol. 3, 11.11.3), so a BIOS covers N bytes with the largest such ranges first.
MtrrLayout MakeLayout(uint64_t wb_bytes) {
  MtrrLayout l;
  l.name = "wb-" + Gib(wb_bytes);
  l.wb_bytes = wb_bytes;
  uint64_t base = 0;
  while (base < wb_bytes) {
    uint64_t size = 1ull << 63;
    while (size > wb_bytes - base || (base % size) != 0) size >>= 1;
    sim::MtrrRange r;
    r.base = base;
    r.size = size;
    r.type = MemoryType::kWriteBack;
    l.ranges.push_back(r);
    base += size;
  }
  sim::MtrrRange hole;  // the PCI window below 4 GiB, uncached (seed 000's /proc/mtrr)
  hole.base = 3 * kGiB;
  hole.size = kGiB;
  hole.type = MemoryType::kUncached;
  l.ranges.push_back(hole);
  return l;
}

}  // namespace

std::string SweepCase::Label() const {
  return "res=" + Gib(reservation_bytes) + " mtrr=" + layout->name + " drv=" + profile->name;
}

SweepCase SweepSpace::At(size_t i) const {
  SweepCase c;
  c.reservation_bytes = reservations[i % reservations.size()];
  i /= reservations.size();
  c.layout = &layouts[i % layouts.size()];
  i /= layouts.size();
  c.profile = &profiles[i % profiles.size()];
  return c;
}

SweepSpace StandardSweepSpace() {
  SweepSpace s;
  for (uint64_t g : {1, 2, 4, 6, 8, 12, 16, 24, 32, 40, 48, 56, 60, 62, 63, 64, 65, 72, 76, 77, 80,
                     96, 112, 124, 125, 128, 160, 188}) {
    s.reservations.push_back(g * kGiB);
  }
  for (uint64_t g : {8, 16, 32, 48, 64, 68, 72, 76, 80, 84, 88, 96, 112, 128, 136, 144, 160, 176,
                     184, 192}) {
    s.layouts.push_back(MakeLayout(g * kGiB));
  }
  for (MapMode mode : {MapMode::kPfnmap, MapMode::kPages}) {
    for (CacheType cache : {CacheType::kWriteBack, CacheType::kWriteCombining, CacheType::kUncached}) {
      for (int variant = 0; variant < 3; ++variant) {
        DriverProfile p;
        p.mode = mode;
        p.cache = cache;
        p.cuda_profile = variant == 0 ? "cuda-4.1-r285" : "cuda-13.0-r580";
        p.iomemory = variant == 2;
        p.name = std::string(MapModeName(mode)) + "/" + CacheTypeName(cache) + "/" +
                 p.cuda_profile + "/" + (p.iomemory ? "iomemory" : "default");
        s.profiles.push_back(p);
      }
    }
  }
  return s;
}

ExpectedOutcome ExpectedOutcomeOf(const SweepCase& c) {
  ExpectedOutcome e;
  // The mapping's memory type. A write-back request is WB only when the MTRRs make the whole
  // range WB, else UC- (arch/x86/mm/pat/memtype.c pat_x_mtrr_type, over the range the driver
  // remaps); write-combining is WC whatever the MTRRs say, and an uncached request is UC-
  // (pgprot_noncached: _PAGE_CACHE_MODE_UC_MINUS).
  switch (c.profile->cache) {
    case CacheType::kWriteBack:
      e.memory_type =
          kReservationBase + c.reservation_bytes <= c.layout->wb_bytes ? "WB" : "UC-";
      break;
    case CacheType::kWriteCombining: e.memory_type = "WC"; break;
    case CacheType::kUncached: e.memory_type = "UC-"; break;
  }
  // Registration of 16 MiB of the mapping (FACTS.md "The GPU machine", and seed 000):
  //  - a VM_IO|VM_PFNMAP mapping (pfnmap mode) has no struct pages for pin_user_pages: CUDA 4.1
  //    answered 30 cudaErrorUnknown (seed 000), driver 580 answers 1 cudaErrorInvalidValue;
  //    with cudaHostRegisterIoMemory driver 580 takes it (physically contiguous VM_IO|VM_PFNMAP);
  //  - pages mode has struct pages: plain registration succeeds; IoMemory on memory that is not
  //    one VM_IO|VM_PFNMAP VMA answers 1.
  const bool r285 = c.profile->cuda_profile == "cuda-4.1-r285";
  if (c.profile->mode == MapMode::kPfnmap) {
    if (!c.profile->iomemory) e.register_error = r285 ? "cudaErrorUnknown" : "cudaErrorInvalidValue";
  } else if (c.profile->iomemory) {
    e.register_error = "cudaErrorInvalidValue";
  }
  return e;
}

scenario::Scenario MakeSweepScenario(const SweepCase& c, const sim::MachineSpec& machine) {
  const ExpectedOutcome want = ExpectedOutcomeOf(c);
  scenario::Scenario s;
  s.file = "sweep";
  s.name = "sweep";
  s.title = "sweep case";
  s.kind = "check";
  s.case_label = c.Label();
  s.machine = machine;
  s.machine.cmdline = "mem=4G memmap=" + Gib(c.reservation_bytes) + "$4G";
  s.machine.mtrr.enabled = true;
  s.machine.mtrr.default_type = MemoryType::kUncached;
  s.machine.mtrr.variable = c.layout->ranges;
  s.driver.mode = c.profile->mode;
  s.driver.cache = c.profile->cache;
  s.cuda_profile = c.profile->cuda_profile;

  scenario::Step open;
  open.args = scenario::OpenStep{};
  open.file = s.file;
  scenario::Step map;
  scenario::MmapStep mmap_args;
  mmap_args.as = "res";  // the whole reservation
  map.args = mmap_args;
  map.file = s.file;
  map.expect.memory_type = ExpectText(want.memory_type);
  scenario::Step reg;
  scenario::RegisterStep reg_args;
  reg_args.span = "res";
  reg_args.length = 16ull << 20;
  reg_args.flags = c.profile->iomemory ? kRegisterIoMemory : kRegisterDefault;
  reg.args = reg_args;
  reg.file = s.file;
  if (!want.register_error.empty()) {
    scenario::Expected<scenario::ExpectedError> error;
    error.value.kind = scenario::ExpectedError::Kind::kCudaName;
    error.value.cuda_name = want.register_error;
    error.written = want.register_error;
    reg.expect.error = error;
  }
  s.steps = {open, map, reg};
  return s;
}

Result<SweepTotals> RunSweep(const SweepSpace& space, size_t first, size_t count) {
  RESMEM_ASSIGN_OR_RETURN(sim::MachineSpec machine, sim::MachinePreset("seed000-workstation"));
  SweepTotals t;
  const size_t end = std::min(space.size(), first + count);
  RunOptions options;  // the simulator
  for (size_t i = first; i < end; ++i) {
    const SweepCase c = space.At(i);
    const ScenarioResult r = RunScenario(MakeSweepScenario(c, machine), options);
    ++t.cases;
    if (r.verdict == ScenarioVerdict::kPassed) {
      ++t.passed;
      continue;
    }
    ++t.failed;
    if (t.failures.size() < 10) {
      std::string why = c.Label() + ": " + ScenarioVerdictName(r.verdict) + " " + r.reason;
      for (const auto& step : r.steps) {
        if (step.verdict == StepVerdict::kFail) {
          why += " [" + step.op + ": observed " + step.observed + " " +
                 (step.texts.count("memory_type") ? step.texts.at("memory_type") : "") +
                 ", expected " + step.expected + "]";
        }
      }
      t.failures.push_back(why);
    }
  }
  return t;
}

}  // namespace resmem::engine
