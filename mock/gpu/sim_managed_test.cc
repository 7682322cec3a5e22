#include "mock/gpu/sim_managed.h"

#include <gtest/gtest.h>

namespace resmem::sim {
namespace {

constexpr uint64_t kMiB = 1ull << 20, kGiB = 1ull << 30;

class SimManagedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto p = CudaProfileByName("cuda-13.0-r580");
    ASSERT_TRUE(p.ok());
    profile_ = *p;
    clock_ = std::make_shared<VirtualClock>();
    mm_ = MakeSimManaged(profile_, ManagedModelFor(profile_), clock_);
  }
  uint64_t AllocOnHost(uint64_t bytes) {
    auto id = mm_->Alloc(bytes);
    EXPECT_TRUE(id.ok());
    EXPECT_TRUE(mm_->Touch(*id, 0, bytes, Processor::kCpu, true, 1).ok());  // the CPU fills it
    return *id;
  }
  double PinnedGbps() const { return profile_.link_h2d_gbps; }
  CudaProfile profile_;
  std::shared_ptr<VirtualClock> clock_;
  std::unique_ptr<ManagedMemory> mm_;
};

// Sequential faults in a 2 MiB block move 64K, 64K, 128K, 256K, 512K, 1M: 6 faults per block.
TEST_F(SimManagedTest, FirstTouchFaultsSixTimesPerBlockAndRunsFarBelowTheLink) {
  const uint64_t id = AllocOnHost(4 * kGiB);
  auto s = mm_->Touch(id, 0, 4 * kGiB, Processor::kGpu, false, 1);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->faults, 2048u * 6);
  EXPECT_EQ(s->migrated, 4 * kGiB);
  const double gbps = 4 * kGiB / s->seconds / 1e9;
  EXPECT_LT(gbps, 0.4 * PinnedGbps());
  // Resident now: a second pass reads HBM and moves nothing.
  auto again = mm_->Touch(id, 0, 4 * kGiB, Processor::kGpu, false, 1);
  EXPECT_EQ(again->faults, 0u);
  EXPECT_EQ(again->migrated, 0u);
}

TEST_F(SimManagedTest, PrefetchMovesInBulkNearTheLinkRateAndTheKernelThenFaultsNever) {
  const uint64_t id = AllocOnHost(4 * kGiB);
  auto p = mm_->Prefetch(id, 0, 4 * kGiB, Processor::kGpu);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->faults, 0u);
  EXPECT_GT(4 * kGiB / p->seconds / 1e9, 0.9 * PinnedGbps());
  auto t = mm_->Touch(id, 0, 4 * kGiB, Processor::kGpu, false, 1);
  EXPECT_EQ(t->faults, 0u);
}

TEST_F(SimManagedTest, UntouchedMemoryIsPopulatedWhereFirstTouchedWithoutMigrating) {
  auto id = mm_->Alloc(64 * kMiB);
  auto s = mm_->Touch(*id, 0, 64 * kMiB, Processor::kGpu, true, 1);
  EXPECT_EQ(s->migrated, 0u);
  EXPECT_GT(s->faults, 0u);
}

TEST_F(SimManagedTest, PingPongWithThePreferredLocationOnTheGpuThrashesEveryRound) {
  const uint64_t id = AllocOnHost(2 * kMiB);
  ASSERT_TRUE(mm_->Advise(id, 0, 2 * kMiB, ManagedAdvice::kPreferredLocation, Processor::kGpu).ok());
  auto s = mm_->PingPong(id, 0, 2 * kMiB, 50);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->migrated, 2 * 50 * 2 * kMiB);
  ASSERT_FALSE(s->events.empty());
  EXPECT_NE(s->events.back().find("never pinned"), std::string::npos);
}

// The H100 of 2026-11-23 (docs/hil/2026-11-23-h100-seed004/pingpong-sizes.txt), 64 KiB x 100
// rounds: preferred on the GPU 1115 us a round (throttled: two naps of 500 us), without advice 22
// us (pinned), host-mapped 16.5 us.
TEST_F(SimManagedTest, SmallPingPongPreferredOnTheGpuIsThrottledEveryRoundWithoutAdvicePinned) {
  const uint64_t pref = AllocOnHost(64 << 10), none = AllocOnHost(64 << 10);
  ASSERT_TRUE(mm_->Advise(pref, 0, 64 << 10, ManagedAdvice::kPreferredLocation, Processor::kGpu).ok());
  auto p = mm_->PingPong(pref, 0, 64 << 10, 100);
  auto n = mm_->PingPong(none, 0, 64 << 10, 100);
  ASSERT_TRUE(p.ok() && n.ok());
  const double p_us = p->seconds / 100 * 1e6, n_us = n->seconds / 100 * 1e6;
  EXPECT_GT(p_us, 900) << "throttled at every event after the first 3";
  EXPECT_LT(p_us, 1300) << "H100: 1115 us a round";
  EXPECT_LT(n_us, 100) << "pinned after 10 throttles; H100: 22 us a round";
  auto again = mm_->PingPong(none, 0, 64 << 10, 100);  // still pinned: the host-mapped rate
  ASSERT_TRUE(again.ok());
  EXPECT_NEAR(again->seconds / 100 * 1e6, 16.5, 3) << "H100: 22 us without advice, 16.5 host-mapped";
}

