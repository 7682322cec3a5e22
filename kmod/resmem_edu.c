// SPDX-License-Identifier: GPL-2.0
/*
 * resmem_edu: resmem (kmod/resmem.c, built in whole: /dev/resmemN and all its parameters) plus a
 * driver for QEMU's edu PCI device (1234:11e8) as a producer that DMAs into the reserved ranges.
 * The QEMU lane's stand-in for an acquisition card writing blocks into the buffer that user space
 * maps (docs/rdma.md). Not shipped by resmem-dkms; loaded by hand (no device table, no autoload).
 *
 * The device (QEMU 7.2 hw/misc/edu.c; read there, registers in BAR0):
 *   0x00 identification 0x010000ed        0x24 interrupt status, 0x64 acknowledge
 *   0x80 DMA source, 0x88 destination, 0x90 count, 0x98 command: bit 0 run (cleared when done),
 *   bit 1 direction (0: RAM -> the device's buffer, 1: the buffer -> RAM), bit 2 raise interrupt
 *   0x100 when done. The buffer is 4 KiB at device address 0x40000. A command takes effect from a
 *   100 ms timer of the virtual clock (edu.c dma_rw -> timer_mod). A transfer outside the buffer
 *   aborts QEMU (edu_check_range -> hw_error), and QEMU 7.2's check is off by one: a transfer that
 *   reaches the buffer's last byte counts as outside ("DMA range 0x40000-0x40fff out of bounds
 *   (0x40000-0x40fff)", seen in the lane), so pieces here are 2 KiB at 0x40000. edu thus moves
 *   2 KiB per two commands, about 10 KB/s: it shows that and where the device writes, not how fast
 *   a card would. The device ANDs every address with its dma_mask property, 0x0fffffff unless
 *   set (edu_instance_init; edu_clamp_addr prints "EDU: clamping DMA" on QEMU's stdout): a
 *   device told a buffer above its mask writes somewhere else. The driver cannot read the mask
 *   from the device: dma_bits= tells it, as a real driver knows its card's width from the datasheet.
 *
 * Contract (uapi/resmem_edu_ioctl.h):
 *  - One /dev/resmem_eduN per device, in probe order; dma_bits= gives each its DMA mask width.
 *  - ATTACH binds an open file to a /dev/resmemN of this module. A range the device cannot reach
 *    is refused with ERANGE and one dmesg line naming the range, the mask and the way out: without
 *    an IOMMU translating for the device (dma-direct) the bus address is the physical address and
 *    its last byte must lie within the mask and the bus limit (kernel/dma/direct.h dma_capable).
 *    The driver checks before mapping: the DMA API would otherwise bounce a page through swiotlb
 *    (dma_direct_map_page), which is a CPU copy, or WARN (dma_direct_map_resource).
 *  - WRITE copies the caller's bytes into a DMA-coherent staging page (the block's content comes
 *    from there) and has the device move them, 2 KiB per command pair, into the range:
 *    the write into the reserved memory is the device's DMA. Each piece of the target is mapped for
 *    the device for its own transfer only: dma_map_page where the memory has struct pages (pages
 *    mode, or reserved pages inside a memory section with System RAM), dma_map_resource where it
 *    has none. Completion is the device's interrupt, with a timeout.
 *  - TEST_UNMAPPED (the lane's IOMMU boot): the device writes to a bus address nobody mapped;
 *    the driver reads the range back and answers EIO when the write did not land (the IOMMU's
 *    DMAR fault line names the device and the address), never a silent success.
 *  - TEST_FAULTS: the device's failures (an error, a write that never lands, a flipped bit, a late
 *    completion), seeded, per open file: what the stream's reader must catch.
 *  - Removal of the device (unbind) while files are open: later calls get ENODEV.
 */
#define RESMEM_EXTENSION 1
#include "resmem.c"

#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/file.h>
#include <linux/idr.h>
#include <linux/interrupt.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/iommu.h>
#include <linux/kref.h>
#include <linux/ktime.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/random.h>

#include "uapi/resmem_edu_ioctl.h"

