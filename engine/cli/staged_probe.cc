// staged_probe [--host memfd|file|...] [--sizes ...]: where a staged copy's time goes, on a GPU host (issue 4: copies of 16 MiB and
// less reached ~50% of pinned on the H100, docs/hil/2026-11-21-h100-staged). For each size it
// times the pieces of a staged host-to-device copy apart, medians of --copies:
//   pinned      cudaMemcpy from cudaMallocHost memory (the baseline)
//   dma-only    the engine's segment DMAs from the pinned ring, no fill (CopyAsyncInto + Done)
//   fill-only   the lanes' memcpy from the disk-file mapping into the ring, no DMA
//   dispatch    an empty LanePool::Run: hot (lanes spinning) and after a pause (lanes asleep)
//   staged      the engine's Copy with staging_trace: per-phase timestamps, back to back, after
//               a pause between copies, with min-segments variants
//   queue       CopyQueue of a run of blocks (segments flowing across blocks) against Copy after
//               Copy of the same blocks
// --timeline: only pinned, dma-only, fill-only, drain-only (source in cache, just written by DMA,
// flushed to memory, and just written by DMA with more DMAs beside) and the staged copy both ways
// with the options given, each with its last copy's per-segment timeline. --streams-matrix: only DMAs
// from pinned memory, 1-32 per copy on 1-4 copy streams, with an event after each or one after
// the last (does a second stream or fewer events hide a DMA's set-up? On the H100: no).
// --ceiling: only the host's staging costs, measured apart (segment_plan.h: start, submit, DMA
// rate and per-DMA cost, the lanes' fill and drain alone and beside a DMA loop) and, per size,
// what the best cut of a staged copy reaches under them: the ceiling of any segment schedule.
// --handoff: only the lanes' start, lane by lane, through three hand-offs (no GPU needed).
// --evict-mib N: before each timed step, dirty N MiB of other memory, so copies start with cold
// caches as bench's do (docs/hil/2026-11-24-h100-staged9).
// Every staged copy's data is checked on the device. Nothing is asserted: figures only.
// Exit: 0 ok, 1 a data mismatch, 2 bad input, 3 no GPU.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "backends/api/median.h"
#include "backends/cuda/cuda_gpu.h"
#include "backends/host/host_region.h"
#include "engine/cli/command.h"
#include "engine/cli/values.h"
#include "engine/transfer/block_check.h"
#include "engine/transfer/gpu_backend.h"
#include "engine/cli/transfer_options.h"
#include "engine/transfer/lane_pool.h"
#include "engine/transfer/staging_ceiling.h"
#include "engine/transfer/transfer_engine.h"

