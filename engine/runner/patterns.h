// Data patterns written into and checked out of host memory. Each byte is a function of its
// absolute offset (and, for "seeded", the run's seed), so any slice can be regenerated for
// verification without keeping a copy.
#ifndef RESMEM_ENGINE_RUNNER_PATTERNS_H_
#define RESMEM_ENGINE_RUNNER_PATTERNS_H_

#include <cstdint>

#include "engine/scenario/steps.h"

namespace resmem::engine {

struct Pattern {
  using Kind = scenario::DataPattern;  // as the write/verify steps name it
  Kind kind = Kind::kCounter;
  uint64_t seed = 0;
};

// Fills out[0, len) with the pattern's bytes for absolute offsets [offset, offset+len).
void FillPattern(const Pattern& p, uint64_t offset, uint8_t* out, uint64_t len);

}  // namespace resmem::engine

#endif  // RESMEM_ENGINE_RUNNER_PATTERNS_H_
