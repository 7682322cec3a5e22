// Segment plans for the staged path: how to cut one copy into segments so that it finishes
// soonest, from a few measured costs of the host, and what the best cut can reach at all.
//
// The model (the staged pipelines of transfer_engine.cc, host to device):
//   the lanes fill the copy in order at fill_gbps, starting start_us after the call; a
//   segment's DMA is submitted (submit_us) once its last byte is in, and the copy engine runs
//   the DMAs back to back, each taking bytes / dma_gbps + per_dma_us.
// Device to host: the DMAs are queued at once and run back to back in the same way; the lanes
// drain a segment (drain_gbps) once its DMA is done, in order; the copy ends with the last drain.
// A pinned copy (the baseline) is one submit and one DMA.
// Buffers are not modelled (the ring holds staging_buffers x staging_chunk bytes, more than the
// segments in flight of every plan below), nor the fill's slowing of the DMA: so a plan's
// prediction is what the best schedule could reach on a host with these costs, a ceiling that a
// measured copy stays under.
#ifndef RESMEM_ENGINE_TRANSFER_SEGMENT_PLAN_H_
#define RESMEM_ENGINE_TRANSFER_SEGMENT_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "backends/api/status.h"

namespace resmem::transfer {

// Costs of one host, in microseconds and GB/s (10^9 bytes per second).
// Defaults: the H100 host of docs/hil/2026-11-24-h100-staged4 (run4 timelines: lanes entered by
// 3.9-4.4 us, 512 KiB segments filled 6.1-6.7 us apart beside running DMAs, submits of 2.3-3.2 us;
// run5: 4 MiB from pinned memory in 1 / 2 / 4 / 8 DMAs took 85.6 / 88.8 / 94.8 / 103.2 us, so
// ~2.5 us per DMA and ~52 GB/s; run12: a drain right after a DMA into the ring ran at 81.7-90.8
// GB/s; inside a copy, into lines another core held, drains ran slower, 20-40 GB/s, run14).
struct StagingCosts {
  double start_us = 4.5;    // call -> the lanes copying the first segment
  double fill_gbps = 80;    // lanes filling the ring (host to device)
  double drain_gbps = 80;   // lanes draining the ring into the host mapping (device to host)
  double submit_us = 2.8;   // one DMA's submit on the driving lane
  double dma_gbps = 52;     // the copy engine's rate over PCIe
  double per_dma_us = 2.5;  // the copy engine's cost of each DMA beyond its bytes

  std::string Describe() const;
};

// "start_us,fill_gbps,drain_gbps,submit_us,dma_gbps,per_dma_us" (what staged_probe --ceiling
// prints) -> costs. Every field a number, rates > 0, times >= 0; otherwise InvalidArgument naming
// the field.
Result<StagingCosts> ParseStagingCosts(const std::string& text);

struct SegmentPlan {
  std::vector<uint64_t> segments;  // bytes, in copy order; sum = the copy's length
  double predicted_us = 0;         // the model's time for the copy cut this way
  double pinned_us = 0;            // the model's time for one pinned DMA of the same length
  // predicted as % of pinned (the ceiling of any cut, under the costs).
  double percent_of_pinned() const { return predicted_us > 0 ? 100.0 * pinned_us / predicted_us : 0; }
};

enum class PlanDirection { kHostToDevice, kDeviceToHost };

// The cut of `length` bytes into segments of whole `unit`s (the last may be shorter; unit a
// multiple of 4096), each at most `max_segment`, that the model finishes soonest (exact over all
// such cuts: dynamic programming over the segment ends). `unit` 0 picks max(16 KiB, length /
// 256) rounded up to 4 KiB. Lengths of 0 give an empty plan.
SegmentPlan PlanSegments(PlanDirection dir, uint64_t length, uint64_t max_segment,
                         const StagingCosts& costs, uint64_t unit = 0);

// The model's time for a given cut (the same model PlanSegments minimises).
double PredictSegmentsUs(PlanDirection dir, const std::vector<uint64_t>& segments,
                         const StagingCosts& costs);

}  // namespace resmem::transfer

#endif  // RESMEM_ENGINE_TRANSFER_SEGMENT_PLAN_H_
