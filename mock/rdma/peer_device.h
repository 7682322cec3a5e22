// The third-party PCIe device of GPUDirect RDMA, simulated: its DMA mask, the PCIe path between it
// and the GPU, and the IOMMU (or none) that translates what it emits. It answers two questions:
// what bus address the kernel gives it for a BAR1 page (dma_map_resource), and what becomes of a
// write it emits to bus addresses (refused, misdirected, or delivered at some rate by some route).
//
// Rules and sources: the guide is NVIDIA's TB-06712-001 v5.5 (../shared/seeds/003_*.txt), 2.2
// "Supported Systems" and its "IOMMUs" paragraph; Linux 6.1 kernel/dma/direct.c
// dma_direct_map_resource (no IOMMU: the bus address is the physical one and must fit the mask);
// drivers/iommu/dma-iommu.c iommu_dma_alloc_iova (IOVAs are allocated below the device's mask);
// drivers/pci/p2pdma.c upstream_bridge_distance (ACS redirect forces peer traffic up to the host
// bridge when an IOMMU isolates devices).
#ifndef RESMEM_MOCK_RDMA_PEER_DEVICE_H_
#define RESMEM_MOCK_RDMA_PEER_DEVICE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "backends/api/p2p.h"
#include "backends/api/status.h"

namespace resmem::sim {

struct PeerDeviceSpec {
  int dma_mask_bits = 64;  // 32 to 64
  PciePath path = PciePath::kSameSwitch;
  bool iommu = false;
  double link_gbps = 0;  // its write rate where the path works; > 0
};

// A write's fate.
struct PeerWrite {
  double seconds = 0;
  std::string route;  // "same-switch", "through-cpu", "through-cpu (IOMMU)"
  std::string data;   // "intact", "misdirected" or "lost" (blocked by an IOMMU)
  std::string note;   // the rule that decided, in the source's words
  std::string fault;  // the kernel's line about the write (an IOMMU fault), or empty
};

class SimPeerDevice {
 public:
  explicit SimPeerDevice(PeerDeviceSpec spec);
  const PeerDeviceSpec& spec() const { return spec_; }
  uint64_t dma_mask() const;  // the mask as a value (0xffffffff for 32 bits)

  // dma_map_resource(dev, phys, len) for this device: with an IOMMU, an IOVA below the mask (one
  // per call, never reused in a run); without, `phys` itself when [phys, phys+len) fits the mask,
  // else the mapping error, named with the way out.
  Result<uint64_t> MapResource(uint64_t phys, uint64_t len);

  // The device writes `length` bytes to the pages at `bus_addresses` (each `page` bytes) in order.
  // `translated`: the addresses came from MapResource (dma_map_pages); false: they are the page
  // table's physical addresses, used as they are (the guide's API has no dma_map_pages).
  // Errors: EIO where the write cannot arrive across sockets. An IOMMU that never mapped the
  // addresses drops the writes without the device knowing: data "lost" and the fault's line.
  Result<PeerWrite> Write(const std::vector<uint64_t>& bus_addresses, uint64_t page, uint64_t length,
                          bool translated) const;

 private:
  PeerDeviceSpec spec_;
  uint64_t next_iova_;
};

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_RDMA_PEER_DEVICE_H_
