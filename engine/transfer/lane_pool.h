// Persistent lane threads for the staged transfer path. One Run() hands a job to `lanes` lanes
// at once (lane 0 is the calling thread) and returns when every lane has finished it.
//
// Why not a condition variable per job: the first H100 run (docs/hil/2026-11-21-h100,
// stream-staged.json) moved 16 MiB blocks at 13.2 GB/s through 16 lanes woken by one
// condition_variable::notify_all per copy; a 16 MiB copy at PCIe Gen5 speed lasts ~0.3 ms
// (FACTS.md: pinned 54.5 GB/s), the same order as waking 15 threads that then queue on one mutex.
// Here an idle lane spins on an atomic generation counter for `spin_us` after its last job (so
// back-to-back copies start within a microsecond) and only then sleeps on a futex that one
// FUTEX_WAKE opens for all; completion is one word per worker the caller polls.
//
// Contract: Run() is not reentrant and not for concurrent callers (one copy at a time per
// engine, as TransferEngine::Copy states). `job(lane)` runs exactly once for each lane in
// [0, lanes) per Run, lanes <= size(). The destructor stops and joins every worker.
#ifndef RESMEM_ENGINE_TRANSFER_LANE_POOL_H_
#define RESMEM_ENGINE_TRANSFER_LANE_POOL_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace resmem::transfer {

// One step of a spin-wait: PAUSE on x86 (the lanes, the segment pipelines and staged_probe all
// poll shared words this way), a yield elsewhere.
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

struct LanePoolOptions {
  int lanes = 1;        // lanes including the calling thread (workers = lanes - 1)
  int spin_us = 1000;   // how long an idle worker polls before it sleeps; 0: sleep at once
  // Pin worker i to CPU (first_cpu + i) % online CPUs (sched_setaffinity). Off by default: a
  // shared host may run other work on those CPUs.
  bool pin_threads = false;
  int first_cpu = 1;
  // Called once on each worker thread before its first job (e.g. to bind a GPU context).
  std::function<void(int lane)> on_start;
};

class LanePool {
 public:
  explicit LanePool(LanePoolOptions options);
  ~LanePool();
  LanePool(const LanePool&) = delete;
  LanePool& operator=(const LanePool&) = delete;

  int size() const { return size_; }
  void Run(int lanes, const std::function<void(int lane)>& job);
  // As Run, but once job(0) has returned the run is closed: a worker that has not started it by
  // then skips it, and RunElastic returns as soon as the workers that did start have finished.
  // For jobs whose lane 0 returns only when the work is done (the other lanes just help), so a
  // worker the OS has not scheduled (a busy or shared host) cannot hold the copy back: on the
  // H100 host a descheduled lane kept copies that were done at 50 us from returning until
  // 1100 us (docs/hil/2026-11-24-h100-staged4, run 2). job(lane) runs at most once per lane >= 1.
  void RunElastic(int lanes, const std::function<void(int lane)>& job);
  // Sends every idle worker to sleep now rather than at the end of its spin_us, for a caller
  // that needs the CPUs for other work: another pool's lanes above all. Two pools spinning on
  // one host take each other's CPUs: in bench, where the staged path's 16 lanes were still
  // spinning when the staged-file path's 16 filled, staged-file read 54-62% of pinned from 1 to
  // 64 MiB against 74-83% for staged (H200, docs/hil/2026-11-28-h200-staged13, run 4). Workers
  // inside a job finish it first; the next Run wakes the sleepers as always. Any thread, any
  // time.
  void Park();
  // Times a worker went to sleep on the futex (for tests and reports).
  uint64_t sleeps() const { return sleeps_.load(); }

 private:
  void Worker(int lane);

  int size_;
  LanePoolOptions o_;
  std::vector<std::thread> workers_;
  const std::function<void(int)>* job_ = nullptr;  // valid while a Run is in progress
  // (run counter << 16) | lanes of that run: one word, so a worker never pairs one run's counter
  // with another run's lane count.
  std::atomic<uint64_t> generation_{0};
  // A run's bookkeeping, with no word that every lane writes: one compare-and-swap per worker on
  // one shared word took the last of 15 workers 4.9 us to enter an empty job on the H100 host,
  // where the generation word alone reached all of them in 0.46 us (staged_probe --handoff,
  // docs/hil/2026-11-24-h100-staged6). Worker w writes only its own line, slots_[w]:
  // (run << 2) | kEntered when it takes the run, (run << 2) | kLeft when it is done with it
  // (finished, or backed out of a closed run). An elastic run is closed by storing its number in
  // closed_. Entering is: store kEntered, full fence, load closed_; closing is: store closed_,
  // full fence, load each slot. Of the two stores at least one is seen by the other side's load
  // (store-load order under seq_cst), so a worker either sees the run closed and backs out, or
  // the caller sees it entered and waits for its kLeft. A worker's last touch of a run is its
  // kLeft store: the caller may return and start the next run at once.
  static constexpr uint64_t kEntered = 1, kLeft = 2;
  struct alignas(64) Slot {
    std::atomic<uint64_t> word{0};
  };
  std::unique_ptr<Slot[]> slots_;                     // one per lane; slot 0 unused
  alignas(64) std::atomic<uint64_t> closed_{0};      // the last elastic run closed
  bool Enter(int lane, uint64_t run);
  void RunJoined(int lanes, const std::function<void(int lane)>& job, bool elastic);
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> parks_{0};  // Park() calls: a change ends every worker's spin
  std::atomic<uint64_t> sleeps_{0};
  alignas(64) std::atomic<uint32_t> wake_seq_{0};  // the futex sleeping workers wait on
  void WakeSleepers();
};

}  // namespace resmem::transfer

#endif  // RESMEM_ENGINE_TRANSFER_LANE_POOL_H_
