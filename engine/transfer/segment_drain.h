// Staged segments, device to host (engine-internal strategy, copy_strategy.h). The copy is cut
// by its plan (from staging_plan_d2h_from bytes) or into segments of SegmentSize ending in the
// falling tail of staging_d2h_tail (DrainSegmentBounds). Each segment goes where the last one
// ended in the ring of S pinned buffers (PlaceInRing; with staging_rotate_ring off, segment i
// into buffer i % S). Lane 0 queues every DMA whose ring bytes are free at once (one ticket,
// a CUDA event, per DMA in flight), polls the oldest DMA's event and publishes each finished
// segment to the lanes, and queues each next DMA once the segments whose bytes it overwrites
// are drained. Lanes 1.. (and lane 0 once its DMAs are done) claim pieces of each segment
// from a per-segment counter and copy them into the mapping; with staging_prefetch_dst a lane
// claims its piece before the segment's DMA is done and prefetches the piece's destination for
// writing while it waits. Segments of at most staging_demote_drain_upto bytes have the ring's
// lines CLDEMOTEd after the drain.
//
// Contract: lane 0 returns only once every piece is drained (it drains the rest itself and
// waits for pieces still being copied), so the lanes run elastic (Staging::RunLanes). A failed
// DMA stops the lanes; the copy returns its status once every DMA it queued is done
// (Staging::WaitForDmas), none still writing the ring. Needs the CUDA backend (segment mode).
#ifndef RESMEM_ENGINE_TRANSFER_SEGMENT_DRAIN_H_
#define RESMEM_ENGINE_TRANSFER_SEGMENT_DRAIN_H_

#include "engine/transfer/copy_strategy.h"
#include "engine/transfer/staging.h"

namespace resmem::transfer {

class SegmentDrain : public OneWayStrategy {
 public:
  explicit SegmentDrain(Staging& s) : OneWayStrategy(CopyDirection::kDeviceToHost), s_(s) {}
  Result<CopyOutcome> Copy(const CopyRequest& c) override;

 private:
  Staging& s_;
};

}  // namespace resmem::transfer

#endif  // RESMEM_ENGINE_TRANSFER_SEGMENT_DRAIN_H_
