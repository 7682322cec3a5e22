/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * ioctl ABI of /dev/resmem_eduN (kmod/resmem_edu.c): QEMU's edu PCI device as the producer that
 * writes into a reserved range served by the same module's /dev/resmemN (docs/rdma.md).
 *
 * Use: open /dev/resmem_eduN, ATTACH an open /dev/resmemN (the range the device may write), then
 * WRITE blocks: the driver copies the caller's bytes into a DMA-coherent staging buffer and the
 * device's DMA engine moves them, a piece per two commands, into the range at the given offset. Readers
 * see them through their mapping of /dev/resmemN.
 *
 * The ioctl numbers share RESMEM_IOC_MAGIC with kmod/uapi/resmem_ioctl.h; this device uses 32-47.
 */
#ifndef RESMEM_UAPI_RESMEM_EDU_IOCTL_H
#define RESMEM_UAPI_RESMEM_EDU_IOCTL_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* Bytes per piece at most: one command into the device's buffer, one out (QEMU 7.2's edu refuses
 * a transfer that reaches its buffer's last byte, so not the whole 4 KiB). A piece never crosses a
 * page of the target. */
#define RESMEM_EDU_PIECE 2048
/* Bytes one RESMEM_EDU_IOC_WRITE moves at most (1024 commands, about 100 s on edu). */
#define RESMEM_EDU_MAX_WRITE (1u << 20)

/* resmem_edu_info.flags */
#define RESMEM_EDU_TRANSLATED (1u << 0) /* an IOMMU translates the device's addresses */

struct resmem_edu_info {
	__u64 dma_mask;   /* the DMA mask the driver set (module parameter dma_bits=) */
	__u32 dma_bits;   /* its width in bits */
	__u32 flags;      /* RESMEM_EDU_* */
	char name[32];    /* "resmem_edu0" */
	char pci_name[32];/* "0000:00:10.0" */
};
#define RESMEM_EDU_IOC_INFO _IOR('R', 32, struct resmem_edu_info)

/*
 * Binds this open file to a reserved range. Errors: EBADF (not an open file), EINVAL (not a
 * /dev/resmemN of this module, or reserved != 0), ERANGE (the device cannot reach the range: its
 * DMA mask ends below the range's last byte and no IOMMU translates for it; dmesg names the range,
 * the mask and the way out), ENODEV (the device was removed).
 */
struct resmem_edu_attach {
	__s32 resmem_fd;  /* in: an open /dev/resmemN */
	__u32 reserved;   /* in: 0 */
	__u64 phys_addr;  /* out: the range's first byte */
	__u64 size;       /* out: its bytes */
};
#define RESMEM_EDU_IOC_ATTACH _IOWR('R', 33, struct resmem_edu_attach)

/*
 * The device writes [data, data+length) of the caller's memory into the attached range at offset.
 * Returns when the last DMA command has completed (the bytes are then visible through the
 * mapping). Errors: ENOTCONN (nothing attached), EINVAL (length 0 or above RESMEM_EDU_MAX_WRITE,
 * offset+length past the range, reserved != 0), EFAULT (data not readable), ERANGE (unreachable:
 * as ATTACH), EIO (the DMA mapping failed), ETIMEDOUT (the device did not complete a command;
 * the device is then refused until the module is reloaded), EINTR (a fatal signal between two
 * commands: a prefix of the block was written), ENODEV.
 */
struct resmem_edu_write {
	__u64 data;      /* in: user address of the bytes */
	__u64 length;    /* in: bytes */
	__u64 offset;    /* in: byte offset in the attached range */
	__u32 reserved;  /* in: 0 */
	__u32 commands;  /* out: DMA commands the device ran (two per piece: in, then out) */
	__u64 dma_addr;  /* out: bus address the device wrote the first byte to */
	__u64 device_ns; /* out: from the first command to the last completion */
};
#define RESMEM_EDU_IOC_WRITE _IOWR('R', 34, struct resmem_edu_write)

/*
 * TEST (the QEMU lane's IOMMU boot): the device writes 64 bytes to a bus address that nobody
 * mapped: the attached range's physical address + offset used as if it were a bus address, the
 * bug of a driver that hands a device physical addresses behind an IOMMU. The driver then reads
 * the range back: the bytes did not land (the IOMMU blocked the write and the kernel logs a DMAR
 * fault) -> EIO, with a dmesg line; they landed -> 0 with landed = 1 (silent corruption).
 * Errors: ENOTCONN, EINVAL (offset not 64-byte aligned or past the range, reserved != 0),
 * EOPNOTSUPP (no IOMMU translates for the device: the write would land in RAM), EBUSY (that bus
 * address happens to be mapped), ENODEV.
 */
struct resmem_edu_test_unmapped {
	__u64 offset;   /* in: offset in the attached range, 64-byte aligned */
	__u32 reserved; /* in: 0 */
	__u32 landed;   /* out: 1 when the bytes reached the range anyway */
	__u64 bus_addr; /* out: the bus address the device was told */
};
#define RESMEM_EDU_IOC_TEST_UNMAPPED _IOWR('R', 40, struct resmem_edu_test_unmapped)

/*
 * TEST: faults of the device injected into this open file's WRITEs (docs/reliability.md, "faults that
 * lose nothing"). The edu device itself never fails, so the driver plays the
 * device's failures, a piece at a time (a piece: RESMEM_EDU_PIECE bytes, two commands): each piece
 * gets a fault with probability permille/1000, its kind chosen among `kinds`, every choice from a
 * splitmix64 sequence of `seed` (the same seed and writes give the same faults). Kinds:
 *   ERROR  the device reports the piece failed: WRITE stops there with EIO (a prefix of the block
 *          may have landed) and dmesg says which piece; the caller may write the block again;
 *   DROP   the device signals completion of the write into RAM without moving the bytes;
 *   FLIP   one bit of the piece changes on its way (an error the device does not see);
 *   DELAY  the piece completes 1 to 20 ms late.
 * DROP and FLIP are silent to the driver: only the reader's check of the block can see them.
 * With RESMEM_EDU_FAULTS_QUERY nothing changes and the counts come back. The faults end with the
 * file. Errors: EINVAL (permille above 1000, unknown kinds, no kind with permille > 0, unknown
 * flags, reserved != 0), ENODEV.
 */
#define RESMEM_EDU_FAULT_ERROR (1u << 0)
#define RESMEM_EDU_FAULT_DROP (1u << 1)
#define RESMEM_EDU_FAULT_FLIP (1u << 2)
#define RESMEM_EDU_FAULT_DELAY (1u << 3)
#define RESMEM_EDU_FAULT_KINDS 4 /* bits above: the order of injected[] */
#define RESMEM_EDU_FAULTS_QUERY (1u << 0) /* resmem_edu_test_faults.flags */
struct resmem_edu_test_faults {
	__u64 seed;        /* in: decides every choice */
	__u32 permille;    /* in: per piece, 0 (off) to 1000 */
	__u32 kinds;       /* in: RESMEM_EDU_FAULT_* */
	__u32 flags;       /* in: RESMEM_EDU_FAULTS_QUERY or 0 */
	__u32 reserved;    /* in: 0 */
	__u64 pieces;      /* out: pieces written since the faults were set */
	__u64 injected[RESMEM_EDU_FAULT_KINDS]; /* out: faults of each kind since then */
};
#define RESMEM_EDU_IOC_TEST_FAULTS _IOWR('R', 41, struct resmem_edu_test_faults)

#endif /* RESMEM_UAPI_RESMEM_EDU_IOCTL_H */
