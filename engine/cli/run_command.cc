// `resmem run`: scenario files or folders on a backend; prints the verdict table (and JSON).
#include <fstream>
#include <iostream>

#include "engine/backend/backend_factory.h"
#include "engine/cli/command.h"
#include "engine/cli/options.h"
#include "engine/report/report.h"
#include "engine/runner/runner.h"
#include "engine/scenario/scenario.h"

namespace resmem::cli {
namespace {

const char kUsage[] =
    "usage: resmem run [options] PATH...\n"
    "  Runs scenario files (or every *.toml under a folder) and prints one verdict per case:\n"
    "  REPRODUCED (a seed bug showed as reported), FIXED (its twin's remedy worked), PASSED,\n"
    "  FAILED (an expectation did not hold: the steps, the seed and the replay command follow),\n"
    "  N/A (not applicable on this backend, with the reason), UNAVAILABLE (the backend's parts\n"
    "  are missing here, with the reason).\n"
    "options:\n"
    "  --backend NAME     sim (default), kmod, fuse, host, cuda, kmod+cuda, or platform=P,region=R,gpu=G\n"
    "  --seed N           override every scenario's seed (replays a failing run)\n"
    "  --json FILE        also write the JSON report to FILE ('-' for stdout, table to stderr)\n"
    "  --option K=V       pass an option to the backend's parts (repeatable)\n"
    "  --verbose          print every step of every scenario\n"
    "  --require-all      exit 1 unless every case reproduced/fixed/passed (n/a and\n"
    "                     unavailable count as failures)\n"
    "exit: 0 every case as expected, 1 a case failed, 2 bad input (a malformed scenario names\n"
    "      file, line and key), 3 the backend is unavailable here\n";

int Run(const std::vector<std::string>& args) {
  Options opts;
  Status st = opts.Parse(args, {"--backend", "--seed", "--json", "--option"}, {"--verbose", "--require-all"});
  if (!st.ok()) {
    std::cerr << "resmem run: " << st.message() << "\n" << kUsage;
    return kExitBadInput;
  }
  if (opts.positional.empty()) {
    std::cerr << "resmem run: give scenario files or folders, e.g. `resmem run scenarios/`\n";
    return kExitBadInput;
  }
  engine::RunOptions ro;
  ro.backend = opts.Get("--backend", "sim");
  if (auto spec = engine::ResolveBackendSpec(ro.backend); !spec.ok()) {
    std::cerr << "resmem run: " << spec.status().message() << "\n";
    return kExitBadInput;
  }
  if (opts.Has("--seed")) {
    auto seed = opts.GetU64("--seed");
    if (!seed.ok()) {
      std::cerr << "resmem run: " << seed.status().message() << "\n";
      return kExitBadInput;
    }
    ro.seed = *seed;
  }
  for (const auto& kv : opts.GetAll("--option")) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos) {
      std::cerr << "resmem run: --option takes KEY=VALUE, got '" << kv << "'\n";
      return kExitBadInput;
    }
    ro.options[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  std::vector<scenario::Scenario> cases;
  for (const auto& path : opts.positional) {
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
  const std::string json_path = opts.Get("--json", "");
  std::ostream& table_out = json_path == "-" ? std::cerr : std::cout;
  engine::RenderTable(results, opts.Has("--verbose"), table_out);
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
  if (opts.Has("--require-all") && (sum.not_applicable > 0 || sum.unavailable > 0)) return kExitCheckFailed;
  if (sum.unavailable == sum.total()) return kExitUnavailable;
  return kExitOk;
}

RESMEM_REGISTER_COMMAND(run, Command{"run", "run scenario files on a backend and print the verdicts", kUsage, Run});

}  // namespace
}  // namespace resmem::cli
