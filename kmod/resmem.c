// SPDX-License-Identifier: GPL-2.0
/*
 * resmem: one misc device (/dev/resmemN) per range of physical memory that the kernel reserved at
 * boot (memmap=nn$ss), mapped into user space with mmap.
 *
 * Contract (docs/kmod.md has the user's side):
 *  - A range is served only if it is page aligned, inside a range the firmware/kernel map marks
 *    Reserved, disjoint from System RAM, claimable with request_mem_region, and has RAM behind it.
 *    Any failure refuses the whole load with one dmesg line naming the range, the reason, the way
 *    out, and a distinct errno (table below). The module never exposes kernel memory (it is not a
 *    /dev/mem).
 *  - mmap is right by construction: the PFN is the physical address >> PAGE_SHIFT (seed-002 passed
 *    a kernel virtual address), vm_pgoff and the length are checked against the range (EINVAL past
 *    the end), pages are inserted lazily by the fault handler, 2 MiB at a time where the physical
 *    and virtual addresses allow it (pages mode).
 *  - mode=pfnmap: VM_IO|VM_PFNMAP, no struct pages (cudaHostRegisterIoMemory only).
 *    mode=pages: struct pages from memremap_pages(MEMORY_DEVICE_GENERIC), so pin_user_pages
 *    (FOLL_LONGTERM) and plain cudaHostRegister work.
 *  - read/write/lseek treat the range as a file of fixed size (block-device conventions: short
 *    at the end, 0 / ENOSPC at or past it); every operation answers as the FUSE device and the
 *    simulated driver do (mock/parity's probe, docs/parity.md).
 *  - cache=wb|wc|uc per device. The module holds a kernel mapping of the range with that type, which
 *    reserves the PAT memory type; every user mapping inherits it (arch/x86/mm/pat/memtype.c
 *    track_pfn_insert -> lookup_memtype). O_SYNC does not change it (unlike drivers/char/mem.c).
 *
 * Load-time errnos, one per check:
 *   EINVAL      the parameter cannot be parsed, or the mode/cache combination is not supported
 *   EDOM        not page aligned
 *   ERANGE      size zero
 *   EOVERFLOW   phys + size wraps or lies beyond the CPU's physical address width
 *   EPERM       intersects System RAM
 *   EADDRNOTAVAIL  not entirely inside a range the kernel marked Reserved (memmap=nn$ss)
 *   EBUSY       overlaps another resource (request_mem_region refused it)
 *   ENXIO       no RAM behind it: legacy area below 1 MiB, inside a bus window, or a probe write
 *               did not read back
 *   ENOMEM      the probe could not map a page of the range (probe=0 skips it)
 *   EOPNOTSUPP  mode=pages on a kernel without memremap_pages
 *   ENODEV      no range given and the kernel reserved none out of RAM
 * and for a range the firmware's own map reserved (EFI, ACPI, TPM): ENXIO. On kernels that keep
 * that map from modules (6.19 on), ENOENT when sysfs has no copy of it (firmware_map_load).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/io.h>
#include <linux/ioport.h>
#include <linux/kernel.h>
#include <linux/memremap.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/huge_mm.h>
#include <linux/module.h>
#include <linux/mount.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>
#include <asm/cacheflush.h>
#ifdef CONFIG_X86
#include <asm/e820/api.h>
#endif

#include "resmem_conftest.h" /* RESMEM_HAVE_*: kmod/conftest.sh, from this kernel's headers */
#include "uapi/resmem_ioctl.h"
#ifdef RESMEM_HAVE_PFN_T
#include <linux/pfn_t.h>
#endif

#ifndef RESMEM_HAVE_PGMAP_RANGE
#error "resmem needs struct dev_pagemap with range/nr_range (Linux 5.10 or later): docs/kmod.md"
#endif
/*
 * How pages mode puts its struct pages into page tables depends on the kernel (docs/kmod.md
 * "Kernels"):
 *  - with pfn_t (up to 6.16): as devmap entries (PFN_DEV|PFN_MAP) in a VM_MIXEDMAP VMA. They take
 *    no page reference; gup finds the page through its pgmap.
 *  - without (Linux 6.17 removed pfn_t and devmap entries; ZONE_DEVICE pages are refcounted
 *    folios since 6.15): as ordinary file pages, as drivers/dax/device.c maps them:
 *    vmf_insert_page_mkwrite and vmf_insert_folio_pmd, each entry holding a reference on its
 *    folio and an rmap count, dropped when it is zapped. The VMA is then not VM_MIXEDMAP: the
 *    kernel takes a VM_MIXEDMAP file VMA's huge entries for special ones (mm/huge_memory.c
 *    vma_is_special_huge) and would zap them without giving the reference back. A 2 MiB entry
 *    needs a 2 MiB folio, so make_struct_pages groups the pages in folios of that order
 *    (dev_pagemap.vmemmap_shift) where the range allows.
 */
#ifdef RESMEM_HAVE_PFN_T
#define RESMEM_PAGES_VM_FLAGS VM_MIXEDMAP
#else
#define RESMEM_PAGES_VM_FLAGS 0
#endif

#define RESMEM_MAX_DEVICES 8

/*
 * The physical addresses are hardware parameters (module_param_hw, as drivers give I/O ports and
 * memory addresses): under lockdown the kernel refuses them (kernel/params.c param_check_unsafe,
 * LOCKDOWN_MODULE_PARAMETERS), as it refuses /dev/mem. Loaded without them the module serves what
 * the kernel itself reserved from memmap= on its command line (resmem_find_memmap below), so a
 * Secure Boot machine still works without addresses given by hand.
 */
static char *ranges;
module_param_hw(ranges, charp, iomem, 0444);
MODULE_PARM_DESC(ranges, "reserved ranges in memmap syntax, comma separated: 64M$0x40000000,1G$0x100000000 (quote the $ in shells); without ranges= and phys=, every range memmap= reserved out of RAM is served (the only way under lockdown)");

static unsigned long phys[RESMEM_MAX_DEVICES];
static int nr_phys;
module_param_hw_array(phys, ulong, iomem, &nr_phys, 0444);
MODULE_PARM_DESC(phys, "alternative to ranges=: physical start addresses, paired with size=");

static unsigned long size[RESMEM_MAX_DEVICES];
static int nr_size;
module_param_hw_array(size, ulong, other, &nr_size, 0444);
MODULE_PARM_DESC(size, "alternative to ranges=: sizes in bytes, paired with phys=");

static char *mode[RESMEM_MAX_DEVICES];
static int nr_mode;
module_param_array(mode, charp, &nr_mode, 0444);
MODULE_PARM_DESC(mode, "per device: pfnmap (VM_IO|VM_PFNMAP, default) or pages (struct pages, pin_user_pages works); the last one given applies to the rest");

static char *cache[RESMEM_MAX_DEVICES];
static int nr_cache;
module_param_array(cache, charp, &nr_cache, 0444);
MODULE_PARM_DESC(cache, "per device: wb (default), wc or uc; pages mode supports wb only; the last one given applies to the rest");

/*
 * 2 MiB entries of pages mode are devmap PMDs in a VM_MIXEDMAP VMA. Before Linux 6.5 the page walk
 * of MADV_COLD and MADV_PAGEOUT, which accept such a VMA (mm/madvise.c can_madv_lru_vma), does not
 * know devmap PMDs: madvise_cold_or_pageout_pte_range -> pmd_trans_unstable ->
 * pmd_none_or_trans_huge_or_clear_bad takes one for a bad page table, logs "mm/pgtable-generic.c:
 * bad pmd" and clears it without a TLB flush (found by kmod/tests/resmem_seq, seed 7: an madvise(
 * MADV_COLD) on a pages-mode mapping; docs/reliability.md). From 6.5 the walkers map PTEs through
 * __pte_offset_map (mm/pgtable-generic.c), which leaves devmap PMDs alone. So huge mappings are the
 * default only on such kernels; huge=1 still asks for them on older ones (the process must then not
 * madvise(MADV_COLD/MADV_PAGEOUT) the mapping).
 */
#ifdef RESMEM_HAVE_PTE_OFFSET_MAP
static bool huge = true;
#else
static bool huge;
#endif
module_param(huge, bool, 0644);
MODULE_PARM_DESC(huge, "map 2 MiB at a time where aligned (pages mode; pfnmap needs a kernel with pmd_special) (default 1 on kernels from 6.5, whose page walkers know devmap PMDs; 0 before: madvise(MADV_COLD/MADV_PAGEOUT) would clear the entries as bad)");

