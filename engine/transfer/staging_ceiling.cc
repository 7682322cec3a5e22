#include "engine/transfer/staging_ceiling.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "backends/api/median.h"
#include "engine/transfer/block_check.h"
#include "engine/transfer/transfer_engine.h"

namespace resmem::transfer {
namespace {

using Steady = std::chrono::steady_clock;

double Us(Steady::time_point a, Steady::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}
double Gbps(uint64_t bytes, double us) { return us > 0 ? bytes / us / 1e3 : 0; }

constexpr uint64_t kDmaBytes = 4ull << 20;  // the DMA figures' copy, and beside DMAs' length
constexpr uint64_t kSegment = 512 << 10;    // the lanes' segments in the cost figures

// Lane 0's part of TimeLaneCopy with `beside`: 4 MiB DMAs in that direction, back to back, until
// every piece is moved; each DMA that finished while pieces were still moving is timed.
Status DriveBesideDmas(const CeilingRig& rig, CopyDirection dir, cuda::CudaGpu::CopyTicket& ticket,
                       const std::atomic<uint64_t>& moved, uint64_t pieces,
                       std::vector<double>* dma_us) {
  while (moved.load(std::memory_order_acquire) < pieces) {
    const auto d0 = Steady::now();
    RESMEM_RETURN_IF_ERROR(rig.cuda->CopyAsyncInto(ticket, dir, *rig.pinned, 0, *rig.dev, 0, kDmaBytes));
    for (bool done = false; !done;) {
      RESMEM_ASSIGN_OR_RETURN(done, rig.cuda->Done(ticket));
    }
    if (moved.load(std::memory_order_acquire) < pieces) dma_us->push_back(Us(d0, Steady::now()));
  }
  return Status::Ok();
}

// The device writes the ring's first segments, as the DMAs of a device-to-host copy do.
Status DmaIntoRing(const CeilingRig& rig, uint64_t size, uint64_t seg) {
  const auto& ring = *rig.ring;
  const uint64_t nseg = (size + seg - 1) / seg;
  for (uint64_t s = 0; s < nseg && s < ring.size(); ++s)
    RESMEM_RETURN_IF_ERROR(rig.cuda->Copy(CopyDirection::kDeviceToHost, *ring[s], 0, *rig.dev,
                                          s * seg, std::min(seg, size - s * seg))
                               .status());
  return Status::Ok();
}

}  // namespace

uint64_t CeilingChunk(uint64_t staging_chunk) {
  return std::max(staging_chunk, TransferOptions{}.staging_chunk);
}

Result<LaneCopyTimes> TimeLaneCopy(const CeilingRig& rig, uint64_t size, uint64_t seg, bool drain,
                                   bool after_dma, const CopyDirection* beside) {
  const auto& ring = *rig.ring;
  LaneCopyTimes out;
  out.lanes = rig.pool->size();
  out.piece = SegmentPiece(seg, out.lanes, rig.min_piece);
  const uint64_t per_seg = (seg + out.piece - 1) / out.piece;
  const uint64_t nseg = (size + seg - 1) / seg, pieces = nseg * per_seg;
  cuda::CudaGpu::CopyTicket ticket{};
  if (beside) {
    RESMEM_ASSIGN_OR_RETURN(ticket, rig.cuda->NewTicket());
  }
  std::vector<double> t;
  Status st;
  for (int c = 0; c < rig.copies && st.ok(); ++c) {
    if (rig.before_lane_copy) st = rig.before_lane_copy(size);
    if (st.ok() && after_dma) st = DmaIntoRing(rig, size, seg);
    if (!st.ok()) break;
    std::atomic<uint64_t> next{0}, moved{0};
    std::atomic<double> last_piece{0};
    Status dma_status;
    const auto t0 = Steady::now();
    rig.pool->Run(out.lanes, [&](int lane) {
      if (lane == 0 && beside) {
        dma_status = DriveBesideDmas(rig, *beside, ticket, moved, pieces, &out.beside_dma_us);
        return;
      }
      for (uint64_t k; (k = next.fetch_add(1)) < pieces;) {
        const uint64_t s = k / per_seg, at = s * seg + (k % per_seg) * out.piece;
        const uint64_t end = std::min(size, (s + 1) * seg);
        if (at < end) {
          uint8_t* r = ring[s % ring.size()]->data() + (at - s * seg);
          const uint64_t n = std::min(out.piece, end - at);
          if (drain) std::memcpy(rig.host->data() + at, r, n);
          else std::memcpy(r, rig.host->data() + at, n);
        }
        // The lane that moves the last piece stamps the end: with `beside`, lane 0 may still be
        // in a DMA then, which is not the copy's time.
        if (moved.fetch_add(1, std::memory_order_acq_rel) + 1 == pieces)
          last_piece.store(Us(t0, Steady::now()), std::memory_order_relaxed);
      }
    });
    t.push_back(beside ? last_piece.load() : Us(t0, Steady::now()));
    st = dma_status;
  }
  if (beside) rig.cuda->ReleaseTicket(ticket);
  RESMEM_RETURN_IF_ERROR(st);
  out.median_us = MedianUpper(t);
  out.gbps = Gbps(size, out.median_us);
  return out;
}

DispatchTimes TimeDispatch(LanePool& pool) {
  std::vector<double> hot, cold;
  for (int i = 0; i < 200; ++i) {
    const auto t0 = Steady::now();
    pool.Run(pool.size(), [](int) {});
    hot.push_back(Us(t0, Steady::now()));
  }
  const uint64_t sleeps0 = pool.sleeps();
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(3000));
    const auto t0 = Steady::now();
    pool.Run(pool.size(), [](int) {});
    cold.push_back(Us(t0, Steady::now()));
  }
  DispatchTimes d;
  d.hot_us = MedianUpper(hot);
  d.cold_us = MedianUpper(cold);
  d.cold_max_us = *std::max_element(cold.begin(), cold.end());
  d.sleeps = pool.sleeps() - sleeps0;
  return d;
}