#define EDU_MAX_DEVICES 8
#define EDU_REG_IDENT 0x00
#define EDU_REG_IRQ_STATUS 0x24
#define EDU_REG_IRQ_ACK 0x64
#define EDU_REG_DMA_SRC 0x80
#define EDU_REG_DMA_DST 0x88
#define EDU_REG_DMA_COUNT 0x90
#define EDU_REG_DMA_CMD 0x98
#define EDU_CMD_RUN 0x1
#define EDU_CMD_RAM_TO_DEVICE 0x0
#define EDU_CMD_DEVICE_TO_RAM 0x2
#define EDU_CMD_IRQ 0x4
#define EDU_IRQ_DMA 0x100
#define EDU_BUF_ADDR 0x40000
#define EDU_BUF_SIZE 4096
#define EDU_PIECE RESMEM_EDU_PIECE /* bytes per command pair: 2 KiB, see the head of this file */
/* edu completes a command after 100 ms of virtual time; a loaded TCG host gets fifty times that. */
#define EDU_DMA_TIMEOUT_MS 5000
/* hw/misc/edu.c edu_instance_init: dma_mask = (1UL << 28) - 1 */
#define EDU_DEFAULT_DMA_BITS 28

/* Legacy interrupts were renamed INTX (Linux 6.8): probe the name, not the version. */
#ifndef PCI_IRQ_INTX
#define PCI_IRQ_INTX PCI_IRQ_LEGACY
#endif

static unsigned int dma_bits[EDU_MAX_DEVICES];
static int nr_dma_bits;
module_param_array(dma_bits, uint, &nr_dma_bits, 0444);
MODULE_PARM_DESC(dma_bits, "per edu device in probe order: the width of its DMA mask, 24 to 64, as its dma_mask property is set in QEMU (-device edu,dma_mask=0xffffffff is 32); the last one given applies to the rest; default 28, edu's own default");

struct edu_dev {
	struct pci_dev *pdev;
	void __iomem *regs;
	struct miscdevice misc;
	char name[16];
	int index;
	unsigned int dma_bits;
	void *staging; /* DMA-coherent page the device reads each block's bytes from */
	dma_addr_t staging_dma;
	struct completion done;
	struct mutex lock; /* one transfer at a time; guards gone, broken and the clients' targets */
	bool gone;         /* removed: no register access any more */
	bool broken;       /* a command timed out: no further DMA */
	struct kref ref;   /* probe's, and one per open file */
};

/* The device's failures as this file's WRITEs see them (uapi: RESMEM_EDU_IOC_TEST_FAULTS). */
struct edu_faults {
	u64 state;    /* splitmix64: the caller's seed decides every choice */
	u32 permille; /* per piece; 0: off */
	u32 kinds;    /* RESMEM_EDU_FAULT_* */
	u64 pieces;
	u64 injected[RESMEM_EDU_FAULT_KINDS];
};

struct edu_p2p;

/* One open file of /dev/resmem_eduN. */
struct edu_client {
	struct edu_dev *edu;
	struct resmem_dev *target; /* attached range, or NULL */
	struct edu_faults faults;  /* guarded by edu->lock */
	struct edu_p2p *p2p;       /* GPUDirect RDMA state (resmem_edu_p2p.c), or NULL */
};

/* The GPUDirect RDMA and dma-buf part, kmod/resmem_edu_p2p.c (included at the end). */
static long edu_p2p_ioctl(struct edu_client *c, unsigned int cmd, void __user *uarg);
static void edu_p2p_release(struct edu_client *c);

static DEFINE_IDA(edu_ida);

static void edu_free(struct kref *ref)
{
	struct edu_dev *edu = container_of(ref, struct edu_dev, ref);

	pci_dev_put(edu->pdev);
	kfree(edu);
}

static irqreturn_t edu_irq(int irq, void *data)
{
	struct edu_dev *edu = data;
	u32 status = readl(edu->regs + EDU_REG_IRQ_STATUS);

	if (!status || status == ~0u) /* not ours (shared INTx), or the device is gone */
		return IRQ_NONE;
	writel(status, edu->regs + EDU_REG_IRQ_ACK);
	if (status & EDU_IRQ_DMA)
		complete(&edu->done);
	return IRQ_HANDLED;
}

