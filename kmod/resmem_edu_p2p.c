// SPDX-License-Identifier: GPL-2.0
/*
 * resmem_edu's GPUDirect RDMA part (included by kmod/resmem_edu.c; uapi/resmem_edu_p2p_ioctl.h):
 * the edu device writes into "GPU memory" peer to peer, the way seed 003's guide has a third-party
 * driver do it, and into a dma-buf imported from user space (docs/rdma.md).
 *
 * Built and loaded without NVIDIA's driver: the nvidia_p2p_* calls are resolved when a file first
 * asks for P2P, with symbol_get (no link-time reference: resmem_edu.ko has no undefined symbol
 * and modpost wants no Module.symvers of nvidia.ko), and given back with symbol_put when the file
 * closes. Whichever module exports them answers: nvidia.ko on a real machine, the lane's
 * kmod/nv_p2p_standin.ko in the guest; while a file holds them that module cannot unload. None
 * loaded: ENOPKG and one dmesg line saying what to load.
 *
 * Per open file, as the guide writes it:
 *  - pin (get_pages), check the table's version before reading it (4.3) and its GPU page size,
 *    map it for the device (dma_map_pages), keep it in an LRU cache for the next transfer to the
 *    same range (2.1, lazy unpinning); when get_pages answers ENOMEM (BAR full) unpin the least
 *    recently used pins and try again. Counted: pins, hits, evictions, unpins, revocations, time.
 *  - the free callback (3.3, 4.4): marks the pin revoked, waits for the DMA command in flight
 *    (a transfer checks the mark before each piece and stops with ECANCELED), frees the table
 *    with nvidia_p2p_free_page_table, and never calls put_pages on it afterwards.
 *  - An unpin that races with it: the pin is "in flight" across dma_unmap_pages only (the callback
 *    waits for that), then put_pages is called unless the callback has marked the pin. The
 *    provider answers a put_pages that meets a revocation in progress once its callbacks have
 *    returned (as the NVIDIA driver's lock orders them), so when put_pages returns, a callback
 *    that came is over, and the pin is freed only after it: the callback never runs on a freed
 *    pin. (The callback must therefore not wait for the unpin's put_pages: it would deadlock.)
 */
#include <linux/dma-buf.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/sizes.h>
#include <linux/spinlock.h>
#include <linux/wait.h>

#include "nv_p2p_standin.h"
#include "uapi/resmem_edu_p2p_ioctl.h"

/* The provider's calls, as symbol_get found them. */
struct edu_p2p_api {
	typeof(&nvidia_p2p_get_pages) get_pages;
	typeof(&nvidia_p2p_put_pages) put_pages;
	typeof(&nvidia_p2p_free_page_table) free_page_table;
	typeof(&nvidia_p2p_dma_map_pages) dma_map_pages;
	typeof(&nvidia_p2p_dma_unmap_pages) dma_unmap_pages;
};

struct edu_p2p_pin {
	struct list_head lru; /* edu_p2p.lru, most recently used first */
	struct edu_p2p *owner;
	u64 p2p_token, va, len;
	u32 va_space_token;
	struct nvidia_p2p_page_table *table;
	struct nvidia_p2p_dma_mapping *mapping;
	spinlock_t lock;   /* guards the three flags */
	bool revoked;      /* the free callback came: table and mapping are the provider's now */
	bool inflight;     /* the device is using the mapping, or an unpin is under way */
	bool cb_done;      /* the free callback returned: the pin may be freed */
	wait_queue_head_t wq;
};

/* One open file's P2P state (edu_client.p2p); guarded by the device's lock. */
struct edu_p2p {
	struct edu_dev *edu;
	struct edu_p2p_api api;
	struct list_head lru;
	u64 pins, hits, evictions, unpins, pin_ns, unpin_ns;
	atomic64_t revoked;
};

static bool edu_p2p_flag(struct edu_p2p_pin *pin, bool *flag)
{
	bool v;

	spin_lock(&pin->lock);
	v = *flag;
	spin_unlock(&pin->lock);
	return v;
}

