#include "engine/transfer/segment_pump.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <memory>
#include <string>
#include <thread>

namespace resmem::transfer {
namespace {

// Published segments not yet finished never exceed S (<= 16 buffers), so 64 slots suffice.
constexpr uint64_t kRing = 64;
// A slot's claim word: the segment's number above kPieceBits, the next piece below. The number
// keeps 64 - 24 = 40 bits: past 2^40 segments of one pump the tags would no longer match and the
// lanes would wait. At 50,000 segments a second that is about 250 days of one engine.
constexpr int kPieceBits = 24;
constexpr uint64_t kPieceMask = (1ull << kPieceBits) - 1;

struct Desc {  // written by the driver before the segment is published, read by the lanes
  std::atomic<const uint8_t*> host{nullptr};
  std::atomic<uint64_t> len{0}, piece{0}, pieces{0};
  std::atomic<SegmentFill> fill{SegmentFill::kCached};
  DeviceBuffer* dev = nullptr;  // driver only
  uint64_t dev_offset = 0;      // driver only
  bool last_of_block = false;   // driver only
};

// One run of the pump (SegmentPump::Pump): what the driver and the lanes share, made on the
// calling thread's stack. The driver's own state is a Driver on lane 0's stack.
class PumpRun {
 public:
  PumpRun(Staging& s, uint64_t seg_limit, const NextBlock& next, const BlockArrived& arrived,
          const std::vector<uint64_t>* plan);
  Status Run();

 private:
  class Driver;
  // Lane `lane` copies pieces of published segment g, claimed one at a time, until none is left
  // or it has copied `limit` of them. Any lane may, the driving lane too. Returns how many it
  // copied.
  uint64_t FillSegment(int lane, uint64_t g, uint64_t limit);
  // Lanes 1..: every published segment in turn, until the queue closed or the driver failed.
  void FillLane(int lane);

  Staging& s_;
  const uint64_t seg_limit_;
  const NextBlock& next_;
  const BlockArrived& arrived_;
  const std::vector<uint64_t>* const plan_;
  const int nbuf_, lanes_;
  const bool tracing_;
  const MicrosSince us_;
  std::unique_ptr<Desc[]> desc_;
  std::unique_ptr<std::atomic<uint64_t>[]> claimed_, moved_;
  std::atomic<uint64_t> ready_{0};    // segments the lanes may fill: [0, ready)
  std::atomic<uint64_t> end_{~0ull};  // number of segments, once the queue closed
  std::atomic<bool> abort_{false};
  LaneTimes lane_times_;
  Status driver_status_;
};

// Lane 0: pulls blocks, publishes their segments while a buffer could take them, issues each
// segment's DMA once its bytes are in, retires the oldest DMA (its buffer goes back to the
// lanes), until the queue closed and every DMA finished.
class PumpRun::Driver {
 public:
  explicit Driver(PumpRun& r) : r_(r), s_(r.s_) {}
  Status Drive();

 private:
  // Publishes segments while a buffer could take them; true when it published any.
  Result<bool> PublishWhileRoom();
  // Polls `next` for a block; false when there is none now (kWait) or the queue closed (kEnd).
  Result<bool> TakeBlock();
  // Cuts the current block's next segment and publishes it to the lanes.
  void PublishSegment();
  // Issues the next segment's DMA once all its bytes are in; true when it did.
  Result<bool> IssueFilled();
  // Retires the oldest DMA if it is done (calling `arrived` after a block's last); true when it
  // did.
  Result<bool> RetireOldest();
  void PublishReady() {
    r_.ready_.store(std::min(known_, finished_ + r_.nbuf_), std::memory_order_release);
  }

