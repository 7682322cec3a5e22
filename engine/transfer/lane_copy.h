// The staged path in lanes mode (engine-internal strategy, copy_strategy.h): the first design,
// kept for comparison (TransferOptions::staging_segments off), and what a simulator, a test
// double or a single lane always runs. The copy is cut into units (at least lanes x
// staging_units_per_lane of them, each >= staging_min_unit, <= staging_chunk); every lane claims
// units from one counter and moves each through its own pinned buffers:
//   CUDA, real time   asynchronous DMAs on the lane's stream, one per unit; host to device a
//                     lane fills buffer k % B while its other buffers' DMAs run, device to host it
//                     keeps B DMAs queued and copies the oldest out (B = buffers per lane, >= 2);
//   elsewhere         one synchronous Gpu::Copy per unit through the lane's one buffer (through
//                     a bounce buffer where the mapping is not addressable).
// Contract: the lanes all return before Copy does (LanePool::Run, not elastic); the first
// lane's error is the copy's. The modelled time is the sum of the units' (one lane on a virtual
// clock).
#ifndef RESMEM_ENGINE_TRANSFER_LANE_COPY_H_
#define RESMEM_ENGINE_TRANSFER_LANE_COPY_H_

#include <atomic>
#include <cstdint>

#include "engine/transfer/copy_strategy.h"
#include "engine/transfer/staging.h"

namespace resmem::transfer {

class LaneCopy : public CopyStrategy {
 public:
  explicit LaneCopy(Staging& s) : s_(s) {}
  Result<CopyOutcome> Copy(const CopyRequest& c) override;

 private:
  struct LaneBuffers;
  // One unit [off, +n) of the copy through the lane's buffer, synchronously.
  Status StageOne(int lane, const CopyRequest& c, uint64_t off, uint64_t n, double* copy_seconds);
  // The lane's units, asynchronously, until the counter `next` passes `units`.
  Status LaneAsync(int lane, const CopyRequest& c, uint64_t unit, uint64_t units,
                   std::atomic<uint64_t>& next);
  Status LaneToDevice(LaneBuffers& r, const CopyRequest& c, std::atomic<uint64_t>& next);
  Status LaneFromDevice(LaneBuffers& r, const CopyRequest& c, std::atomic<uint64_t>& next);

  Staging& s_;
};

}  // namespace resmem::transfer

#endif  // RESMEM_ENGINE_TRANSFER_LANE_COPY_H_