static bool probe = true;
module_param(probe, bool, 0444);
MODULE_PARM_DESC(probe, "check that RAM answers behind each range with a write/read probe at load (default 1)");

#ifdef RESMEM_TEST_FAULTS
/* Test builds only (kmod/resmem_test.c): the seeds' bugs, switchable at run time. */
enum {
	RESMEM_FAULT_NONE = 0,
	RESMEM_FAULT_KVA_PFN = 1,
	RESMEM_FAULT_SIGBUS = 2,
	RESMEM_FAULT_PMD_RACE = 3,
	RESMEM_FAULT_REFS_SCAN = 4,
};
static int fault;
module_param(fault, int, 0644);
MODULE_PARM_DESC(fault, "TEST BUILD: 0 none; 1 seed-002 bug: remap_pfn_range given the kernel virtual address as the PFN; 2 the fault handler fails (SIGBUS); 3 every other 2 MiB fault sleeps 1-2 ms before it reads the PMD, so a concurrent fault of the same 2 MiB installs its entry first; 4 the scan for page references still out after the last unmap (pages mode, once a second) pauses 2 s past the range's first page");
static atomic_t pmd_race_faults = ATOMIC_INIT(0);

static unsigned int fail_load_ms;
module_param(fail_load_ms, uint, 0444);
MODULE_PARM_DESC(fail_load_ms, "TEST BUILD: after every device node is registered, wait this many ms, then fail the load (-EIO): a program may open a node in that window");
#endif

/*
 * Set once the load has succeeded. A device node exists from misc_register on, and an open during
 * the load takes a reference on the module that does not stop a failing load from freeing it: an
 * open file would then point at freed code. So opens are refused until the load is complete.
 */
static bool resmem_loaded;

struct resmem_dev {
	struct miscdevice misc;
	char name[16];
	phys_addr_t phys;
	u64 size;
	u32 mode;  /* RESMEM_MODE_* */
	u32 cache; /* RESMEM_CACHE_* */
	struct resource *res;
	void *kaddr;              /* pfnmap: kernel mapping holding the PAT type */
	bool kaddr_is_io;         /* kaddr came from ioremap_* (else memremap) */
	struct dev_pagemap pgmap; /* pages mode */
	bool pgmap_live;
	bool registered;
	/*
	 * pages mode: page references taken through a mapping (vmsplice into a pipe, an io_uring fixed
	 * buffer, O_DIRECT I/O, a long-term pin) can outlive the mapping and the file. While any is
	 * out the module holds itself (refs_held), so unloading cannot tear the pgmap and its struct
	 * pages down under them; refs_work looks again every second. A last unmap while the hold is
	 * taken sets refs_recheck: its references may lie behind the work's scan, which must then look
	 * again before it lets go. refs_lock guards both flags.
	 */
	struct mutex refs_lock;
	bool refs_held, refs_recheck;
	struct delayed_work refs_work;
	atomic_t opens;
	atomic_t maps;
};

static struct resmem_dev *devices[RESMEM_MAX_DEVICES];
static int nr_devices;

static const char *mode_name(u32 m)
{
	return m == RESMEM_MODE_PAGES ? "pages" : "pfnmap";
}

static const char *cache_name(u32 c)
{
	return c == RESMEM_CACHE_WC ? "wc" : c == RESMEM_CACHE_UC ? "uc" : "wb";
}

static unsigned int cpu_phys_bits(void)
{
#ifdef CONFIG_X86
	return boot_cpu_data.x86_phys_bits;
#else
	return MAX_PHYSMEM_BITS;
#endif
}

/* ---- mmap ---------------------------------------------------------------------------------- */

static void resmem_vm_open(struct vm_area_struct *vma)
{
	struct resmem_dev *d = vma->vm_private_data;

	atomic_inc(&d->maps);
}

static void resmem_hold_while_referenced(struct resmem_dev *d);

static void resmem_vm_close(struct vm_area_struct *vma)
{
	struct resmem_dev *d = vma->vm_private_data;

	if (atomic_dec_and_test(&d->maps) && d->mode == RESMEM_MODE_PAGES)
		resmem_hold_while_referenced(d);
}

/* Whether pages mode's struct pages can go into a 2 MiB entry: always as devmap PMDs; as folios
 * only when make_struct_pages could group them 2 MiB at a time. */
static bool resmem_pages_have_pmd_folios(struct resmem_dev *d)
{
#ifdef RESMEM_HAVE_PFN_T
	return true;
#else
	return d->pgmap.vmemmap_shift == PMD_SHIFT - PAGE_SHIFT;
#endif
}

/*
 * A 2 MiB entry fits when the aligned 2 MiB around the address lies inside the VMA and its
 * physical address is 2 MiB aligned. pfnmap mode never uses it on kernels without pmd_special:
 * there gup-fast (mm/gup.c gup_huge_pmd) would take page references through a huge PFN-map PMD.
 */
static bool resmem_pmd_capable(struct resmem_dev *d)
{
	if (d->mode == RESMEM_MODE_PAGES)
		return resmem_pages_have_pmd_folios(d);
#ifdef RESMEM_HAVE_PMD_PFNMAP
	return true;
#else
	return false;
#endif
}

/*
 * A mapping's operations say whether it takes 2 MiB entries: resmem_huge_vm_ops when huge= was set
 * at mmap and the device is capable, resmem_vm_ops otherwise; both have the same functions. huge=
 * can change at run time, and read at each fault a change between two threads' faults of the same
 * 2 MiB would send the second the 4 KiB way under the first one's 2 MiB entry (the race
 * resmem_insert_pmd describes), so a mapping keeps the setting it was made with.
 */
static const struct vm_operations_struct resmem_huge_vm_ops;

static bool resmem_pmd_allowed(struct vm_area_struct *vma)
{
	return vma->vm_ops == &resmem_huge_vm_ops;
}

/* Puts the 2 MiB at physical address pa into the faulting PMD (see RESMEM_PAGES_VM_FLAGS). */
static vm_fault_t resmem_map_pmd(struct vm_fault *vmf, struct resmem_dev *d, phys_addr_t pa)
{
	bool write = vmf->flags & FAULT_FLAG_WRITE;

#ifdef RESMEM_HAVE_PFN_T
	return vmf_insert_pfn_pmd(vmf, phys_to_pfn_t(pa, d->mode == RESMEM_MODE_PAGES ? PFN_DEV | PFN_MAP : 0),
				  write);
#else
	if (d->mode == RESMEM_MODE_PAGES)
		return vmf_insert_folio_pmd(vmf, page_folio(pfn_to_page(PHYS_PFN(pa))), write);
	return vmf_insert_pfn_pmd(vmf, PHYS_PFN(pa), write);
#endif
}

/* Puts the page at physical address pa into the faulting PTE. */
static vm_fault_t resmem_map_page(struct vm_fault *vmf, struct resmem_dev *d, phys_addr_t pa)
{
	if (d->mode != RESMEM_MODE_PAGES)
		return vmf_insert_pfn(vmf->vma, vmf->address, PHYS_PFN(pa));
#ifdef RESMEM_HAVE_PFN_T
	return vmf_insert_mixed(vmf->vma, vmf->address, phys_to_pfn_t(pa, PFN_DEV | PFN_MAP));
#else
	return vmf_insert_page_mkwrite(vmf, pfn_to_page(PHYS_PFN(pa)), vmf->flags & FAULT_FLAG_WRITE);
#endif
}

