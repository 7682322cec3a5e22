// `resmem calibrate`: registers the command (engine/cli/command.h).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>

#include "backends/api/text_file.h"
#include "engine/calibrate/calibrate.h"
#include "engine/cli/command.h"
#include "engine/cli/output_files.h"
#include "engine/cli/values.h"
#include "engine/transfer/gpu_backend.h"
#include "engine/cli/transfer_options.h"

namespace resmem::calibrate {
namespace {

// What `resmem calibrate` is given, as its definition below binds it.
struct CalibrateArgs {
  CalibrateOptions options;
  std::string backend = "cuda";
  std::string out, report, json, compare;
  std::vector<std::string> merge;
  int runs = 1;
  double margin_pct = 100 * kDefaultBandwidthMargin;
  bool no_huge = false;
};

// A margin in percent: 0 or more, below 100 (a spread widened by 100% would reach zero).
CLI::Validator PercentBelow100() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double pct = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !(pct >= 0 && pct < 100))
          return "'" + text + "' is not a percentage from 0 up to (not including) 100";
        return std::string();
      },
      "", "PCT");
}

int Fail(const Status& st, int code) {
  std::fprintf(stderr, "resmem calibrate: %s\n", st.message().c_str());
  return code;
}

Result<nlohmann::json> ReadProfile(const std::string& path) {
  RESMEM_ASSIGN_OR_RETURN(const std::string text, ReadTextFile(path, "profile "));
  auto profile = nlohmann::json::parse(text, nullptr, false);
  if (profile.is_discarded())
    return Status::InvalidArgument(path + " is not JSON (a profile written by resmem calibrate)");
  return profile;
}

int Report(const nlohmann::json& profile, const CalibrateArgs& args) {
  auto r = CompareWithSim(profile, "cuda-13.0-r580", args.margin_pct / 100);
  if (!r.ok()) return Fail(r.status(), r.status().code() == kInvalidArgument ? 2 : 4);
  std::string md = r->ToMarkdown();
  if (!args.report.empty()) {
    const Status st = cli::WriteOutput({"--report", args.report, "the fidelity report"}, md);
    if (!st.ok()) return Fail(st, cli::kExitInternal);
  } else {
    std::fputs(md.c_str(), stdout);
  }
  if (!args.json.empty()) {
    if (Status st = cli::WriteOutput({"--json", args.json, "the fidelity report"},
                                     r->ToJson().dump(1) + "\n");
        !st.ok())
      return Fail(st, cli::kExitInternal);
  }
  std::printf("fidelity: %d code cases, %d bandwidth classes (%d run%s, margin %.0f%%), %zu "
              "disagreements\n",
              r->code_cases, r->bandwidth_cases, r->runs, r->runs == 1 ? "" : "s",
              100 * r->margin, r->disagreements.size());
  return r->disagreements.empty() ? cli::kExitOk : cli::kExitCheckFailed;
}

int WriteProfile(const nlohmann::json& profile, const CalibrateArgs& args) {
  if (Status st = cli::WriteOutput({"--out", args.out, "the profile"}, profile.dump(1) + "\n");
      !st.ok())
    return Fail(st, cli::kExitInternal);
  std::printf("calibration profile written to %s\n", args.out.c_str());
  if (!args.report.empty() || !args.json.empty()) return Report(profile, args);
  return cli::kExitOk;
}

// The files a run writes and those it reads, checked before anything is read or measured: a
// path that cannot be written, or that is an input, is exit 2 at once (--out is not written
// with --compare).
Status CheckFiles(const CalibrateArgs& a) {
  std::vector<cli::NamedPath> inputs = {{"--compare", a.compare, ""}};
  for (const auto& f : a.merge) inputs.push_back({"--merge", f, ""});
  return cli::CheckOutputs({{"--out", a.compare.empty() ? a.out : "", "the profile"},
                            {"--report", a.report, "the fidelity report"},
                            {"--json", a.json, "the fidelity report"}},
                           inputs);
}

int Run(const CalibrateArgs& a);

