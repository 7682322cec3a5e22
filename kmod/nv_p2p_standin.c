// SPDX-License-Identifier: GPL-2.0
/*
 * nv_p2p_standin: the QEMU lane's stand-in for NVIDIA's kernel driver on the GPUDirect RDMA path
 * (seed 003, NVIDIA's "Developing a Linux Kernel Module using RDMA for GPUDirect"; "the guide").
 * Its "GPU" is QEMU's ivshmem-plain PCI device (1af4:1110): BAR2, backed by host memory, is both
 * the GPU's memory and its BAR, so a peer device that DMAs to the BAR's bus addresses writes into
 * "GPU memory" for real, peer to peer through the guest's PCI address space (docs/rdma.md).
 *
 * Exported to other modules (kmod/nv_p2p_standin.h, written from the guide's section 4.3):
 * nvidia_p2p_get_pages, nvidia_p2p_put_pages, nvidia_p2p_free_page_table,
 * nvidia_p2p_dma_map_pages, nvidia_p2p_dma_unmap_pages. User space (/dev/nv_p2p_standin,
 * uapi/nv_p2p_standin_ioctl.h): an open file is a CUDA context with its tokens; ALLOC is cudaMalloc
 * (+ the tokens query), FREE is cudaFree, close is the process's exit, mmap maps an allocation's
 * BAR pages, EXPORT_DMABUF gives a dma-buf of a range.
 *
 * What it keeps from the guide, and what it cannot:
 *  - 64 KiB GPU pages (4.1); get_pages wants the address and length 64 KiB aligned, the tokens of
 *    the VA space holding the whole range (2.4: a random 64-bit p2pToken per context, a
 *    vaSpaceToken per VA space), a page table and a free callback (4.3); -EINVAL otherwise, with
 *    one dmesg line naming what was wrong and the way out.
 *  - BAR space (2.3: "The smallest available BAR size on Kepler class GPUs is 256 MB. Of that,
 *    32MB are reserved for internal use"): pins may map bar_size - bar_reserve= bytes at once (by
 *    default an eighth of the BAR is kept, the guide's 32 of 256); beyond that get_pages answers
 *    -ENOMEM, the condition lazy unpinning evicts on (2.1). A real GPU maps its memory into BAR1
 *    when pinned; here the memory is the BAR already, so a pin takes window space and maps nothing.
 *  - The free callback (3.3, 4.4): cudaFree (FREE, or close) calls the callback of every pin over
 *    the range synchronously, with no lock of the provider held, and only then frees the DMA
 *    mappings left and the range; the driver's callback waits for its DMA and frees the table with
 *    nvidia_p2p_free_page_table. put_pages on a table whose callback ran is refused with a dmesg
 *    line and counted (INFO put_after_revoke); put_pages that meets a revocation in progress
 *    (the driver decided to unpin just before the callback came) waits until that revocation's
 *    callbacks have returned and answers 0: the callback owns the table. The NVIDIA driver calls
 *    the callbacks under its own lock, which put_pages takes, and maps the "not found" that follows
 *    to 0 (kernel-open/nvidia/nv-p2p.c nv_p2p_put_pages): a driver may free its pin once put_pages
 *    returned and its callback, if one came, has returned too.
 *  - User mappings of the BAR (mmap) are shared ones (MAP_PRIVATE is refused: remap_pfn_range
 *    rewrites a private mapping's vm_pgoff, and cudaFree's unmap_mapping_range would miss it),
 *    filled page by page by a fault handler that looks the allocation up under the lock, so a
 *    mapping never outlives cudaFree whichever comes first.
 *  - Table versions: tables carry table_version= (default the guide's 0x00010001); a test sets
 *    another to check that the driver refuses a version it was not built for.
 * No pin shares BAR space with another over the same pages (a real driver maps a page once).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitmap.h>
#include <linux/dma-buf.h>
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/iommu.h>
#include <linux/kref.h>
#include <linux/ktime.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/random.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "resmem_conftest.h" /* RESMEM_HAVE_*: kmod/conftest.sh */
#include "nv_p2p_standin.h"
#include "uapi/nv_p2p_standin_ioctl.h"

#define SP_GPU_PAGE NV_P2P_STANDIN_GPU_PAGE
#define SP_BAR 2 /* ivshmem-plain: BAR0 registers, BAR2 the shared memory */

static unsigned long long bar_reserve = ~0ull;
module_param(bar_reserve, ullong, 0444);
MODULE_PARM_DESC(bar_reserve, "bytes of the BAR that pins may not map (the guide's 2.3: 32 MB of 256 MB reserved for internal use), a multiple of 64 KiB; default an eighth of the BAR");

static unsigned int revoke_delay_ms;
module_param(revoke_delay_ms, uint, 0644);
MODULE_PARM_DESC(revoke_delay_ms, "TEST: wait this long between marking a freed allocation's pins as being revoked and calling their free callbacks (a slow provider: races with unpins become reproducible)");
static unsigned int release_delay_ms;
module_param(release_delay_ms, uint, 0644);
MODULE_PARM_DESC(release_delay_ms, "TEST: wait this long after a freed allocation's free callbacks have returned before giving their share of the P2P window back (the provider's teardown goes on after the callback: a pin meanwhile can find the window full)");

static unsigned int table_version = NVIDIA_P2P_PAGE_TABLE_VERSION;
module_param(table_version, uint, 0644);
MODULE_PARM_DESC(table_version, "TEST: the version the page tables get_pages hands out carry (default 0x00010001, the guide's NVIDIA_P2P_PAGE_TABLE_VERSION); set another to check that a driver refuses a version it was not built for");

enum sp_table_state { SP_LIVE, SP_REVOKING, SP_REVOKED };

