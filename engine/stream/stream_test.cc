// The stream on the CUDA model (virtual time): at a rate the link can carry, nothing drops and
// every block verifies; at a rate it cannot, blocks drop and are counted.
#include "engine/stream/stream.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <memory>
#include <vector>

#include "engine/transfer/gpu_backend.h"

namespace resmem::stream {
namespace {

StreamOptions Small() {
  StreamOptions o;
  o.block_bytes = 256 << 10;
  o.blocks = 40;
  o.slots = 4;
  o.progress = false;
  return o;
}

TEST(Stream, TenHertzOnTheSimDeliversEveryBlockWhole) {
  auto b = transfer::MakeGpuBackend("sim");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  auto r = RunStream(*b->gpu, *b->clock, b->name, Small());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->delivered, 40u);
  EXPECT_EQ(r->dropped, 0u);
  EXPECT_EQ(r->corrupt, 0u);
  EXPECT_NE(r->path_choice.find("registered-direct"), std::string::npos) << r->path_choice;
  EXPECT_GT(r->latency_p50_ms, 0);
  EXPECT_LE(r->latency_p50_ms, r->latency_max_ms);
  EXPECT_NE(r->Summary().find("dropped 0"), std::string::npos);
}

// A staged path's description with its refusals runs past 700 characters on the H200 (docs/hil/
// 2026-11-28-h200-staged13 run 6): the summary keeps the whole of it and every line after it.
TEST(Stream, ALongPathDescriptionKeepsTheWholeSummary) {
  StreamResult r;
  r.backend = "cuda";
  r.options = Small();
  r.options.host_kind = "file";
  r.path_choice = "took staged (" + std::string(2000, 'x') + "); registered-direct refused: end";
  r.delivered = 40;
  r.gbps = 47.17;
  r.pinned_gbps = 53.72;
  r.latency_p50_ms = 5.245;
  r.latency_p99_ms = 9.854;
  r.latency_max_ms = 12.52;
  const std::string s = r.Summary();
  EXPECT_NE(s.find("registered-direct refused: end\n  delivered 40, dropped 0"), std::string::npos)
      << s.substr(s.size() > 400 ? s.size() - 400 : 0);
  EXPECT_NE(s.find("throughput 47.17 GB/s = 87.8% of pinned (53.72 GB/s)"), std::string::npos);
  EXPECT_NE(s.find("latency p50 5.245 ms, p99 9.854 ms, max 12.520 ms"), std::string::npos);
}

TEST(Stream, ARateFasterThanTheLinkDropsBlocks) {
  auto b = transfer::MakeGpuBackend("sim");
  ASSERT_TRUE(b.ok());
  StreamOptions o = Small();
  o.host_kind = "file";  // staged: the model charges the link for each block
  o.rate_hz = 1e7;       // 10 million blocks a second: far beyond any link
  auto r = RunStream(*b->gpu, *b->clock, b->name, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GT(r->dropped, 0u);
  EXPECT_EQ(r->delivered + r->dropped, 40u);
  ASSERT_FALSE(r->lost.empty());  // the drops, by number
  EXPECT_NE(r->lost[0].reason.find("dropped"), std::string::npos);
  EXPECT_EQ(r->corrupt, 0u);
  EXPECT_NE(r->path_choice.find("took staged"), std::string::npos) << r->path_choice;
}

TEST(Stream, FlatOutNeverDrops) {
  auto b = transfer::MakeGpuBackend("sim");
  ASSERT_TRUE(b.ok());
  StreamOptions o = Small();
  o.rate_hz = 0;
  auto r = RunStream(*b->gpu, *b->clock, b->name, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->dropped, 0u);
  EXPECT_EQ(r->delivered, 40u);
  EXPECT_GT(r->gbps, 0);
  EXPECT_GT(r->pinned_gbps, 0);
}

// Faults lose nothing silently (issue 10 item 6): copies that fail, arrive short or wrong, and
// blocks the producer's DMA never wrote or damaged. Each block is delivered whole or reported
// lost by number with the reason; the counts add up to the blocks, no number is both.
TEST(Stream, FaultsAreRetriedOrReportedLostByNumber) {
  auto faults = std::make_shared<FaultInjector>(11);
  auto rule = [&](const char* point, FaultEffect effect, double p) {
    FaultRule r;
    r.point = point;
    r.trigger = FaultTrigger::kProbability;
    r.probability = p;
    r.effect = effect;
    r.error = Status::Errno(EIO, "injected");
    ASSERT_TRUE(faults->AddRule(r).ok());
  };
  rule("gpu.copy", FaultEffect::kError, 0.1);
  rule("gpu.copy", FaultEffect::kShortCopy, 0.1);
  rule("gpu.copy", FaultEffect::kCorrupt, 0.1);
  rule("stream.block", FaultEffect::kError, 0.03);
  rule("stream.block", FaultEffect::kCorrupt, 0.03);
  auto b = transfer::MakeGpuBackend("sim", 11, faults);
  ASSERT_TRUE(b.ok());
  StreamOptions o = Small();
  o.blocks = 400;
  o.rate_hz = 0;
  o.faults = faults;
  auto r = RunStream(*b->gpu, *b->clock, b->name, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::printf("%s\n", r->Summary().c_str());
  EXPECT_GT(r->retried, 20u);  // about 30% of first copies fail or arrive wrong
  EXPECT_GT(r->corrupt, 0u);   // the producer's lost and damaged blocks: wrong on every try
  std::vector<int> seen(o.blocks, 0);
  uint64_t lost = 0;
  for (const LostRange& l : r->lost) {
    EXPECT_FALSE(l.reason.empty());
    for (uint64_t s = l.first; s <= l.last; ++s) {
      ASSERT_LT(s, o.blocks);
      ++seen[s];
      ++lost;
    }
  }
  EXPECT_EQ(lost, r->dropped + r->corrupt + r->failed);
  EXPECT_EQ(r->delivered + lost, o.blocks);
  for (uint64_t s = 0; s < o.blocks; ++s) EXPECT_LE(seen[s], 1) << "block " << s << " reported twice";
  // The stream.block faults that fired are each a block reported lost, by its number.
  for (const FiredFault& f : faults->fired()) {
    if (f.point != "stream.block") continue;
    const uint64_t seq = f.call - 1;  // one check per block, in order
    EXPECT_EQ(seen[seq], 1) << "block " << seq << " (" << f.rule << ") was not reported lost";
  }
  EXPECT_NE(r->ToJson().find("\"lost\""), std::string::npos);
}

TEST(Stream, BadInputNamesTheOption) {
  auto b = transfer::MakeGpuBackend("sim");
  ASSERT_TRUE(b.ok());
  StreamOptions o = Small();
  o.block_bytes = 1000;
  auto r = RunStream(*b->gpu, *b->clock, b->name, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--block"), std::string::npos);
}

// --producer card: the card's DMA engine writes the ring (card_feed.h), the consumers move its
// blocks to the GPU and the device checks each against the block the card makes for its number.
TEST(Stream, TheCardAsProducerDeliversEveryBlockAndNamesItself) {
  auto b = transfer::MakeGpuBackend("sim");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  StreamOptions o = Small();
  o.producer = "card";
  auto r = RunStream(*b->gpu, *b->clock, b->name, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->delivered, 40u);
  EXPECT_EQ(r->dropped + r->corrupt + r->failed + r->card_overruns, 0u);
  EXPECT_NEAR(r->seconds, 3.9, 0.1);  // 40 blocks at 10 Hz: the card's pace
  EXPECT_NE(r->Summary().find("producer card"), std::string::npos) << r->Summary();
  EXPECT_NE(r->ToJson().find("\"producer\": \"card"), std::string::npos);
}

TEST(Stream, TheCardsFaultsAreCountedByNumberNeverSilent) {
  auto b = transfer::MakeGpuBackend("sim");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  StreamOptions o = Small();
  o.producer = "card";
  o.card_faults = "link_down at 1s for 0.5s; torn block 30; timeout block 35 after 10ms";
  auto r = RunStream(*b->gpu, *b->clock, b->name, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // 0.5 s of a 10 Hz source while the link was down: 4 or 5 blocks, by where the edges fall.
  EXPECT_GE(r->dropped, 4u);
  EXPECT_LE(r->dropped, 5u);
  EXPECT_EQ(r->card_overruns, r->dropped);
  EXPECT_EQ(r->corrupt, 1u);  // the torn block
  EXPECT_EQ(r->failed, 1u);   // the timeout
  EXPECT_EQ(r->delivered + r->dropped + r->corrupt + r->failed, 40u);
  ASSERT_FALSE(r->lost.empty());
  EXPECT_NE(r->lost[0].reason.find("dropped by the card"), std::string::npos) << r->lost[0].reason;
}

TEST(Stream, TheCardFlatOutWaitsForTheConsumersAndRefusesABadRing) {
  auto b = transfer::MakeGpuBackend("sim");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  StreamOptions o = Small();
  o.producer = "card";
  o.rate_hz = 0;
  auto r = RunStream(*b->gpu, *b->clock, b->name, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->delivered, 40u);
  EXPECT_EQ(r->card_overruns, 0u);  // flat out, the card waits for a posted slot
  o.slots = 3;
  auto bad = RunStream(*b->gpu, *b->clock, b->name, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("not a power of two"), std::string::npos) << bad.status().message();
  o.slots = 4;
  o.producer = "fpga";
  bad = RunStream(*b->gpu, *b->clock, b->name, o);
  EXPECT_NE(bad.status().message().find("give cpu (the default) or card"), std::string::npos);
}

}  // namespace
}  // namespace resmem::stream