/* ---- reach and mapping ------------------------------------------------------------------ */

/* An IOMMU domain that translates (DMA API domains are paging domains; identity is not). */
static bool edu_translated(struct edu_dev *edu)
{
	struct iommu_domain *dom = iommu_get_domain_for_dev(&edu->pdev->dev);

	return dom && (dom->type & __IOMMU_DOMAIN_PAGING);
}

/* The last bus address the device can reach untranslated (kernel/dma/direct.h dma_capable). */
static u64 edu_dma_limit(struct edu_dev *edu)
{
	struct device *dev = &edu->pdev->dev;

	return min_not_zero(dma_get_mask(dev), dev->bus_dma_limit);
}

static int edu_check_reach(struct edu_dev *edu, struct resmem_dev *d)
{
	u64 limit = edu_dma_limit(edu), last = d->phys + d->size - 1;

	if (edu_translated(edu) || last <= limit)
		return 0;
	pr_err("%s: refusing %s [mem 0x%llx-0x%llx] as a DMA target: the device's %u-bit DMA mask reaches 0x0-0x%llx only and no IOMMU translates for it, so it would write elsewhere; reserve the buffer in RAM below 0x%llx (e.g. memmap=64M$0x40000000, outside the PCI hole and firmware areas of /proc/iomem: seed 002) or use a device with a wider DMA mask (-ERANGE)\n",
	       edu->name, d->name, (u64)d->phys, last, edu->dma_bits, limit, limit + 1);
	return -ERANGE;
}

/*
 * Maps len bytes at pa (inside one page) for the device to write. Memory with struct pages goes
 * through the page API; memory without them is a resource (kernel/dma/mapping.c).
 */
static int edu_map(struct edu_dev *edu, phys_addr_t pa, u32 len, dma_addr_t *out)
{
	struct device *dev = &edu->pdev->dev;
	unsigned long pfn = PHYS_PFN(pa);
	dma_addr_t a;

	if (pfn_valid(pfn))
		a = dma_map_page(dev, pfn_to_page(pfn), offset_in_page(pa), len, DMA_FROM_DEVICE);
	else
		a = dma_map_resource(dev, pa, len, DMA_FROM_DEVICE, 0);
	if (dma_mapping_error(dev, a)) {
		pr_err("%s: cannot map [mem 0x%llx-0x%llx] for the device's DMA (%s) (-EIO)\n",
		       edu->name, (u64)pa, (u64)pa + len - 1,
		       pfn_valid(pfn) ? "dma_map_page" : "dma_map_resource");
		return -EIO;
	}
	*out = a;
	return 0;
}

static void edu_unmap(struct edu_dev *edu, phys_addr_t pa, dma_addr_t a, u32 len)
{
	struct device *dev = &edu->pdev->dev;

	if (pfn_valid(PHYS_PFN(pa)))
		dma_unmap_page(dev, a, len, DMA_FROM_DEVICE);
	else
		dma_unmap_resource(dev, a, len, DMA_FROM_DEVICE, 0);
}

/* ---- the DMA engine ------------------------------------------------------------------------ */

/* Runs one command and waits for its interrupt. Called with edu->lock held. */
static int edu_dma(struct edu_dev *edu, u64 src, u64 dst, u32 count, u32 direction)
{
	reinit_completion(&edu->done);
	writeq(src, edu->regs + EDU_REG_DMA_SRC);
	writeq(dst, edu->regs + EDU_REG_DMA_DST);
	writeq(count, edu->regs + EDU_REG_DMA_COUNT);
	writeq(direction | EDU_CMD_RUN | EDU_CMD_IRQ, edu->regs + EDU_REG_DMA_CMD);
	if (wait_for_completion_timeout(&edu->done, msecs_to_jiffies(EDU_DMA_TIMEOUT_MS)))
		return 0;
	edu->broken = true;
	pr_err("%s: the device did not complete a DMA command (src 0x%llx dst 0x%llx count %u) within %u ms; no further DMA until the module is reloaded (-ETIMEDOUT)\n",
	       edu->name, src, dst, count, EDU_DMA_TIMEOUT_MS);
	return -ETIMEDOUT;
}

