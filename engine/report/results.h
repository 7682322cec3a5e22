// What a run of a scenario case found: each step's verdict and measurements, the case's verdict.
// The shared model of a run: the runner fills it, the report renders it, the suite and the
// commands read it.
#ifndef RESMEM_ENGINE_REPORT_RESULTS_H_
#define RESMEM_ENGINE_REPORT_RESULTS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "backends/fault/fault_injector.h"

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
  double seconds = 0;                         // wall-clock time the case took (the JUnit file's
                                              // time; not in the JSON, which a seed fixes)
  bool failed() const {
    return verdict == ScenarioVerdict::kFailed || verdict == ScenarioVerdict::kError;
  }
};

}  // namespace resmem::engine

#endif  // RESMEM_ENGINE_REPORT_RESULTS_H_
