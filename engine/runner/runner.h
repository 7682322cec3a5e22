// Runs a scenario on a backend and judges every step against its expectations.
// A step's outcome is a Status plus measurements (bandwidth, copy path, data verdict); an
// expectation names an error (CUDA name in the backend's numbering, errno or signal name), text
// the error must contain, bandwidth with a tolerance, or data integrity. Steps marked not
// applicable on the backend are skipped with their reason printed.
#ifndef RESMEM_ENGINE_RUNNER_RUNNER_H_
#define RESMEM_ENGINE_RUNNER_RUNNER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backends/fault/fault_injector.h"
#include "engine/scenario/scenario.h"

namespace resmem::engine {

enum class StepVerdict { kPass, kFail, kSkipped, kNotRun };
enum class ScenarioVerdict {
  kReproduced,     // kind=bug: the bug showed as the seed reported
  kFixed,          // kind=fix: the remedy worked
  kPassed,         // kind=check
  kFailed,         // an expectation did not hold
  kNotApplicable,  // the scenario does not apply to this backend (reason given)
  kUnavailable,    // the backend could not be built here (no GPU, no module): reason given
  kError,          // the scenario could not run (bad input)
};
const char* StepVerdictName(StepVerdict v);
const char* ScenarioVerdictName(ScenarioVerdict v);

struct StepResult {
  int index = 0;
  std::string op;
  int line = 0;
  StepVerdict verdict = StepVerdict::kNotRun;
  std::string observed;                       // "ok" or the Status, with CUDA names
  std::string expected;                       // what the file asked for
  std::string note;                           // skip reason, or what failed
  std::map<std::string, double> numbers;      // "mbps", "seconds", "drops", ...
  std::map<std::string, std::string> texts;   // "path", "vm_flags", "data", ...
};

struct ScenarioResult {
  std::string file, name, title, case_label, kind, seed_file, twin, backend;
  uint64_t seed = 0;
  ScenarioVerdict verdict = ScenarioVerdict::kError;
  std::string reason;                         // why failed / n/a / unavailable
  std::string headline;                       // one line: the step that shows the bug or fix
  std::vector<StepResult> steps;
  std::vector<FiredFault> faults;
  std::vector<std::string> dmesg;             // what the (simulated) kernel printed
  bool failed() const {
    return verdict == ScenarioVerdict::kFailed || verdict == ScenarioVerdict::kError;
  }
};

struct RunOptions {
  std::string backend = "sim";
  std::optional<uint64_t> seed;                 // overrides the file's seed
  std::map<std::string, std::string> options;   // passed to backend parts
};

ScenarioResult RunScenario(const scenario::Scenario& s, const RunOptions& options);

}  // namespace resmem::engine

#endif  // RESMEM_ENGINE_RUNNER_RUNNER_H_
