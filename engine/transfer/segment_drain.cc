#include "engine/transfer/segment_drain.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <vector>

namespace resmem::transfer {

std::vector<uint64_t> DrainSegmentBounds(uint64_t length, uint64_t seg, uint64_t tail) {
  std::vector<uint64_t> b = {0};
  if (seg == 0 || length == 0) {
    b.push_back(length);
    return b;
  }
  // The ramp replaces the copy's last `seg` bytes: seg/2, seg/4, ..., 2 tail, tail, tail.
  std::vector<uint64_t> ramp;
  if (tail != 0 && tail < seg && length >= 2 * seg) {
    for (uint64_t n = seg / 2; n > tail && n >= 4096; n /= 2) ramp.push_back(n / 4096 * 4096);
    uint64_t used = 0;
    for (uint64_t n : ramp) used += n;
    const uint64_t rest = seg - used;  // the last pieces: two of about `tail` bytes
    const uint64_t first = (rest / 2 + 4095) / 4096 * 4096;
    ramp.push_back(first);
    if (rest > first) ramp.push_back(rest - first);
  }
  const uint64_t front = ramp.empty() ? length : length - seg;
  for (uint64_t at = 0; at < front;) {
    at += std::min(seg, front - at);
    b.push_back(at);
  }
  for (uint64_t n : ramp) b.push_back(b.back() + n);
  return b;
}

uint64_t PlaceInRing(const std::vector<uint64_t>& lengths, int buffers, uint64_t chunk,
                     uint64_t cursor, std::vector<RingPlace>* places) {
  // Positions run on round the ring (v); segment i overwrites the bytes of every segment of the
  // copy that started before v_i + len_i - ring.
  const uint64_t ring = chunk * static_cast<uint64_t>(buffers);
  places->assign(lengths.size(), RingPlace());
  std::vector<uint64_t> v(lengths.size());
  uint64_t at = cursor % ring;
  for (size_t i = 0; i < lengths.size(); ++i) {
    if (at % chunk + lengths[i] > chunk) at += chunk - at % chunk;
    v[i] = at;
    RingPlace& p = (*places)[i];
    p.buffer = static_cast<int>(at % ring / chunk);
    p.offset = at % chunk;
    at += lengths[i];
    p.wait = i == 0 ? 0 : (*places)[i - 1].wait;
    while (p.wait < i && v[p.wait] + ring < at) ++p.wait;
  }
  return at % ring;
}

namespace {

// One device-to-host copy through the segment ring: what lane 0 (the driver) and the draining
// lanes share, made on the calling thread's stack.
class DrainRun {
 public:
  DrainRun(Staging& s, const CopyRequest& c, uint64_t seg, const std::vector<uint64_t>* plan);
  Status Run();

 private:
  uint64_t SegOff(uint64_t i) const { return bounds_[i]; }
  uint64_t SegLen(uint64_t i) const { return bounds_[i + 1] - bounds_[i]; }
  // Where each segment lands in the ring (PlaceInRing): with staging_rotate_ring at the ring's
  // running cursor, which it moves past the copy (Staging::drain_cursor); else as segments of a
  // whole buffer each from the ring's start: segment i in buffer i % S at offset 0, after
  // segment i - S.
  std::vector<RingPlace> PlaceSegments();
  // Lane 0: queues the DMAs and publishes each finished one to the lanes (ready_).
  Status Drive();
  // Segment i's DMA may be queued: a ticket is free and the first place_[i].wait segments, whose
  // bytes it overwrites, are drained (`drained`: how many leading segments are, advanced here).
  bool CanIssue(uint64_t i, uint64_t finished, uint64_t* drained) const;
  cuda::CudaGpu::CopyTicket& TicketOf(uint64_t i) const {
    return s_.tickets[i % s_.tickets.size()];
  }
  Status Issue(uint64_t i);
  // Waits until segment i's DMA is done; false when the driver failed meanwhile.
  bool WaitReady(uint64_t i) const;
  // Every segment in turn; returns early when the driver failed.
  void Drain(int lane);
  // Pieces of segment i, claimed one at a time, until none is left; false when the driver
  // failed.
  bool DrainSegment(int lane, uint64_t i);

