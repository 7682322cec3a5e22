#include "engine/transfer/staged_path.h"

#include <algorithm>

#include "engine/transfer/frontier_copy.h"
#include "engine/transfer/lane_copy.h"
#include "engine/transfer/piece_copy.h"
#include "engine/transfer/segment_drain.h"
#include "engine/transfer/signalled_copy.h"

namespace resmem::transfer {
namespace {

// Segment mode's part of the detail: how segments are filled and drained, and which single
// copies a plan cuts.
std::string SegmentNotes(const TransferOptions& o, bool by_frontier) {
  std::string d;
  if (o.staging_nt_fill_below)
    d += ", non-temporal fill of segments < " + FormatSize(o.staging_nt_fill_below);
  if (o.staging_demote_fill_from)
    d += ", segments >= " + FormatSize(o.staging_demote_fill_from) +
         " filled through the cache and demoted to the LLC";
  if (o.staging_rotate_ring) d += ", D2H segments at the ring's running cursor";
  if (o.staging_demote_drain_upto)
    d += ", D2H segments <= " + FormatSize(o.staging_demote_drain_upto) + " demoted after draining";
  if (!o.staging_plan_upto && !o.staging_plan_d2h_from) return d;
  const std::string h2d = by_frontier           ? std::string("never (the fill frontier)")
                          : o.staging_plan_upto ? "up to " + FormatSize(o.staging_plan_upto)
                                                : std::string("never");
  const std::string d2h = o.staging_plan_d2h_from ? "from " + FormatSize(o.staging_plan_d2h_from)
                                                  : std::string("never");
  return d + ", single copies cut by plan: H2D " + h2d + ", D2H " + d2h + " (" +
         o.staging_costs.Describe() + ")";
}

// PathChoice::detail of the staged path: lanes and buffers, then options, then the notes of the
// optional strategies.
std::string StagedDetail(const Staging& s, int lanes, bool by_frontier, const std::string& notes) {
  const TransferOptions& o = s.o;
  const uint64_t h2d_cap = SegmentCap(o, CopyDirection::kHostToDevice);
  std::string d =
      s.segments ? std::to_string(lanes) + " lanes filling " + std::to_string(s.buffers.size()) +
                       " pinned segments of " + FormatSize(o.staging_chunk) +
                       ", one DMA per segment" +
                       (h2d_cap < o.staging_chunk
                            ? " (host to device up to " + FormatSize(h2d_cap) + ")"
                            : std::string())
                 : std::to_string(lanes) + " lanes x " + std::to_string(s.buffers_per_lane) +
                       " pinned buffers of " + FormatSize(o.staging_chunk) + ", units >= " +
                       FormatSize(std::min(o.staging_min_unit, o.staging_chunk));
  if (o.staging_pin_threads) d += ", pinned threads";
  if (o.staging_stream_to_host) d += ", streaming stores to host";
  if (s.segments) d += SegmentNotes(o, by_frontier);
  return d + notes;
}

}  // namespace

Result<StagedPath> OpenStagedPath(Gpu& gpu, HostMemory& mem, bool virtual_clock,
                                  const TransferOptions& o, const Refuse& refuse) {
  if (!mem.facts().readable)
    return refuse(0, Status::Unsupported("the mapping is not readable by the CPU"));
  // Lanes run concurrently only on real time; a virtual clock (the simulator) runs one lane.
  const int lanes = virtual_clock ? 1 : o.staging_lanes;
  StagedPath p;
  p.staging = std::make_unique<Staging>(gpu, mem, o);
  RESMEM_RETURN_IF_ERROR(p.staging->Allocate(lanes, virtual_clock, refuse));
  std::string notes;
  bool by_frontier = false;
  if (p.staging->segments) {
    std::unique_ptr<SegmentChain> chain = SegmentChain::Open(*p.staging, &notes);
    p.queue = &chain->pump();
    by_frontier = chain->by_frontier();
    p.strategy = std::move(chain);
  } else {
    p.strategy = std::make_unique<LaneCopy>(*p.staging);
  }
  p.staging->StartLanes(lanes);
  p.detail = StagedDetail(*p.staging, lanes, by_frontier, notes);
  return p;
}

std::unique_ptr<SegmentChain> SegmentChain::Open(Staging& s, std::string* notes) {
  std::unique_ptr<SegmentChain> chain(new SegmentChain(s));
  std::unique_ptr<SignalledCopy> signalled = SignalledCopy::Open(s, notes);
  std::unique_ptr<PieceCopy> pieces = PieceCopy::Open(s, notes);
  std::unique_ptr<FrontierCopy> frontier = FrontierCopy::Open(s, notes);
  chain->by_frontier_ = frontier != nullptr;
  auto pump = std::make_unique<SegmentPump>(s);
  chain->pump_ = pump.get();
  chain->Add(std::move(pieces));
  chain->Add(std::move(frontier));
  chain->Add(std::move(signalled));
  chain->Add(std::move(pump));
  chain->Add(std::make_unique<SegmentDrain>(s));
  return chain;
}

Result<CopyOutcome> SegmentChain::Copy(const CopyRequest& c) {
  if (s_.mem.data() == nullptr)
    return Status::InvalidArgument("staged segments need an addressable mapping: " +
                                   s_.mem.Describe());
  size_t taker = 0;
  RESMEM_ASSIGN_OR_RETURN(CopyOutcome out, CopyFrom(0, c, &taker));
  if (!out.declined) return out;
  // The kernel had not started: a program's kernel holds the SMs. The DMAs copy it all.
  ++s_.sm_given_to_dmas;
  const double launched_us = s_.trace.launched_us, returned_us = s_.trace.returned_us;
  CopyRequest by_dma = c;
  by_dma.cached_plans_only = true;
  Result<CopyOutcome> moved = CopyFrom(taker + 1, by_dma, &taker);
  if (s_.o.staging_trace) {
    s_.trace.sm_given_to_dmas = true;
    s_.trace.launched_us = launched_us;
    s_.trace.sm_abandoned_us = returned_us;
  }
  return moved;
}

Result<CopyOutcome> SegmentChain::CopyFrom(size_t from, const CopyRequest& c, size_t* taker) {
  for (size_t i = from; i < chain_.size(); ++i) {
    if (!chain_[i]->Takes(c)) continue;
    *taker = i;
    return chain_[i]->Copy(c);
  }
  return Status::Internal("staged segments: no strategy takes the copy");
}

}  // namespace resmem::transfer
