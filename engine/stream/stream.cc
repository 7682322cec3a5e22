#include "engine/stream/stream.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "backends/card/card_abi.h"
#include "backends/cuda/block_pattern.h"
#include "backends/host/host_region.h"
#include "engine/stream/card_feed.h"
#include "engine/transfer/block_check.h"
#include "engine/transfer/transfer_engine.h"

namespace resmem::stream {
namespace {

uint64_t FillSeed(uint64_t seed, int slot) { return pattern::Mix(seed * 7919 + slot); }

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * (v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

Result<double> PinnedBaseline(Gpu& gpu, uint64_t block) {
  RESMEM_ASSIGN_OR_RETURN(auto pinned, gpu.AllocPinned(block, 0));
  RESMEM_ASSIGN_OR_RETURN(auto dev, gpu.AllocDevice(block));
  std::vector<double> gbps;
  Status last;
  for (int i = 0; i < 20; ++i) {  // a copy that fails (an injected fault) is left out
    auto s = gpu.Copy(CopyDirection::kHostToDevice, *pinned, 0, *dev, 0, block);
    if (s.ok())
      gbps.push_back(s->GBps());
    else
      last = s.status();
  }
  if (gbps.empty()) return last.WithContext("pinned baseline: every copy failed");
  return Percentile(gbps, 0.5);
}

// Sorts the lost blocks by sequence number and merges consecutive ones with the same reason.
std::vector<LostRange> MergeLost(std::vector<std::pair<uint64_t, std::string>> lost) {
  std::sort(lost.begin(), lost.end());
  std::vector<LostRange> out;
  for (auto& [seq, why] : lost) {
    if (!out.empty() && out.back().last + 1 == seq && out.back().reason == why)
      out.back().last = seq;
    else
      out.push_back(LostRange{seq, seq, std::move(why)});
  }
  return out;
}

// What RunStream's phases share: the options, the ring standing in for the reserved region,
// the engines and device buffers the consumers copy through, and what the run found so far.
struct Stream {
  Stream(Gpu& g, const StreamOptions& opts) : gpu(g), o(opts), slot_damaged(opts.slots, 0) {}
  Gpu& gpu;
  const StreamOptions& o;
  std::unique_ptr<HostMemory> region;  // o.slots slots of o.block_bytes
  std::vector<std::unique_ptr<transfer::TransferEngine>> engines;  // consumer c: engines[c] or last
  std::vector<std::unique_ptr<DeviceBuffer>> devs;  // consumer c's (pipelined: the queue's)
  int consumers = 1;
  bool pipelined = false;  // staged on a real clock, through one engine's CopyQueue
  std::vector<double> latencies;  // ms per delivered block
  // Lost blocks (sequence number, reason), merged into ranges at the end.
  std::vector<std::pair<uint64_t, std::string>> lost;
  std::vector<char> slot_damaged;  // the slot holds a bit flipped by stream.block
  // --producer card: the card writing the ring, and the slot each block went to (the card's
  // sequence numbers skip the blocks it lost, so block seq is not in slot seq % slots).
  std::unique_ptr<CardFeed> card;
  std::vector<int> slot_of;
  StreamResult r;
};

// The slot block seq was written into.
int SlotOf(const Stream& st, uint64_t seq) {
  return st.card ? st.slot_of[seq] : static_cast<int>(seq % st.o.slots);
}

// Whether block seq arrived whole in dev: the pattern's check (a kernel on CUDA), or for the
// card's blocks the device's checksum against the block the card makes for seq (0 or 1).
Result<uint64_t> DeviceCheck(Stream& st, uint64_t seq, DeviceBuffer& dev) {
  if (!st.card)
    return transfer::DeviceMismatches(st.gpu, dev, 0, st.o.block_bytes, seq, FillSeed(st.o.seed, SlotOf(st, seq)));
  RESMEM_ASSIGN_OR_RETURN(uint64_t sum, st.gpu.DeviceChecksum(dev, 0, st.o.block_bytes));
  return static_cast<uint64_t>(sum != st.card->BlockFnv(seq));
}

Status CheckOptions(const StreamOptions& o) {
  if (o.block_bytes == 0 || o.block_bytes % 4096)
    return Status::InvalidArgument("--block must be a positive multiple of 4 KiB");
  if (o.slots < 2) return Status::InvalidArgument("--slots must be at least 2");
  if (o.rate_hz < 0) return Status::InvalidArgument("--rate must be >= 0 (0 = flat out)");
  if (o.consumers < 1) return Status::InvalidArgument("--consumers must be at least 1");
  if (o.copy_attempts < 1) return Status::InvalidArgument("copy_attempts must be at least 1");
  return Status::Ok();
}

// Maps the ring (host_kind) and fills every slot with its slot's pattern.
Status MapRing(Stream& st) {
  const StreamOptions& o = st.o;
  RESMEM_ASSIGN_OR_RETURN(host::HostKind kind, host::ParseHostKind(o.host_kind));
  const uint64_t ring = o.block_bytes * o.slots;
  RESMEM_ASSIGN_OR_RETURN(st.region, host::MapHostMemory(kind, ring));
  for (int s = 0; s < o.slots; ++s)
    RESMEM_RETURN_IF_ERROR(transfer::FillPattern(*st.region, s * o.block_bytes, o.block_bytes,
                                                 ~0ull, FillSeed(o.seed, s)));
  return Status::Ok();
}

// Staged on a real clock without the queue: one engine per consumer (an engine's staged copies
// are one at a time), the lanes split between them, so while one consumer's block is checked on
// the device, another's is copied. Replaces st.engines when there is more than one consumer.
Status SplitStagedEngines(Stream& st, Clock& clock, const transfer::TransferOptions& to) {
  const StreamOptions& o = st.o;
  st.consumers = std::max(1, std::min(o.staged_consumers > 0 ? o.staged_consumers : o.consumers,
                                      o.staging.staging_lanes));
  if (st.consumers <= 1) return Status::Ok();
  st.engines.clear();
  transfer::TransferOptions split = to;
  split.allowed = {transfer::Path::kStaged};
  split.staging_lanes = std::max(1, o.staging.staging_lanes / st.consumers);
  for (int c = 0; c < st.consumers; ++c) {
    RESMEM_ASSIGN_OR_RETURN(auto e,
                            transfer::TransferEngine::Open(st.gpu, *st.region, clock, split));
    st.engines.push_back(std::move(e));
  }
  st.r.path_choice += "; split over " + std::to_string(st.consumers) + " consumers: " +
                      st.engines[0]->choice().Describe() + " each";
  return Status::Ok();
}

// Opens the engines (the engine's choice of path, or o.path), measures the pinned baseline and
// decides the consumers: one on a virtual clock or through the staged queue, else o.consumers
// (staged: SplitStagedEngines).
Status OpenEngines(Stream& st, Clock& clock) {
  const StreamOptions& o = st.o;
  transfer::TransferOptions to = o.staging;
  if (!o.path.empty()) {
    RESMEM_ASSIGN_OR_RETURN(transfer::Path p, transfer::ParsePath(o.path));
    to.allowed = {p};
  }
  {
    RESMEM_ASSIGN_OR_RETURN(auto first,
                            transfer::TransferEngine::Open(st.gpu, *st.region, clock, to));
    st.engines.push_back(std::move(first));
  }
  st.r.path_choice = st.engines[0]->choice().Describe();
  RESMEM_ASSIGN_OR_RETURN(st.r.pinned_gbps, PinnedBaseline(st.gpu, o.block_bytes));
  const bool staged = st.engines[0]->choice().path == transfer::Path::kStaged;
  st.consumers = clock.is_virtual() ? 1 : o.consumers;
  st.pipelined = staged && !clock.is_virtual() && o.staged_pipeline;
  if (st.pipelined) {
    st.consumers = 1;
    st.r.path_choice += "; pipelined: blocks queue through one engine's segment ring, each checked "
                        "on the device as it arrives";
  } else if (staged && !clock.is_virtual()) {
    RESMEM_RETURN_IF_ERROR(SplitStagedEngines(st, clock, to));
  }
  return Status::Ok();
}

// One device buffer per consumer; pipelined: the 4 buffers a block waits in between its DMA and
// its check.
Status AllocDeviceSlots(Stream& st) {
  const int device_slots = st.pipelined ? 4 : st.consumers;
  for (int c = 0; c < device_slots; ++c) {
    RESMEM_ASSIGN_OR_RETURN(auto d, st.gpu.AllocDevice(st.o.block_bytes));
    st.devs.push_back(std::move(d));
  }
  return Status::Ok();
}

enum class Outcome { kWhole, kCorrupt, kFailed };

// Copies block seq to consumer c's device buffer and checks it there, up to copy_attempts tries;
// adds each try's copy time to *seconds and each try after the first to *retries. kWhole: it
// arrived whole; otherwise *why says what the last try saw.
Outcome Consume(Stream& st, uint64_t seq, int c, double* seconds, std::string* why,
                uint64_t* retries) {
  const StreamOptions& o = st.o;
  const int slot = SlotOf(st, seq);
  auto& engine = st.engines[std::min<size_t>(c, st.engines.size() - 1)];
  Outcome out = Outcome::kFailed;
  for (int attempt = 0; attempt < o.copy_attempts; ++attempt) {
    if (attempt) ++*retries;
    auto s = engine->Copy(CopyDirection::kHostToDevice, slot * o.block_bytes, *st.devs[c], 0,
                          o.block_bytes);
    if (!s.ok()) {
      out = Outcome::kFailed;
      *why = "copy failed " + std::to_string(attempt + 1) + " times: " + s.status().ToString();
      continue;
    }
    *seconds += s->seconds;
    auto bad = DeviceCheck(st, seq, *st.devs[c]);
    if (!bad.ok()) {
      out = Outcome::kFailed;
      *why = "device check failed: " + bad.status().ToString();
      continue;
    }
    if (*bad == 0) return Outcome::kWhole;
    out = Outcome::kCorrupt;
    *why = "arrived wrong " + std::to_string(attempt + 1) + " times (" + std::to_string(*bad) +
           " mismatches the last time)";
  }
  return out;
}

// The producer's write of block seq into its slot, through the stream.block fault point: an error
// leaves the slot's old block, a corruption flips one bit of the new one (the slot is then
// refilled whole before its next block).
Status Produce(Stream& st, uint64_t seq) {
  const StreamOptions& o = st.o;
  HostMemory& region = *st.region;
  const int slot = static_cast<int>(seq % o.slots);
  const uint64_t at = slot * o.block_bytes;
  FaultOutcome fo;
  if (o.faults) fo = o.faults->Check("stream.block", region.address() + at, o.block_bytes);
  if (fo.fired && (fo.effect == FaultEffect::kError || fo.effect == FaultEffect::kSignal))
    return Status::Ok();  // the DMA never happened: the consumer's check finds the old block
  if (st.slot_damaged[slot]) {
    RESMEM_RETURN_IF_ERROR(
        transfer::FillPattern(region, at, o.block_bytes, ~0ull, FillSeed(o.seed, slot)));
    st.slot_damaged[slot] = 0;
  }
  RESMEM_RETURN_IF_ERROR(transfer::StampPattern(region, at, o.block_bytes, seq));
  if (fo.fired && fo.effect == FaultEffect::kCorrupt) {
    uint8_t b = 0;
    const uint64_t off = at + fo.corrupt_offset % o.block_bytes;
    RESMEM_RETURN_IF_ERROR(region.Read(off, &b, 1));
    b ^= fo.corrupt_xor;
    RESMEM_RETURN_IF_ERROR(region.Write(off, &b, 1));
    st.slot_damaged[slot] = 1;
  }
  return Status::Ok();
}

// The model's time: one consumer; a block is due at seq/rate, starts when the consumer is free,
// and is dropped when its slot's previous block has not finished by then. Sets the counts and
// r.seconds (first due to last done).
Status RunOnModelTime(Stream& st) {
  const StreamOptions& o = st.o;
  StreamResult& r = st.r;
  std::vector<double> slot_done(o.slots, 0);
  double consumer_free = 0, first = -1, last = 0;
  for (uint64_t seq = 0; seq < o.blocks; ++seq) {
    const int slot = static_cast<int>(seq % o.slots);
    double due = o.rate_hz > 0 ? seq / o.rate_hz : slot_done[slot];
    if (o.rate_hz > 0 && slot_done[slot] > due) {
      ++r.dropped;
      st.lost.emplace_back(seq, "dropped: its slot was still being copied");
      continue;
    }
    RESMEM_RETURN_IF_ERROR(Produce(st, seq));
    double start = std::max(due, consumer_free), secs = 0;
    std::string why;
    const Outcome got = Consume(st, seq, 0, &secs, &why, &r.retried);
    double done = start + secs;
    consumer_free = slot_done[slot] = done;
    if (first < 0) first = due;
    last = done;
    if (got != Outcome::kWhole) {
      (got == Outcome::kCorrupt ? r.corrupt : r.failed) += 1;
      st.lost.emplace_back(seq, why);
      continue;
    }
    ++r.delivered;
    st.latencies.push_back((done - due) * 1e3);
    if (o.progress && (seq + 1) % std::max<uint64_t>(1, o.blocks / 10) == 0)
      std::fprintf(stderr, "stream: block %llu/%llu (model time %.2f s)\n",
                   (unsigned long long)seq + 1, (unsigned long long)o.blocks, done);
  }
  r.seconds = last - std::max(0.0, first);
  return Status::Ok();
}

using SteadyNow = std::chrono::steady_clock;

// The real clock's hand-over between the producer thread and the consumers: the queue of
// produced blocks, which slots are still being consumed, and the first failure. Fields marked
// "under mu" are read and written with mu held.
struct LiveRing {
  explicit LiveRing(const StreamOptions& o)
      : t0(SteadyNow::now()), busy(o.slots), published(o.blocks, 0) {
    for (auto& b : busy) b.store(0);
  }
  // Seconds from t0 to t.
  double Since(SteadyNow::time_point t) const {
    return std::chrono::duration<double>(t - t0).count();
  }
  const SteadyNow::time_point t0;
  std::vector<std::atomic<int>> busy;  // the slot's block is produced and not yet consumed
  std::vector<double> published;       // seconds since t0 each block was queued
  std::mutex mu;
  // cv: the queue grew or ended; freed: a slot came free. Fail notifies both.
  std::condition_variable cv, freed;
  std::deque<uint64_t> queue;          // under mu
  bool producer_done = false;          // under mu
  std::atomic<uint64_t> delivered{0}, corrupt{0};
  std::atomic<double> last_done{0};
  Status failure;                      // under mu
  std::atomic<bool> finished{false};   // every thread but progress is done
};

// Records the run's first failure and wakes every waiter (under mu).
void Fail(LiveRing& live, const Status& status) {
  if (live.failure.ok()) live.failure = status;
  live.cv.notify_all();
  live.freed.notify_all();
}

// Bookkeeping of a delivered block (under mu): latency, counts, the slot back to the producer.
void Deliver(Stream& st, LiveRing& live, uint64_t seq) {
  double done = live.Since(SteadyNow::now());
  ++live.delivered;
  st.latencies.push_back((done - live.published[seq]) * 1e3);
  if (done > live.last_done.load()) live.last_done.store(done);
  live.busy[SlotOf(st, seq)].store(0);
  live.freed.notify_all();
}

// A block reported lost (under mu): counted, its number and reason kept, its slot freed.
void Lose(Stream& st, LiveRing& live, uint64_t seq, bool was_corrupt, const std::string& why) {
  if (was_corrupt)
    ++live.corrupt;
  else
    ++st.r.failed;
  st.lost.emplace_back(seq, why);
  live.busy[SlotOf(st, seq)].store(0);
  live.freed.notify_all();
}

// The producer thread: writes block after block into its slot at o.rate_hz (a block whose slot is
// still busy then is dropped) or flat out (waiting for the slot), and queues it for the consumers.
// Either wait ends early when the run fails (Fail wakes it): the producer stops at once, so a
// failure ends the stream without waiting out the schedule.
void ProduceLive(Stream& st, LiveRing& live) {
  const StreamOptions& o = st.o;
  for (uint64_t seq = 0; seq < o.blocks; ++seq) {
    const int slot = static_cast<int>(seq % o.slots);
    if (o.rate_hz > 0) {
      const SteadyNow::time_point due =
          live.t0 + std::chrono::duration_cast<SteadyNow::duration>(
                        std::chrono::duration<double>(seq / o.rate_hz));
      std::unique_lock<std::mutex> l(live.mu);
      if (live.freed.wait_until(l, due, [&] { return !live.failure.ok(); })) break;
      if (live.busy[slot].load()) {
        ++st.r.dropped;
        st.lost.emplace_back(seq, "dropped: its slot was still being copied");
        continue;
      }
    } else {
      std::unique_lock<std::mutex> l(live.mu);
      live.freed.wait(l, [&] { return !live.busy[slot].load() || !live.failure.ok(); });
      if (!live.failure.ok()) break;
    }
    Status made = Produce(st, seq);
    live.busy[slot].store(1);
    std::lock_guard<std::mutex> l(live.mu);
    if (!made.ok()) {
      Fail(live, made.WithContext("producer, block " + std::to_string(seq)));
      break;
    }
    live.published[seq] = live.Since(SteadyNow::now());
    live.queue.push_back(seq);
    live.cv.notify_one();
  }
  std::lock_guard<std::mutex> l(live.mu);
  live.producer_done = true;
  live.cv.notify_all();
}

// The progress thread: a line on stderr every second (flat out: every 250 ms) until finished.
void ReportProgress(const Stream& st, const LiveRing& live) {
  const StreamOptions& o = st.o;
  while (!live.finished.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(o.rate_hz > 0 ? 1000 : 250));
    if (o.progress && !live.finished.load()) {
      double t = live.Since(SteadyNow::now());
      std::fprintf(stderr, "stream: %llu/%llu blocks, %.2f GB/s, %llu dropped, %llu corrupt\n",
                   (unsigned long long)live.delivered.load(), (unsigned long long)o.blocks,
                   t > 0 ? live.delivered.load() * o.block_bytes / t / 1e9 : 0.0,
                   (unsigned long long)st.r.dropped, (unsigned long long)live.corrupt.load());
    }
  }
}

// Consumer c's thread: takes blocks from the queue until it is empty and the producer is done
// (or the run failed), each copied and checked by Consume.
void ConsumeLive(Stream& st, LiveRing& live, int c) {
  for (;;) {
    uint64_t seq;
    {
      std::unique_lock<std::mutex> l(live.mu);
      live.cv.wait(l, [&] {
        return !live.queue.empty() || live.producer_done || !live.failure.ok();
      });
      if (live.queue.empty() || !live.failure.ok()) return;
      seq = live.queue.front();
      live.queue.pop_front();
    }
    double secs = 0;
    std::string why;
    uint64_t retries = 0;
    const Outcome got = Consume(st, seq, c, &secs, &why, &retries);
    std::lock_guard<std::mutex> l(live.mu);
    st.r.retried += retries;
    if (got == Outcome::kWhole)
      Deliver(st, live, seq);
    else
      Lose(st, live, seq, got == Outcome::kCorrupt, why);
  }
}

// The staged queue's state between its driver (CopyQueue) and the verifier thread.
struct Pipeline {
  Pipeline(size_t device_slots, uint64_t blocks) : device_busy(device_slots), device_of(blocks, 0) {
    for (auto& d : device_busy) d.store(0);
  }
  std::vector<std::atomic<int>> device_busy;  // the device buffer holds a block not yet checked
  std::vector<int> device_of;                 // the device buffer each block went to
  std::deque<uint64_t> arrived;               // under mu: blocks whose DMAs are done
  bool queue_over = false;                    // under mu: CopyQueue returned
  std::condition_variable arrived_cv;
};

// The verifier thread: checks each arrived block on the device (its own CUDA stream, so the check
// never waits behind the DMAs queued after that block) and frees its device buffer.
void VerifyArrived(Stream& st, LiveRing& live, Pipeline& pipe) {
  for (;;) {
    uint64_t seq;
    {
      std::unique_lock<std::mutex> l(live.mu);
      pipe.arrived_cv.wait(l, [&] { return !pipe.arrived.empty() || pipe.queue_over; });
      if (pipe.arrived.empty()) return;
      seq = pipe.arrived.front();
      pipe.arrived.pop_front();
    }
    const int d = pipe.device_of[seq];
    auto bad = DeviceCheck(st, seq, *st.devs[d]);
    pipe.device_busy[d].store(0, std::memory_order_release);
    std::lock_guard<std::mutex> l(live.mu);
    if (!bad.ok()) {
      Fail(live, bad.status().WithContext("device check of block " + std::to_string(seq)));
      return;
    }
    if (*bad == 0)
      Deliver(st, live, seq);
    else
      Lose(st, live, seq, true, "arrived wrong (" + std::to_string(*bad) + " mismatches)");
  }
}

// CopyQueue's source: the producer's next block into a free device buffer; kWait while none is
// free, the lock is taken or the queue is empty; kEnd once the producer is done and it is empty.
Result<transfer::QueuePoll> NextQueuedBlock(Stream& st, LiveRing& live, Pipeline& pipe,
                                            transfer::QueuedBlock* b) {
  const StreamOptions& o = st.o;
  const int device_slots = static_cast<int>(pipe.device_busy.size());
  int d = 0;
  while (d < device_slots && pipe.device_busy[d].load(std::memory_order_acquire)) ++d;
  if (d == device_slots) return transfer::QueuePoll::kWait;
  std::unique_lock<std::mutex> l(live.mu, std::try_to_lock);
  if (!l.owns_lock()) return transfer::QueuePoll::kWait;
  if (!live.failure.ok()) return live.failure;
  if (live.queue.empty())
    return live.producer_done ? transfer::QueuePoll::kEnd : transfer::QueuePoll::kWait;
  const uint64_t seq = live.queue.front();
  live.queue.pop_front();
  pipe.device_busy[d].store(1, std::memory_order_relaxed);
  pipe.device_of[seq] = d;
  *b = transfer::QueuedBlock{SlotOf(st, seq) * o.block_bytes, st.devs[d].get(), 0, o.block_bytes,
                             seq};
  return transfer::QueuePoll::kBlock;
}

// Pipelined: the queue's driver (this thread) takes blocks from the producer's queue while a
// device buffer is free; the verifier checks arrived blocks on its own thread. Returns when the
// queue has ended and every arrived block is checked; a failure is left in live.failure.
void RunPipelined(Stream& st, LiveRing& live) {
  Pipeline pipe(st.devs.size(), st.o.blocks);
  std::thread verifier([&] { VerifyArrived(st, live, pipe); });
  Status queue_status = st.engines[0]->CopyQueue(
      [&](transfer::QueuedBlock* b) { return NextQueuedBlock(st, live, pipe, b); },
      [&](const transfer::QueuedBlock& b) {
        std::lock_guard<std::mutex> l(live.mu);
        pipe.arrived.push_back(b.tag);
        pipe.arrived_cv.notify_one();
        return Status::Ok();
      });
  {
    std::lock_guard<std::mutex> l(live.mu);
    pipe.queue_over = true;
    if (!queue_status.ok()) Fail(live, queue_status);
    pipe.arrived_cv.notify_all();
  }
  verifier.join();
}

void ProduceFromCard(Stream& st, LiveRing& live);  // --producer card's, below

// The real clock: a producer thread, a progress thread, and the consumers (pipelined: the staged
// queue and its verifier; else st.consumers threads). Sets the counts and r.seconds (first block
// published to last delivered); the first failure ends the stream with it.
Status RunOnRealTime(Stream& st) {
  LiveRing live(st.o);
  std::thread producer([&] {
    if (st.card)
      ProduceFromCard(st, live);
    else
      ProduceLive(st, live);
  });
  std::thread progress([&] { ReportProgress(st, live); });
  std::vector<std::thread> workers;
  if (st.pipelined) {
    RunPipelined(st, live);
  } else {
    for (int c = 0; c < st.consumers; ++c)
      workers.emplace_back([&, c] { ConsumeLive(st, live, c); });
  }
  producer.join();
  for (auto& w : workers) w.join();
  live.finished.store(true);
  progress.join();
  if (!live.failure.ok()) return live.failure.WithContext("stream consumer");
  st.r.delivered = live.delivered.load();
  st.r.corrupt = live.corrupt.load();
  st.r.seconds = live.last_done.load() - (live.published.empty() ? 0 : live.published[0]);
  return Status::Ok();
}

// ---- --producer card: the card's DMA engine writes the ring (card_feed.h) ----

// A completion from the card, accounted (under live.mu on the real clock): the blocks its sequence
// number skipped are dropped (the card lost them: no slot was posted when they were due), a block
// the card completed with an error is lost with its status, one past the stream's end is not the
// stream's. True: the block is the consumers' (st.slot_of has its slot).
bool TakeCardBlock(Stream& st, const CardBlock& b, uint64_t* next) {
  const uint64_t blocks = st.o.blocks;
  for (uint64_t s = *next; s < std::min(b.sequence, blocks); ++s) {
    ++st.r.dropped;
    st.lost.emplace_back(s, "dropped by the card: no slot posted when it was due, or it could not write (a stall, the link down)");
  }
  *next = std::max(*next, std::min(b.sequence + 1, blocks));
  if (b.sequence >= blocks) return false;
  if (!b.ok) {
    ++st.r.failed;
    st.lost.emplace_back(b.sequence, "the card completed it with status " + std::to_string(b.status) +
                                         (b.status == RESMEM_CARD_DESC_TIMEOUT ? " (TIMEOUT): no block written" : ""));
    return false;
  }
  st.slot_of[b.sequence] = b.slot;
  return true;
}

// Model time, one consumer: the card advances to each moment it has work; a completion waits while
// the consumer is busy; the slot goes back to the card when its block is checked on the device.
// Sets the counts and r.seconds (first completion to last block checked).
Status RunCardOnModelTime(Stream& st) {
  CardFeed& feed = *st.card;
  RESMEM_RETURN_IF_ERROR(feed.Start(0));
  double t = 0, consumer_free = 0, first = -1;
  uint64_t next = 0;
  int held = -1;  // the slot the consumer is copying
  while (next < st.o.blocks) {
    RESMEM_ASSIGN_OR_RETURN(double due, feed.Advance(t));
    if (held >= 0 && consumer_free <= t) {
      RESMEM_RETURN_IF_ERROR(feed.GiveBack(held));
      held = -1;
      RESMEM_ASSIGN_OR_RETURN(due, feed.Advance(t));
    }
    RESMEM_RETURN_IF_ERROR(feed.Observe(t));
    RESMEM_ASSIGN_OR_RETURN(std::optional<CardBlock> b,
                            held < 0 ? feed.Next() : Result<std::optional<CardBlock>>(std::optional<CardBlock>()));
    if (b && !TakeCardBlock(st, *b, &next)) {
      RESMEM_RETURN_IF_ERROR(feed.GiveBack(b->slot));
    } else if (b) {
      double secs = 0;
      std::string why;
      const Outcome got = Consume(st, b->sequence, 0, &secs, &why, &st.r.retried);
      consumer_free = t + secs;
      held = b->slot;
      if (first < 0) first = b->landed;
      if (got == Outcome::kWhole) {
        ++st.r.delivered;
        st.latencies.push_back((consumer_free - b->landed) * 1e3);
      } else {
        (got == Outcome::kCorrupt ? st.r.corrupt : st.r.failed) += 1;
        st.lost.emplace_back(b->sequence, why);
      }
    } else {
      const double at = std::min(due, held >= 0 ? consumer_free : card::CardDmaEngine::kIdle);
      if (at == card::CardDmaEngine::kIdle)
        return Status::Internal("--producer card: the card went idle with blocks still to come");
      t = std::max(at, std::nextafter(t, card::CardDmaEngine::kIdle));
    }
  }
  st.r.seconds = std::max(consumer_free, t) - std::max(0.0, first);
  return Status::Ok();
}

// The card's engine on the steady clock until `stop`: it sleeps until its next work, 50 us at most
// (to see the slots the host posts).
Status DriveCard(CardFeed& feed, const LiveRing& live, const std::atomic<bool>& stop) {
  while (!stop.load()) {
    const double now = live.Since(SteadyNow::now());
    RESMEM_ASSIGN_OR_RETURN(double due, feed.Advance(now));
    const double wait = std::min(due - now, 50e-6);
    if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
  }
  return Status::Ok();
}

// The host's side on the real clock: gives back the slots the consumers are done with, reads the
// card's completions in order and queues each block for the consumers, until every block of the
// stream is accounted (or the run failed).
Status FeedFromCard(Stream& st, LiveRing& live) {
  CardFeed& feed = *st.card;
  std::vector<char> held(st.o.slots, 0);
  uint64_t next = 0;
  while (next < st.o.blocks) {
    {
      std::lock_guard<std::mutex> l(live.mu);
      if (!live.failure.ok()) return Status::Ok();
    }
    for (int s = 0; s < st.o.slots; ++s)
      if (held[s] && !live.busy[s].load()) {
        RESMEM_RETURN_IF_ERROR(feed.GiveBack(s));
        held[s] = 0;
      }
    RESMEM_RETURN_IF_ERROR(feed.Observe(live.Since(SteadyNow::now())));
    RESMEM_ASSIGN_OR_RETURN(std::optional<CardBlock> b, feed.Next());
    if (!b) {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      continue;
    }
    held[b->slot] = 1;
    std::lock_guard<std::mutex> l(live.mu);
    if (!TakeCardBlock(st, *b, &next)) continue;  // its slot is not busy: given back next round
    live.busy[b->slot].store(1);
    live.published[b->sequence] = b->landed;
    live.queue.push_back(b->sequence);
    live.cv.notify_one();
  }
  return Status::Ok();
}

// The producer thread with the card: the card started, its engine on a thread of its own, the
// host's side here; then the consumers are told the stream has ended.
void ProduceFromCard(Stream& st, LiveRing& live) {
  Status host = st.card->Start(live.Since(SteadyNow::now())), engine;
  std::atomic<bool> stop{false};
  std::thread card([&] { engine = DriveCard(*st.card, live, stop); });
  if (host.ok()) host = FeedFromCard(st, live);
  stop.store(true);
  card.join();
  std::lock_guard<std::mutex> l(live.mu);
  if (!host.ok()) Fail(live, host.WithContext("--producer card"));
  if (!engine.ok()) Fail(live, engine.WithContext("the card's engine"));
  live.producer_done = true;
  live.cv.notify_all();
}

// Opens the card that writes the ring (--producer card) and names the producer in the result.
Status OpenProducer(Stream& st) {
  const StreamOptions& o = st.o;
  if (o.producer == "cpu") {
    st.r.producer = "cpu (a thread writes the block pattern)";
    return Status::Ok();
  }
  if (o.producer != "card")
    return Status::InvalidArgument("--producer " + o.producer + ": give cpu (the default) or card");
  if (o.faults) return Status::InvalidArgument("--producer card: the stream.block fault point is the CPU producer's; give the card's faults as --card-faults");
  CardFeedOptions c;
  c.block_bytes = o.block_bytes;
  c.slots = o.slots;
  c.rate_hz = o.rate_hz;
  c.seed = o.seed;
  c.faults = o.card_faults;
  RESMEM_ASSIGN_OR_RETURN(st.card, CardFeed::Open(*st.region, c));
  st.slot_of.assign(o.blocks, 0);
  st.r.producer = "card (DMA engine, backends/card/card_abi.h blocks; a descriptor per free slot)";
  return Status::Ok();
}

// The figures derived from the counts: lost ranges, throughput, latency percentiles.
void Summarize(Stream& st) {
  StreamResult& r = st.r;
  const std::vector<double>& latencies = st.latencies;
  r.lost = MergeLost(std::move(st.lost));
  r.gbps = r.seconds > 0 ? r.delivered * st.o.block_bytes / r.seconds / 1e9 : 0;
  r.latency_p50_ms = Percentile(latencies, 0.5);
  r.latency_p99_ms = Percentile(latencies, 0.99);
  r.latency_max_ms = latencies.empty() ? 0 : *std::max_element(latencies.begin(), latencies.end());
}

}  // namespace

Result<StreamResult> RunStream(Gpu& gpu, Clock& clock, const std::string& backend,
                               const StreamOptions& o) {
  RESMEM_RETURN_IF_ERROR(CheckOptions(o));
  Stream st(gpu, o);
  st.r.backend = backend;
  st.r.options = o;
  RESMEM_RETURN_IF_ERROR(MapRing(st));
  RESMEM_RETURN_IF_ERROR(OpenProducer(st));
  RESMEM_RETURN_IF_ERROR(OpenEngines(st, clock));
  RESMEM_RETURN_IF_ERROR(AllocDeviceSlots(st));
  if (clock.is_virtual())
    RESMEM_RETURN_IF_ERROR(st.card ? RunCardOnModelTime(st) : RunOnModelTime(st));
  else
    RESMEM_RETURN_IF_ERROR(RunOnRealTime(st));
  if (st.card) st.r.card_overruns = st.card->card_counters().overruns;
  Summarize(st);
  return std::move(st.r);
}

std::string StreamResult::ToJson() const {
  nlohmann::json j = {{"backend", backend},
                      {"path", path_choice},
                      {"block_bytes", options.block_bytes},
                      {"rate_hz", options.rate_hz},
                      {"blocks", options.blocks},
                      {"slots", options.slots},
                      {"host_kind", options.host_kind},
                      {"producer", producer},
                      {"card_overruns", card_overruns},
                      {"delivered", delivered},
                      {"dropped", dropped},
                      {"corrupt", corrupt},
                      {"failed", failed},
                      {"retried", retried},
                      {"seconds", seconds},
                      {"gbps", gbps},
                      {"pinned_gbps", pinned_gbps},
                      {"ratio_to_pinned", pinned_gbps > 0 ? gbps / pinned_gbps : 0},
                      {"latency_ms", {{"p50", latency_p50_ms}, {"p99", latency_p99_ms},
                                      {"max", latency_max_ms}}}};
  nlohmann::json ranges = nlohmann::json::array();
  for (const LostRange& l : lost)
    ranges.push_back({{"first", l.first}, {"last", l.last}, {"reason", l.reason}});
  j["lost"] = ranges;
  return j.dump(1);
}

std::string StreamResult::Summary() const {
  // The path's description runs to 700+ characters on a staged copy with every refusal listed:
  // it is appended as a string, never formatted into a fixed buffer (a 768-byte buffer cut the
  // staged stream's summary inside that line, throughput and latency lost; H200, docs/hil/
  // 2026-11-28-h200-staged13 run 6).
  char head[256], tail[512];
  std::snprintf(head, sizeof head, "stream (%s): %llu blocks of %s at %s on %s\n  ",
                backend.c_str(), (unsigned long long)options.blocks,
                FormatSize(options.block_bytes).c_str(),
                options.rate_hz > 0 ? (std::to_string(options.rate_hz) + " Hz").c_str() : "flat out",
                options.host_kind.c_str());
  std::snprintf(tail, sizeof tail,
                "\n  delivered %llu, dropped %llu, corrupt %llu, failed %llu (retried %llu) in %.2f s\n"
                "  throughput %.2f GB/s = %.1f%% of pinned (%.2f GB/s)\n"
                "  latency p50 %.3f ms, p99 %.3f ms, max %.3f ms",
                (unsigned long long)delivered, (unsigned long long)dropped,
                (unsigned long long)corrupt, (unsigned long long)failed,
                (unsigned long long)retried, seconds, gbps,
                pinned_gbps > 0 ? 100 * gbps / pinned_gbps : 0.0, pinned_gbps, latency_p50_ms,
                latency_p99_ms, latency_max_ms);
  std::string out = std::string(head) + "producer " + producer + "\n  " + path_choice + tail;
  if (options.producer == "card")
    out += "\n  the card lost " + std::to_string(card_overruns) + " blocks (overruns: no slot posted when due, a stall, the link down)";
  for (size_t i = 0; i < lost.size() && i < 5; ++i)
    out += "\n  lost block" + (lost[i].last > lost[i].first ? "s " + std::to_string(lost[i].first) + "-" + std::to_string(lost[i].last) : " " + std::to_string(lost[i].first)) + ": " + lost[i].reason;
  if (lost.size() > 5) out += "\n  ... " + std::to_string(lost.size() - 5) + " more ranges of lost blocks (--json lists them all)";
  return out;
}

}  // namespace resmem::stream