struct sp_ctx {
	struct list_head link;  /* sp_contexts */
	struct list_head allocs;
	struct address_space *mapping; /* the file's, for zapping user mappings on free */
	u64 p2p_token;
	u32 va_space_token;
};

struct sp_dev;

struct sp_alloc {
	struct kref ref; /* the context's, and one per exported dma-buf */
	struct list_head link; /* ctx->allocs, while the context holds it */
	struct list_head all;  /* sp_allocs, likewise */
	struct sp_ctx *ctx;    /* NULL once freed by the context */
	u64 generation;        /* of the device whose BAR it lies in (sp_dev.generation) */
	u64 va, len, bar_off;
	bool dying;
	int dmabufs;
};

struct sp_mapping {
	struct nvidia_p2p_dma_mapping m;
	struct list_head link; /* table->mappings */
};

struct sp_table {
	struct nvidia_p2p_page_table t; /* what the driver gets */
	struct list_head link;          /* sp_tables */
	struct list_head revoke_link;
	struct sp_alloc *alloc;
	u64 p2p_token, va, len;
	u32 va_space_token;
	enum sp_table_state state;
	bool driver_freed; /* nvidia_p2p_free_page_table came during the revocation */
	void (*free_callback)(void *data);
	void *data;
	struct nvidia_p2p_page *page_array;
	struct list_head mappings;
};

struct sp_dev {
	struct pci_dev *pdev;
	phys_addr_t phys;
	u64 size, window;
	unsigned long *bitmap; /* one bit per 64 KiB of the BAR: allocated */
	u64 pinned, allocated;
	u64 generation; /* one per probe: allocations of a device that went are told apart */
	struct miscdevice misc;
};

/* One lock for all of it: a pin is rare and short (the guide: do it as infrequently as possible). */
static DEFINE_MUTEX(sp_lock);
static struct sp_dev *sp;
static LIST_HEAD(sp_contexts);
static LIST_HEAD(sp_tables);
static LIST_HEAD(sp_allocs);
static u32 sp_next_token = 1;
static u64 sp_generation;
static u32 sp_live, sp_unfreed, sp_mappings, sp_revocations, sp_put_after_revoke, sp_dmabufs;
/* Revocations whose callbacks are being called; put_pages of a table in one waits on sp_revoke_wq. */
static u32 sp_revoking;
static DECLARE_WAIT_QUEUE_HEAD(sp_revoke_wq);

/* A context's VAs: 4 GiB per VA space from vaSpaceToken * 4 GiB, inside the guide's 40 bits (4.1). */
static u64 sp_va_base(u32 va_space_token)
{
	return (u64)va_space_token << 32;
}

static struct sp_table *sp_find_table(struct nvidia_p2p_page_table *pt)
{
	struct sp_table *t;

	list_for_each_entry(t, &sp_tables, link)
		if (&t->t == pt)
			return t;
	return NULL;
}

/* ---- the exported API (kmod/nv_p2p_standin.h) ------------------------------------------------ */

/*
 * Whether `dev` can reach [pa, pa+len) of the BAR. Without an IOMMU translating for it the bus
 * address is the physical address, and past the device's DMA mask the kernel's dma_map_resource
 * would WARN and fail (kernel/dma/direct.c dma_direct_map_resource: "DMA addr ... overflow"); the
 * NVIDIA driver answers -EIO there (the simulator's rule, mock/rdma/nv_p2p.cc). Checked first.
 */
static int sp_check_reach(struct device *dev, phys_addr_t pa, u64 len, const char *what)
{
	struct iommu_domain *dom = iommu_get_domain_for_dev(dev);
	u64 limit = min_not_zero(dma_get_mask(dev), dev->bus_dma_limit);

	if ((dom && (dom->type & __IOMMU_DOMAIN_PAGING)) || pa + len - 1 <= limit)
		return 0;
	pr_err("%s refused: BAR [mem 0x%llx-0x%llx] lies beyond %s's DMA mask 0x%llx and no IOMMU translates for it; put the BAR below the mask, use a device with a wider mask, or enable the IOMMU (-EIO)\n",
	       what, (u64)pa, (u64)pa + len - 1, dev_name(dev), limit);
	return -EIO;
}

static struct sp_alloc *sp_find_alloc(struct sp_ctx *ctx, u64 va, u64 len)
{
	struct sp_alloc *a;

	list_for_each_entry(a, &ctx->allocs, link)
		if (va >= a->va && len <= a->len && va - a->va <= a->len - len)
			return a;
	return NULL;
}

static int sp_check_pin(u64 p2p_token, u32 va_space_token, u64 va, u64 len,
			struct sp_alloc **out)
{
	struct sp_ctx *ctx;
	struct sp_alloc *a;

	if (!sp) {
		pr_err("get_pages: no GPU: no ivshmem-plain device is bound to nv_p2p_standin (-EIO)\n");
		return -EIO;
	}
	if (!len || !IS_ALIGNED(va, SP_GPU_PAGE) || !IS_ALIGNED(len, SP_GPU_PAGE)) {
		pr_err("get_pages refused: address 0x%llx or length 0x%llx not aligned to the 64 KiB GPU page (the guide's 4.3: \"Has to be aligned to 64K\"); pin whole GPU pages (-EINVAL)\n",
		       va, len);
		return -EINVAL;
	}
	list_for_each_entry(ctx, &sp_contexts, link)
		if (ctx->va_space_token == va_space_token)
			break;
	if (list_entry_is_head(ctx, &sp_contexts, link)) {
		pr_err("get_pages refused: vaSpaceToken 0x%x names no live VA space (its context exited?); query the tokens of the pointer again (cuPointerGetAttribute P2P_TOKENS) (-EINVAL)\n",
		       va_space_token);
		return -EINVAL;
	}
	if (ctx->p2p_token != p2p_token) {
		pr_err("get_pages refused: p2pToken 0x%llx is not the token of VA space 0x%x (tokens are per context and randomized, the guide's 2.4); query them again for this pointer (-EINVAL)\n",
		       p2p_token, va_space_token);
		return -EINVAL;
	}
	a = sp_find_alloc(ctx, va, len);
	if (!a || a->dying) {
		pr_err("get_pages refused: [0x%llx-0x%llx] is not inside one allocation of VA space 0x%x (freed, or allocated in another context) (-EINVAL)\n",
		       va, va + len - 1, va_space_token);
		return -EINVAL;
	}
	if (sp->pinned + len > sp->window) {
		/* A warning, not an error: a driver with lazy unpinning evicts on it (the guide's 2.1). */
		pr_warn("get_pages refused: no BAR space for P2P mappings: %llu of %llu bytes mapped by %u pins, %llu more asked; unpin ranges no longer in use (lazy unpinning evicts, the guide's 2.1) or load with a smaller bar_reserve= (-ENOMEM)\n",
		       sp->pinned, sp->window, sp_live, len);
		return -ENOMEM;
	}
	*out = a;
	return 0;
}