namespace resmem {
namespace {

using Steady = std::chrono::steady_clock;
using transfer::TransferEngine;
using transfer::TransferOptions;

double Us(Steady::time_point a, Steady::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

// Every figure printed here is one copy that was measured: the upper of the middle pair.
double Median(const std::vector<double>& v) { return MedianUpper(v); }

double Gbps(uint64_t bytes, double us) { return us > 0 ? bytes / us / 1e3 : 0; }

// The spread of a figure's copies: a user's throughput is their mean, which a slow tail drags
// below the median (bench reports total bytes over total time).
std::string Spread(std::vector<double> v) {
  if (v.empty()) return "";
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  char buf[96];
  std::snprintf(buf, sizeof buf, "mean %.1f, p90 %.1f, max %.1f", sum / v.size(),
                v[std::min(v.size() - 1, v.size() * 9 / 10)], v.back());
  return buf;
}

// CLFLUSH every cache line of [p, p+n), then a fence: the lines leave every cache for memory.
void FlushLines(const uint8_t* p, uint64_t n) {
#if defined(__x86_64__)
  for (uint64_t at = 0; at < n; at += 64) _mm_clflush(p + at);
  _mm_mfence();
#else
  (void)p, (void)n;
#endif
}

void Pause(int us) {
  if (us > 0) std::this_thread::sleep_for(std::chrono::microseconds(us));
}

int Fail(const Status& st, int code) {
  std::fprintf(stderr, "staged_probe: %s\n", st.message().c_str());
  return code;
}

struct Probe {
  cuda::CudaGpu* cuda;
  Gpu* gpu;
  Clock* clock;
  HostMemory* host;
  DeviceBuffer* dev;
  HostMemory* pinned;
  TransferOptions base;
  int copies;
  uint64_t seq = 100;
  uint64_t fill_seed = 7;
  uint64_t mismatched_copies = 0;
  bool dump = false;  // --dump: the last copy's per-segment timeline
  double hot_dispatch_us = 0;  // Dispatch's median empty job, lanes spinning (Costs' start)
  // --evict-mib: before each timed pinned, DMA-only, fill-only or staged copy (before its source
  // is stamped), the calling thread dirties this many bytes of its own, line by line, so what the
  // copy's last run left in the caches (the pinned ring, the source) is gone, as in bench, where
  // the other paths' copies and stamps come between two copies of one path.
  uint64_t evict_bytes = 0;
  std::vector<uint8_t> scratch = {};

  void Evict() {
    if (evict_bytes == 0) return;
    if (scratch.size() != evict_bytes) scratch.assign(evict_bytes, 0);
    // One read-modify-write per 64-byte line: cached stores (a large memset may stream past
    // the caches).
    volatile uint8_t* line = scratch.data();
    for (uint64_t i = 0; i < evict_bytes; i += 64) line[i] = line[i] + 1;
  }

  uint64_t SegmentOf(uint64_t size, int min_segments) const {
    const uint64_t share = ((size + min_segments - 1) / min_segments + 4095) / 4096 * 4096;
    return std::min(base.staging_chunk, std::max(base.staging_min_unit, share));
  }

  Status Pinned(uint64_t size) {
    std::vector<double> t;
    for (int i = 0; i < copies; ++i) {
      Evict();
      RESMEM_ASSIGN_OR_RETURN(CopyStats s,
                              gpu->Copy(CopyDirection::kHostToDevice, *pinned, 0, *dev, 0, size));
      t.push_back(s.seconds * 1e6);
    }
    std::printf("  pinned     cudaMemcpy                %8.1f us %6.2f GB/s  (%s)\n", Median(t),
                Gbps(size, Median(t)), Spread(t).c_str());
    return Status::Ok();
  }

  // Host memory contention: pinned copies of `size` both ways while N threads memcpy between
  // buffers of their own (no relation to the copy), N = 0, 2, 4, 8, 15. Shows what the CPU half
  // of a staged copy costs its DMA half on this host, whatever the pipeline.
  Status Contention(uint64_t size) {
    for (int n : {0, 2, 4, 8, 15}) {
      std::atomic<bool> stop{false};
      std::atomic<uint64_t> bytes{0};
      std::vector<std::thread> threads;
      const uint64_t chunk = 16ull << 20;
      for (int i = 0; i < n; ++i)
        threads.emplace_back([&] {
          std::vector<uint8_t> a(chunk, 1), b(chunk, 2);
          while (!stop.load(std::memory_order_relaxed)) {
            std::memcpy(b.data(), a.data(), chunk);
            bytes.fetch_add(chunk, std::memory_order_relaxed);
          }
        });
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      std::vector<double> h2d, d2h;
      const uint64_t b0 = bytes.load();
      const auto t0 = Steady::now();
      for (int i = 0; i < copies; ++i) {
        RESMEM_ASSIGN_OR_RETURN(CopyStats a,
                                gpu->Copy(CopyDirection::kHostToDevice, *pinned, 0, *dev, 0, size));
        RESMEM_ASSIGN_OR_RETURN(CopyStats b,
                                gpu->Copy(CopyDirection::kDeviceToHost, *pinned, 0, *dev, 0, size));
        h2d.push_back(a.seconds * 1e6), d2h.push_back(b.seconds * 1e6);
      }
      const double wall = Us(t0, Steady::now());
      const uint64_t moved = bytes.load() - b0;
      stop.store(true);
      for (auto& t : threads) t.join();
      std::printf("  contention %2d memcpy threads: pinned H2D %6.2f GB/s, D2H %6.2f GB/s; the "
                  "threads copied %6.2f GB/s\n",
                  n, Gbps(size, Median(h2d)), Gbps(size, Median(d2h)), Gbps(moved, wall));
    }
    return Status::Ok();
  }

  // The driver's DMA half alone: segments from the ring, S buffers, polled events.
  Status DmaOnly(uint64_t size, uint64_t seg, const std::vector<std::unique_ptr<HostMemory>>& ring,
                 std::vector<cuda::CudaGpu::CopyTicket>& tickets, const char* label) {
    const uint64_t nseg = (size + seg - 1) / seg;
    const uint64_t nbuf = ring.size();
    std::vector<double> t, submit;
    for (int c = 0; c < copies; ++c) {
      Evict();
      auto t0 = Steady::now();
      uint64_t issued = 0, finished = 0;
      double sub = 0;
      while (finished < nseg) {
        if (issued < nseg && issued < finished + nbuf) {
          auto a = Steady::now();
          RESMEM_RETURN_IF_ERROR(cuda->CopyAsyncInto(tickets[issued % nbuf],
                                                     CopyDirection::kHostToDevice,
                                                     *ring[issued % nbuf], 0, *dev, issued * seg,
                                                     std::min(seg, size - issued * seg)));
          sub += Us(a, Steady::now());
          ++issued;
          continue;
        }
        RESMEM_ASSIGN_OR_RETURN(bool done, cuda->Done(tickets[finished % nbuf]));
        if (done) ++finished;
      }
      t.push_back(Us(t0, Steady::now()));
      submit.push_back(sub / nseg);
    }
    std::printf("  dma-only   %-26s %8.1f us %6.2f GB/s  (%llu DMAs, submit %.1f us each)\n", label,
                Median(t), Gbps(size, Median(t)), (unsigned long long)nseg, Median(submit));
    return Status::Ok();
  }

  // The DMA half alone, every segment queued at once from pinned memory, round-robin over
  // `streams` copy streams: does spreading DMAs over streams hide each DMA's set-up?
  Status DmaStreams(uint64_t size, uint64_t nseg, int streams, CopyDirection dir,
                    bool last_event_only = false) {
    RESMEM_RETURN_IF_ERROR(cuda->EnsureCopyStreams(streams));
    const uint64_t seg = (size + nseg - 1) / nseg;
    std::vector<cuda::CudaGpu::CopyTicket> t(nseg);
    for (auto& k : t) {
      RESMEM_ASSIGN_OR_RETURN(k, cuda->NewTicket());
    }
    std::vector<double> total, submit;
    for (int c = 0; c < copies; ++c) {
      auto t0 = Steady::now();
      for (uint64_t i = 0; i < nseg; ++i) {
        const uint64_t n = std::min(seg, size - i * seg);
        if (last_event_only && i + 1 < nseg)  // one stream: the last event covers every copy
          RESMEM_RETURN_IF_ERROR(cuda->EnqueueCopy(dir, *pinned, i * seg, *dev, i * seg, n));
        else
          RESMEM_RETURN_IF_ERROR(cuda->CopyAsyncInto(
              t[i], dir, *pinned, i * seg, *dev, i * seg, n,
              streams > 1 ? static_cast<int>(i % streams) : -1));
      }
      submit.push_back(Us(t0, Steady::now()) / nseg);
      for (uint64_t i = last_event_only ? nseg - 1 : 0; i < nseg; ++i)
        RESMEM_RETURN_IF_ERROR(cuda->WaitKeep(t[i]));
      total.push_back(Us(t0, Steady::now()));
    }
    for (auto& k : t) cuda->ReleaseTicket(k);
    std::printf("  dma-streams %s %-8s %3llu DMAs on %d stream%s%s %8.1f us %6.2f GB/s (submit %.1f us each)\n",
                dir == CopyDirection::kHostToDevice ? "H2D" : "D2H", FormatSize(size).c_str(),
                (unsigned long long)nseg, streams, streams > 1 ? "s" : " ",
                last_event_only ? ", one event" : "", Median(total),
                Gbps(size, Median(total)), Median(submit));
    return Status::Ok();
  }

  // The lanes' copy alone (transfer::TimeLaneCopy): fill host -> ring, or drain ring -> host;
  // after_dma: the device writes the ring's segments before each timed drain.
  Status FillOnly(uint64_t size, uint64_t seg, const std::vector<std::unique_ptr<HostMemory>>& ring,
                  transfer::LanePool& pool, bool drain = false, bool after_dma = false) {
    RESMEM_ASSIGN_OR_RETURN(auto t, transfer::TimeLaneCopy(Rig(ring, pool), size, seg, drain, after_dma));
    std::printf("  %s %2d lanes, pieces %-9s   %8.1f us %6.2f GB/s\n",
                after_dma ? "drain-only after DMA" : drain ? "drain-only" : "fill-only ", t.lanes - 1,
                FormatSize(t.piece).c_str(), t.median_us, t.gbps);
    return Status::Ok();
  }

  // Where the drain's source lines are, and what runs beside it (--timeline): the ring flushed
  // to memory before each timed drain (CLFLUSH of the segments in the ring's buffers, the lines
  // the after-DMA line's DMAs write; a longer copy goes round the ring), and the ring just
  // written by DMAs with lane 0 running more DMAs into other pinned memory meanwhile, as the
  // next segments' DMAs run beside a staged copy's drain. With the timeline's drain-only lines
  // (source in cache; source just written by DMA) they say whether the device's writes reach
  // the CPU's caches and what a concurrent DMA costs the drain.
  Status DrainSources(uint64_t size, uint64_t seg,
                      const std::vector<std::unique_ptr<HostMemory>>& ring,
                      transfer::LanePool& pool) {
    transfer::CeilingRig flushed = Rig(ring, pool);
    flushed.before_lane_copy = [&ring, seg](uint64_t bytes) {
      for (uint64_t s = 0; s * seg < bytes && s < ring.size(); ++s)
        FlushLines(ring[s]->data(), std::min(seg, bytes - s * seg));
      return Status::Ok();
    };
    RESMEM_ASSIGN_OR_RETURN(auto f, transfer::TimeLaneCopy(flushed, size, seg, true, false));
    const auto d2h = CopyDirection::kDeviceToHost;
    RESMEM_ASSIGN_OR_RETURN(auto b, transfer::TimeLaneCopy(Rig(ring, pool), size, seg, true, true, &d2h));
    std::printf("  drain-only after flush %2d lanes, pieces %-9s %8.1f us %6.2f GB/s\n", f.lanes - 1,
                FormatSize(f.piece).c_str(), f.median_us, f.gbps);
    std::printf("  drain-only after DMA, beside DMAs %2d lanes %8.1f us %6.2f GB/s (%zu DMAs beside)\n",
                b.lanes - 1, b.median_us, b.gbps, b.beside_dma_us.size());
    return Status::Ok();
  }

  // What transfer:: measures the lanes' copy and the costs with (staging_ceiling.h). With
  // --evict-mib, or `stamp` (as bench's blocks meet their copy), each timed lane copy starts
  // after Evict (a no-op without --evict-mib) and a fresh stamp of its source.
  transfer::CeilingRig Rig(const std::vector<std::unique_ptr<HostMemory>>& ring,
                           transfer::LanePool& pool, bool stamp = false) {
    transfer::CeilingRig r{cuda, host, pinned, dev, &ring, &pool, base.staging_min_piece, copies,
                           nullptr};
    if (evict_bytes || stamp)
      r.before_lane_copy = [this](uint64_t bytes) {
        Evict();
        return transfer::StampPattern(*host, 0, bytes, ++seq);
      };
    return r;
  }

  // clear_host (device to host): zero the destination before each copy, so what comes back must
  // be the device's; false leaves the previous copy's bytes (the same data: nothing is checked
  // then) in lines the lanes themselves wrote last, to see what the destination's cache state
  // costs the drain.
  Status Staged(uint64_t size, const TransferOptions& to, int gap_us, const char* label,
                bool show_phases, CopyDirection dir = CopyDirection::kHostToDevice,
                bool clear_host = true) {
    const bool h2d = dir == CopyDirection::kHostToDevice;
    RESMEM_ASSIGN_OR_RETURN(auto engine, TransferEngine::Open(*gpu, *host, *clock, to));
    // One copy to warm the lanes, the ring and the page tables (device to host: it also puts the
    // pattern on the device, which every timed copy then brings back).
    ++seq;
    RESMEM_RETURN_IF_ERROR(transfer::FillPattern(*host, 0, size, seq, fill_seed));
    RESMEM_RETURN_IF_ERROR(engine->Copy(CopyDirection::kHostToDevice, 0, *dev, 0, size).status());
    if (!h2d) RESMEM_RETURN_IF_ERROR(engine->Copy(dir, 0, *dev, 0, size).status());
    std::vector<double> total, enter_max, first_piece, fill0, submit, filled_last, issued_last,
        done_last, returned, dma_gap, sm_launched, sm_started, sm_moved, dma_count;
    for (int c = 0; c < copies; ++c) {
      Evict();
      if (h2d) {
        ++seq;
        RESMEM_RETURN_IF_ERROR(transfer::StampPattern(*host, 0, size, seq));
      } else {
        if (clear_host) std::memset(host->data(), 0, size);  // what comes back must be the device's
      }
      Pause(gap_us);
      auto t0 = Steady::now();
      RESMEM_RETURN_IF_ERROR(engine->Copy(dir, 0, *dev, 0, size).status());
      total.push_back(Us(t0, Steady::now()));
      const auto& tr = engine->last_trace();
      if (tr.segments > 0) {
        const int n = tr.segments;
        dma_count.push_back(n);
        enter_max.push_back(tr.lane_enter_max_us);
        first_piece.push_back(tr.first_piece_us);
        fill0.push_back(tr.filled_us[0]);
        double sub = 0;
        for (int i = 0; i < n; ++i) sub += tr.issued_us[i] - tr.issue_begin_us[i];
        submit.push_back(sub / n);
        filled_last.push_back(tr.filled_us[n - 1]);
        issued_last.push_back(tr.issued_us[n - 1]);
        done_last.push_back(tr.done_us[n - 1]);
        returned.push_back(tr.returned_us);
        if (n > 1) dma_gap.push_back((tr.done_us[n - 1] - tr.done_us[0]) / (n - 1));
      } else if (tr.sm_pieces > 0) {
        sm_launched.push_back(tr.launched_us);
        sm_started.push_back(tr.sm_started_us);
        sm_moved.push_back(tr.pieces_moved_us);
        returned.push_back(tr.returned_us);
      }
      if (!h2d && !clear_host) continue;
      RESMEM_ASSIGN_OR_RETURN(
          uint64_t bad, h2d ? transfer::DeviceMismatches(*gpu, *dev, 0, size, seq, fill_seed)
                            : transfer::HostMismatches(*host, 0, size, seq, fill_seed));
      mismatched_copies += bad > 0;
      if (bad > 0)
        std::printf("  MISMATCH: staged %s %s, copy %d of %s: %llu words differ\n",
                    h2d ? "H2D" : "D2H", label, c, FormatSize(size).c_str(),
                    (unsigned long long)bad);
    }
    std::printf("  staged %s %-26s %8.1f us %6.2f GB/s  (%s; %s)\n", h2d ? "H2D" : "D2H", label,
                Median(total), Gbps(size, Median(total)), Spread(total).c_str(),
                engine->choice().detail.c_str());
    if (show_phases && !enter_max.empty())
      std::printf("             phases (us, medians): lanes entered by %.1f, first piece %.1f, "
                  "segment 0 filled %.1f, DMA submit %.1f each, last segment filled %.1f, "
                  "issued %.1f, done %.1f, returned %.1f; %.0f DMAs, done every %.1f us\n",
                  Median(enter_max), Median(first_piece), Median(fill0), Median(submit),
                  Median(filled_last), Median(issued_last), Median(done_last), Median(returned),
                  Median(dma_count), Median(dma_gap));
    if (engine->sm_copies_given_to_dmas() > 0)
      std::printf("  note: %llu SM copies went by DMAs (their kernel had not started in time)\n",
                  (unsigned long long)engine->sm_copies_given_to_dmas());
    if (show_phases && !sm_launched.empty())
      std::printf("             phases (us, medians): kernel launched by %.1f, started %.1f "
                  "(latest %.1f), every piece %s by %.1f, returned %.1f (%llu pieces moved by %d "
                  "blocks)\n",
                  Median(sm_launched), Median(sm_started),
                  *std::max_element(sm_started.begin(), sm_started.end()),
                  h2d ? "filled" : "drained", Median(sm_moved),
                  Median(returned), (unsigned long long)engine->last_trace().sm_pieces,
                  engine->last_trace().sm_blocks);
    if (show_phases && dump && engine->last_trace().segments > 0) {
      const auto& tr = engine->last_trace();
      std::printf("             last copy, per segment (us): ");
      for (int i = 0; i < tr.segments; ++i) {
        // By the fill frontier each DMA has its own length.
        const std::string bytes = static_cast<size_t>(i) < tr.dma_bytes.size()
                                      ? " " + FormatSize(tr.dma_bytes[i])
                                      : std::string();
        std::printf("[%d%s %s: %s %.1f, issued %.1f, DMA done %.1f] ", i, bytes.c_str(),
                    h2d ? "fill" : "drain", h2d ? "filled" : "drained", tr.filled_us[i],
                    tr.issued_us[i], tr.done_us[i]);
      }
      std::printf("returned %.1f\n", tr.returned_us);
      const std::string fills = transfer::DescribeUnitFills(tr);
      if (!fills.empty()) std::printf("             last copy, its fill: %s\n", fills.c_str());
    }
    return Status::Ok();
  }

  // The host's staging costs in direction `dir` (transfer::MeasureDirectionCosts), printed.
  Result<transfer::DirectionCosts> Costs(CopyDirection dir,
                                         const std::vector<std::unique_ptr<HostMemory>>& ring,
                                         transfer::LanePool& pool) {
    const char* d = dir == CopyDirection::kHostToDevice ? "H2D" : "D2H";
    RESMEM_ASSIGN_OR_RETURN(auto c, transfer::MeasureDirectionCosts(Rig(ring, pool), dir, hot_dispatch_us));
    std::printf("  %s: start %.1f us, submit %.1f us, 4 MiB in 1 DMA %.1f us, in 8 %.1f us\n", d,
                c.alone.start_us, c.alone.submit_us, c.one_dma_us, c.eight_dmas_us);
    for (const auto* t : {&c.lanes_alone, &c.lanes_beside})
      std::printf("  %s %2d lanes, pieces %-9s   %8.1f us %6.2f GB/s%s\n",
                  dir == CopyDirection::kHostToDevice ? "fill-only " : "drain-only", t->lanes - 1,
                  FormatSize(t->piece).c_str(), t->median_us, t->gbps,
                  t == &c.lanes_alone ? " (alone)" : " (beside lane 0's DMAs)");
    if (c.beside_dmas > 0)
      std::printf("  %s: 4 MiB DMA beside the lanes' copy %.1f us (median of %zu), alone %.1f\n", d,
                  c.beside_dma_us, c.beside_dmas, c.one_dma_us);
    return c;
  }

  // What the model makes of the costs: per size, the best cut with every rate at its better
  // figure (the ceiling) and the plan of the costs as measured.
  void Ceilings(const std::vector<uint64_t>& sizes, const transfer::StagingCosts& costs) {
    for (const auto& cell : transfer::CeilingCells(costs, sizes, base.staging_chunk)) {
      std::string cut;
      for (size_t i = 0; i < cell.plan_segments.size(); ++i)
        cut += (i ? " " : "") + FormatSize(cell.plan_segments[i]);
      if (cell.plan_segments.size() > 12) cut = std::to_string(cell.plan_segments.size()) + " segments";
      std::printf("  ceiling %s %-8s %5.1f%% of pinned (every rate at its better figure); plan "
                  "%5.1f%% (the rates as measured): %s; pinned %.1f us\n",
                  cell.direction == CopyDirection::kHostToDevice ? "H2D" : "D2H",
                  FormatSize(cell.size).c_str(), cell.percent_of_pinned,
                  cell.plan_percent_of_pinned, cut.c_str(), cell.pinned_us);
    }
  }

  // Per size: the lanes' rates over the copy's own length, each copy after a fresh stamp, and
  // the ceiling and plan of the costs with those rates (transfer::MeasureSizeRates).
  Status SizeCeilings(const std::vector<uint64_t>& sizes, const transfer::StagingCosts& costs,
                      const std::vector<std::unique_ptr<HostMemory>>& ring, transfer::LanePool& pool) {
    for (uint64_t size : sizes) {
      RESMEM_ASSIGN_OR_RETURN(auto r, transfer::MeasureSizeRates(Rig(ring, pool, true), size, costs));
      std::printf("  %s: fill %.1f GB/s alone, %.1f beside DMAs; drain %.1f after DMAs, %.1f beside\n",
                  FormatSize(size).c_str(), r.fill_alone.gbps, r.fill_beside.gbps, r.drain_alone.gbps,
                  r.drain_beside.gbps);
      Ceilings({size}, r.costs);
    }
    return Status::Ok();
  }

  Status Dispatch(transfer::LanePool& pool) {
    const transfer::DispatchTimes d = transfer::TimeDispatch(pool);
    hot_dispatch_us = d.hot_us;
    std::printf("dispatch: empty Run of %d lanes: hot %.1f us, after 3 ms pause %.1f us "
                "(max %.1f; %llu sleeps)\n",
                pool.size(), d.hot_us, d.cold_us, d.cold_max_us, (unsigned long long)d.sleeps);
    return Status::Ok();
  }

  // A run of `blocks` blocks of `size` (host ring of slots, device ring of 4): CopyQueue against
  // one Copy per block; every block checked on the device afterwards... per device slot reuse,
  // the check runs when the block arrives (on the driving lane: the probe's queue is short).
  Status Queue(uint64_t size, int blocks, const TransferOptions& to, const char* label) {
    const int host_slots = static_cast<int>(host->size() / size);
    RESMEM_ASSIGN_OR_RETURN(auto engine, TransferEngine::Open(*gpu, *host, *clock, to));
    std::vector<std::unique_ptr<DeviceBuffer>> devs;
    for (int i = 0; i < 4; ++i) {
      RESMEM_ASSIGN_OR_RETURN(auto d, gpu->AllocDevice(size));
      devs.push_back(std::move(d));
    }
    // Each slot holds its own block (the pattern's word indices start at the block).
    for (int s = 0; s < host_slots; ++s)
      RESMEM_RETURN_IF_ERROR(transfer::FillPattern(*host, s * size, size, 1000 + s, fill_seed));
    // Copy after copy.
    auto t0 = Steady::now();
    for (int b = 0; b < blocks; ++b)
      RESMEM_RETURN_IF_ERROR(engine->Copy(CopyDirection::kHostToDevice, (b % host_slots) * size,
                                          *devs[b % 4], 0, size)
                                 .status());
    const double copy_us = Us(t0, Steady::now());
    // Queue: the last 4 blocks stay in the device ring and are checked at the end.
    int handed = 0;
    t0 = Steady::now();
    RESMEM_RETURN_IF_ERROR(engine->CopyQueue(
        [&](transfer::QueuedBlock* qb) -> Result<transfer::QueuePoll> {
          if (handed == blocks) return transfer::QueuePoll::kEnd;
          *qb = transfer::QueuedBlock{(handed % host_slots) * size, devs[handed % 4].get(), 0,
                                      size, static_cast<uint64_t>(handed)};
          ++handed;
          return transfer::QueuePoll::kBlock;
        },
        [](const transfer::QueuedBlock&) { return Status::Ok(); }));
    const double queue_us = Us(t0, Steady::now());
    uint64_t bad_blocks = 0;
    for (int b = std::max(0, blocks - 4); b < blocks; ++b) {
      RESMEM_ASSIGN_OR_RETURN(uint64_t bad,
                              transfer::DeviceMismatches(*gpu, *devs[b % 4], 0, size,
                                                         1000 + (b % host_slots), fill_seed));
      bad_blocks += bad > 0;
    }
    mismatched_copies += bad_blocks;
    std::printf("queue %-22s %d x %s: Copy loop %6.2f GB/s, CopyQueue %6.2f GB/s; last 4 blocks "
                "%s\n",
                label, blocks, FormatSize(size).c_str(), Gbps(size * blocks, copy_us),
                Gbps(size * blocks, queue_us), bad_blocks ? "MISMATCHED" : "verified");
    return Status::Ok();
  }
};

// --handoff: how long lanes take to start a job, lane by lane from the caller's call (the
// `start` of segment_plan.h), through three hand-offs: the LanePool as the engine uses it, one
// word all lanes poll and nothing else, and one word per lane that the caller writes in turn.
// "+ claim" is each lane's time after one fetch_add on one shared counter right after it entered:
// what the segments' piece claim adds when every lane takes its first piece at once.
// Medians over `runs` runs of each rank: the first worker in, the median one, the last.
struct alignas(64) LaneWord {
  std::atomic<uint64_t> go{0};
};

void PrintEntries(const char* label, std::vector<std::vector<double>>& runs) {
  std::vector<double> first, mid, last;
  for (auto& r : runs) {
    std::sort(r.begin(), r.end());
    first.push_back(r.front()), mid.push_back(r[r.size() / 2]), last.push_back(r.back());
  }
  std::printf("  %-34s first %5.2f us, median %5.2f us, last %5.2f us (medians of %zu runs)\n",
              label, Median(first), Median(mid), Median(last), runs.size());
}

int Handoff(int lanes, int runs) {
  const int workers = lanes - 1;
  if (workers < 1) {
    std::fprintf(stderr, "staged_probe: --handoff needs --lanes 2 or more\n");
    return 2;
  }
  std::printf("handoff: %d lanes (%d workers), %d runs each\n", lanes, workers, runs);
  std::vector<std::vector<double>> entered(runs, std::vector<double>(workers)),
      claimed(runs, std::vector<double>(workers));
  {
    transfer::LanePoolOptions lo;
    lo.lanes = lanes;
    lo.spin_us = 100000;
    transfer::LanePool pool(lo);
    std::atomic<uint64_t> counter{0};
    std::vector<double> whole;
    for (int r = -20; r < runs; ++r) {  // 20 warm-up runs
      const auto t0 = Steady::now();
      std::vector<double> e(workers), c(workers);
      pool.Run(lanes, [&](int lane) {
        if (lane == 0) return;
        e[lane - 1] = Us(t0, Steady::now());
        counter.fetch_add(1, std::memory_order_acq_rel);
        c[lane - 1] = Us(t0, Steady::now());
      });
      if (r >= 0) entered[r] = e, claimed[r] = c, whole.push_back(Us(t0, Steady::now()));
    }
    std::printf("  LanePool: an empty Run with a claim, whole: %.2f us (median)\n", Median(whole));
    PrintEntries("LanePool", entered);
    PrintEntries("LanePool + claim", claimed);
  }
  {
    // The same after a 3 ms pause with the engine's spin (1 ms): every worker asleep.
    transfer::LanePoolOptions lo;
    lo.lanes = lanes;
    lo.spin_us = TransferOptions().staging_spin_us;
    transfer::LanePool pool(lo);
    std::vector<std::vector<double>> asleep(50, std::vector<double>(workers));
    std::vector<double> whole;
    for (int r = -5; r < 50; ++r) {
      Pause(3000);
      const auto t0 = Steady::now();
      std::vector<double> e(workers);
      pool.Run(lanes, [&](int lane) {
        if (lane != 0) e[lane - 1] = Us(t0, Steady::now());
      });
      if (r >= 0) asleep[r] = e, whole.push_back(Us(t0, Steady::now()));
    }
    std::printf("  LanePool after a 3 ms pause (spin %d us, %llu sleeps): an empty Run %.1f us "
                "(median)\n",
                lo.spin_us, (unsigned long long)pool.sleeps(), Median(whole));
    PrintEntries("LanePool, workers asleep", asleep);
  }
  // Raw threads: `shared` polls one word, otherwise each its own.
  for (bool shared : {true, false}) {
    std::vector<LaneWord> words(workers);
    LaneWord broadcast;
    std::vector<double> e(workers), c(workers);
    std::vector<LaneWord> done(workers);
    std::atomic<uint64_t> counter{0};
    std::atomic<bool> stop{false};
    Steady::time_point t0;
    std::vector<std::thread> threads;
    for (int w = 0; w < workers; ++w)
      threads.emplace_back([&, w] {
        std::atomic<uint64_t>& go = shared ? broadcast.go : words[w].go;
        for (uint64_t seen = 0;;) {
          uint64_t g;
          while ((g = go.load(std::memory_order_acquire)) == seen) {
            if (stop.load(std::memory_order_relaxed)) return;
            transfer::CpuRelax();
          }
          seen = g;
          e[w] = Us(t0, Steady::now());
          counter.fetch_add(1, std::memory_order_acq_rel);
          c[w] = Us(t0, Steady::now());
          done[w].go.store(g, std::memory_order_release);
        }
      });
    for (int r = -20; r < runs; ++r) {
      const uint64_t run = static_cast<uint64_t>(r + 21);
      t0 = Steady::now();
      if (shared) broadcast.go.store(run, std::memory_order_release);
      else
        for (auto& w : words) w.go.store(run, std::memory_order_release);
      for (auto& d : done)
        while (d.go.load(std::memory_order_acquire) != run) transfer::CpuRelax();
      if (r >= 0) entered[r] = e, claimed[r] = c;
    }
    stop.store(true);
    for (auto& t : threads) t.join();
    PrintEntries(shared ? "one word, no admission" : "one word per lane", entered);
    PrintEntries(shared ? "one word, no admission + claim" : "one word per lane + claim", claimed);
  }
  return 0;
}

// staged_probe's command line: what to measure, and the staged path's options (the probe's
// base).
struct ProbeArgs {
  TransferOptions base;
  std::vector<uint64_t> sizes = {4ull << 20, 16ull << 20, 256ull << 20};
  int copies = 20, blocks = 300;
  uint64_t evict_mib = 0;
  std::string host_kind = "memfd";
  bool focus = false, dump = false, timeline = false, streams_matrix = false, ceiling = false,
       handoff = false;
};

// The command line's options, bound to `*a` (its values are the defaults); `a` must outlive the
// parse.
std::unique_ptr<CLI::App> MakeProbeApp(ProbeArgs* a) {
  auto app = cli::MakeApp("where a staged copy's time goes, on a GPU host (figures only)",
                          "staged_probe");
  app->footer("Exit: 0 ok, 1 a data mismatch, 2 bad input, 3 no GPU.");
  app->add_option("--sizes", a->sizes, "copy sizes, multiples of 4K")
      ->type_name("SIZE,...")
      ->delimiter(',')
      ->transform(cli::ByteSize(4096))
      ->check(CLI::Validator(
          [](std::string& bytes) -> std::string {
            return std::stoull(bytes) % 4096 ? "give multiples of 4K" : "";
          },
          "", "4K-MULTIPLE"))
      ->default_str("4M,16M,256M");
  app->add_option("--evict-mib", a->evict_mib,
                  "before each timed pinned, DMA-only, fill-only or staged step, dirty this many "
                  "MiB of other memory (caches emptied of the ring and the driver's data, as "
                  "between bench's copies)")
      ->check(CLI::Range(0, 65536));
  app->add_option("--copies", a->copies, "copies per figure (median)")
      ->type_name("N")
      ->check(CLI::Range(1, 100000));
  app->add_option("--blocks", a->blocks, "blocks of the CopyQueue run")
      ->type_name("N")
      ->check(CLI::Range(1, 100000));
  app->add_option("--host", a->host_kind, "the host memory staged from (memfd: RAM, as a reservation)")
      ->type_name("KIND")
      ->check(CLI::IsMember({"memfd", "hugetlb", "shm", "file", "file-private", "anon"}));
  app->add_flag("--focus", a->focus,
                "only pinned, the segment DMAs, the fill, and staged copies both ways (stream "
                "signals and event polling), no queue runs");
  app->add_flag("--dump", a->dump, "print the last copy's per-segment timeline");
  app->add_flag("--timeline", a->timeline,
                "only pinned, the segment DMAs, the fill and the drain, and the staged copy both "
                "ways with the given options, each with its last copy's per-segment timeline");
  app->add_flag("--streams-matrix", a->streams_matrix,
                "only DMAs from pinned memory: 1-32 segments on 1-4 copy streams, both ways");
  app->add_flag("--ceiling", a->ceiling,
                "only the host's staging costs (the --costs of --plan) and, per size, what the "
                "best cut of a staged copy can reach under them");
  app->add_flag("--handoff", a->handoff,
                "only the lanes' start, lane by lane, through three hand-offs (no GPU needed)");
  transfer::AddStagingOptions(*app, &a->base);
  return app;
}

// What the probe measures with, alive for the whole run: the GPU, the host memory staged from,
// a device and a pinned buffer of the largest size, and the lanes' ring of pinned buffers with a
// copy ticket each. Members are freed in the reverse of their order here.
struct ProbeRig {
  transfer::GpuBackend backend;
  cuda::CudaGpu* cuda_gpu = nullptr;  // backend.gpu, as the CUDA GPU it is
  std::unique_ptr<HostMemory> host;
  std::unique_ptr<DeviceBuffer> dev;
  std::unique_ptr<HostMemory> pinned;
  std::vector<std::unique_ptr<HostMemory>> ring;
  std::vector<cuda::CudaGpu::CopyTicket> tickets;

  void ReleaseTickets() {
    for (auto& t : tickets) cuda_gpu->ReleaseTicket(t);
  }
};

// Sets up `rig` for `a`. nullopt: ready; otherwise the exit code, its message printed: 3 no GPU
// ("skipped" on stdout), 2 a bad host kind, 4 an allocation that failed.
std::optional<int> SetUpRig(const ProbeArgs& a, ProbeRig& rig) {
  auto backend = transfer::MakeGpuBackend("cuda");
  if (!backend.ok()) {
    std::printf("skipped: staged_probe (%s)\n", backend.status().message().c_str());
    return 3;
  }
  rig.backend = std::move(backend).value();
  const uint64_t max_size =
      std::max<uint64_t>(256ull << 20, *std::max_element(a.sizes.begin(), a.sizes.end()));
  // memfd by default: RAM, as the reservation is. A disk file (--host file) adds its page cache
  // writeback to the copy (docs/hil/2026-11-23-h100-perf: staged-file below staged).
  auto kind = host::ParseHostKind(a.host_kind);
  if (!kind.ok()) return Fail(kind.status(), 2);
  auto host = host::MapHostMemory(*kind, max_size);
  if (!host.ok()) return Fail(host.status(), 4);
  rig.host = std::move(host).value();
  if (Status st = transfer::FillPattern(*rig.host, 0, max_size, 0, 7); !st.ok()) return Fail(st, 4);
  auto dev = rig.backend.gpu->AllocDevice(max_size);
  auto pinned = rig.backend.gpu->AllocPinned(max_size, 0);
  if (!dev.ok() || !pinned.ok()) return Fail(!dev.ok() ? dev.status() : pinned.status(), 4);
  rig.dev = std::move(dev).value();
  rig.pinned = std::move(pinned).value();
  rig.cuda_gpu = dynamic_cast<cuda::CudaGpu*>(rig.backend.gpu.get());
  for (int i = 0; i < std::max(2, a.base.staging_buffers); ++i) {
    auto b = rig.cuda_gpu->AllocPinned(a.base.staging_chunk, 0);
    auto t = rig.cuda_gpu->NewTicket();
    if (!b.ok() || !t.ok()) return Fail(!b.ok() ? b.status() : t.status(), 4);
    rig.ring.push_back(std::move(b).value());
    rig.tickets.push_back(*t);
  }
  return std::nullopt;
}

// --ceiling: one set of costs (start, submit and the DMA figures of host to device, the fill's
// and the drain's rates of each direction), printed, and per size what the best cut reaches.
Status ProbeCeiling(Probe& p, const ProbeRig& rig, transfer::LanePool& pool,
                    const std::vector<uint64_t>& sizes) {
  RESMEM_ASSIGN_OR_RETURN(auto up, p.Costs(CopyDirection::kHostToDevice, rig.ring, pool));
  RESMEM_ASSIGN_OR_RETURN(auto down, p.Costs(CopyDirection::kDeviceToHost, rig.ring, pool));
  const transfer::StagingCosts c = transfer::CombineCosts(up, down);
  std::printf("costs: %s\n", c.Describe().c_str());
  std::printf("with the lanes' 4 MiB rates (a source the cache holds):\n");
  p.Ceilings(sizes, c);
  std::printf("with each size's own lane rates, the source freshly stamped (bench's ceiling):\n");
  return p.SizeCeilings(sizes, c, rig.ring, pool);
}

// --streams-matrix: per size and direction, DMAs from pinned memory, 1-32 segments on 1-4 copy
// streams (and with one event after the last). Stops at the first error.
Status ProbeStreamsMatrix(Probe& p, const std::vector<uint64_t>& sizes) {
  for (uint64_t size : sizes)
    for (auto dir : {CopyDirection::kHostToDevice, CopyDirection::kDeviceToHost})
      for (uint64_t nseg : {1, 2, 4, 8, 16, 32})
        for (int streams : {1, 2, 3, 4}) {
          if (nseg == 1 && streams > 1) continue;
          RESMEM_RETURN_IF_ERROR(p.DmaStreams(size, nseg, streams, dir));
          if (streams == 1 && nseg > 1)
            RESMEM_RETURN_IF_ERROR(p.DmaStreams(size, nseg, 1, dir, true));
        }
  return Status::Ok();
}

// What one size's steps share: the rig, the lanes, the segment, and the option variants.
struct SizeCase {
  Probe& p;
  const ProbeRig& rig;
  std::vector<cuda::CudaGpu::CopyTicket>& tickets;
  transfer::LanePool& pool;
  uint64_t size;
  uint64_t seg;          // the segment of a copy of `size` under base's min-segments
  bool largest;          // the last size given (the contention step runs on it only)
  TransferOptions base;  // the command line's
  TransferOptions traced;  // base traced, with stream signals (--focus: lanes spinning 100 ms)
  TransferOptions polled;  // traced without signals (event polling)
  TransferOptions spin;    // base traced, lanes spinning 20 ms
};

// Runs `steps` in order; the first error stops them and is returned.
Status RunSteps(const std::vector<std::function<Status()>>& steps) {
  for (const auto& step : steps) RESMEM_RETURN_IF_ERROR(step());
  return Status::Ok();
}

// --timeline: pinned, the segment DMAs, the fill and the drain, and the staged copy both ways
// with the options given, traced.
Status TimelineSteps(SizeCase& c) {
  Probe& p = c.p;
  const uint64_t size = c.size, seg = c.seg;
  const auto d2h = CopyDirection::kDeviceToHost;
  TransferOptions v = c.base;
  v.staging_trace = true;
  return RunSteps({
      [&] { return p.Pinned(size); },
      [&] { return p.DmaOnly(size, seg, c.rig.ring, c.tickets, "segments"); },
      [&] { return p.FillOnly(size, seg, c.rig.ring, c.pool); },
      [&] { return p.FillOnly(size, seg, c.rig.ring, c.pool, true); },
      [&] { return p.FillOnly(size, seg, c.rig.ring, c.pool, true, true); },
      [&] { return p.DrainSources(size, seg, c.rig.ring, c.pool); },
      [&] { return p.Staged(size, v, 0, "event polling", true); },
      [&] { return p.Staged(size, v, 0, "event polling", true, d2h); },
      [&] { return p.Staged(size, v, 0, "host not cleared", true, d2h, false); }});
}

// A copy of `v` with `change` applied: one step's option variant.
TransferOptions With(TransferOptions v, const std::function<void(TransferOptions&)>& change) {
  change(v);
  return v;
}

// --focus: pinned, the segment DMAs, the fill, contention (largest size only), and staged
// copies both ways with stream signals and event polling, and their variants.
Status FocusedSteps(SizeCase& c) {
  Probe& p = c.p;
  const uint64_t size = c.size, seg = c.seg;
  const auto d2h = CopyDirection::kDeviceToHost;
  const TransferOptions& traced = c.traced;
  const TransferOptions& polled = c.polled;
  auto min_segments = [&](int n) {
    return With(traced, [n](TransferOptions& v) { v.staging_min_segments = n; });
  };
  auto lanes = [&](int n) {
    return With(traced, [n](TransferOptions& v) { v.staging_lanes = n; });
  };
  return RunSteps({
      [&] { return p.Pinned(size); },
      [&] { return p.DmaOnly(size, seg, c.rig.ring, c.tickets, "segments"); },
      [&] { return p.FillOnly(size, seg, c.rig.ring, c.pool); },
      [&] { return p.FillOnly(size, seg, c.rig.ring, c.pool, true); },
      [&] { return c.largest ? p.Contention(size) : Status::Ok(); },
      [&] { return p.Staged(size, traced, 0, "signals", true); },
      [&] { return p.Staged(size, polled, 0, "event polling", true); },
      [&] { return p.Staged(size, traced, 0, "signals", true, d2h); },
      [&] { return p.Staged(size, polled, 0, "event polling", true, d2h); },
      [&] {
        return p.Staged(size, With(traced, [](TransferOptions& v) { v.staging_gpu_waits = true; }),
                        0, "signals, GPU waits", true);
      },
      [&] { return p.Staged(size, min_segments(4), 0, "signals, min-segments 4", true); },
      [&] { return p.Staged(size, min_segments(4), 0, "signals, min-segments 4", true, d2h); },
      [&] { return p.Staged(size, min_segments(2), 0, "signals, min-segments 2", true, d2h); },
      [&] {
        TransferOptions v = min_segments(4);
        v.staging_stream_to_host = true;
        return p.Staged(size, v, 0, "signals, min-seg 4, NT drain", true, d2h);
      },
      [&] { return p.Staged(size, lanes(6), 0, "signals, 5 fill lanes", true); },
      [&] { return p.Staged(size, lanes(9), 0, "signals, 8 lanes", true, d2h); },
      [&] {
        const int spin_us = c.base.staging_spin_us;
        return p.Staged(size, With(traced, [spin_us](TransferOptions& v) { v.staging_spin_us = spin_us; }),
                        3000, "signals, 3 ms pause", true);
      }});
}

// The full probe of one size: pinned, DMAs, the fill, and staged copies host to device with
// pauses, spins, min-segments, lanes and ramp variants.
Status FullSteps(SizeCase& c) {
  Probe& p = c.p;
  const uint64_t size = c.size, seg = c.seg;
  const TransferOptions& traced = c.traced;
  auto variant = [&](const std::function<void(TransferOptions&)>& change) {
    return With(traced, change);
  };
  return RunSteps({
      [&] { return p.Pinned(size); },
      [&] { return p.DmaOnly(size, seg, c.rig.ring, c.tickets, "segments"); },
      [&] { return p.DmaOnly(size, std::min(size, c.base.staging_chunk), c.rig.ring, c.tickets,
                             "one DMA per 8 MiB"); },
      [&] { return p.FillOnly(size, seg, c.rig.ring, c.pool); },
      [&] { return p.Staged(size, traced, 0, "back to back", true); },
      [&] {
        return p.Staged(size, variant([](TransferOptions& v) { v.staging_nt_fill_below = 0; }),
                        0, "cached fill", true);
      },
      [&] { return p.Staged(size, traced, 3000, "3 ms pause between", true); },
      [&] { return p.Staged(size, c.spin, 3000, "3 ms pause, spin 20 ms", false); },
      [&] {
        return p.Staged(size, variant([](TransferOptions& v) { v.staging_min_segments = 4; }),
                        0, "min-segments 4", true);
      },
      [&] {
        return p.Staged(size, variant([](TransferOptions& v) { v.staging_min_segments = 16; }),
                        0, "min-segments 16", false);
      },
      [&] {
        return p.Staged(size, variant([](TransferOptions& v) { v.staging_lanes = 9; }), 0,
                        "8 fill lanes", false);
      },
      [&] {
        return p.Staged(size, variant([](TransferOptions& v) { v.staging_ramp_first = 256 << 10; }),
                        0, "ramp from 256 KiB", true);
      },
      [&] {
        TransferOptions v = traced;
        v.staging_ramp_first = 256 << 10;
        v.staging_min_segments = 1;
        return p.Staged(size, v, 0, "ramp 256 KiB to 8 MiB", true);
      }});
}

// Every size in turn, headed by its segment, through the steps of the mode (--timeline,
// --focus, or the full probe). Stops at the first error.
Status ProbeSizes(Probe& p, ProbeRig& rig, transfer::LanePool& pool, const ProbeArgs& a) {
  for (uint64_t size : a.sizes) {
    const uint64_t seg = p.SegmentOf(size, a.base.staging_min_segments);
    std::printf("== %s (segments of %s)\n", FormatSize(size).c_str(), FormatSize(seg).c_str());
    SizeCase c{p, rig, rig.tickets, pool, size, seg, size == a.sizes.back(), a.base, a.base,
               a.base, a.base};
    c.traced.staging_trace = true;
    c.spin = c.traced;
    c.spin.staging_spin_us = 20000;
    // Focus: lanes spin through the probe's own work between copies (the device-to-host check
    // of the host copy takes milliseconds), so wake-up is not in the figures; the pause variants
    // show it.
    if (a.focus) c.traced.staging_spin_us = 100000;
    c.polled = c.traced;
    c.traced.staging_signals = true;
    RESMEM_RETURN_IF_ERROR(a.timeline ? TimelineSteps(c) : a.focus ? FocusedSteps(c)
                                                                   : FullSteps(c));
  }
  return Status::Ok();
}

// CopyQueue runs of 16 MiB blocks: segments of the chunk, 4 MiB and 2 MiB, and of the chunk
// with cached fill.
Status ProbeQueues(Probe& p, const ProbeArgs& a) {
  for (uint64_t qseg : {0ull, 4ull << 20, 2ull << 20, 1ull}) {
    TransferOptions q = a.base;
    q.staging_queue_segment = qseg == 1 ? 0 : qseg;
    if (qseg == 1) q.staging_nt_fill_below = 0;
    std::string label = "segments " + FormatSize(q.staging_queue_segment ? qseg : a.base.staging_chunk) +
                        (qseg == 1 ? " cached" : "");
    RESMEM_RETURN_IF_ERROR(p.Queue(16ull << 20, a.blocks, q, label.c_str()));
  }
  return Status::Ok();
}

int Main(int argc, char** argv) {
  ProbeArgs a;
  auto app = MakeProbeApp(&a);
  if (auto rc = cli::ParseArgs(*app, std::vector<std::string>(argv + 1, argv + argc), std::cout,
                               std::cerr))
    return *rc;
  if (a.handoff) return Handoff(a.base.staging_lanes, std::max(a.copies, 200));
  a.base.allowed = {transfer::Path::kStaged};
  ProbeRig rig;
  if (auto rc = SetUpRig(a, rig)) return *rc;
  Probe p{rig.cuda_gpu, rig.backend.gpu.get(), rig.backend.clock.get(), rig.host.get(),
          rig.dev.get(), rig.pinned.get(), a.base, a.copies};
  p.dump = a.dump || a.timeline;
  p.evict_bytes = a.evict_mib << 20;
  transfer::LanePoolOptions lo;
  lo.lanes = a.base.staging_lanes;
  lo.spin_us = a.base.staging_spin_us;
  transfer::LanePool pool(lo);
  Status st = p.Dispatch(pool);
  if (a.ceiling) {
    if (st.ok()) st = ProbeCeiling(p, rig, pool, a.sizes);
    rig.ReleaseTickets();
    if (!st.ok()) return Fail(st, 4);
    return 0;
  }
  if (st.ok()) st = a.streams_matrix ? ProbeStreamsMatrix(p, a.sizes) : ProbeSizes(p, rig, pool, a);
  if (st.ok() && !a.focus && !a.streams_matrix && !a.timeline) st = ProbeQueues(p, a);
  rig.ReleaseTickets();
  if (!st.ok()) return Fail(st, 4);
  std::printf("data: %llu staged copies mismatched on the device\n",
              (unsigned long long)p.mismatched_copies);
  return p.mismatched_copies ? 1 : 0;
}

}  // namespace
}  // namespace resmem

int main(int argc, char** argv) { return resmem::Main(argc, argv); }
