#include "engine/transfer/frontier_copy.h"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <vector>

#include "backends/api/median.h"

namespace resmem::transfer {

uint64_t NextFrontierDma(uint64_t issued, uint64_t frontier, uint64_t length, int in_flight,
                         int depth, uint64_t min_dma, uint64_t chunk, bool hold) {
  if (in_flight >= depth || frontier <= issued || chunk == 0) return 0;
  const uint64_t waiting = frontier - issued;
  const uint64_t room = chunk - issued % chunk;
  if (waiting < min_dma && frontier < length) return 0;
  if (hold && in_flight > 0 && waiting < room && frontier < length) return 0;
  return std::min(waiting, room);
}

uint64_t FirstRefilledUnit(const std::function<uint64_t(uint64_t)>& word, uint64_t base,
                           uint64_t from, uint64_t to) {
  for (uint64_t u = from; u < to; ++u)
    if (word(u) != base + u) return u;
  return to;
}

double FrontierReachedUs(const StagedTrace& t, uint64_t bytes) {
  if (t.unit_filled_us.empty() || t.unit_bytes == 0) return -1;
  const uint64_t units = std::min<uint64_t>(t.unit_filled_us.size(),
                                            (bytes + t.unit_bytes - 1) / t.unit_bytes);
  double reached = 0;
  for (uint64_t u = 0; u < units; ++u) reached = std::max(reached, t.unit_filled_us[u]);
  return reached;
}

std::string DescribeUnitFills(const StagedTrace& t) {
  const size_t n = t.unit_filled_us.size();
  if (n == 0 || t.unit_begin_us.size() != n || t.unit_bytes == 0) return "";
  std::vector<double> took(n);
  size_t longest = 0;
  double first_began = t.unit_begin_us[0];
  for (size_t u = 0; u < n; ++u) {
    took[u] = t.unit_filled_us[u] - t.unit_begin_us[u];
    if (took[u] > took[longest]) longest = u;
    first_began = std::min(first_began, t.unit_begin_us[u]);
  }
  const uint64_t bytes = t.bytes;
  char line[320];
  std::snprintf(line, sizeof line,
                "%zu units of %s: the first began at %.1f us; the frontier reached 256 KiB at "
                "%.1f, 1 MiB at %.1f, a quarter at %.1f, half at %.1f, all at %.1f; a unit took "
                "%.1f us (median), %.1f at most (unit %zu)",
                n, FormatSize(t.unit_bytes).c_str(), first_began,
                FrontierReachedUs(t, 256 << 10), FrontierReachedUs(t, 1 << 20),
                FrontierReachedUs(t, bytes / 4), FrontierReachedUs(t, bytes / 2),
                FrontierReachedUs(t, bytes), MedianUpper(took), took[longest], longest);
  return line;
}

FrontierShape FrontierShapeOf(uint64_t length, uint64_t unit, uint64_t min_dma) {
  FrontierShape s;
  s.unit = unit;
  while (s.unit > 4096 && s.unit / 2 % 4096 == 0 && s.unit * 64 > length) s.unit /= 2;
  s.min_dma = std::min(min_dma, std::max(s.unit, length / 8 / 4096 * 4096));
  return s;
}

namespace {

// Two DMAs queued: one runs while the next is set up (dyn-run2: one queued lost 2-9 points,
// three 1.6-4.5; docs/hil/2026-11-24-h100-staged8).
constexpr int kDepth = 2;

// The number of a copy's first unit: `seq` moves past its `units` units.
uint64_t TakeNumbers(uint64_t& seq, uint64_t units) {
  const uint64_t base = seq;
  seq += units + 1;
  return base;
}

// One copy by the fill frontier: what lane 0 (the driver) and the filling lanes share, made on
// the calling thread's stack. The driver's own state is a Driver on lane 0's stack.
class FrontierRun {
 public:
  FrontierRun(Staging& s, const CopyRequest& c, FrontierCopy::UnitWord* words, uint64_t unit,
              uint64_t& seq, double link_bpus);
  Status Run();
  // The link's rate as this copy's DMAs measured it (bytes per microsecond).
  double link_bpus() const { return link_bpus_; }

 private:
  class Driver;
  // Whether unit u's ring space is free: the DMA that read it last is retired.
  bool SpaceFree(uint64_t u) const {
    const uint64_t end = std::min(length_, (u + 1) * unit_);
    return end <= ring_ || retired_.load(std::memory_order_acquire) >= end - ring_;
  }
  // Fills unit u into its ring space, then stamps the ring unit's word with its number.
  void Fill(int lane, uint64_t u);
  uint64_t UnitWord(uint64_t u) const {
    return words_[(u * unit_ % ring_) / unit_].v.load(std::memory_order_acquire);
  }
  // Unit u's ring space holds `word` (a later unit's number) `when` it must still hold u.
  Status RingBroken(uint64_t u, uint64_t word, const char* when) const;
  // Lanes 1..: claim units in order and fill each once its ring space is free.
  void FillLane(int lane);

