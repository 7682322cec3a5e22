// resmem_seq's generator: the op list of a seed (resmem_seq_generator.h).
#include "kmod/tests/resmem_seq_generator.h"

#include <cinttypes>

#include "backends/fault/rng.h"
#include "kmod/tests/resmem_seq_util.h"

namespace resmem::seq {
namespace {

const char* const kKindName[] = {"open",  "close", "ioctl", "mmap",   "munmap", "mremap",
                                 "madvise", "touch", "read", "write", "pread", "pwrite",
                                 "lseek", "fork", "unload-attempt", "unload-reload"};
// Weights per 10,000 ops.
const int kWeight[] = {900, 500, 1200, 1500, 700, 500, 700, 900, 500, 500, 400, 400, 500, 120, 25, 5};

}  // namespace

const char* KindName(int k) { return k < kP2pFirst ? kKindName[k] : p2p::KindName(k - kP2pFirst); }

// With --p2p the device's kinds take about two thirds of a list and the module's own come a third
// as often, but for forks, left out (a child would keep the device files it inherits open past
// their close, and the device oracle counts on close releasing them), and barriers, which unload
// and reload both modules: unload attempts four times, unload + reload six times as often.
int Weight(int k, bool p2p) {
  if (k >= kP2pFirst) return p2p ? p2p::Weight(k - kP2pFirst) : 0;
  if (!p2p) return kWeight[k];
  if (k == kFork) return 0;
  return k == kUnloadHeld ? kWeight[k] * 4 : k == kUnloadReload ? kWeight[k] * 6 : kWeight[k] / 3;
}

std::vector<Op> Generate(uint64_t seed, size_t n, int threads, bool p2p) {
  DeterministicRng rng(seed);
  int total = 0;
  for (int k = 0; k < kNumKinds; ++k) total += Weight(k, p2p);
  std::vector<Op> ops(n);
  for (auto& op : ops) {
    int x = static_cast<int>(rng.Below(total)), k = 0;
    while (x >= Weight(k, p2p)) x -= Weight(k++, p2p);
    op.kind = static_cast<Kind>(k);
    op.thread = static_cast<uint8_t>(rng.Below(threads));
    for (auto& v : op.p) v = rng.NextU64();
  }
  return ops;
}

std::string Describe(const Op& op) {
  return Fmt("%s thread %d p=[%" PRIx64 " %" PRIx64 " %" PRIx64 " %" PRIx64 " %" PRIx64 " %" PRIx64 "]",
             KindName(op.kind), op.thread, op.p[0], op.p[1], op.p[2], op.p[3], op.p[4], op.p[5]);
}

}  // namespace resmem::seq