/* Marks the pin in use unless the callback revoked it; false when revoked. */
static bool edu_p2p_begin(struct edu_p2p_pin *pin)
{
	bool ok;

	spin_lock(&pin->lock);
	ok = !pin->revoked;
	if (ok)
		pin->inflight = true;
	spin_unlock(&pin->lock);
	return ok;
}

static void edu_p2p_end(struct edu_p2p_pin *pin)
{
	spin_lock(&pin->lock);
	pin->inflight = false;
	wake_up(&pin->wq);
	spin_unlock(&pin->lock);
}

/* The guide's free callback (3.3): stop, wait, free the table, never put_pages afterwards. */
static void edu_p2p_free_callback(void *data)
{
	struct edu_p2p_pin *pin = data;
	struct edu_p2p *p = pin->owner;
	ktime_t t0 = ktime_get();
	bool busy;
	int ret;

	spin_lock(&pin->lock);
	pin->revoked = true;
	busy = pin->inflight;
	spin_unlock(&pin->lock);
	wait_event(pin->wq, !edu_p2p_flag(pin, &pin->inflight));
	ret = p->api.free_page_table(pin->table);
	atomic64_inc(&p->revoked);
	pr_info("%s: free callback for GPU range [0x%llx-0x%llx]: %s, waited %lld us; page table freed (%d), put_pages will not be called for it\n",
		p->edu->name, pin->va, pin->va + pin->len - 1,
		busy ? "a DMA command was in flight, the transfer stops after it" : "no DMA in flight",
		ktime_to_us(ktime_sub(ktime_get(), t0)), ret);
	spin_lock(&pin->lock);
	pin->cb_done = true;
	wake_up(&pin->wq); /* under the lock: the owner frees the pin only after taking it */
	spin_unlock(&pin->lock);
}

/* ---- the provider's calls ------------------------------------------------------------------- */

static void edu_p2p_api_put(struct edu_p2p_api *api)
{
	if (api->get_pages)
		symbol_put(nvidia_p2p_get_pages);
	if (api->put_pages)
		symbol_put(nvidia_p2p_put_pages);
	if (api->free_page_table)
		symbol_put(nvidia_p2p_free_page_table);
	if (api->dma_map_pages)
		symbol_put(nvidia_p2p_dma_map_pages);
	if (api->dma_unmap_pages)
		symbol_put(nvidia_p2p_dma_unmap_pages);
	memset(api, 0, sizeof(*api));
}

static int edu_p2p_api_get(struct edu_dev *edu, struct edu_p2p_api *api)
{
	api->get_pages = symbol_get(nvidia_p2p_get_pages);
	api->put_pages = symbol_get(nvidia_p2p_put_pages);
	api->free_page_table = symbol_get(nvidia_p2p_free_page_table);
	api->dma_map_pages = symbol_get(nvidia_p2p_dma_map_pages);
	api->dma_unmap_pages = symbol_get(nvidia_p2p_dma_unmap_pages);
	if (api->get_pages && api->put_pages && api->free_page_table && api->dma_map_pages &&
	    api->dma_unmap_pages)
		return 0;
	edu_p2p_api_put(api);
	pr_err("%s: GPUDirect RDMA unavailable: no loaded module exports nvidia_p2p_get_pages/put_pages/free_page_table/dma_map_pages/dma_unmap_pages; load NVIDIA's driver (nvidia.ko), or nv_p2p_standin.ko in the QEMU lane (-ENOPKG)\n",
	       edu->name);
	return -ENOPKG;
}

/* The file's P2P state, created (and the provider's calls resolved) on first use. */
static int edu_p2p_state(struct edu_client *c, struct edu_p2p **out)
{
	struct edu_p2p *p = c->p2p;
	int ret;

	if (!p) {
		p = kzalloc(sizeof(*p), GFP_KERNEL);
		if (!p)
			return -ENOMEM;
		ret = edu_p2p_api_get(c->edu, &p->api);
		if (ret) {
			kfree(p);
			return ret;
		}
		p->edu = c->edu;
		INIT_LIST_HEAD(&p->lru);
		atomic64_set(&p->revoked, 0);
		c->p2p = p;
	}
	*out = p;
	return 0;
}