int nvidia_p2p_get_pages(u64 p2p_token, u32 va_space_token, u64 virtual_address, u64 length,
			 struct nvidia_p2p_page_table **page_table,
			 void (*free_callback)(void *data), void *data)
{
	struct sp_alloc *a;
	struct sp_table *t;
	u32 i, n;
	int ret;

	if (!page_table || !free_callback) {
		pr_err("get_pages refused: %s is NULL (the guide's 4.3: \"Cannot be NULL\") (-EINVAL)\n",
		       page_table ? "free_callback" : "page_table");
		return -EINVAL;
	}
	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	mutex_lock(&sp_lock);
	ret = sp_check_pin(p2p_token, va_space_token, virtual_address, length, &a);
	if (ret)
		goto fail;
	n = length / SP_GPU_PAGE;
	t->page_array = kvcalloc(n, sizeof(*t->page_array), GFP_KERNEL);
	t->t.pages = kvcalloc(n, sizeof(*t->t.pages), GFP_KERNEL);
	if (!t->page_array || !t->t.pages) {
		ret = -ENOMEM;
		goto fail;
	}
	for (i = 0; i < n; i++) {
		t->page_array[i].physical_address =
			sp->phys + a->bar_off + (virtual_address - a->va) + (u64)i * SP_GPU_PAGE;
		t->t.pages[i] = &t->page_array[i];
	}
	t->t.version = READ_ONCE(table_version);
	t->t.page_size = NVIDIA_P2P_PAGE_SIZE_64KB;
	t->t.entries = n;
	t->alloc = a;
	t->p2p_token = p2p_token;
	t->va_space_token = va_space_token;
	t->va = virtual_address;
	t->len = length;
	t->free_callback = free_callback;
	t->data = data;
	t->state = SP_LIVE;
	INIT_LIST_HEAD(&t->mappings);
	INIT_LIST_HEAD(&t->revoke_link);
	list_add(&t->link, &sp_tables);
	sp->pinned += length;
	sp_live++;
	/*
	 * Published before the lock goes: from the unlock on, a cudaFree may revoke the table and call
	 * the driver's callback, which finds its table where it asked for it (usually in its pin).
	 */
	*page_table = &t->t;
	mutex_unlock(&sp_lock);
	return 0;

fail:
	mutex_unlock(&sp_lock);
	kvfree(t->t.pages);
	kvfree(t->page_array);
	kfree(t);
	return ret;
}
EXPORT_SYMBOL_GPL(nvidia_p2p_get_pages);

static void sp_unmap_one(struct sp_mapping *m)
{
	u32 i;

	for (i = 0; i < m->m.entries; i++)
		dma_unmap_resource(&m->m.pci_dev->dev, m->m.dma_addresses[i], SP_GPU_PAGE,
				   DMA_BIDIRECTIONAL, 0);
	list_del(&m->link);
	pci_dev_put(m->m.pci_dev);
	kvfree(m->m.dma_addresses);
	kfree(m);
	sp_mappings--;
}

/* Gives back what a live table holds: its DMA mappings and its BAR window. Under sp_lock. */
static void sp_table_release(struct sp_table *t)
{
	struct sp_mapping *m, *next;

	list_for_each_entry_safe(m, next, &t->mappings, link)
		sp_unmap_one(m);
	sp->pinned -= t->len;
	sp_live--;
}

static void sp_table_free(struct sp_table *t)
{
	list_del(&t->link);
	kvfree(t->t.pages);
	kvfree(t->page_array);
	kfree(t);
}

int nvidia_p2p_put_pages(u64 p2p_token, u32 va_space_token, u64 virtual_address,
			 struct nvidia_p2p_page_table *page_table)
{
	struct sp_table *t;
	int ret = 0;

	mutex_lock(&sp_lock);
	t = sp_find_table(page_table);
	if (!t || t->state == SP_REVOKED) {
		sp_put_after_revoke++;
		pr_err("put_pages refused: page table %p is not pinned: its free callback ran (the guide's 3.3: the NVIDIA driver unmaps it, put_pages must not be called), or it was put already (-EINVAL)\n",
		       page_table);
		ret = -EINVAL;
	} else if (t->state == SP_REVOKING) {
		pr_info("put_pages of [0x%llx-0x%llx] met its revocation in progress: waiting for its free callback; the callback owns the table (0)\n",
			t->va, t->va + t->len - 1);
		/* The table may be freed when the revocation ends: it is not looked at again. */
		mutex_unlock(&sp_lock);
		wait_event(sp_revoke_wq, !READ_ONCE(sp_revoking));
		return 0;
	} else if (t->p2p_token != p2p_token || t->va_space_token != va_space_token ||
		   t->va != virtual_address) {
		pr_err("put_pages refused: tokens 0x%llx/0x%x or address 0x%llx are not those the table was pinned with (-EINVAL)\n",
		       p2p_token, va_space_token, virtual_address);
		ret = -EINVAL;
	} else {
		if (!list_empty(&t->mappings))
			pr_warn("put_pages of [0x%llx-0x%llx] with DMA mappings left: unmapped them (call nvidia_p2p_dma_unmap_pages first)\n",
				t->va, t->va + t->len - 1);
		sp_table_release(t);
		sp_table_free(t);
	}
	mutex_unlock(&sp_lock);
	return ret;
}
EXPORT_SYMBOL_GPL(nvidia_p2p_put_pages);

