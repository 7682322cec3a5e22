// `resmem run`: scenario files or folders on a backend; prints the verdict table (and JSON).
#include <iostream>
#include <memory>

#include "engine/backend/backend_factory.h"
#include "engine/cli/command.h"
#include "engine/cli/output_files.h"
#include "engine/cli/values.h"
#include "engine/report/junit.h"
#include "engine/report/report.h"
#include "engine/runner/runner.h"
#include "engine/scenario/scenario.h"

namespace resmem::cli {
namespace {

// What `resmem run` is given, as its definition below binds it.
struct RunArgs {
  std::vector<std::string> paths;
  engine::RunOptions run;
  std::vector<std::string> backend_options;  // KEY=VALUE
  std::string json_path;
  std::string junit_path;
  bool verbose = false;
  bool require_all = false;
};

// --option KEY=VALUE: KEY one the backend's parts read (engine::PartOptionKeys); any other key
// reached no part and was dropped in silence (--option typo=1, --option =bar).
Status CheckPartOption(const std::string& kv) {
  const auto eq = kv.find('=');
  if (eq == std::string::npos) return Status::InvalidArgument("takes KEY=VALUE, got '" + kv + "'");
  const std::string key = kv.substr(0, eq);
  if (engine::PartOptionKeys().count(key)) return Status::Ok();
  std::string known;
  for (const auto& [name, what] : engine::PartOptionKeys())
    known += (known.empty() ? "" : ", ") + name;
  return Status::InvalidArgument(
      (key.empty() ? "'" + kv + "' names no key" : "no part of a backend reads '" + key + "'") +
      "; the keys are " + known + " (docs/commands.md says what each sets)");
}

int Run(RunArgs& a);

Action Define(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  app.footer(
      "Runs scenario files (or every *.toml under a folder) and prints one verdict per case:\n"
      "REPRODUCED (a seed bug showed as reported), FIXED (its twin's remedy worked), PASSED,\n"
      "FAILED (an expectation did not hold: the steps, the seed and the replay command follow),\n"
      "N/A (not applicable on this backend, with the reason), UNAVAILABLE (the backend's parts\n"
      "are missing here, with the reason).\n"
      "exit: 0 every case as expected, 1 a case failed, 2 bad input (a malformed scenario names\n"
      "      file, line and key), 3 the backend is unavailable here");
  app.add_option("PATH", a->paths, "scenario files or folders, e.g. scenarios/")
      ->required()
      ->type_name("FILE|DIR");
  app.add_option("--backend", a->run.backend,
                 "sim, kmod, fuse, host, cuda, kmod+cuda, or platform=P,region=R,gpu=G")
      ->type_name("NAME")
      ->check(CheckedBy("BACKEND", [](const std::string& name) {
        return engine::ResolveBackendSpec(name).status();  // the message lists what exists
      }));
  app.add_option("--seed", a->run.seed, "override every scenario's seed (replays a failing run)")
      ->type_name("N")
      ->check(NonNegativeInteger());
  app.add_option("--json", a->json_path,
                 "also write the JSON report to FILE ('-' for stdout, table to stderr)")
      ->type_name("FILE")
      ->check(PathNamed());
  app.add_option("--junit", a->junit_path,
                 "also write a JUnit XML report to FILE (one testcase per case, a testsuite per "
                 "folder; N/A and UNAVAILABLE skipped, FAILED with the step and the replay command)")
      ->type_name("FILE")
      ->check(PathNamed());
  app.add_option("--option", a->backend_options,
                 "pass an option to the backend's parts (repeatable)")
      ->type_name("K=V")
      ->allow_extra_args(false)
      ->check(CheckedBy("K=V", CheckPartOption));
  app.add_flag("--verbose", a->verbose, "print every step of every scenario");
  app.add_flag("--require-all", a->require_all,
               "exit 1 unless every case reproduced/fixed/passed (n/a and unavailable count as "
               "failures)");
  return [a] { return Run(*a); };
}

// The scenario files of `paths` (a folder: every *.toml under it), in order.
Result<std::vector<std::string>> CollectFiles(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const auto& path : paths) {
    RESMEM_ASSIGN_OR_RETURN(const std::vector<std::string> found,
                            scenario::CollectScenarioFiles(path));
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

// Every case of `files`, in order; the first that does not load stops it.
Result<std::vector<scenario::Scenario>> LoadCases(const std::vector<std::string>& files) {
  std::vector<scenario::Scenario> cases;
  for (const auto& f : files) {
    RESMEM_ASSIGN_OR_RETURN(std::vector<scenario::Scenario> loaded, scenario::LoadScenarioFile(f));
    for (auto& s : loaded) cases.push_back(std::move(s));
  }
  return cases;
}

// The report files (--json '-' is standard output, no file).
std::vector<NamedPath> Outputs(const RunArgs& a) {
  return {{"--json", a.json_path == "-" ? "" : a.json_path, "the JSON report"},
          {"--junit", a.junit_path, "the JUnit report"}};
}

// The reports, once every case ran: each file written whole or left as it was. An exit code:
// 4 when one could not be written (checked up front, so: the disk filled, the folder went).
int WriteReports(const std::vector<engine::ScenarioResult>& results, const RunArgs& a) {
  if (a.json_path == "-") std::cout << engine::RenderJson(results);
  const std::vector<NamedPath> out = Outputs(a);
  const Status json =
      out[0].path.empty() ? Status::Ok() : WriteOutput(out[0], engine::RenderJson(results));
  const Status junit =
      out[1].path.empty() ? Status::Ok() : WriteOutput(out[1], engine::RenderJunit(results));
  int rc = kExitOk;
  for (const Status& st : {json, junit}) {
    if (st.ok()) continue;
    std::cerr << "resmem run: " << st.message() << "; the verdicts above stand\n";
    rc = kExitInternal;
  }
  return rc;
}

// The cases of a.paths, once the report files are known to be writable and none of them is a
// scenario file of the run: nothing is written, nothing truncated, before every case loaded.
Result<std::vector<scenario::Scenario>> CasesToRun(const RunArgs& a) {
  RESMEM_ASSIGN_OR_RETURN(const std::vector<std::string> files, CollectFiles(a.paths));
  std::vector<NamedPath> inputs;
  for (const auto& f : files) inputs.push_back({"PATH", f, ""});
  RESMEM_RETURN_IF_ERROR(CheckOutputs(Outputs(a), inputs));
  return LoadCases(files);
}

int Run(RunArgs& a) {
  engine::RunOptions& ro = a.run;
  for (const auto& kv : a.backend_options) {
    const auto eq = kv.find('=');
    ro.options[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  auto cases = CasesToRun(a);
  if (!cases.ok()) {
    std::cerr << "resmem run: " << cases.status().message() << "\n";
    return kExitBadInput;
  }
  std::vector<engine::ScenarioResult> results;
  for (const auto& s : *cases) results.push_back(engine::RunScenario(s, ro));
  engine::RenderTable(results, a.verbose, a.json_path == "-" ? std::cerr : std::cout);
  if (int rc = WriteReports(results, a); rc != kExitOk) return rc;
  const engine::RunSummary sum = engine::Summarise(results);
  if (sum.errors > 0 && sum.failed == 0 && sum.errors == sum.total()) return kExitBadInput;
  if (sum.failed > 0 || sum.errors > 0) return kExitCheckFailed;
  if (a.require_all && (sum.not_applicable > 0 || sum.unavailable > 0)) return kExitCheckFailed;
  if (sum.unavailable == sum.total()) return kExitUnavailable;
  return kExitOk;
}

RESMEM_REGISTER_COMMAND(run, Command{"run", "run scenario files on a backend and print the verdicts", Define});

}  // namespace
}  // namespace resmem::cli
