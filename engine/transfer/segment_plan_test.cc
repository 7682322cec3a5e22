#include "engine/transfer/segment_plan.h"

#include <gtest/gtest.h>

#include <chrono>
#include <numeric>

namespace resmem::transfer {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr PlanDirection kDirs[] = {PlanDirection::kHostToDevice, PlanDirection::kDeviceToHost};

std::vector<uint64_t> Uniform(uint64_t length, uint64_t seg) {
  std::vector<uint64_t> v;
  for (uint64_t at = 0; at < length; at += seg) v.push_back(std::min(seg, length - at));
  return v;
}

TEST(SegmentPlan, CutsTheWholeCopyIntoWholeUnitsNoLargerThanTheLimit) {
  const StagingCosts costs;
  for (PlanDirection dir : kDirs) {
    for (uint64_t length : std::initializer_list<uint64_t>{4096, 64 << 10, 1 * kMiB + 4096, 4 * kMiB, 64 * kMiB, 256 * kMiB}) {
      const SegmentPlan p = PlanSegments(dir, length, 8 * kMiB, costs);
      ASSERT_FALSE(p.segments.empty());
      EXPECT_EQ(std::accumulate(p.segments.begin(), p.segments.end(), uint64_t{0}), length);
      for (size_t i = 0; i < p.segments.size(); ++i) {
        EXPECT_LE(p.segments[i], 8 * kMiB);
        EXPECT_GT(p.segments[i], 0u);
        if (i + 1 < p.segments.size()) {
          EXPECT_EQ(p.segments[i] % 4096, 0u) << length;
        }
      }
      EXPECT_GT(p.predicted_us, p.pinned_us) << "a staged copy cannot beat one pinned DMA";
      EXPECT_DOUBLE_EQ(p.predicted_us, PredictSegmentsUs(dir, p.segments, costs));
    }
  }
  EXPECT_TRUE(PlanSegments(PlanDirection::kHostToDevice, 0, 8 * kMiB, costs).segments.empty());
}

// Copies far longer than the ring (a 100 GiB reservation in one call) are planned in
// milliseconds, and no segment is ever larger than a ring buffer.
TEST(SegmentPlan, LongCopiesKeepEverySegmentWithinTheBuffer) {
  const StagingCosts costs;
  for (PlanDirection dir : kDirs) {
    for (uint64_t length : {512 * kMiB + 4096, 4096 * kMiB + 12288, 102400 * kMiB}) {
      const auto t0 = std::chrono::steady_clock::now();
      const SegmentPlan p = PlanSegments(dir, length, 8 * kMiB, costs);
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      EXPECT_LT(ms, 2000) << "planning " << length << " bytes";
      EXPECT_EQ(std::accumulate(p.segments.begin(), p.segments.end(), uint64_t{0}), length);
      for (uint64_t seg : p.segments) ASSERT_LE(seg, 8 * kMiB) << length;
      // Device to host the last drain stands alone: the plan still ends small.
      if (dir == PlanDirection::kDeviceToHost) {
        EXPECT_LT(p.segments.back(), 8 * kMiB);
      }
    }
  }
}

// The plan is the model's best: no equal cut of the same copy (on the plan's units) does better.
TEST(SegmentPlan, NoEqualCutBeatsThePlan) {
  const StagingCosts costs;
  for (PlanDirection dir : kDirs) {
    for (uint64_t length : {1 * kMiB, 4 * kMiB, 16 * kMiB, 64 * kMiB}) {
      const SegmentPlan p = PlanSegments(dir, length, 8 * kMiB, costs);
      for (uint64_t seg = 64 << 10; seg <= 8 * kMiB; seg *= 2) {
        EXPECT_LE(p.predicted_us, PredictSegmentsUs(dir, Uniform(length, seg), costs) + 1e-6)
            << (dir == PlanDirection::kHostToDevice ? "H2D " : "D2H ") << length << " vs " << seg;
      }
    }
  }
}

// Host to device the first fill stands alone, so a fast fill starts with a small segment and
// grows; device to host the last drain stands alone, so the plan ends small.
TEST(SegmentPlan, SmallWhereTheCopyIsExposed) {
  const StagingCosts costs;
  const SegmentPlan h2d = PlanSegments(PlanDirection::kHostToDevice, 16 * kMiB, 8 * kMiB, costs);
  ASSERT_GE(h2d.segments.size(), 3u);
  EXPECT_LT(h2d.segments.front(), h2d.segments.back());
  const SegmentPlan d2h = PlanSegments(PlanDirection::kDeviceToHost, 16 * kMiB, 8 * kMiB, costs);
  ASSERT_GE(d2h.segments.size(), 3u);
  EXPECT_LT(d2h.segments.back(), *std::max_element(d2h.segments.begin(), d2h.segments.end()));
}

// Where each DMA costs far more than filling the copy, one DMA is best; where DMAs cost nothing
// beyond their bytes, more segments are.
TEST(SegmentPlan, FollowsThePerDmaCost) {
  StagingCosts dear;
  dear.per_dma_us = 10000;
  for (PlanDirection dir : kDirs)
    EXPECT_EQ(PlanSegments(dir, 4 * kMiB, 8 * kMiB, dear).segments.size(), 1u);
  StagingCosts cheap;
  cheap.per_dma_us = 0;
  cheap.submit_us = 0;
  EXPECT_GT(PlanSegments(PlanDirection::kHostToDevice, 4 * kMiB, 8 * kMiB, cheap).segments.size(),
            PlanSegments(PlanDirection::kHostToDevice, 4 * kMiB, 8 * kMiB, StagingCosts()).segments.size());
}

// The ceiling grows with the copy from 1 MiB: fixed costs weigh less on a longer one.
TEST(SegmentPlan, CeilingGrowsWithLength) {
  const StagingCosts costs;
  for (PlanDirection dir : kDirs) {
    double last = 0;
    for (uint64_t length : {1 * kMiB, 4 * kMiB, 16 * kMiB, 64 * kMiB, 256 * kMiB}) {
      const double pct = PlanSegments(dir, length, 8 * kMiB, costs).percent_of_pinned();
      EXPECT_GT(pct, last) << length;
      EXPECT_LT(pct, 100.0);
      last = pct;
    }
  }
}

// Every rate at its better figure can only be faster: the ceiling is at least the plan's figure.
TEST(SegmentPlan, TheCeilingIsAtLeastThePlan) {
  const StagingCosts costs;
  for (PlanDirection dir : kDirs)
    for (uint64_t length : {1 * kMiB, 4 * kMiB, 16 * kMiB, 64 * kMiB})
      EXPECT_GE(PlanSegments(dir, length, 8 * kMiB, costs.Ceiling()).percent_of_pinned(),
                PlanSegments(dir, length, 8 * kMiB, costs).percent_of_pinned() - 1e-9);
}

TEST(SegmentPlan, ParsesCostsAndNamesTheBadField) {
  Result<StagingCosts> c = ParseStagingCosts("5.5,90,50,85,45,3,53.5,48,2");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_DOUBLE_EQ(c.value().start_us, 5.5);
  EXPECT_DOUBLE_EQ(c.value().fill_alone_gbps, 90);
  EXPECT_DOUBLE_EQ(c.value().fill_gbps, 50);
  EXPECT_DOUBLE_EQ(c.value().drain_alone_gbps, 85);
  EXPECT_DOUBLE_EQ(c.value().drain_gbps, 45);
  EXPECT_DOUBLE_EQ(c.value().submit_us, 3);
  EXPECT_DOUBLE_EQ(c.value().dma_gbps, 53.5);
  EXPECT_DOUBLE_EQ(c.value().dma_beside_gbps, 48);
  EXPECT_DOUBLE_EQ(c.value().per_dma_us, 2);
  // What Describe prints parses back.
  const std::string shown = StagingCosts().Describe();
  Result<StagingCosts> back = ParseStagingCosts(shown.substr(shown.find("--costs ") + 8));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_DOUBLE_EQ(back.value().dma_gbps, StagingCosts().dma_gbps);
  struct Bad { const char* text; const char* says; } bad[] = {
      {"5,90,50,85,45,3,0,48,2", "dma_gbps"}, {"5,x,50,85,45,3,50,48,2", "fill_alone_gbps"},
      {"5,90,50,85,45,3,50,48", "8 numbers"}, {"5,90,50,85,45,3,50,48,2,1", "10 numbers"},
      {"5,90,50,85,45,3,50,0,2", "dma_beside_gbps"}, {"-1,90,50,85,45,3,50,48,2", "start_us"},
      {"", "1 numbers"}};
  for (const Bad& b : bad) {
    Result<StagingCosts> r = ParseStagingCosts(b.text);
    ASSERT_FALSE(r.ok()) << b.text;
    EXPECT_EQ(r.status().code(), Status::InvalidArgument("").code());
    EXPECT_NE(r.status().message().find(b.says), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace resmem::transfer