static vm_fault_t resmem_insert_pmd(struct vm_fault *vmf, struct resmem_dev *d)
{
	struct vm_area_struct *vma = vmf->vma;
	unsigned long haddr = vmf->address & PMD_MASK;
	u64 off;
	phys_addr_t pa;
	pmd_t pmd;

	if (haddr < vma->vm_start || haddr + PMD_SIZE > vma->vm_end)
		return VM_FAULT_FALLBACK;
	off = ((u64)vma->vm_pgoff << PAGE_SHIFT) + (haddr - vma->vm_start);
	if (off + PMD_SIZE > d->size)
		return VM_FAULT_FALLBACK;
	pa = d->phys + off;
	if (!IS_ALIGNED(pa, PMD_SIZE))
		return VM_FAULT_FALLBACK;
	if (!vmf->pmd)
		return VM_FAULT_FALLBACK;
	/*
	 * A page table there means this 2 MiB went the 4 KiB way. A 2 MiB entry there is another
	 * thread's fault of the same 2 MiB, which got in first (->fault also gets here, when the THP
	 * policy keeps the kernel from calling ->huge_fault): insert again, which leaves it as it is.
	 * The 4 KiB way would find no page table under it and answer VM_FAULT_OOM (get_locked_pte).
	 * Found by review; the test build's fault=3 widens the window (guest case
	 * b_pmd_fault_race_inserts_again).
	 */
#ifdef RESMEM_TEST_FAULTS
	if (READ_ONCE(fault) == RESMEM_FAULT_PMD_RACE && (atomic_inc_return(&pmd_race_faults) & 1))
		usleep_range(1000, 2000);
#endif
	pmd = READ_ONCE(*vmf->pmd);
	if (!pmd_none(pmd) && !pmd_leaf(pmd))
		return VM_FAULT_FALLBACK;
	return resmem_map_pmd(vmf, d, pa);
}

static vm_fault_t resmem_fault(struct vm_fault *vmf)
{
	struct resmem_dev *d = vmf->vma->vm_private_data;
	u64 off = (u64)vmf->pgoff << PAGE_SHIFT;
	vm_fault_t ret;

#ifdef RESMEM_TEST_FAULTS
	if (READ_ONCE(fault) == RESMEM_FAULT_SIGBUS) {
		pr_info_ratelimited("%s: TEST fault injection: fault handler fails at offset 0x%llx\n",
				    d->name, off);
		return VM_FAULT_SIGBUS;
	}
#endif
	if (off >= d->size)
		return VM_FAULT_SIGBUS;
	if (resmem_pmd_allowed(vmf->vma)) {
		ret = resmem_insert_pmd(vmf, d);
		if (ret != VM_FAULT_FALLBACK)
			return ret;
	}
	return resmem_map_page(vmf, d, d->phys + off);
}

/*
 * Kernels that route PMD faults of special VMAs to ->huge_fault get the same answer. From 6.6 it
 * takes the entry's order (PMD_ORDER for a PMD), before it an enum page_entry_size.
 */
#ifdef RESMEM_HAVE_HUGE_FAULT_PE_SIZE
static vm_fault_t resmem_huge_fault(struct vm_fault *vmf, enum page_entry_size pe_size)
{
	bool pmd = pe_size == PE_SIZE_PMD;
#else
static vm_fault_t resmem_huge_fault(struct vm_fault *vmf, unsigned int order)
{
	bool pmd = order == PMD_SHIFT - PAGE_SHIFT;
#endif
	struct resmem_dev *d = vmf->vma->vm_private_data;

	if (!pmd || !resmem_pmd_allowed(vmf->vma))
		return VM_FAULT_FALLBACK;
	return resmem_insert_pmd(vmf, d);
}

static const struct vm_operations_struct resmem_vm_ops = {
	.open = resmem_vm_open,
	.close = resmem_vm_close,
	.fault = resmem_fault,
	.huge_fault = resmem_huge_fault,
};

static const struct vm_operations_struct resmem_huge_vm_ops = {
	.open = resmem_vm_open,
	.close = resmem_vm_close,
	.fault = resmem_fault,
	.huge_fault = resmem_huge_fault,
};

static void resmem_set_vm_flags(struct vm_area_struct *vma, unsigned long flags)
{
#ifdef RESMEM_HAVE_VM_FLAGS_SET
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

static int resmem_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct resmem_dev *d = container_of(file->private_data, struct resmem_dev, misc);
	u64 len = vma->vm_end - vma->vm_start;
	u64 pages = d->size >> PAGE_SHIFT;
	u64 off;

	/*
	 * VM_MAYSHARE, not VM_SHARED: mm/mmap.c do_mmap clears VM_SHARED (and VM_MAYWRITE) for a
	 * MAP_SHARED mapping of a file opened read-only, which is still a shared mapping of the device
	 * (a read-only reader's natural call). The parity probe found the module refusing it.
	 */
	if (!(vma->vm_flags & VM_MAYSHARE)) {
		pr_info_ratelimited("%s: mmap refused: MAP_PRIVATE of physical memory makes no sense; use MAP_SHARED\n",
				    d->name);
		return -EINVAL;
	}
	/* vm_pgoff is checked in pages first so that the byte offset cannot overflow. */
	if (vma->vm_pgoff >= pages || (len >> PAGE_SHIFT) > pages - vma->vm_pgoff) {
		pr_info_ratelimited("%s: mmap refused: offset 0x%llx + length 0x%llx runs past the end of the range (size 0x%llx)\n",
				    d->name, (u64)vma->vm_pgoff << PAGE_SHIFT, len, d->size);
		return -EINVAL;
	}
	off = (u64)vma->vm_pgoff << PAGE_SHIFT;

	vma->vm_private_data = d;
	vma->vm_ops = READ_ONCE(huge) && resmem_pmd_capable(d) ? &resmem_huge_vm_ops : &resmem_vm_ops;
	if (d->cache == RESMEM_CACHE_WC)
		vma->vm_page_prot = pgprot_writecombine(vma->vm_page_prot);
	else if (d->cache == RESMEM_CACHE_UC)
		vma->vm_page_prot = pgprot_noncached(vma->vm_page_prot);

	if (d->mode == RESMEM_MODE_PAGES) {
		resmem_set_vm_flags(vma, RESMEM_PAGES_VM_FLAGS | VM_DONTEXPAND | VM_DONTDUMP);
	} else {
		resmem_set_vm_flags(vma, VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP);
#ifdef RESMEM_TEST_FAULTS
		if (READ_ONCE(fault) == RESMEM_FAULT_KVA_PFN) {
			/* seed-002 (the forum driver): the ioremap address handed over as the PFN. */
			unsigned long wrong_pfn = (unsigned long)d->kaddr + vma->vm_pgoff;

			pr_info("%s: TEST fault injection: remap_pfn_range with kernel virtual address %px as the PFN\n",
				d->name, d->kaddr);
			atomic_inc(&d->maps);
			return remap_pfn_range(vma, vma->vm_start, wrong_pfn, len, vma->vm_page_prot);
		}
#endif
	}
	atomic_inc(&d->maps);
	return 0;
}

static unsigned long resmem_get_unmapped_area(struct file *file, unsigned long addr,
					      unsigned long len, unsigned long pgoff,
					      unsigned long flags)
{
	/* Place the mapping so that 2 MiB of file offset lands on 2 MiB of virtual address. */
	return thp_get_unmapped_area(file, addr, len, pgoff, flags);
}

/* ---- read, write, llseek -------------------------------------------------------------------- */

/*
 * The range read and written as a file of fixed size, with the conventions of the kernel's own
 * fixed-size devices (block/fops.c blkdev_read_iter/blkdev_write_iter): a read stops at the end
 * (short, 0 at or past it); a write is cut at the end (short) and fails ENOSPC when it starts at or
 * past it; with O_APPEND a write starts at the end (mm/filemap.c generic_write_checks_count), so it
 * is ENOSPC. Zero bytes are 0 anywhere. The bytes move through the kernel's mapping of the range:
 * pfnmap mode's memremap/ioremap (the device's cache type), pages mode's direct map, which
 * memremap_pages made (mm/memremap.c pagemap_range -> arch_add_memory), as drivers/char/mem.c
 * read_mem/write_mem copy through a mapping of physical memory, a page at a time.
 */
static void *resmem_kaddr(struct resmem_dev *d, u64 off)
{
	if (d->mode == RESMEM_MODE_PAGES)
		return phys_to_virt(d->phys + off);
	return (char *)d->kaddr + off;
}

/* Moves count bytes between the range at pos and user memory, a page at a time: the bytes moved
 * (updating *ppos), or -EFAULT / -EINTR when none moved. */
static ssize_t resmem_copy(struct resmem_dev *d, u64 pos, u64 count, char __user *ubuf,
			   bool to_user, loff_t *ppos)
{
	u64 done = 0;

	while (done < count) {
		u64 n = min_t(u64, count - done, PAGE_SIZE - ((pos + done) & ~PAGE_MASK));
		void *k = resmem_kaddr(d, pos + done);
		u64 left = to_user ? copy_to_user(ubuf + done, k, n) : copy_from_user(k, ubuf + done, n);

		done += n - left;
		if (left || fatal_signal_pending(current))
			break;
		cond_resched();
	}
	if (!done)
		return fatal_signal_pending(current) ? -EINTR : -EFAULT;
	*ppos = pos + done;
	return done;
}

static ssize_t resmem_read(struct file *file, char __user *buf, size_t count, loff_t *ppos)
{
	struct resmem_dev *d = container_of(file->private_data, struct resmem_dev, misc);

	if (*ppos < 0)
		return -EINVAL;
	if (!count || (u64)*ppos >= d->size)
		return 0;
	return resmem_copy(d, *ppos, min_t(u64, count, d->size - *ppos), buf, true, ppos);
}

static ssize_t resmem_write(struct file *file, const char __user *buf, size_t count, loff_t *ppos)
{
	struct resmem_dev *d = container_of(file->private_data, struct resmem_dev, misc);
	u64 pos;

	if (!count)
		return 0;
	if (*ppos < 0)
		return -EINVAL;
	pos = (file->f_flags & O_APPEND) ? d->size : (u64)*ppos;
	if (pos >= d->size)
		return -ENOSPC;
	return resmem_copy(d, pos, min_t(u64, count, d->size - pos), (char __user *)buf, false,
			   ppos);
}

/*
 * A file's lseek over the range (fs/read_write.c generic_file_llseek_size): SEEK_END and
 * SEEK_DATA/SEEK_HOLE are relative to the range's size, positions past the end are allowed (reads
 * there give 0, writes ENOSPC), negative ones are EINVAL. It replaces noop_llseek, under which
 * every lseek returned the old position and changed nothing.
 */
static loff_t resmem_llseek(struct file *file, loff_t offset, int whence)
{
	struct resmem_dev *d = container_of(file->private_data, struct resmem_dev, misc);

	return generic_file_llseek_size(file, offset, whence, MAX_LFS_FILESIZE, d->size);
}

/* ---- open, ioctl --------------------------------------------------------------------------- */

static int resmem_open(struct inode *inode, struct file *file)
{
	struct resmem_dev *d = container_of(file->private_data, struct resmem_dev, misc);

	if (!smp_load_acquire(&resmem_loaded)) {
		pr_info_ratelimited("%s: open refused: the module is still loading, or its load is failing; open again once insmod/modprobe has returned (-EAGAIN)\n",
				    d->name);
		return -EAGAIN;
	}
	atomic_inc(&d->opens);
	return 0;
}

static int resmem_release(struct inode *inode, struct file *file)
{
	struct resmem_dev *d = container_of(file->private_data, struct resmem_dev, misc);

	atomic_dec(&d->opens);
	return 0;
}

#ifdef RESMEM_TEST_FAULTS
/* TEST BUILD: pin the user range with FOLL_LONGTERM (what the CUDA driver's default path does). */
static long resmem_test_pin(struct resmem_dev *d, void __user *uarg)
{
	struct resmem_test_pin req;
	struct page **pages;
	long n, pinned;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (!req.length || req.length > 64 * PAGE_SIZE || !PAGE_ALIGNED(req.addr) ||
	    !PAGE_ALIGNED(req.length))
		return -EINVAL;
	n = req.length >> PAGE_SHIFT;
	pages = kcalloc(n, sizeof(*pages), GFP_KERNEL);
	if (!pages)
		return -ENOMEM;
	pinned = pin_user_pages_fast(req.addr, n, FOLL_WRITE | FOLL_LONGTERM, pages);
	if (pinned < 0) {
		pr_info("%s: TEST pin_user_pages_fast(FOLL_LONGTERM) of 0x%llx: %ld\n", d->name,
			req.addr, pinned);
		kfree(pages);
		return pinned;
	}
	req.pinned = pinned;
	req.first_phys = pinned ? page_to_phys(pages[0]) : 0;
	pr_info("%s: TEST pinned %ld pages with FOLL_LONGTERM, first at phys 0x%llx\n", d->name,
		pinned, req.first_phys);
	unpin_user_pages(pages, pinned);
	kfree(pages);
	return copy_to_user(uarg, &req, sizeof(req)) ? -EFAULT : 0;
}
#endif

static long resmem_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct resmem_dev *d = container_of(file->private_data, struct resmem_dev, misc);
	void __user *uarg = (void __user *)arg;
	struct resmem_info info;
	u64 v;

	switch (cmd) {
	case RESMEM_IOC_INFO:
		memset(&info, 0, sizeof(info));
		info.abi_version = RESMEM_ABI_VERSION;
		info.mode = d->mode;
		info.cache = d->cache;
#ifdef RESMEM_TEST_FAULTS
		info.flags |= RESMEM_INFO_FAULT_INJECTION;
#endif
		info.phys_addr = d->phys;
		info.size = d->size;
		strscpy(info.name, d->name, sizeof(info.name));
		return copy_to_user(uarg, &info, sizeof(info)) ? -EFAULT : 0;
	case RESMEM_IOC_LENGTH:
		v = d->size;
		return copy_to_user(uarg, &v, sizeof(v)) ? -EFAULT : 0;
	case RESMEM_IOC_PHYS:
		v = d->phys;
		return copy_to_user(uarg, &v, sizeof(v)) ? -EFAULT : 0;
#ifdef RESMEM_TEST_FAULTS
	case RESMEM_IOC_TEST_PIN:
		return resmem_test_pin(d, uarg);
#endif
	default:
		return -ENOTTY;
	}
}

