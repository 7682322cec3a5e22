// Staged segments, host to device (engine-internal strategy, copy_strategy.h): the segment ring
// behind single copies (Copy) and CopyQueue (many blocks).
//
// Segments are numbered across blocks: segment g fills pinned buffer g % S (S buffers) once the
// DMA of segment g - S finished, so the lanes fill block k+1 while block k's DMAs drain. Lane 0
// (the driver) pulls blocks, cuts them into segments of at most seg_limit bytes (a single copy's
// plan, or the ramp of staging_ramp_first, cuts the first ones shorter), publishes each
// segment's descriptor in a small ring, issues a segment's DMA the moment its last piece is in,
// and polls the oldest DMA's event. Lanes 1.. claim pieces of a segment with a compare-and-swap
// on a word that carries the segment's number, so a lane that arrives after the segment was
// finished and its ring slot reused claims nothing. Each segment is filled as HostToDeviceFill
// says for its own size.
//
// Contract: the driver returns only once every DMA finished (so every fill is done), and the
// lanes run elastic (Staging::RunLanes). `arrived` is called on the driving lane, in order, once
// a block's last DMA finished; an error from `next`, `arrived` or a DMA ends the run with that
// status, once every DMA it queued is done (Staging::WaitForDmas), none still reading the ring.
// A block outside its device buffer is refused before its first DMA. Needs an addressable
// mapping and the CUDA backend (segment mode).
#ifndef RESMEM_ENGINE_TRANSFER_SEGMENT_PUMP_H_
#define RESMEM_ENGINE_TRANSFER_SEGMENT_PUMP_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "engine/transfer/copy_strategy.h"
#include "engine/transfer/staging.h"

namespace resmem::transfer {

using NextBlock = std::function<Result<QueuePoll>(QueuedBlock*)>;
using BlockArrived = std::function<Status(const QueuedBlock&)>;

class SegmentPump : public OneWayStrategy {
 public:
  explicit SegmentPump(Staging& s) : OneWayStrategy(CopyDirection::kHostToDevice), s_(s) {}
  // One block: cut by its plan where it is no longer than staging_plan_upto, else in segments of
  // SegmentSize.
  Result<CopyOutcome> Copy(const CopyRequest& c) override;
  // TransferEngine::CopyQueue in segment mode: segments of staging_queue_segment (0: SegmentCap,
  // the host-to-device one), the first ones ramped by staging_ramp_first.
  Status Queue(const NextBlock& next, const BlockArrived& arrived);

 private:
  // The pipeline, for blocks from `next`. `plan`: the sizes of the first segments (a single
  // copy's plan), or null.
  Status Pump(uint64_t seg_limit, const NextBlock& next, const BlockArrived& arrived,
              const std::vector<uint64_t>* plan);

  Staging& s_;
};

}  // namespace resmem::transfer

#endif  // RESMEM_ENGINE_TRANSFER_SEGMENT_PUMP_H_
