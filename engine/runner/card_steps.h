// The card steps (card_start, card_run, card_fault, card_stop, card_reset, card_release) on a
// Backend's card part, and what each observed: the driver's and the card's counts as the step's
// numbers, its events, and link_down / stalled as texts (engine/runner/judge.h reads them).
#ifndef RESMEM_ENGINE_RUNNER_CARD_STEPS_H_
#define RESMEM_ENGINE_RUNNER_CARD_STEPS_H_

#include "backends/api/backend.h"
#include "engine/report/results.h"
#include "engine/scenario/steps.h"

namespace resmem::engine {

// `seed`: the run's, for the card's payload pattern.
Status DoCardStep(Backend& b, const scenario::CardStartStep& step, uint64_t seed, StepResult* r);
Status DoCardStep(Backend& b, const scenario::CardRunStep& step, StepResult* r);
Status DoCardStep(Backend& b, const scenario::CardFaultStep& step, StepResult* r);
Status DoCardStep(Backend& b, const scenario::CardStopStep& step, StepResult* r);
Status DoCardStep(Backend& b, const scenario::CardResetStep& step, StepResult* r);
Status DoCardStep(Backend& b, const scenario::CardReleaseStep& step, StepResult* r);

}  // namespace resmem::engine

#endif  // RESMEM_ENGINE_RUNNER_CARD_STEPS_H_