int nvidia_p2p_free_page_table(struct nvidia_p2p_page_table *page_table)
{
	struct sp_table *t;
	int ret = 0;

	mutex_lock(&sp_lock);
	t = sp_find_table(page_table);
	if (!t) {
		pr_err("free_page_table refused: %p is no page table of this driver (-EINVAL)\n",
		       page_table);
		ret = -EINVAL;
	} else if (t->state == SP_LIVE) {
		pr_err("free_page_table refused: [0x%llx-0x%llx] is still pinned; put_pages unpins and frees a table, free_page_table is for the free callback (the guide's 3.3) (-EINVAL)\n",
		       t->va, t->va + t->len - 1);
		ret = -EINVAL;
	} else if (t->state == SP_REVOKING) {
		t->driver_freed = true; /* freed when the revocation ends */
	} else {
		sp_unfreed--;
		sp_table_free(t);
	}
	mutex_unlock(&sp_lock);
	return ret;
}
EXPORT_SYMBOL_GPL(nvidia_p2p_free_page_table);

int nvidia_p2p_dma_map_pages(struct pci_dev *peer, struct nvidia_p2p_page_table *page_table,
			     struct nvidia_p2p_dma_mapping **dma_mapping)
{
	struct sp_mapping *m;
	struct sp_table *t;
	int ret = 0;
	u32 i = 0;

	if (!peer || !dma_mapping)
		return -EINVAL;
	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	mutex_lock(&sp_lock);
	t = sp_find_table(page_table);
	if (!t || t->state != SP_LIVE) {
		pr_err("dma_map_pages refused: %p is not a pinned page table (-EINVAL)\n", page_table);
		ret = -EINVAL;
		goto fail;
	}
	ret = sp_check_reach(&peer->dev, t->page_array[0].physical_address, t->len,
			     "dma_map_pages");
	if (ret)
		goto fail;
	m->m.dma_addresses = kvcalloc(t->t.entries, sizeof(u64), GFP_KERNEL);
	if (!m->m.dma_addresses) {
		ret = -ENOMEM;
		goto fail;
	}
	for (i = 0; i < t->t.entries; i++) {
		phys_addr_t pa = t->page_array[i].physical_address;
		dma_addr_t d = dma_map_resource(&peer->dev, pa, SP_GPU_PAGE, DMA_BIDIRECTIONAL, 0);

		if (dma_mapping_error(&peer->dev, d)) {
			pr_err("dma_map_pages: the kernel cannot map BAR page 0x%llx for %s (its DMA mask 0x%llx; without an IOMMU the bus address is the physical address) (-EIO)\n",
			       (u64)pa, pci_name(peer), dma_get_mask(&peer->dev));
			ret = -EIO;
			goto unmap;
		}
		m->m.dma_addresses[i] = d;
	}
	m->m.version = NVIDIA_P2P_DMA_MAPPING_VERSION;
	m->m.page_size = NVIDIA_P2P_PAGE_SIZE_64KB;
	m->m.entries = t->t.entries;
	m->m.pci_dev = pci_dev_get(peer);
	m->m.private = t;
	list_add(&m->link, &t->mappings);
	sp_mappings++;
	mutex_unlock(&sp_lock);
	*dma_mapping = &m->m;
	return 0;

unmap:
	while (i--)
		dma_unmap_resource(&peer->dev, m->m.dma_addresses[i], SP_GPU_PAGE,
				   DMA_BIDIRECTIONAL, 0);
fail:
	mutex_unlock(&sp_lock);
	kvfree(m->m.dma_addresses);
	kfree(m);
	return ret;
}
EXPORT_SYMBOL_GPL(nvidia_p2p_dma_map_pages);

int nvidia_p2p_dma_unmap_pages(struct pci_dev *peer, struct nvidia_p2p_page_table *page_table,
			       struct nvidia_p2p_dma_mapping *dma_mapping)
{
	struct sp_mapping *m;
	struct sp_table *t;
	int ret = -EINVAL;

	mutex_lock(&sp_lock);
	t = sp_find_table(page_table);
	if (t && t->state != SP_REVOKED) {
		list_for_each_entry(m, &t->mappings, link) {
			if (&m->m == dma_mapping && m->m.pci_dev == peer) {
				sp_unmap_one(m);
				ret = 0;
				break;
			}
		}
	}
	if (ret)
		pr_err("dma_unmap_pages refused: mapping %p is not a mapping of page table %p for %s (revoked tables' mappings are unmapped by this driver) (-EINVAL)\n",
		       dma_mapping, page_table, peer ? pci_name(peer) : "(null)");
	mutex_unlock(&sp_lock);
	return ret;
}
EXPORT_SYMBOL_GPL(nvidia_p2p_dma_unmap_pages);

/* ---- allocations and revocation ----------------------------------------------------------------- */

static void sp_alloc_release(struct kref *ref)
{
	struct sp_alloc *a = container_of(ref, struct sp_alloc, ref);

	/* The device may have gone (and another come) while a dma-buf held the range. */
	if (sp && sp->generation == a->generation) {
		bitmap_clear(sp->bitmap, a->bar_off / SP_GPU_PAGE, a->len / SP_GPU_PAGE);
		sp->allocated -= a->len;
	}
	kfree(a);
}

