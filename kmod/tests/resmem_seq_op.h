// What resmem_seq's parts share (kmod/tests/resmem_seq.cc; docs/reliability.md "Random syscall
// sequences"): an op of a list, and how an executor of ops reports what they returned.
//
// An op is a kind, the thread that runs it and six random words. The list is a pure function of
// (seed, ops, threads, device mode); the words are interpreted against the state at run time (the
// k-th open file, the k-th allocation, ...), so any sub-list is still a valid program and a failing
// list can be shrunk.
#ifndef RESMEM_KMOD_TESTS_RESMEM_SEQ_OP_H_
#define RESMEM_KMOD_TESTS_RESMEM_SEQ_OP_H_

#include <cstdint>
#include <string>

namespace resmem::seq {

struct Op {
  uint8_t kind;    // resmem_seq_generator.h's Kind: the module's kinds, then the device mode's
  uint8_t thread;  // the worker that runs it; barriers run on the main thread
  uint64_t p[6];   // random words, read by the op's executor
};

// Where an executor's ops report. Every op either matches its oracle (Ok: it succeeded as
// expected; ExpectedError: it failed with an errno the oracle allows) or is the run's failure:
// Fail records the first one (with the op's index in the list, or -1 for a check after the ops;
// op may be null) and stops the run; later calls only stop it. Callable from every worker thread
// at once.
class Outcome {
 public:
  virtual ~Outcome() = default;
  virtual void Ok() = 0;
  virtual void ExpectedError() = 0;
  virtual void Fail(long index, const Op* op, const std::string& why) = 0;
};

}  // namespace resmem::seq

#endif  // RESMEM_KMOD_TESTS_RESMEM_SEQ_OP_H_
