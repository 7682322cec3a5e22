// The staged path's lane threads: every lane runs each job exactly once, back-to-back runs with
// changing lane counts never run a lane twice or skip one, sleeping lanes wake up, and the pool
// stops cleanly; an elastic run does not wait for a worker that has not started, never lets one
// in after it returned, and waits for every worker that did start.
#include "engine/transfer/lane_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
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

// Park: workers that would spin for 100 s go to sleep at once, and wake for the next run. Without
// it none sleeps in the time the test waits.
TEST(LanePool, ParkedLanesSleepNowAndWakeForTheNextRun) {
  LanePoolOptions o;
  o.lanes = 4;
  o.spin_us = 100 * 1000 * 1000;
  LanePool pool(o);
  std::atomic<int> hits{0};
  pool.Run(4, [&](int) { hits.fetch_add(1); });
  auto sleeps_within = [&](uint64_t want, int ms) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (pool.sleeps() < want && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return pool.sleeps();
  };
  EXPECT_EQ(sleeps_within(1, 100), 0u) << "spinning workers slept without Park";
  pool.Park();
  EXPECT_EQ(sleeps_within(3, 5000), 3u) << "every worker asleep after Park";
  pool.Run(4, [&](int) { hits.fetch_add(1); });
  EXPECT_EQ(hits.load(), 8);
  pool.Park();
  EXPECT_EQ(sleeps_within(6, 5000), 6u) << "asleep again after the second Park";
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

TEST(LanePool, ElasticRunLeavesALateWorkerOutAndWaitsForTheOthers) {
  using Steady = std::chrono::steady_clock;
  LanePoolOptions o;
  o.lanes = 4;
  o.spin_us = 0;
  // Worker 3 starts 300 ms late: an unscheduled thread on a busy host.
  o.on_start = [](int lane) {
    if (lane == 3) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  };
  LanePool pool(o);
  std::atomic<int> entered[4] = {}, finished[4] = {};
  std::atomic<bool> returned{false};
  std::atomic<int> entered_after_return{0};
  auto job = [&](int lane) {
    if (returned.load()) entered_after_return.fetch_add(1);
    entered[lane].fetch_add(1);
    if (lane != 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    finished[lane].fetch_add(1);
  };
  const auto t0 = Steady::now();
  pool.RunElastic(4, job);
  const auto took = Steady::now() - t0;
  returned.store(true);
  // Every worker that entered has finished before the return.
  for (int l = 0; l < 4; ++l) EXPECT_EQ(entered[l].load(), finished[l].load()) << "lane " << l;
  EXPECT_EQ(entered[0].load(), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(entered_after_return.load(), 0) << "a worker entered a closed run";
  if (took < std::chrono::milliseconds(250)) {
    EXPECT_EQ(entered[3].load(), 0) << "the late worker was waited for";
  } else {
    std::printf("note: RunElastic took %lld ms (slow host): the late worker may have joined\n",
                (long long)std::chrono::duration_cast<std::chrono::milliseconds>(took).count());
  }
  // The late worker takes part in the next run, once.
  const int before = entered[3].load();
  returned.store(false);
  pool.Run(4, job);
  EXPECT_EQ(entered[3].load(), before + 1);
}

TEST(LanePool, ElasticAndPlainRunsMixedRunEachLaneAtMostOnce) {
  LanePoolOptions o;
  o.lanes = 8;
  o.spin_us = 50;
  LanePool pool(o);
  std::vector<std::atomic<int>> hits(8);
  for (int run = 0; run < 2000; ++run) {
    for (auto& h : hits) h.store(0);
    const int lanes = 1 + run % 8;
    auto job = [&](int lane) { hits[lane].fetch_add(1); };
    if (run % 2) pool.RunElastic(lanes, job);
    else pool.Run(lanes, job);
    ASSERT_EQ(hits[0].load(), 1) << "run " << run;
    for (int l = 1; l < 8; ++l) {
      ASSERT_LE(hits[l].load(), l < lanes ? 1 : 0) << "run " << run << " lane " << l;
      if (run % 2 == 0 && l < lanes) {
        ASSERT_EQ(hits[l].load(), 1) << "run " << run;
      }
    }
  }
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

// The close races the workers' entry on every run here: lane 0 returns at once, so a worker is
// entering just as the caller closes. Whatever the interleaving, a run returns only when no
// worker is inside its job, and no worker enters it afterwards (the per-lane hand-off's
// store/fence/load pair on each side, lane_pool.h).
TEST(LanePool, ElasticCloseRacingTheWorkersNeverLeavesOneInside) {
  LanePoolOptions o;
  o.lanes = 6;
  o.spin_us = 200;
  LanePool pool(o);
  std::vector<std::atomic<int>> inside(6);
  std::atomic<int> run_now{0}, stale{0};
  uint64_t entered = 0;
  for (int run = 1; run <= 20000; ++run) {
    run_now.store(run);
    std::atomic<int> count{0};
    pool.RunElastic(6, [&](int lane) {
      if (lane == 0) return;
      if (run_now.load() != run) stale.fetch_add(1);
      inside[lane].store(1);
      count.fetch_add(1);
      for (volatile int spin = 0; spin < 50; ++spin) {
      }
      inside[lane].store(0);
    });
    for (int l = 1; l < 6; ++l) ASSERT_EQ(inside[l].load(), 0) << "run " << run << " lane " << l;
    entered += count.load();
  }
  EXPECT_EQ(stale.load(), 0) << "a worker ran a job after its run had returned";
  std::printf("note: %llu of %d worker slots entered their run before it closed\n",
              (unsigned long long)entered, 5 * 20000);
}

}  // namespace
}  // namespace resmem::transfer
