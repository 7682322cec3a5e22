/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * The GPUDirect RDMA part of /dev/resmem_eduN (kmod/resmem_edu_p2p.c, in resmem_edu.ko): the
 * edu device DMAs into "GPU memory" (the BAR of the stand-in provider, kmod/nv_p2p_standin.c, or
 * of any module exporting nvidia_p2p_get_pages) peer to peer, pinned with the guide's kernel API,
 * and into a dma-buf imported from user space (docs/rdma.md "GPUDirect RDMA in the guest").
 *
 * ioctl numbers 48-55 (RESMEM_IOC_MAGIC; uapi/resmem_edu_ioctl.h has 32-47).
 */
#ifndef RESMEM_UAPI_RESMEM_EDU_P2P_IOCTL_H
#define RESMEM_UAPI_RESMEM_EDU_P2P_IOCTL_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* resmem_edu_p2p_write.flags */
#define RESMEM_EDU_P2P_NO_CACHE (1u << 0) /* pin before and unpin after this transfer */
/*
 * TEST: give the device the page table's physical addresses instead of dma_map_pages' bus
 * addresses, as the 2013 guide's drivers did (it has no DMA mapping call: "all physical addresses
 * are the same from the PCI devices' point of view", 1.1). Works without an IOMMU; behind one the
 * writes fault and nothing lands (the guide's 2.2: "incompatible with IOMMUs").
 */
#define RESMEM_EDU_P2P_PHYS_ADDR (1u << 1)

/*
 * The device writes [data, data+data_len) at offset of the GPU range [va, va+length), which the
 * driver pins with nvidia_p2p_get_pages (the tokens are the pointer's, as cuPointerGetAttribute
 * gives them) and maps for the device with nvidia_p2p_dma_map_pages. A pin is kept for the next
 * transfer to the same range (lazy unpinning, the guide's 2.1) unless RESMEM_EDU_P2P_NO_CACHE;
 * when get_pages finds the BAR full the least recently used pins of this file are unpinned and
 * the pin is tried again. data_len 0 pins only.
 * Errors: ENOPKG (no module exports nvidia_p2p_get_pages: nvidia.ko / nv_p2p_standin.ko not
 * loaded), EINVAL (reserved != 0, unknown flags, offset+data_len past the range, and every
 * -EINVAL of get_pages: alignment to 64 KiB, tokens, a range no allocation holds; an incompatible
 * page table or mapping version; a GPU page size other than 64 KiB), ENOMEM (the BAR is full
 * even after evicting this file's unused pins), EIO (dma_map_pages failed), ECANCELED (the range
 * was revoked during the transfer: the free callback stopped it; written says how far it got),
 * EFAULT, ETIMEDOUT, ENODEV (as uapi/resmem_edu_ioctl.h), EINTR. dmesg names each refusal.
 */
struct resmem_edu_p2p_write {
	__u64 p2p_token;      /* in */
	__u32 va_space_token; /* in */
	__u32 flags;          /* in: RESMEM_EDU_P2P_* */
	__u64 va;             /* in: the GPU range to pin: 64 KiB aligned */
	__u64 length;         /* in */
	__u64 offset;         /* in: where in the range the bytes go */
	__u64 data;           /* in: user address of the bytes */
	__u64 data_len;       /* in: at most RESMEM_EDU_MAX_WRITE; 0: pin only */
	__u64 bus_addr;       /* out: the device's address for the first byte written (offset) */
	__u64 phys_addr;      /* out: that byte's physical address, from the page table */
	__u64 pin_ns;         /* out: get_pages + dma_map_pages in this call (0 on a cache hit) */
	__u64 unpin_ns;       /* out: dma_unmap_pages + put_pages in this call (NO_CACHE, evictions) */
	__u64 device_ns;      /* out: from the first DMA command to the last completion */
	__u64 written;        /* out: bytes the device wrote (less than data_len on ECANCELED) */
	__u32 commands;       /* out: DMA commands run */
	__u32 hit;            /* out: 1 when the pin came from the cache */
	__u32 table_version;  /* out: the page table's version */
	__u32 page_size;      /* out: its page_size code (1: 64 KiB) */
	__u32 entries;        /* out: its entries */
	__u32 evicted;        /* out: pins unpinned to make room in this call */
};
#define RESMEM_EDU_IOC_P2P_WRITE _IOWR('R', 48, struct resmem_edu_p2p_write)

/* Counters of this open file's pin cache since open. */
struct resmem_edu_p2p_stats {
	__u64 pins;       /* get_pages that succeeded */
	__u64 hits;       /* transfers that found their pin in the cache */
	__u64 evictions;  /* pins unpinned to make room (get_pages answered ENOMEM) */
	__u64 unpins;     /* put_pages calls (evictions, NO_CACHE, FLUSH) */
	__u64 revoked;    /* pins taken back by the provider through the free callback */
	__u64 pin_ns;     /* total time in get_pages + dma_map_pages */
	__u64 unpin_ns;   /* total time in dma_unmap_pages + put_pages */
	__u64 cached_bytes; /* pinned by the cache now */
	__u32 cached;     /* pins in the cache now */
	__u32 reserved;
};
#define RESMEM_EDU_IOC_P2P_STATS _IOR('R', 49, struct resmem_edu_p2p_stats)

/* Unpins every cached pin of this file (put_pages); returns how many. */
#define RESMEM_EDU_IOC_P2P_FLUSH _IO('R', 50)

/*
 * dma-buf import: the device writes [data, data+data_len) at offset of the dma-buf behind fd
 * (dma_buf_get, dma_buf_attach to the edu device, dma_buf_map_attachment: the sg list's bus
 * addresses go to the DMA engine), then the attachment is unmapped and detached.
 * Errors: EBADF (fd is not a dma-buf), EINVAL (reserved != 0, past the buffer's end, length 0 or
 * above RESMEM_EDU_MAX_WRITE), and the exporter's errors from attach and map.
 */
struct resmem_edu_dmabuf_write {
	__s32 fd;          /* in */
	__u32 reserved;    /* in: 0 */
	__u64 offset;      /* in */
	__u64 data;        /* in */
	__u64 data_len;    /* in */
	__u64 size;        /* out: the dma-buf's size */
	__u64 bus_addr;    /* out: the device's address for the first byte */
	__u64 device_ns;   /* out */
	__u32 commands;    /* out */
	__u32 sg_entries;  /* out: entries of the mapped sg list */
};
#define RESMEM_EDU_IOC_DMABUF_WRITE _IOWR('R', 51, struct resmem_edu_dmabuf_write)

#endif /* RESMEM_UAPI_RESMEM_EDU_P2P_IOCTL_H */
