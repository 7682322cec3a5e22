// `resmem plan SIZE`: where to reserve SIZE on a machine, and the exact lines that do it.
#include <iostream>
#include <memory>
#include <optional>

#include "engine/backend/backend_factory.h"
#include "engine/cli/command.h"
#include "engine/cli/output_files.h"
#include "engine/cli/values.h"
#include "engine/doctor/doctor.h"
#include "engine/doctor/record.h"
#include "engine/plan/plan.h"
#include "engine/scenario/scenario.h"

namespace resmem::cli {
namespace {

// This machine, through the real Platform: the machine `resmem doctor --record` would write,
// read in memory.
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
  return engine::ReadMachine(*backend.platform, report);
}

// What `resmem plan` is given, as its definition below binds it.
struct PlanArgs {
  engine::PlanRequest request;
  std::string machine;  // empty: this machine
  std::optional<std::string> cmdline;  // absent: the machine's own
  std::string json;
};

int Plan(PlanArgs& a);

Action Define(CLI::App& app) {
  auto a = std::make_shared<PlanArgs>();
  engine::PlanRequest& req = a->request;
  app.footer(
      "Proposes a reservation of SIZE (e.g. 188G) inside usable RAM: clear of holes, MMIO, the\n"
      "kernel and initrd (below 4 GiB), a pinned crashkernel= and the first MiB; aligned; and\n"
      "write-back by the MTRRs over all of it (or it names the MTRR that stops it). Prints the\n"
      "kernel option, the /etc/default/grub and grub.cfg spellings with the escaping each needs,\n"
      "the resulting kernel command line, and the module's modprobe.d line, then boots the\n"
      "result on the simulator and shows the kernel's map. Without --machine: this machine, read\n"
      "as `resmem doctor --record` reads it (run as root: /proc/iomem hides addresses from\n"
      "others). --keep defaults to min(4G, half the RAM), --align to 1G for 1 GiB and more, else\n"
      "2M. Options go before a `--`; what follows it is SIZE.\n"
      "exit: 0 a plan, 1 nothing fits (the message says the largest that would), 2 bad input");
  cli::AddSizeOption(app, "SIZE", &req.size, "the size to reserve, e.g. 16G", 1)
      ->required()
      ->type_name("")
      ->default_str("");
  app.add_option("--machine", a->machine,
                 "plan for another machine: a preset (seed000-workstation, ...), a machine file, "
                 "or what resmem import reads (a dmesg paste, ...)")
      ->type_name("PRESET|FILE")
      ->check(MachineNamed("plan for this machine"));
  app.add_option("--cmdline", a->cmdline,
                 "the current kernel command line (default: the machine's)")
      ->type_name("TEXT");
  cli::AddSizeOption(app, "--at", &req.at,
                     "this start address exactly (e.g. 4G, 0x100000000), or say why not")
      ->type_name("ADDR");
  cli::AddSizeOption(app, "--keep", &req.keep, "usable RAM to leave to the system");
  app.add_option("--dma-bits", req.dma_bits,
                 "the producing device's DMA mask (32: the range stays below 4 GiB)")
      ->type_name("N")
      ->check(CLI::Range(32, 64));
  cli::AddSizeOption(app, "--align", &req.align, "alignment of the start (0: as said below)")
      ->default_str("");
  app.add_option("--mode", req.mode, "the module's mode= in the modprobe.d line")
      ->type_name("MODE")
      ->check(CLI::IsMember({"pages", "pfnmap"}));
  app.add_flag("--replace", req.replace_reservations,
               "drop the command line's memmap=SIZE$START reservations and plan anew (default: "
               "keep them and plan around them; mem= is always dropped: memmap= alone reserves, "
               "and the kernel keeps every other byte)");
  app.add_option("--json", a->json, "also write the plan as JSON ('-' for stdout only)")
      ->type_name("FILE")
      ->check(PathNamed());
  return [a] { return Plan(*a); };
}

int Plan(PlanArgs& a) {
  const engine::PlanRequest& req = a.request;
  const NamedPath json_file{"--json", a.json == "-" ? "" : a.json, "the plan"};
  if (Status st = CheckOutputs({json_file}, {{"--machine", a.machine, ""}}); !st.ok()) {
    std::cerr << "resmem plan: " << st.message() << "\n";
    return kExitBadInput;
  }
  const bool given_machine = !a.machine.empty();
  auto machine = given_machine ? scenario::LoadMachineArgument(a.machine) : ThisMachine();
  if (!machine.ok()) {
    std::cerr << "resmem plan: " << machine.status().message() << "\n";
    return given_machine ? kExitBadInput : kExitUnavailable;
  }
  if (a.cmdline) machine->cmdline = *a.cmdline;
  auto plan = engine::PlanReservation(*machine, req);
  if (!plan.ok()) {
    std::cerr << "resmem plan: " << plan.status().message() << "\n";
    return plan.status().code() == kInvalidArgument ? kExitBadInput : kExitCheckFailed;
  }
  if (a.json == "-") {
    std::cout << engine::PlanJson(*plan);
    return kExitOk;
  }
  std::cout << engine::RenderPlan(*machine, *plan);
  const Status st =
      json_file.path.empty() ? Status::Ok() : WriteOutput(json_file, engine::PlanJson(*plan));
  if (!st.ok()) {
    std::cerr << "resmem plan: " << st.message() << "; the plan above stands\n";
    return kExitInternal;
  }
  return kExitOk;
}

RESMEM_REGISTER_COMMAND(plan, Command{"plan", "propose a reservation and the exact boot lines for it", Define});

}  // namespace
}  // namespace resmem::cli
