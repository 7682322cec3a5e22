/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * resmem ioctl ABI, shared by the kernel module (kmod/resmem.c), the user library
 * (backends/kmod), the simulated driver (mock/region) and the FUSE emulation (mock/fuse).
 *
 * Compatibility rule: RESMEM_ABI_VERSION changes whenever a struct below changes layout or an
 * ioctl changes meaning. New ioctls get new numbers; old numbers are never reused. The user
 * library compares the module's abi_version with its own and reports a skew (resmem doctor).
 */
#ifndef RESMEM_UAPI_RESMEM_IOCTL_H
#define RESMEM_UAPI_RESMEM_IOCTL_H

#ifdef __KERNEL__
#include <linux/ioctl.h>
#include <linux/types.h>
#else
#include <linux/ioctl.h>
#include <linux/types.h>
#endif

#define RESMEM_ABI_VERSION 1

/* mapping modes */
#define RESMEM_MODE_PFNMAP 0 /* VM_IO|VM_PFNMAP via remap_pfn_range: no struct pages */
#define RESMEM_MODE_PAGES 1  /* struct pages for the range: pin_user_pages works */

/* cache types */
#define RESMEM_CACHE_WB 0
#define RESMEM_CACHE_WC 1
#define RESMEM_CACHE_UC 2

/* resmem_info.flags */
#define RESMEM_INFO_FAULT_INJECTION (1u << 0) /* built with RESMEM_TEST_FAULTS */

struct resmem_info {
	__u32 abi_version; /* RESMEM_ABI_VERSION of the module */
	__u32 mode;        /* RESMEM_MODE_* */
	__u32 cache;       /* RESMEM_CACHE_* */
	__u32 flags;       /* RESMEM_INFO_* */
	__u64 phys_addr;   /* first byte of the reserved range */
	__u64 size;        /* bytes */
	char name[32];     /* device name, NUL terminated: "resmem0" */
};

#define RESMEM_IOC_MAGIC 'R'
/* Everything about the device. */
#define RESMEM_IOC_INFO _IOR(RESMEM_IOC_MAGIC, 1, struct resmem_info)
/* The length in bytes as a __u64 (what the seed-000 program asked with RESMEM_IOC_LENGTH). */
#define RESMEM_IOC_LENGTH _IOR(RESMEM_IOC_MAGIC, 2, __u64)
/* The physical address as a __u64. */
#define RESMEM_IOC_PHYS _IOR(RESMEM_IOC_MAGIC, 3, __u64)

/*
 * TEST BUILD ONLY (resmem_test.ko, RESMEM_INFO_FAULT_INJECTION set): pins [addr, addr+length) of a
 * mapping with pin_user_pages_fast(FOLL_WRITE | FOLL_LONGTERM), the call the CUDA driver's plain
 * cudaHostRegister path makes, reports the result and unpins. At most 64 pages. The production
 * module answers ENOTTY. Errors: the pin's own errno (EFAULT for VM_IO|VM_PFNMAP mappings).
 */
struct resmem_test_pin {
	__u64 addr;       /* in: user virtual address, page aligned */
	__u64 length;     /* in: bytes, page aligned, at most 64 pages */
	__u64 pinned;     /* out: pages pinned */
	__u64 first_phys; /* out: physical address of the first pinned page */
};
#define RESMEM_IOC_TEST_PIN _IOWR(RESMEM_IOC_MAGIC, 16, struct resmem_test_pin)

#endif /* RESMEM_UAPI_RESMEM_IOCTL_H */
