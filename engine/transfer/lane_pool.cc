#include "engine/transfer/lane_pool.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>

#include <algorithm>
#include <chrono>

namespace resmem::transfer {

LanePool::LanePool(LanePoolOptions options)
    : size_(std::max(1, std::min(options.lanes, 0xffff))),
      o_(std::move(options)),
      slots_(new Slot[size_]) {
  for (int i = 1; i < size_; ++i) workers_.emplace_back([this, i] { Worker(i); });
}

LanePool::~LanePool() {
  stop_.store(true);
  WakeSleepers();
  for (auto& t : workers_) t.join();
}

// Sleeping workers wait on wake_seq_ with FUTEX_WAIT and are all woken by one FUTEX_WAKE: each
// returns on its own, where a condition variable's notify_all made the 15 of them take its mutex
// one after another (an empty job after a 3 ms pause, every lane asleep: 54-114 us on the H100
// host, docs/hil/2026-11-24-h100-staged6 run 2).
void LanePool::WakeSleepers() {
  wake_seq_.fetch_add(1);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&wake_seq_), FUTEX_WAKE_PRIVATE, INT_MAX,
          nullptr, nullptr, 0);
}

void LanePool::Worker(int lane) {
  if (o_.pin_threads) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus > 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(static_cast<int>((o_.first_cpu + lane - 1) % cpus), &set);
      sched_setaffinity(0, sizeof set, &set);  // best effort: a refused pin leaves it floating
    }
  }
  if (o_.on_start) o_.on_start(lane);
  uint64_t seen = 0;
  using Clock = std::chrono::steady_clock;
  for (;;) {
    // Poll for the next generation, then sleep.
    const uint64_t parks = parks_.load(std::memory_order_acquire);
    uint64_t g = generation_.load(std::memory_order_acquire);
    if (g == seen && !stop_.load(std::memory_order_relaxed)) {
      const auto until = Clock::now() + std::chrono::microseconds(o_.spin_us);
      int polls = 0;
      while ((g = generation_.load(std::memory_order_acquire)) == seen &&
             !stop_.load(std::memory_order_relaxed) &&
             parks_.load(std::memory_order_relaxed) == parks) {
        CpuRelax();
        if (++polls % 64 == 0 && Clock::now() >= until) break;
      }
      while (g == seen && !stop_.load()) {
        // seq_cst: Run either sees this sleeper and bumps wake_seq_ after storing the
        // generation, or this load of the generation sees it; a bump after the wake_seq_ load
        // makes FUTEX_WAIT return at once.
        sleepers_.fetch_add(1);
        const uint32_t w = wake_seq_.load();
        if ((g = generation_.load()) == seen && !stop_.load()) {
          sleeps_.fetch_add(1, std::memory_order_relaxed);
          syscall(SYS_futex, reinterpret_cast<uint32_t*>(&wake_seq_), FUTEX_WAIT_PRIVATE, w,
                  nullptr, nullptr, 0);
        }
        sleepers_.fetch_sub(1);
        g = generation_.load(std::memory_order_acquire);
      }
    }
    if (stop_.load()) return;
    seen = g;
    if (lane < static_cast<int>(g & 0xffff)) {
      if (Enter(lane, g >> 16)) (*job_)(lane);
      slots_[lane].word.store(((g >> 16) << 2) | kLeft, std::memory_order_release);
    }
  }
}

void LanePool::Park() { parks_.fetch_add(1, std::memory_order_release); }

bool LanePool::Enter(int lane, uint64_t run) {
  // seq_cst store and load: the store-load pair of the Dekker hand-shake with RunJoined's close.
  slots_[lane].word.store((run << 2) | kEntered, std::memory_order_seq_cst);
  return closed_.load(std::memory_order_seq_cst) < run;
}

void LanePool::Run(int lanes, const std::function<void(int)>& job) { RunJoined(lanes, job, false); }

void LanePool::RunElastic(int lanes, const std::function<void(int)>& job) {
  RunJoined(lanes, job, true);
}

void LanePool::RunJoined(int lanes, const std::function<void(int)>& job, bool elastic) {
  lanes = std::max(1, std::min(lanes, size_));
  if (lanes == 1) return job(0);
  job_ = &job;
  const uint64_t run = (generation_.load(std::memory_order_relaxed) >> 16) + 1;
  // seq_cst: publishes job_ with the generation.
  generation_.store((run << 16) | static_cast<uint64_t>(lanes));
  if (sleepers_.load() > 0) WakeSleepers();
  job(0);
  // Plain: wait until every worker has left the run. Elastic: close the run, then wait for the
  // workers that entered it. Spin: a lane's share of a copy lasts tens of microseconds; yield now
  // and then so a host with fewer CPUs than lanes still lets the workers run.
  if (elastic) closed_.store(run, std::memory_order_seq_cst);
  const uint64_t entered = (run << 2) | kEntered, left = (run << 2) | kLeft;
  int polls = 0;
  for (int w = 1; w < lanes; ++w) {
    for (;;) {
      const uint64_t s = slots_[w].word.load(std::memory_order_seq_cst);
      if (s == left || (elastic && s != entered)) break;
      CpuRelax();
      if (++polls % 4096 == 0) std::this_thread::yield();
    }
  }
  job_ = nullptr;
}

}  // namespace resmem::transfer
