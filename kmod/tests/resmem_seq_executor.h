// resmem_seq's executor: runs an op list (resmem_seq_generator.h) against the module, each op
// checked by its oracle (docs/reliability.md "Random syscall sequences"). A run lives in a child
// process, its worker threads running their own ops concurrently between barriers (module
// unload attempts, unload + reload); --p2p adds the device mode's ops (resmem_seq_p2p.h).
#ifndef RESMEM_KMOD_TESTS_RESMEM_SEQ_EXECUTOR_H_
#define RESMEM_KMOD_TESTS_RESMEM_SEQ_EXECUTOR_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "kmod/tests/resmem_seq_generator.h"
#include "kmod/tests/resmem_seq_op.h"
#include "kmod/tests/resmem_seq_p2p.h"
#include "kmod/tests/resmem_seq_world.h"

namespace resmem::seq {

// What the runs did, summed over every run (MAP_SHARED: the runs are child processes).
struct Counters {
  std::atomic<uint64_t> ops{0}, ok{0}, expected_errors{0}, pfn_checked{0}, pages_present{0},
      pfnmap_pages_walked{0}, content_checked{0},
      mappings{0}, forks{0}, unload_refused{0}, reloads{0}, bytes_verified{0}, kinds[kNumKinds],
      kcov_pcs{0}, kcov_outside{0}, kcov_overflows{0};
};

// What every run of a list works with, fixed before the first.
struct RunSetup {
  World* w = nullptr;
  Counters* c = nullptr;  // MAP_SHARED
  int threads = 4;
  // --huge: the module's 2 MiB entries asked for with huge=1 on a kernel where they are not the
  // default; the run then keeps to that opt-in's contract (kmod/resmem.c huge): no MADV_COLD or
  // MADV_PAGEOUT.
  bool huge_optin = false;
  // --p2p: what the device ops work with and their counters (MAP_SHARED); null without.
  const p2p::Config* p2p = nullptr;
  p2p::Counters* p2p_counters = nullptr;
};

// Runs ops[keep] in a child process with a time limit (loading the module first if a run left it
// unloaded): "" or the failure, "op #I (KIND, thread T): what".
std::string RunInChild(const RunSetup& setup, const std::vector<Op>& ops, const std::vector<long>& keep,
                       double limit_s);

}  // namespace resmem::seq

#endif  // RESMEM_KMOD_TESTS_RESMEM_SEQ_EXECUTOR_H_