/* ---- injected faults ----------------------------------------------------------------------- */

static u64 edu_fault_next(struct edu_faults *f)
{
	u64 z = (f->state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The fault of the next piece: a RESMEM_EDU_FAULT_* bit, or 0; *r gets a draw for its details. */
static u32 edu_fault_pick(struct edu_faults *f, u64 *r)
{
	u64 x;
	int k, pick;

	f->pieces++;
	if (!f->permille)
		return 0;
	x = edu_fault_next(f);
	if (x % 1000 >= f->permille)
		return 0;
	pick = (x / 1000) % hweight32(f->kinds);
	for (k = 0; k < RESMEM_EDU_FAULT_KINDS; k++)
		if ((f->kinds & BIT(k)) && pick-- == 0)
			break;
	f->injected[k]++;
	*r = edu_fault_next(f);
	return BIT(k);
}

/* One piece of the block (inside one page): user bytes -> staging -> device buffer -> the
 * reserved range, with the fault the file's test settings pick for it. */
static int edu_write_piece(struct edu_dev *edu, struct edu_faults *f, const void __user *from,
			   phys_addr_t pa, u32 n, struct resmem_edu_write *req)
{
	dma_addr_t target;
	u64 r = 0;
	u32 fault;
	int ret;

	if (copy_from_user(edu->staging, from, n))
		return -EFAULT;
	fault = edu_fault_pick(f, &r);
	if (fault == RESMEM_EDU_FAULT_ERROR) {
		pr_err_ratelimited("%s: TEST: injected fault: the device reported the piece at [mem 0x%llx-0x%llx] failed; the write stops here (-EIO)\n",
				   edu->name, (u64)pa, (u64)pa + n - 1);
		return -EIO;
	}
	if (fault == RESMEM_EDU_FAULT_FLIP)
		((u8 *)edu->staging)[r % n] ^= 1u << ((r >> 32) & 7);
	if (fault == RESMEM_EDU_FAULT_DELAY)
		msleep(1 + (r % 20));
	ret = edu_map(edu, pa, n, &target);
	if (ret)
		return ret;
	if (!req->commands)
		req->dma_addr = target;
	ret = edu_dma(edu, edu->staging_dma, EDU_BUF_ADDR, n, EDU_CMD_RAM_TO_DEVICE);
	if (!ret) {
		req->commands++;
		/* DROP: the device signals the write into RAM done without moving the bytes. */
		if (fault != RESMEM_EDU_FAULT_DROP)
			ret = edu_dma(edu, EDU_BUF_ADDR, target, n, EDU_CMD_DEVICE_TO_RAM);
		if (!ret)
			req->commands++;
	}
	edu_unmap(edu, pa, target, n);
	return ret;
}

/* ---- the character device ------------------------------------------------------------------ */

static int edu_open(struct inode *inode, struct file *file)
{
	struct edu_dev *edu = container_of(file->private_data, struct edu_dev, misc);
	struct edu_client *c;

	if (!smp_load_acquire(&resmem_loaded)) /* resmem.c resmem_open: the load is not complete */
		return -EAGAIN;
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	kref_get(&edu->ref);
	c->edu = edu;
	file->private_data = c;
	return 0;
}

static int edu_release(struct inode *inode, struct file *file)
{
	struct edu_client *c = file->private_data;

	edu_p2p_release(c);
	kref_put(&c->edu->ref, edu_free);
	kfree(c);
	return 0;
}

static long edu_ioctl_info(struct edu_dev *edu, void __user *uarg)
{
	struct resmem_edu_info info;

	memset(&info, 0, sizeof(info));
	info.dma_bits = edu->dma_bits;
	info.dma_mask = DMA_BIT_MASK(edu->dma_bits);
	mutex_lock(&edu->lock);
	if (!edu->gone && edu_translated(edu))
		info.flags |= RESMEM_EDU_TRANSLATED;
	mutex_unlock(&edu->lock);
	strscpy(info.name, edu->name, sizeof(info.name));
	strscpy(info.pci_name, pci_name(edu->pdev), sizeof(info.pci_name));
	return copy_to_user(uarg, &info, sizeof(info)) ? -EFAULT : 0;
}

static long edu_ioctl_attach(struct edu_client *c, void __user *uarg)
{
	struct edu_dev *edu = c->edu;
	struct resmem_edu_attach req;
	struct resmem_dev *d;
	struct file *f;
	long ret;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.reserved)
		return -EINVAL;
	f = fget(req.resmem_fd);
	if (!f)
		return -EBADF;
	if (f->f_op != &resmem_fops) {
		pr_info_ratelimited("%s: attach refused: fd %d is not a /dev/resmemN of this module (-EINVAL)\n",
				    edu->name, req.resmem_fd);
		fput(f);
		return -EINVAL;
	}
	/*
	 * The device writes into the range: the file must have been opened for writing. A read-only
	 * open (which a user with only read access to /dev/resmemN can make) must not become a
	 * writer through the device.
	 */
	if (!(f->f_mode & FMODE_WRITE)) {
		pr_info_ratelimited("%s: attach refused: fd %d was opened read-only, and the device would write into its range; open /dev/resmemN O_RDWR (-EBADF)\n",
				    edu->name, req.resmem_fd);
		fput(f);
		return -EBADF;
	}
	/* The devices live until the module unloads, which an open file of ours prevents. */
	d = container_of(f->private_data, struct resmem_dev, misc);
	fput(f);

	mutex_lock(&edu->lock);
	ret = edu->gone ? -ENODEV : edu_check_reach(edu, d);
	if (!ret) {
		c->target = d;
		pr_info("%s: attached %s [mem 0x%llx-0x%llx] (%s DMA, mask 0x%llx)\n", edu->name,
			d->name, (u64)d->phys, (u64)(d->phys + d->size - 1),
			edu_translated(edu) ? "IOMMU-translated" : "direct", edu_dma_limit(edu));
	}
	mutex_unlock(&edu->lock);
	if (ret)
		return ret;
	req.phys_addr = d->phys;
	req.size = d->size;
	return copy_to_user(uarg, &req, sizeof(req)) ? -EFAULT : 0;
}

/* Whether a transfer may start: the device is there and answering, a range is attached. */
static int edu_usable(struct edu_dev *edu, struct resmem_dev *target)
{
	if (edu->gone)
		return -ENODEV;
	if (edu->broken)
		return -EIO;
	return target ? 0 : -ENOTCONN;
}

static long edu_ioctl_write(struct edu_client *c, void __user *uarg)
{
	struct edu_dev *edu = c->edu;
	struct resmem_edu_write req;
	struct resmem_dev *d;
	u64 done = 0;
	ktime_t t0;
	long ret;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.reserved || !req.length || req.length > RESMEM_EDU_MAX_WRITE)
		return -EINVAL;
	req.commands = 0;
	req.dma_addr = 0;
	if (mutex_lock_interruptible(&edu->lock))
		return -EINTR;
	d = c->target;
	ret = edu_usable(edu, d);
	if (!ret && (req.offset >= d->size || req.length > d->size - req.offset)) {
		pr_info_ratelimited("%s: write refused: offset 0x%llx + length 0x%llx runs past the end of %s (size 0x%llx) (-EINVAL)\n",
				    edu->name, req.offset, req.length, d->name, d->size);
		ret = -EINVAL;
	}
	if (!ret)
		ret = edu_check_reach(edu, d);
	t0 = ktime_get();
	while (!ret && done < req.length) {
		phys_addr_t pa = d->phys + req.offset + done;
		u32 n = min_t(u64, min_t(u64, req.length - done, EDU_PIECE),
			      PAGE_SIZE - offset_in_page(pa));

		ret = edu_write_piece(edu, &c->faults, u64_to_user_ptr(req.data + done), pa, n, &req);
		done += n;
		if (!ret && done < req.length && fatal_signal_pending(current))
			ret = -EINTR;
	}
	req.device_ns = ktime_to_ns(ktime_sub(ktime_get(), t0));
	mutex_unlock(&edu->lock);
	if (ret)
		return ret;
	return copy_to_user(uarg, &req, sizeof(req)) ? -EFAULT : 0;
}