static const struct file_operations resmem_fops = {
	.owner = THIS_MODULE,
	.open = resmem_open,
	.release = resmem_release,
	.read = resmem_read,
	.write = resmem_write,
	.mmap = resmem_mmap,
	.get_unmapped_area = resmem_get_unmapped_area,
	.unlocked_ioctl = resmem_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = resmem_llseek,
};

/* ---- load-time checks ---------------------------------------------------------------------- */

/* Parses "SIZE$PHYS" (memmap syntax, K/M/G/T suffixes) from *cursor; advances past one comma. */
static int parse_one_range(char **cursor, u64 *out_phys, u64 *out_size)
{
	char *s = *cursor, *end;

	int entry = strcspn(s, ","); /* the entry's length, for the messages */

	*out_size = memparse(s, &end);
	if (end == s || *end != '$') {
		pr_err("ranges=%s: cannot parse '%.*s': expected SIZE$PHYS like 64M$0x40000000 (-EINVAL)\n",
		       ranges, entry, *cursor);
		return -EINVAL;
	}
	s = end + 1;
	*out_phys = memparse(s, &end);
	if (end == s || (*end != ',' && *end != '\0')) {
		pr_err("ranges=%s: cannot parse the address in '%.*s': expected SIZE$PHYS like 64M$0x40000000 (-EINVAL)\n",
		       ranges, entry, *cursor);
		return -EINVAL;
	}
	*cursor = *end == ',' ? end + 1 : end;
	return 0;
}

struct coverage {
	u64 next; /* first byte not yet seen inside a Reserved resource */
};

/* walk_iomem_res_desc's callback: r is the next Reserved piece, cut to the range, in address order. */
static int reserved_piece(struct resource *r, void *arg)
{
	struct coverage *c = arg;

	if (r->start > c->next)
		return 1; /* a gap: the run from the range's start ends here */
	c->next = max_t(u64, c->next, (u64)r->end + 1);
	return 0;
}

/*
 * Whether Reserved resources cover every byte of [pa, last]. region_intersects() cannot say it: a
 * range that runs from a Reserved one into a hole (no resource at all, past the end of RAM) is
 * REGION_INTERSECTS there, as if all of it were Reserved, and the claim then fails EBUSY with no
 * word of the hole.
 */
static bool inside_reserved(u64 pa, u64 last)
{
	struct coverage c = { .next = pa };

	walk_iomem_res_desc(IORES_DESC_RESERVED, IORESOURCE_MEM, pa, last, &c, reserved_piece);
	return c.next > last;
}

/*
 * Write/read probe: one word at the start, the end and each 1/64 of the range, through a
 * temporary write-back mapping; the original contents are restored. The kernel accepts memmap=
 * over holes where reads return zeros or ones (FACTS.md "Holes"); RAM returns what was written.
 */
