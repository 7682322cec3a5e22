#include "engine/stream/stream.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "backends/cuda/block_pattern.h"
#include "backends/host/host_region.h"
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

}  // namespace

Result<StreamResult> RunStream(Gpu& gpu, Clock& clock, const std::string& backend,
                               const StreamOptions& o) {
  if (o.block_bytes == 0 || o.block_bytes % 4096)
    return Status::InvalidArgument("--block must be a positive multiple of 4 KiB");
  if (o.slots < 2) return Status::InvalidArgument("--slots must be at least 2");
  if (o.rate_hz < 0) return Status::InvalidArgument("--rate must be >= 0 (0 = flat out)");
  if (o.consumers < 1) return Status::InvalidArgument("--consumers must be at least 1");
  if (o.copy_attempts < 1) return Status::InvalidArgument("copy_attempts must be at least 1");
  StreamResult r;
  r.backend = backend;
  r.options = o;
  RESMEM_ASSIGN_OR_RETURN(host::HostKind kind, host::ParseHostKind(o.host_kind));
  const uint64_t ring = o.block_bytes * o.slots;
  RESMEM_ASSIGN_OR_RETURN(auto region, host::MapHostMemory(kind, ring));
  for (int s = 0; s < o.slots; ++s)
    RESMEM_RETURN_IF_ERROR(transfer::FillPattern(*region, s * o.block_bytes, o.block_bytes,
                                                 ~0ull, FillSeed(o.seed, s)));
  transfer::TransferOptions to = o.staging;
  if (!o.path.empty()) {
    RESMEM_ASSIGN_OR_RETURN(transfer::Path p, transfer::ParsePath(o.path));
    to.allowed = {p};
  }
  std::vector<std::unique_ptr<transfer::TransferEngine>> engines;
  {
    RESMEM_ASSIGN_OR_RETURN(auto first, transfer::TransferEngine::Open(gpu, *region, clock, to));
    engines.push_back(std::move(first));
  }
  r.path_choice = engines[0]->choice().Describe();
  RESMEM_ASSIGN_OR_RETURN(r.pinned_gbps, PinnedBaseline(gpu, o.block_bytes));
  const bool staged = engines[0]->choice().path == transfer::Path::kStaged;
  int consumers = clock.is_virtual() ? 1 : o.consumers;
  const bool pipelined = staged && !clock.is_virtual() && o.staged_pipeline;
  if (pipelined) {
    consumers = 1;
    r.path_choice += "; pipelined: blocks queue through one engine's segment ring, each checked "
                     "on the device as it arrives";
  } else if (staged && !clock.is_virtual()) {
    // One engine per consumer (an engine's staged copies are one at a time), the lanes split
    // between them: while one consumer's block is checked on the device, another's is copied.
    consumers = std::max(1, std::min(o.staged_consumers > 0 ? o.staged_consumers : o.consumers,
                                     o.staging.staging_lanes));
    if (consumers > 1) {
      engines.clear();
      transfer::TransferOptions split = to;
      split.allowed = {transfer::Path::kStaged};
      split.staging_lanes = std::max(1, o.staging.staging_lanes / consumers);
      for (int c = 0; c < consumers; ++c) {
        RESMEM_ASSIGN_OR_RETURN(auto e, transfer::TransferEngine::Open(gpu, *region, clock, split));
        engines.push_back(std::move(e));
      }
      r.path_choice += "; split over " + std::to_string(consumers) + " consumers: " +
                       engines[0]->choice().Describe() + " each";
    }
  }
  // Pipelined: device buffers a block waits in between its DMA and its check.
  const int device_slots = pipelined ? 4 : consumers;
  std::vector<std::unique_ptr<DeviceBuffer>> devs;
  for (int c = 0; c < device_slots; ++c) {
    RESMEM_ASSIGN_OR_RETURN(auto d, gpu.AllocDevice(o.block_bytes));
    devs.push_back(std::move(d));
  }
  std::vector<double> latencies;
  // Lost blocks (sequence number, reason), merged into ranges at the end.
  std::vector<std::pair<uint64_t, std::string>> lost;
  // Copies block seq to the device and checks it there, up to copy_attempts tries. kWhole: it
  // arrived whole; otherwise *why says what the last try saw.
  enum class Outcome { kWhole, kCorrupt, kFailed };
  auto consume = [&](uint64_t seq, int c, double* seconds, std::string* why,
                     uint64_t* retries) -> Outcome {
    const int slot = static_cast<int>(seq % o.slots);
    auto& engine = engines[std::min<size_t>(c, engines.size() - 1)];
    Outcome out = Outcome::kFailed;
    for (int attempt = 0; attempt < o.copy_attempts; ++attempt) {
      if (attempt) ++*retries;
      auto s = engine->Copy(CopyDirection::kHostToDevice, slot * o.block_bytes, *devs[c], 0,
                            o.block_bytes);
      if (!s.ok()) {
        out = Outcome::kFailed;
        *why = "copy failed " + std::to_string(attempt + 1) + " times: " + s.status().ToString();
        continue;
      }
      *seconds += s->seconds;
      auto bad = transfer::DeviceMismatches(gpu, *devs[c], 0, o.block_bytes, seq,
                                            FillSeed(o.seed, slot));
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
  };
  // The producer's write of block seq into its slot, through the stream.block fault point:
  // an error leaves the slot's old block, a corruption flips one bit of the new one (the slot is
  // then refilled whole before its next block).
  std::vector<char> slot_damaged(o.slots, 0);
  auto produce = [&](uint64_t seq) -> Status {
    const int slot = static_cast<int>(seq % o.slots);
    const uint64_t at = slot * o.block_bytes;
    FaultOutcome fo;
    if (o.faults) fo = o.faults->Check("stream.block", region->address() + at, o.block_bytes);
    if (fo.fired && (fo.effect == FaultEffect::kError || fo.effect == FaultEffect::kSignal))
      return Status::Ok();  // the DMA never happened: the consumer's check finds the old block
    if (slot_damaged[slot]) {
      RESMEM_RETURN_IF_ERROR(
          transfer::FillPattern(*region, at, o.block_bytes, ~0ull, FillSeed(o.seed, slot)));
      slot_damaged[slot] = 0;
    }
    RESMEM_RETURN_IF_ERROR(transfer::StampPattern(*region, at, o.block_bytes, seq));
    if (fo.fired && fo.effect == FaultEffect::kCorrupt) {
      uint8_t b = 0;
      const uint64_t off = at + fo.corrupt_offset % o.block_bytes;
      RESMEM_RETURN_IF_ERROR(region->Read(off, &b, 1));
      b ^= fo.corrupt_xor;
      RESMEM_RETURN_IF_ERROR(region->Write(off, &b, 1));
      slot_damaged[slot] = 1;
    }
    return Status::Ok();
  };

  if (clock.is_virtual()) {
    // The model's time: one consumer; a block is due at seq/rate, starts when the consumer is
    // free, and is dropped when its slot's previous block has not finished by then.
    std::vector<double> slot_done(o.slots, 0);
    double consumer_free = 0, first = -1, last = 0;
    for (uint64_t seq = 0; seq < o.blocks; ++seq) {
      const int slot = static_cast<int>(seq % o.slots);
      double due = o.rate_hz > 0 ? seq / o.rate_hz : slot_done[slot];
      if (o.rate_hz > 0 && slot_done[slot] > due) {
        ++r.dropped;
        lost.emplace_back(seq, "dropped: its slot was still being copied");
        continue;
      }
      RESMEM_RETURN_IF_ERROR(produce(seq));
      double start = std::max(due, consumer_free), secs = 0;
      std::string why;
      const Outcome got = consume(seq, 0, &secs, &why, &r.retried);
      double done = start + secs;
      consumer_free = slot_done[slot] = done;
      if (first < 0) first = due;
      last = done;
      if (got != Outcome::kWhole) {
        (got == Outcome::kCorrupt ? r.corrupt : r.failed) += 1;
        lost.emplace_back(seq, why);
        continue;
      }
      ++r.delivered;
      latencies.push_back((done - due) * 1e3);
      if (o.progress && (seq + 1) % std::max<uint64_t>(1, o.blocks / 10) == 0)
        std::fprintf(stderr, "stream: block %llu/%llu (model time %.2f s)\n",
                     (unsigned long long)seq + 1, (unsigned long long)o.blocks, done);
    }
    r.seconds = last - std::max(0.0, first);
  } else {
    using SteadyNow = std::chrono::steady_clock;
    const auto t0 = SteadyNow::now();
    auto since = [&](SteadyNow::time_point t) {
      return std::chrono::duration<double>(t - t0).count();
    };
    std::vector<std::atomic<int>> busy(o.slots);
    for (auto& b : busy) b.store(0);
    std::vector<double> published(o.blocks, 0);
    std::mutex mu;
    std::condition_variable cv, freed;
    std::deque<uint64_t> queue;
    bool producer_done = false;
    std::atomic<uint64_t> delivered{0}, corrupt{0};
    std::atomic<double> last_done{0};
    Status failure;
    auto fail = [&](const Status& st) {  // under mu
      if (failure.ok()) failure = st;
      cv.notify_all();
      freed.notify_all();
    };
    std::thread producer([&] {
      for (uint64_t seq = 0; seq < o.blocks; ++seq) {
        const int slot = static_cast<int>(seq % o.slots);
        if (o.rate_hz > 0) {
          std::this_thread::sleep_until(t0 + std::chrono::duration_cast<SteadyNow::duration>(
                                                 std::chrono::duration<double>(seq / o.rate_hz)));
          if (busy[slot].load()) {
            std::lock_guard<std::mutex> l(mu);
            ++r.dropped;
            lost.emplace_back(seq, "dropped: its slot was still being copied");
            continue;
          }
        } else {
          std::unique_lock<std::mutex> l(mu);
          freed.wait(l, [&] { return !busy[slot].load() || !failure.ok(); });
          if (!failure.ok()) break;
        }
        Status made = produce(seq);
        busy[slot].store(1);
        std::lock_guard<std::mutex> l(mu);
        if (!made.ok()) {
          fail(made.WithContext("producer, block " + std::to_string(seq)));
          break;
        }
        published[seq] = since(SteadyNow::now());
        queue.push_back(seq);
        cv.notify_one();
      }
      std::lock_guard<std::mutex> l(mu);
      producer_done = true;
      cv.notify_all();
    });
    std::atomic<bool> finished{false};
    std::thread progress([&] {
      while (!finished.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(o.rate_hz > 0 ? 1000 : 250));
        if (o.progress && !finished.load()) {
          double t = since(SteadyNow::now());
          std::fprintf(stderr, "stream: %llu/%llu blocks, %.2f GB/s, %llu dropped, %llu corrupt\n",
                       (unsigned long long)delivered.load(), (unsigned long long)o.blocks,
                       t > 0 ? delivered.load() * o.block_bytes / t / 1e9 : 0.0,
                       (unsigned long long)r.dropped, (unsigned long long)corrupt.load());
        }
      }
    });
    // Bookkeeping of a delivered block (under mu): latency, counts, the slot back to the producer.
    auto deliver = [&](uint64_t seq) {
      double done = since(SteadyNow::now());
      ++delivered;
      latencies.push_back((done - published[seq]) * 1e3);
      if (done > last_done.load()) last_done.store(done);
      busy[seq % o.slots].store(0);
      freed.notify_all();
    };
    // A block reported lost (under mu): counted, its number and reason kept, its slot freed.
    auto lose = [&](uint64_t seq, bool was_corrupt, const std::string& why) {
      if (was_corrupt)
        ++corrupt;
      else
        ++r.failed;
      lost.emplace_back(seq, why);
      busy[seq % o.slots].store(0);
      freed.notify_all();
    };
    std::vector<std::thread> workers;
    if (pipelined) {
      // The queue's driver takes blocks from the producer's queue while a device buffer is
      // free; the verifier checks arrived blocks on its own thread (its own CUDA stream), so
      // the check never waits behind the DMAs queued after that block.
      std::vector<std::atomic<int>> device_busy(device_slots);
      for (auto& d : device_busy) d.store(0);
      std::vector<int> device_of(o.blocks, 0);
      std::deque<uint64_t> arrived;  // under mu
      bool queue_over = false;       // under mu
      std::condition_variable arrived_cv;
      std::thread verifier([&] {
        for (;;) {
          uint64_t seq;
          {
            std::unique_lock<std::mutex> l(mu);
            arrived_cv.wait(l, [&] { return !arrived.empty() || queue_over; });
            if (arrived.empty()) return;
            seq = arrived.front();
            arrived.pop_front();
          }
          const int slot = static_cast<int>(seq % o.slots);
          const int d = device_of[seq];
          auto bad = transfer::DeviceMismatches(gpu, *devs[d], 0, o.block_bytes, seq,
                                                FillSeed(o.seed, slot));
          device_busy[d].store(0, std::memory_order_release);
          std::lock_guard<std::mutex> l(mu);
          if (!bad.ok()) {
            fail(bad.status().WithContext("device check of block " + std::to_string(seq)));
            return;
          }
          if (*bad == 0)
            deliver(seq);
          else
            lose(seq, true, "arrived wrong (" + std::to_string(*bad) + " mismatches)");
        }
      });
      Status queue_status = engines[0]->CopyQueue(
          [&](transfer::QueuedBlock* b) -> Result<transfer::QueuePoll> {
            int d = 0;
            while (d < device_slots && device_busy[d].load(std::memory_order_acquire)) ++d;
            if (d == device_slots) return transfer::QueuePoll::kWait;
            std::unique_lock<std::mutex> l(mu, std::try_to_lock);
            if (!l.owns_lock()) return transfer::QueuePoll::kWait;
            if (!failure.ok()) return failure;
            if (queue.empty())
              return producer_done ? transfer::QueuePoll::kEnd : transfer::QueuePoll::kWait;
            const uint64_t seq = queue.front();
            queue.pop_front();
            device_busy[d].store(1, std::memory_order_relaxed);
            device_of[seq] = d;
            *b = transfer::QueuedBlock{(seq % o.slots) * o.block_bytes, devs[d].get(), 0,
                                       o.block_bytes, seq};
            return transfer::QueuePoll::kBlock;
          },
          [&](const transfer::QueuedBlock& b) {
            std::lock_guard<std::mutex> l(mu);
            arrived.push_back(b.tag);
            arrived_cv.notify_one();
            return Status::Ok();
          });
      {
        std::lock_guard<std::mutex> l(mu);
        queue_over = true;
        if (!queue_status.ok()) fail(queue_status);
        arrived_cv.notify_all();
      }
      verifier.join();
    } else {
      for (int c = 0; c < consumers; ++c)
        workers.emplace_back([&, c] {
          for (;;) {
            uint64_t seq;
            {
              std::unique_lock<std::mutex> l(mu);
              cv.wait(l, [&] { return !queue.empty() || producer_done || !failure.ok(); });
              if (queue.empty() || !failure.ok()) return;
              seq = queue.front();
              queue.pop_front();
            }
            double secs = 0;
            std::string why;
            uint64_t retries = 0;
            const Outcome got = consume(seq, c, &secs, &why, &retries);
            std::lock_guard<std::mutex> l(mu);
            r.retried += retries;
            if (got == Outcome::kWhole)
              deliver(seq);
            else
              lose(seq, got == Outcome::kCorrupt, why);
          }
        });
    }
    producer.join();
    for (auto& w : workers) w.join();
    finished.store(true);
    progress.join();
    if (!failure.ok()) return failure.WithContext("stream consumer");
    r.delivered = delivered.load();
    r.corrupt = corrupt.load();
    r.seconds = last_done.load() - (published.empty() ? 0 : published[0]);
  }
  r.lost = MergeLost(std::move(lost));
  r.gbps = r.seconds > 0 ? r.delivered * o.block_bytes / r.seconds / 1e9 : 0;
  r.latency_p50_ms = Percentile(latencies, 0.5);
  r.latency_p99_ms = Percentile(latencies, 0.99);
  r.latency_max_ms = latencies.empty() ? 0 : *std::max_element(latencies.begin(), latencies.end());
  return r;
}

std::string StreamResult::ToJson() const {
  nlohmann::json j = {{"backend", backend},
                      {"path", path_choice},
                      {"block_bytes", options.block_bytes},
                      {"rate_hz", options.rate_hz},
                      {"blocks", options.blocks},
                      {"slots", options.slots},
                      {"host_kind", options.host_kind},
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
  std::string out = head + path_choice + tail;
  for (size_t i = 0; i < lost.size() && i < 5; ++i)
    out += "\n  lost block" + (lost[i].last > lost[i].first ? "s " + std::to_string(lost[i].first) + "-" + std::to_string(lost[i].last) : " " + std::to_string(lost[i].first)) + ": " + lost[i].reason;
  if (lost.size() > 5) out += "\n  ... " + std::to_string(lost.size() - 5) + " more ranges of lost blocks (--json lists them all)";
  return out;
}

}  // namespace resmem::stream