/* ---- pins and the cache (under edu->lock) --------------------------------------------------- */

/*
 * Gives a pin back unless the free callback took it: its DMA mapping (if mapped) while in flight,
 * so a callback that comes meanwhile waits; then put_pages, unless the callback has marked the
 * pin by now. put_pages returns only after a callback that met it has returned.
 */
static void edu_p2p_unpin(struct edu_p2p *p, struct edu_p2p_pin *pin, bool mapped)
{
	ktime_t t0 = ktime_get();

	if (!edu_p2p_begin(pin))
		return;
	if (mapped)
		p->api.dma_unmap_pages(p->edu->pdev, pin->table, pin->mapping);
	edu_p2p_end(pin);
	if (!edu_p2p_flag(pin, &pin->revoked))
		p->api.put_pages(pin->p2p_token, pin->va_space_token, pin->va, pin->table);
	p->unpin_ns += ktime_to_ns(ktime_sub(ktime_get(), t0));
	p->unpins++;
}

/* Frees a pin once no callback can use it: after its unpin, and after a callback that came. */
static void edu_p2p_free_pin(struct edu_p2p_pin *pin)
{
	if (edu_p2p_flag(pin, &pin->revoked))
		wait_event(pin->wq, edu_p2p_flag(pin, &pin->cb_done));
	kfree(pin);
}

/* Unpins (unless the callback took it) and frees a cached pin. */
static void edu_p2p_drop(struct edu_p2p *p, struct edu_p2p_pin *pin)
{
	edu_p2p_unpin(p, pin, true);
	list_del(&pin->lru);
	edu_p2p_free_pin(pin);
}

/* Frees the pins whose free callback has returned. */
static void edu_p2p_reap(struct edu_p2p *p)
{
	struct edu_p2p_pin *pin, *next;

	list_for_each_entry_safe(pin, next, &p->lru, lru) {
		if (edu_p2p_flag(pin, &pin->cb_done)) {
			list_del(&pin->lru);
			kfree(pin);
		}
	}
}

static int edu_p2p_check_table(struct edu_dev *edu, struct edu_p2p_pin *pin)
{
	struct nvidia_p2p_page_table *t = pin->table;

	if (!NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE(t)) {
		pr_err("%s: refusing the page table of GPU range [0x%llx-0x%llx]: version 0x%08x, this driver was built against 0x%08x (same major, minor at least: the guide's 4.3 says compare before reading the table); rebuild it against the running driver's header (-EINVAL)\n",
		       edu->name, pin->va, pin->va + pin->len - 1, t->version,
		       NVIDIA_P2P_PAGE_TABLE_VERSION);
		return -EINVAL;
	}
	if (t->page_size != NVIDIA_P2P_PAGE_SIZE_64KB || (u64)t->entries * SZ_64K != pin->len) {
		pr_err("%s: refusing the page table of GPU range [0x%llx-0x%llx]: page size code %u, %u entries; this driver handles 64 KiB GPU pages covering the range (-EINVAL)\n",
		       edu->name, pin->va, pin->va + pin->len - 1, t->page_size, t->entries);
		return -EINVAL;
	}
	return 0;
}