TEST_F(SimManagedTest, PingPongWithoutAdviceIsThrottledThenPinnedByTheDriver) {
  const uint64_t id = AllocOnHost(2 * kMiB);
  auto s = mm_->PingPong(id, 0, 2 * kMiB, 50);
  ASSERT_TRUE(s.ok());
  EXPECT_LT(s->migrated, 2 * 50 * 2 * kMiB);
  EXPECT_GT(s->remote, 0u);
  std::string all;
  for (const auto& e : s->events) all += e + "\n";
  EXPECT_NE(all.find("thrashing detected"), std::string::npos) << all;
  EXPECT_NE(all.find("pinned"), std::string::npos) << all;
}

TEST_F(SimManagedTest, PreferredOnTheHostAndAccessedByTheGpuNeverMigrates) {
  const uint64_t id = AllocOnHost(2 * kMiB);
  ASSERT_TRUE(mm_->Advise(id, 0, 2 * kMiB, ManagedAdvice::kPreferredLocation, Processor::kCpu).ok());
  ASSERT_TRUE(mm_->Advise(id, 0, 2 * kMiB, ManagedAdvice::kAccessedBy, Processor::kGpu).ok());
  auto s = mm_->PingPong(id, 0, 2 * kMiB, 50);
  EXPECT_EQ(s->migrated, 0u);
  EXPECT_EQ(s->faults, 0u);
  EXPECT_EQ(s->remote, 50 * 2 * kMiB);
}

TEST_F(SimManagedTest, ReadMostlyDuplicatesSoBothSidesReadWithoutMigratingAgain) {
  const uint64_t id = AllocOnHost(8 * kMiB);
  ASSERT_TRUE(mm_->Advise(id, 0, 8 * kMiB, ManagedAdvice::kReadMostly, Processor::kGpu).ok());
  auto first = mm_->Touch(id, 0, 8 * kMiB, Processor::kGpu, false, 1);
  EXPECT_EQ(first->migrated, 8 * kMiB);  // the copy
  auto cpu = mm_->Touch(id, 0, 8 * kMiB, Processor::kCpu, false, 1);
  EXPECT_EQ(cpu->migrated, 0u);
  auto gpu = mm_->Touch(id, 0, 8 * kMiB, Processor::kGpu, false, 1);
  EXPECT_EQ(gpu->migrated, 0u);
}

TEST_F(SimManagedTest, OversubscribedWorkingSetEvictsEveryPassAndOneThatFitsDoesNot) {
  ASSERT_TRUE(mm_->ReserveDevice(4 * kGiB).ok());
  const uint64_t big = AllocOnHost(6 * kGiB);
  auto p1 = mm_->Touch(big, 0, 6 * kGiB, Processor::kGpu, false, 2);
  ASSERT_TRUE(p1.ok());
  EXPECT_GT(p1->evicted, 6 * kGiB);        // each pass pushes out what the next one needs
  EXPECT_GT(p1->migrated, 10 * kGiB);
  ASSERT_TRUE(mm_->Free(big).ok());
  const uint64_t small = AllocOnHost(3 * kGiB);
  auto p2 = mm_->Touch(small, 0, 3 * kGiB, Processor::kGpu, false, 2);
  EXPECT_EQ(p2->evicted, 0u);
  EXPECT_EQ(p2->migrated, 3 * kGiB);       // the first pass only
}

TEST_F(SimManagedTest, CpuReadingGpuResidentResultsFaultsThemBackUnlessPrefetched) {
  auto id = mm_->Alloc(256 * kMiB);
  ASSERT_TRUE(mm_->Touch(*id, 0, 256 * kMiB, Processor::kGpu, true, 1).ok());
  auto faulting = mm_->Touch(*id, 0, 256 * kMiB, Processor::kCpu, false, 1);
  EXPECT_EQ(faulting->faults, 128u * 6);
  ASSERT_TRUE(mm_->Touch(*id, 0, 256 * kMiB, Processor::kGpu, true, 1).ok());
  auto pre = mm_->Prefetch(*id, 0, 256 * kMiB, Processor::kCpu);
  auto after = mm_->Touch(*id, 0, 256 * kMiB, Processor::kCpu, false, 1);
  EXPECT_EQ(after->faults, 0u);
  EXPECT_LT(pre->seconds + after->seconds, faulting->seconds);
}

TEST_F(SimManagedTest, BarReadsRunAtTheUncachedRate) {
  auto s = mm_->ReadDeviceThroughBar(16 * kMiB);
  ASSERT_TRUE(s.ok());
  EXPECT_NEAR(16 * kMiB / s->seconds / 1e6, 21.4, 0.01);
}

TEST_F(SimManagedTest, BadRangesAndTheOldDriverAreRefusedWithReasons) {
  auto id = mm_->Alloc(kMiB);
  auto past = mm_->Touch(*id, 512 << 10, kMiB, Processor::kGpu, false, 1);
  EXPECT_FALSE(past.ok());
  EXPECT_NE(past.status().message().find("runs past"), std::string::npos);
  auto old = CudaProfileByName("cuda-4.1-r285");
  auto mm = MakeSimManaged(*old, ManagedModelFor(*old), clock_);
  auto r = mm->Alloc(kMiB);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("CUDA 6"), std::string::npos);
  EXPECT_FALSE(mm_->ReserveDevice(4096).ok());
}

}  // namespace
}  // namespace resmem::sim