/*
 * TEST: the device writes to a bus address nobody mapped (the range's physical address, as a
 * driver that forgets the DMA API would hand it over); the IOMMU must stop it, and the driver says
 * so after reading the range back (uapi: RESMEM_EDU_IOC_TEST_UNMAPPED).
 */
#define EDU_TEST_BYTES 64
static long edu_ioctl_test_unmapped(struct edu_client *c, void __user *uarg)
{
	struct edu_dev *edu = c->edu;
	struct resmem_edu_test_unmapped req;
	struct resmem_dev *d;
	long ret = 0;
	u64 bus;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.reserved || !IS_ALIGNED(req.offset, EDU_TEST_BYTES))
		return -EINVAL;
	mutex_lock(&edu->lock);
	d = c->target;
	ret = edu_usable(edu, d);
	if (!ret && req.offset >= d->size)
		ret = -EINVAL;
	if (ret)
		goto unlock;
	bus = d->phys + req.offset;
	if (!edu_translated(edu)) {
		pr_info("%s: TEST unmapped write refused: no IOMMU translates for the device, so bus address 0x%llx is RAM and the write would land (-EOPNOTSUPP)\n",
			edu->name, bus);
		ret = -EOPNOTSUPP;
		goto unlock;
	}
	if (iommu_iova_to_phys(iommu_get_domain_for_dev(&edu->pdev->dev), bus)) {
		pr_info("%s: TEST unmapped write refused: bus address 0x%llx is mapped for the device (-EBUSY)\n",
			edu->name, bus);
		ret = -EBUSY;
		goto unlock;
	}
	get_random_bytes(edu->staging, EDU_TEST_BYTES);
	ret = edu_dma(edu, edu->staging_dma, EDU_BUF_ADDR, EDU_TEST_BYTES, EDU_CMD_RAM_TO_DEVICE);
	if (!ret)
		ret = edu_dma(edu, EDU_BUF_ADDR, bus, EDU_TEST_BYTES, EDU_CMD_DEVICE_TO_RAM);
	if (ret)
		goto unlock;
	req.bus_addr = bus;
	req.landed = !memcmp(resmem_kaddr(d, req.offset), edu->staging, EDU_TEST_BYTES);
	if (req.landed) {
		pr_err("%s: TEST: the device's write to unmapped bus address 0x%llx landed in %s: nothing stopped it\n",
		       edu->name, bus, d->name);
	} else {
		pr_err("%s: TEST: the device's write to unmapped bus address 0x%llx did not reach %s: the IOMMU blocked it (its DMAR fault line names the device and the address) (-EIO)\n",
		       edu->name, bus, d->name);
		ret = -EIO;
	}
