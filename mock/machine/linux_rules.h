// Which of Linux's memory-map rules a kernel version follows. Each switch names the source it was
// read from; internal to mock/machine.
//
// Sources read for this model (file, function, version):
//   2.6.32.69  arch/x86/kernel/e820.c, setup.c, kernel/params.c, init/main.c, lib/cmdline.c
//   3.6, 3.13.10, 3.19.8, 4.4.155, 4.19, 6.12   the same files
//   i386 (arch/i386/kernel/setup.c, before the unified arch/x86 of 2.6.27), read as quoted in
//   LKML mails through the search index (file ids): 2.4.20 limit_regions (7771631171), 2.4/2.5
//   parse_cmdline_early with mem=exactmap and mem=nn@ss/#ss/$ss (12218838591, 24181767570),
//   Pavel Machek's 2003-03 patch moving them to memmap= (34134566908), Hugh Dickins'
//   2.6.0-test8 limit_regions fix from the running sum to the end address (35817737992), the
//   2.6.19-era arch/i386/kernel/e820.c limit_regions (8213581872, 1421792966).
//   tip x86/boot efe659ac0146 "x86/e820: Drop obsolete E820_TYPE_RESERVED_KERN and related
//   code" (Feb 2025, first in 6.15).
// Where a switch falls between two versions read, the comment says which two; the version the
// model switches at inside that span is stated and marked "between".
#ifndef RESMEM_MOCK_MACHINE_LINUX_RULES_H_
#define RESMEM_MOCK_MACHINE_LINUX_RULES_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "backends/api/status.h"

namespace resmem::sim {

// How mem=nn cuts the e820 table.
enum class MemLimitRule {
  // x86 parse_memopt (2.6.27+ unified e820.c, and x86_64): e820_remove_range(nn, ULLONG_MAX -
  // nn, RAM): only RAM above nn goes, every other entry stays.
  kRemoveRamAbove,
  // i386 limit_regions, 2.4.20 (id 7771631171) and 2.6.0-test8 .. 2.6.18 (id 35817737992): the
  // first RAM entry (table order) whose end address is >= nn is shortened to end at nn and
  // becomes the last entry ("e820.nr_map = i + 1"): everything after it, reserved or ACPI, is
  // dropped. No check that the entry starts below nn.
  kI386CutAtEnd,
  // i386 limit_regions of the 2.6.19-era arch/i386/kernel/e820.c (id 8213581872): the same,
  // but a RAM entry that starts at or above nn is dropped too ("e820.nr_map = i").
  kI386CutAtEndSkipPast,
  // i386 limit_regions of 2.5.x .. 2.6.0-test7 (the lines Hugh Dickins' patch removed, id
  // 35817737992): the same cut, but at the first RAM entry where the running sum of RAM sizes
  // reaches nn; that entry loses (sum - nn) bytes.
  kI386CutAtRamSum,
};

struct LinuxRules {
  std::string version;  // as given ("6.1.0-13-amd64"), or "newest"
  std::string arch = "x86_64";  // "x86_64" or "i386" (MachineSpec::arch)
  int major = 99, minor = 0, patch = 0;
  // A pre-release comes before its release, as the kernel numbers them (Makefile EXTRAVERSION):
  // 2.6.0-test1 < ... < 2.6.0-test11 < 2.6.0 < 2.6.1, and 6.1-rc7 < 6.1. "-testN", "-rcN" and
  // "-preN" are pre-releases; any other suffix (a distribution's "-13-amd64") is not.
  static constexpr int kRelease = 1 << 30;
  int prerelease = kRelease;

  // mem=nn: see MemLimitRule. i386 before 2.6.27 follows limit_regions: 2.4 (from 2.4.19-pre7:
  // the thread of corpus log 14 says -pre6 still replaced the map) cuts at the end address,
  // 2.5.x and 2.6.0-test1 .. -test7 at the running sum, 2.6.0-test8 (Hugh Dickins' fix) .. 2.6.18
  // at the end address again, 2.6.19 .. 2.6.26 also drop a RAM entry past nn (the model switches
  // at 2.6.19: between 2.6.0-test8 and the 2.6.19-era file read).
  MemLimitRule mem_limit = MemLimitRule::kRemoveRamAbove;
  // i386 before 2.6.27 prints the user map right after the options edited the table, without
  // sanitizing it (2.4 parse_mem_cmdline and 2.6 setup_arch: print_memory_map("user") with no
  // sanitize_e820_map before it; corpus logs 14, 36, 37): entries print in insertion order.
  bool sanitizes_user_map = true;
  // i386 2.4 and 2.5 up to Pavel Machek's patch (2003-03, id 34134566908): mem=exactmap,
  // mem=nn@ss (RAM), mem=nn#ss (ACPI), mem=nn$ss (reserved) are mem= forms (memmap= did not
  // exist); mem=nn with anything else after it is limit_regions(nn). Model: before 2.5.66
  // (between 2.5.65 and 2.5.66; corpus logs 10 and 29 use plain mem= only).
  bool mem_takes_map_items = false;

