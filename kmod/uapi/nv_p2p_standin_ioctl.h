/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * ioctl ABI of /dev/nv_p2p_standin (kmod/nv_p2p_standin.c): the user-space side of the QEMU
 * lane's stand-in for a GPU with GPUDirect RDMA, whose "GPU memory" is the BAR of QEMU's
 * ivshmem-plain device (docs/rdma.md "GPUDirect RDMA in the guest").
 *
 * An open file is a CUDA context: its own VA space, with a vaSpaceToken and a random 64-bit
 * p2pToken (the guide's 2.4); 255 at once at most (open: EMFILE). ALLOC stands in for cudaMalloc followed by cuPointerGetAttribute(
 * CU_POINTER_ATTRIBUTE_P2P_TOKENS), FREE for cudaFree (every pin of the range is revoked through
 * its free callback before FREE returns), close for the process's exit (the same, for all of
 * them). mmap at offset = an allocation's VA maps its BAR pages (as gdrcopy maps BAR1): the way a
 * test reads what a device wrote into "GPU memory". EXPORT_DMABUF gives a dma-buf fd of a range
 * (cuMemGetHandleForAddressRange(CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD) on the H100, FACTS.md).
 */
#ifndef RESMEM_UAPI_NV_P2P_STANDIN_IOCTL_H
#define RESMEM_UAPI_NV_P2P_STANDIN_IOCTL_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define NV_P2P_STANDIN_IOC_MAGIC 'N'
/* GPU pages: 64 KiB (the guide, 4.1). Allocations and pins are multiples of it. */
#define NV_P2P_STANDIN_GPU_PAGE 65536

struct nv_p2p_standin_info {
	__u64 bar_phys;        /* the BAR's first byte (ivshmem-plain BAR2) */
	__u64 bar_size;        /* its bytes: the GPU's memory and its BAR */
	__u64 p2p_window;      /* bytes pins may map at once: bar_size - bar_reserve= */
	__u64 pinned_bytes;    /* mapped by live pins now */
	__u64 allocated_bytes; /* held by allocations of every context */
	__u64 p2p_token;       /* this context's tokens */
	__u32 va_space_token;
	__u32 gpu_page_size;   /* 65536 */
	__u32 table_version;   /* the version of the tables get_pages hands out now */
	__u32 live_tables;     /* pinned and not put or revoked */
	__u32 unfreed_tables;  /* revoked, and the free callback did not free them */
	__u32 dma_mappings;    /* nvidia_p2p_dma_map_pages mappings not unmapped */
	__u32 revocations;     /* tables revoked through the free callback, since load */
	__u32 put_after_revoke;/* put_pages on a table whose free callback had run (a driver bug) */
	__u32 dmabufs;         /* exported dma-bufs not yet released */
	__u32 reserved;
	char pci_name[32];
};
#define NV_P2P_STANDIN_IOC_INFO _IOR(NV_P2P_STANDIN_IOC_MAGIC, 1, struct nv_p2p_standin_info)

/*
 * cudaMalloc + the P2P tokens query. length is rounded up to 64 KiB; va is 64 KiB aligned.
 * Errors: EINVAL (length 0 or reserved != 0), ENOMEM (the BAR has no free run that long; dmesg
 * says how much is free).
 */
struct nv_p2p_standin_alloc {
	__u64 length;         /* in */
	__u64 va;             /* out: the GPU virtual address */
	__u64 p2p_token;      /* out */
	__u32 va_space_token; /* out */
	__u32 reserved;       /* in: 0 */
	__u64 bar_offset;     /* out: where in the BAR the memory is (for the test's checks) */
};
#define NV_P2P_STANDIN_IOC_ALLOC _IOWR(NV_P2P_STANDIN_IOC_MAGIC, 2, struct nv_p2p_standin_alloc)

/*
 * cudaFree: revokes every pin over the allocation through its driver's free callback
 * (synchronously: FREE returns after the callbacks), then frees it. Errors: EINVAL (va is not an
 * allocation of this context), EBUSY (a dma-buf of it is still open).
 */
struct nv_p2p_standin_free {
	__u64 va;            /* in */
	__u32 revoked;       /* out: page tables revoked */
	__u32 reserved;      /* in: 0 */
	__u64 callback_ns;   /* out: time spent in the drivers' free callbacks */
};
#define NV_P2P_STANDIN_IOC_FREE _IOWR(NV_P2P_STANDIN_IOC_MAGIC, 3, struct nv_p2p_standin_free)

/*
 * A dma-buf of [va, va+length) of an allocation of this context (64 KiB aligned). The fd is
 * O_CLOEXEC; the allocation cannot be freed while it is open. Errors: EINVAL, ENOMEM.
 */
struct nv_p2p_standin_export {
	__u64 va;       /* in */
	__u64 length;   /* in */
	__s32 fd;       /* out */
	__u32 reserved; /* in: 0 */
};
#define NV_P2P_STANDIN_IOC_EXPORT_DMABUF _IOWR(NV_P2P_STANDIN_IOC_MAGIC, 4, struct nv_p2p_standin_export)

#endif /* RESMEM_UAPI_NV_P2P_STANDIN_IOCTL_H */