  Staging& s_;
  FrontierCopy::UnitWord* const words_;
  const uint64_t length_, chunk_, nbuf_, ring_;
  const FrontierShape shape_;
  const uint64_t unit_, units_;
  // Non-temporal stores for copies under staging_nt_fill_below, cached and CLDEMOTEd from there
  // (dyn-run1: NT ahead at 1 MiB, 67.7% against 58.6, and 4 MiB, 76.6 against 74.4; 10-21
  // points behind from 16 MiB). By the copy's length: its DMAs are not known when it starts.
  const SegmentFill fill_as_;
  const uint64_t base_;
  const int depth_;
  const uint8_t* const src_;
  DeviceBuffer& dev_;
  const uint64_t dev_offset_;
  const int lanes_;
  std::atomic<uint64_t> next_{0};     // units claimed
  std::atomic<uint64_t> retired_{0};  // copy bytes whose DMA is done (a prefix)
  std::atomic<bool> abort_{false};
  const bool tracing_;
  const MicrosSince us_;
  LaneTimes lane_times_;
  Status status_;
  double link_bpus_;  // lane 0's, copied out of its Driver once it returned
};

// Lane 0: advances the frontier over the unit words, retires the DMAs in order, issues the
// next one, and fills units itself while no DMA runs.
class FrontierRun::Driver {
 public:
  explicit Driver(FrontierRun& r)
      : r_(r),
        s_(r.s_),
        lead_us_(r.s_.o.staging_frontier_lead_us),
        per_dma_us_(r.s_.o.staging_costs.per_dma_us),
        link_bpus_(r.link_bpus_) {}
  Status Drive();
  double link_bpus() const { return link_bpus_; }

 private:
  struct Queued {
    uint64_t end, dma;  // copy end, DMA number
    double issued_us;
  };
  // Moves the frontier over every unit whose word carries its number.
  Status AdvanceFrontier();
  // Retires the oldest DMA if it is done; true when it did.
  Result<bool> RetireOldest();
  // Issues the next DMA where NextFrontierDma gives one; true when it did.
  Result<bool> IssueNext();
  // With no DMA queued, fills the next unit if its ring space is free; true when it did.
  bool FillWhileIdle();
  void Project(double now);  // the queued DMAs' end, after a retirement

