// Fault points live inside the backends: each operation that can fail on real hardware asks the
// injector at its named point ("gpu.copy", "region.mmap", ...) whether a fault fires there now.
// Rules come from a scenario's [[faults]] tables: a trigger (always, on the nth call, with a
// probability, over an address range) and an effect (an error code, a delay, corruption of the
// bytes, a short copy, a signal). Probabilities draw from the run's seeded RNG only.
#ifndef RESMEM_BACKENDS_FAULT_FAULT_INJECTOR_H_
#define RESMEM_BACKENDS_FAULT_FAULT_INJECTOR_H_

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "backends/api/status.h"
#include "backends/fault/rng.h"

namespace resmem {

enum class FaultTrigger { kAlways, kNth, kProbability, kAddressRange };
enum class FaultEffect { kError, kDelay, kCorrupt, kShortCopy, kSignal };
const char* FaultTriggerName(FaultTrigger t);
const char* FaultEffectName(FaultEffect e);

struct FaultRule {
  std::string point;                 // one of FaultInjector::KnownPoints()
  FaultTrigger trigger = FaultTrigger::kAlways;
  uint64_t nth = 1;                  // kNth: fires on the nth call at the point (1-based)
  double probability = 0;            // kProbability: per call
  uint64_t range_start = 0;          // kAddressRange: fires when [addr, addr+len) meets
  uint64_t range_end = 0;            //   [range_start, range_end)
  FaultEffect effect = FaultEffect::kError;
  Status error;                      // kError / kSignal: what the operation returns
  double delay_seconds = 0;          // kDelay
  double short_fraction = 0.5;       // kShortCopy: fraction of the length that arrives
  uint64_t max_fires = 0;            // 0: unlimited
  std::string Describe() const;      // one line, every parameter expanded
  // The rule a test most often wants: `error` returned by the nth call at `point`.
  static FaultRule ErrorOnCall(std::string point, uint64_t nth, Status error);
};

// What the point should do now.
struct FaultOutcome {
  bool fired = false;
  FaultEffect effect = FaultEffect::kError;
  Status status;                 // the error to return (kError, kSignal)
  double delay_seconds = 0;      // kDelay: charge to the clock (or sleep, for real backends)
  uint64_t corrupt_offset = 0;   // kCorrupt: byte offset within the operation's span to flip
  uint8_t corrupt_xor = 0;       //   and the non-zero mask to xor into it
  uint64_t short_length = 0;     // kShortCopy: bytes that arrive
  std::string rule;              // the rule that fired, described
};

struct FiredFault {
  uint64_t call;      // the point's call number (1-based)
  std::string point;
  uint64_t address;
  uint64_t length;
  std::string rule;
};

class FaultInjector {
 public:
  explicit FaultInjector(uint64_t seed) : seed_(seed), rng_(seed ^ 0x5eedfa17ull) {}

  uint64_t seed() const { return seed_; }
  // The points the backends define. A rule naming another point is refused with the list.
  static const std::vector<std::string>& KnownPoints();
  Status AddRule(const FaultRule& rule);
  const std::vector<FaultRule>& rules() const { return rules_; }

  // Called by a backend at a fault point; thread-safe. address/length describe the span the
  // operation touches (physical or virtual, as the point documents), 0 when none.
  FaultOutcome Check(const std::string& point, uint64_t address = 0, uint64_t length = 0);

  const std::vector<FiredFault>& fired() const { return fired_; }
  uint64_t calls(const std::string& point) const;

 private:
  struct PointCounter {
    std::string point;
    uint64_t calls = 0;
  };
  uint64_t seed_;
  DeterministicRng rng_;
  std::vector<FaultRule> rules_;
  std::vector<uint64_t> fires_;  // per rule
  std::vector<PointCounter> counters_;
  std::vector<FiredFault> fired_;
  mutable std::mutex mu_;
};

}  // namespace resmem

#endif  // RESMEM_BACKENDS_FAULT_FAULT_INJECTOR_H_
