// The verdicts' names, as the table and the JSON print them (results.h).
#include "engine/report/results.h"

namespace resmem::engine {

const char* StepVerdictName(StepVerdict v) {
  switch (v) {
    case StepVerdict::kPass: return "pass";
    case StepVerdict::kFail: return "FAIL";
    case StepVerdict::kSkipped: return "n/a";
    case StepVerdict::kNotRun: return "not run";
  }
  return "?";
}

const char* ScenarioVerdictName(ScenarioVerdict v) {
  switch (v) {
    case ScenarioVerdict::kReproduced: return "REPRODUCED";
    case ScenarioVerdict::kFixed: return "FIXED";
    case ScenarioVerdict::kPassed: return "PASSED";
    case ScenarioVerdict::kFailed: return "FAILED";
    case ScenarioVerdict::kNotApplicable: return "N/A";
    case ScenarioVerdict::kUnavailable: return "UNAVAILABLE";
    case ScenarioVerdict::kError: return "ERROR";
  }
  return "?";
}

}  // namespace resmem::engine
