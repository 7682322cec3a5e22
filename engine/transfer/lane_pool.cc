#include "engine/transfer/lane_pool.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define RESMEM_CPU_RELAX() _mm_pause()
#else
#define RESMEM_CPU_RELAX() std::this_thread::yield()
#endif

namespace resmem::transfer {

LanePool::LanePool(LanePoolOptions options)
    : size_(std::max(1, std::min(options.lanes, 0xffff))),
      o_(std::move(options)),
      slots_(new Slot[size_]) {
  for (int i = 1; i < size_; ++i) workers_.emplace_back([this, i] { Worker(i); });
}

LanePool::~LanePool() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_.store(true);
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
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
    uint64_t g = generation_.load(std::memory_order_acquire);
    if (g == seen && !stop_.load(std::memory_order_relaxed)) {
      const auto until = Clock::now() + std::chrono::microseconds(o_.spin_us);
      int polls = 0;
      while ((g = generation_.load(std::memory_order_acquire)) == seen &&
             !stop_.load(std::memory_order_relaxed)) {
        RESMEM_CPU_RELAX();
        if (++polls % 64 == 0 && Clock::now() >= until) break;
      }
      if (g == seen && !stop_.load()) {
        std::unique_lock<std::mutex> l(mu_);
        sleepers_.fetch_add(1);  // seq_cst: Run either sees a sleeper or we see its generation
        sleeps_.fetch_add(1, std::memory_order_relaxed);
        cv_.wait(l, [&] { return stop_.load() || generation_.load() != seen; });
        sleepers_.fetch_sub(1);
        g = generation_.load(std::memory_order_acquire);
      }
    }
    if (stop_.load()) return;
    seen = g;
    if (lane < static_cast<int>(g & 0xffff) && Enter(lane, g >> 16)) (*job_)(lane);
    if (lane < static_cast<int>(g & 0xffff))
      slots_[lane].word.store(((g >> 16) << 2) | kLeft, std::memory_order_release);
  }
}

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
  if (sleepers_.load() > 0) {
    // Taking the mutex orders this wake-up after any worker's predicate check.
    { std::lock_guard<std::mutex> l(mu_); }
    cv_.notify_all();
  }
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
      RESMEM_CPU_RELAX();
      if (++polls % 4096 == 0) std::this_thread::yield();
    }
  }
  job_ = nullptr;
}

}  // namespace resmem::transfer