  // dmesg format of a map line. Old (2.6.32.69 e820_print_map):
  //   " BIOS-e820: 0000000000000000 - 000000000009fc00 (usable)"   (leading space, end exclusive)
  // new (3.6 onwards, e820_print_map / e820__print_table):
  //   "BIOS-e820: [mem 0x0000000000000000-0x000000000009fbff] usable"   (end inclusive)
  // Old in 2.6.32.69, new in 3.6 (both read); the model switches at 3.5 (between).
  bool old_print_format = false;
  // "e820: BIOS-provided physical RAM map:" (3.6, 3.19.8, 4.4.155 read) versus no prefix
  // (2.6.32.69; 4.19, 6.12 read). The model drops the prefix at 4.12 (between 4.4 and 4.19: the
  // e820__* rewrite).
  bool header_e820_prefix = false;
  // e820_remove_range prints what it removes: "e820 remove range: %016Lx - %016Lx (usable)" in
  // the old format (3.0.0-16, corpus log 23), "e820: remove [mem ...]" in the new (3.6 read);
  // 2.6.32.69 prints nothing. Model: from 2.6.33 (between).
  bool prints_remove = true;
  // parse_memmap_opt splits at ',' into parse_memmap_one and ignores every error, so memmap=
  // never prints "Malformed early option" (3.19.8 read); before, one item per option and its
  // -EINVAL reached do_early_param (3.13.10 read). Model: 3.15 (between).
  bool memmap_comma_list = true;
  // memparse knows T, P, E (3.19.8 read; 3.13.10 knows K, M, G only). Model: 3.15 (between).
  bool memparse_tpe = true;
  // parse_args stops at "--" (kernel/params.c, "Stop at --"; 3.19.8 read, absent in 3.13.10).
  // Model: 3.15 (between).
  bool stops_at_dashdash = true;
  // e820_reserve_setup_data runs after parse_early_param, just before finish_e820_parsing
  // (3.19.8 setup.c read; 3.13.10 runs it before parse_early_param). Model: 3.14 (between).
  bool setup_data_after_params = true;
  // setup_data is kept in the e820 table as E820_TYPE_RESERVED_KERN (128), printed "usable":
  // all versions until efe659ac0146 removed it (6.15).
  bool keeps_setup_data = true;
  // memmap=nn!ss (E820_PRAM, type 12) and its "persistent (type %u)" print, and sanitize never
  // merging PRAM neighbours: 4.4.155 read, absent in 3.19.8. Model: 4.1.
  bool memmap_pram = true;
  // memmap=nn%ss-old+new (parse_memmap_one, 4.19 read; absent in 4.4.155). Model: 4.16.
  bool memmap_retype = true;
  // E820_TYPE_SOFT_RESERVED printed "soft reserved" and never merged (e820_nomerge; 6.12 read,
  // absent in 4.19). Model: 5.5.
  bool soft_reserved = true;
  // E820_MAX_ENTRIES = E820_MAX_ENTRIES_ZEROPAGE (128) + 3 * MAX_NUMNODES; with
  // CONFIG_NODES_SHIFT=6 (64 nodes, the x86_64 default) that is 320. __e820__range_add drops
  // what does not fit with "too many entries".
  size_t max_entries = 320;
  // COMMAND_LINE_SIZE on x86 (arch/x86/include/asm/setup.h: 2048 in 2.6.32.69 and 6.12):
  // copy_bootdata copies that many bytes and parse_early_param strlcpy/strscpy()s them into a
  // buffer of that size, so the kernel reads the first 2047 characters.
  size_t command_line_size = 2048;

  // lib/kstrtox.c kstrtobool takes "enable" and "disable" by their first letters (e/E true,
  // d/D false) as well as y/n, t/f, 1/0 and on/off: iommu.passthrough=enable sets identity
  // domains instead of "Malformed early option". Read: 6.1.0-57 and 6.12.117 refuse it (QEMU,
  // iommu.passthrough=enable and =disable), 6.18.44 takes both (a bool module parameter of the
  // build machine's kernel, /sys/module/printk/parameters/time) and 7.3.4 too (QEMU: identity
  // domains, "set via kernel command line"). Model: 6.15, between the two reads.
  bool kstrtobool_enable_disable = true;

  // pfn_t and devmap page-table entries (include/linux/pfn_t.h): resmem's pages mode maps its
  // struct pages as devmap entries in a VM_MIXEDMAP VMA (smaps "mm"). 6.17 removed both; from
  // then the pages go in as refcounted folio entries and the VMA has none of pf, io and mm
  // (kmod/resmem.c RESMEM_PAGES_VM_FLAGS; the QEMU lane's 7.3.4 kernel showed no flag, 6.1 and
  // 6.12 "mm").
  bool pfn_t_devmap = false;

  // The line of __e820__range_update's BUG_ON(old_type == new_type) in arch/x86/kernel/e820.c:
  // 469 in 6.1 (the QEMU lane's 6.1.0-56 printed "kernel BUG at arch/x86/kernel/e820.c:469!")
  // and 6.12 (read); 0 where not known (the line is then printed without a number).
  int range_update_bug_line = 0;

  // Whether this kernel is ma.mi.pa or later; with `pre`, its pre-release `pre` (-testN, -rcN)
  // or later. A switch that landed in a merge window is placed at the release, so its own
  // pre-releases come before it: the model's switches are between versions read anyway.
  bool AtLeast(int ma, int mi, int pa = 0, int pre = kRelease) const;
};

// The rules of a kernel version string: "2.6.32", "4.19.0-21-amd64", "6.1.0", "2.6.0-test8";
// empty means the newest rules. `arch` is "x86_64" (or empty) or "i386". A string that does not start with
// "N.N", or another arch, is an error naming it.
Result<LinuxRules> LinuxRulesFor(const std::string& kernel_version,
                                 const std::string& arch = "");

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_MACHINE_LINUX_RULES_H_
