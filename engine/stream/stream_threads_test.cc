// The stream's real-clock branches on the CUDA model: the same simulated GPU, but a steady clock,
// so RunStream runs its producer, consumer and (staged) verifier threads. Counts only: every
// figure of time here is the host's.
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <memory>

#include "backends/api/clock.h"
#include "engine/stream/stream.h"
#include "engine/transfer/gpu_backend.h"

namespace resmem::stream {
namespace {

StreamOptions Small(const char* path) {
  StreamOptions o;
  o.block_bytes = 256 << 10;
  o.blocks = 64;
  o.slots = 4;
  o.rate_hz = 0;
  o.progress = false;
  o.path = path;
  o.staging.staging_lanes = 4;
  return o;
}

// Runs o on the sim's GPU against a steady clock, with `faults` as the stream's injector.
Result<StreamResult> OnSteadyClock(const StreamOptions& o,
                                   std::shared_ptr<FaultInjector> faults = nullptr) {
  RESMEM_ASSIGN_OR_RETURN(auto b, transfer::MakeGpuBackend("sim", 1, faults));
  SteadyClock clock;
  return RunStream(*b.gpu, clock, b.name, o);
}

// Faults that make the stream's third block arrive wrong (one bit flipped in the ring).
std::shared_ptr<FaultInjector> CorruptThirdBlock() {
  auto faults = std::make_shared<FaultInjector>(11);
  // The nth-call rule, its effect a corruption instead of the error.
  FaultRule r = FaultRule::ErrorOnCall("stream.block", 3, Status::Errno(EIO, "unused"));
  r.effect = FaultEffect::kCorrupt;
  EXPECT_TRUE(faults->AddRule(r).ok());
  return faults;
}

TEST(StreamThreads, RegisteredConsumersDeliverEveryBlockFlatOut) {
  StreamOptions o = Small("registered-direct");
  o.consumers = 3;
  auto r = OnSteadyClock(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->delivered, 64u);
  EXPECT_EQ(r->dropped + r->corrupt + r->failed, 0u);
  EXPECT_TRUE(r->lost.empty());
}

TEST(StreamThreads, StagedPipelineDeliversEveryBlockFlatOut) {
  auto r = OnSteadyClock(Small("staged"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->delivered, 64u);
  EXPECT_EQ(r->dropped + r->corrupt + r->failed, 0u);
  EXPECT_NE(r->path_choice.find("; pipelined: "), std::string::npos) << r->path_choice;
}

TEST(StreamThreads, StagedPerConsumerSplitsTheLanes) {
  StreamOptions o = Small("staged");
  o.staged_pipeline = false;
  auto r = OnSteadyClock(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->delivered, 64u);
  EXPECT_NE(r->path_choice.find("; split over 2 consumers: "), std::string::npos)
      << r->path_choice;
}

TEST(StreamThreads, ACorruptBlockIsReportedByNumberOnEveryBranch) {
  for (const bool pipeline : {true, false})
    for (const char* path : {"staged", "registered-direct"}) {
      StreamOptions o = Small(path);
      o.staged_pipeline = pipeline;
      o.faults = CorruptThirdBlock();
      auto r = OnSteadyClock(o, o.faults);
      ASSERT_TRUE(r.ok()) << path << ": " << r.status().ToString();
      EXPECT_EQ(r->delivered, 63u) << path << " pipeline " << pipeline;
      EXPECT_EQ(r->corrupt, 1u) << path << " pipeline " << pipeline;
      ASSERT_EQ(r->lost.size(), 1u) << path;
      EXPECT_EQ(r->lost[0].first, 2u);
      EXPECT_EQ(r->lost[0].last, 2u);
    }
}

TEST(StreamThreads, AFastRateDropsAndCountsEveryBlock) {
  StreamOptions o = Small("registered-direct");
  o.rate_hz = 2000;
  o.blocks = 40;
  auto r = OnSteadyClock(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  uint64_t lost = 0;
  for (const LostRange& l : r->lost) lost += l.last - l.first + 1;
  EXPECT_EQ(lost, r->dropped + r->corrupt + r->failed);
  EXPECT_EQ(r->delivered + lost, o.blocks);
}

// A failure ends a stream at a rate promptly: the producer, waiting for its next block's due
// time, is woken by the failure instead of sleeping out the schedule (here 40 blocks at 2 Hz,
// 20 s). The pipelined staged path ends the stream with a copy's error: the "gpu.copy" point
// fails the 21st copy, the first block's (the pinned baseline makes 20 before the stream).
TEST(StreamThreads, AFailureAtALowRateEndsTheStreamPromptly) {
  StreamOptions o = Small("staged");
  o.rate_hz = 2;
  o.blocks = 40;
  auto faults = std::make_shared<FaultInjector>(5);
  ASSERT_TRUE(faults->AddRule(FaultRule::ErrorOnCall("gpu.copy", 21,
                                                     Status::Cuda(999, "injected copy failure")))
                  .ok());
  const auto t0 = std::chrono::steady_clock::now();
  auto r = OnSteadyClock(o, faults);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(r.ok()) << "the injected copy failure was lost";
  EXPECT_NE(r.status().message().find("injected copy failure"), std::string::npos)
      << r.status().ToString();
  EXPECT_EQ(faults->fired().size(), 1u);
  EXPECT_LT(took, 5.0) << "the stream returned its error only after " << took
                       << " s of a 20 s schedule";
}

// --producer card on the real clock: the card's engine a thread of its own writing the memfd,
// the host's side posting slots as the consumers free them.
TEST(StreamThreads, TheCardAsProducerOnTheSteadyClock) {
  for (const char* path : {"registered-direct", "staged"}) {
    StreamOptions o = Small(path);
    o.producer = "card";
    o.consumers = 2;
    auto r = OnSteadyClock(o);
    ASSERT_TRUE(r.ok()) << path << ": " << r.status().ToString();
    EXPECT_EQ(r->delivered, 64u) << path;
    EXPECT_EQ(r->dropped + r->corrupt + r->failed, 0u) << path;
  }
}

}  // namespace
}  // namespace resmem::stream
