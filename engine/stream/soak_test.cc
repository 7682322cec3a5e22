// The stream under injected faults loses nothing silently: every block is delivered once and
// intact or reported lost with its sequence number, as judged by the independent checker. Short
// versions of the soak that //engine/cli:stream_soak runs long (docs/reliability.md).
#include "engine/stream/soak.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <map>

namespace resmem::stream {
namespace {

SoakSetup Short(uint64_t blocks) {
  SoakSetup s;
  s.stream.blocks = blocks;
  s.stream.block_bytes = 4096;
  s.ring_slots = 16;
  s.fault_probability = 0.002;
  s.fault_delay_seconds = 0;  // the sim charges gpu.copy delays to its virtual clock
  return s;
}

void ExpectNothingSilent(const SoakResult& r) {
  EXPECT_EQ(r.verdict.silently_lost, 0u) << r.Summary("soak");
  EXPECT_EQ(r.verdict.silently_corrupted, 0u) << r.Summary("soak");
  EXPECT_EQ(r.verdict.duplicated, 0u) << r.Summary("soak");
  // The stream's own counts agree with the checker's.
  EXPECT_EQ(r.delivered, r.verdict.delivered_intact);
  EXPECT_EQ(r.reported_lost, r.verdict.reported_lost);
  EXPECT_EQ(r.delivered + r.reported_lost, r.blocks);
}

TEST(Soak, FaultsOnTheSimLoseNothingSilently) {
  auto r = RunSimSoak(Short(50000));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::printf("%s", r->Summary("sim soak, 50000 x 4 KiB").c_str());
  ExpectNothingSilent(*r);
  EXPECT_TRUE(r->ended.empty()) << r->ended;
  // The faults did fire, retries recovered most, and what could not be had is reported by number.
  EXPECT_GT(r->retried_copies, 100u);
  EXPECT_GT(r->reported_lost, 0u);
  EXPECT_GT(r->delivered, 49000u);
  ASSERT_FALSE(r->lost.empty());
  bool producer_loss = false;
  for (const LostRange& l : r->lost)
    producer_loss |= l.reason.find("the slot holds block") != std::string::npos ||
                     l.reason.find("checksum does not match") != std::string::npos;
  EXPECT_TRUE(producer_loss) << "no loss of a block the producer failed to write whole";
  std::map<std::string, uint64_t> fired(r->faults_fired.begin(), r->faults_fired.end());
  for (const char* k : {"stream.block error", "stream.block short", "stream.block corrupt",
                        "host.memcpy error", "host.memcpy short", "host.memcpy corrupt",
                        "gpu.copy error", "gpu.copy short", "gpu.copy corrupt", "gpu.copy delay"})
    EXPECT_GT(fired[k], 0u) << k << " never fired";
}

TEST(Soak, TheSameSeedGivesTheSameLosses) {
  auto a = RunSimSoak(Short(5000)), b = RunSimSoak(Short(5000));
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->lost.size(), b->lost.size());
  for (size_t i = 0; i < a->lost.size(); ++i) EXPECT_EQ(a->lost[i].first, b->lost[i].first);
}

// The checker is not a rubber stamp: with the stream's own checks switched off, the corruptions
// and the blocks the producer failed to write are delivered as if whole, and the checker counts
// them as silent.
TEST(Soak, TheCheckerCatchesAStreamThatDoesNotCheck) {
  SoakSetup s = Short(20000);
  s.stream.verify = false;
  auto r = RunSimSoak(s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GT(r->verdict.silently_corrupted, 0u) << r->Summary("unchecked soak");
  EXPECT_FALSE(r->verdict.Clean());
  EXPECT_FALSE(r->verdict.examples.empty());
}

TEST(SoakChecker, CountsEachWayOfGoingWrong) {
  SoakChecker c(6);
  for (uint64_t s = 0; s < 6; ++s) c.Produced(s, 100 + s);
  c.Delivered(0, 100);  // intact
  c.Delivered(1, 999);  // wrong bytes
  c.ReportedLost(2);    // reported
  // 3: nothing: silently lost
  c.Delivered(4, 104);
  c.Delivered(4, 104);  // twice
  c.Delivered(5, 105);
  c.ReportedLost(5);    // delivered and reported
  SoakVerdict v = c.Finish();
  EXPECT_EQ(v.delivered_intact, 1u);
  EXPECT_EQ(v.silently_corrupted, 1u);
  EXPECT_EQ(v.reported_lost, 1u);
  EXPECT_EQ(v.silently_lost, 1u);
  EXPECT_EQ(v.duplicated, 2u);
  EXPECT_EQ(v.examples, (std::vector<uint64_t>{1, 3, 4, 5}));
}

// Through a real FUSE mount, with direct I/O (every block a request to the daemon): the fault
// mix, a slow slot, an EIO stretch, and the daemon killed at block 4000. Blocks up to there are
// delivered or reported; from there on every block is reported lost by number and the stream
// ends with an error naming the dead daemon.
TEST(Soak, ThroughFuseTheDaemonDyingLosesNothingSilently) {
  if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0) {
    GTEST_SKIP() << "skipped: FUSE soak needs root and /dev/fuse";
  }
  FuseSoakSetup f;
  f.soak = Short(5000);
  f.die_at = 4000;
  f.eio_from = 1000;
  f.eio_blocks = 200;
  f.delay_us = 100;
  auto r = RunFuseSoak(f);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::printf("%s", r->Summary("FUSE soak, 5000 x 4 KiB, daemon killed at 4000").c_str());
  ExpectNothingSilent(*r);
  EXPECT_NE(r->ended.find("block 4000"), std::string::npos) << r->ended;
  EXPECT_NE(r->ended.find("daemon is gone"), std::string::npos) << r->ended;
  ASSERT_FALSE(r->lost.empty());
  EXPECT_EQ(r->lost.back().first, 4000u);
  EXPECT_EQ(r->lost.back().last, 4999u);
  bool eio = false;
  for (const LostRange& l : r->lost)
    eio |= l.first >= 1000 && l.last < 1200 && l.reason.find("EIO") != std::string::npos;
  EXPECT_TRUE(eio) << "no block of the EIO stretch reported lost";
  EXPECT_GT(r->delivered, 3500u);
}

// A long reason for an early end (a path description with its refusals) is kept whole, and the
// lines after it are still printed.
TEST(Soak, ALongEndReasonKeepsTheWholeSummary) {
  SoakResult r;
  r.blocks = 10;
  r.ended = "copy failed: took staged (" + std::string(1500, 'x') + ") end";
  r.faults_fired = {{"gpu.copy error", 3}};
  const std::string s = r.Summary("soak");
  EXPECT_NE(s.find("; stream ended early: copy failed: took staged ("), std::string::npos) << s;
  EXPECT_NE(s.find(") end\n  faults fired: [gpu.copy error] 3;"), std::string::npos)
      << s.substr(s.size() > 300 ? s.size() - 300 : 0);
}

}  // namespace
}  // namespace resmem::stream
