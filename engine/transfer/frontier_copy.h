// Host to device by the fill frontier (engine-internal strategy, copy_strategy.h;
// TransferOptions::staging_frontier). The ring is the staging buffers end to end (B x chunk
// bytes): copy byte x lives at ring position x % ring. Every lane claims units in order from one
// counter, waits until the DMA that last read the unit's ring space is done (copy bytes before
// x + n - ring retired), fills the unit (FillAs) and sets the ring unit's word to the unit's
// number. Lane 0 advances the frontier over those words, retires the DMAs in order and issues
// the next one (NextFrontierDma, at most two queued); while no DMA runs it fills units too
// (staging_driver_fills).
//
// Contract: host-to-device single copies only (not CopyQueue, not the SM copy). Lane 0 returns
// once every DMA is retired, so the lanes run elastic. A unit's ring space found refilled before
// its DMA was issued or while the DMA still read it fails the copy (Internal, naming the unit);
// after any error lane 0 waits for the DMAs already queued before the ring is refilled. The
// link's rate measured by a successful copy carries to the next (staging_frontier_lead_us).
#ifndef RESMEM_ENGINE_TRANSFER_FRONTIER_COPY_H_
#define RESMEM_ENGINE_TRANSFER_FRONTIER_COPY_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/transfer/copy_strategy.h"
#include "engine/transfer/staging.h"

namespace resmem::transfer {

class FrontierCopy : public OneWayStrategy {
 public:
  // With staging_frontier: the strategy, and a note on it (or on why there is none: the buffers
  // must be a multiple of the unit) appended to *note. Null without a frontier.
  static std::unique_ptr<FrontierCopy> Open(Staging& s, std::string* note);
  Result<CopyOutcome> Copy(const CopyRequest& c) override;

  // A ring unit's word: the number of the copy unit that filled it last, alone on its line.
  struct alignas(64) UnitWord {
    std::atomic<uint64_t> v{0};
  };

 private:
  FrontierCopy(Staging& s, uint64_t unit);

  Staging& s_;
  // The per-unit words of the ring, one per 4 KiB (a short copy's units are smaller:
  // FrontierShapeOf), and the number the next copy's first unit takes (seq_).
  std::unique_ptr<UnitWord[]> words_;
  const uint64_t unit_;
  // The link's rate as the fill frontier's DMAs of 1 MiB and more ran (bytes per microsecond),
  // for staging_frontier_lead_us's projection; 0: not measured yet (staging_costs.dma_gbps).
  double link_bpus_ = 0;
  uint64_t seq_ = 1;
};

}  // namespace resmem::transfer

#endif  // RESMEM_ENGINE_TRANSFER_FRONTIER_COPY_H_