// start: the caller's; submit: one cudaMemcpyAsync call from pinned memory; DMA rate and per-DMA
// cost: 4 MiB from pinned memory in 1 DMA and in 8 queued at once; the lanes' copy of 4 MiB in
// 512 KiB segments (the drain right after DMAs into the ring) alone, then of 16 MiB beside lane
// 0's 4 MiB DMAs in the same direction.
Result<DirectionCosts> MeasureDirectionCosts(const CeilingRig& rig, CopyDirection dir,
                                             double start_us) {
  const bool h2d = dir == CopyDirection::kHostToDevice;
  RESMEM_ASSIGN_OR_RETURN(auto ticket, rig.cuda->NewTicket());
  std::vector<double> one, eight, submit;
  Status st;
  for (int c = 0; c < std::max(rig.copies, 11) && st.ok(); ++c) {
    auto t0 = Steady::now();
    st = rig.cuda->CopyAsyncInto(ticket, dir, *rig.pinned, 0, *rig.dev, 0, kDmaBytes);
    submit.push_back(Us(t0, Steady::now()));
    if (st.ok()) st = rig.cuda->WaitKeep(ticket);
    one.push_back(Us(t0, Steady::now()));
    t0 = Steady::now();
    for (int i = 0; i < 8 && st.ok(); ++i) {
      const uint64_t at = i * kDmaBytes / 8, n = kDmaBytes / 8;
      st = i < 7 ? rig.cuda->EnqueueCopy(dir, *rig.pinned, at, *rig.dev, at, n)
                 : rig.cuda->CopyAsyncInto(ticket, dir, *rig.pinned, at, *rig.dev, at, n);
    }
    if (st.ok()) st = rig.cuda->WaitKeep(ticket);
    eight.push_back(Us(t0, Steady::now()));
  }
  rig.cuda->ReleaseTicket(ticket);
  RESMEM_RETURN_IF_ERROR(st);
  DirectionCosts d;
  d.one_dma_us = MedianUpper(one);
  d.eight_dmas_us = MedianUpper(eight);
  StagingCosts c;
  c.start_us = start_us;
  c.submit_us = MedianUpper(submit);
  c.per_dma_us = std::max(0.0, (d.eight_dmas_us - d.one_dma_us) / 7);
  c.dma_gbps = Gbps(kDmaBytes, std::max(1.0, d.one_dma_us - c.submit_us - c.per_dma_us));
  c.dma_beside_gbps = c.dma_gbps;
  RESMEM_ASSIGN_OR_RETURN(d.lanes_alone, TimeLaneCopy(rig, kDmaBytes, kSegment, !h2d, !h2d));
  (h2d ? c.fill_alone_gbps : c.drain_alone_gbps) = d.lanes_alone.gbps;
  (h2d ? c.fill_gbps : c.drain_gbps) = d.lanes_alone.gbps;
  d.alone = c;
  RESMEM_ASSIGN_OR_RETURN(d.lanes_beside, TimeLaneCopy(rig, 4 * kDmaBytes, kSegment, !h2d, false, &dir));
  d.beside_dmas = d.lanes_beside.beside_dma_us.size();
  if (d.beside_dmas > 0) {
    d.beside_dma_us = MedianUpper(d.lanes_beside.beside_dma_us);
    c.dma_beside_gbps = Gbps(kDmaBytes, std::max(1.0, d.beside_dma_us - c.submit_us - c.per_dma_us));
  }
  (h2d ? c.fill_gbps : c.drain_gbps) = d.lanes_beside.gbps;
  d.beside = c;
  return d;
}

