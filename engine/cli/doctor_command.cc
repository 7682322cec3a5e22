// `resmem doctor`: which known failures this machine (or a simulated one) would hit.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "engine/backend/backend_factory.h"
#include "engine/cli/command.h"
#include "engine/cli/options.h"
#include "engine/doctor/doctor.h"
#include "engine/doctor/record.h"
#include "engine/scenario/scenario.h"

namespace resmem::cli {
namespace {

const char kUsage[] =
    "usage: resmem doctor [options]\n"
    "  Reads /proc/iomem, /sys/firmware/memmap, /proc/mtrr, /proc/cmdline, /proc/meminfo and\n"
    "  /proc/cpuinfo (run as root: /proc/iomem hides addresses from others) and names the known\n"
    "  failures this machine would hit, with evidence, the remedy and the seed it comes from.\n"
    "  With --region it also opens the reserved-memory devices (mode, ABI version skew).\n"
    "options:\n"
    "  --machine PRESET|FILE  diagnose a simulated machine instead: a preset\n"
    "                     (seed000-workstation, ...), a machine file, or a paste resmem import reads\n"
    "  --cmdline TEXT     with --machine: the kernel command line to boot it with\n"
    "  --region NAME      also check devices of this region part (kmod, sim, fuse)\n"
    "  --json FILE        write the report as JSON ('-' for stdout)\n"
    "  --record DIR       also write this machine's facts into DIR: raw copies of the sources\n"
    "                     above, machine.toml (the machine format) and scenario.toml, which\n"
    "                     replays the machine on the simulator and expects the same findings\n"
    "exit: 0 nothing that will fail, 1 an error-level finding, 2 bad input, 3 unreadable platform\n";

int Doctor(const std::vector<std::string>& args) {
  Options opts;
  Status st = opts.Parse(args, {"--machine", "--cmdline", "--region", "--json", "--record"}, {});
  if (!st.ok() || !opts.positional.empty()) {
    std::cerr << "resmem doctor: " << (st.ok() ? "unexpected argument '" + opts.positional[0] + "'" : st.message())
              << "\n" << kUsage;
    return kExitBadInput;
  }
  engine::PartContext ctx;
  const bool simulated = opts.Has("--machine");
  if (simulated) {
    const std::string machine = opts.Get("--machine", "");
    auto spec = scenario::LoadMachineArgument(machine);
    if (!spec.ok()) {
      std::cerr << "resmem doctor: " << spec.status().message() << "\n";
      return kExitBadInput;
    }
    ctx.machine = *spec;
    if (opts.Has("--cmdline")) ctx.machine.cmdline = opts.Get("--cmdline", "");
  } else if (opts.Has("--cmdline")) {
    std::cerr << "resmem doctor: --cmdline needs --machine (the real command line is /proc/cmdline)\n";
    return kExitBadInput;
  }
  engine::BackendSpec spec;
  spec.name = "doctor";
  spec.platform = simulated ? "sim" : "host";
  spec.region = opts.Get("--region", simulated ? "sim" : "kmod");
  spec.gpu = "sim";
  auto backend = engine::MakeBackend(spec, ctx);
  if (!backend.ok() && opts.Has("--region")) {
    std::cerr << "resmem doctor: " << backend.status().message() << "\n";
    return kExitUnavailable;
  }
  bool check_devices = true;
  if (!backend.ok()) {  // no module loaded here: diagnose the platform alone, and say so
    std::cout << "note: no reserved-memory device checked (" << backend.status().message() << ")\n";
    spec.region = "sim";
    backend = engine::MakeBackend(spec, ctx);
    check_devices = false;
    if (!backend.ok()) {
      std::cerr << "resmem doctor: " << backend.status().message() << "\n";
      return kExitUnavailable;
    }
  }
  auto report = engine::Diagnose(*backend->platform, check_devices ? backend->regions.get() : nullptr);
  if (!report.ok()) {
    std::cerr << "resmem doctor: " << report.status().message() << "\n";
    return kExitUnavailable;
  }
  const std::string json = opts.Get("--json", "");
  if (json == "-") {
    std::cout << engine::DoctorJson(*report);
  } else {
    engine::RenderDoctor(*report, std::cout);
    if (!json.empty()) std::ofstream(json) << engine::DoctorJson(*report);
  }
  if (opts.Has("--record")) {
    const std::string dir = opts.Get("--record", "");
    // The machine's own findings: a device's depend on its driver, which a recording lacks.
    auto machine_report = engine::Diagnose(*backend->platform, nullptr);
    if (!machine_report.ok()) {
      std::cerr << "resmem doctor: " << machine_report.status().message() << "\n";
      return kExitUnavailable;
    }
    auto rec = engine::RecordMachine(*backend->platform, *machine_report, dir);
    if (!rec.ok()) {
      std::cerr << "resmem doctor: --record " << dir << ": " << rec.status().message() << "\n";
      return rec.status().code() == kFailedPrecondition ? kExitUnavailable : kExitBadInput;
    }
    std::cerr << "recorded into " << dir << ":";
    for (const auto& f : rec->files) std::cerr << " " << std::filesystem::path(f).filename().string();
    std::cerr << "\n";
    for (const auto& n : rec->notes) std::cerr << "record note: " << n << "\n";
    std::cerr << "replay it: resmem run " << dir << "/scenario.toml\n";
  }
  return report->has_errors() ? kExitCheckFailed : kExitOk;
}

RESMEM_REGISTER_COMMAND(doctor, Command{"doctor", "name the known failures this machine would hit", kUsage, Doctor});

}  // namespace
}  // namespace resmem::cli