  PumpRun& r_;
  Staging& s_;
  uint64_t known_ = 0, issued_ = 0, finished_ = 0;
  bool closed_ = false, have_block_ = false;
  QueuedBlock cur_;
  uint64_t cur_done_ = 0;
  std::deque<QueuedBlock> in_flight_;  // blocks with segments published, oldest first
};

PumpRun::PumpRun(Staging& s, uint64_t seg_limit, const NextBlock& next,
                 const BlockArrived& arrived, const std::vector<uint64_t>* plan)
    : s_(s),
      seg_limit_(seg_limit),
      next_(next),
      arrived_(arrived),
      plan_(plan),
      nbuf_(static_cast<int>(s.buffers.size())),
      lanes_(s.lanes->size()),
      tracing_(s.o.staging_trace),
      desc_(new Desc[kRing]),
      claimed_(new std::atomic<uint64_t>[kRing]),
      moved_(new std::atomic<uint64_t>[kRing]),
      lane_times_(tracing_, lanes_) {
  for (uint64_t i = 0; i < kRing; ++i) claimed_[i].store(~0ull), moved_[i].store(0);
  if (tracing_) StartTrace(&s_.trace, 0, seg_limit, lanes_);
}

uint64_t PumpRun::FillSegment(int lane, uint64_t g, uint64_t limit) {
  const uint64_t slot = g % kRing;
  Desc& d = desc_[slot];
  const uint8_t* src = d.host.load(std::memory_order_acquire);
  const uint64_t n = d.len.load(std::memory_order_acquire);
  const uint64_t piece = d.piece.load(std::memory_order_acquire);
  const uint64_t pieces = d.pieces.load(std::memory_order_acquire);
  const SegmentFill fill = d.fill.load(std::memory_order_acquire);
  uint8_t* buf = s_.buffers[g % nbuf_]->data();
  uint64_t v = claimed_[slot].load(std::memory_order_acquire);
  uint64_t copied = 0;
  while (copied < limit) {
    // Another number in the slot: segment g is finished (and the slot reused); the
    // descriptor read above may then be stale, and is not used.
    if ((v >> kPieceBits) != g) break;
    const uint64_t k = v & kPieceMask;
    if (k >= pieces) break;
    if (!claimed_[slot].compare_exchange_weak(v, v + 1, std::memory_order_acq_rel,
                                              std::memory_order_acquire))
      continue;
    const uint64_t at = k * piece;
    const uint64_t len = std::min(piece, n - at);
    if (tracing_ && lane_times_.first[lane] < 0) lane_times_.first[lane] = us_();
    FillAs(fill, buf + at, src + at, len);
    moved_[slot].fetch_add(len, std::memory_order_acq_rel);
    ++copied;
    v = claimed_[slot].load(std::memory_order_acquire);
  }
  return copied;
}

void PumpRun::FillLane(int lane) {
  uint64_t polls = 0;
  for (uint64_t g = 0;; ++g) {
    while (ready_.load(std::memory_order_acquire) <= g) {
      if (g >= end_.load(std::memory_order_acquire) || abort_.load(std::memory_order_relaxed))
        return;
      CpuRelax();
      if (++polls % 4096 == 0) std::this_thread::yield();  // a queue waiting on its producer
    }
    FillSegment(lane, g, ~0ull);
  }
}

Status PumpRun::Run() {
  // Elastic: the driver returns only once every DMA finished, so every fill is done; a lane the
  // OS has not scheduled by then is not waited for.
  s_.RunLanes(lanes_, [&](int lane) {
    if (tracing_) lane_times_.enter[lane] = us_();
    if (lane == 0) {
      Driver driver(*this);
      driver_status_ = driver.Drive();
      if (!driver_status_.ok()) {
        abort_.store(true, std::memory_order_release);
        // The DMAs already queued still read the ring: the run ends once they are done, so the
        // next copy's lanes do not refill the ring under them.
        s_.WaitForDmas();
      }
      return;
    }
    FillLane(lane);
  });
  if (tracing_) {
    s_.trace.segments = static_cast<int>(s_.trace.filled_us.size());
    FinishTrace(&s_.trace, us_(), lane_times_);
  }
  return driver_status_;
}

Status PumpRun::Driver::Drive() {
  for (;;) {
    RESMEM_ASSIGN_OR_RETURN(const bool progress, PublishWhileRoom());
    RESMEM_ASSIGN_OR_RETURN(const bool issued, IssueFilled());
    if (issued) continue;
    RESMEM_ASSIGN_OR_RETURN(const bool retired, RetireOldest());
    if (retired) continue;
    if (closed_ && finished_ == known_) return Status::Ok();
    // Until the first DMA is issued the driving lane has nothing else to do: it fills pieces of
    // the first segment beside the lanes, which are still entering (TransferOptions::
    // staging_driver_fills), one piece at a time so it issues the DMA the moment the last
    // piece is in.
    if (!progress && issued_ == 0 && known_ > 0 && s_.o.staging_driver_fills &&
        r_.FillSegment(0, 0, 1) > 0) {
      if (r_.tracing_) ++s_.trace.driver_pieces;
      continue;
    }
    if (!progress) CpuRelax();
  }
}

Result<bool> PumpRun::Driver::PublishWhileRoom() {
  bool progress = false;
  while (!closed_ && known_ < finished_ + r_.nbuf_) {
    if (!have_block_) {
      RESMEM_ASSIGN_OR_RETURN(const bool took, TakeBlock());
      if (!took) break;
    }
    PublishSegment();
    progress = true;
  }
  return progress;
}

Result<bool> PumpRun::Driver::TakeBlock() {
  QueuedBlock b;
  RESMEM_ASSIGN_OR_RETURN(QueuePoll p, r_.next_(&b));
  if (p == QueuePoll::kWait) return false;
  if (p == QueuePoll::kEnd) {
    closed_ = true;
    r_.end_.store(known_, std::memory_order_release);
    return false;
  }
  if (b.dev == nullptr || b.length == 0)
    return Status::InvalidArgument("staged queue: a block needs a device buffer and a "
                                   "length > 0 (tag " + std::to_string(b.tag) + ")");
  RESMEM_RETURN_IF_ERROR(CheckSpan(s_.mem, b.host_offset, b.length, "staged queue"));
  RESMEM_RETURN_IF_ERROR(CheckDeviceSpan(*b.dev, b.dev_offset, b.length, "staged queue"));
  cur_ = b;
  cur_done_ = 0;
  have_block_ = true;
  in_flight_.push_back(b);
  if (r_.tracing_) s_.trace.bytes += b.length;
  return true;
}

void PumpRun::Driver::PublishSegment() {
  uint64_t n = std::min(r_.seg_limit_, cur_.length - cur_done_);
  if (r_.plan_ && known_ < r_.plan_->size()) n = std::min(n, (*r_.plan_)[known_]);
  else if (s_.o.staging_ramp_first && known_ < 32)
    n = std::min(n, std::max<uint64_t>(4096, s_.o.staging_ramp_first << known_));
  const uint64_t slot = known_ % kRing;
  const uint64_t piece = SegmentPiece(n, r_.lanes_, s_.o.staging_min_piece);
  Desc& d = r_.desc_[slot];
  // First close the slot to the segment that used it last (tag `known`, no piece open),
  // then rewrite its descriptor (release stores). A lane 64 segments behind that read a
  // field of the new descriptor while about to claim from the old segment cannot then win
  // its compare-and-swap on the old tag: the close came first. So a claim that succeeds
  // used its own segment's descriptor (FillSegment reads it with acquire loads).
  r_.claimed_[slot].store((known_ << kPieceBits) | kPieceMask, std::memory_order_release);
  d.host.store(s_.mem.data() + cur_.host_offset + cur_done_, std::memory_order_release);
  d.len.store(n, std::memory_order_release);
  d.piece.store(piece, std::memory_order_release);
  d.pieces.store((n + piece - 1) / piece, std::memory_order_release);
  // By this segment's own size (the short last segment of a large copy and ramp
  // segments too: a cached fill that is not demoted leaves lines the DMA must snoop out
  // of the lanes' caches); the tail is the block's last B segments.
  d.fill.store(HostToDeviceFill(s_.o, n, cur_.length - cur_done_ <= r_.nbuf_ * n),
               std::memory_order_release);
  d.dev = cur_.dev;
  d.dev_offset = cur_.dev_offset + cur_done_;
  cur_done_ += n;
  d.last_of_block = cur_done_ == cur_.length;
  if (d.last_of_block) have_block_ = false;
  r_.moved_[slot].store(0, std::memory_order_relaxed);
  r_.claimed_[slot].store(known_ << kPieceBits, std::memory_order_release);
  ++known_;
  PublishReady();
  if (r_.tracing_) {
    for (auto* v : {&s_.trace.filled_us, &s_.trace.issue_begin_us, &s_.trace.issued_us,
                    &s_.trace.done_us})
      v->push_back(0);
  }
}

Result<bool> PumpRun::Driver::IssueFilled() {
  if (issued_ >= known_) return false;
  const uint64_t slot = issued_ % kRing;
  const uint64_t n = r_.desc_[slot].len.load(std::memory_order_relaxed);
  if (r_.moved_[slot].load(std::memory_order_acquire) < n) return false;
  StagedTrace& t = s_.trace;
  if (r_.tracing_) t.filled_us[issued_] = t.issue_begin_us[issued_] = r_.us_();
  RESMEM_RETURN_IF_ERROR(s_.cuda->CopyAsyncInto(
      s_.tickets[issued_ % r_.nbuf_], CopyDirection::kHostToDevice, *s_.buffers[issued_ % r_.nbuf_],
      0, *r_.desc_[slot].dev, r_.desc_[slot].dev_offset, n, s_.DmaStream(issued_)));
  if (r_.tracing_) t.issued_us[issued_] = r_.us_();
  ++issued_;
  return true;
}

Result<bool> PumpRun::Driver::RetireOldest() {
  if (finished_ >= issued_) return false;
  RESMEM_ASSIGN_OR_RETURN(bool done, s_.cuda->Done(s_.tickets[finished_ % r_.nbuf_]));
  if (!done) return false;
  if (r_.tracing_) s_.trace.done_us[finished_] = r_.us_();
  const bool last = r_.desc_[finished_ % kRing].last_of_block;
  ++finished_;
  PublishReady();
  if (last) {
    QueuedBlock b = in_flight_.front();
    in_flight_.pop_front();
    RESMEM_RETURN_IF_ERROR(r_.arrived_(b));
  }
  return true;
}

}  // namespace

Result<CopyOutcome> SegmentPump::Copy(const CopyRequest& c) {
  if (c.length == 0) return CopyOutcome();  // nothing to move (and a plan of no segments)
  const uint64_t seg = SegmentSize(s_.o, c.dir, c.length);
  const std::vector<uint64_t>* plan = s_.PlanFor(c);
  bool handed = false;
  RESMEM_RETURN_IF_ERROR(Pump(
      plan && !plan->empty() ? *std::max_element(plan->begin(), plan->end()) : seg,
      [&](QueuedBlock* b) -> Result<QueuePoll> {
        if (handed) return QueuePoll::kEnd;
        handed = true;
        *b = QueuedBlock{c.host_offset, c.dev, c.dev_offset, c.length, 0};
        return QueuePoll::kBlock;
      },
      [](const QueuedBlock&) { return Status::Ok(); }, plan));
  return CopyOutcome();
}

Status SegmentPump::Queue(const NextBlock& next, const BlockArrived& arrived) {
  const uint64_t cap = SegmentCap(s_.o, CopyDirection::kHostToDevice);
  return Pump(s_.o.staging_queue_segment ? std::min(s_.o.staging_queue_segment, cap) : cap,
              next, arrived, nullptr);
}

Status SegmentPump::Pump(uint64_t seg_limit, const NextBlock& next, const BlockArrived& arrived,
                         const std::vector<uint64_t>* plan) {
  PumpRun run(s_, seg_limit, next, arrived, plan);
  return run.Run();
}

}  // namespace resmem::transfer
