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

#include "engine/report/results.h"
#include "engine/scenario/scenario.h"

namespace resmem::engine {

struct RunOptions {
  std::string backend = "sim";
  std::optional<uint64_t> seed;                 // overrides the file's seed
  std::map<std::string, std::string> options;   // passed to backend parts
};

ScenarioResult RunScenario(const scenario::Scenario& s, const RunOptions& options);

}  // namespace resmem::engine

#endif  // RESMEM_ENGINE_RUNNER_RUNNER_H_
