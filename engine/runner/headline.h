// A passed step's part of the case's one-line headline ("stream: 54500.0 MB/s, data intact").
#ifndef RESMEM_ENGINE_RUNNER_HEADLINE_H_
#define RESMEM_ENGINE_RUNNER_HEADLINE_H_

#include <string>

#include "backends/api/status.h"
#include "engine/report/results.h"
#include "engine/scenario/scenario.h"

namespace resmem::engine {

// What the step showed that its expectation asked about, the parts joined by ", "; "" when it
// asked about nothing worth a headline. `step_args` are the step's own (not a backend's
// override): they say which kind of step it was. `virtual_clock` marks a registration's time as
// the model's ("in 41.2 s (modelled)") rather than measured.
std::string HeadlinePart(const scenario::Expectation& expect, const scenario::StepArgs& step_args,
                         const Status& st, const StepResult& r, bool virtual_clock);

}  // namespace resmem::engine

#endif  // RESMEM_ENGINE_RUNNER_HEADLINE_H_
