#include "engine/transfer/signalled_copy.h"

#include <algorithm>
#include <atomic>
#include <vector>

namespace resmem::transfer {
namespace {

// A copy's segments: equal ones of seg_limit, the exposed end (the first host to device, the
// last device to host) ramped up from `edge`, each one further in twice the one before.
struct Segments {
  std::vector<uint64_t> off, len;
};
Segments CutSegments(uint64_t length, uint64_t seg_limit, uint64_t edge, bool h2d) {
  std::vector<uint64_t> sizes;
  for (uint64_t left = length; left > 0;) {
    uint64_t n = std::min(seg_limit, left);
    if (edge != 0 && edge < seg_limit) {
      n = std::min(n, edge);
      edge *= 2;
    }
    sizes.push_back(n);
    left -= n;
  }
  if (!h2d) std::reverse(sizes.begin(), sizes.end());
  Segments s;
  uint64_t at = 0;
  for (uint64_t n : sizes) s.off.push_back(at), s.len.push_back(n), at += n;
  return s;
}

// One signalled copy: what lane 0 (which queues the stream's work and watches it) and the lanes
// moving the bytes share, made on the calling thread's stack.
class SignalRun {
 public:
  SignalRun(Staging& s, const cuda::CudaGpu::Signals& signals, const CopyRequest& c,
            uint64_t seg_limit, uint32_t& seq);
  Status Run();

 private:
  uint32_t Token(uint64_t i) const { return static_cast<uint32_t>(base_ + i); }
  // Lane 0: every segment's wait, DMA and signal, then the stream's words until the last.
  Status Drive();
  Status QueueSegment(uint64_t i);
  Status WatchStream();
  // Lanes 1..: every segment in turn, once its buffer is free (host to device) or full.
  void MoveSegments(int lane);
  // Waits for segment g's buffer; false when lane 0 stopped the lanes.
  bool WaitBuffer(uint64_t g) const;
  // Pieces of segment g, claimed one at a time; the lane that moves the last sets the lane word.
  void MoveSegment(int lane, uint64_t g);