unlock:
	mutex_unlock(&edu->lock);
	if ((!ret || ret == -EIO) && copy_to_user(uarg, &req, sizeof(req)))
		return -EFAULT;
	return ret;
}

/* TEST: sets or reads this file's injected device faults (uapi: RESMEM_EDU_IOC_TEST_FAULTS). */
static long edu_ioctl_test_faults(struct edu_client *c, void __user *uarg)
{
	struct edu_dev *edu = c->edu;
	struct resmem_edu_test_faults req;
	struct edu_faults *f = &c->faults;
	u32 all = BIT(RESMEM_EDU_FAULT_KINDS) - 1;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.reserved || (req.flags & ~RESMEM_EDU_FAULTS_QUERY))
		return -EINVAL;
	if (!(req.flags & RESMEM_EDU_FAULTS_QUERY) &&
	    (req.permille > 1000 || (req.kinds & ~all) || (req.permille && !req.kinds))) {
		pr_info_ratelimited("%s: TEST: faults refused: permille %u (0 to 1000), kinds 0x%x (a nonzero set of 0x%x when permille > 0) (-EINVAL)\n",
				    edu->name, req.permille, req.kinds, all);
		return -EINVAL;
	}
	mutex_lock(&edu->lock);
	if (edu->gone) {
		mutex_unlock(&edu->lock);
		return -ENODEV;
	}
	if (!(req.flags & RESMEM_EDU_FAULTS_QUERY)) {
		memset(f, 0, sizeof(*f));
		f->state = req.seed;
		f->permille = req.permille;
		f->kinds = req.kinds;
		pr_info("%s: TEST: injected faults: %u per 1000 pieces, kinds 0x%x, seed 0x%llx\n",
			edu->name, req.permille, req.kinds, req.seed);
	}
	req.pieces = f->pieces;
	memcpy(req.injected, f->injected, sizeof(req.injected));
	mutex_unlock(&edu->lock);
	return copy_to_user(uarg, &req, sizeof(req)) ? -EFAULT : 0;
}

