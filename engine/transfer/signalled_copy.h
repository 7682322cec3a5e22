// Staged segments through stream signals (engine-internal strategy, copy_strategy.h;
// TransferOptions::staging_signals). The copy is cut into segments (small at the exposed end, see
// TransferOptions::staging_edge_segment); segment i uses buffer b = i % B and number t_i. Lane 0
// queues, for every segment at once, on its stream:
//   host to device: wait lane word b >= t_i; DMA buffer b -> device; stream word b = t_i
//   device to host: wait lane word b >= t_{i-B} (i >= B); DMA device -> buffer b; stream word b = t_i
// and then watches the stream words (and the stream's errors). Lanes 1.. move segment i's bytes
// once its buffer is free (host to device: stream word b >= t_{i-B}) or full (device to host:
// stream word b >= t_i) and the lane that completes the segment sets lane word b = t_i. On an
// error lane 0 stops the lanes and releases every wait it queued, so the stream always drains.
// Without staging_gpu_waits lane 0 queues each DMA from the host once its wait is satisfied
// instead of queueing the stream wait.
//
// Contract: single copies both ways (CopyQueue keeps the event pipeline); every lane returns
// before Copy does (LanePool::Run, not elastic), and the stream is synchronized.
#ifndef RESMEM_ENGINE_TRANSFER_SIGNALLED_COPY_H_
#define RESMEM_ENGINE_TRANSFER_SIGNALLED_COPY_H_

#include <cstdint>
#include <memory>
#include <string>

#include "backends/cuda/cuda_gpu.h"
#include "engine/transfer/copy_strategy.h"
#include "engine/transfer/staging.h"

namespace resmem::transfer {

class SignalledCopy : public CopyStrategy {
 public:
  // With staging_signals: the strategy over 2 B words (B = staging buffers: [0, B) set by the
  // lanes, [B, 2B) by the stream) and a note appended to *note; where the driver lacks stream
  // memory operations, null, the note saying why (the copies then poll events). Null without
  // staging_signals.
  static std::unique_ptr<SignalledCopy> Open(Staging& s, std::string* note);
  ~SignalledCopy() override;  // frees the words
  bool Takes(const CopyRequest& c) const override { return signals_.host != nullptr; }
  Result<CopyOutcome> Copy(const CopyRequest& c) override;

 private:
  SignalledCopy(Staging& s, cuda::CudaGpu::Signals signals)
      : s_(s), signals_(signals), seq_(s.o.staging_first_number - 1) {}

  Staging& s_;
  cuda::CudaGpu::Signals signals_;
  uint32_t seq_;  // every segment takes the next number
};

}  // namespace resmem::transfer

#endif  // RESMEM_ENGINE_TRANSFER_SIGNALLED_COPY_H_