  Staging& s_;
  const cuda::CudaGpu::Signals& signals_;
  const CopyRequest& c_;
  const bool h2d_;
  const int nbuf_, lanes_;
  const bool tracing_;
  const Segments segs_;
  const uint64_t nseg_;
  const uint32_t base_;  // t_i = base + i
  volatile uint32_t* const lane_word_;
  volatile uint32_t* const stream_word_;
  const MicrosSince us_;
  std::unique_ptr<std::atomic<uint64_t>[]> claimed_, moved_;
  std::atomic<bool> abort_{false};
  LaneTimes lane_times_;
  uint8_t* const host_;
  Status driver_status_;
};

// The first number of a copy of `segments` segments: `seq` moves past them.
uint32_t TakeNumbers(uint32_t& seq, uint64_t segments) {
  const uint32_t base = seq + 1;
  seq += static_cast<uint32_t>(segments);
  return base;
}

SignalRun::SignalRun(Staging& s, const cuda::CudaGpu::Signals& signals, const CopyRequest& c,
                     uint64_t seg_limit, uint32_t& seq)
    : s_(s),
      signals_(signals),
      c_(c),
      h2d_(c.dir == CopyDirection::kHostToDevice),
      nbuf_(static_cast<int>(s.buffers.size())),
      lanes_(s.lanes->size()),
      tracing_(s.o.staging_trace),
      segs_(CutSegments(c.length, seg_limit, s.o.staging_edge_segment, h2d_)),
      nseg_(segs_.len.size()),
      base_(TakeNumbers(seq, nseg_)),
      lane_word_(signals.host),
      stream_word_(signals.host + nbuf_),
      claimed_(new std::atomic<uint64_t>[nseg_]),
      moved_(new std::atomic<uint64_t>[nseg_]),
      lane_times_(tracing_, lanes_),
      host_(s.mem.data() + c.host_offset) {
  if (tracing_) {
    StartTrace(&s_.trace, c.length, seg_limit, lanes_);
    s_.trace.segments = static_cast<int>(nseg_);
    SizeSegmentTimes(&s_.trace, nseg_);
  }
  for (uint64_t i = 0; i < nseg_; ++i) claimed_[i].store(0), moved_[i].store(0);
  // Every buffer's words read "nothing yet" (base - 1): one that no copy had set for 2^31
  // numbers read as reached, and a lane refilled a buffer its DMA still read. The stream is idle
  // here (every copy ends with it synchronized).
  for (int b = 0; b < nbuf_; ++b) lane_word_[b] = stream_word_[b] = base_ - 1;
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

Status SignalRun::Drive() {
  // A thread that cannot bind the context queues nothing, and the lanes are told to stop as on
  // any other error: they must not wait for segments that never come.
  Status st = s_.cuda->BindThread();
  for (uint64_t i = 0; st.ok() && i < nseg_; ++i) st = QueueSegment(i);
  if (st.ok()) st = WatchStream();
  if (!st.ok()) {
    // Stop the lanes, then release every wait queued on the stream so it drains.
    abort_.store(true, std::memory_order_release);
    for (int b = 0; b < nbuf_; ++b) RaiseToken(&lane_word_[b], Token(nseg_ - 1));
    Status sync = s_.cuda->SyncStream();
    (void)sync;  // the first error is the one reported
    return st;
  }
  return s_.cuda->SyncStream();
}

Status SignalRun::QueueSegment(uint64_t i) {
  cuda::CudaGpu* cuda = s_.cuda;
  const int b = static_cast<int>(i % nbuf_);
  // The lane word this segment's DMA needs: filled (host to device) or, for a reused buffer,
  // drained (device to host).
  const bool needs = h2d_ || i >= static_cast<uint64_t>(nbuf_);
  const uint32_t need = h2d_ ? Token(i) : Token(i - nbuf_);
  if (needs && !s_.o.staging_gpu_waits) {
    // Host-driven: queue the DMA once the lanes are done with the buffer. A stream wait that
    // the GPU finds unsatisfied costs ~60 us before it looks again (H100, r580:
    // docs/hil/2026-11-23-h100-staged3), more than the ~3 us of queueing it now.
    for (uint64_t polls = 0; !Reached(&lane_word_[b], need);) {
      if (++polls % 256 == 0) RESMEM_RETURN_IF_ERROR(cuda->StreamError());
      CpuRelax();
    }
  }
  if (tracing_) s_.trace.issue_begin_us[i] = us_();
  if (needs && s_.o.staging_gpu_waits)
    RESMEM_RETURN_IF_ERROR(cuda->WaitSignalAsync(signals_, b, need));
  RESMEM_RETURN_IF_ERROR(cuda->EnqueueCopy(c_.dir, *s_.buffers[b], 0, *c_.dev,
                                           c_.dev_offset + segs_.off[i], segs_.len[i]));
  RESMEM_RETURN_IF_ERROR(cuda->SetSignalAsync(signals_, nbuf_ + b, Token(i)));
  if (tracing_) s_.trace.issued_us[i] = us_();
  return Status::Ok();
}

// Watches the stream's words; queries the stream now and then for an error that would leave a
// word unwritten.
Status SignalRun::WatchStream() {
  for (uint64_t polls = 0, seen = 0; seen < nseg_;) {
    if (Reached(&stream_word_[seen % nbuf_], Token(seen))) {
      if (tracing_) s_.trace.done_us[seen] = us_();
      ++seen;
      continue;
    }
    if (++polls % 256 == 0) RESMEM_RETURN_IF_ERROR(s_.cuda->StreamError());
    CpuRelax();
  }
  return Status::Ok();
}

void SignalRun::MoveSegments(int lane) {
  for (uint64_t g = 0; g < nseg_; ++g) {
    if (!WaitBuffer(g)) return;
    MoveSegment(lane, g);
  }
}

bool SignalRun::WaitBuffer(uint64_t g) const {
  // Wait for the buffer: free (host to device) or full (device to host).
  if (h2d_ ? g >= static_cast<uint64_t>(nbuf_) : true) {
    const uint32_t want = h2d_ ? Token(g - nbuf_) : Token(g);
    while (!Reached(&stream_word_[g % nbuf_], want)) {
      if (abort_.load(std::memory_order_relaxed)) return false;
      CpuRelax();
    }
  }
  return true;
}

void SignalRun::MoveSegment(int lane, uint64_t g) {
  const int b = static_cast<int>(g % nbuf_);
  const uint64_t n = segs_.len[g];
  const uint64_t piece = SegmentPiece(n, lanes_, s_.o.staging_min_piece);
  const uint64_t pieces = (n + piece - 1) / piece;
  // Host to device: HostToDeviceFill, the tail being the copy's last B segments.
  const SegmentFill fill = HostToDeviceFill(s_.o, n, g + nbuf_ >= nseg_);
  uint8_t* buf = s_.buffers[b]->data();
  uint8_t* at_host = host_ + segs_.off[g];
  for (uint64_t k; (k = claimed_[g].fetch_add(1, std::memory_order_relaxed)) < pieces;) {
    const uint64_t at = k * piece;
    const uint64_t len = std::min(piece, n - at);
    if (tracing_ && lane_times_.first[lane] < 0) lane_times_.first[lane] = us_();
    if (h2d_) {
      FillAs(fill, buf + at, at_host + at, len);
    } else {
      CpuCopy(at_host + at, buf + at, len, s_.o.staging_stream_to_host);
      if (s_.o.staging_demote_drain_upto != 0 && n <= s_.o.staging_demote_drain_upto)
        DemoteLines(buf + at, len);
    }
    if (moved_[g].fetch_add(len, std::memory_order_acq_rel) + len == n) {
      // The last piece in: publish the segment to the stream (x86 keeps this store after
      // the other lanes' bytes, which the acq_rel add ordered before it). Raised, never
      // lowered: lane 0 may have released every wait with the copy's last token on an error.
      std::atomic_thread_fence(std::memory_order_seq_cst);
      RaiseToken(&lane_word_[b], Token(g));
      if (tracing_) s_.trace.filled_us[g] = us_();
    }
  }
}

Status SignalRun::Run() {
  s_.lanes->Run(lanes_, [&](int lane) {
    if (tracing_) lane_times_.enter[lane] = us_();
    if (lane == 0) {
      driver_status_ = Drive();
      return;
    }
    MoveSegments(lane);
  });
  if (tracing_) FinishTrace(&s_.trace, us_(), lane_times_);
  return driver_status_;
}

}  // namespace

std::unique_ptr<SignalledCopy> SignalledCopy::Open(Staging& s, std::string* note) {
  if (!s.o.staging_signals) return nullptr;
  auto sig = s.cuda->NewSignals(2 * static_cast<int>(s.buffers.size()));
  if (!sig.ok()) {
    *note += ", event polling (" + sig.status().message() + ")";
    return nullptr;
  }
  *note += ", DMAs queued behind stream signals";
  return std::unique_ptr<SignalledCopy>(new SignalledCopy(s, *sig));
}

SignalledCopy::~SignalledCopy() { s_.cuda->FreeSignals(signals_); }

Result<CopyOutcome> SignalledCopy::Copy(const CopyRequest& c) {
  SignalRun run(s_, signals_, c, SegmentSize(s_.o, c.dir, c.length), seq_);
  RESMEM_RETURN_IF_ERROR(run.Run());
  return CopyOutcome();
}

}  // namespace resmem::transfer