static long edu_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct edu_client *c = file->private_data;
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case RESMEM_EDU_IOC_INFO:
		return edu_ioctl_info(c->edu, uarg);
	case RESMEM_EDU_IOC_ATTACH:
		return edu_ioctl_attach(c, uarg);
	case RESMEM_EDU_IOC_WRITE:
		return edu_ioctl_write(c, uarg);
	case RESMEM_EDU_IOC_TEST_UNMAPPED:
		return edu_ioctl_test_unmapped(c, uarg);
	case RESMEM_EDU_IOC_TEST_FAULTS:
		return edu_ioctl_test_faults(c, uarg);
	default:
		return edu_p2p_ioctl(c, cmd, uarg);
	}
}

static const struct file_operations edu_fops = {
	.owner = THIS_MODULE,
	.open = edu_open,
	.release = edu_release,
	.unlocked_ioctl = edu_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

/* ---- PCI driver ------------------------------------------------------------------------- */

static unsigned int edu_dma_bits_for(int index)
{
	if (!nr_dma_bits)
		return EDU_DEFAULT_DMA_BITS;
	return dma_bits[min(index, nr_dma_bits - 1)];
}

/* Gives back what probe took, in reverse; the hardware is not touched afterwards. */
static void edu_release_hw(struct edu_dev *edu)
{
	struct pci_dev *pdev = edu->pdev;

	free_irq(pci_irq_vector(pdev, 0), edu);
	pci_free_irq_vectors(pdev);
	dma_free_coherent(&pdev->dev, EDU_BUF_SIZE, edu->staging, edu->staging_dma);
	pci_clear_master(pdev);
	pci_iounmap(pdev, edu->regs);
	pci_release_regions(pdev);
	pci_disable_device(pdev);
}

static int edu_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct edu_dev *edu;
	u32 ident;
	int ret;

	edu = kzalloc(sizeof(*edu), GFP_KERNEL);
	if (!edu)
		return -ENOMEM;
	kref_init(&edu->ref);
	mutex_init(&edu->lock);
	init_completion(&edu->done);
	edu->pdev = pci_dev_get(pdev);
	edu->index = ida_alloc_max(&edu_ida, EDU_MAX_DEVICES - 1, GFP_KERNEL);
	if (edu->index < 0) {
		pr_err("%s: more than %d edu devices; this one is left alone\n", pci_name(pdev),
		       EDU_MAX_DEVICES);
		ret = edu->index;
		goto put;
	}
	snprintf(edu->name, sizeof(edu->name), "resmem_edu%d", edu->index);
	edu->dma_bits = edu_dma_bits_for(edu->index);

	ret = pci_enable_device(pdev);
	if (ret)
		goto free_index;
	ret = pci_request_regions(pdev, edu->name);
	if (ret)
		goto disable;
	edu->regs = pci_iomap(pdev, 0, 0);
	if (!edu->regs) {
		ret = -ENOMEM;
		goto release_regions;
	}
	ident = readl(edu->regs + EDU_REG_IDENT);
	if ((ident & 0xff) != 0xed) {
		pr_err("%s: %s answers identification 0x%08x, not edu's 0x......ed; left alone (-ENODEV)\n",
		       edu->name, pci_name(pdev), ident);
		ret = -ENODEV;
		goto unmap;
	}
	pci_set_master(pdev);
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(edu->dma_bits));
	if (ret) {
		pr_err("%s: the kernel refused a %u-bit DMA mask for %s (%d)\n", edu->name,
		       edu->dma_bits, pci_name(pdev), ret);
		goto clear_master;
	}
	edu->staging = dma_alloc_coherent(&pdev->dev, EDU_BUF_SIZE, &edu->staging_dma, GFP_KERNEL);
	if (!edu->staging) {
		ret = -ENOMEM;
		goto clear_master;
	}
	ret = pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_MSI | PCI_IRQ_INTX);
	if (ret < 0)
		goto free_staging;
	ret = request_irq(pci_irq_vector(pdev, 0), edu_irq, IRQF_SHARED, edu->name, edu);
	if (ret)
		goto free_vectors;

	edu->misc.minor = MISC_DYNAMIC_MINOR;
	edu->misc.name = edu->name;
	edu->misc.fops = &edu_fops;
	edu->misc.mode = 0600;
	ret = misc_register(&edu->misc);
	if (ret) {
		pr_err("%s: misc_register failed (%d)\n", edu->name, ret);
		goto free_irq;
	}
	pci_set_drvdata(pdev, edu);
	pr_info("%s: edu at %s (identification 0x%08x), %u-bit DMA mask 0x%llx, %s interrupt %d, %s DMA\n",
		edu->name, pci_name(pdev), ident, edu->dma_bits, DMA_BIT_MASK(edu->dma_bits),
		pdev->msi_enabled ? "MSI" : "INTx", pci_irq_vector(pdev, 0),
		edu_translated(edu) ? "IOMMU-translated" : "direct");
	return 0;

