// The one source of randomness. Every random choice in a run draws from a DeterministicRng seeded
// by the run's seed, so a seed replays a run exactly. SplitMix64: same sequence on every platform
// and standard library (std:: distributions are not portable across libraries, so none are used).
#ifndef RESMEM_BACKENDS_FAULT_RNG_H_
#define RESMEM_BACKENDS_FAULT_RNG_H_

#include <cstdint>

namespace resmem {

class DeterministicRng {
 public:
  explicit DeterministicRng(uint64_t seed) : state_(seed) {}
  uint64_t NextU64() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double NextDouble() { return (NextU64() >> 11) * (1.0 / 9007199254740992.0); }
  // Uniform in [0, n); n > 0.
  uint64_t Below(uint64_t n) { return n ? NextU64() % n : 0; }
  // An independent stream for a named consumer, so adding draws in one place does not shift
  // another's sequence.
  DeterministicRng Fork(uint64_t salt) { return DeterministicRng(NextU64() ^ (salt * 0x9e3779b97f4a7c15ull)); }

 private:
  uint64_t state_;
};

}  // namespace resmem

#endif  // RESMEM_BACKENDS_FAULT_RNG_H_