static int probe_ram(u64 pa, u64 sz, u64 *bad)
{
	static const u64 patterns[2] = { 0x5a5aa5a5c3c33c3cULL, 0xa5a55a5a3c3cc3c3ULL };
	u64 step = max_t(u64, PAGE_SIZE, rounddown(sz / 64, PAGE_SIZE));
	u64 at;
	int i;

	for (at = 0;; at += step) {
		u64 page_pa = pa + min(at, sz - PAGE_SIZE);
		u64 *w = memremap(page_pa, PAGE_SIZE, MEMREMAP_WB);
		u64 saved;
		bool ok = true;

		if (!w) {
			*bad = page_pa;
			return -ENOMEM;
		}
		saved = READ_ONCE(*w);
		for (i = 0; i < 2; i++) {
			WRITE_ONCE(*w, patterns[i]);
			mb();
			clflush_cache_range(w, sizeof(*w));
			if (READ_ONCE(*w) != patterns[i])
				ok = false;
		}
		WRITE_ONCE(*w, saved);
		clflush_cache_range(w, sizeof(*w));
		memunmap(w);
		if (!ok) {
			*bad = page_pa;
			return -ENXIO;
		}
		if (at >= sz - PAGE_SIZE)
			return 0;
	}
}

#ifdef CONFIG_X86
/*
 * The firmware's own memory map (e820_table_firmware, what /sys/firmware/memmap lists): the map
 * before memmap= edited it. memmap=nn$ss turns firmware RAM into Reserved; a range the firmware
 * itself reserved (EFI runtime services, ACPI tables and NVS, TPM event logs) is RAM too, answers a
 * probe, and is not the user's to hand out.
 */
static const struct {
	enum e820_type type;
	const char *name; /* as /sys/firmware/memmap/N/type names it */
} firmware_kinds[] = {
	{ E820_TYPE_RESERVED, "Reserved" },
	{ E820_TYPE_ACPI, "ACPI Tables" },
	{ E820_TYPE_NVS, "ACPI Non-volatile Storage" },
	{ E820_TYPE_UNUSABLE, "Unusable memory" },
	{ E820_TYPE_PMEM, "Persistent Memory" },
	{ E820_TYPE_PRAM, "Persistent Memory (legacy)" },
	{ E820_TYPE_SOFT_RESERVED, "Soft Reserved" },
};

#ifdef RESMEM_HAVE_E820_RAW_EXPORT
/* Whether the firmware's map lists any of [pa, pa + sz) with this type. */
static bool firmware_map_has(u64 pa, u64 sz, enum e820_type type)
{
	return e820__mapped_raw_any(pa, pa + sz, type);
}

static int firmware_map_load(void)
{
	return 0;
}

static void firmware_map_free(void)
{
}
#else
/*
 * Linux 6.19 exports e820__mapped_raw_any, the firmware's e820 map, to KVM alone. The kernel
 * still publishes the firmware's map, unedited by memmap=, as /sys/firmware/memmap/N/{start,end,
 * type} (drivers/firmware/memmap.c; arch/x86/kernel/e820.c e820__reserve_resources adds
 * e820_table_kexec's entries: the firmware's with the kernel's own reservations, never memmap='s),
 * so the load reads it from there into firmware_map, and the checks below ask the copy. It reads
 * through a mount of sysfs of its own, so that no chroot, mount namespace or tmpfs over
 * /sys/firmware/memmap of the loading process can hand it another map: under lockdown that map
 * is all that keeps firmware memory from being served. The kernel's own e820 map is no stand-in:
 * a memmap= reservation and a firmware one both read Reserved there. When the map cannot be read
 * (a kernel without CONFIG_FIRMWARE_MEMMAP) the load is refused: no range could be checked.
 */
struct firmware_range {
	u64 start, end; /* end inclusive, as sysfs has it */
	enum e820_type type;
};

/* Entry numbers only grow (memory hot-remove leaves gaps); the search stops after this many
 * missing in a row, or at the cap. */
#define FIRMWARE_MAP_GAP 64
#define FIRMWARE_MAP_MAX 4096

static struct firmware_range *firmware_map;
static int firmware_map_len;
static struct vfsmount *firmware_sysfs;

static bool firmware_map_has(u64 pa, u64 sz, enum e820_type type)
{
	int i;

	for (i = 0; i < firmware_map_len; i++)
		if (firmware_map[i].type == type && firmware_map[i].start < pa + sz &&
		    firmware_map[i].end >= pa)
			return true;
	return false;
}

/*
 * firmware/memmap/N/WHAT under the private sysfs mount, the trailing newline cut: 0, or a
 * negative errno. A plain open and read: kernel_read_file would pass the read to the security
 * modules as a READING_UNKNOWN load, which IPE answers with a WARN and a stack trace per file.
 */
static int firmware_map_read(int n, const char *what, char *buf, size_t len)
{
	char path[64];
	struct file *f;
	loff_t pos = 0;
	ssize_t got;

	snprintf(path, sizeof(path), "firmware/memmap/%d/%s", n, what);
	f = file_open_root_mnt(firmware_sysfs, path, O_RDONLY, 0);
	if (IS_ERR(f))
		return PTR_ERR(f);
	got = kernel_read(f, buf, len - 1, &pos);
	filp_close(f, NULL);
	if (got < 0)
		return got;
	buf[got] = 0;
	strim(buf);
	return 0;
}

/* Entry n of the firmware's map into *r: 0, -ENOENT for no such entry, or another negative errno. */
static int firmware_map_read_entry(int n, struct firmware_range *r)
{
	char buf[48];
	int i, ret;

	ret = firmware_map_read(n, "start", buf, sizeof(buf));
	if (!ret)
		ret = kstrtou64(buf, 0, &r->start);
	if (!ret)
		ret = firmware_map_read(n, "end", buf, sizeof(buf));
	if (!ret)
		ret = kstrtou64(buf, 0, &r->end);
	if (!ret)
		ret = firmware_map_read(n, "type", buf, sizeof(buf));
	if (ret)
		return ret;
	r->type = strcmp(buf, "System RAM") ? 0 : E820_TYPE_RAM;
	for (i = 0; i < ARRAY_SIZE(firmware_kinds); i++)
		if (!strcmp(buf, firmware_kinds[i].name))
			r->type = firmware_kinds[i].type;
	if (!r->type) /* a type this table does not know: the firmware's, not RAM */
		r->type = E820_TYPE_RESERVED;
	return 0;
}

static void firmware_map_free(void)
{
	kfree(firmware_map);
	firmware_map = NULL;
	firmware_map_len = 0;
	if (firmware_sysfs)
		mntput(firmware_sysfs);
	firmware_sysfs = NULL;
}

/*
 * Appends every entry of the firmware's map to firmware_map: 0 or a negative errno, with the entry
 * that failed in *failed.
 */
static int firmware_map_read_all(int *failed)
{
	struct firmware_range r, *grown;
	int n, missing = 0, ret;

	for (n = 0; n < FIRMWARE_MAP_MAX && missing < FIRMWARE_MAP_GAP; n++) {
		*failed = n;
		ret = firmware_map_read_entry(n, &r);
		if (ret == -ENOENT) {
			missing++;
			continue;
		}
		if (ret)
			return ret;
		missing = 0;
		grown = krealloc_array(firmware_map, firmware_map_len + 1, sizeof(r), GFP_KERNEL);
		if (!grown)
			return -ENOMEM;
		firmware_map = grown;
		firmware_map[firmware_map_len++] = r;
	}
	return firmware_map_len ? 0 : -ENOENT;
}

static int firmware_map_load(void)
{
	struct file_system_type *sysfs = get_fs_type("sysfs"); /* built in: no reference to put */
	int ret, failed = 0;

	firmware_sysfs = sysfs ? vfs_kern_mount(sysfs, SB_KERNMOUNT, "sysfs", NULL) : ERR_PTR(-ENODEV);
	if (IS_ERR(firmware_sysfs)) {
		ret = PTR_ERR(firmware_sysfs);
		firmware_sysfs = NULL;
		pr_err("cannot mount sysfs to read the firmware's memory map (%d): this kernel keeps its own copy (e820__mapped_raw_any) from modules, and without the map no range can be checked\n",
		       ret);
		return ret;
	}
	ret = firmware_map_read_all(&failed);
	if (ret == -ENOENT)
		pr_err("no firmware memory map in sysfs (firmware/memmap/N: a kernel without CONFIG_FIRMWARE_MEMMAP?): this kernel keeps its own copy (e820__mapped_raw_any) from modules, and without the map no range can be checked (-ENOENT)\n");
	else if (ret)
		pr_err("cannot read the firmware's memory map at entry %d of sysfs firmware/memmap (%d): without it no range can be checked\n",
		       failed, ret);
	if (ret)
		firmware_map_free();
	return ret;
}
#endif

