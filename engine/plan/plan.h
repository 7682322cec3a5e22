// resmem plan: proposes a reservation for a machine (a preset, a machine file, or this machine
// read through the real Platform) and prints the exact lines that make it: the kernel option,
// the /etc/default/grub and grub.cfg spellings, the kernel command line that results, and the
// module's parameter line. The proposal is then booted on the simulator, so what is printed is
// what the model of that machine's kernel does with it.
//
// The rules (each with its source in plan.cc):
//   - only firmware RAM that the booted kernel still has as usable ("System RAM" in e820, after
//     the rest of the command line), never a hole, MMIO window or firmware-reserved range;
//   - never below 1 MiB; below 4 GiB only when asked (--dma-bits 32) or when there is no RAM
//     above, and then clear of the kernel image (loaded from 16 MiB) and of the top of low RAM
//     where boot loaders put the initrd;
//   - clear of a crashkernel=SIZE@OFFSET region;
//   - leaves `keep` bytes of usable RAM to the system;
//   - aligned (1 GiB where the machine allows, else 2 MiB: the module maps huge pages where
//     aligned);
//   - write-back over the whole range by the machine's MTRRs; when a candidate is not, the plan
//     names the MTRR that stops it and moves on, and says so.
#ifndef RESMEM_ENGINE_PLAN_PLAN_H_
#define RESMEM_ENGINE_PLAN_PLAN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backends/api/status.h"
#include "mock/machine/machine.h"

namespace resmem::engine {

struct PlanRequest {
  uint64_t size = 0;               // bytes to reserve (> 0)
  std::optional<uint64_t> at;      // --at: this start address exactly, or a reason why not
  std::optional<uint64_t> keep;    // usable RAM left to the system; default min(4 GiB, RAM / 2)
  int dma_bits = 64;               // the producing device's DMA mask: 32 keeps the range < 4 GiB
  uint64_t align = 0;              // 0: 1 GiB where the machine allows, else 2 MiB
  std::string mode = "pages";      // the module's mode= for the parameter line
  bool replace_reservations = false;  // drop the command line's memmap=nn$ss options (re-plan)
                                      // instead of keeping them and planning around them
};

struct ReservationPlan {
  uint64_t start = 0;
  uint64_t size = 0;
  MemoryType memory_type = MemoryType::kUnknown;  // what a WB mapping of it gets (MTRR x PAT)
  std::string option;             // "memmap=188G$4G"
  std::string kernel_cmdline;     // the machine's command line without mem= (and, with
                                  // replace_reservations, its memmap=nn$ss), plus `option`
  std::string etc_default_grub;   // GRUB_CMDLINE_LINUX="..." as written in /etc/default/grub
  std::string grub_cfg;           // the grub.cfg `linux` line's arguments
  std::string modprobe;           // options resmem ranges=... (modprobe.d); no ranges= where the
                                  // machine's kernel is locked down (it refuses them)
  std::vector<std::string> replaced;  // options of the old command line the plan drops
  std::vector<std::string> reasons;   // why this place: what it avoided, in order
  std::vector<std::string> warnings;  // what the user should know (a smaller size, < 4 GiB)
  std::vector<std::string> boot_lines;  // the simulator's dmesg after booting the plan
  uint64_t usable_after = 0;      // usable RAM the system keeps, bytes
};

// Plans a reservation on `machine` (its cmdline is the current command line). Errors:
// kInvalidArgument for a bad request (size 0, --at not page-aligned), kFailedPrecondition when
// nothing fits, each naming why and the way out (a smaller size, another --at, less --keep).
Result<ReservationPlan> PlanReservation(const sim::MachineSpec& machine, const PlanRequest& req);

// The human-readable plan, as `resmem plan` prints it, and its JSON.
std::string RenderPlan(const sim::MachineSpec& machine, const ReservationPlan& plan);
std::string PlanJson(const ReservationPlan& plan);

// "188G", "64M", "0x40001000": the shortest exact memparse() spelling of a size or address.
std::string MemparseSpelling(uint64_t bytes);

}  // namespace resmem::engine

#endif  // RESMEM_ENGINE_PLAN_PLAN_H_
