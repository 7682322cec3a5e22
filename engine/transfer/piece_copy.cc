#include "engine/transfer/piece_copy.h"

#include <algorithm>
#include <atomic>

namespace resmem::transfer {
namespace {

// One copy by the SMs: what lane 0 (which launches and watches the kernel) and the lanes moving
// pieces share, made on the calling thread's stack. The words (kernels.h, PieceCopyArgs;
// CudaGpu::PieceRing): slots..2 slots-1 the kernel's, 2 slots done, 2 slots + 3 started,
// 2 slots + 4 intent, 2 slots + 5 verdict.
class PieceRun {
 public:
  PieceRun(Staging& s, cuda::CudaGpu::PieceRing& r, const CopyRequest& c, uint32_t& seq);
  // True once the copy is done; false when it was given to the DMAs (nothing moved to its
  // destination).
  Result<bool> Run();

 private:
  static constexpr uint32_t kStride = cuda::kWordStride;
  // Lane 0 looks at the kernel's stream once every this many polls of a word it waits for (a
  // stream query costs a few microseconds; the polls between take about as long).
  static constexpr uint64_t kPollsPerStreamQuery = 1024;
  // Claims pieces in order and moves each between the mapping and its slot, until none is left
  // or the copy is aborted. `lead`: lane 0, which also watches the kernel's stream while it
  // waits for a slot (KernelFailed), so a kernel that dies cannot keep the lanes waiting.
  void MovePieces(bool lead);
  // Lane 0 only: whether the kernel's stream failed; if it did, its error goes to status_ and
  // every lane is told to stop (abort_).
  bool KernelFailed();
  // Lane 0: launches the kernel, decides whether the copy goes by the SMs, moves pieces, and
  // watches the kernel until it is done.
  void Lead();
  // Whether the kernel started within staging_sm_start_us of its launch (always, with 0).
  bool KernelStarted(double launched);
  // Polls until every piece is moved and the kernel's done word reads the copy's last number,
  // or the kernel's stream failed (status_).
  void WatchDone();
  // Before the lanes start: every word the copy compares reads "nothing yet" for this copy's
  // numbers. The words compare cyclically, and one an earlier copy left 2^31 numbers behind
  // (the intent, written only when a kernel starts late; a slot only large copies use) read as
  // reached: the kernel left at once and the lanes waited for it forever.
  void ClearWords();

