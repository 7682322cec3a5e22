// Segment plans for the staged path: how to cut one copy into segments so that it finishes
// soonest, from a few measured costs of the host, and what the best cut can reach at all.
//
// The model (the staged pipelines of transfer_engine.cc), host to device:
//   the lanes fill the copy in order, starting start_us after the call: the first segment at
//   fill_alone_gbps (no DMA runs yet), the rest at fill_gbps (beside the DMAs, which share the
//   host's memory with them); a segment's DMA is submitted (submit_us) once its last byte is
//   in, and the copy engine runs the DMAs back to back, each taking bytes / dma_gbps +
//   per_dma_us.
// Device to host: the DMAs are queued at once and run back to back in the same way; the lanes
// drain a segment once its DMA is done, in order, at drain_gbps beside later DMAs and at
// drain_alone_gbps for the last one; the copy ends with the last drain.
// A pinned copy (the baseline) is one submit and one DMA.
// Not modelled: the ring's buffers (staging_buffers x staging_chunk bytes hold more than the
// segments in flight of the plans below), the lanes' hand-over per segment. With the rates the
// lanes reach alone for every segment, the best cut's time is what no schedule of this design
// beats on the host: a ceiling (staged_probe --ceiling).
#ifndef RESMEM_ENGINE_TRANSFER_SEGMENT_PLAN_H_
#define RESMEM_ENGINE_TRANSFER_SEGMENT_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "backends/api/status.h"

namespace resmem::transfer {

// Costs of one host, in microseconds and GB/s (10^9 bytes per second).
// Defaults: the H100 host of docs/hil/2026-11-24-h100-staged5, run 2 (staged_probe --ceiling on
// a quiet host: an empty job on the lanes 5.8 us; the lanes' copy of 4 MiB alone 88.4 GB/s into
// the ring, 84.0 out of it, beside lane 0's DMAs 48.8 and 49.5; a submit 3.2 us; 4 MiB from
// pinned memory in 1 and in 8 DMAs 85.3 and 102.9 us, so 52.7 GB/s and 2.5 us per DMA).
struct StagingCosts {
  double start_us = 5.8;           // call -> the lanes copying the first segment
  double fill_alone_gbps = 88;     // lanes filling the ring, no DMA beside (host to device)
  double fill_gbps = 49;           // the same beside running DMAs
  double drain_alone_gbps = 84;    // lanes draining the ring, no DMA beside (device to host)
  double drain_gbps = 49.5;        // the same beside running DMAs
  double submit_us = 3.2;          // one DMA's submit on the driving lane
  double dma_gbps = 52.7;          // the copy engine's rate over PCIe
  double per_dma_us = 2.5;         // the copy engine's cost of each DMA beyond its bytes

  // The same host with the lanes at their rates alone throughout: what PlanSegments makes of
  // it is the ceiling.
  StagingCosts Alone() const;
  std::string Describe() const;
};

// kStagingCostsFields (what staged_probe --ceiling and Describe print) -> costs. Every field a number, rates > 0, times >= 0; otherwise InvalidArgument naming
// the field.
inline constexpr const char* kStagingCostsFields =
    "start_us,fill_alone_gbps,fill_gbps,drain_alone_gbps,drain_gbps,submit_us,dma_gbps,per_dma_us";
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