/* The firmware's name for what it reserved inside [pa, pa + sz), or NULL if it reserved none. */
static const char *firmware_reserved(u64 pa, u64 sz)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(firmware_kinds); i++)
		if (firmware_map_has(pa, sz, firmware_kinds[i].type))
			return firmware_kinds[i].name;
	return NULL;
}

/* Whether the firmware listed any of [pa, pa + sz) as RAM. */
static bool firmware_ram(u64 pa, u64 sz)
{
	return firmware_map_has(pa, sz, E820_TYPE_RAM);
}
#else
static const char *firmware_reserved(u64 pa, u64 sz)
{
	return NULL;
}

static bool firmware_ram(u64 pa, u64 sz)
{
	return true;
}

static int firmware_map_load(void)
{
	return 0;
}

static void firmware_map_free(void)
{
}
#endif

static int check_and_claim(struct resmem_dev *d)
{
	const char *firmware_kind;
	u64 pa = d->phys, sz = d->size, last;
	int ret;

	if (sz == 0) {
		pr_err("%s: refusing [phys 0x%llx size 0]: size zero; give a size such as 64M$0x%llx (-ERANGE)\n",
		       d->name, pa, pa);
		return -ERANGE;
	}
	if (pa + sz < pa || (cpu_phys_bits() < 64 && (pa + sz - 1) >> cpu_phys_bits())) {
		pr_err("%s: refusing [phys 0x%llx size 0x%llx]: end overflows the %u-bit physical address space (-EOVERFLOW)\n",
		       d->name, pa, sz, cpu_phys_bits());
		return -EOVERFLOW;
	}
	last = pa + sz - 1;
	if (!PAGE_ALIGNED(pa) || !PAGE_ALIGNED(sz)) {
		pr_err("%s: refusing [mem 0x%llx-0x%llx]: not page aligned; start and size must be multiples of 0x%lx (-EDOM)\n",
		       d->name, pa, last, PAGE_SIZE);
		return -EDOM;
	}
	if (region_intersects(pa, sz, IORESOURCE_SYSTEM_RAM, IORES_DESC_NONE) != REGION_DISJOINT) {
		pr_err("%s: refusing [mem 0x%llx-0x%llx]: intersects System RAM (see /proc/iomem); this module never exposes kernel memory: reserve the range at boot with memmap=0x%llx$0x%llx (-EPERM)\n",
		       d->name, pa, last, sz, pa);
		return -EPERM;
	}
	/* arch/x86/kernel/e820.c do_mark_busy: below 1 MiB is the legacy BIOS/VGA/ROM area. */
	if (pa < SZ_1M) {
		pr_err("%s: refusing [mem 0x%llx-0x%llx]: below 1 MiB is the legacy BIOS/VGA/ROM area, not RAM to serve (-ENXIO)\n",
		       d->name, pa, last);
		return -ENXIO;
	}
	firmware_kind = firmware_reserved(pa, sz);
	if (firmware_kind) {
		pr_err("%s: refusing [mem 0x%llx-0x%llx]: the firmware's memory map (/sys/firmware/memmap) marks part of it '%s': firmware memory, not a reservation of yours; reserve a range the firmware lists as System RAM with memmap= (-ENXIO)\n",
		       d->name, pa, last, firmware_kind);
		return -ENXIO;
	}
	/* memmap=nn$ss makes an e820 Reserved entry, a top-level "Reserved" in /proc/iomem. */
	if (!inside_reserved(pa, last)) {
		pr_err("%s: refusing [mem 0x%llx-0x%llx]: not entirely inside a range the kernel marked Reserved (see /proc/iomem); boot with memmap=0x%llx$0x%llx (-EADDRNOTAVAIL)\n",
		       d->name, pa, last, sz, pa);
		return -EADDRNOTAVAIL;
	}
	d->res = request_mem_region(pa, sz, d->name);
	if (!d->res) {
		pr_err("%s: refusing [mem 0x%llx-0x%llx]: overlaps another resource that claimed part of it (see /proc/iomem: another driver, a device, or a second resmem range) (-EBUSY)\n",
		       d->name, pa, last);
		return -EBUSY;
	}
	/*
	 * The claim nests under the innermost resource that contains it. A memmap= over a PCI hole is
	 * "Expanded ... due to conflict with PCI Bus" (kernel/resource.c insert_resource_expand_to_fit)
	 * so the Reserved contains the bus window: a claim landing in anything but Reserved is device
	 * address space, not RAM.
	 */
	if (!d->res->parent || d->res->parent->desc != IORES_DESC_RESERVED) {
		pr_err("%s: refusing [mem 0x%llx-0x%llx]: lies inside '%s', device address space with no RAM behind it (reserve RAM listed in /sys/firmware/memmap as System RAM) (-ENXIO)\n",
		       d->name, pa, last,
		       d->res->parent && d->res->parent->name ? d->res->parent->name : "?");
		ret = -ENXIO;
		goto release;
	}
	if (probe) {
		u64 bad = 0;

		ret = probe_ram(pa, sz, &bad);
		if (ret == -ENXIO)
			pr_err("%s: refusing [mem 0x%llx-0x%llx]: no RAM behind it: a probe written at 0x%llx did not read back (a hole or ROM the kernel accepted as memmap=; choose System RAM from /sys/firmware/memmap) (-ENXIO)\n",
			       d->name, pa, last, bad);
		else if (ret)
			pr_err("%s: refusing [mem 0x%llx-0x%llx]: cannot map the page at 0x%llx to probe it (memremap failed; the kernel is short of memory or of mapping space); load again, or with probe=0 to skip the probe (-ENOMEM)\n",
			       d->name, pa, last, bad);
		if (ret)
			goto release;
	}
	return 0;

release:
	release_mem_region(pa, sz);
	d->res = NULL;
	return ret;
}

/* pfnmap: hold a kernel mapping of the whole range with the device's cache type (PAT owner). */
static int map_kernel_side(struct resmem_dev *d)
{
	switch (d->cache) {
	case RESMEM_CACHE_WC:
		d->kaddr = (void __force *)ioremap_wc(d->phys, d->size);
		d->kaddr_is_io = true;
		break;
	case RESMEM_CACHE_UC:
		d->kaddr = (void __force *)ioremap_uc(d->phys, d->size);
		d->kaddr_is_io = true;
		break;
	default:
		d->kaddr = memremap(d->phys, d->size, MEMREMAP_WB);
		d->kaddr_is_io = false;
	}
	if (!d->kaddr) {
		pr_err("%s: cannot map [mem 0x%llx-0x%llx] as %s in the kernel (PAT conflict with another mapping?) (-ENOMEM)\n",
		       d->name, (u64)d->phys, (u64)(d->phys + d->size - 1), cache_name(d->cache));
		return -ENOMEM;
	}
	return 0;
}

static void unmap_kernel_side(struct resmem_dev *d)
{
	if (!d->kaddr)
		return;
	if (d->kaddr_is_io)
		iounmap((void __iomem __force *)d->kaddr);
	else
		memunmap(d->kaddr);
	d->kaddr = NULL;
}

#ifdef CONFIG_ZONE_DEVICE
static int make_struct_pages(struct resmem_dev *d)
{
	void *addr;

	d->pgmap.type = MEMORY_DEVICE_GENERIC;
	d->pgmap.range.start = d->phys;
	d->pgmap.range.end = d->phys + d->size - 1;
	d->pgmap.nr_range = 1;
#ifndef RESMEM_HAVE_PFN_T
	/* 2 MiB folios, so that 2 MiB entries can map them (RESMEM_PAGES_VM_FLAGS). */
	if (IS_ALIGNED(d->phys, PMD_SIZE) && IS_ALIGNED(d->size, PMD_SIZE))
		d->pgmap.vmemmap_shift = PMD_SHIFT - PAGE_SHIFT;
#endif
	addr = memremap_pages(&d->pgmap, NUMA_NO_NODE);
	if (IS_ERR(addr)) {
		pr_err("%s: memremap_pages for [mem 0x%llx-0x%llx] failed (%ld); pages mode needs 2 MiB aligned ranges on a kernel with ZONE_DEVICE; use mode=pfnmap\n",
		       d->name, (u64)d->phys, (u64)(d->phys + d->size - 1), PTR_ERR(addr));
		return PTR_ERR(addr);
	}
	d->pgmap_live = true;
	return 0;
}

