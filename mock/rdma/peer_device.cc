#include "mock/rdma/peer_device.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>

#include "backends/api/memory.h"
#include "mock/rdma/nv_p2p.h"

namespace resmem::sim {
namespace {

constexpr uint64_t k4GiB = 1ull << 32;

}  // namespace

SimPeerDevice::SimPeerDevice(PeerDeviceSpec spec) : spec_(spec) {
  // drivers/iommu/dma-iommu.c iommu_dma_alloc_iova (Linux 6.1): a PCI device is first given an
  // address below 4 GiB ("Try to get PCI devices a SAC address"), allocated downwards from the
  // limit; never above its mask either way. (Later kernels keep the 4 GiB try for some devices
  // only, which changes the addresses, not whether they fit the mask.)
  next_iova_ = std::min<uint64_t>(dma_mask(), k4GiB - 1) + 1;
}

uint64_t SimPeerDevice::dma_mask() const {
  return spec_.dma_mask_bits >= 64 ? ~0ull : (1ull << spec_.dma_mask_bits) - 1;
}

Result<uint64_t> SimPeerDevice::MapResource(uint64_t phys, uint64_t len) {
  if (spec_.iommu) {
    if (next_iova_ < len + (1ull << 20))
      return Status::Errno(ENOMEM, "the IOMMU has no IOVA space left below the device's mask");
    next_iova_ -= len;
    return next_iova_;
  }
  // kernel/dma/direct.c dma_direct_map_resource: the DMA address is the physical one; if
  // !dma_capable(dev, addr, size) it prints "DMA addr %pad+%zu overflow (mask %llx, bus limit
  // %llx)" once and returns DMA_MAPPING_ERROR.
  if (len == 0 || phys > dma_mask() || len - 1 > dma_mask() - phys)
    return Status::Errno(EIO, "DMA addr " + HexAddress(phys) + "+" + std::to_string(len) + " overflow (mask " +
                                  HexAddress(dma_mask()) + "): BAR1 lies above what the device's " +
                                  std::to_string(spec_.dma_mask_bits) + "-bit DMA mask reaches; give "
                                  "the device a wider mask (dma_set_mask), turn the IOMMU on (it maps "
                                  "the BAR below the mask), or place BAR1 below " +
                                  FormatSize(dma_mask() + 1));
  return phys;
}

Result<PeerWrite> SimPeerDevice::Write(const std::vector<uint64_t>& bus_addresses, uint64_t page,
                                       uint64_t length, bool translated) const {
  PeerWrite w;
  // Guide 2.2: "the third situation, where the path traverses a QPI/HT link, doesn't work
  // reliably". Modelled as writes that do not arrive.
  if (spec_.path == PciePath::kCrossSocket)
    return Status::Errno(EIO, "the path from the device to the GPU crosses QPI/HT between two CPU "
                              "sockets, where RDMA for GPUDirect \"doesn't work reliably\" (guide 2.2): "
                              "put the device under the GPU's root complex, best behind the same PCIe "
                              "switch (lspci -t shows the tree)");
  // Guide 2.2, IOMMUs: "RDMA for GPUDirect currently relies upon all physical addresses being the
  // same from the PCI devices' point of view. This makes it incompatible with IOMMUs". A device
  // emitting BAR1's physical addresses through an IOMMU that never mapped them is faulted by the
  // IOMMU, and only there: a PCIe write is posted, so the device (and its driver) see it complete
  // while the IOMMU drops it and the kernel logs the fault. Measured on the real 6.1 kernel in
  // QEMU (intel-iommu, the edu device writing the stand-in BAR's physical address):
  // "DMAR: [DMA Write NO_PASID] Request device [00:10.0] fault addr 0xf8164000 [fault reason 0x05]
  // PTE Write access is not set", the edu DMA ending without error (docs/rdma.md, the seed-003
  // files in the guest).
  if (spec_.iommu && !translated) {
    PeerWrite w;
    w.data = "lost";
    w.route = "through-cpu (IOMMU)";
    w.note = "the IOMMU blocked the device's writes to BAR1 " + HexAddress(bus_addresses.front()) +
             ": nothing mapped that address for the device (guide 2.2: RDMA for GPUDirect is "
             "\"incompatible with IOMMUs and hence they must be disabled\"); the device saw its "
             "posted writes complete, the kernel logged the fault: boot with the IOMMU off "
             "(intel_iommu=off, amd_iommu=off), or use a driver that maps with "
             "nvidia_p2p_dma_map_pages";
    // The line Linux's intel-iommu prints for it (drivers/iommu/intel/dmar.c dmar_fault_do_one,
    // 6.1's format); the model's device has no PCI address, so it is named as "sim".
    char fault[200];
    std::snprintf(fault, sizeof fault,
                  "DMAR: [DMA Write NO_PASID] Request device [sim] fault addr 0x%llx [fault reason "
                  "0x05] PTE Write access is not set",
                  static_cast<unsigned long long>(bus_addresses.front() & ~0xfffull));
    w.fault = fault;
    w.seconds = static_cast<double>(length) / (spec_.link_gbps * 1e9);
    return w;
  }
  w.data = "intact";
  for (uint64_t a : bus_addresses) {
    // A device emits only the address bits its DMA engine has: a page above its mask lands at the
    // address with the upper bits dropped, somewhere else in the machine.
    if (!translated && (a > dma_mask() || page - 1 > dma_mask() - a)) {
      w.data = "misdirected";
      w.note = "BAR1 page " + HexAddress(a) + " is above the device's " + std::to_string(spec_.dma_mask_bits) +
               "-bit DMA mask: its writes land at " + HexAddress(a & dma_mask()) +
               " instead; map the pages for the device (nvidia_p2p_dma_map_pages checks the mask) or "
               "place BAR1 below " + FormatSize(dma_mask() + 1);
      break;
    }
  }
  if (spec_.iommu) {
    // drivers/pci/p2pdma.c: with an IOMMU, ACS redirects peer requests up to the root complex
    // (upstream_bridge_distance: acs_redirects -> PCI_P2PDMA_MAP_THRU_HOST_BRIDGE), whatever
    // the switch below could have done.
    w.route = "through-cpu (IOMMU)";
    if (w.note.empty())
      w.note = "the IOMMU translates each write at the root complex (ACS redirect), so the path is "
               "the root complex's, which the guide (2.2) says \"works, but yields worse performance\"";
  } else if (spec_.path == PciePath::kThroughCpu) {
    w.route = "through-cpu";
    if (w.note.empty())
      w.note = "a single CPU/IOH on the path \"works, but yields worse performance\" (guide 2.2; it gives "
               "no figure, so the model keeps the link's rate: give link_gbps as measured)";
  } else {
    w.route = "same-switch";
    if (w.note.empty())
      w.note = "only PCIe switches on the path: \"optimal and yields the best performance\" (guide 2.2)";
  }
  w.seconds = static_cast<double>(length) / (spec_.link_gbps * 1e9);
  return w;
}

}  // namespace resmem::sim