/* get_pages, evicting the least recently used unused pins while the BAR is full. */
static int edu_p2p_get_pages(struct edu_p2p *p, struct edu_p2p_pin *pin, bool cache, u32 *evicted)
{
	int ret;

	for (;;) {
		ret = p->api.get_pages(pin->p2p_token, pin->va_space_token, pin->va, pin->len,
				       &pin->table, edu_p2p_free_callback, pin);
		if (ret != -ENOMEM || !cache || list_empty(&p->lru))
			return ret;
		pr_info("%s: BAR full pinning [0x%llx-0x%llx]: unpinning the least recently used pin [0x%llx-0x%llx] (lazy unpinning)\n",
			p->edu->name, pin->va, pin->va + pin->len - 1,
			list_last_entry(&p->lru, struct edu_p2p_pin, lru)->va,
			list_last_entry(&p->lru, struct edu_p2p_pin, lru)->va +
				list_last_entry(&p->lru, struct edu_p2p_pin, lru)->len - 1);
		edu_p2p_drop(p, list_last_entry(&p->lru, struct edu_p2p_pin, lru));
		p->evictions++;
		(*evicted)++;
	}
}

/* A pin of [va, va+len) with these tokens: from the cache, or new (and cached unless told not). */
static int edu_p2p_pin(struct edu_p2p *p, const struct resmem_edu_p2p_write *req, bool cache,
		       struct edu_p2p_pin **out, u64 *pin_ns, u32 *evicted)
{
	struct edu_p2p_pin *pin;
	u64 evict_ns;
	ktime_t t0;
	int ret;

	edu_p2p_reap(p);
	if (cache) {
		list_for_each_entry(pin, &p->lru, lru) {
			if (pin->va == req->va && pin->len == req->length &&
			    pin->p2p_token == req->p2p_token &&
			    pin->va_space_token == req->va_space_token &&
			    !edu_p2p_flag(pin, &pin->revoked)) {
				list_move(&pin->lru, &p->lru);
				p->hits++;
				*out = pin;
				return 1;
			}
		}
	}
	pin = kzalloc(sizeof(*pin), GFP_KERNEL);
	if (!pin)
		return -ENOMEM;
	pin->owner = p;
	pin->p2p_token = req->p2p_token;
	pin->va_space_token = req->va_space_token;
	pin->va = req->va;
	pin->len = req->length;
	spin_lock_init(&pin->lock);
	init_waitqueue_head(&pin->wq);
	INIT_LIST_HEAD(&pin->lru);
	t0 = ktime_get();
	evict_ns = p->unpin_ns;
	ret = edu_p2p_get_pages(p, pin, cache, evicted);
	evict_ns = p->unpin_ns - evict_ns; /* counted as unpin time, not pin time */
	if (ret) {
		pr_info("%s: nvidia_p2p_get_pages of [0x%llx-0x%llx] failed (%d): the provider's line above says why\n",
			p->edu->name, req->va, req->va + req->length - 1, ret);
		kfree(pin);
		return ret;
	}
	p->pins++;
	ret = edu_p2p_check_table(p->edu, pin);
	if (!ret) {
		ret = p->api.dma_map_pages(p->edu->pdev, pin->table, &pin->mapping);
		if (!ret && (!NVIDIA_P2P_DMA_MAPPING_VERSION_COMPATIBLE(pin->mapping) ||
			     pin->mapping->entries != pin->table->entries)) {
			pr_err("%s: refusing the DMA mapping of [0x%llx-0x%llx]: version 0x%08x (built against 0x%08x), %u entries for %u pages (-EINVAL)\n",
			       p->edu->name, pin->va, pin->va + pin->len - 1, pin->mapping->version,
			       NVIDIA_P2P_DMA_MAPPING_VERSION, pin->mapping->entries,
			       pin->table->entries);
			p->api.dma_unmap_pages(p->edu->pdev, pin->table, pin->mapping);
			ret = -EINVAL;
		}
	}
	*pin_ns = ktime_to_ns(ktime_sub(ktime_get(), t0)) - evict_ns;
	p->pin_ns += *pin_ns;
	if (ret) {
		/* Not used: give it back (a callback that came meanwhile frees it instead). */
		edu_p2p_unpin(p, pin, false);
		edu_p2p_free_pin(pin);
		return ret;
	}
	list_add(&pin->lru, &p->lru);
	*out = pin;
	return 0;
}

/* ---- the transfers ---------------------------------------------------------------------------- */

