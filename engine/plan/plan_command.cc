// `resmem plan SIZE`: where to reserve SIZE on a machine, and the exact lines that do it.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "engine/backend/backend_factory.h"
#include "engine/cli/command.h"
#include "engine/cli/options.h"
#include "engine/doctor/doctor.h"
#include "engine/doctor/record.h"
#include "engine/plan/plan.h"
#include "engine/scenario/scenario.h"

namespace resmem::cli {
namespace {

const char kUsage[] =
    "usage: resmem plan SIZE [options]\n"
    "  Proposes a reservation of SIZE (e.g. 188G) inside usable RAM: clear of holes, MMIO, the\n"
    "  kernel and initrd (below 4 GiB), a pinned crashkernel= and the first MiB; aligned; and\n"
    "  write-back by the MTRRs over all of it (or it names the MTRR that stops it). Prints the\n"
    "  kernel option, the /etc/default/grub and grub.cfg spellings with the escaping each needs,\n"
    "  the resulting kernel command line, and the module's modprobe.d line, then boots the\n"
    "  result on the simulator and shows the kernel's map.\n"
    "options:\n"
    "  --machine PRESET|FILE  plan for another machine: a preset (seed000-workstation, ...),\n"
    "                     a machine file, or what resmem import reads (a dmesg paste, ...);\n"
    "                     without it: this machine, read as `resmem doctor --record` reads it\n"
    "                     (run as root: /proc/iomem hides addresses from others)\n"
    "  --cmdline TEXT     the current kernel command line (default: the machine's)\n"
    "  --at ADDR          this start address exactly (e.g. 4G, 0x100000000), or say why not\n"
    "  --keep SIZE        usable RAM to leave to the system (default: min(4G, half the RAM))\n"
    "  --dma-bits N       the producing device's DMA mask (32: the range stays below 4 GiB)\n"
    "  --align SIZE       alignment of the start (default 1G for 1 GiB and more, else 2M)\n"
    "  --mode MODE        the module's mode= in the modprobe.d line: pages (default) or pfnmap\n"
    "  --replace          drop the command line's memmap=SIZE$START reservations and plan anew\n"
    "                     (default: keep them and plan around them; mem= is always dropped:\n"
    "                     memmap= alone reserves, and the kernel keeps every other byte)\n"
    "  --json FILE        also write the plan as JSON ('-' for stdout only)\n"
    "exit: 0 a plan, 1 nothing fits (the message says the largest that would), 2 bad input\n";

// This machine, through the real Platform: what `resmem doctor --record` would write, read back
// from a scratch folder that is removed afterwards.
Result<sim::MachineSpec> ThisMachine() {
  engine::BackendSpec spec;
  spec.name = "plan";
  spec.platform = "host";
  spec.region = "sim";
  spec.gpu = "sim";
  engine::PartContext ctx;
  RESMEM_ASSIGN_OR_RETURN(auto backend, engine::MakeBackend(spec, ctx));
  RESMEM_ASSIGN_OR_RETURN(engine::DoctorReport report,
                          engine::Diagnose(*backend.platform, nullptr));
  char dir[] = "/tmp/resmem-plan-XXXXXX";
  if (!mkdtemp(dir)) return Status::Errno(errno, "cannot make a scratch folder in /tmp");
  auto recording = engine::RecordMachine(*backend.platform, report, dir);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (!recording.ok()) return recording.status();
  return recording->machine;
}

int Plan(const std::vector<std::string>& args) {
  Options opts;
  Status st = opts.Parse(args,
                         {"--machine", "--cmdline", "--at", "--keep", "--dma-bits", "--align",
                          "--mode", "--json"},
                         {"--replace"});
  if (st.ok() && opts.positional.size() != 1)
    st = Status::InvalidArgument(opts.positional.empty() ? "give the SIZE to reserve, e.g. 16G"
                                                         : "one SIZE only");
  engine::PlanRequest req;
  if (st.ok()) {
    auto size = ParseSize(opts.positional[0]);
    if (size.ok()) req.size = *size;
    else st = size.status();
  }
  for (const char* key : {"--at", "--keep", "--align"}) {
    if (!st.ok() || !opts.Has(key)) continue;
    auto v = ParseSize(opts.Get(key, ""));
    if (!v.ok()) {
      st = Status::InvalidArgument(std::string(key) + ": " + v.status().message());
      break;
    }
    if (std::string(key) == "--at") req.at = *v;
    else if (std::string(key) == "--keep") req.keep = *v;
    else req.align = *v;
  }
  if (st.ok() && opts.Has("--dma-bits")) {
    auto bits = opts.GetU64("--dma-bits");
    if (bits.ok()) req.dma_bits = static_cast<int>(*bits);
    else st = bits.status();
  }
  req.mode = opts.Get("--mode", "pages");
  req.replace_reservations = opts.Has("--replace");
  if (st.ok() && req.mode != "pages" && req.mode != "pfnmap")
    st = Status::InvalidArgument("--mode " + req.mode + ": use pages or pfnmap");
  if (!st.ok()) {
    std::cerr << "resmem plan: " << st.message() << "\n" << kUsage;
    return kExitBadInput;
  }
  auto machine = opts.Has("--machine") ? scenario::LoadMachineArgument(opts.Get("--machine", ""))
                                       : ThisMachine();
  if (!machine.ok()) {
    std::cerr << "resmem plan: " << machine.status().message() << "\n";
    return opts.Has("--machine") ? kExitBadInput : kExitUnavailable;
  }
  if (opts.Has("--cmdline")) machine->cmdline = opts.Get("--cmdline", "");
  auto plan = engine::PlanReservation(*machine, req);
  if (!plan.ok()) {
    std::cerr << "resmem plan: " << plan.status().message() << "\n";
    return plan.status().code() == kInvalidArgument ? kExitBadInput : kExitCheckFailed;
  }
  const std::string json = opts.Get("--json", "");
  if (json == "-") {
    std::cout << engine::PlanJson(*plan);
  } else {
    std::cout << engine::RenderPlan(*machine, *plan);
    if (!json.empty()) std::ofstream(json) << engine::PlanJson(*plan);
  }
  return kExitOk;
}

RESMEM_REGISTER_COMMAND(plan, Command{"plan", "propose a reservation and the exact boot lines for it", kUsage, Plan});

}  // namespace
}  // namespace resmem::cli
