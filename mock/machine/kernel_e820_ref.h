/*
 * A small, independent C port of what Linux 6.1 (x86_64) does with mem= and memmap= on the
 * kernel command line, written for the differential fuzz target memmap_diff_fuzz.cc: it shares
 * no code with the simulator (mock/machine), so where the two disagree one of them is wrong.
 *
 * Rules read from Linux 6.1: arch/x86/kernel/e820.c (parse_memopt, parse_memmap_one,
 * parse_memmap_opt, e820__finish_early_params, __e820__range_add, __e820__range_update,
 * e820__range_remove, e820__update_table with cpcompare and e820_nomerge), lib/cmdline.c
 * (memparse, next_arg), lib/kstrtox.c (_parse_integer_fixup_radix, _parse_integer_limit),
 * lib/vsprintf.c (simple_strtoull), kernel/params.c (parse_args: stops at "--").
 *
 * Scope: the command line must hold no '"' and no space other than ' ' (the fuzz target maps
 * those away; quoting is the cmdline target's business), and at most COMMAND_LINE_SIZE - 1
 * characters.
 */
#ifndef RESMEM_MOCK_MACHINE_KERNEL_E820_REF_H_
#define RESMEM_MOCK_MACHINE_KERNEL_E820_REF_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* E820_MAX_ENTRIES = E820_MAX_ENTRIES_ZEROPAGE (128) + 3 * MAX_NUMNODES, with
 * CONFIG_NODES_SHIFT=6 (64 nodes): arch/x86/include/asm/e820/types.h. */
#define KREF_MAX_ENTRIES 320

struct kref_entry {
	uint64_t addr;
	uint64_t size;
	uint32_t type; /* E820_TYPE_*: 1 RAM, 2 reserved, 3 ACPI, 4 NVS, 5 unusable, 7 PMEM,
	                  12 PRAM, 0xefffffff soft reserved */
};

struct kref_table {
	uint32_t nr_entries;
	struct kref_entry entries[KREF_MAX_ENTRIES];
};

struct kref_boot {
	struct kref_table table; /* the "user-defined physical RAM map" (or the firmware's) */
	int userdef;             /* some mem=/memmap= item set userdef: the user map is printed */
	int panic;               /* 1 "Invalid user supplied memory map"; 2 BUG_ON in
	                            __e820__range_update (same old and new type) */
};

/* The firmware's entries (as the boot loader hands them: boot_params.e820_table) sanitized as
 * e820__memory_setup_default does, then the command line's mem=/memmap= applied and the result
 * sanitized as e820__finish_early_params does. */
void kref_boot_cmdline(const struct kref_entry *firmware, uint32_t nr_firmware,
                       const char *cmdline, struct kref_boot *out);

#ifdef __cplusplus
}
#endif

#endif /* RESMEM_MOCK_MACHINE_KERNEL_E820_REF_H_ */