  Staging& s_;
  const CopyRequest& c_;
  const int nbuf_, lanes_;
  const std::vector<uint64_t> bounds_;  // segment i is [bounds_[i], bounds_[i + 1])
  const uint64_t nseg_;
  const std::vector<RingPlace> place_;
  std::unique_ptr<std::atomic<uint64_t>[]> claimed_, moved_;
  std::atomic<uint64_t> ready_{0};  // segments the lanes may work on: [0, ready)
  std::atomic<bool> abort_{false};
  Status driver_status_;
  uint8_t* const host_;
  // Trace (device to host): filled_us = the segment drained into the host mapping.
  const bool tracing_;
  const MicrosSince us_;
  std::unique_ptr<std::atomic<double>[]> drained_us_;
  LaneTimes lane_times_;
};

std::vector<uint64_t> BoundsOf(const std::vector<uint64_t>* plan, uint64_t length, uint64_t seg,
                               uint64_t tail) {
  if (!plan) return DrainSegmentBounds(length, seg, tail);
  std::vector<uint64_t> bounds = {0};
  for (uint64_t n : *plan) bounds.push_back(bounds.back() + n);
  return bounds;
}

DrainRun::DrainRun(Staging& s, const CopyRequest& c, uint64_t seg,
                   const std::vector<uint64_t>* plan)
    : s_(s),
      c_(c),
      nbuf_(static_cast<int>(s.buffers.size())),
      lanes_(s.lanes->size()),
      bounds_(BoundsOf(plan, c.length, seg, s.o.staging_d2h_tail)),
      nseg_(bounds_.size() - 1),
      place_(PlaceSegments()),
      claimed_(new std::atomic<uint64_t>[nseg_]),
      moved_(new std::atomic<uint64_t>[nseg_]),
      host_(s.mem.data() + c.host_offset),
      tracing_(s.o.staging_trace),
      drained_us_(tracing_ ? new std::atomic<double>[nseg_] : nullptr),
      lane_times_(tracing_, lanes_) {
  for (uint64_t i = 0; i < nseg_; ++i) claimed_[i].store(0), moved_[i].store(0);
  if (tracing_) {
    StartTrace(&s_.trace, c.length, seg, lanes_);
    s_.trace.segments = static_cast<int>(nseg_);
    SizeSegmentTimes(&s_.trace, nseg_);
    for (uint64_t i = 0; i < nseg_; ++i) drained_us_[i].store(0);
  }
}

std::vector<RingPlace> DrainRun::PlaceSegments() {
  const bool rotate = s_.o.staging_rotate_ring;
  std::vector<uint64_t> lengths(nseg_);
  for (uint64_t i = 0; i < nseg_; ++i) lengths[i] = rotate ? SegLen(i) : s_.o.staging_chunk;
  std::vector<RingPlace> p;
  const uint64_t end = PlaceInRing(lengths, nbuf_, s_.o.staging_chunk, rotate ? s_.drain_cursor : 0, &p);
  if (rotate) s_.drain_cursor = end;
  return p;
}

bool DrainRun::CanIssue(uint64_t i, uint64_t finished, uint64_t* drained) const {
  if (i - finished >= s_.tickets.size()) return false;
  while (*drained < place_[i].wait &&
         moved_[*drained].load(std::memory_order_acquire) >= SegLen(*drained))
    ++*drained;
  return *drained >= place_[i].wait;
}

Status DrainRun::Issue(uint64_t i) {
  if (tracing_) s_.trace.issue_begin_us[i] = us_();
  Status st = s_.cuda->CopyAsyncInto(TicketOf(i), c_.dir, *s_.buffers[place_[i].buffer],
                                     place_[i].offset, *c_.dev, c_.dev_offset + SegOff(i), SegLen(i),
                                     s_.DmaStream(i));
  if (tracing_) s_.trace.issued_us[i] = us_();
  return st;
}

Status DrainRun::Drive() {
  // Polls rather than blocks, so the lanes copy a segment out the moment its DMA finished.
  uint64_t issued = 0, finished = 0, drained = 0;
  // Every DMA whose bytes are free at once; each next one once the segments it overwrites are
  // drained (CanIssue).
  for (; issued < nseg_ && CanIssue(issued, finished, &drained); ++issued)
    RESMEM_RETURN_IF_ERROR(Issue(issued));
  while (finished < nseg_) {
    if (finished < issued) {
      RESMEM_ASSIGN_OR_RETURN(bool done, s_.cuda->Done(TicketOf(finished)));
      if (done) {
        if (tracing_) s_.trace.done_us[finished] = us_();
        ++finished;
        ready_.store(finished, std::memory_order_release);
        continue;
      }
    }
    if (issued < nseg_ && CanIssue(issued, finished, &drained)) {
      RESMEM_RETURN_IF_ERROR(Issue(issued));
      ++issued;
      continue;
    }
    CpuRelax();
  }
  // The lanes still copy the last segments out; Run returns once they have.
  return Status::Ok();
}

bool DrainRun::WaitReady(uint64_t i) const {
  while (ready_.load(std::memory_order_acquire) <= i) {
    if (abort_.load(std::memory_order_relaxed)) return false;
    CpuRelax();
  }
  return true;
}

void DrainRun::Drain(int lane) {
  for (uint64_t i = 0; i < nseg_; ++i) {
    if (!s_.o.staging_prefetch_dst && !WaitReady(i)) return;
    if (!DrainSegment(lane, i)) return;
  }
}

bool DrainRun::DrainSegment(int lane, uint64_t i) {
  const bool prefetch_dst = s_.o.staging_prefetch_dst;
  uint8_t* buf = s_.buffers[place_[i].buffer]->data() + place_[i].offset;
  const uint64_t n = SegLen(i);
  const uint64_t piece = SegmentPiece(n, lanes_, s_.o.staging_min_piece);
  const uint64_t pieces = (n + piece - 1) / piece;
  const bool demote_drain =
      s_.o.staging_demote_drain_upto != 0 && n <= s_.o.staging_demote_drain_upto;
  for (uint64_t k; (k = claimed_[i].fetch_add(1)) < pieces;) {
    const uint64_t at = k * piece;
    if (at >= n) break;
    const uint64_t len = std::min(piece, n - at);
    if (prefetch_dst) {
      PrefetchForWrite(host_ + SegOff(i) + at, len);
      if (!WaitReady(i)) return false;
    }
    if (tracing_ && lane_times_.first[lane] < 0) lane_times_.first[lane] = us_();
    CpuCopy(host_ + SegOff(i) + at, buf + at, len, s_.o.staging_stream_to_host);
    if (demote_drain) DemoteLines(buf + at, len);
    if (moved_[i].fetch_add(len, std::memory_order_acq_rel) + len == n && tracing_)
      drained_us_[i].store(us_(), std::memory_order_relaxed);
  }
  return true;
}

Status DrainRun::Run() {
  // Elastic: lane 0 returns only once every piece is drained (it drains the rest itself and
  // waits for pieces still being copied), so a lane the OS has not scheduled yet is not waited for.
  s_.RunLanes(lanes_, [&](int lane) {
    if (tracing_) lane_times_.enter[lane] = us_();
    if (lane != 0) return Drain(lane);
    driver_status_ = Drive();
    if (!driver_status_.ok()) {
      abort_.store(true);
      // The DMAs already queued still write the ring: the copy returns once they are done, so
      // the next copy's DMAs and lanes do not share the ring with them.
      s_.WaitForDmas();
      return;
    }
    Drain(0);
    for (uint64_t i = 0; i < nseg_; ++i)
      while (moved_[i].load(std::memory_order_acquire) < SegLen(i)) CpuRelax();
  });
  if (tracing_) {
    for (uint64_t i = 0; i < nseg_; ++i) s_.trace.filled_us[i] = drained_us_[i].load();
    FinishTrace(&s_.trace, us_(), lane_times_);
  }
  return driver_status_;
}

}  // namespace

Result<CopyOutcome> SegmentDrain::Copy(const CopyRequest& c) {
  const std::vector<uint64_t>* plan = s_.PlanFor(c);
  DrainRun run(s_, c, SegmentSize(s_.o, c.dir, c.length), plan);
  RESMEM_RETURN_IF_ERROR(run.Run());
  return CopyOutcome();
}

}  // namespace resmem::transfer