cli::Action Define(CLI::App& app) {
  auto a = std::make_shared<CalibrateArgs>();
  CalibrateOptions& o = a->options;
  app.footer(
      "resmem calibrate [--backend cuda|sim] --out PROFILE.json [--runs N] [...]\n"
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
      "(15%: min x 0.85 .. max x 1.15).\n"
      "Exit: 0 ok, 1 disagreements, 2 bad input, 3 no GPU, 4 internal.");
  transfer::AddGpuBackendOption(app, &a->backend);
  CLI::Option* out =
      app.add_option("--out", a->out, "write the profile here")
          ->type_name("PROFILE.json")
          ->check(cli::PathNamed());
  CLI::Option* compare =
      app.add_option("--compare", a->compare,
                     "compare a profile made earlier with the simulator (measures nothing)")
          ->type_name("PROFILE.json")
          ->check(cli::PathNamed());
  app.add_option("--merge", a->merge,
                 "merge profiles written earlier into one (format 2) instead of measuring")
      ->type_name("PROFILE.json")
      ->expected(1, -1)
      ->check(cli::PathNamed())
      ->check(CLI::Validator(
          [](std::string& file) -> std::string {
            return file.rfind("-", 0) == 0 ? "needs profile files before '" + file +
                                                 "': --merge A.json B.json ..."
                                           : "";
          },
          "", "FILE"))
      ->excludes(compare)
      ->needs(out);
  app.add_option("--report", a->report, "the fidelity report as Markdown (default: stdout)")
      ->type_name("FIDELITY.md")
      ->check(cli::PathNamed());
  app.add_option("--json", a->json, "the fidelity report as JSON")
      ->type_name("FIDELITY.json")
      ->check(cli::PathNamed());
  app.add_option("--margin", a->margin_pct,
                 "widen each measured bandwidth spread by this many percent")
      ->type_name("PCT")
      ->check(PercentBelow100());
  app.add_option("--runs", a->runs, "repeat the whole calibration N times and keep the spread")
      ->type_name("N")
      ->check(CLI::Range(1, 100));  // one excludes per option: CLI11 lists several in no set order
  cli::AddSizeListOption(app, "--sizes", &o.sizes, "registration and bandwidth sizes");
  app.add_option("--passes", o.passes, "passes per bandwidth figure (median)")
      ->type_name("N")
      ->check(CLI::Range(1, 1000));
  app.add_flag("--no-huge", a->no_huge, "skip the huge MAP_NORESERVE sizes");
  app.add_flag("--verbose", o.verbose, "print every case");
  return [a] { return Run(*a); };
}

int Run(const CalibrateArgs& a) {
  if (Status st = CheckFiles(a); !st.ok()) return Fail(st, cli::kExitBadInput);
  if (!a.compare.empty()) {
    auto profile = ReadProfile(a.compare);
    if (!profile.ok()) return Fail(profile.status(), cli::kExitBadInput);
    return Report(*profile, a);
  }
  if (a.out.empty()) {
    std::fprintf(stderr,
                 "resmem calibrate: give --out PROFILE.json (or --compare PROFILE.json)\n"
                 "`resmem calibrate --help` lists the options, their values and defaults\n");
    return cli::kExitBadInput;
  }
  if (!a.merge.empty()) {
    std::vector<nlohmann::json> profiles;
    for (const auto& f : a.merge) {
      auto p = ReadProfile(f);
      if (!p.ok()) return Fail(p.status(), cli::kExitBadInput);
      profiles.push_back(std::move(*p));
    }
    auto merged = MergeProfiles(profiles, a.merge);
    if (!merged.ok()) return Fail(merged.status(), cli::kExitBadInput);
    return WriteProfile(*merged, a);
  }
  CalibrateOptions o = a.options;
  if (a.no_huge) o.huge_sizes.clear();
  const int runs = a.runs;
  auto backend = transfer::MakeGpuBackend(a.backend);
  if (!backend.ok())
    return Fail(backend.status(), backend.status().code() == kUnavailable ? cli::kExitUnavailable
                                                                          : cli::kExitBadInput);
  std::vector<nlohmann::json> profiles;
  std::vector<std::string> names;
  for (int run = 1; run <= runs; ++run) {
    if (runs > 1) std::fprintf(stderr, "calibrate: run %d of %d\n", run, runs);
    auto profile = RunCalibration(*backend->gpu, *backend->clock, o);
    if (!profile.ok()) return Fail(profile.status(), cli::kExitInternal);
    (*profile)["backend"] = backend->name;
    profiles.push_back(std::move(*profile));
    names.push_back("run " + std::to_string(run));
  }
  if (profiles.size() == 1) return WriteProfile(profiles[0], a);
  auto merged = MergeProfiles(profiles, names);
  if (!merged.ok()) return Fail(merged.status(), cli::kExitInternal);
  return WriteProfile(*merged, a);
}

}  // namespace

RESMEM_REGISTER_COMMAND(calibrate, ::resmem::cli::Command{
    "calibrate", "measure the GPU's registration matrix and bandwidth; compare with the sim",
    Define});

}  // namespace resmem::calibrate