static void free_struct_pages(struct resmem_dev *d)
{
	memunmap_pages(&d->pgmap);
	d->pgmap_live = false;
}
#else
/* A kernel built without ZONE_DEVICE has no memremap_pages: pages mode cannot be. */
static int make_struct_pages(struct resmem_dev *d)
{
	pr_err("%s: mode=pages needs a kernel with CONFIG_ZONE_DEVICE (memremap_pages), which this one lacks; use mode=pfnmap (-EOPNOTSUPP)\n",
	       d->name);
	return -EOPNOTSUPP;
}

static void free_struct_pages(struct resmem_dev *d)
{
}
#endif

/* ---- page references that outlive the mappings (pages mode) --------------------------------- */

/*
 * The pages of the range referenced by anyone but the device, and the offset of the first. A
 * ZONE_DEVICE GENERIC folio counts 1 while only its pgmap has it (mm/mm_init.c
 * __init_zone_device_page; mm/memremap.c memunmap_pages then tears the struct pages down whatever
 * their count). Devmap entries add nothing to it and the folio entries of kernels without pfn_t
 * give theirs back when they are zapped, before the VMA's close: after the last unmap, every
 * count above 1 is a reference taken through a mapping (get_user_pages, pin_user_pages) and not
 * yet given back. A 2 MiB folio counts for its 512 pages.
 */
/* The reference count of the page at pfn, and in *nr how many pages share it (its folio's). */
static int resmem_ref_count(unsigned long pfn, unsigned long *nr)
{
#ifdef RESMEM_HAVE_PFN_T
	/* Order-0 pages (no vmemmap_shift), and kernels before folios (5.16) have only these. */
	*nr = 1;
	return page_ref_count(pfn_to_page(pfn));
#else
	struct folio *folio = page_folio(pfn_to_page(pfn));

	*nr = folio_nr_pages(folio);
	return folio_ref_count(folio);
#endif
}

#ifdef RESMEM_TEST_FAULTS
/* fault=4: the work's scan waits 2 s once past the range's first page (or 2 MiB folio). */
static void resmem_refs_scan_fault(struct resmem_dev *d)
{
	if (READ_ONCE(fault) != RESMEM_FAULT_REFS_SCAN)
		return;
	pr_info("%s: TEST fault injection: the reference scan pauses 2000 ms past the first page\n",
		d->name);
	msleep(2000);
	pr_info("%s: TEST fault injection: the reference scan goes on\n", d->name);
}
#endif

/* Pages of the range referenced through a mapping; *first: the first one's offset. */
static unsigned long resmem_referenced_pages(struct resmem_dev *d, u64 *first, bool from_work)
{
	unsigned long start = PHYS_PFN(d->phys), end = PHYS_PFN(d->phys + d->size), pfn, nr, n = 0;

	for (pfn = start; pfn < end; pfn += nr) {
		if (resmem_ref_count(pfn, &nr) > 1) {
			if (!n)
				*first = (u64)(pfn - start) << PAGE_SHIFT;
			n += nr;
		}
		if (((pfn - start) & 0xffff) < nr)
			cond_resched();
#ifdef RESMEM_TEST_FAULTS
		if (from_work && pfn == start)
			resmem_refs_scan_fault(d);
#endif
	}
	return n;
}

/*
 * Every second while the module holds itself: lets go once a whole scan found no page referenced
 * and no last unmap came while it scanned. Without the second condition a reference taken behind
 * the scan (a new mapping's page, spliced and unmapped while the scan was further on) would be
 * missed and the module could unload under it.
 */
static void resmem_refs_work(struct work_struct *work)
{
	struct resmem_dev *d = container_of(to_delayed_work(work), struct resmem_dev, refs_work);
	unsigned long n;
	u64 first = 0;

	mutex_lock(&d->refs_lock);
	d->refs_recheck = false;
	mutex_unlock(&d->refs_lock);
	n = resmem_referenced_pages(d, &first, true);
	mutex_lock(&d->refs_lock);
	if (n || d->refs_recheck) {
		mutex_unlock(&d->refs_lock);
		schedule_delayed_work(&d->refs_work, HZ);
		return;
	}
	d->refs_held = false;
	mutex_unlock(&d->refs_lock);
	pr_info("%s: no page of the range is referenced any more: the module may unload\n", d->name);
	module_put(THIS_MODULE); /* the exit path's cancel_delayed_work_sync waits for this function */
}

/* At the last unmap: page references still out keep the module loaded until they are released. */
static void resmem_hold_while_referenced(struct resmem_dev *d)
{
	unsigned long n;
	u64 first = 0;

	mutex_lock(&d->refs_lock);
	if (d->refs_held) {
		d->refs_recheck = true;
		goto out;
	}
	n = resmem_referenced_pages(d, &first, false);
	if (!n)
		goto out;
	d->refs_held = true;
	__module_get(THIS_MODULE);
	pr_info("%s: %lu pages (the first at offset 0x%llx) are still referenced after the last unmap (a pipe, an io_uring buffer, O_DIRECT I/O, a pin): the module stays loaded until they are released\n",
		d->name, n, first);
	schedule_delayed_work(&d->refs_work, HZ);
out:
	mutex_unlock(&d->refs_lock);
}

static void resmem_destroy(struct resmem_dev *d)
{
	cancel_delayed_work_sync(&d->refs_work);
	if (d->registered)
		misc_deregister(&d->misc);
	if (d->pgmap_live)
		free_struct_pages(d);
	unmap_kernel_side(d);
	if (d->res)
		release_mem_region(d->phys, d->size);
	kfree(d);
}

static int parse_choice(char **arr, int n, int i, const char *what, const char *a, const char *b,
			const char *c, u32 *out)
{
	const char *v;

	if (n == 0)
		return 0;
	v = arr[min(i, n - 1)];
	if (a && sysfs_streq(v, a))
		*out = 0;
	else if (b && sysfs_streq(v, b))
		*out = 1;
	else if (c && sysfs_streq(v, c))
		*out = 2;
	else {
		pr_err("%s=%s for device %d: unknown; expected one of %s%s%s%s%s (-EINVAL)\n", what, v, i,
		       a, b ? ", " : "", b ? b : "", c ? ", " : "", c ? c : "");
		return -EINVAL;
	}
	return 0;
}

static int resmem_create(int index, u64 pa, u64 sz)
{
	struct resmem_dev *d;
	int ret;

	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return -ENOMEM;
	snprintf(d->name, sizeof(d->name), "resmem%d", index);
	d->phys = pa;
	d->size = sz;
	d->mode = RESMEM_MODE_PFNMAP;
	d->cache = RESMEM_CACHE_WB;
	mutex_init(&d->refs_lock);
	INIT_DELAYED_WORK(&d->refs_work, resmem_refs_work);
	ret = parse_choice(mode, nr_mode, index, "mode", "pfnmap", "pages", NULL, &d->mode);
	if (ret)
		goto fail;
	ret = parse_choice(cache, nr_cache, index, "cache", "wb", "wc", "uc", &d->cache);
	if (ret)
		goto fail;
	if (d->mode == RESMEM_MODE_PAGES && d->cache != RESMEM_CACHE_WB) {
		/* mm/memremap.c pagemap_range maps ZONE_DEVICE GENERIC pages with PAGE_KERNEL (WB). */
		pr_err("%s: mode=pages supports cache=wb only (memremap_pages maps write-back); use mode=pfnmap for %s (-EINVAL)\n",
		       d->name, cache_name(d->cache));
		ret = -EINVAL;
		goto fail;
	}

	ret = check_and_claim(d);
	if (ret)
		goto fail;
	if (d->mode == RESMEM_MODE_PAGES) {
		ret = make_struct_pages(d);
	} else {
		ret = map_kernel_side(d);
	}
	if (ret)
		goto fail;

	devices[nr_devices++] = d;
	return 0;

fail:
	resmem_destroy(d);
	return ret;
}

/*
 * Registers every device's node, last: once a node exists a program can open it, so nothing that
 * can fail comes after it but the other nodes' registration (and, in a test build, the injected
 * failure). Opens before the load completes are refused (resmem_loaded).
 */