free_irq:
	free_irq(pci_irq_vector(pdev, 0), edu);
free_vectors:
	pci_free_irq_vectors(pdev);
free_staging:
	dma_free_coherent(&pdev->dev, EDU_BUF_SIZE, edu->staging, edu->staging_dma);
clear_master:
	pci_clear_master(pdev);
unmap:
	pci_iounmap(pdev, edu->regs);
release_regions:
	pci_release_regions(pdev);
disable:
	pci_disable_device(pdev);
free_index:
	ida_free(&edu_ida, edu->index);
put:
	kref_put(&edu->ref, edu_free);
	return ret;
}

static void edu_remove(struct pci_dev *pdev)
{
	struct edu_dev *edu = pci_get_drvdata(pdev);

	misc_deregister(&edu->misc); /* no new opens (misc_open runs under the same lock) */
	mutex_lock(&edu->lock);      /* waits for a transfer in progress */
	edu->gone = true;
	mutex_unlock(&edu->lock);
	edu_release_hw(edu);
	ida_free(&edu_ida, edu->index);
	kref_put(&edu->ref, edu_free); /* open files keep the rest until they close */
}

static const struct pci_device_id edu_ids[] = {
	{ PCI_DEVICE(0x1234, 0x11e8) }, /* QEMU's edu (hw/misc/edu.c) */
	{ }
};

static struct pci_driver edu_driver = {
	.name = "resmem_edu",
	.id_table = edu_ids,
	.probe = edu_probe,
	.remove = edu_remove,
};

static int resmem_extension_init(void)
{
	int i;

	for (i = 0; i < nr_dma_bits; i++) {
		if (dma_bits[i] < 24 || dma_bits[i] > 64) {
			pr_err("dma_bits=%u for edu device %d: expected 24 to 64, the width of the device's dma_mask (-EINVAL)\n",
			       dma_bits[i], i);
			return -EINVAL;
		}
	}
	return pci_register_driver(&edu_driver);
}

static void resmem_extension_exit(void)
{
	pci_unregister_driver(&edu_driver);
}

#include "resmem_edu_p2p.c"
