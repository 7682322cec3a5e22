// resmem_seq's generator: the op list of a seed (docs/reliability.md "Random syscall sequences").
// The list is a pure function of (seed, ops, threads, --p2p or not): each op is a kind drawn by
// weight, a thread and six random words (resmem_seq_op.h), read against the state at run time by
// the executor (resmem_seq_executor.h).
#ifndef RESMEM_KMOD_TESTS_RESMEM_SEQ_GENERATOR_H_
#define RESMEM_KMOD_TESTS_RESMEM_SEQ_GENERATOR_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kmod/tests/resmem_seq_op.h"
#include "kmod/tests/resmem_seq_p2p.h"

namespace resmem::seq {

// The module's kinds, then the device mode's (resmem_seq_p2p.h); without --p2p their weight is 0,
// so a seed gives the list it always gave. Unloads are barriers: every thread stops and the main
// thread acts.
enum Kind : uint8_t {
  kOpen, kClose, kIoctl, kMmap, kMunmap, kMremap, kMadvise, kTouch, kRead, kWrite, kPread,
  kPwrite, kLseek, kFork, kUnloadHeld, kUnloadReload, kP2pFirst,
  kNumKinds = kP2pFirst + p2p::kKinds
};

const char* KindName(int k);
// Kind k's weight per about 10,000 ops of a list.
int Weight(int k, bool p2p);
// The list of n ops of a seed.
std::vector<Op> Generate(uint64_t seed, size_t n, int threads, bool p2p);
// An op as --list prints it: "KIND thread T p=[W0 ... W5]".
std::string Describe(const Op& op);

}  // namespace resmem::seq

#endif  // RESMEM_KMOD_TESTS_RESMEM_SEQ_GENERATOR_H_