  FrontierRun& r_;
  Staging& s_;
  // The late issue (staging_frontier_lead_us): when the queued DMAs are projected to end, from
  // the link's rate (bytes per us) measured by the earlier DMAs of 1 MiB and more.
  const double lead_us_, per_dma_us_;
  double link_bpus_;
  uint64_t frontier_ = 0, issued_ = 0, dmas_ = 0;
  std::deque<Queued> flight_;  // oldest first
  double queued_end_us_ = 0, last_done_us_ = 0;
};

FrontierRun::FrontierRun(Staging& s, const CopyRequest& c, FrontierCopy::UnitWord* words,
                         uint64_t unit, uint64_t& seq, double link_bpus)
    : s_(s),
      words_(words),
      length_(c.length),
      chunk_(s.o.staging_chunk),
      nbuf_(s.buffers.size()),
      ring_(chunk_ * nbuf_),
      shape_(FrontierShapeOf(c.length, unit, s.o.staging_frontier_min_dma)),
      unit_(shape_.unit),
      units_((c.length + unit_ - 1) / unit_),
      fill_as_(c.length < s.o.staging_nt_fill_below ? SegmentFill::kNonTemporal
                                                     : SegmentFill::kCachedDemoted),
      base_(TakeNumbers(seq, units_)),
      depth_(static_cast<int>(std::min<uint64_t>(kDepth, nbuf_))),
      src_(s.mem.data() + c.host_offset),
      dev_(*c.dev),
      dev_offset_(c.dev_offset),
      lanes_(s.lanes->size()),
      tracing_(s.o.staging_trace),
      lane_times_(tracing_, lanes_),
      link_bpus_(link_bpus > 0 ? link_bpus : s.o.staging_costs.dma_gbps * 1e3) {
  if (tracing_) {
    StartTrace(&s_.trace, length_, unit_, lanes_);
    s_.trace.unit_bytes = unit_;
    s_.trace.unit_begin_us.assign(units_, 0);
    s_.trace.unit_filled_us.assign(units_, 0);
  }
}

void FrontierRun::Fill(int lane, uint64_t u) {
  const uint64_t at = u * unit_, n = std::min(unit_, length_ - at), r = at % ring_;
  uint8_t* dst = s_.buffers[r / chunk_]->data() + r % chunk_;
  StagedTrace& t = s_.trace;
  if (tracing_) {
    t.unit_begin_us[u] = us_();  // each unit is one lane's: no two write one element
    if (lane_times_.first[lane] < 0) lane_times_.first[lane] = t.unit_begin_us[u];
  }
  FillAs(fill_as_, dst, src_ + at, n);
  if (tracing_) t.unit_filled_us[u] = us_();
  words_[r / unit_].v.store(base_ + u, std::memory_order_release);
}

Status FrontierRun::RingBroken(uint64_t u, uint64_t word, const char* when) const {
  return Status::Internal("fill frontier: the ring space of unit " + std::to_string(u) +
                          " (copy offset " + std::to_string(u * unit_) + ") was refilled by unit " +
                          std::to_string(word - base_) + " " + when +
                          ": a lane broke the ring's order; the copy's data on the device is "
                          "not whole");
}

void FrontierRun::FillLane(int lane) {
  for (uint64_t u; !abort_.load(std::memory_order_relaxed) &&
                   (u = next_.fetch_add(1, std::memory_order_relaxed)) < units_;) {
    while (!SpaceFree(u)) {
      if (abort_.load(std::memory_order_relaxed)) return;
      CpuRelax();
    }
    Fill(lane, u);
  }
}

Status FrontierRun::Run() {
  s_.RunLanes(lanes_, [&](int lane) {
    if (tracing_) lane_times_.enter[lane] = us_();
    if (lane != 0) return FillLane(lane);
    Driver driver(*this);
    status_ = driver.Drive();
    link_bpus_ = driver.link_bpus();
    if (!status_.ok()) {
      abort_.store(true, std::memory_order_release);
      // The DMAs already queued still read the ring: let them finish before it is refilled.
      s_.WaitForDmas();
    }
  });
  if (tracing_) {
    s_.trace.segments = static_cast<int>(s_.trace.filled_us.size());
    FinishTrace(&s_.trace, us_(), lane_times_);
  }
  return status_;
}

Status FrontierRun::Driver::Drive() {
  while (r_.retired_.load(std::memory_order_relaxed) < r_.length_) {
    RESMEM_RETURN_IF_ERROR(AdvanceFrontier());
    RESMEM_ASSIGN_OR_RETURN(const bool retired, RetireOldest());
    if (retired) continue;
    RESMEM_ASSIGN_OR_RETURN(const bool issued, IssueNext());
    if (issued) continue;
    if (FillWhileIdle()) continue;
    CpuRelax();
  }
  return Status::Ok();
}

Status FrontierRun::Driver::AdvanceFrontier() {
  // Each unit's word is stamped with its number in this copy (base + u). A lane refills a
  // unit's ring space only once the DMA that read it is done, which the driver issues only
  // after seeing the word: a word already past base + u was refilled by a later lap before
  // its data went out. That breaks the ring's rule; the copy fails, naming the unit, rather
  // than waiting for a word that will never come.
  while (frontier_ < r_.length_) {
    const uint64_t want = r_.base_ + frontier_ / r_.unit_;
    const uint64_t word = r_.UnitWord(frontier_ / r_.unit_);
    if (word != want) {
      if (word > want)
        return r_.RingBroken(frontier_ / r_.unit_, word, "before its DMA was issued");
      break;
    }
    frontier_ = std::min(r_.length_, frontier_ + r_.unit_);
  }
  return Status::Ok();
}

Result<bool> FrontierRun::Driver::RetireOldest() {
  if (flight_.empty()) return false;
  RESMEM_ASSIGN_OR_RETURN(bool done, s_.cuda->Done(s_.tickets[flight_.front().dma % r_.nbuf_]));
  if (!done) return false;
  const double now = r_.us_();
  if (r_.tracing_) s_.trace.done_us[flight_.front().dma] = now;
  // Before the DMA's ring space is freed, none of its units may have been refilled.
  const uint64_t end = flight_.front().end;
  const uint64_t was = r_.retired_.load(std::memory_order_relaxed);
  const uint64_t from = was / r_.unit_;
  const uint64_t to = (end + r_.unit_ - 1) / r_.unit_;
  const uint64_t bad =
      FirstRefilledUnit([this](uint64_t u) { return r_.UnitWord(u); }, r_.base_, from, to);
  if (bad < to) return r_.RingBroken(bad, r_.UnitWord(bad), "while its DMA still read it");
  // The link's rate from this DMA's run: from its issue, or the DMA before it ending.
  const double ran = now - std::max(flight_.front().issued_us, last_done_us_) - per_dma_us_;
  if (end - was >= (1u << 20) && ran > 0)
    link_bpus_ = 0.5 * link_bpus_ + 0.5 * static_cast<double>(end - was) / ran;
  last_done_us_ = now;
  r_.retired_.store(end, std::memory_order_release);
  flight_.pop_front();
  Project(now);
  return true;
}

void FrontierRun::Driver::Project(double now) {
  queued_end_us_ = now;
  uint64_t from = r_.retired_.load(std::memory_order_relaxed);
  for (const Queued& q : flight_) {
    queued_end_us_ += static_cast<double>(q.end - from) / link_bpus_ + per_dma_us_;
    from = q.end;
  }
}

Result<bool> FrontierRun::Driver::IssueNext() {
  const bool hold = lead_us_ > 0 && !flight_.empty() && r_.us_() < queued_end_us_ - lead_us_;
  const uint64_t n =
      NextFrontierDma(issued_, frontier_, r_.length_, static_cast<int>(flight_.size()), r_.depth_,
                      r_.shape_.min_dma, r_.chunk_, hold);
  if (n == 0) return false;
  const uint64_t r = issued_ % r_.ring_;
  StagedTrace& t = s_.trace;
  if (r_.tracing_) {
    t.filled_us.push_back(r_.us_());
    t.issue_begin_us.push_back(t.filled_us.back());
  }
  RESMEM_RETURN_IF_ERROR(s_.cuda->CopyAsyncInto(s_.tickets[dmas_ % r_.nbuf_],
                                                CopyDirection::kHostToDevice,
                                                *s_.buffers[r / r_.chunk_], r % r_.chunk_, r_.dev_,
                                                r_.dev_offset_ + issued_, n, s_.DmaStream(dmas_)));
  if (r_.tracing_) {
    t.issued_us.push_back(r_.us_());
    t.done_us.push_back(0);
    t.dma_bytes.push_back(n);
  }
  const double now = r_.us_();
  queued_end_us_ = std::max(queued_end_us_, now) + static_cast<double>(n) / link_bpus_ +
                   per_dma_us_;
  flight_.push_back({issued_ + n, dmas_, now});
  issued_ += n;
  ++dmas_;
  return true;
}

bool FrontierRun::Driver::FillWhileIdle() {
  // Nothing to issue or retire, and no DMA running (the link idles: the first fill, or lanes
  // still waking up): fill the next unit (staging_driver_fills) if its ring space is free
  // already. Not while a DMA runs: with every lane filling, a unit takes a lane ~13 us on
  // the H100 host (16 lanes share ~40 GB/s), which the next DMA would wait for.
  uint64_t u = r_.next_.load(std::memory_order_relaxed);
  if (flight_.empty() && s_.o.staging_driver_fills && u < r_.units_ && r_.SpaceFree(u) &&
      r_.next_.compare_exchange_strong(u, u + 1, std::memory_order_relaxed)) {
    r_.Fill(0, u);
    if (r_.tracing_) ++s_.trace.driver_pieces;
    return true;
  }
  return false;
}

}  // namespace

std::unique_ptr<FrontierCopy> FrontierCopy::Open(Staging& s, std::string* note) {
  const TransferOptions& o = s.o;
  if (!o.staging_frontier) return nullptr;
  if (o.staging_chunk % o.staging_frontier_unit != 0) {
    *note += ", no DMAs by the fill frontier (the buffers of " + FormatSize(o.staging_chunk) +
             " are no multiple of its unit of " + FormatSize(o.staging_frontier_unit) + ")";
    return nullptr;
  }
  *note += ", host-to-device single copies in DMAs sized by the fill frontier (" +
           FormatSize(o.staging_frontier_unit) + " units, DMAs of >= " +
           FormatSize(o.staging_frontier_min_dma) + ", two queued)";
  return std::unique_ptr<FrontierCopy>(new FrontierCopy(s, o.staging_frontier_unit));
}

FrontierCopy::FrontierCopy(Staging& s, uint64_t unit)
    : OneWayStrategy(CopyDirection::kHostToDevice),
      s_(s),
      // One word per 4 KiB of the ring: a short copy's units are smaller (FrontierShapeOf).
      words_(new UnitWord[static_cast<uint64_t>(s.buffers.size()) * s.o.staging_chunk / 4096]),
      unit_(unit) {}

Result<CopyOutcome> FrontierCopy::Copy(const CopyRequest& c) {
  if (c.length == 0) return CopyOutcome();
  FrontierRun run(s_, c, words_.get(), unit_, seq_, link_bpus_);
  const Status st = run.Run();
  if (st.ok()) link_bpus_ = run.link_bpus();
  RESMEM_RETURN_IF_ERROR(st);
  return CopyOutcome();
}

}  // namespace resmem::transfer