/* One edu piece: the caller's bytes -> staging -> the device's buffer -> bus address bus. */
static int edu_p2p_piece(struct edu_dev *edu, const void __user *from, u64 bus, u32 n)
{
	int ret;

	if (copy_from_user(edu->staging, from, n))
		return -EFAULT;
	ret = edu_dma(edu, edu->staging_dma, EDU_BUF_ADDR, n, EDU_CMD_RAM_TO_DEVICE);
	if (!ret)
		ret = edu_dma(edu, EDU_BUF_ADDR, bus, n, EDU_CMD_DEVICE_TO_RAM);
	return ret;
}

static int edu_p2p_transfer(struct edu_p2p *p, struct edu_p2p_pin *pin,
			    struct resmem_edu_p2p_write *req)
{
	struct edu_dev *edu = p->edu;
	ktime_t t0 = ktime_get();
	int ret = 0;

	while (req->written < req->data_len) {
		u64 off = req->offset + req->written;
		u64 within = off & (SZ_64K - 1);
		u32 n = min_t(u64, min_t(u64, req->data_len - req->written, EDU_PIECE),
			      SZ_64K - within);
		u64 bus;

		if (!edu_p2p_begin(pin)) {
			pr_info("%s: transfer into GPU range [0x%llx-0x%llx] stopped after %llu of %llu bytes: the range was revoked (its free callback ran) (-ECANCELED)\n",
				edu->name, pin->va, pin->va + pin->len - 1, req->written,
				req->data_len);
			ret = -ECANCELED;
			break;
		}
		if (req->flags & RESMEM_EDU_P2P_PHYS_ADDR) /* TEST: the guide's 2013 way */
			bus = pin->table->pages[off >> 16]->physical_address + within;
		else
			bus = pin->mapping->dma_addresses[off >> 16] + within;
		if (!req->commands)
			req->bus_addr = bus;
		ret = edu_p2p_piece(edu, u64_to_user_ptr(req->data + req->written), bus, n);
		edu_p2p_end(pin);
		if (ret)
			break;
		req->commands += 2;
		req->written += n;
		if (req->written < req->data_len && fatal_signal_pending(current)) {
			ret = -EINTR;
			break;
		}
	}
	req->device_ns = ktime_to_ns(ktime_sub(ktime_get(), t0));
	return ret;
}

static long edu_p2p_ioctl_write(struct edu_client *c, void __user *uarg)
{
	struct edu_dev *edu = c->edu;
	struct resmem_edu_p2p_write req;
	struct edu_p2p_pin *pin;
	struct edu_p2p *p;
	u64 unpin_before;
	bool cache;
	long ret;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.flags & ~(RESMEM_EDU_P2P_NO_CACHE | RESMEM_EDU_P2P_PHYS_ADDR) ||
	    req.data_len > RESMEM_EDU_MAX_WRITE || !req.length || req.offset > req.length || req.data_len > req.length - req.offset) {
		pr_info_ratelimited("%s: P2P write refused: flags 0x%x, %llu bytes at offset 0x%llx of a %llu-byte range (at most %u bytes, inside the range) (-EINVAL)\n",
				    edu->name, req.flags, req.data_len, req.offset, req.length,
				    RESMEM_EDU_MAX_WRITE);
		return -EINVAL;
	}
	cache = !(req.flags & RESMEM_EDU_P2P_NO_CACHE);
	req.bus_addr = req.phys_addr = req.pin_ns = req.unpin_ns = req.device_ns = 0;
	req.written = 0;
	req.commands = req.hit = req.evicted = 0;
	if (mutex_lock_interruptible(&edu->lock))
		return -EINTR;
	ret = edu->gone ? -ENODEV : edu->broken ? -EIO : edu_p2p_state(c, &p);
	if (ret)
		goto unlock;
	unpin_before = p->unpin_ns;
	ret = edu_p2p_pin(p, &req, cache, &pin, &req.pin_ns, &req.evicted);
	if (ret < 0)
		goto unlock;
	req.hit = ret;
	ret = 0;
	/* The table is read only while the pin is held against the free callback. */
	if (edu_p2p_begin(pin)) {
		struct nvidia_p2p_page_table *t = pin->table;
		u64 page = min_t(u64, req.offset, req.length - 1) >> 16;

		req.table_version = t->version;
		req.page_size = t->page_size;
		req.entries = t->entries;
		req.phys_addr = t->pages[page]->physical_address + (req.offset & 0xffff);
		if (!req.data_len)
			req.bus_addr = pin->mapping->dma_addresses[page] + (req.offset & 0xffff);
		edu_p2p_end(pin);
		ret = edu_p2p_transfer(p, pin, &req);
	} else {
		pr_info("%s: GPU range [0x%llx-0x%llx] was revoked before the transfer began (-ECANCELED)\n",
			edu->name, pin->va, pin->va + pin->len - 1);
		ret = -ECANCELED;
	}
	if (!cache)
		edu_p2p_drop(p, pin);
	req.unpin_ns = p->unpin_ns - unpin_before;
