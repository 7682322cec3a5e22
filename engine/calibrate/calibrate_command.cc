// `resmem calibrate`: registers the command (engine/cli/command.h).
#include <cstdio>
#include <fstream>
#include <sstream>

#include "engine/calibrate/calibrate.h"
#include "engine/cli/command.h"
#include "engine/transfer/gpu_backend.h"

namespace resmem::calibrate {
namespace {

constexpr const char* kUsage =
    "resmem calibrate [--backend cuda|sim] --out PROFILE.json [--report FIDELITY.md]\n"
    "                 [--sizes 64K,16M,256M] [--passes N] [--no-huge] [--verbose]\n"
    "resmem calibrate --compare PROFILE.json [--report FIDELITY.md] [--json FIDELITY.json]\n"
    "Runs the registration matrix (memory kinds x flags x sizes, huge MAP_NORESERVE sizes,\n"
    "call sequences) and the bandwidth table on the GPU and writes a profile; with --report,\n"
    "or with --compare on a profile made earlier, lists every disagreement with the\n"
    "simulator's cuda-13.0-r580 profile (return codes exact, bandwidth within 15%).\n"
    "Exit: 0 ok, 1 disagreements, 2 bad input, 3 no GPU, 4 internal.";

int Fail(const Status& st, int code) {
  std::fprintf(stderr, "resmem calibrate: %s\n", st.ToString().c_str());
  return code;
}

int Report(const nlohmann::json& profile, const transfer::Args& args) {
  auto r = CompareWithSim(profile);
  if (!r.ok()) return Fail(r.status(), r.status().code() == kInvalidArgument ? 2 : 4);
  std::string md = r->ToMarkdown();
  if (args.Has("report")) {
    std::ofstream(args.Get("report", "")) << md;
  } else {
    std::fputs(md.c_str(), stdout);
  }
  if (args.Has("json")) std::ofstream(args.Get("json", "")) << r->ToJson().dump(1) << "\n";
  std::printf("fidelity: %d code cases, %d bandwidth classes, %zu disagreements\n", r->code_cases,
              r->bandwidth_cases, r->disagreements.size());
  return r->disagreements.empty() ? cli::kExitOk : cli::kExitCheckFailed;
}

int Run(const std::vector<std::string>& argv) {
  if (cli::WantsHelp(argv)) {
    std::puts(kUsage);
    return cli::kExitOk;
  }
  auto args = transfer::Args::Parse(
      argv, {"backend", "out", "report", "json", "compare", "sizes", "passes"},
      {"no-huge", "verbose"});
  if (!args.ok()) return Fail(args.status(), cli::kExitBadInput);
  if (args->Has("compare")) {
    std::ifstream in(args->Get("compare", ""));
    if (!in)
      return Fail(Status::InvalidArgument("cannot read profile " + args->Get("compare", "")), 2);
    std::stringstream ss;
    ss << in.rdbuf();
    auto profile = nlohmann::json::parse(ss.str(), nullptr, false);
    if (profile.is_discarded())
      return Fail(Status::InvalidArgument(args->Get("compare", "") + " is not JSON"), 2);
    return Report(profile, *args);
  }
  if (!args->Has("out"))
    return Fail(Status::InvalidArgument("--out PROFILE.json is required (or --compare)"), 2);
  CalibrateOptions o;
  if (args->Has("sizes")) {
    o.sizes.clear();
    for (const auto& s : args->List("sizes", "")) {
      auto v = ParseSize(s);
      if (!v.ok()) return Fail(v.status().WithContext("--sizes " + s), 2);
      o.sizes.push_back(*v);
    }
  }
  auto passes = args->Number("passes", o.passes);
  if (!passes.ok()) return Fail(passes.status(), 2);
  o.passes = static_cast<int>(*passes);
  if (args->Has("no-huge")) o.huge_sizes.clear();
  o.verbose = args->Has("verbose");
  auto backend = transfer::MakeGpuBackend(args->Get("backend", "cuda"));
  if (!backend.ok())
    return Fail(backend.status(), backend.status().code() == kUnavailable ? cli::kExitUnavailable
                                                                          : cli::kExitBadInput);
  auto profile = RunCalibration(*backend->gpu, *backend->clock, o);
  if (!profile.ok()) return Fail(profile.status(), cli::kExitInternal);
  (*profile)["backend"] = backend->name;
  std::ofstream out(args->Get("out", ""));
  out << profile->dump(1) << "\n";
  if (!out) return Fail(Status::Errno(errno, "cannot write " + args->Get("out", "")), 4);
  std::printf("calibration profile written to %s\n", args->Get("out", "").c_str());
  if (args->Has("report") || args->Has("json")) return Report(*profile, *args);
  return cli::kExitOk;
}

}  // namespace

RESMEM_REGISTER_COMMAND(calibrate, ::resmem::cli::Command{
    "calibrate", "measure the GPU's registration matrix and bandwidth; compare with the sim",
    kUsage, Run});

}  // namespace resmem::calibrate