  Staging& s_;
  cuda::CudaGpu::PieceRing& r_;
  const CopyRequest& c_;
  const uint64_t piece_;
  const uint32_t slots_;
  const uint64_t n_;  // pieces
  const uint32_t base_;
  volatile uint32_t* const cpu_words_;
  volatile uint32_t* const gpu_words_;
  volatile uint32_t* const done_word_;
  volatile uint32_t* const started_word_;
  volatile uint32_t* const intent_word_;
  volatile uint32_t* const verdict_word_;
  const bool h2d_;
  uint8_t* const host_;
  uint8_t* const ring_;
  std::atomic<uint64_t> next_{0}, moved_{0};
  std::atomic<bool> abort_{false};
  Status status_;
  bool given_to_dmas_ = false;
  const int lanes_;
  const bool tracing_;
  const MicrosSince us_;
};

// The number of a copy's first piece - 1: `seq` moves past its `pieces` pieces.
uint32_t TakeNumbers(uint32_t& seq, uint64_t pieces) {
  const uint32_t base = seq;
  seq += static_cast<uint32_t>(pieces) + 1;
  return base;
}

PieceRun::PieceRun(Staging& s, cuda::CudaGpu::PieceRing& r, const CopyRequest& c, uint32_t& seq)
    : s_(s),
      r_(r),
      c_(c),
      piece_(r.piece),
      slots_(r.slots),
      n_((c.length + piece_ - 1) / piece_),
      base_(TakeNumbers(seq, n_)),
      cpu_words_(r.words.host),
      gpu_words_(r.words.host + slots_ * kStride),
      done_word_(r.words.host + 2 * slots_ * kStride),
      started_word_(r.words.host + (2 * slots_ + 3) * kStride),
      intent_word_(r.words.host + (2 * slots_ + 4) * kStride),
      verdict_word_(r.words.host + (2 * slots_ + 5) * kStride),
      h2d_(c.dir == CopyDirection::kHostToDevice),
      host_(s.mem.data() + c.host_offset),
      ring_(r.ring->data()),
      lanes_(s.lanes->size()),
      tracing_(s.o.staging_trace) {
  if (tracing_) {
    StartTrace(&s_.trace, c.length, piece_, lanes_);
    s_.trace.sm_pieces = n_;
  }
  ClearWords();
}

void PieceRun::ClearWords() {
  // Pieces are numbered base + 1 on: base is "no piece yet" for the slots' words and the done
  // word, and base - 1 is no copy's start, intent or verdict (a kernel given to the DMAs earlier
  // and still queued reads an intent past its own base and leaves, as before).
  for (uint32_t slot = 0; slot < slots_; ++slot)
    cpu_words_[slot * kStride] = gpu_words_[slot * kStride] = base_;
  *done_word_ = base_;
  *started_word_ = *intent_word_ = *verdict_word_ = base_ - 1;
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void PieceRun::MovePieces(bool lead) {
  for (uint64_t p; !abort_.load(std::memory_order_relaxed) &&
                   (p = next_.fetch_add(1, std::memory_order_relaxed)) < n_;) {
    const uint32_t slot = static_cast<uint32_t>(p % slots_);
    const uint32_t t = base_ + static_cast<uint32_t>(p) + 1;
    const uint32_t want = h2d_ ? t - slots_ : t;
    if (!h2d_ || p >= slots_) {
      for (uint64_t polls = 1; !Reached(gpu_words_ + slot * kStride, want); ++polls) {
        if (abort_.load(std::memory_order_relaxed)) return;
        if (lead && polls % kPollsPerStreamQuery == 0 && KernelFailed()) return;
        CpuRelax();
      }
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    const uint64_t at = p * piece_;
    const uint64_t len = std::min(piece_, c_.length - at);
    uint8_t* buf = ring_ + static_cast<uint64_t>(slot) * piece_;
    if (h2d_) CpuCopy(buf, host_ + at, len, false);
    else CpuCopy(host_ + at, buf, len, s_.o.staging_stream_to_host);
    DemoteLines(buf, len);
    std::atomic_thread_fence(std::memory_order_release);
    cpu_words_[slot * kStride] = t;
    moved_.fetch_add(1, std::memory_order_acq_rel);
  }
}

bool PieceRun::KernelFailed() {
  status_ = s_.cuda->PieceStreamError(r_);
  if (status_.ok()) return false;
  abort_.store(true);
  return true;
}

void PieceRun::Lead() {
  status_ = s_.cuda->LaunchPieceCopy(r_, c_.dir, *c_.dev, c_.dev_offset, c_.length, base_);
  if (status_.ok()) {
    const double launched = us_();
    if (tracing_) s_.trace.launched_us = launched;
    const bool go = KernelStarted(launched);
    if (status_.ok() && !go) {
      given_to_dmas_ = true;
      abort_.store(true);
      return;
    }
    if (status_.ok()) MovePieces(true);  // the launching lane moves pieces too, once it decided
    WatchDone();
  }
  if (!status_.ok()) {
    abort_.store(true);
    done_word_[kStride] = base_;  // a kernel still waiting for pieces gives up
    (void)s_.cuda->SyncPieceStream(r_);
  }
}

bool PieceRun::KernelStarted(double launched) {
  // Go if the kernel runs within staging_sm_start_us of its launch. Else write the intent
  // to give the copy to the DMAs, fence, and look once more: a kernel not started by then
  // reads the intent and leaves whenever it runs; one that started meanwhile gives its
  // verdict, which decides (kernels.h, PieceCopyArgs). The other lanes fill meanwhile; on
  // the DMAs' way the pieces they filled are lost.
  if (!(s_.o.staging_sm_start_us > 0)) return true;
  bool go = true;
  while (*started_word_ != base_ && us_() - launched < s_.o.staging_sm_start_us) CpuRelax();
  if (*started_word_ != base_) {
    *intent_word_ = base_;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (*started_word_ == base_) {
      for (uint64_t polls = 1; !Reached(verdict_word_, base_); ++polls) {
        if (polls % kPollsPerStreamQuery == 0 && KernelFailed()) break;
        CpuRelax();
      }
      go = status_.ok() && *verdict_word_ == base_;
    } else {
      go = false;
    }
  }
  if (tracing_ && go) s_.trace.sm_started_us = us_();
  return go;
}

void PieceRun::WatchDone() {
  bool all_moved = false;
  for (uint64_t polls = 1; status_.ok(); ++polls) {
    if (!all_moved && moved_.load(std::memory_order_acquire) == n_) {
      all_moved = true;
      if (tracing_) s_.trace.pieces_moved_us = us_();
    }
    if (all_moved && Reached(done_word_, base_ + static_cast<uint32_t>(n_))) {
      // The blocks the kernel ran with, which it wrote before the done word.
      if (tracing_) s_.trace.sm_blocks = static_cast<int>(done_word_[2 * kStride]);
      break;
    }
    if (polls % kPollsPerStreamQuery == 0 && KernelFailed()) break;
    CpuRelax();
  }
}

Result<bool> PieceRun::Run() {
  s_.RunLanes(lanes_, [&](int lane) {
    if (lane != 0) return MovePieces(false);
    Lead();
  });
  if (tracing_) s_.trace.returned_us = us_();
  RESMEM_RETURN_IF_ERROR(status_);
  return !given_to_dmas_;
}

}  // namespace

std::unique_ptr<PieceCopy> PieceCopy::Open(Staging& s, std::string* note) {
  const TransferOptions& o = s.o;
  if (!o.staging_sm_copy && o.staging_sm_copy_upto == 0) return nullptr;
  const uint64_t piece = o.staging_sm_piece;  // a multiple of 4 KiB (TransferEngine::Open)
  const uint64_t slots = std::max<uint64_t>(1, s.buffers.size() * o.staging_chunk / piece);
  auto ring = s.cuda->NewPieceRing(piece, static_cast<uint32_t>(slots), o.staging_sm_blocks);
  if (!ring.ok()) {
    *note += ", copy-engine DMAs (" + ring.status().message() + ")";
    return nullptr;
  }
  std::unique_ptr<PieceCopy> p(new PieceCopy(s, std::move(ring).value()));
  *note += (o.staging_sm_copy ? std::string(", single copies")
                              : ", single host-to-device copies up to " +
                                    FormatSize(o.staging_sm_copy_upto)) +
           " moved by the SMs in " + FormatSize(piece) + " pieces (" +
           std::to_string(p->ring_.blocks) + " blocks of 512 threads, " +
           std::to_string(p->ring_.sms) + " SMs)";
  return p;
}

PieceCopy::~PieceCopy() { s_.cuda->FreePieceRing(ring_); }

bool PieceCopy::Takes(const CopyRequest& c) const {
  return ring_.ring && c.length % 16 == 0 &&
         (s_.o.staging_sm_copy ||
          (c.dir == CopyDirection::kHostToDevice && c.length <= s_.o.staging_sm_copy_upto));
}

Result<CopyOutcome> PieceCopy::Copy(const CopyRequest& c) {
  PieceRun run(s_, ring_, c, seq_);
  RESMEM_ASSIGN_OR_RETURN(const bool moved, run.Run());
  CopyOutcome out;
  out.declined = !moved;
  return out;
}

}  // namespace resmem::transfer
