// The staged path (engine-internal): its setup for TransferEngine::TryPath, and in segment mode
// the choice of strategy per copy (SegmentChain).
//
// Setup: the pinned buffers with their tickets (Staging::Allocate), then in segment mode the
// optional strategies (stream signals, the piece ring, the fill frontier: each may be refused
// by the driver, which the detail then says), then the lane threads. Lanes mode (a simulator, a
// test double, one lane, or staging_segments off) runs LaneCopy.
#ifndef RESMEM_ENGINE_TRANSFER_STAGED_PATH_H_
#define RESMEM_ENGINE_TRANSFER_STAGED_PATH_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "engine/transfer/copy_strategy.h"
#include "engine/transfer/segment_pump.h"
#include "engine/transfer/staging.h"

namespace resmem::transfer {

struct StagedPath {
  std::unique_ptr<Staging> staging;
  std::unique_ptr<CopyStrategy> strategy;  // LaneCopy, or SegmentChain in segment mode
  SegmentPump* queue = nullptr;            // segment mode: CopyQueue's pipeline (in strategy)
  std::string detail;                      // PathChoice::detail: "16 lanes filling 4 ...", ...
};

// Sets the staged path up for `mem`, or refuses it through `refuse` (a mapping the CPU cannot
// read, pinned buffers or tickets the backend would not give). Lanes run concurrently only on
// real time: a virtual clock (the simulator) gets one.
Result<StagedPath> OpenStagedPath(Gpu& gpu, HostMemory& mem, bool virtual_clock,
                                  const TransferOptions& o, const Refuse& refuse);

// Segment mode (CUDA, real time, >= 2 lanes): each copy goes to the first of its strategies that
// takes it, in this order: the SM copy (PieceCopy), the fill frontier (FrontierCopy, host to
// device), stream signals (SignalledCopy), event-polled segments (SegmentPump host to device,
// SegmentDrain device to host). A copy the SM copy declines (its kernel had not started) goes to
// the next strategy that takes it, planning nothing new (CopyRequest::cached_plans_only), and
// its trace keeps the SM copy's launch (StagedTrace::sm_given_to_dmas). Needs an addressable
// mapping.
class SegmentChain : public CopyStrategy {
 public:
  // The chain over `s`, the optional strategies set up in the order stream signals, piece ring,
  // fill frontier, each appending its note to *notes.
  static std::unique_ptr<SegmentChain> Open(Staging& s, std::string* notes);
  Result<CopyOutcome> Copy(const CopyRequest& c) override;
  SegmentPump& pump() { return *pump_; }
  bool by_frontier() const { return by_frontier_; }

 private:
  explicit SegmentChain(Staging& s) : s_(s) {}
  void Add(std::unique_ptr<CopyStrategy> strategy) {
    if (strategy) chain_.push_back(std::move(strategy));
  }
  // The first strategy from chain_[from] on that takes `c` moves it; *taker says which.
  Result<CopyOutcome> CopyFrom(size_t from, const CopyRequest& c, size_t* taker);

  Staging& s_;
  std::vector<std::unique_ptr<CopyStrategy>> chain_;
  SegmentPump* pump_ = nullptr;
  bool by_frontier_ = false;
};

}  // namespace resmem::transfer

#endif  // RESMEM_ENGINE_TRANSFER_STAGED_PATH_H_
