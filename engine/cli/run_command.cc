// `resmem run`: scenario files or folders on a backend; prints the verdict table (and JSON).
#include <fstream>
#include <iostream>
#include <memory>

#include "engine/backend/backend_factory.h"
#include "engine/cli/command.h"
#include "engine/cli/values.h"
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

int Run(RunArgs& a) {
  engine::RunOptions& ro = a.run;
  for (const auto& kv : a.backend_options) {
    const auto eq = kv.find('=');
    ro.options[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  std::vector<scenario::Scenario> cases;
  for (const auto& path : a.paths) {
    auto files = scenario::CollectScenarioFiles(path);
    if (!files.ok()) {
      std::cerr << "resmem run: " << files.status().message() << "\n";
      return kExitBadInput;
    }
    for (const auto& f : *files) {
      auto loaded = scenario::LoadScenarioFile(f);
      if (!loaded.ok()) {
        std::cerr << "resmem run: " << loaded.status().message() << "\n";
        return kExitBadInput;
      }
      for (auto& s : *loaded) cases.push_back(std::move(s));
    }
  }
  std::vector<engine::ScenarioResult> results;
  for (const auto& s : cases) results.push_back(engine::RunScenario(s, ro));
  const std::string& json_path = a.json_path;
  std::ostream& table_out = json_path == "-" ? std::cerr : std::cout;
  engine::RenderTable(results, a.verbose, table_out);
  if (!json_path.empty()) {
    const std::string json = engine::RenderJson(results);
    if (json_path == "-") {
      std::cout << json;
    } else {
      std::ofstream out(json_path);
      if (!out) {
        std::cerr << "resmem run: cannot write " << json_path << "\n";
        return kExitBadInput;
      }
      out << json;
    }
  }
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