unlock:
	mutex_unlock(&edu->lock);
	if (ret && ret != -ECANCELED)
		return ret;
	if (copy_to_user(uarg, &req, sizeof(req)))
		return -EFAULT;
	return ret;
}

static long edu_p2p_ioctl_stats(struct edu_client *c, void __user *uarg)
{
	struct resmem_edu_p2p_stats s;
	struct edu_p2p_pin *pin;
	struct edu_p2p *p;

	memset(&s, 0, sizeof(s));
	mutex_lock(&c->edu->lock);
	p = c->p2p;
	if (p) {
		edu_p2p_reap(p);
		s.pins = p->pins;
		s.hits = p->hits;
		s.evictions = p->evictions;
		s.unpins = p->unpins;
		s.revoked = atomic64_read(&p->revoked);
		s.pin_ns = p->pin_ns;
		s.unpin_ns = p->unpin_ns;
		list_for_each_entry(pin, &p->lru, lru) {
			if (!edu_p2p_flag(pin, &pin->revoked)) {
				s.cached++;
				s.cached_bytes += pin->len;
			}
		}
	}
	mutex_unlock(&c->edu->lock);
	return copy_to_user(uarg, &s, sizeof(s)) ? -EFAULT : 0;
}

static long edu_p2p_flush(struct edu_p2p *p)
{
	long n = 0;

	while (!list_empty(&p->lru)) {
		edu_p2p_drop(p, list_first_entry(&p->lru, struct edu_p2p_pin, lru));
		n++;
	}
	return n;
}

/* ---- dma-buf import ----------------------------------------------------------------------------- */

