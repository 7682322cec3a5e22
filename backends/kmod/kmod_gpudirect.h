// The real GpuDirect part (backends/api/p2p.h) of the kmod backend: GPUDirect RDMA on the kernel's
// side, for the QEMU lane's guest (docs/rdma.md "The seed-003 files in the guest"). The "CUDA"
// side is /dev/nv_p2p_standin (kmod/nv_p2p_standin.c: an open file is a context, ALLOC is
// cudaMalloc with the pointer's tokens, FREE is cudaFree, mmap maps an allocation's BAR pages),
// whose GPU memory is the BAR of QEMU's ivshmem-plain; the device's driver is /dev/resmem_eduN
// (kmod/resmem_edu_p2p.c, uapi/resmem_edu_p2p_ioctl.h: P2P_WRITE pins with nvidia_p2p_get_pages,
// maps with nvidia_p2p_dma_map_pages, and QEMU's edu writes peer to peer into the BAR; P2P_STATS,
// P2P_FLUSH). What a step observes is what the modules answered: errnos, the ioctls' out fields,
// the bytes read back through the BAR mapping, and the kernel's lines (/dev/kmsg) since the call.
//
// How the seam's calls are carried out:
//  - Configure: picks the /dev/resmem_eduN whose DMA mask has the scenario's width, checks that the
//    machine's IOMMU is as the scenario says (resmem_edu_info.flags), sets the stand-in's page
//    table version to the GPU profile's (h100: 0x00010002, nv-p2p.h; kepler-guide: 0x00010001,
//    the guide's 4.3; or table_version) through its table_version= parameter. What the lane cannot
//    be made to be is refused with Unavailable and the reason: BAR1 moved (bar1_base), a chosen
//    link rate, a cross-socket path, a driver whose free callback does not wait or that calls
//    put_pages after it, a driver built against another header than resmem_edu.ko was.
//  - the guide's profile (kepler-guide) has no nvidia_p2p_dma_map_pages: the device is given the
//    page table's physical addresses (RESMEM_EDU_P2P_PHYS_ADDR), as the 2013 guide's drivers did.
//  - Pin: a driver file of its own (its cache holds the one pin); Unpin: P2P_FLUSH on it.
//  - Dma: unpin lazy = one driver file's LRU cache; after-each = RESMEM_EDU_P2P_NO_CACHE; never =
//    a driver file per pinned range, kept open (nothing to evict, as a driver that never gives a
//    pin back). edu moves 2 KiB per two DMA commands of 100 ms each under TCG, so each transfer
//    pins its whole range but the device writes one 2 KiB piece of it, at an offset the seed
//    picks, poisoned before and read back through the BAR after: data "intact", "lost" (nothing
//    arrived: behind an IOMMU the guide's physical addresses fault) or "mismatch".
//  - FreeGpu with a DMA in flight: a transfer of 8 pieces runs on a thread into a pinned range of
//    the allocation while FREE revokes it (the free callback stops it: ECANCELED).
//  - Tokens: those ALLOC gave for the allocation; a freed allocation's stay known, so a transfer
//    into freed memory is refused by the module (get_pages), not by this part.
#ifndef RESMEM_BACKENDS_KMOD_KMOD_GPUDIRECT_H_
#define RESMEM_BACKENDS_KMOD_KMOD_GPUDIRECT_H_

#include <cstdint>
#include <memory>
#include <string>

#include "backends/api/p2p.h"

namespace resmem {

struct KmodGpuDirectOptions {
  std::string provider = "/dev/nv_p2p_standin";
  std::string edu_glob = "/dev/resmem_edu*";
  std::string table_version_param = "/sys/module/nv_p2p_standin/parameters/table_version";
  std::string kmsg = "/dev/kmsg";
  std::string pci_devices = "/sys/bus/pci/devices";
  uint64_t seed = 1;  // picks where in each transfer the device writes
};

// Nothing is opened until Configure, which answers Unavailable (naming the module to load) where
// the devices are missing.
std::unique_ptr<GpuDirect> MakeKmodGpuDirect(KmodGpuDirectOptions options);

// The NVIDIA_P2P_PAGE_TABLE_VERSION resmem_edu.ko is built against (kmod/nv_p2p_standin.h, the
// guide's 4.3): the module refuses tables this version's rule does not accept.
constexpr uint32_t kKmodBuiltAgainstVersion = 0x00010001;

// What the route between two PCI devices is, from their sysfs paths (realpath of
// /sys/bus/pci/devices/NAME): both right under one host bridge ("pci0000:00"): "through-cpu" (the
// root complex, the guide's 2.2 second case); under one bridge or switch port: "same-switch";
// otherwise "" (not one the guide names, or unknown).
std::string PcieRouteOf(const std::string& device_a_path, const std::string& device_b_path);

// The message of one /dev/kmsg record ("prio,seq,usec,flags;text\n" and continuation lines
// " KEY=VALUE"), or "" for a record without one.
std::string KmsgRecordText(const std::string& record);

}  // namespace resmem

#endif  // RESMEM_BACKENDS_KMOD_KMOD_GPUDIRECT_H_
