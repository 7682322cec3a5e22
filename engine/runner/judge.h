// Judging a step: what it was expected to do (scenario::Expectation) against what it did (its
// Status and the numbers and texts it observed). One judge for every backend, so a scenario file
// means the same on the simulator, under FUSE and on hardware.
#ifndef RESMEM_ENGINE_RUNNER_JUDGE_H_
#define RESMEM_ENGINE_RUNNER_JUDGE_H_

#include <string>
#include <vector>

#include "backends/api/status.h"
#include "engine/report/results.h"
#include "engine/scenario/scenario.h"

namespace resmem::engine {

// How a step's outcome is shown: "ok", "cuda 1 cudaErrorInvalidValue: <message>" (the name from
// `profile`, the CUDA era's numbering), or the Status as text.
std::string Observed(const Status& st, const std::string& profile);

// The failures of a step (empty = it passed), each a sentence naming what was expected and what
// was observed. `profile` names CUDA errors written by name in the expectation.
std::vector<std::string> Judge(const scenario::Expectation& e, const Status& st, const StepResult& r,
                               const std::string& profile);

// `v` printed with one printf conversion ("%.1f MB/s").
std::string Fmt(const char* printf_format, double v);

}  // namespace resmem::engine

#endif  // RESMEM_ENGINE_RUNNER_JUDGE_H_
