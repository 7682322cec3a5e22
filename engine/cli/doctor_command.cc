// `resmem doctor`: which known failures this machine (or a simulated one) would hit.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "CLI/CLI.hpp"
#include "engine/backend/backend_factory.h"
#include "engine/cli/command.h"
#include "engine/cli/output_files.h"
#include "engine/cli/values.h"
#include "engine/doctor/bandwidth.h"
#include "engine/doctor/doctor.h"
#include "engine/doctor/record.h"
#include "engine/scenario/scenario.h"

namespace resmem::cli {
namespace {

// What `resmem doctor` is given, as its definition below binds it.
struct DoctorArgs {
  std::string machine;  // empty: this machine
  std::optional<std::string> cmdline, region, record, module;  // absent unless given
  std::string json;
  bool bandwidth = false;  // also measure host<->GPU bandwidth (engine/doctor/bandwidth.h)
};

int Doctor(const DoctorArgs& a);

// --module PATH as the absolute path the platform reads (module-signature:/PATH); false, with the
// error printed, when it names no file.
bool ModuleFileArgument(const std::string& given, std::string* absolute) {
  std::error_code ec;
  const std::filesystem::path path = std::filesystem::absolute(given, ec);
  if (ec || !std::filesystem::is_regular_file(path, ec)) {
    std::cerr << "resmem doctor: --module " << given << ": no such file; give the path of a "
              << "module file (resmem.ko, resmem.ko.xz, ...)\n";
    return false;
  }
  *absolute = path.lexically_normal().string();
  return true;
}

Action Define(CLI::App& app) {
  auto a = std::make_shared<DoctorArgs>();
  app.footer(
      "Reads /proc/iomem, /sys/firmware/memmap, /proc/mtrr, /proc/cmdline, /proc/meminfo and\n"
      "/proc/cpuinfo (run as root: /proc/iomem hides addresses from others) and names the known\n"
      "failures this machine would hit, with evidence, the remedy and the seed it comes from.\n"
      "It also reads whether the kernel would load resmem.ko: /proc/sys/kernel/modules_disabled,\n"
      "/sys/kernel/security/lockdown, /sys/module/module/parameters/sig_enforce, the SecureBoot\n"
      "efivar, /proc/keys and the installed module's signature (xz/zstd/gzip decompress it).\n"
      "With --region it also opens the reserved-memory devices (mode, ABI version skew).\n"
      "exit: 0 nothing that will fail, 1 an error-level finding, 2 bad input, 3 unreadable platform");
  CLI::Option* machine = app.add_option(
      "--machine", a->machine,
      "diagnose a simulated machine instead: a preset (seed000-workstation, ...), a machine "
      "file, or a paste resmem import reads")
      ->type_name("PRESET|FILE")
      ->check(MachineNamed("diagnose this machine"));
  app.add_option("--cmdline", a->cmdline, "the kernel command line to boot --machine with")
      ->type_name("TEXT")
      ->needs(machine);
  app.add_option("--region", a->region, "also check devices of this region part (kmod, sim, fuse)")
      ->type_name("NAME");
  app.add_option("--module", a->module,
                 "check this module file's signature (resmem.ko, .ko.xz, .ko.zst, .ko.gz) instead of "
                 "the installed resmem.ko's")
      ->type_name("PATH")
      ->check(PathNamed())
      ->excludes(machine);
  app.add_flag("--bandwidth", a->bandwidth,
               "also measure host<->GPU bandwidth (pinned and pageable 256 MiB both ways, one "
               "thread's memcpy, cudaHostRegister of 1 GiB touched and untouched; under a minute) "
               "and judge it against this GPU's measured profile on the PCIe link it trained at, "
               "with the link, NUMA node, IOMMU and THP; the real GPU (cuda), or the simulated "
               "one with --machine");
  app.add_option("--json", a->json, "write the report as JSON ('-' for stdout)")
      ->type_name("FILE")
      ->check(PathNamed());
  app.add_option("--record", a->record,
                 "also write this machine's facts into DIR: raw copies of the sources above, "
                 "machine.toml (the machine format) and scenario.toml, which replays the machine "
                 "on the simulator and expects the same findings")
      ->type_name("DIR")
      ->check(PathNamed());
  return [a] { return Doctor(*a); };
}

// --bandwidth: measures on the backend's GPU (none when *gpu_error says why), adds the findings
// to the report, prints the section when `print`, and returns its JSON. *gpu_error is set when
// nothing was measured.
std::string Bandwidth(bool simulated, engine::PartContext& ctx, Backend& doctor, bool print,
                      engine::DoctorReport& report, std::string* gpu_error) {
  // This machine's GPU as the cuda preset has it (host platform, stand-in region, the CUDA
  // runtime); a simulated machine's is the doctor backend's own.
  Backend* b = &doctor;
  Result<Backend> real = Status::Unavailable("unused");
  if (!simulated) {
    engine::BackendSpec spec;
    spec.name = "doctor-bandwidth";
    spec.platform = "host";
    spec.region = "standin";
    spec.gpu = "cuda";
    real = engine::MakeBackend(spec, ctx);
    if (real.ok()) b = &*real;
    else *gpu_error = real.status().message();
  }
  auto bw = engine::DiagnoseBandwidth(*b->platform, gpu_error->empty() ? b->gpu.get() : nullptr, report.facts);
  if (!gpu_error->empty()) bw.measure_error = *gpu_error;
  for (const auto& f : bw.findings) report.findings.push_back(f);
  if (print) engine::RenderBandwidth(bw, std::cout);
  if (!bw.measured) *gpu_error = bw.measure_error;
  return engine::BandwidthJson(bw);
}

// The backend doctor reads: the platform (the host's, or --machine's simulated one) with the
// reserved-memory devices of --region (kmod on a real machine unless given). Where that region
// cannot be made and --region was not given (no module loaded here), the platform alone, said in
// a note, and *check_devices false.
Result<Backend> DoctorBackend(const DoctorArgs& a, bool simulated, engine::PartContext& ctx,
                              bool* check_devices) {
  engine::BackendSpec spec;
  spec.name = "doctor";
  spec.platform = simulated ? "sim" : "host";
  spec.region = a.region.value_or(simulated ? "sim" : "kmod");
  spec.gpu = "sim";
  auto backend = engine::MakeBackend(spec, ctx);
  if (backend.ok() || a.region) return backend;
  // On stderr when the JSON goes to stdout, which must hold the JSON alone.
  (a.json == "-" ? std::cerr : std::cout)
      << "note: no reserved-memory device checked (" << backend.status().message() << ")\n";
  spec.region = "sim";
  *check_devices = false;
  return engine::MakeBackend(spec, ctx);
}

// --record DIR: the machine's files and a scenario that replays them; an exit code.
int Record(Platform& platform, const std::string& dir) {
  // The machine's own findings: a device's depend on its driver, which a recording lacks.
  auto machine_report = engine::Diagnose(platform, nullptr);
  if (!machine_report.ok()) {
    std::cerr << "resmem doctor: " << machine_report.status().message() << "\n";
    return kExitUnavailable;
  }
  auto rec = engine::RecordMachine(platform, *machine_report, dir);
  if (!rec.ok()) {
    std::cerr << "resmem doctor: --record " << dir << ": " << rec.status().message() << "\n";
    return rec.status().code() == kFailedPrecondition ? kExitUnavailable : kExitBadInput;
  }
  std::cerr << "recorded into " << dir << ":";
  for (const auto& f : rec->files) std::cerr << " " << std::filesystem::path(f).filename().string();
  std::cerr << "\n";
  for (const auto& n : rec->notes) std::cerr << "record note: " << n << "\n";
  std::cerr << "replay it: resmem run " << dir << "/scenario.toml\n";
  return kExitOk;
}

// --json FILE ('-': standard output, no file).
NamedPath JsonFile(const DoctorArgs& a) {
  return {"--json", a.json == "-" ? "" : a.json, "the doctor's report"};
}

// The report: the JSON alone on standard output for --json -, else the table (and the JSON to
// --json FILE). An exit code: 4 when the file could not be written after the checks up front.
int Emit(const DoctorArgs& a, const engine::DoctorReport& report,
         const std::string& bandwidth_json) {
  // With --bandwidth the JSON is {"doctor": ..., "bandwidth": ...}.
  const std::string doc = bandwidth_json.empty() ? engine::DoctorJson(report)
      : "{\"doctor\": " + engine::DoctorJson(report) + ", \"bandwidth\": " + bandwidth_json + "}\n";
  if (a.json == "-") {
    std::cout << doc;
    return kExitOk;
  }
  engine::RenderDoctor(report, std::cout);
  const NamedPath json = JsonFile(a);
  const Status st = json.path.empty() ? Status::Ok() : WriteOutput(json, doc);
  if (st.ok()) return kExitOk;
  std::cerr << "resmem doctor: " << st.message() << "; the findings above stand\n";
  return kExitInternal;
}

// Bad input where `st` says so (an unknown part: a mistyped --region), else unavailable here.
int ExitFor(const Status& st) {
  return st.space() == ErrorSpace::kResmem && st.code() == kInvalidArgument ? kExitBadInput
                                                                             : kExitUnavailable;
}

// A --record DIR that does not exist yet can be made: the nearest folder above it that exists is
// a folder this process may write (it was found out only after the whole diagnosis).
Status CheckCanMake(const std::string& dir) {
  std::filesystem::path above = std::filesystem::absolute(dir).parent_path();
  std::error_code ec;
  while (!std::filesystem::exists(above, ec) && above.has_relative_path()) above = above.parent_path();
  if (!std::filesystem::is_directory(above, ec))
    return Status::InvalidArgument("--record " + dir + " cannot be made: " + above.string() +
                                   " is a file, not a folder; give a folder that exists or can be made");
  if (access(above.c_str(), W_OK | X_OK) != 0)
    return Status::Errno(errno, "--record " + dir + " cannot be made in " + above.string() + ": " +
                                    std::strerror(errno) + "; give a folder you may write");
  return Status::Ok();
}

// Every file doctor writes, checked before anything is read: --json, and --record's files where
// DIR exists (a missing DIR is made; nothing in it can be an input then, and CheckCanMake says
// whether it can be). A DIR that is a file is refused.
Status CheckFiles(const DoctorArgs& a) {
  std::vector<NamedPath> outputs = {JsonFile(a)};
  const std::string dir = a.record.value_or("");
  std::error_code ec;
  if (!dir.empty() && !std::filesystem::exists(dir, ec)) RESMEM_RETURN_IF_ERROR(CheckCanMake(dir));
  if (!dir.empty() && std::filesystem::exists(dir, ec)) {
    if (!std::filesystem::is_directory(dir, ec))
      return Status::InvalidArgument("--record " + dir + " is a file, not a folder; give a folder "
                                     "(it is made if missing)");
    for (const std::string& name : engine::RecordedFileNames())
      outputs.push_back({"--record", (std::filesystem::path(dir) / name).string(),
                         "the recorded " + name});
  }
  return CheckOutputs(outputs, {{"--machine", a.machine, ""},
                                {"--module", a.module.value_or(""), ""}});
}

int Doctor(const DoctorArgs& a) {
  if (Status st = CheckFiles(a); !st.ok()) {
    std::cerr << "resmem doctor: " << st.message() << "\n";
    return kExitBadInput;
  }
  engine::PartContext ctx;
  const bool simulated = !a.machine.empty();
  if (simulated) {
    auto spec = scenario::LoadMachineArgument(a.machine);
    if (!spec.ok()) {
      std::cerr << "resmem doctor: " << spec.status().message() << "\n";
      return kExitBadInput;
    }
    ctx.machine = *spec;
    if (a.cmdline) ctx.machine.cmdline = *a.cmdline;
  }
  engine::DoctorOptions options;
  if (a.module && !ModuleFileArgument(*a.module, &options.module)) return kExitBadInput;
  bool check_devices = true;
  auto backend = DoctorBackend(a, simulated, ctx, &check_devices);
  if (!backend.ok()) {
    std::cerr << "resmem doctor: " << backend.status().message() << "\n";
    return ExitFor(backend.status());
  }
  auto report = engine::Diagnose(*backend->platform, check_devices ? backend->regions.get() : nullptr,
                                 options);
  if (!report.ok()) {
    std::cerr << "resmem doctor: " << report.status().message() << "\n";
    return kExitUnavailable;
  }
  std::string gpu_error;  // why --bandwidth measured nothing
  const std::string bandwidth_json =
      a.bandwidth ? Bandwidth(simulated, ctx, *backend, a.json != "-", *report, &gpu_error) : "";
  if (int rc = Emit(a, *report, bandwidth_json); rc != kExitOk) return rc;
  if (a.record) {
    const int rc = Record(*backend->platform, *a.record);
    if (rc != kExitOk) return rc;
  }
  if (report->has_errors()) return kExitCheckFailed;
  if (a.bandwidth && !gpu_error.empty()) {
    std::cerr << "resmem doctor: --bandwidth measured nothing: " << gpu_error << "\n";
    return kExitUnavailable;
  }
  return kExitOk;
}

RESMEM_REGISTER_COMMAND(doctor, Command{"doctor", "name the known failures this machine would hit", Define});

}  // namespace
}  // namespace resmem::cli
