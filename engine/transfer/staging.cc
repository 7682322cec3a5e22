#include "engine/transfer/staging.h"

#include <algorithm>
#include <string>

namespace resmem::transfer {

SegmentFill HostToDeviceFill(const TransferOptions& o, uint64_t n, bool in_tail) {
  if (o.staging_demote_fill_from != 0 && n >= o.staging_demote_fill_from)
    return SegmentFill::kCachedDemoted;
  if (n < o.staging_nt_fill_below || (o.staging_nt_tail && in_tail)) return SegmentFill::kNonTemporal;
  return SegmentFill::kCached;
}

uint64_t SegmentPiece(uint64_t seg, int lanes, uint64_t min_piece) {
  const uint64_t fillers = 2 * static_cast<uint64_t>(lanes - 1);
  return std::max<uint64_t>((min_piece + 4095) / 4096 * 4096,
                            ((seg + fillers - 1) / fillers + 4095) / 4096 * 4096);
}

uint64_t SegmentCap(const TransferOptions& o, CopyDirection dir) {
  if (dir == CopyDirection::kHostToDevice && o.staging_chunk_h2d != 0)
    return std::min(o.staging_chunk, o.staging_chunk_h2d);  // a larger one: the buffer size
  return o.staging_chunk;
}

uint64_t SegmentSize(const TransferOptions& o, CopyDirection dir, uint64_t length) {
  const int min_segments = dir == CopyDirection::kDeviceToHost && o.staging_min_segments_d2h > 0
                               ? o.staging_min_segments_d2h
                               : o.staging_min_segments;
  const uint64_t parts = static_cast<uint64_t>(std::max(1, min_segments));
  const uint64_t share = ((length + parts - 1) / parts + 4095) / 4096 * 4096;
  return std::min(SegmentCap(o, dir), std::max(o.staging_min_unit, share));
}

void StartTrace(StagedTrace* t, uint64_t bytes, uint64_t segment_bytes, int lanes) {
  *t = StagedTrace();
  t->bytes = bytes;
  t->segment_bytes = segment_bytes;
  t->lanes = lanes;
}

void SizeSegmentTimes(StagedTrace* t, uint64_t segments) {
  for (auto* v : {&t->filled_us, &t->issue_begin_us, &t->issued_us, &t->done_us})
    v->assign(segments, 0);
}

void FinishTrace(StagedTrace* t, double returned_us, const LaneTimes& lanes) {
  const std::vector<double>& lane_enter = lanes.enter;
  const std::vector<double>& lane_first = lanes.first;
  t->returned_us = returned_us;
  t->first_piece_us = -1;
  t->lane_enter_min_us = t->lane_enter_max_us = lane_enter.empty() ? 0 : lane_enter[0];
  for (size_t l = 1; l < lane_enter.size(); ++l) {
    t->lane_enter_min_us = l == 1 ? lane_enter[l] : std::min(t->lane_enter_min_us, lane_enter[l]);
    t->lane_enter_max_us = std::max(t->lane_enter_max_us, lane_enter[l]);
    if (lane_first[l] >= 0 && (t->first_piece_us < 0 || lane_first[l] < t->first_piece_us))
      t->first_piece_us = lane_first[l];
  }
}

Staging::Staging(Gpu& gpu, HostMemory& mem, const TransferOptions& o)
    : gpu(gpu), cuda(dynamic_cast<cuda::CudaGpu*>(&gpu)), mem(mem), o(o) {}

Staging::~Staging() {
  lanes.reset();  // joins the lane threads before their buffers and tickets go
  if (cuda)
    for (auto& t : tickets) cuda->ReleaseTicket(t);
}

Status Staging::Allocate(int lane_count, bool virtual_clock, const Refuse& refuse) {
  // staging_buffers (2 or more: TransferEngine::Open) per lane where copies can be
  // asynchronous (CUDA): one fills while another is in DMA, so a lane's CPU never waits for the
  // link. Synchronous copies use one.
  async = cuda != nullptr && !virtual_clock;
  buffers_per_lane = async ? o.staging_buffers : 1;
  segments = async && o.staging_segments && lane_count >= 2;
  // Segments: one ring of buffers shared by all lanes; lanes: buffers per lane.
  const int buffer_count = segments ? buffers_per_lane : lane_count * buffers_per_lane;
  for (int i = 0; i < buffer_count; ++i) {
    auto buf = gpu.AllocPinned(o.staging_chunk, 0);
    if (!buf.ok()) return refuse(0, buf.status());
    buffers.push_back(std::move(buf).value());
  }
  if (async) {
    // A rotating ring (staging_rotate_ring) has more DMAs in flight than buffers: one ticket
    // per segment of the smallest size up to 32.
    const size_t count = segments && o.staging_rotate_ring ? std::max<size_t>(buffers.size(), 32)
                                                           : buffers.size();
    for (size_t i = 0; i < count; ++i) {
      auto t = cuda->NewTicket();
      if (!t.ok()) return refuse(0, t.status());
      tickets.push_back(*t);
    }
  }
  if (segments && o.staging_dma_streams > 1) {
    if (Status st = cuda->EnsureCopyStreams(o.staging_dma_streams); !st.ok())
      return refuse(0, st);
  }
  return Status::Ok();
}

void Staging::StartLanes(int lane_count) {
  LanePoolOptions lo;
  lo.lanes = lane_count;
  lo.spin_us = o.staging_spin_us;
  lo.pin_threads = o.staging_pin_threads;
  lanes = std::make_unique<LanePool>(lo);
}

void Staging::WaitForDmas() {
  for (const auto& t : tickets) (void)cuda->WaitKeep(t);
}

void Staging::RunLanes(int lane_count, const std::function<void(int)>& job) {
  if (o.staging_elastic) lanes->RunElastic(lane_count, job);
  else lanes->Run(lane_count, job);
}

const std::vector<uint64_t>& Staging::PlanOf(CopyDirection dir, uint64_t length) {
  const bool h2d = dir == CopyDirection::kHostToDevice;
  if (plans_.size() >= 64 && !plans_.count({h2d ? 0 : 1, length})) plans_.clear();
  auto [it, added] = plans_.try_emplace({h2d ? 0 : 1, length});
  if (added)
    it->second = PlanSegments(h2d ? PlanDirection::kHostToDevice : PlanDirection::kDeviceToHost,
                              length, SegmentCap(o, dir), o.staging_costs)
                     .segments;
  return it->second;
}

const std::vector<uint64_t>* Staging::PlanFor(const CopyRequest& c) {
  const bool h2d = c.dir == CopyDirection::kHostToDevice;
  const bool planned =
      (h2d ? c.length <= o.staging_plan_upto
           : o.staging_plan_d2h_from != 0 && c.length >= o.staging_plan_d2h_from) &&
      (!c.cached_plans_only || plans_.count({h2d ? 0 : 1, c.length}));
  return planned ? &PlanOf(c.dir, c.length) : nullptr;
}

}  // namespace resmem::transfer
