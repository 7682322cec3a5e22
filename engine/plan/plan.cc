// The reservation planner. Each placement rule cites where it comes from.
#include "engine/plan/plan.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <sstream>

#include "mock/machine/cmdline.h"
#include "mock/machine/e820_table.h"
#include "mock/machine/grub.h"
#include "mock/machine/module_policy.h"
#include "nlohmann/json.hpp"
#include "backends/api/memory.h"

namespace resmem::engine {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;
constexpr uint64_t k4G = 4 * kGiB;
constexpr uint64_t kPage = 4096;

// Below 4 GiB the kernel image lives from CONFIG_PHYSICAL_START (0x1000000, arch/x86/Kconfig)
// with its decompression buffer and early page tables after it: the plan keeps [0, 128 MiB)
// free. KASLR moves the image but avoids memmap= ranges itself
// (arch/x86/boot/compressed/kaslr.c, mem_avoid_memmap), so only the default place matters.
constexpr uint64_t kKernelFloor = 128 * kMiB;
// GRUB loads the initrd as high as it can below the kernel's initrd_addr_max (0x7fffffff for
// boot protocol 2.03+, Documentation/x86/boot.rst; grub-core/loader/i386/linux.c,
// grub_cmd_initrd, relocator preference "high"): the plan keeps 512 MiB below
// min(2 GiB, end of that RAM) free of the reservation.
constexpr uint64_t kInitrdCeiling = 2 * kGiB;
constexpr uint64_t kInitrdZone = 512 * kMiB;

std::string MemRange(uint64_t start, uint64_t end) {
  char b[64];
  std::snprintf(b, sizeof b, "[mem 0x%016" PRIx64 "-0x%016" PRIx64 "]", start, end - 1);
  return b;
}

uint64_t AlignUp(uint64_t v, uint64_t a) {
  const uint64_t r = v % a;
  return r == 0 ? v : (v + (a - r) < v ? UINT64_MAX : v + (a - r));
}

struct Interval {
  uint64_t start, end;  // exclusive
};

// Removes [cut_start, cut_end) from every interval.
std::vector<Interval> Subtract(const std::vector<Interval>& in, uint64_t cut_start,
                               uint64_t cut_end) {
  std::vector<Interval> out;
  for (const auto& i : in) {
    if (cut_end <= i.start || cut_start >= i.end) {
      out.push_back(i);
      continue;
    }
    if (i.start < cut_start) out.push_back({i.start, cut_start});
    if (cut_end < i.end) out.push_back({cut_end, i.end});
  }
  return out;
}

// What each argument of the kernel's command line does to the memory map, as the model's boot
// read it (sim::Boot, BootedKernel::memory_options: the one reader of mem=/memmap= that the
// simulator, the doctor and import use too), by its position on the line. For the plan a limit
// (mem=nn, or a memmap= without a type, which acts as mem=nn: e820.c parse_memmap_one; the
// unescaped GRUB "memmap=8GG" is one) is always replaced, since memmap=nn$ss alone reserves and
// the kernel keeps every other byte (seed 002's remedy); a reservation (memmap=nn$ss) is kept
// and planned around unless the user asks to replace it. memmap=nn!ss, @ss, #ss, %ss, exactmap,
// an option the kernel refused and one it never read are neither and stay.
struct OptionRole {
  bool limit = false;
  bool reservation = false;
};
std::map<int, OptionRole> RolesOf(const sim::BootedKernel& booted) {
  std::map<int, OptionRole> roles;
  using Action = sim::MemoryOptionOutcome::Action;
  for (const auto& o : booted.memory_options) {
    if (!o.applied || o.rejected) continue;
    OptionRole& role = roles[o.position];
    role.limit = role.limit || o.action == Action::kLimit;
    role.reservation = role.reservation || (o.action == Action::kAdd && o.type == sim::E820Type::kReserved);
  }
  return roles;
}

// crashkernel=SIZE@OFFSET pins a range (kernel/crash_core.c, parse_crashkernel_simple);
// crashkernel=SIZE and the range syntax let the kernel pick from memblock, which never hands
// out e820-reserved memory, so only the pinned form can collide.
std::optional<Interval> PinnedCrashKernel(const std::vector<sim::KernelOption>& options) {
  for (const auto& o : options) {
    if (o.key != "crashkernel") continue;
    const auto size = sim::MemParse(o.value);
    if (size.consumed == 0 || size.consumed >= o.value.size() || o.value[size.consumed] != '@')
      continue;
    const auto at = sim::MemParse(o.value.substr(size.consumed + 1));
    if (at.consumed == 0) continue;
    return Interval{at.value, at.value + size.value};
  }
  return std::nullopt;
}

// Names what keeps [start, end) from being write-back under the MTRRs, or "" when it is WB (the
// model's reading, sim::MtrrWriteBackOver, which the simulator and the doctor use too).
std::string MtrrBlocker(const sim::MachineSpec& m, uint64_t start, uint64_t end) {
  const sim::MtrrCoverage c = sim::MtrrWriteBackOver(m.mtrr, start, end);
  return c.write_back ? "" : c.detail;
}

// Start addresses worth trying in [lo, hi) for `size` bytes: the first aligned one, and the
// first aligned one after every MTRR edge (a type can only change there).
std::vector<uint64_t> CandidateStarts(const sim::MachineSpec& m, const Interval& iv,
                                      uint64_t size, uint64_t align) {
  std::vector<uint64_t> edges = {iv.start};
  for (const auto& r : m.mtrr.variable) {
    edges.push_back(r.base);
    edges.push_back(r.base + r.size);
  }
  std::vector<uint64_t> out;
  for (uint64_t e : edges) {
    if (e < iv.start || e >= iv.end) continue;
    const uint64_t s = AlignUp(e, align);
    if (s != UINT64_MAX && s + size > s && s + size <= iv.end) out.push_back(s);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

std::string MemparseSpelling(uint64_t bytes) {
  // memparse() suffixes are binary (lib/cmdline.c): the largest that divides exactly.
  static const struct {
    char suffix;
    int shift;
  } kUnits[] = {{'T', 40}, {'G', 30}, {'M', 20}, {'K', 10}};
  if (bytes == 0) return "0";
  for (const auto& u : kUnits) {
    const uint64_t unit = 1ull << u.shift;
    if (bytes % unit == 0) return std::to_string(bytes >> u.shift) + u.suffix;
  }
  return HexAddress(bytes);
}

namespace {

// The modprobe.d line. A locked-down kernel refuses the hardware parameter ranges= (kernel/params.c
// param_check_unsafe; mock/machine/module_policy.h): there the line has none, and a warning says
// why; the driver then serves what memmap= reserved, which is the planned range.
std::string ModprobeLine(const sim::MachineSpec& machine, const std::string& cmdline,
                         const std::string& range, const std::string& mode,
                         std::vector<std::string>* warnings) {
  if (machine.module_policy.described) {
    const sim::ModuleKernel k = sim::ReadModulePolicy(cmdline, machine.module_policy);
    if (k.lockdown_lsm && k.lockdown >= LockdownLevel::kIntegrity) {
      warnings->push_back(std::string("the kernel is locked down (") + LockdownWord(k.lockdown) + ", by " +
                          k.lockdown_by + "): it refuses ranges=, so the modprobe.d line has none; "
                          "the driver serves the memmap= reservation by itself");
      return "options resmem mode=" + mode + " cache=wb";
    }
  }
  return "options resmem ranges=" + range + " mode=" + mode + " cache=wb";
}

}  // namespace

namespace {

Status CheckRequest(const PlanRequest& req) {
  if (req.size == 0) return Status::InvalidArgument("the size to reserve is 0; give e.g. 16G");
  if (req.size % kPage != 0)
    return Status::InvalidArgument("the size " + std::to_string(req.size) +
                                   " is not a multiple of 4 KiB pages; round it, e.g. " +
                                   MemparseSpelling(AlignUp(req.size, kPage)));
  if (req.at && *req.at % kPage != 0)
    return Status::InvalidArgument("--at " + HexAddress(*req.at) +
                                   " is not page-aligned; the kernel reserves whole pages");
  if (req.at && *req.at > UINT64_MAX - req.size)  // its end, at + size, would not fit 64 bits
    return Status::InvalidArgument("--at " + HexAddress(*req.at) + " for " + FormatSize(req.size) +
                                   ": the range would end at or past 2^64, the end of the 64-bit "
                                   "address space; give a lower --at or a smaller size");
  if (req.align != 0 && (req.align % kPage != 0 || (req.align & (req.align - 1)) != 0))
    return Status::InvalidArgument("--align " + FormatSize(req.align) +
                                   " is not a power of two of 4 KiB or more; give e.g. 2M or 1G "
                                   "(or leave --align out: 1G for 1 GiB and more, else 2M)");
  if (req.dma_bits < 32 || req.dma_bits > 64)
    return Status::InvalidArgument("--dma-bits " + std::to_string(req.dma_bits) +
                                   " is outside 32..64");
  return Status::Ok();
}

// The command line without the options a plan replaces: the line the kernel received (GRUB's
// expansion done), each argument as the model's boot read it. Limits go (memmap= alone
// reserves); reservations stay unless --replace.
std::string KeptCmdline(const sim::BootedKernel& as_is, const std::vector<sim::KernelOption>& options,
                        const PlanRequest& req, ReservationPlan& plan) {
  std::map<int, OptionRole> roles = RolesOf(as_is);
  std::string kept;
  for (const auto& o : options) {
    const OptionRole role = roles[o.position];
    if ((role.limit && !role.reservation) || (role.reservation && req.replace_reservations)) {
      plan.replaced.push_back(o.raw);
      continue;
    }
    if (role.reservation)
      plan.reasons.push_back("keeps the reservation of " + o.raw +
                             " (--replace drops it and plans anew)");
    kept += (kept.empty() ? "" : " ") + o.raw;
  }
  return kept;
}

// Usable RAM of the kernel as booted without a reservation: e820 "usable" entries only, so
// holes, MMIO windows and firmware-reserved ranges are never proposed (e820.c types); less the
// first MiB, a pinned crashkernel=, the kernel and initrd below 4 GiB; on the side of 4 GiB the
// device and the RAM decide.
std::vector<Interval> FreeRam(const sim::MachineSpec& machine, const sim::BootedKernel& booted,
                              const std::vector<sim::KernelOption>& options, const PlanRequest& req,
                              ReservationPlan& plan) {
  std::vector<Interval> free;
  for (const auto& e : booted.e820)
    if (e.type == sim::E820Type::kRam) free.push_back({e.start, e.end});
  for (const auto& w : machine.mmio) free = Subtract(free, w.start, w.end);
  free = Subtract(free, 0, kMiB);  // the real-mode first MiB (BIOS data, EBDA, trampoline)
  plan.reasons.push_back("only usable RAM of the booted kernel's e820 map, never below 1 MiB");
  if (auto crash = PinnedCrashKernel(options)) {
    free = Subtract(free, crash->start, crash->end);
    plan.reasons.push_back("clear of crashkernel= " + MemRange(crash->start, crash->end));
  }
  uint64_t high_ram = 0;
  for (const auto& i : free) high_ram += i.end > k4G ? i.end - std::max(i.start, k4G) : 0;
  const bool below_4g = req.dma_bits <= 32 || (high_ram < req.size && !req.at);
  if (below_4g || (req.at && *req.at < k4G)) {
    uint64_t low_top = 0;
    for (const auto& i : free)
      if (i.start < kInitrdCeiling) low_top = std::max(low_top, std::min(i.end, kInitrdCeiling));
    free = Subtract(free, 0, kKernelFloor);
    if (low_top > kInitrdZone) free = Subtract(free, low_top - kInitrdZone, low_top);
    plan.reasons.push_back("below 4 GiB: clear of the kernel image " + MemRange(0, kKernelFloor) +
                           " and of the initrd's place below " + HexAddress(low_top));
  }
  if (req.dma_bits <= 32) {
    free = Subtract(free, k4G, UINT64_MAX);
    plan.reasons.push_back("below 4 GiB: the device's DMA mask is 32 bits");
  } else if (!req.at && high_ram >= req.size) {
    free = Subtract(free, 0, k4G);
    plan.reasons.push_back(
        "above 4 GiB: below it are the PCI hole, the kernel, the initrd and ZONE_DMA32");
  }
  return free;
}

// What the system keeps: refused when the reservation would leave less than --keep.
Status CheckWhatIsKept(const sim::BootedKernel& booted, const PlanRequest& req, ReservationPlan& plan) {
  const uint64_t usable = booted.usable_ram;
  const uint64_t keep = req.keep ? *req.keep : std::min<uint64_t>(4 * kGiB, usable / 2);
  if (usable <= keep || usable - keep < 2 * kMiB)
    return Status::Error(kFailedPrecondition,
                         "the kernel has only " + FormatSize(usable) + " of usable RAM with this "
                         "command line, less than 2 MiB above the " + FormatSize(keep) + " kept for the "
                         "system: nothing can be reserved (check the command line's mem= and "
                         "memmap=exactmap options, or lower --keep)");
  if (req.size > usable || usable - req.size < keep)
    return Status::Error(kFailedPrecondition,
        "reserving " + FormatSize(req.size) + " leaves " +
        (req.size > usable ? std::string("nothing") : FormatSize(usable - req.size)) +
        " of the " + FormatSize(usable) + " usable RAM, less than the " + FormatSize(keep) +
        " kept for the system; reserve at most " +
        MemparseSpelling(usable > keep ? (usable - keep) / (2 * kMiB) * (2 * kMiB) : 0) +
        " or lower --keep");
  plan.usable_after = usable - req.size;
  return Status::Ok();
}

// --at: that start exactly, or why not (an MMIO window, not usable RAM, or a rule of the plan).
Result<uint64_t> CheckAt(const sim::MachineSpec& machine, const sim::BootedKernel& booted,
                         const std::vector<Interval>& free, const PlanRequest& req, const ReservationPlan& plan) {
  const uint64_t at = *req.at, at_end = at + req.size;
  for (const auto& i : free)
    if (at >= i.start && at_end <= i.end && at_end > at) return at;
  std::string what;
  for (const auto& w : machine.mmio)
    if (what.empty() && at < w.end && at_end > w.start)
      what = "over the MMIO window " + w.name + " " + MemRange(w.start, w.end);
  if (what.empty() && sim::E820BytesOfType(booted.e820, at, at_end, sim::E820Type::kRam) != req.size)
    what = "not all usable RAM of the booted kernel (a hole, firmware-reserved memory or "
           "past the end of RAM)";
  if (what.empty()) what = "inside what the plan keeps free (" + plan.reasons.back() + ")";
  return Status::Error(kFailedPrecondition, "--at " + HexAddress(at) + " for " + FormatSize(req.size) + ": " +
                                                MemRange(at, at_end) + " is " + what +
                                                "; run without --at to get a place that fits");
}

// The starts to try, lowest first: aligned as asked (1 GiB falls back to 2 MiB with a warning);
// none says the most that would fit.
Result<std::vector<uint64_t>> StartsToTry(const sim::MachineSpec& machine, const std::vector<Interval>& free,
                                          const PlanRequest& req, ReservationPlan& plan) {
  const uint64_t align = req.align ? req.align : (req.size >= kGiB ? kGiB : 2 * kMiB);
  std::vector<uint64_t> starts;
  for (const auto& i : free)
    for (uint64_t s : CandidateStarts(machine, i, req.size, align)) starts.push_back(s);
  if (starts.empty() && align > 2 * kMiB) {
    for (const auto& i : free)
      for (uint64_t s : CandidateStarts(machine, i, req.size, 2 * kMiB)) starts.push_back(s);
    if (!starts.empty()) plan.warnings.push_back("no 1 GiB-aligned place fits; the range is 2 MiB-aligned");
  }
  if (!starts.empty()) return starts;
  uint64_t largest = 0;
  for (const auto& i : free) largest = std::max(largest, i.end - i.start);
  const uint64_t most = largest / (2 * kMiB) * (2 * kMiB);
  std::string why;
  for (const auto& r : plan.reasons) why += "; " + r;
  if (most == 0)
    return Status::Error(kFailedPrecondition,
                         "no usable RAM is left for a reservation on this machine once the "
                         "rules are kept" + why +
                         " (a machine this small has no room beside its kernel and initrd)");
  return Status::Error(kFailedPrecondition,
                       "no contiguous usable RAM of " + FormatSize(req.size) + " left after the rules" + why +
                           "; the largest piece is " + FormatSize(largest) + ": reserve at most " +
                           MemparseSpelling(most));
}

// The largest write-back place in the free RAM, 2 MiB-aligned: {size, start}. The MTRR type is
// constant between edges (range bounds and MTRR bounds), so pieces suffice.
std::pair<uint64_t, uint64_t> LargestWriteBackPlace(const sim::MachineSpec& machine, const std::vector<Interval>& free) {
  uint64_t best = 0, best_at = 0;
  for (const auto& i : free) {
    std::vector<uint64_t> edges = {i.start, i.end};
    for (const auto& r : machine.mtrr.variable)
      for (uint64_t e : {r.base, r.base + r.size})
        if (e > i.start && e < i.end) edges.push_back(e);
    std::sort(edges.begin(), edges.end());
    uint64_t run_start = i.start;
    bool in_run = false;
    for (size_t k = 0; k + 1 < edges.size(); ++k) {
      const bool wb = sim::MtrrTypeAt(machine.mtrr, edges[k]) == MemoryType::kWriteBack;
      if (wb && !in_run) run_start = edges[k];
      in_run = wb;
      const bool run_ends = in_run && (k + 2 == edges.size() ||
          sim::MtrrTypeAt(machine.mtrr, edges[k + 1]) != MemoryType::kWriteBack);
      if (!run_ends) continue;
      const uint64_t s = AlignUp(run_start, 2 * kMiB);
      const uint64_t e = edges[k + 1] / (2 * kMiB) * (2 * kMiB);
      if (e > s && e - s > best) best = e - s, best_at = s;
      in_run = false;
    }
  }
  return {best, best_at};
}

// The first start whose whole range the MTRRs make write-back; none names the first blocker and
// the largest write-back place.
Status ChooseWriteBackStart(const sim::MachineSpec& machine, const std::vector<Interval>& free,
                            const std::vector<uint64_t>& starts, const PlanRequest& req, ReservationPlan& plan) {
  std::string first_blocker;
  for (uint64_t s : starts) {
    const std::string blocker = MtrrBlocker(machine, s, s + req.size);
    if (blocker.empty()) {
      plan.start = s;
      break;
    }
    if (first_blocker.empty()) first_blocker = MemRange(s, s + req.size) + ": " + blocker;
  }
  if (!first_blocker.empty() && plan.start == 0) {
    const auto [best, best_at] = LargestWriteBackPlace(machine, free);
    return Status::Error(kFailedPrecondition,
        "no place for " + FormatSize(req.size) + " is write-back: " + first_blocker +
        ", so every mapping of it is UC- and runs at uncached speed (seed 000's cliff)" +
        (best ? "; the largest write-back place is " + FormatSize(best) + " at " + HexAddress(best_at) +
                    " (resmem plan " + MemparseSpelling(best) + ")"
              : std::string("")) +
        "; or have the BIOS set MTRRs that cover all RAM");
  }
  if (!first_blocker.empty()) plan.reasons.push_back("moved past " + first_blocker);
  plan.reasons.push_back("write-back by the MTRRs over the whole range (pat_x_mtrr_type)");
  plan.memory_type = sim::EffectiveMemoryType(machine, plan.start, plan.start + req.size, MemoryType::kWriteBack);
  return Status::Ok();
}

// The spelling that reserves on this machine's kernel: memmap=nn$ss everywhere since 2.5.66;
// before that (2.4, early 2.5) the same forms were written mem=nn$ss (mock/machine/
// linux_rules.h). Each is booted on the simulator: what is printed must be what the kernel
// does with it. Early parameters end at a bare "--" (kernel/params.c parse_args: what follows
// goes to init), so the option goes before it. Returns the kernel booted with the plan.
Result<sim::BootedKernel> SpellAndBoot(const sim::MachineSpec& machine, const sim::MachineSpec& base,
                                       const std::string& kept, const std::string& range, ReservationPlan& plan) {
  const size_t dashdash = (" " + kept + " ").find(" -- ");
  std::string tried;
  for (const char* key : {"memmap=", "mem="}) {
    plan.option = key + range;
    plan.kernel_cmdline = dashdash == std::string::npos
                              ? kept + (kept.empty() ? "" : " ") + plan.option
                              : kept.substr(0, dashdash) + plan.option + " " + kept.substr(dashdash);
    sim::MachineSpec after = base;
    after.cmdline = plan.kernel_cmdline;
    RESMEM_ASSIGN_OR_RETURN(sim::BootedKernel k, sim::Boot(after));
    for (const auto& r : k.reservations)
      if (r.start == plan.start && r.end == plan.start + plan.size && r.over_ram && !r.over_hole) {
        if (plan.option.rfind("mem=", 0) == 0)
          plan.warnings.push_back("this kernel predates memmap=: the reservation is written " +
                                  plan.option + " (Linux 2.4 and 2.5 before 2.5.66)");
        return k;
      }
    tried += (tried.empty() ? "" : " nor ") + plan.option;
  }
  return Status::Error(kFailedPrecondition,
                       "this machine's kernel (" +
                           (machine.kernel_version.empty() ? std::string("newest rules")
                                                           : "Linux " + machine.kernel_version) +
                           ") reserves with neither " + tried + ": booted on the simulator, no reservation appears");
}

// The escaping each file needs (mock/machine/grub.h: dash sourcing /etc/default/grub, then
// GRUB's lexer reading grub.cfg), checked by TraceKernelCmdline in the tests.
Status SpellGrubLines(ReservationPlan& plan) {
  RESMEM_ASSIGN_OR_RETURN(sim::GrubSpelling added, sim::SpellKernelOptionsForGrub(plan.option));
  plan.etc_default_grub = added.etc_default_grub_line;
  std::string cfg_options;
  for (const auto& o : sim::SplitKernelCmdline(plan.kernel_cmdline)) {
    if (o.key == "BOOT_IMAGE") continue;  // GRUB's loader adds it itself (grub.h)
    cfg_options += (cfg_options.empty() ? "" : " ") + o.raw;
  }
  auto whole = sim::SpellKernelOptionsForGrub(cfg_options);
  if (whole.ok()) {
    plan.grub_cfg = whole->grub_cfg;
    return Status::Ok();
  }
  plan.grub_cfg = "(the other options): " + added.grub_cfg;
  plan.warnings.push_back("the command line has options GRUB cannot pass unchanged (" +
                          whole.status().message() + "); add " + added.grub_cfg + " to the linux line by hand");
  return Status::Ok();
}

}  // namespace

Result<ReservationPlan> PlanReservation(const sim::MachineSpec& machine, const PlanRequest& req) {
  RESMEM_RETURN_IF_ERROR(CheckRequest(req));
  ReservationPlan plan;
  plan.size = req.size;
  RESMEM_ASSIGN_OR_RETURN(const sim::BootedKernel as_is, sim::Boot(machine));
  const auto options = sim::SplitKernelCmdline(as_is.cmdline);
  const std::string kept = KeptCmdline(as_is, options, req, plan);
  sim::MachineSpec base = machine;
  base.cmdline = kept;
  base.cmdline_source = "kernel";
  RESMEM_ASSIGN_OR_RETURN(sim::BootedKernel booted, sim::Boot(base));
  const std::vector<Interval> free = FreeRam(machine, booted, options, req, plan);
  RESMEM_RETURN_IF_ERROR(CheckWhatIsKept(booted, req, plan));
  std::vector<uint64_t> starts;
  if (req.at) {
    RESMEM_ASSIGN_OR_RETURN(uint64_t at, CheckAt(machine, booted, free, req, plan));
    starts.push_back(at);
  } else {
    RESMEM_ASSIGN_OR_RETURN(starts, StartsToTry(machine, free, req, plan));
  }
  RESMEM_RETURN_IF_ERROR(ChooseWriteBackStart(machine, free, starts, req, plan));
  const std::string range = MemparseSpelling(req.size) + "$" + MemparseSpelling(plan.start);
  RESMEM_ASSIGN_OR_RETURN(sim::BootedKernel k, SpellAndBoot(machine, base, kept, range, plan));
  RESMEM_RETURN_IF_ERROR(SpellGrubLines(plan));
  plan.modprobe = ModprobeLine(machine, plan.kernel_cmdline, range, req.mode, &plan.warnings);
  plan.boot_lines = k.dmesg;
  if (plan.start < k4G)
    plan.warnings.push_back("the range lies below 4 GiB, where firmware holes and the initrd "
                            "are: check `resmem doctor` after the first boot");
  return plan;
}

std::string RenderPlan(const sim::MachineSpec& machine, const ReservationPlan& p) {
  std::ostringstream o;
  o << "resmem plan: " << FormatSize(p.size) << " on " << machine.name << "\n"
    << "  range          " << MemRange(p.start, p.start + p.size) << ", "
    << MemoryTypeName(p.memory_type) << "\n"
    << "  kernel option  " << p.option << "\n"
    << "  /etc/default/grub (add to the line, then run update-grub or grub2-mkconfig):\n"
    << "    " << p.etc_default_grub << "\n"
    << "  grub.cfg (the linux line's arguments, if you edit it by hand):\n"
    << "    " << p.grub_cfg << "\n"
    << "  /proc/cmdline after the reboot:\n"
    << "    " << p.kernel_cmdline << "\n"
    << "  /etc/modprobe.d/resmem.conf:\n"
    << "    " << p.modprobe << "\n";
  if (!p.replaced.empty()) {
    o << "  replaces      ";
    for (const auto& r : p.replaced) o << " " << r;
    o << "\n";
  }
  o << "  the system keeps " << FormatSize(p.usable_after) << " of usable RAM\n";
  o << "why there:\n";
  for (const auto& r : p.reasons) o << "  - " << r << "\n";
  for (const auto& w : p.warnings) o << "warning: " << w << "\n";
  o << "booted on the simulator (" << (machine.kernel_version.empty() ? "newest rules"
                                                                      : "Linux " + machine.kernel_version)
    << "):\n";
  for (const auto& l : p.boot_lines)
    if (l.rfind("user", 0) == 0) o << "  " << l << "\n";
  return o.str();
}

std::string PlanJson(const ReservationPlan& p) {
  nlohmann::json j;
  j["start"] = p.start;
  j["size"] = p.size;
  j["memory_type"] = MemoryTypeName(p.memory_type);
  j["option"] = p.option;
  j["kernel_cmdline"] = p.kernel_cmdline;
  j["etc_default_grub"] = p.etc_default_grub;
  j["grub_cfg"] = p.grub_cfg;
  j["modprobe"] = p.modprobe;
  j["replaced"] = p.replaced;
  j["reasons"] = p.reasons;
  j["warnings"] = p.warnings;
  j["usable_after"] = p.usable_after;
  j["boot"] = p.boot_lines;
  // Text from the user's paste or command line may not be UTF-8: replaced (U+FFFD), never a throw.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace resmem::engine
