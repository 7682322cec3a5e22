// The one interface behind TransferEngine::Copy: a copy strategy moves one copy's bytes between
// the host mapping and device memory. Engine-internal (a source of //engine/transfer:transfer,
// not one of its headers); the engine's public API is transfer_engine.h.
//
// The strategies, one file each (each header states its pipeline's contract):
//   direct_copy      registered-direct, registered-chunked, zero-copy-mapped, pageable-access,
//                    pageable: the driver's DMA (or a kernel) reaches the mapping itself
//   lane_copy        staged, lanes mode: every lane moves whole units through its own buffers
//   segment_pump     staged segments, host to device (single copies and CopyQueue)
//   segment_drain    staged segments, device to host
//   frontier_copy    staged, host to device, DMAs sized by the fill frontier
//   piece_copy       staged, moved by the SMs in pieces (may decline a copy)
//   signalled_copy   staged segments, DMAs queued behind stream signals
// TransferEngine::Open keeps one strategy for its path: DirectCopy, LaneCopy, or in the staged
// path's segment mode a SegmentChain (staged_path.h) that hands each copy to the first of the
// staged strategies above that takes it.
//
// Cost: a few virtual calls per copy (Copy, and SegmentChain's Takes of at most five
// strategies), none per segment, unit or piece: every strategy's loops over segments, units and
// pieces are its own non-virtual code, and allocate what they allocated before the split (per
// copy, never per segment).
#ifndef RESMEM_ENGINE_TRANSFER_COPY_STRATEGY_H_
#define RESMEM_ENGINE_TRANSFER_COPY_STRATEGY_H_

#include <cstdint>
#include <functional>

#include "backends/api/gpu.h"

namespace resmem::transfer {

// One copy: [host_offset, +length) of the host mapping to or from [dev_offset, +length) of dev.
struct CopyRequest {
  CopyDirection dir = CopyDirection::kHostToDevice;
  uint64_t host_offset = 0;
  DeviceBuffer* dev = nullptr;
  uint64_t dev_offset = 0;
  uint64_t length = 0;
  // Another strategy declined this copy first (an SM copy given to the DMAs): a length whose
  // plan is not cached yet goes in equal segments (planning a 4 MiB copy takes milliseconds,
  // docs/hil/2026-11-25-h100-staged12 run 3).
  bool cached_plans_only = false;
};

struct CopyOutcome {
  // Nothing of the copy reached its destination and the strategy gave it up (the SM copy whose
  // kernel had not started in time): the caller moves it another way.
  bool declined = false;
  // The backend's modelled copy time (what a virtual clock charges; 0 where only real time
  // counts).
  double modelled_seconds = 0;
};

// Records why a path was refused (TransferEngine::TryPath: the path, the failed call's message
// and the reason read off the mapping's facts for `flags`) and returns `st`.
using Refuse = std::function<Status(uint32_t flags, const Status& st)>;

class CopyStrategy {
 public:
  virtual ~CopyStrategy() = default;
  // Whether this strategy moves `c`, by its direction and length (SegmentChain asks its
  // strategies in order). A path's own strategy takes every copy.
  virtual bool Takes(const CopyRequest& c) const { return true; }
  // Moves `c`, whose span the engine checked. Called by one thread at a time (TransferEngine::
  // Copy's contract). An error: the copy failed and the destination's bytes are undefined.
  virtual Result<CopyOutcome> Copy(const CopyRequest& c) = 0;
};

// A strategy that moves copies of one direction only (the segment pump and the fill frontier
// host to device, the segment drain device to host).
class OneWayStrategy : public CopyStrategy {
 public:
  explicit OneWayStrategy(CopyDirection dir) : dir_(dir) {}
  bool Takes(const CopyRequest& c) const override { return c.dir == dir_; }

 private:
  const CopyDirection dir_;
};

}  // namespace resmem::transfer

#endif  // RESMEM_ENGINE_TRANSFER_COPY_STRATEGY_H_
