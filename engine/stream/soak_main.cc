// The long soak of the stream under injected faults (soak.h): prints, for the simulator and for a
// real FUSE mount, the blocks delivered, reported lost, silently lost and silently corrupted.
//   bazel run //engine/stream:stream_soak -- [--sim-blocks 1000000] [--fuse-blocks 100000]
//       [--block 4096] [--slots 64] [--p 0.001] [--seed 1]
// The FUSE soak (root and /dev/fuse) kills the daemon at 95% of its blocks, fails one slot with
// EIO for 1% of them from 40%, and keeps another slot slow (200 us a read) throughout.
// Exit: 0 nothing silent, 1 a silent loss, corruption or duplicate, 2 bad input, 3 FUSE
// unavailable, 4 internal.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "engine/stream/soak.h"

namespace {

bool ParseU64(const char* s, uint64_t* out) {
  char* end = nullptr;
  *out = std::strtoull(s, &end, 0);
  return end && !*end && *s;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace resmem::stream;
  uint64_t sim_blocks = 1000000, fuse_blocks = 100000, block = 4096, slots = 64, seed = 1;
  double p = 0.001;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "stream_soak: %s needs a value (see the header of soak_main.cc)\n", a.c_str());
      return 2;
    }
    const char* v = argv[++i];
    bool ok = true;
    if (a == "--sim-blocks") ok = ParseU64(v, &sim_blocks);
    else if (a == "--fuse-blocks") ok = ParseU64(v, &fuse_blocks);
    else if (a == "--block") ok = ParseU64(v, &block);
    else if (a == "--slots") ok = ParseU64(v, &slots);
    else if (a == "--seed") ok = ParseU64(v, &seed);
    else if (a == "--p") {
      char* end = nullptr;
      p = std::strtod(v, &end);
      ok = end && !*end && *v && p >= 0 && p <= 1;
    }
    else {
      std::fprintf(stderr, "stream_soak: unknown option %s: use --sim-blocks, --fuse-blocks, "
                           "--block, --slots, --p, --seed\n", a.c_str());
      return 2;
    }
    if (!ok) {
      std::fprintf(stderr, "stream_soak: %s '%s' is not a number%s\n", a.c_str(), v,
                   a == "--p" ? " between 0 and 1" : "");
      return 2;
    }
  }
  SoakSetup setup;
  setup.stream.block_bytes = block;
  setup.stream.seed = seed;
  setup.ring_slots = slots;
  setup.fault_probability = p;
  int rc = 0;
  auto judge = [&](const resmem::Result<SoakResult>& r, const std::string& title) {
    if (!r.ok()) {
      std::fprintf(stderr, "stream_soak: %s: %s\n", title.c_str(), r.status().ToString().c_str());
      if (rc == 0) rc = r.status().code() == resmem::kUnavailable ? 3 : r.status().code() == resmem::kInvalidArgument ? 2 : 4;
      return;
    }
    std::printf("%s", r->Summary(title).c_str());
    std::printf("figures %s: blocks %llu delivered %llu reported_lost %llu silently_lost %llu "
                "silently_corrupted %llu duplicated %llu seconds %.1f\n",
                title.c_str(), (unsigned long long)r->blocks, (unsigned long long)r->delivered,
                (unsigned long long)r->reported_lost,
                (unsigned long long)r->verdict.silently_lost,
                (unsigned long long)r->verdict.silently_corrupted,
                (unsigned long long)r->verdict.duplicated, r->wall_seconds);
    std::fflush(stdout);
    if (!r->verdict.Clean()) rc = 1;
  };
  if (sim_blocks) {
    setup.stream.blocks = sim_blocks;
    setup.stream.progress_every = sim_blocks / 10;
    judge(RunSimSoak(setup), "sim");
  }
  if (fuse_blocks) {
    if (geteuid() != 0) {
      std::fprintf(stderr, "stream_soak: the FUSE soak needs root (mounts FUSE); skipped\n");
      return rc ? rc : 3;
    }
    FuseSoakSetup f;
    f.soak = setup;
    f.soak.stream.blocks = fuse_blocks;
    f.soak.stream.progress_every = fuse_blocks / 10;
    f.die_at = fuse_blocks * 95 / 100;
    f.eio_from = fuse_blocks * 40 / 100;
    f.eio_blocks = std::max<uint64_t>(1, fuse_blocks / 100);
    f.delay_us = 200;
    judge(RunFuseSoak(f), "fuse");
  }
  return rc;
}
