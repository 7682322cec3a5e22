#include "engine/suite/suite.h"

#include "engine/scenario/scenario.h"

namespace resmem::engine {

Result<std::vector<ScenarioResult>> RunSuite(const std::string& path, const RunOptions& options) {
  RESMEM_ASSIGN_OR_RETURN(auto files, scenario::CollectScenarioFiles(path));
  std::vector<ScenarioResult> out;
  for (const auto& f : files) {
    RESMEM_ASSIGN_OR_RETURN(auto cases, scenario::LoadScenarioFile(f));
    for (const auto& s : cases) out.push_back(RunScenario(s, options));
  }
  return out;
}

}  // namespace resmem::engine