static long edu_p2p_ioctl_dmabuf(struct edu_client *c, void __user *uarg)
{
	struct edu_dev *edu = c->edu;
	struct resmem_edu_dmabuf_write req;
	struct dma_buf_attachment *at;
	struct dma_buf *dmabuf;
	struct scatterlist *sg;
	struct sg_table *sgt;
	u64 done = 0, seg_start = 0;
	ktime_t t0;
	long ret;
	u32 i;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.reserved || !req.data_len || req.data_len > RESMEM_EDU_MAX_WRITE)
		return -EINVAL;
	dmabuf = dma_buf_get(req.fd);
	if (IS_ERR(dmabuf)) {
		pr_info_ratelimited("%s: dma-buf write refused: fd %d is not a dma-buf (%ld)\n",
				    edu->name, req.fd, PTR_ERR(dmabuf));
		return -EBADF;
	}
	req.size = dmabuf->size;
	if (req.offset > dmabuf->size || req.data_len > dmabuf->size - req.offset) {
		pr_info_ratelimited("%s: dma-buf write refused: %llu bytes at offset 0x%llx run past the buffer's %zu bytes (-EINVAL)\n",
				    edu->name, req.data_len, req.offset, dmabuf->size);
		ret = -EINVAL;
		goto put;
	}
	if (mutex_lock_interruptible(&edu->lock)) {
		ret = -EINTR;
		goto put;
	}
	ret = edu->gone ? -ENODEV : edu->broken ? -EIO : 0;
	if (ret)
		goto unlock;
	at = dma_buf_attach(dmabuf, &edu->pdev->dev);
	if (IS_ERR(at)) {
		ret = PTR_ERR(at);
		pr_err("%s: dma_buf_attach to %s's buffer failed (%ld)\n", edu->name,
		       dmabuf->exp_name, ret);
		goto unlock;
	}
	sgt = dma_buf_map_attachment_unlocked(at, DMA_FROM_DEVICE);
	if (IS_ERR(sgt)) {
		ret = PTR_ERR(sgt);
		pr_err("%s: dma_buf_map_attachment of %s's buffer failed (%ld)\n", edu->name,
		       dmabuf->exp_name, ret);
		goto detach;
	}
	req.sg_entries = sgt->nents;
	req.commands = 0;
	t0 = ktime_get();
	/* Walk the sg list's bus addresses; each piece stays inside one entry. */
	for_each_sgtable_dma_sg(sgt, sg, i) {
		u64 seg_len = sg_dma_len(sg);

		while (!ret && done < req.data_len && req.offset + done < seg_start + seg_len) {
			u64 within = req.offset + done - seg_start;
			u32 n = min_t(u64, min_t(u64, req.data_len - done, EDU_PIECE), seg_len - within);
			u64 bus = sg_dma_address(sg) + within;

			if (!req.commands)
				req.bus_addr = bus;
			ret = edu_p2p_piece(edu, u64_to_user_ptr(req.data + done), bus, n);
			if (!ret) {
				req.commands += 2;
				done += n;
			}
		}
		seg_start += seg_len;
		if (ret || done == req.data_len)
			break;
	}
	req.device_ns = ktime_to_ns(ktime_sub(ktime_get(), t0));
	if (!ret && done != req.data_len)
		ret = -EIO; /* the sg list was shorter than the buffer's size */
	dma_buf_unmap_attachment_unlocked(at, sgt, DMA_FROM_DEVICE);
detach:
	dma_buf_detach(dmabuf, at);
unlock:
	mutex_unlock(&edu->lock);
put:
	dma_buf_put(dmabuf);
	if (ret)
		return ret;
	return copy_to_user(uarg, &req, sizeof(req)) ? -EFAULT : 0;
}

/* ---- hooks called by resmem_edu.c ------------------------------------------------------------ */

static long edu_p2p_ioctl(struct edu_client *c, unsigned int cmd, void __user *uarg)
{
	long ret;

	switch (cmd) {
	case RESMEM_EDU_IOC_P2P_WRITE:
		return edu_p2p_ioctl_write(c, uarg);
	case RESMEM_EDU_IOC_P2P_STATS:
		return edu_p2p_ioctl_stats(c, uarg);
	case RESMEM_EDU_IOC_P2P_FLUSH:
		mutex_lock(&c->edu->lock);
		ret = c->p2p ? edu_p2p_flush(c->p2p) : 0;
		mutex_unlock(&c->edu->lock);
		return ret;
	case RESMEM_EDU_IOC_DMABUF_WRITE:
		return edu_p2p_ioctl_dmabuf(c, uarg);
	default:
		return -ENOTTY;
	}
}

/* The file closes: unpin what it holds and give the provider's calls back. */
static void edu_p2p_release(struct edu_client *c)
{
	struct edu_p2p *p = c->p2p;

	if (!p)
		return;
	mutex_lock(&c->edu->lock);
	edu_p2p_flush(p);
	mutex_unlock(&c->edu->lock);
	edu_p2p_api_put(&p->api);
	kfree(p);
	c->p2p = NULL;
}

/* The dma-buf exports live in a symbol namespace; 6.13 names it by a string literal. */
#ifdef RESMEM_HAVE_MODULE_IMPORT_NS_IDENT
MODULE_IMPORT_NS(DMA_BUF);
#else
MODULE_IMPORT_NS("DMA_BUF");
#endif
