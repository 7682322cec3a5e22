// For tests: one scenario written as TOML text, parsed and run. A parse error is a test failure
// (with the parser's message) and gives an empty result.
#ifndef RESMEM_ENGINE_RUNNER_SCENARIO_TEXT_H_
#define RESMEM_ENGINE_RUNNER_SCENARIO_TEXT_H_

#include <string>

#include "engine/runner/runner.h"

namespace resmem::engine {

// Parses `text` (reported as file `name`) and runs its first case with `options`.
ScenarioResult RunScenarioText(const std::string& text, const std::string& name,
                               const RunOptions& options = RunOptions{});

}  // namespace resmem::engine

#endif  // RESMEM_ENGINE_RUNNER_SCENARIO_TEXT_H_
