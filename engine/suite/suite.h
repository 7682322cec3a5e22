// Runs every scenario under a path on one backend.
#ifndef RESMEM_ENGINE_SUITE_SUITE_H_
#define RESMEM_ENGINE_SUITE_SUITE_H_

#include <string>
#include <vector>

#include "engine/runner/runner.h"

namespace resmem::engine {

Result<std::vector<ScenarioResult>> RunSuite(const std::string& path, const RunOptions& options);

}  // namespace resmem::engine

#endif  // RESMEM_ENGINE_SUITE_SUITE_H_
