/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel interface of GPUDirect RDMA as seed 003 describes it (NVIDIA's "Developing a Linux
 * Kernel Module using RDMA for GPUDirect", TB-06712-001 v5.5, July 2013, section 4.3 "Kernel API";
 * "the guide" below), written from the guide's text for the project's stand-in provider
 * (kmod/nv_p2p_standin.c) and its user (kmod/resmem_edu_p2p.c). It is not NVIDIA's nv-p2p.h: a
 * driver built against this header calls the stand-in, and one built against NVIDIA's calls
 * nvidia.ko; the names are the guide's so that the driver's code reads as it would against the
 * real one.
 *
 * What the guide gives, kept as it says:
 *  - struct nvidia_p2p_page: physical_address is "the only field relevant" (4.3); the Fermi
 *    request registers are kept as the guide lays them out.
 *  - struct nvidia_p2p_page_table {version, page_size, pages, entries} and
 *    NVIDIA_P2P_PAGE_TABLE_VERSION 0x00010001 ("should be compared to
 *    NVIDIA_P2P_PAGE_TABLE_VERSION before accessing the other fields").
 *  - nvidia_p2p_get_pages / put_pages / free_page_table with the guide's parameters and errnos:
 *    0, -EINVAL (invalid argument), -ENOTSUPP, -ENOMEM (insufficient resources: BAR space),
 *    -EIO (unknown error). The virtual address "has to be aligned to 64K"; GPU pages are 64 KiB
 *    (4.1).
 *  - the free callback: "invoked synchronously"; the driver's callback waits for its transfers and
 *    frees the table with nvidia_p2p_free_page_table; put_pages is not called afterwards (3.3, 4.4).
 *
 * What the guide does not give and the stand-in defines (said where it is used):
 *  - what page_size holds: the guide says "the GPU page size"; here a code,
 *    NVIDIA_P2P_PAGE_SIZE_64KB, with nvidia_p2p_page_size_bytes() to turn it into bytes.
 *  - the version compatibility rule: same major half, the table's minor at least the reader's
 *    (the same rule as the simulator's mock/rdma/nv_p2p.h PageTableVersionCompatible).
 *  - nvidia_p2p_dma_map_pages / nvidia_p2p_dma_unmap_pages and struct nvidia_p2p_dma_mapping: not
 *    in the 2013 guide (the device got the physical addresses; 2.2: the IOMMU must be off). The
 *    stand-in maps each GPU page for the peer device with the kernel's dma_map_resource, so the
 *    device gets bus addresses the DMA API gave it, with or without an IOMMU.
 *    NVIDIA_P2P_DMA_MAPPING_VERSION is the stand-in's own number, not NVIDIA's.
 */
#ifndef RESMEM_KMOD_NV_P2P_STANDIN_H
#define RESMEM_KMOD_NV_P2P_STANDIN_H

#include <linux/types.h>

struct pci_dev;

/* The guide, 4.3. */
#define NVIDIA_P2P_PAGE_TABLE_VERSION 0x00010001
/* The stand-in's (not in the guide). */
#define NVIDIA_P2P_DMA_MAPPING_VERSION 0x00010000

#define NVIDIA_P2P_MAJOR_VERSION(v) ((v) >> 16)
#define NVIDIA_P2P_MINOR_VERSION(v) ((v) & 0xffff)
/* A structure of version v may be read by code built against version built. */
#define NVIDIA_P2P_VERSION_COMPATIBLE(v, built)                                   \
	(NVIDIA_P2P_MAJOR_VERSION(v) == NVIDIA_P2P_MAJOR_VERSION(built) &&        \
	 NVIDIA_P2P_MINOR_VERSION(v) >= NVIDIA_P2P_MINOR_VERSION(built))
#define NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE(t) \
	NVIDIA_P2P_VERSION_COMPATIBLE((t)->version, NVIDIA_P2P_PAGE_TABLE_VERSION)
#define NVIDIA_P2P_DMA_MAPPING_VERSION_COMPATIBLE(m) \
	NVIDIA_P2P_VERSION_COMPATIBLE((m)->version, NVIDIA_P2P_DMA_MAPPING_VERSION)

/* page_size codes (the guide: "the GPU page size"; 4.1: 64 KiB on Kepler). */
enum nvidia_p2p_page_size_type {
	NVIDIA_P2P_PAGE_SIZE_4KB = 0,
	NVIDIA_P2P_PAGE_SIZE_64KB = 1,
	NVIDIA_P2P_PAGE_SIZE_128KB = 2,
	NVIDIA_P2P_PAGE_SIZE_COUNT
};

static inline u64 nvidia_p2p_page_size_bytes(u32 code)
{
	switch (code) {
	case NVIDIA_P2P_PAGE_SIZE_4KB:
		return 4096;
	case NVIDIA_P2P_PAGE_SIZE_64KB:
		return 65536;
	case NVIDIA_P2P_PAGE_SIZE_128KB:
		return 131072;
	default:
		return 0;
	}
}

typedef struct nvidia_p2p_page {
	u64 physical_address;
	union nvidia_p2p_request_registers {
		struct {
			u32 wreqmb_h;
			u32 rreqmb_h;
			u32 rreqmb_0;
			u32 reserved[3];
		} fermi;
	} registers;
} nvidia_p2p_page_t;

typedef struct nvidia_p2p_page_table {
	u32 version;
	u32 page_size; /* enum nvidia_p2p_page_size_type */
	struct nvidia_p2p_page **pages;
	u32 entries;
} nvidia_p2p_page_table_t;

/* One bus address per GPU page of a table, for one peer device. */
typedef struct nvidia_p2p_dma_mapping {
	u32 version;
	u32 page_size; /* enum nvidia_p2p_page_size_type */
	u32 entries;
	u64 *dma_addresses;
	void *private; /* the provider's */
	struct pci_dev *pci_dev;
} nvidia_p2p_dma_mapping_t;

int nvidia_p2p_get_pages(u64 p2p_token, u32 va_space_token, u64 virtual_address, u64 length,
			 struct nvidia_p2p_page_table **page_table,
			 void (*free_callback)(void *data), void *data);
int nvidia_p2p_put_pages(u64 p2p_token, u32 va_space_token, u64 virtual_address,
			 struct nvidia_p2p_page_table *page_table);
int nvidia_p2p_free_page_table(struct nvidia_p2p_page_table *page_table);
int nvidia_p2p_dma_map_pages(struct pci_dev *peer, struct nvidia_p2p_page_table *page_table,
			     struct nvidia_p2p_dma_mapping **dma_mapping);
int nvidia_p2p_dma_unmap_pages(struct pci_dev *peer, struct nvidia_p2p_page_table *page_table,
			       struct nvidia_p2p_dma_mapping *dma_mapping);

#endif /* RESMEM_KMOD_NV_P2P_STANDIN_H */