/*
 * cudaFree of one allocation, with sp_lock held (dropped and taken again around the callbacks):
 * every live pin over it is revoked through its free callback, in the order the guide gives
 * (4.4: the callback first, synchronously; then the NVIDIA driver unmaps), then the context lets
 * go of the memory. Returns the number of tables revoked; *callback_ns the time in callbacks.
 */
static u32 sp_free_alloc(struct sp_alloc *a, u64 *callback_ns)
{
	struct sp_table *t, *next;
	LIST_HEAD(revoking);
	u32 n = 0;

	a->dying = true;
	sp_revoking++;
	list_for_each_entry(t, &sp_tables, link) {
		if (t->alloc == a && t->state == SP_LIVE) {
			t->state = SP_REVOKING;
			list_add_tail(&t->revoke_link, &revoking);
			n++;
		}
	}
	mutex_unlock(&sp_lock);
	if (n && READ_ONCE(revoke_delay_ms))
		msleep(READ_ONCE(revoke_delay_ms));
	list_for_each_entry(t, &revoking, revoke_link) {
		ktime_t t0 = ktime_get();

		pr_info("revoking [0x%llx-0x%llx] (VA space 0x%x): calling its free callback\n", t->va,
			t->va + t->len - 1, t->va_space_token);
		t->free_callback(t->data);
		*callback_ns += ktime_to_ns(ktime_sub(ktime_get(), t0));
	}
	/*
	 * NVIDIA's driver, too, tears its side down after the callback has returned (nv-p2p.c
	 * nv_p2p_mem_info_free_callback: the callback, then the page table's platform data); the
	 * window comes back only then, and the driver whose callback ran may unpin or close before.
	 */
	if (n && READ_ONCE(release_delay_ms))
		msleep(READ_ONCE(release_delay_ms));
	mutex_lock(&sp_lock);
	list_for_each_entry_safe(t, next, &revoking, revoke_link) {
		list_del_init(&t->revoke_link);
		sp_table_release(t);
		t->state = SP_REVOKED;
		sp_revocations++;
		if (t->driver_freed) {
			sp_table_free(t);
		} else {
			sp_unfreed++;
			pr_err("revoked [0x%llx-0x%llx]: the free callback did not free its page table (nvidia_p2p_free_page_table, the guide's 3.3); it stays until unload\n",
			       t->va, t->va + t->len - 1);
		}
	}
	if (a->ctx && a->ctx->mapping)
		unmap_mapping_range(a->ctx->mapping, a->va, a->len, 1);
	sp_revoking--;
	wake_up_all(&sp_revoke_wq);
	list_del(&a->link);
	list_del(&a->all);
	a->ctx = NULL;
	kref_put(&a->ref, sp_alloc_release);
	return n;
}

/*
 * Frees every allocation on `list` (a context's, linked by .link, or sp_allocs, by .all) and
 * waits for those another thread is freeing (a context exiting while the device goes). Under
 * sp_lock.
 */
static void sp_free_list(struct list_head *list, bool global)
{
	struct sp_alloc *a, *found;
	u64 ns = 0;

	while (!list_empty(list)) {
		found = NULL;
		if (global) {
			list_for_each_entry(a, list, all)
				if (!a->dying) {
					found = a;
					break;
				}
		} else {
			list_for_each_entry(a, list, link)
				if (!a->dying) {
					found = a;
					break;
				}
		}
		if (found) {
			sp_free_alloc(found, &ns);
		} else {
			mutex_unlock(&sp_lock);
			msleep(1);
			mutex_lock(&sp_lock);
		}
	}
}

static long sp_ioctl_alloc(struct sp_ctx *ctx, void __user *uarg)
{
	struct nv_p2p_standin_alloc req;
	unsigned long pages, first;
	struct sp_alloc *a;
	long ret = 0;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (!req.length || req.reserved || req.length > (1ull << 32))
		return -EINVAL;
	a = kzalloc(sizeof(*a), GFP_KERNEL);
	if (!a)
		return -ENOMEM;
	pages = DIV_ROUND_UP(req.length, SP_GPU_PAGE);
	mutex_lock(&sp_lock);
	if (!sp) {
		ret = -ENODEV;
		goto unlock;
	}
	first = bitmap_find_next_zero_area(sp->bitmap, sp->size / SP_GPU_PAGE, 0, pages, 0);
	if (first >= sp->size / SP_GPU_PAGE) {
		pr_info("cudaMalloc of %llu bytes refused: no free run that long in the %llu-byte BAR (%llu bytes allocated) (-ENOMEM)\n",
			req.length, sp->size, sp->allocated);
		ret = -ENOMEM;
		goto unlock;
	}
	bitmap_set(sp->bitmap, first, pages);
	kref_init(&a->ref);
	a->ctx = ctx;
	a->generation = sp->generation;
	a->bar_off = (u64)first * SP_GPU_PAGE;
	a->len = (u64)pages * SP_GPU_PAGE;
	a->va = sp_va_base(ctx->va_space_token) + a->bar_off;
	list_add_tail(&a->link, &ctx->allocs);
	list_add_tail(&a->all, &sp_allocs);
	sp->allocated += a->len;
	req.va = a->va;
	req.bar_offset = a->bar_off;
	req.p2p_token = ctx->p2p_token;
	req.va_space_token = ctx->va_space_token;
	a = NULL;
unlock:
	mutex_unlock(&sp_lock);
	kfree(a);
	if (ret)
		return ret;
	return copy_to_user(uarg, &req, sizeof(req)) ? -EFAULT : 0;
}

