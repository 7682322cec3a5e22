// The staged path's ceiling on the host it runs on: the host's staging costs (segment_plan.h:
// start, submit, DMA rate and per-DMA cost, the lanes' fill and drain alone and beside a DMA
// loop), each measured apart on the real GPU, and per size the best cut PlanSegments makes of
// them with every rate at its better figure: what no segment schedule of the staged design beats
// on this host. `staged_probe --ceiling` prints it with the detail; bench measures it in the same
// run as its staged rows and prints each staged cell's share of it (issue 30).
//
// Contract: every function here copies with the CUDA runtime (cuda::CudaGpu) and the lanes it is
// given, and blocks until its copies are done; nothing is asserted on the figures.
#ifndef RESMEM_ENGINE_TRANSFER_STAGING_CEILING_H_
#define RESMEM_ENGINE_TRANSFER_STAGING_CEILING_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/api/gpu.h"
#include "backends/api/status.h"
#include "backends/cuda/cuda_gpu.h"
#include "engine/transfer/lane_pool.h"
#include "engine/transfer/segment_plan.h"

namespace resmem::transfer {

// What the measurements copy with; nothing is owned. Sizes: host and dev at least 16 MiB,
// pinned at least 4 MiB, every ring buffer `seg` (512 KiB) or more, pinned.
struct CeilingRig {
  cuda::CudaGpu* cuda = nullptr;
  HostMemory* host = nullptr;    // the lanes' source (host to device) and destination
  HostMemory* pinned = nullptr;  // the DMA figures' host side
  DeviceBuffer* dev = nullptr;
  const std::vector<std::unique_ptr<HostMemory>>* ring = nullptr;  // the lanes' staging ring
  LanePool* pool = nullptr;
  uint64_t min_piece = 64 << 10;  // TransferOptions::staging_min_piece
  int copies = 11;                // medians of this many (the DMA figures: at least 11)
  // Runs before each timed lane copy of `bytes` when set (staged_probe --evict-mib: evict, then
  // stamp the source, so the copy meets caches as bench's do).
  std::function<Status(uint64_t bytes)> before_lane_copy;
};

// The lanes' copy of `size` bytes between rig.host and the ring, in segments of `seg` split
// into pieces as a staged copy splits them. drain: ring -> host (else host -> ring);
// after_dma: the device writes the ring's segments by DMA before each timed drain, so the drain
// reads lines the device just wrote; beside: lane 0 keeps 4 MiB DMAs from pinned memory running
// in that direction until the other lanes are done, as the driving lane of a staged copy does.
struct LaneCopyTimes {
  double median_us = 0;
  double gbps = 0;
  int lanes = 0;                       // lanes that copied (lane 0 drives the DMAs when beside)
  uint64_t piece = 0;
  std::vector<double> beside_dma_us;   // each DMA that finished while the lanes still copied
};
Result<LaneCopyTimes> TimeLaneCopy(const CeilingRig& rig, uint64_t size, uint64_t seg, bool drain,
                                   bool after_dma, const CopyDirection* beside = nullptr);

// An empty job on every lane: `hot` 200 times back to back (lanes spinning), `cold` 20 times
// after a 3 ms pause each (lanes asleep). Medians; the start cost of the model is `hot_us`.
struct DispatchTimes {
  double hot_us = 0, cold_us = 0, cold_max_us = 0;
  uint64_t sleeps = 0;  // lane sleeps during the cold jobs
};
DispatchTimes TimeDispatch(LanePool& pool);

// One direction's costs: `alone` with the lanes' rate alone, `beside` with their rate beside
// lane 0's DMAs and the DMA rate beside them. start_us is the caller's (TimeDispatch).
struct DirectionCosts {
  StagingCosts alone, beside;
  double one_dma_us = 0, eight_dmas_us = 0;  // 4 MiB from pinned memory in 1 DMA and in 8
  double beside_dma_us = 0;                  // a 4 MiB DMA beside the lanes (median; 0: none)
  size_t beside_dmas = 0;
  LaneCopyTimes lanes_alone, lanes_beside;
};
Result<DirectionCosts> MeasureDirectionCosts(const CeilingRig& rig, CopyDirection dir,
                                             double start_us);

// Both directions' costs as one host: the host-to-device figures, the drain's rates of device
// to host, and the slower of the two directions' DMA rates beside the lanes.
StagingCosts CombineCosts(const DirectionCosts& up, const DirectionCosts& down);

// The largest segment the ceiling's cut may use: the run's chunk, and never less than the
// default's (8 MiB). A run with smaller buffers (--chunk 1M) is measured against the ceiling of
// the design, not of its own option: on the H200 a 1 MiB cap put the model's best cut at 88% of
// pinned from 16 MiB where 8 MiB puts it at 96-98 (docs/hil/2026-11-29-h200-ceiling, run 5).
uint64_t CeilingChunk(uint64_t staging_chunk);

// Per size and direction: the ceiling (the best cut with every rate at its better figure, in
// segments of at most CeilingChunk) and the plan of the costs as measured (segments of at most
// staging_chunk), both as % of the model's pinned copy.
struct CeilingCell {
  CopyDirection direction = CopyDirection::kHostToDevice;
  uint64_t size = 0;
  double percent_of_pinned = 0;       // the ceiling
  double plan_percent_of_pinned = 0;  // the rates as measured
  std::vector<uint64_t> plan_segments;
  double pinned_us = 0;               // the model's pinned copy
};
std::vector<CeilingCell> CeilingCells(const StagingCosts& costs, const std::vector<uint64_t>& sizes,
                                      uint64_t staging_chunk);

// The lanes' rates over one copy's own length, each timed copy right after the caller's
// before_lane_copy (bench: a fresh stamp of the block, as before its timed copies). A copy longer
// than the host's last-level cache reads its source from memory, and the 4 MiB figures of
// DirectionCosts (a source the cache holds) overstate its fill: the H200 host's lanes filled
// 4 MiB at 91-97 GB/s and copied 64 MiB buffers at 34-54 GB/s (docs/hil/2026-11-28-h200-staged13,
// bench's host check), under the copy engine's 55. So the ceiling of each size uses its own
// rates.
struct SizeRates {
  uint64_t size = 0;
  LaneCopyTimes fill_alone, fill_beside, drain_alone, drain_beside;
  StagingCosts costs;  // the combined costs with this size's four lane rates
};
Result<SizeRates> MeasureSizeRates(const CeilingRig& rig, uint64_t size, const StagingCosts& costs);

// The whole measurement: dispatch, both directions' 4 MiB costs, combined, each size's own lane
// rates, and the cells of `sizes` (each from its size's costs).
struct MeasuredCeiling {
  DispatchTimes dispatch;
  DirectionCosts up, down;
  StagingCosts costs;
  std::vector<SizeRates> sizes;
  std::vector<CeilingCell> cells;
};
Result<MeasuredCeiling> MeasureCeiling(const CeilingRig& rig, const std::vector<uint64_t>& sizes,
                                       uint64_t staging_chunk);

// The buffers a CeilingRig copies with, made on `gpu` and `lanes` lanes of its own (bench's; the
// probe has its own): memfd-like host memory from the caller, pinned, device and a ring of
// `buffers` x 512 KiB. Freed in reverse order.
struct OwnedCeilingRig {
  std::unique_ptr<LanePool> pool;
  std::unique_ptr<DeviceBuffer> dev;
  std::unique_ptr<HostMemory> pinned;
  std::vector<std::unique_ptr<HostMemory>> ring;
  CeilingRig rig;
};
Result<std::unique_ptr<OwnedCeilingRig>> MakeCeilingRig(cuda::CudaGpu& gpu, HostMemory& host,
                                                        int lanes, int buffers,
                                                        uint64_t min_piece, int copies);

// MakeCeilingRig with `options`' lanes, buffers and smallest piece, then MeasureCeiling, on
// `gpu` when it is the CUDA runtime's (Unsupported otherwise: the simulator has no lanes or copy
// engine to time). `host` holds at least 16 MiB.
struct TransferOptions;
Result<MeasuredCeiling> MeasureCeilingOnGpu(Gpu& gpu, HostMemory& host,
                                            const TransferOptions& options, int copies,
                                            const std::vector<uint64_t>& sizes);

}  // namespace resmem::transfer

#endif  // RESMEM_ENGINE_TRANSFER_STAGING_CEILING_H_
