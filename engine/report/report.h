// Reports of a run: a table for people and JSON for machines. The JSON holds no wall-clock time
// or host names, so the same seed gives the same bytes (the determinism test checks this).
#ifndef RESMEM_ENGINE_REPORT_REPORT_H_
#define RESMEM_ENGINE_REPORT_REPORT_H_

#include <ostream>
#include <string>
#include <vector>

#include "engine/report/results.h"

namespace resmem::engine {

struct RunSummary {
  int reproduced = 0, fixed = 0, passed = 0, failed = 0, not_applicable = 0, unavailable = 0,
      errors = 0;
  int total() const {
    return reproduced + fixed + passed + failed + not_applicable + unavailable + errors;
  }
};
RunSummary Summarise(const std::vector<ScenarioResult>& results);

// The verdict table: one row per scenario case, then the failures in detail (with the seed and
// the command that replays it), then the summary line.
void RenderTable(const std::vector<ScenarioResult>& results, bool verbose, std::ostream& out);
std::string RenderJson(const std::vector<ScenarioResult>& results);

// The command line that runs a case again as it ran: "resmem run FILE --backend B --seed N".
std::string ReplayCommand(const ScenarioResult& r);

}  // namespace resmem::engine

#endif  // RESMEM_ENGINE_REPORT_REPORT_H_