static long sp_ioctl_free(struct sp_ctx *ctx, void __user *uarg)
{
	struct nv_p2p_standin_free req;
	struct sp_alloc *a;
	long ret = 0;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.reserved)
		return -EINVAL;
	req.callback_ns = 0;
	mutex_lock(&sp_lock);
	a = sp_find_alloc(ctx, req.va, SP_GPU_PAGE);
	if (!a || a->va != req.va || a->dying) {
		ret = -EINVAL;
	} else if (a->dmabufs) {
		pr_info("cudaFree of 0x%llx refused: %d dma-buf(s) of it still open (-EBUSY)\n",
			req.va, a->dmabufs);
		ret = -EBUSY;
	} else {
		req.revoked = sp_free_alloc(a, &req.callback_ns);
	}
	mutex_unlock(&sp_lock);
	if (ret)
		return ret;
	return copy_to_user(uarg, &req, sizeof(req)) ? -EFAULT : 0;
}

static long sp_ioctl_info(struct sp_ctx *ctx, void __user *uarg)
{
	struct nv_p2p_standin_info info;

	memset(&info, 0, sizeof(info));
	mutex_lock(&sp_lock);
	if (sp) {
		info.bar_phys = sp->phys;
		info.bar_size = sp->size;
		info.p2p_window = sp->window;
		info.pinned_bytes = sp->pinned;
		info.allocated_bytes = sp->allocated;
		strscpy(info.pci_name, pci_name(sp->pdev), sizeof(info.pci_name));
	}
	info.p2p_token = ctx->p2p_token;
	info.va_space_token = ctx->va_space_token;
	info.gpu_page_size = SP_GPU_PAGE;
	info.table_version = READ_ONCE(table_version);
	info.live_tables = sp_live;
	info.unfreed_tables = sp_unfreed;
	info.dma_mappings = sp_mappings;
	info.revocations = sp_revocations;
	info.put_after_revoke = sp_put_after_revoke;
	info.dmabufs = sp_dmabufs;
	mutex_unlock(&sp_lock);
	return copy_to_user(uarg, &info, sizeof(info)) ? -EFAULT : 0;
}

/* ---- dma-buf export ------------------------------------------------------------------------- */

struct sp_dmabuf {
	struct sp_alloc *alloc;
	u64 off, len; /* within the BAR */
};

/* The importer's bus addresses for the range, one entry per 64 KiB page (no struct pages: MMIO). */
static struct sg_table *sp_dmabuf_map(struct dma_buf_attachment *at, enum dma_data_direction dir)
{
	struct sp_dmabuf *b = at->dmabuf->priv;
	u32 n = b->len / SP_GPU_PAGE, i;
	struct scatterlist *sg;
	struct sg_table *sgt;
	phys_addr_t base;
	int ret;

	mutex_lock(&sp_lock);
	base = sp && sp->generation == b->alloc->generation ? sp->phys + b->off : 0;
	mutex_unlock(&sp_lock);
	if (!base)
		return ERR_PTR(-ENODEV); /* the GPU went while the dma-buf was open */
	ret = sp_check_reach(at->dev, base, b->len, "dma-buf map");
	if (ret)
		return ERR_PTR(ret);
	sgt = kzalloc(sizeof(*sgt), GFP_KERNEL);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	ret = sg_alloc_table(sgt, n, GFP_KERNEL);
	if (ret)
		goto free;
	for_each_sgtable_sg(sgt, sg, i) {
		phys_addr_t pa = base + (u64)i * SP_GPU_PAGE;
		dma_addr_t d = dma_map_resource(at->dev, pa, SP_GPU_PAGE, dir, 0);

		if (dma_mapping_error(at->dev, d)) {
			pr_err("dma-buf map: the kernel cannot map BAR page 0x%llx for %s (-EIO)\n",
			       (u64)pa, dev_name(at->dev));
			sgt->nents = i;
			ret = -EIO;
			goto unmap;
		}
		sg_dma_address(sg) = d;
		sg_dma_len(sg) = SP_GPU_PAGE;
	}
	return sgt;

unmap:
	for_each_sgtable_dma_sg(sgt, sg, i)
		dma_unmap_resource(at->dev, sg_dma_address(sg), SP_GPU_PAGE, dir, 0);
	sg_free_table(sgt);
free:
	kfree(sgt);
	return ERR_PTR(ret);
}

static void sp_dmabuf_unmap(struct dma_buf_attachment *at, struct sg_table *sgt,
			    enum dma_data_direction dir)
{
	struct scatterlist *sg;
	u32 i;

	for_each_sgtable_dma_sg(sgt, sg, i)
		dma_unmap_resource(at->dev, sg_dma_address(sg), sg_dma_len(sg), dir, 0);
	sg_free_table(sgt);
	kfree(sgt);
}

static void sp_dmabuf_release(struct dma_buf *dmabuf)
{
	struct sp_dmabuf *b = dmabuf->priv;

	mutex_lock(&sp_lock);
	b->alloc->dmabufs--;
	sp_dmabufs--;
	kref_put(&b->alloc->ref, sp_alloc_release);
	mutex_unlock(&sp_lock);
	kfree(b);
}

static const struct dma_buf_ops sp_dmabuf_ops = {
	.map_dma_buf = sp_dmabuf_map,
	.unmap_dma_buf = sp_dmabuf_unmap,
	.release = sp_dmabuf_release,
};