static int resmem_register_all(void)
{
	int i, ret;

	for (i = 0; i < nr_devices; i++) {
		struct resmem_dev *d = devices[i];

		d->misc.minor = MISC_DYNAMIC_MINOR;
		d->misc.name = d->name;
		d->misc.fops = &resmem_fops;
		d->misc.mode = 0600; /* kmod/99-resmem.rules sets the group */
		ret = misc_register(&d->misc);
		if (ret) {
			pr_err("%s: misc_register failed (%d)\n", d->name, ret);
			return ret;
		}
		d->registered = true;
		pr_info("%s: serving [mem 0x%llx-0x%llx] (%llu MiB) mode=%s cache=%s abi=%d%s\n",
			d->name, (u64)d->phys, (u64)(d->phys + d->size - 1), d->size >> 20,
			mode_name(d->mode), cache_name(d->cache), RESMEM_ABI_VERSION,
#ifdef RESMEM_TEST_FAULTS
			" TEST BUILD with fault injection"
#else
			""
#endif
		);
	}
	return 0;
}

static void resmem_remove_all(void)
{
	while (nr_devices > 0)
		resmem_destroy(devices[--nr_devices]);
}

#ifdef RESMEM_EXTENSION
/* A build that adds a part to the driver (kmod/resmem_edu.c) defines these after this file. */
static int resmem_extension_init(void);
static void resmem_extension_exit(void);
#endif

/* The devices of ranges=SIZE$PHYS,... */
static int resmem_create_from_ranges(void)
{
	char *cursor = ranges;
	u64 pa, sz;
	int ret;

	while (*cursor) {
		if (nr_devices == RESMEM_MAX_DEVICES) {
			pr_err("ranges=%s: more than %d ranges (-EINVAL)\n", ranges, RESMEM_MAX_DEVICES);
			return -EINVAL;
		}
		ret = parse_one_range(&cursor, &pa, &sz);
		if (!ret)
			ret = resmem_create(nr_devices, pa, sz);
		if (ret)
			return ret;
	}
	return 0;
}

/* The devices of phys=A,B size=X,Y. */
static int resmem_create_from_phys(void)
{
	int i, ret;

	if (nr_phys != nr_size) {
		pr_err("phys= has %d entries but size= has %d; give one size per address (-EINVAL)\n",
		       nr_phys, nr_size);
		return -EINVAL;
	}
	for (i = 0; i < nr_phys; i++) {
		ret = resmem_create(i, phys[i], size[i]);
		if (ret)
			return ret;
	}
	return 0;
}

struct memmap_walk {
	u64 next; /* the first address after the last resource looked at */
	int ret;
};

/*
 * Whether every byte of [pa, pa + sz) is RAM that memmap= reserved: the firmware listed it as RAM
 * and reserved none of it. The firmware map is asked "any of it?" only (e820__mapped_raw_any), so
 * "all of it" is taken from the chunk's first and last pages being RAM with no firmware type
 * inside: firmware entries are far larger than a 2 MiB chunk, and the load's probe and claim
 * check each range again.
 */
static bool memmap_ram(u64 pa, u64 sz)
{
	return !firmware_reserved(pa, sz) && firmware_ram(pa, PAGE_SIZE) &&
	       firmware_ram(pa + sz - PAGE_SIZE, PAGE_SIZE);
}

/*
 * The next run of memmap= RAM in [*at, end), both page aligned: 2 MiB chunks, then pages at the
 * edges. *at moves past the run (or to end); *len is 0 when there is none.
 */
static u64 memmap_next_run(u64 *at, u64 end, u64 *len)
{
	u64 a = *at, start;

	while (a < end && !memmap_ram(a, PAGE_SIZE))
		a += (IS_ALIGNED(a, SZ_2M) && a + SZ_2M <= end && !firmware_ram(a, SZ_2M)) ? SZ_2M :
											PAGE_SIZE;
	start = a;
	while (a < end) {
		if (IS_ALIGNED(a, SZ_2M) && a + SZ_2M <= end && memmap_ram(a, SZ_2M))
			a += SZ_2M;
		else if (memmap_ram(a, PAGE_SIZE))
			a += PAGE_SIZE;
		else
			break;
	}
	*at = a;
	*len = a - start;
	return start;
}

/*
 * One top-level Reserved resource of the kernel's map. The kernel merges a memmap= reservation with
 * a neighbouring firmware reservation (memmap=188G$4G usually touches the BIOS area that ends at
 * 4 GiB) and grows one over a PCI hole over the bus window, so the resource is cut into the runs
 * the firmware listed as RAM: one device each. Below 1 MiB is the legacy area; runs under 2 MiB
 * are the kernel's own quirks (arch/x86/kernel/setup.c trim_snb_memory reserves single pages):
 * name those with ranges= to serve them.
 */
static int resmem_memmap_one(struct resource *res, void *arg)
{
	struct memmap_walk *w = arg;
	u64 at = max_t(u64, PAGE_ALIGN(res->start), SZ_1M), end = (res->end + 1) & PAGE_MASK;
	u64 pa, sz;

	if (res->start < w->next) /* a resource nested in one already looked at */
		return 0;
	w->next = res->end + 1;
	while (at < end) {
		pa = memmap_next_run(&at, end, &sz);
		if (sz < SZ_2M)
			continue;
		if (nr_devices == RESMEM_MAX_DEVICES) {
			pr_info("not serving [mem 0x%llx-0x%llx]: %d devices at most; name the ranges with ranges=\n",
				pa, pa + sz - 1, RESMEM_MAX_DEVICES);
			continue;
		}
		w->ret = resmem_create(nr_devices, pa, sz);
		if (w->ret)
			return w->ret;
	}
	return 0;
}

/*
 * No addresses given: what the kernel reserved from memmap= on its command line, found in its own
 * map (the top-level Reserved resources, /proc/iomem) against the firmware's. The way to load
 * under lockdown, where the kernel refuses the address parameters.
 */
static int resmem_create_from_memmap(void)
{
	struct memmap_walk w = {};

	walk_iomem_res_desc(IORES_DESC_RESERVED, IORESOURCE_MEM, 0, U64_MAX, &w, resmem_memmap_one);
	if (w.ret)
		return w.ret;
	if (!nr_devices) {
		pr_err("no range given, and the kernel reserved none out of RAM: boot with memmap=SIZE$ADDR over System RAM (docs/kmod.md), or load with ranges=SIZE$ADDR (-ENODEV)\n");
		return -ENODEV;
	}
	pr_info("no ranges= or phys= given: serving the %d range(s) the kernel reserved out of RAM (memmap=)\n",
		nr_devices);
	return 0;
}

static int resmem_create_all(void)
{
	if (ranges && *ranges && (nr_phys || nr_size)) {
		pr_err("ranges= and phys=/size= both given: name the ranges one way, ranges=SIZE$PHYS,... or phys= with size= (-EINVAL)\n");
		return -EINVAL;
	}
	if (ranges && *ranges)
		return resmem_create_from_ranges();
	/* size= alone (phys= misspelt) is refused there, not taken for "no address given". */
	if (nr_phys || nr_size)
		return resmem_create_from_phys();
	return resmem_create_from_memmap();
}

static int __init resmem_init(void)
{
	int ret;

	ret = firmware_map_load();
	if (ret)
		return ret;
	ret = resmem_create_all();
	firmware_map_free(); /* only the ranges' checks read it */
	if (!ret)
		ret = resmem_register_all();
#ifdef RESMEM_TEST_FAULTS
	if (!ret && fail_load_ms) {
		pr_info("TEST fault injection: the device nodes are registered; failing the load in %u ms\n",
			fail_load_ms);
		msleep(fail_load_ms);
		ret = -EIO;
	}
#endif
#ifdef RESMEM_EXTENSION
	if (!ret)
		ret = resmem_extension_init();
#endif
	if (ret) {
		resmem_remove_all();
		return ret;
	}
	smp_store_release(&resmem_loaded, true);
	return 0;
}

static void __exit resmem_exit(void)
{
#ifdef RESMEM_EXTENSION
	resmem_extension_exit();
#endif
	resmem_remove_all();
}

module_init(resmem_init);
module_exit(resmem_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Reserved physical memory (memmap=) as mmap-able misc devices");
MODULE_VERSION("abi" __stringify(RESMEM_ABI_VERSION));