StagingCosts CombineCosts(const DirectionCosts& up, const DirectionCosts& down) {
  StagingCosts c = up.beside;
  c.fill_alone_gbps = up.alone.fill_gbps;
  c.drain_alone_gbps = down.alone.drain_gbps;
  c.drain_gbps = down.beside.drain_gbps;
  c.dma_beside_gbps = std::min(up.beside.dma_beside_gbps, down.beside.dma_beside_gbps);
  return c;
}

std::vector<CeilingCell> CeilingCells(const StagingCosts& costs, const std::vector<uint64_t>& sizes,
                                      uint64_t staging_chunk) {
  std::vector<CeilingCell> cells;
  for (auto dir : {CopyDirection::kHostToDevice, CopyDirection::kDeviceToHost}) {
    const auto pd = dir == CopyDirection::kHostToDevice ? PlanDirection::kHostToDevice
                                                        : PlanDirection::kDeviceToHost;
    for (uint64_t size : sizes) {
      const SegmentPlan best = PlanSegments(pd, size, CeilingChunk(staging_chunk), costs.Ceiling());
      const SegmentPlan plan = PlanSegments(pd, size, staging_chunk, costs);
      cells.push_back({dir, size, best.percent_of_pinned(), plan.percent_of_pinned(),
                       plan.segments, best.pinned_us});
    }
  }
  return cells;
}

Result<SizeRates> MeasureSizeRates(const CeilingRig& rig, uint64_t size, const StagingCosts& costs) {
  if (rig.host->size() < size)
    return Status::InvalidArgument("the ceiling's host memory is smaller than the copy measured");
  SizeRates r;
  r.size = size;
  const CopyDirection up = CopyDirection::kHostToDevice, down = CopyDirection::kDeviceToHost;
  RESMEM_ASSIGN_OR_RETURN(r.fill_alone, TimeLaneCopy(rig, size, kSegment, false, false));
  RESMEM_ASSIGN_OR_RETURN(r.fill_beside, TimeLaneCopy(rig, size, kSegment, false, false, &up));
  RESMEM_ASSIGN_OR_RETURN(r.drain_alone, TimeLaneCopy(rig, size, kSegment, true, true));
  RESMEM_ASSIGN_OR_RETURN(r.drain_beside, TimeLaneCopy(rig, size, kSegment, true, false, &down));
  r.costs = costs;
  r.costs.fill_alone_gbps = r.fill_alone.gbps;
  r.costs.fill_gbps = r.fill_beside.gbps;
  r.costs.drain_alone_gbps = r.drain_alone.gbps;
  r.costs.drain_gbps = r.drain_beside.gbps;
  return r;
}