static long sp_ioctl_export(struct sp_ctx *ctx, void __user *uarg)
{
	DEFINE_DMA_BUF_EXPORT_INFO(info);
	struct nv_p2p_standin_export req;
	struct dma_buf *dmabuf;
	struct sp_dmabuf *b;
	struct sp_alloc *a;
	long ret = 0;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.reserved || !req.length || !IS_ALIGNED(req.va | req.length, SP_GPU_PAGE)) {
		pr_info("dma-buf export refused: address 0x%llx and length 0x%llx must be non-zero multiples of 64 KiB (-EINVAL)\n",
			req.va, req.length);
		return -EINVAL;
	}
	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	mutex_lock(&sp_lock);
	a = sp_find_alloc(ctx, req.va, req.length);
	if (!a || a->dying) {
		ret = -EINVAL;
		goto unlock;
	}
	b->alloc = a;
	b->off = a->bar_off + (req.va - a->va);
	b->len = req.length;
	info.ops = &sp_dmabuf_ops;
	info.size = req.length;
	info.flags = O_RDWR | O_CLOEXEC;
	info.priv = b;
	dmabuf = dma_buf_export(&info);
	if (IS_ERR(dmabuf)) {
		ret = PTR_ERR(dmabuf);
		goto unlock;
	}
	kref_get(&a->ref);
	a->dmabufs++;
	sp_dmabufs++;
	mutex_unlock(&sp_lock);
	req.fd = dma_buf_fd(dmabuf, O_CLOEXEC);
	if (req.fd < 0) {
		ret = req.fd;
		dma_buf_put(dmabuf); /* release gives back the references */
		return ret;
	}
	/* The fd is installed: a failed copy leaves it to the process, as for any fd-returning call. */
	return copy_to_user(uarg, &req, sizeof(req)) ? -EFAULT : 0;
unlock:
	mutex_unlock(&sp_lock);
	kfree(b);
	return ret;
}

/* ---- the character device: a context per open file ---------------------------------------------- */

/* VA bases (token * 4 GiB) stay below 2^40, the guide's 4.1: tokens 1 to 255. */
#define SP_MAX_TOKEN 255

/* The next vaSpaceToken no live context holds, or 0. Under sp_lock. */
static u32 sp_free_token(void)
{
	struct sp_ctx *ctx;
	int tries;

	for (tries = 0; tries < SP_MAX_TOKEN; tries++) {
		u32 t = sp_next_token;
		bool used = false;

		sp_next_token = t % SP_MAX_TOKEN + 1;
		list_for_each_entry(ctx, &sp_contexts, link)
			used |= ctx->va_space_token == t;
		if (!used)
			return t;
	}
	return 0;
}

static int sp_open(struct inode *inode, struct file *file)
{
	struct sp_ctx *ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);

	if (!ctx)
		return -ENOMEM;
	INIT_LIST_HEAD(&ctx->allocs);
	ctx->mapping = file->f_mapping;
	ctx->p2p_token = get_random_u64(); /* the guide's 2.4: "randomized" */
	mutex_lock(&sp_lock);
	ctx->va_space_token = sp_free_token();
	if (ctx->va_space_token)
		list_add(&ctx->link, &sp_contexts);
	mutex_unlock(&sp_lock);
	if (!ctx->va_space_token) {
		pr_info("open refused: all %d VA spaces are in use; close a context (-EMFILE)\n",
			SP_MAX_TOKEN);
		kfree(ctx);
		return -EMFILE;
	}
	file->private_data = ctx;
	return 0;
}

/* The process's exit: every allocation is freed as by cudaFree, pins revoked. */
static int sp_release(struct inode *inode, struct file *file)
{
	struct sp_ctx *ctx = file->private_data;

	mutex_lock(&sp_lock);
	ctx->mapping = NULL; /* the file goes: no mapping is left to zap */
	sp_free_list(&ctx->allocs, false);
	list_del(&ctx->link);
	mutex_unlock(&sp_lock);
	kfree(ctx);
	return 0;
}

static long sp_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct sp_ctx *ctx = file->private_data;
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case NV_P2P_STANDIN_IOC_INFO:
		return sp_ioctl_info(ctx, uarg);
	case NV_P2P_STANDIN_IOC_ALLOC:
		return sp_ioctl_alloc(ctx, uarg);
	case NV_P2P_STANDIN_IOC_FREE:
		return sp_ioctl_free(ctx, uarg);
	case NV_P2P_STANDIN_IOC_EXPORT_DMABUF:
		return sp_ioctl_export(ctx, uarg);
	default:
		return -ENOTTY;
	}
}

/*
 * A page of a user mapping of the BAR, on first touch: looked up under sp_lock, which cudaFree
 * holds while it zaps the mappings of what it frees (sp_free_alloc), so a page is inserted before
 * the zap or not at all (SIGBUS once the allocation is being freed).
 */
static vm_fault_t sp_fault(struct vm_fault *vmf)
{
	struct sp_ctx *ctx = vmf->vma->vm_file->private_data;
	u64 va = (u64)vmf->pgoff << PAGE_SHIFT;
	vm_fault_t ret = VM_FAULT_SIGBUS;
	struct sp_alloc *a;

	mutex_lock(&sp_lock);
	a = sp ? sp_find_alloc(ctx, va, PAGE_SIZE) : NULL;
	if (a && !a->dying)
		ret = vmf_insert_pfn(vmf->vma, vmf->address,
				     PHYS_PFN(sp->phys + a->bar_off + (va - a->va)));
	mutex_unlock(&sp_lock);
	return ret;
}

static const struct vm_operations_struct sp_vm_ops = {
	.fault = sp_fault,
};

/*
 * mmap at offset = a VA of this context: that allocation's BAR pages, uncached (gdrcopy's view),
 * shared only. Nothing is mapped here: sp_fault maps each page under the lock.
 */
