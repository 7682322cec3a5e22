// Segment plans for the staged path: how to cut one copy into segments so that it finishes
// soonest, from a few measured costs of the host, and what the best cut can reach at all.
//
// The model (the staged pipelines of transfer_engine.cc), host to device:
//   the lanes fill the copy in order, starting start_us after the call: the first segment at
//   fill_alone_gbps (no DMA runs yet), the rest at fill_gbps (beside the DMAs, which share the
//   host's memory with them); a segment's DMA is submitted (submit_us) once its last byte is
//   in, and the copy engine runs the DMAs back to back, each taking bytes / rate +
//   per_dma_us, the rate dma_beside_gbps while the lanes copy beside it (every DMA but the
//   last) and dma_gbps for the last.
// Device to host: the DMAs are queued at once and run back to back in the same way (the first
// at dma_gbps, the rest beside the lanes' drains); the lanes drain a segment once its DMA is
// done, in order, at drain_gbps beside later DMAs and at drain_alone_gbps for the last one; the
// copy ends with the last drain.
// The lanes and the copy engine share the host's memory: each slows the other, inherently, as
// a staged copy must copy on the CPU while it DMAs to overlap at all.
// A pinned copy (the baseline) is one submit and one DMA.
// Not modelled: the ring's buffers (staging_buffers x staging_chunk bytes hold more than the
// segments in flight of the plans below), the lanes' hand-over per segment. With every rate at
// its better figure for every segment, the best cut's time is what no schedule of this design
// beats on the host: a ceiling (StagingCosts::Ceiling, staged_probe --ceiling).
#ifndef RESMEM_ENGINE_TRANSFER_SEGMENT_PLAN_H_
#define RESMEM_ENGINE_TRANSFER_SEGMENT_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "backends/api/status.h"

namespace resmem::transfer {

// Costs of one host, in microseconds and GB/s (10^9 bytes per second).
// Defaults: the H100 host of docs/hil/2026-11-24-h100-staged5 (staged_probe --ceiling). The start
// is staged6 run 1's (1.0 us, an empty job on 16 lanes through the per-lane hand-off of
// lane_pool.h; it was 5.8 us through one shared admission word, staged5 run 2: the plans of 64 KiB
// to 256 MiB under either differ by at most 32 KiB in a segment). Run 2, quiet host: the
// lanes' copy into the ring alone 88.4 GB/s; a submit 3.2 us; 4 MiB from pinned memory in 1 and in 8 DMAs 85.3 and 102.9 us, so 52.7 GB/s
// and 2.5 us per DMA. Run 6: the drain out of the ring 71.4 GB/s alone (right after a DMA) and
// 91.3 beside lane 0's DMAs. A DMA beside the lanes' copy ran at 52.1-52.4 GB/s (runs 5-6),
// within 1% of alone: dma_beside_gbps is left equal to dma_gbps, the costs runs 3-4 measured the
// host-to-device plans with.
// fill_gbps is not the lanes' measured rate beside DMAs (83-96 GB/s, runs 5-6) but the rate
// whose host-to-device plans measured best, and that depends on the host. On hosts whose lanes
// copied 41-48 GB/s (bench's host check; runs 2-4, 6, 7) plans from 49 beat equal segments. On
// hosts whose lanes copied 45-58 GB/s (runs 11-12, five rounds) 60 beat 49 by 2-6 points from
// 1 MiB to 64 MiB; on a host at 41-43 GB/s (run 13, two rounds) 60 lost 5-9 points to 49 at
// 32-64 MiB. 49 stays: it never lost to equal segments. `--costs` sets another. Plans from the
// measured rate cut 4-32 MiB copies into a few large segments and lost 2-13 points (run 6): the
// model leaves out what makes large segments slower in a copy than alone.
struct StagingCosts {
  double start_us = 1.0;           // call -> the lanes copying the first segment
  double fill_alone_gbps = 88;     // lanes filling the ring, no DMA beside (host to device)
  double fill_gbps = 49;           // the same beside running DMAs (see above)
  double drain_alone_gbps = 71.4;  // lanes draining the ring, no DMA beside (device to host)
  double drain_gbps = 91.3;        // the same beside running DMAs
  double submit_us = 3.2;          // one DMA's submit on the driving lane
  double dma_gbps = 52.7;          // the copy engine's rate over PCIe
  double dma_beside_gbps = 52.7;   // the same while the lanes copy beside it
  double per_dma_us = 2.5;         // the copy engine's cost of each DMA beyond its bytes

  // The same host with every rate at the better of its two figures (alone, beside) throughout:
  // what PlanSegments makes of it is the ceiling.
  StagingCosts Ceiling() const;
  std::string Describe() const;
};

// kStagingCostsFields (what staged_probe --ceiling and Describe print) -> costs. Every field a number, rates > 0, times >= 0; otherwise InvalidArgument naming
// the field.
inline constexpr const char* kStagingCostsFields =
    "start_us,fill_alone_gbps,fill_gbps,drain_alone_gbps,drain_gbps,submit_us,dma_gbps,"
    "dma_beside_gbps,per_dma_us";
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
