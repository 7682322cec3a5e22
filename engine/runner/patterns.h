// Data patterns written into and checked out of host memory. Each byte is a function of its
// absolute offset (and, for "seeded", the run's seed), so any slice can be regenerated for
// verification without keeping a copy.
#ifndef RESMEM_ENGINE_RUNNER_PATTERNS_H_
#define RESMEM_ENGINE_RUNNER_PATTERNS_H_

#include <cstdint>
#include <string>

namespace resmem::engine {

struct Pattern {
  enum class Kind { kCounter, kSeeded, kZero } kind = Kind::kCounter;
  uint64_t seed = 0;
};

Pattern ParsePattern(const std::string& name, uint64_t seed);  // counter, seeded, zero
// Fills out[0, len) with the pattern's bytes for absolute offsets [offset, offset+len).
void FillPattern(const Pattern& p, uint64_t offset, uint8_t* out, uint64_t len);

}  // namespace resmem::engine

#endif  // RESMEM_ENGINE_RUNNER_PATTERNS_H_