Result<MeasuredCeiling> MeasureCeiling(const CeilingRig& rig, const std::vector<uint64_t>& sizes,
                                       uint64_t staging_chunk) {
  MeasuredCeiling m;
  m.dispatch = TimeDispatch(*rig.pool);
  RESMEM_ASSIGN_OR_RETURN(m.up, MeasureDirectionCosts(rig, CopyDirection::kHostToDevice,
                                                      m.dispatch.hot_us));
  RESMEM_ASSIGN_OR_RETURN(m.down, MeasureDirectionCosts(rig, CopyDirection::kDeviceToHost,
                                                        m.dispatch.hot_us));
  m.costs = CombineCosts(m.up, m.down);
  for (uint64_t size : sizes) {
    RESMEM_ASSIGN_OR_RETURN(SizeRates r, MeasureSizeRates(rig, size, m.costs));
    for (auto& cell : CeilingCells(r.costs, {size}, staging_chunk)) m.cells.push_back(cell);
    m.sizes.push_back(std::move(r));
  }
  // CeilingCells' order: host to device for every size, then device to host.
  std::stable_sort(m.cells.begin(), m.cells.end(), [](const CeilingCell& a, const CeilingCell& b) {
    return a.direction == CopyDirection::kHostToDevice && b.direction != a.direction;
  });
  return m;
}

Result<std::unique_ptr<OwnedCeilingRig>> MakeCeilingRig(cuda::CudaGpu& gpu, HostMemory& host,
                                                        int lanes, int buffers,
                                                        uint64_t min_piece, int copies) {
  if (host.size() < 4 * kDmaBytes)
    return Status::InvalidArgument("the ceiling's host memory must hold 16 MiB");
  auto o = std::make_unique<OwnedCeilingRig>();
  LanePoolOptions lo;
  lo.lanes = lanes;
  o->pool = std::make_unique<LanePool>(lo);
  RESMEM_ASSIGN_OR_RETURN(o->dev, gpu.AllocDevice(4 * kDmaBytes));
  RESMEM_ASSIGN_OR_RETURN(o->pinned, gpu.AllocPinned(kDmaBytes, 0));
  for (int i = 0; i < std::max(2, buffers); ++i) {
    RESMEM_ASSIGN_OR_RETURN(auto b, gpu.AllocPinned(kSegment, 0));
    o->ring.push_back(std::move(b));
  }
  o->rig = CeilingRig{&gpu, &host, o->pinned.get(), o->dev.get(), &o->ring, o->pool.get(),
                      min_piece, copies, nullptr};
  return o;
}

Result<MeasuredCeiling> MeasureCeilingOnGpu(Gpu& gpu, HostMemory& host,
                                            const TransferOptions& options, int copies,
                                            const std::vector<uint64_t>& sizes) {
  auto* cuda = dynamic_cast<cuda::CudaGpu*>(&gpu);
  if (cuda == nullptr)
    return Status::Unsupported("the staged ceiling is measured on the CUDA runtime only");
  RESMEM_ASSIGN_OR_RETURN(auto owned, MakeCeilingRig(*cuda, host, options.staging_lanes,
                                                     options.staging_buffers,
                                                     options.staging_min_piece, copies));
  // As bench's timed copies meet their block: freshly stamped.
  uint64_t seq = 0x5eed0000;
  owned->rig.before_lane_copy = [&host, &seq](uint64_t bytes) {
    return StampPattern(host, 0, bytes, ++seq);
  };
  return MeasureCeiling(owned->rig, sizes, options.staging_chunk);
}

}  // namespace resmem::transfer
