// The simulated GpuDirect seam (backends/api/p2p.h): a third-party device's kernel driver, written
// as NVIDIA's guide tells (or as a scenario's variant mis-tells), over the simulated NVIDIA driver
// (nv_p2p.h) and the simulated device (peer_device.h). The driver:
//  - queries the tokens for every pointer before it pins (guide 2.4);
//  - keeps pins for reuse and gives back the least recently used one when nvidia_p2p_get_pages
//    answers -ENOMEM for BAR1 (guide 2.1, lazy unpinning), or pins around each transfer, or never
//    unpins, as its UnpinPolicy says; it counts hits and evictions;
//  - checks the page table's version as nv-p2p.h's NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE does
//    for the version it was built against, and refuses an incompatible table with -EINVAL after
//    putting it back (as Linux's EFA driver does in its nvmem get-pages path);
//  - maps the pages for the device with nvidia_p2p_dma_map_pages where the GPU driver has it,
//    else hands the device the physical addresses (the guide's API);
//  - in its free callback waits for its DMA, calls nvidia_p2p_free_page_table and forgets the
//    table, so it never calls put_pages on it (guide 3.3) - unless the config says otherwise.
// Time: each transfer charges the device's modelled write time to the clock.
#ifndef RESMEM_MOCK_RDMA_SIM_GPUDIRECT_H_
#define RESMEM_MOCK_RDMA_SIM_GPUDIRECT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/api/clock.h"
#include "backends/api/p2p.h"
#include "mock/rdma/nv_p2p.h"
#include "mock/rdma/peer_device.h"

namespace resmem::sim {

class SimGpuDirect : public GpuDirect {
 public:
  SimGpuDirect(std::shared_ptr<Clock> clock, uint64_t seed);

  std::string name() const override { return "sim"; }
  Status Configure(const GpuDirectConfig& config) override;
  Result<uint64_t> AllocGpu(uint64_t length, int context) override;
  Status FreeGpu(uint64_t va, bool dma_in_flight) override;
  Result<P2pTokens> QueryTokens(uint64_t va) override;
  Result<P2pPageTable> Pin(const P2pTokens& tokens, uint64_t va, uint64_t length) override;
  Status Unpin(uint64_t id) override;
  Result<P2pDmaStats> Dma(uint64_t va, uint64_t length, uint64_t block, int rounds) override;
  std::vector<std::string> Events() const override;

  // For tests: the NVIDIA side and the device, once configured.
  SimNvP2p* nvidia() { return nv_.get(); }
  SimPeerDevice* device() { return device_.get(); }

 private:
  // What the driver keeps for one pin.
  struct PinRecord {
    P2pTokens tokens;
    uint64_t va = 0, length = 0;
    bool cached = false;           // kept for reuse by Dma (not an explicit Pin)
    bool revoked = false;          // the free callback ran and the driver forgot it
    uint64_t last_use = 0;
    std::vector<uint64_t> bus;     // what the device is told to write to
    bool translated = false;       // bus came from nvidia_p2p_dma_map_pages
    std::vector<uint64_t> physical;
  };
  Status NeedConfigured() const;
  // nvidia_p2p_get_pages with fresh tokens and the driver's callback, the version check, and the
  // mapping for the device. Evicts (lazy) when BAR1 is full; `evictions` counts those.
  Result<uint64_t> PinAndMap(uint64_t va, uint64_t length, const P2pTokens& tokens, bool cached,
                             uint64_t* evictions);
  void OnFreeCallback(uint64_t table_id);

  std::shared_ptr<Clock> clock_;
  uint64_t seed_;
  GpuDirectConfig config_;
  std::unique_ptr<SimNvP2p> nv_;
  std::unique_ptr<SimPeerDevice> device_;
  std::map<uint64_t, PinRecord> pins_;  // by page table id
  uint64_t use_counter_ = 0;
  bool dma_in_flight_ = false;
  uint64_t in_flight_va_ = 0;
};

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_RDMA_SIM_GPUDIRECT_H_