static int sp_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct sp_ctx *ctx = file->private_data;
	u64 va = (u64)vma->vm_pgoff << PAGE_SHIFT, len = vma->vm_end - vma->vm_start;
	struct sp_alloc *a;
	bool found;

	if (!(vma->vm_flags & VM_SHARED)) {
		pr_info_ratelimited("mmap refused: a private (copy-on-write) mapping of GPU memory; map it MAP_SHARED (-EINVAL)\n");
		return -EINVAL;
	}
	mutex_lock(&sp_lock);
	a = sp ? sp_find_alloc(ctx, va, len) : NULL;
	found = a && !a->dying;
	mutex_unlock(&sp_lock);
	if (!found) {
		pr_info_ratelimited("mmap refused: [0x%llx-0x%llx] is not inside one allocation of this context (-EINVAL)\n",
				    va, va + len - 1);
		return -EINVAL;
	}
	vma->vm_page_prot = pgprot_noncached(vma->vm_page_prot);
#ifdef RESMEM_HAVE_VM_FLAGS_SET
	vm_flags_set(vma, VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP);
#else
	vma->vm_flags |= VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP;
#endif
	vma->vm_ops = &sp_vm_ops;
	return 0;
}

static const struct file_operations sp_fops = {
	.owner = THIS_MODULE,
	.open = sp_open,
	.release = sp_release,
	.unlocked_ioctl = sp_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = sp_mmap,
	.llseek = noop_llseek,
};

/* ---- PCI driver --------------------------------------------------------------------------------- */

static int sp_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct sp_dev *d;
	u64 reserve;
	int ret;

	if (READ_ONCE(sp)) {
		pr_err("%s: one ivshmem-plain is this driver's GPU already; left alone (-EBUSY)\n",
		       pci_name(pdev));
		return -EBUSY;
	}
	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return -ENOMEM;
	d->pdev = pdev;
	ret = pci_enable_device(pdev);
	if (ret)
		goto free;
	ret = pci_request_region(pdev, SP_BAR, "nv_p2p_standin");
	if (ret) {
		pr_err("%s: BAR%d is taken (%d)\n", pci_name(pdev), SP_BAR, ret);
		goto disable;
	}
	d->phys = pci_resource_start(pdev, SP_BAR);
	d->size = pci_resource_len(pdev, SP_BAR);
	reserve = bar_reserve == ~0ull ? d->size / 8 : bar_reserve;
	if (d->size < 2 * SP_GPU_PAGE || !IS_ALIGNED(d->size, SP_GPU_PAGE) ||
	    !IS_ALIGNED(reserve, SP_GPU_PAGE) || reserve >= d->size) {
		pr_err("%s: BAR%d of %llu bytes with bar_reserve=%llu: need a BAR of at least 128 KiB in 64 KiB pages and a reserve of whole 64 KiB pages smaller than it (-EINVAL)\n",
		       pci_name(pdev), SP_BAR, d->size, reserve);
		ret = -EINVAL;
		goto release;
	}
	d->window = d->size - reserve;
	d->bitmap = bitmap_zalloc(d->size / SP_GPU_PAGE, GFP_KERNEL);
	if (!d->bitmap) {
		ret = -ENOMEM;
		goto release;
	}
	d->misc.minor = MISC_DYNAMIC_MINOR;
	d->misc.name = "nv_p2p_standin";
	d->misc.fops = &sp_fops;
	d->misc.mode = 0600;
	mutex_lock(&sp_lock);
	d->generation = ++sp_generation;
	sp = d;
	mutex_unlock(&sp_lock);
	ret = misc_register(&d->misc);
	if (ret)
		goto unset;
	pci_set_drvdata(pdev, d);
	pr_info("%s: GPU memory and BAR: ivshmem-plain BAR%d [mem 0x%llx-0x%llx] (%llu MiB), %llu MiB of it for P2P pins (bar_reserve %llu MiB), 64 KiB GPU pages, page table version 0x%08x\n",
		pci_name(pdev), SP_BAR, (u64)d->phys, (u64)d->phys + d->size - 1, d->size >> 20,
		d->window >> 20, reserve >> 20, table_version);
	return 0;

unset:
	mutex_lock(&sp_lock);
	sp = NULL;
	mutex_unlock(&sp_lock);
	bitmap_free(d->bitmap);
release:
	pci_release_region(pdev, SP_BAR);
disable:
	pci_disable_device(pdev);
free:
	kfree(d);
	return ret;
}

/* The GPU goes (unbind, unload): every allocation of every context is freed, pins revoked. */
static void sp_remove(struct pci_dev *pdev)
{
	struct sp_dev *d = pci_get_drvdata(pdev);

	misc_deregister(&d->misc);
	mutex_lock(&sp_lock);
	sp_free_list(&sp_allocs, true);
	sp = NULL;
	mutex_unlock(&sp_lock);
	bitmap_free(d->bitmap);
	pci_release_region(pdev, SP_BAR);
	pci_disable_device(pdev);
	kfree(d);
}

static const struct pci_device_id sp_ids[] = {
	{ PCI_DEVICE(0x1af4, 0x1110) }, /* QEMU's ivshmem-plain (hw/misc/ivshmem.c) */
	{ }
};

static struct pci_driver sp_driver = {
	.name = "nv_p2p_standin",
	.id_table = sp_ids,
	.probe = sp_probe,
	.remove = sp_remove,
};

static int __init sp_init(void)
{
	return pci_register_driver(&sp_driver);
}

static void __exit sp_exit(void)
{
	struct sp_table *t, *next;

	pci_unregister_driver(&sp_driver);
	/* Tables whose free callback did not free them (counted in INFO unfreed_tables). */
	list_for_each_entry_safe(t, next, &sp_tables, link)
		sp_table_free(t);
}

module_init(sp_init);
module_exit(sp_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Stand-in for NVIDIA's GPUDirect RDMA kernel API over QEMU's ivshmem-plain BAR (test lane)");
/* The dma-buf exports live in a symbol namespace; 6.13 names it by a string literal. */
#ifdef RESMEM_HAVE_MODULE_IMPORT_NS_IDENT
MODULE_IMPORT_NS(DMA_BUF);
#else
MODULE_IMPORT_NS("DMA_BUF");
#endif
