// The staged path's lane threads: every lane runs each job exactly once, back-to-back runs with
// changing lane counts never run a lane twice or skip one, sleeping lanes wake up, and the pool
// stops cleanly.
#include "engine/transfer/lane_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace resmem::transfer {
namespace {

TEST(LanePool, EveryLaneRunsEachJobOnceAcrossManyRuns) {
  LanePoolOptions o;
  o.lanes = 8;
  o.spin_us = 200;
  LanePool pool(o);
  ASSERT_EQ(pool.size(), 8);
  std::vector<std::atomic<int>> hits(8);
  for (auto& h : hits) h.store(0);
  int expected[8] = {};
  for (int run = 0; run < 2000; ++run) {
    const int lanes = 1 + run % 8;  // the lane count changes every run
    pool.Run(lanes, [&](int lane) { hits[lane].fetch_add(1); });
    for (int l = 0; l < lanes; ++l) ++expected[l];
  }
  for (int l = 0; l < 8; ++l) EXPECT_EQ(hits[l].load(), expected[l]) << "lane " << l;
}

TEST(LanePool, RunReturnsOnlyAfterEveryLaneFinished) {
  LanePoolOptions o;
  o.lanes = 4;
  LanePool pool(o);
  std::atomic<int> done{0};
  pool.Run(4, [&](int lane) {
    std::this_thread::sleep_for(std::chrono::milliseconds(lane == 3 ? 30 : 1));
    done.fetch_add(1);
  });
  EXPECT_EQ(done.load(), 4);
}

TEST(LanePool, LanesThatSleptWakeForTheNextRun) {
  LanePoolOptions o;
  o.lanes = 4;
  o.spin_us = 0;  // sleep at once
  LanePool pool(o);
  std::atomic<int> hits{0};
  for (int run = 0; run < 50; ++run) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    pool.Run(4, [&](int) { hits.fetch_add(1); });
  }
  EXPECT_EQ(hits.load(), 200);
  EXPECT_GT(pool.sleeps(), 0u);
}

TEST(LanePool, MoreLanesThanThePoolAreClampedAndOneLaneNeedsNoWorker) {
  LanePoolOptions o;
  o.lanes = 3;
  LanePool pool(o);
  std::atomic<int> hits{0};
  pool.Run(10, [&](int lane) {
    EXPECT_LT(lane, 3);
    hits.fetch_add(1);
  });
  EXPECT_EQ(hits.load(), 3);
  LanePoolOptions single;
  LanePool alone(single);
  std::thread::id ran;
  alone.Run(1, [&](int) { ran = std::this_thread::get_id(); });
  EXPECT_EQ(ran, std::this_thread::get_id());
}

TEST(LanePool, PinnedThreadsStillRunEveryLane) {
  LanePoolOptions o;
  o.lanes = 4;
  o.pin_threads = true;
  LanePool pool(o);
  std::atomic<int> hits{0};
  for (int run = 0; run < 10; ++run) pool.Run(4, [&](int) { hits.fetch_add(1); });
  EXPECT_EQ(hits.load(), 40);
}

}  // namespace
}  // namespace resmem::transfer
