// `resmem run`: scenario files or folders on a backend; prints the verdict table (and JSON).
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>

#include "engine/backend/backend_factory.h"
#include "engine/cli/command.h"
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

CLI::Validator KeyEqualsValue() {
  return CLI::Validator(
      [](std::string& kv) -> std::string {
        return kv.find('=') == std::string::npos ? "takes KEY=VALUE, got '" + kv + "'" : "";
      },
      "", "K=V");
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
      ->type_name("FILE");
  app.add_option("--junit", a->junit_path,
                 "also write a JUnit XML report to FILE (one testcase per case, a testsuite per "
                 "folder; N/A and UNAVAILABLE skipped, FAILED with the step and the replay command)")
      ->type_name("FILE");
  app.add_option("--option", a->backend_options,
                 "pass an option to the backend's parts (repeatable)")
      ->type_name("K=V")
      ->allow_extra_args(false)
      ->check(KeyEqualsValue());
  app.add_flag("--verbose", a->verbose, "print every step of every scenario");
  app.add_flag("--require-all", a->require_all,
               "exit 1 unless every case reproduced/fixed/passed (n/a and unavailable count as "
               "failures)");
  return [a] { return Run(*a); };
}

// The --junit file, opened before any case runs, so a path that cannot be written stops the run
// at once (exit 2) rather than after every case ran. The error names the path, why, the way out.
Result<std::unique_ptr<std::ofstream>> OpenJunit(const std::string& path) {
  auto out = std::make_unique<std::ofstream>(path, std::ios::out | std::ios::trunc);
  if (*out) return out;
  const int err = errno;
  return Status::Errno(err, "cannot write the JUnit report --junit " + path + ": " +
                                std::strerror(err) +
                                "; give a file in a folder that exists and that you may write "
                                "(e.g. mkdir -p out, then --junit out/junit.xml)");
}

// Every case of the files and folders in `paths`, in order; the first that does not load stops it.
Result<std::vector<scenario::Scenario>> LoadCases(const std::vector<std::string>& paths) {
  std::vector<scenario::Scenario> cases;
  for (const auto& path : paths) {
    RESMEM_ASSIGN_OR_RETURN(const std::vector<std::string> files,
                            scenario::CollectScenarioFiles(path));
    for (const auto& f : files) {
      RESMEM_ASSIGN_OR_RETURN(std::vector<scenario::Scenario> loaded,
                              scenario::LoadScenarioFile(f));
      for (auto& s : loaded) cases.push_back(std::move(s));
    }
  }
  return cases;
}

// The JSON report to --json (stdout for '-'); an exit code when it cannot be written, else 0.
int WriteJson(const std::vector<engine::ScenarioResult>& results, const std::string& json_path) {
  if (json_path.empty()) return kExitOk;
  const std::string json = engine::RenderJson(results);
  if (json_path == "-") {
    std::cout << json;
    return kExitOk;
  }
  std::ofstream out(json_path);
  if (!out) {
    std::cerr << "resmem run: cannot write " << json_path << "\n";
    return kExitBadInput;
  }
  out << json;
  return kExitOk;
}

// The JUnit report into the file OpenJunit opened; an exit code when writing failed, else 0.
int WriteJunit(const std::vector<engine::ScenarioResult>& results, std::ofstream* junit,
               const std::string& junit_path) {
  if (junit == nullptr) return kExitOk;
  *junit << engine::RenderJunit(results);
  junit->close();
  if (*junit) return kExitOk;
  std::cerr << "resmem run: writing the JUnit report " << junit_path
            << " failed (disk full?); the verdicts above stand\n";
  return kExitInternal;
}

int Run(RunArgs& a) {
  engine::RunOptions& ro = a.run;
  std::unique_ptr<std::ofstream> junit;
  if (!a.junit_path.empty()) {
    auto opened = OpenJunit(a.junit_path);
    if (!opened.ok()) {
      std::cerr << "resmem run: " << opened.status().message() << "\n";
      return kExitBadInput;
    }
    junit = std::move(*opened);
  }
  for (const auto& kv : a.backend_options) {
    const auto eq = kv.find('=');
    ro.options[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  auto cases = LoadCases(a.paths);
  if (!cases.ok()) {
    std::cerr << "resmem run: " << cases.status().message() << "\n";
    return kExitBadInput;
  }
  std::vector<engine::ScenarioResult> results;
  for (const auto& s : *cases) results.push_back(engine::RunScenario(s, ro));
  engine::RenderTable(results, a.verbose, a.json_path == "-" ? std::cerr : std::cout);
  if (int rc = WriteJson(results, a.json_path); rc != kExitOk) return rc;
  if (int rc = WriteJunit(results, junit.get(), a.junit_path); rc != kExitOk) return rc;
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
