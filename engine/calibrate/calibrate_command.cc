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
    "resmem calibrate [--backend cuda|sim] --out PROFILE.json [--runs N] [--report FIDELITY.md]\n"
    "                 [--json FIDELITY.json] [--sizes 64K,16M,256M] [--passes N] [--no-huge]\n"
    "                 [--margin PCT] [--verbose]\n"
    "resmem calibrate --compare PROFILE.json [--margin PCT] [--report FIDELITY.md] [--json F]\n"
    "resmem calibrate --merge A.json B.json ... --out PROFILE.json [--report ...] [--json ...]\n"
    "Runs the registration matrix (memory kinds x flags x sizes, huge MAP_NORESERVE sizes,\n"
    "call sequences) and the bandwidth table on the GPU and writes a profile. --runs N repeats\n"
    "the whole calibration N times and writes the spread: each bandwidth class's min, median and\n"
    "max over the runs, each case's code in every run (format 2). --merge does the same with\n"
    "profiles written earlier (format 1 or 2, of one GPU model and driver). With --report or\n"
    "--json, or with --compare on a profile made earlier, lists every disagreement with the\n"
    "simulator's cuda-13.0-r580 profile: return codes must agree in every run; a bandwidth class\n"
    "agrees when the simulator's rate lies inside the measured spread widened by --margin\n"
    "(default 15%: min x 0.85 .. max x 1.15).\n"
    "Exit: 0 ok, 1 disagreements, 2 bad input, 3 no GPU, 4 internal.";

int Fail(const Status& st, int code) {
  std::fprintf(stderr, "resmem calibrate: %s\n", st.ToString().c_str());
  return code;
}

Result<nlohmann::json> ReadProfile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::InvalidArgument("cannot read profile " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto profile = nlohmann::json::parse(ss.str(), nullptr, false);
  if (profile.is_discarded())
    return Status::InvalidArgument(path + " is not JSON (a profile written by resmem calibrate)");
  return profile;
}

int Report(const nlohmann::json& profile, const transfer::Args& args) {
  auto margin = args.Number("margin", 100 * kDefaultBandwidthMargin);
  if (!margin.ok()) return Fail(margin.status(), cli::kExitBadInput);
  auto r = CompareWithSim(profile, "cuda-13.0-r580", *margin / 100);
  if (!r.ok()) return Fail(r.status(), r.status().code() == kInvalidArgument ? 2 : 4);
  std::string md = r->ToMarkdown();
  if (args.Has("report")) {
    std::ofstream(args.Get("report", "")) << md;
  } else {
    std::fputs(md.c_str(), stdout);
  }
  if (args.Has("json")) std::ofstream(args.Get("json", "")) << r->ToJson().dump(1) << "\n";
  std::printf("fidelity: %d code cases, %d bandwidth classes (%d run%s, margin %.0f%%), %zu "
              "disagreements\n",
              r->code_cases, r->bandwidth_cases, r->runs, r->runs == 1 ? "" : "s",
              100 * r->margin, r->disagreements.size());
  return r->disagreements.empty() ? cli::kExitOk : cli::kExitCheckFailed;
}

int WriteProfile(const nlohmann::json& profile, const transfer::Args& args) {
  std::ofstream out(args.Get("out", ""));
  out << profile.dump(1) << "\n";
  if (!out) return Fail(Status::Errno(errno, "cannot write " + args.Get("out", "")), 4);
  std::printf("calibration profile written to %s\n", args.Get("out", "").c_str());
  if (args.Has("report") || args.Has("json")) return Report(profile, args);
  return cli::kExitOk;
}

int Run(const std::vector<std::string>& argv_in) {
  if (cli::WantsHelp(argv_in)) {
    std::puts(kUsage);
    return cli::kExitOk;
  }
  // --merge takes every following argument up to the next option.
  std::vector<std::string> argv, merge_files;
  bool merge = false;
  for (size_t i = 0; i < argv_in.size(); ++i) {
    if (argv_in[i] == "--merge") {
      merge = true;
      while (i + 1 < argv_in.size() && argv_in[i + 1].rfind("--", 0) != 0)
        merge_files.push_back(argv_in[++i]);
      continue;
    }
    argv.push_back(argv_in[i]);
  }
  auto args = transfer::Args::Parse(
      argv, {"backend", "out", "report", "json", "compare", "sizes", "passes", "runs", "margin"},
      {"no-huge", "verbose"});
  if (!args.ok()) return Fail(args.status(), cli::kExitBadInput);
  if (merge && args->Has("compare"))
    return Fail(Status::InvalidArgument("--merge and --compare: give one of them"), 2);
  if (args->Has("compare")) {
    auto profile = ReadProfile(args->Get("compare", ""));
    if (!profile.ok()) return Fail(profile.status(), cli::kExitBadInput);
    return Report(*profile, *args);
  }
  if (!args->Has("out"))
    return Fail(Status::InvalidArgument("--out PROFILE.json is required (or --compare)"), 2);
  if (merge) {
    if (merge_files.size() < 1)
      return Fail(Status::InvalidArgument("--merge needs profile files: --merge A.json B.json"), 2);
    std::vector<nlohmann::json> profiles;
    for (const auto& f : merge_files) {
      auto p = ReadProfile(f);
      if (!p.ok()) return Fail(p.status(), cli::kExitBadInput);
      profiles.push_back(std::move(*p));
    }
    auto merged = MergeProfiles(profiles, merge_files);
    if (!merged.ok()) return Fail(merged.status(), cli::kExitBadInput);
    return WriteProfile(*merged, *args);
  }
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
  auto runs = args->Number("runs", 1);
  if (!runs.ok()) return Fail(runs.status(), 2);
  if (*runs < 1 || *runs > 100 || *runs != static_cast<int>(*runs))
    return Fail(Status::InvalidArgument("--runs must be a whole number from 1 to 100"), 2);
  if (args->Has("no-huge")) o.huge_sizes.clear();
  o.verbose = args->Has("verbose");
  auto backend = transfer::MakeGpuBackend(args->Get("backend", "cuda"));
  if (!backend.ok())
    return Fail(backend.status(), backend.status().code() == kUnavailable ? cli::kExitUnavailable
                                                                          : cli::kExitBadInput);
  std::vector<nlohmann::json> profiles;
  std::vector<std::string> names;
  for (int run = 1; run <= static_cast<int>(*runs); ++run) {
    if (*runs > 1) std::fprintf(stderr, "calibrate: run %d of %d\n", run, static_cast<int>(*runs));
    auto profile = RunCalibration(*backend->gpu, *backend->clock, o);
    if (!profile.ok()) return Fail(profile.status(), cli::kExitInternal);
    (*profile)["backend"] = backend->name;
    profiles.push_back(std::move(*profile));
    names.push_back("run " + std::to_string(run));
  }
  if (profiles.size() == 1) return WriteProfile(profiles[0], *args);
  auto merged = MergeProfiles(profiles, names);
  if (!merged.ok()) return Fail(merged.status(), cli::kExitInternal);
  return WriteProfile(*merged, *args);
}

}  // namespace

RESMEM_REGISTER_COMMAND(calibrate, ::resmem::cli::Command{
    "calibrate", "measure the GPU's registration matrix and bandwidth; compare with the sim",
    kUsage, Run});

}  // namespace resmem::calibrate
