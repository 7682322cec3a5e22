// The long soak of the stream under injected faults (soak.h): prints, for the simulator and for a
// real FUSE mount, the blocks delivered, reported lost, silently lost and silently corrupted.
//   bazel run //engine/cli:stream_soak -- [--sim-blocks 1000000] [--fuse-blocks 100000]
//       [--block 4096] [--slots 64] [--p 0.001] [--seed 1]
// The FUSE soak (root and /dev/fuse) kills the daemon at 95% of its blocks, fails one slot with
// EIO for 1% of them from 40%, and keeps another slot slow (200 us a read) throughout.
// Exit: 0 nothing silent, 1 a silent loss, corruption or duplicate, 2 bad input, 3 FUSE
// unavailable, 4 internal.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "engine/cli/command.h"
#include "engine/cli/values.h"
#include "engine/stream/soak.h"

int main(int argc, char** argv) {
  using namespace resmem::stream;
  namespace cli = resmem::cli;
  uint64_t sim_blocks = 1000000, fuse_blocks = 100000, block = 4096, slots = 64, seed = 1;
  double p = 0.001;
  auto app = cli::MakeApp("the long soak of the stream under injected faults", "stream_soak");
  app->footer(
      "Exit: 0 nothing silent, 1 a silent loss, corruption or duplicate, 2 bad input, 3 FUSE\n"
      "unavailable, 4 internal.");
  app->add_option("--sim-blocks", sim_blocks, "blocks through the simulator")
      ->type_name("N")
      ->check(cli::NonNegativeInteger());
  app->add_option("--fuse-blocks", fuse_blocks, "blocks through a real FUSE mount (root)")
      ->type_name("N")
      ->check(cli::NonNegativeInteger());
  cli::AddSizeOption(*app, "--block", &block, "bytes of each block", 1);
  app->add_option("--slots", slots, "ring slots")
      ->type_name("N")
      ->check(cli::NonNegativeInteger());
  app->add_option("--p", p, "the probability of a fault per copy")
      ->type_name("P")
      ->check(CLI::Range(0.0, 1.0));
  app->add_option("--seed", seed, "the fault injector's seed")
      ->type_name("N")
      ->check(cli::NonNegativeInteger());
  if (auto rc = cli::ParseArgs(*app, std::vector<std::string>(argv + 1, argv + argc), std::cout,
                               std::cerr))
    return *rc;
  SoakSetup setup;
  setup.stream.block_bytes = block;
  setup.stream.seed = seed;
  setup.ring_slots = slots;
  setup.fault_probability = p;
  int rc = 0;
  auto judge = [&](const resmem::Result<SoakResult>& r, const std::string& title) {
    if (!r.ok()) {
      std::fprintf(stderr, "stream_soak: %s: %s\n", title.c_str(), r.status().message().c_str());
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
