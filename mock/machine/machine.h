// The simulated machine: firmware memory map, kernel command line, memory types, physical address
// width, host memory performance. Boot() applies Linux's rules to give what the kernel would see.
// Every rule cites where it comes from (Linux source, FACTS.md, a seed).
#ifndef RESMEM_MOCK_MACHINE_MACHINE_H_
#define RESMEM_MOCK_MACHINE_MACHINE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "backends/api/memory.h"
#include "backends/api/status.h"
#include "mock/machine/grub.h"
#include "backends/platform/proc_parsers.h"
#include "mock/machine/iommu.h"
#include "mock/machine/module_policy.h"

namespace resmem::sim {

// e820 types, numbered as Linux's arch/x86/include/asm/e820/types.h.
enum class E820Type : int {
  kRam = 1,
  kReserved = 2,
  kAcpi = 3,
  kNvs = 4,
  kUnusable = 5,
  kPmem = 7,
  kPram = 12,
  kSoftReserved = static_cast<int>(0xefffffff),  // E820_TYPE_SOFT_RESERVED (Linux 5.5+)
  kReservedKern = 128,  // E820_TYPE_RESERVED_KERN: setup_data the kernel keeps; printed "usable"
  kHole = -1,  // not in the map at all (PCI hole, MMIO): no RAM behind it
};
const char* E820TypeName(E820Type t);  // "System RAM", "Reserved", "ACPI Tables", ...

struct E820Entry {
  uint64_t start = 0;
  uint64_t end = 0;  // exclusive
  E820Type type = E820Type::kRam;
};

// A range the firmware puts MMIO in (PCI hole, IOAPIC/HPET/LAPIC, BIOS ROM). Shown in /proc/iomem;
// reads there return zeros, writes vanish (FACTS.md: QEMU, memmap= over the PCI hole).
struct MmioRange {
  uint64_t start = 0;
  uint64_t end = 0;  // exclusive
  std::string name;  // "PCI Bus 0000:00", "IOAPIC 0", "Video ROM"
};

// One edit the kernel itself makes to the e820 table, as dmesg prints it:
// "e820: update [mem 0x7a1bd018-0x7a1cd057] usable ==> usable" (setup_data kept as
// E820_TYPE_RESERVED_KERN) or "e820: remove [mem 0x000a0000-0x000fffff] usable". Imported from a
// boot log so Boot() can apply it at the point of boot where that kernel version makes it.
struct E820Edit {
  uint64_t start = 0;
  uint64_t end = 0;                  // exclusive
  E820Type from = E820Type::kRam;
  E820Type to = E820Type::kRam;      // kHole for "remove"
  std::string line;                  // the dmesg line it came from, for messages
};

struct MtrrRange {
  uint64_t base = 0;
  uint64_t size = 0;  // variable: power of two, base aligned to it (as the hardware requires);
                      // fixed: 4 KiB multiples below 1 MiB
  MemoryType type = MemoryType::kWriteBack;
  std::string type_name;  // for kUnknown: the /proc/mtrr word ("write-through",
                          // "write-protect"), types MemoryType does not name. A WB request
                          // over them is not WB (pat_x_mtrr_type: UC-), which is all the model
                          // needs of them.
};

struct MtrrConfig {
  bool enabled = true;
  MemoryType default_type = MemoryType::kUncached;  // MTRRdefType
  std::vector<MtrrRange> variable;                  // variable-range MTRRs
  // Fixed-range MTRRs below 1 MiB. Empty: modelled as WB below 640 KiB (RAM) and UC for the
  // legacy window [0xA0000, 1 MiB), as BIOSes program them.
  std::vector<MtrrRange> fixed;
};

// Host-side memory performance of this machine.
struct HostPerf {
  double wb_copy_gbps = 10;        // one thread's memcpy between WB buffers, GB/s (1e9 B/s)
  double wc_write_gbps = 10;       // writes into WC memory (combined), GB/s
  double wc_read_gbps = 0;         // CPU reads of WC memory, GB/s; 0: costed like UC reads
  double uc_load_latency_ns = 100; // one uncached load or store round trip; UC throughput is
                                   // load width / latency (each access waits for DRAM)
  int memcpy_load_bytes = 8;       // width of libc memcpy's loads on UC memory
  double page_fault_us = 0.25;     // first touch of an anonymous 4 KiB page
  double pin_gbps = 3.2;           // pinning pages for registration (FACTS.md: 8 GiB in 2.65 s)
  std::vector<double> memcpy_threads_gbps;  // aggregate memcpy GB/s with 1,2,4,8,16 threads,
                                            // where measured (FACTS.md: H100 host 11, 24, 40, 55)
  // Bytes per second for reading memory of type t with loads of `load_bytes` each.
  double ReadBytesPerSecond(MemoryType t, int load_bytes) const;
  double WriteBytesPerSecond(MemoryType t) const;
  // Aggregate memcpy bytes per second between WB buffers with `threads` threads, from
  // memcpy_threads_gbps (linear between measured points, flat past the last); wb_copy_gbps
  // when nothing was measured.
  double MemcpyBytesPerSecond(int threads) const;
};

// The GPU's PCIe function and the machine's NUMA and transparent-huge-page facts, as sysfs and
// getcpu show them (`resmem doctor --bandwidth`, backends/platform/pci_link.h). The simulated GPU
// costs its copies by them (mock/gpu: the link's rate over the rate its profile was measured
// on, and the remote-node rule).
struct GpuPciSpec {
  bool described = false;            // false: the machine says nothing; the files are absent
  std::string bdf = "0000:01:00.0";  // /sys/bus/pci/devices/<bdf> (vendor 0x10de, class 0x030200)
  int link_gen = 5, link_width = 16;          // current_link_speed/width: what the link trained at
  int max_link_gen = 5, max_link_width = 16;  // max_link_speed/width: what both ends can do
  int numa_node = -1;                // the GPU's node (sysfs numa_node); -1: none (one node)
  int cpu_numa_node = 0;             // the node of the CPU the program runs on (getcpu)
  std::string thp = "madvise";       // transparent_hugepage/enabled: always, madvise, never
};

struct MachineSpec {
  std::string name;                     // preset name or "custom"
  std::string description;
  std::vector<E820Entry> firmware_e820; // what the BIOS hands the kernel (/sys/firmware/memmap)
  std::vector<MmioRange> mmio;          // device windows
  std::string cmdline;                  // as the kernel receives it (/proc/cmdline)
  std::string cmdline_source = "kernel";// where `cmdline` was written: "kernel" (literal, as
                                        // /proc/cmdline reads), "grub-cfg" (a grub.cfg `linux`
                                        // line's arguments: GRUB's lexer expands it first; "grub"
                                        // is the old name), "etc-default-grub" (the value of
                                        // GRUB_CMDLINE_LINUX as written in /etc/default/grub:
                                        // the shell pass of grub-mkconfig, then GRUB's lexer)
  std::string kernel_version;           // Linux version whose rules and dmesg format Boot()
                                        // applies ("2.6.32", "4.19.0", "6.1.0"); empty: the
                                        // newest rules the model knows
  std::string arch;                     // the kernel's architecture: "x86_64" (empty means
                                        // it) or "i386" (a 32-bit kernel: before 2.6.27 its
                                        // own mem=/memmap= rules, linux_rules.h)
  std::vector<E820Edit> early_edits;    // the kernel's own e820 edits seen in a boot log
                                        // (setup_data, EFI); empty for presets
  MtrrConfig mtrr;
  int phys_addr_bits = 46;              // CPUID 0x80000008; PTE bits above are reserved
  bool pat_enabled = true;
  HostPerf perf;
  uint64_t kernel_reserved_bytes = 0;   // what the kernel itself keeps from usable RAM
                                        // (MemTotal = usable e820 RAM - this)
  IommuSpec iommu;                      // what the firmware offers (mock/machine/iommu.h); the
                                        // kernel's IOMMU follows from it and the command line
  ModulePolicySpec module_policy;       // EFI, Secure Boot, modules_disabled, the trusted keys,
                                        // the installed resmem.ko (mock/machine/module_policy.h);
                                        // lockdown and sig_enforce follow with the command line
  GpuPciSpec gpu_pci;                   // the GPU's link, NUMA node, the caller's node, THP
};

// Named presets: "seed000-workstation" (192 GB, 2012 BIOS whose MTRRs cover 128 GB),
// "seed002-workstation" (12 GB, Ubuntu 9.04), "qemu-q35-2g", "qemu-q35-5g" (QEMU's layout, as
// FACTS.md booted it), "h100-host" (the GPU machine of FACTS.md).
Result<MachineSpec> MachinePreset(const std::string& name);
std::vector<std::string> MachinePresetNames();

// What went wrong with one memory option, in the words of what its author likely meant.
enum class OptionProblem {
  kMalformed,          // the kernel's parser stopped early (returned -EINVAL); what it read
                       // before stopping was applied, the rest ignored
  kTrailingIgnored,    // mem=4Gb: read up to 'b'; parse_memopt never looks at the rest
  kActsAsMem,          // memmap=nn with no $ ! @ # % after the size: removes RAM above nn like
                       // mem=nn and reserves nothing (a "$ss" lost, e.g. to GRUB)
  kNoStartAddress,     // memmap=nn$ with nothing after the operator: memparse reads 0
  kZeroSize,           // a size of 0: the entry is empty and sanitize drops it
  kRemovesAllRam,      // memmap=0 / memmap=0x: every usable byte removed
  kNoEffect,           // rejected before changing anything (mem=abc, memmap=x$4G)
  kUnknownForm,        // an operator this kernel version does not know ('!' before 4.1,
                       // '%' before 4.16): the item acts as mem=nn
  kIgnoredAfterDashDash,  // after "--": handed to init, never an early parameter
  kEndWraps,           // start + size passes 2^64: the kernel panics at the user map
  kSameTypes,          // memmap=nn%ss-T+T: BUG_ON(old_type == new_type) stops the boot
  kLineCut,            // beyond COMMAND_LINE_SIZE - 1 characters: the kernel never saw it
  kOverlapsReservation,  // reserves a range another memmap$ reserves too
  kOverNonRam,         // reserves a range the firmware has no RAM under
  kMemBelowReservation,  // mem= limit below a reservation's end
  kNopentium,          // mem=nopentium on x86_64: ignored
};
struct OptionIssue {
  OptionProblem kind = OptionProblem::kMalformed;
  std::string detail;  // one sentence: what the kernel did instead, with the source
};

// What the kernel did with one memory option: mem=, or one comma-separated item of memmap=,
// in command-line order (init/main.c do_early_param -> e820.c parse_memopt, parse_memmap_one).
struct MemoryOptionOutcome {
  std::string option;       // the argument as on the line: "memmap=8G$4G,1G@0"
  std::string key;          // "mem" or "memmap"
  std::string item;         // the part this outcome is about: "8G$4G" (mem=: the value)
  int position = 0;         // index of the argument on the line
  enum class Action {
    kNone,       // nothing changed
    kLimit,      // removed RAM from `start` up (mem=, bare memmap=nn)
    kAdd,        // added [start, end) as `type` (memmap $ ! @ # and %...+new)
    kRetype,     // changed `from` to `type` in [start, end) (memmap %-old+new)
    kRemove,     // removed `from` (kHole: any type) in [start, end) (memmap %-old / %)
    kExactmap,   // emptied the table
  };
  Action action = Action::kNone;
  uint64_t start = 0, end = 0;  // end exclusive; an end past 2^64 is clamped to UINT64_MAX
  E820Type type = E820Type::kRam;
  E820Type from = E820Type::kRam;
  bool applied = true;          // false: after "--" or past COMMAND_LINE_SIZE
  bool rejected = false;        // the parser returned -EINVAL
  bool malformed_printed = false;  // "Malformed early option" reached dmesg
  std::string read;             // what the parser consumed of `item`
  std::string ignored;          // what it left unread
  std::vector<OptionIssue> issues;
  // "memmap=8G$4G" for one item of a comma list; the argument as written when it had no '='.
  std::string Label() const {
    return option.find('=') == std::string::npos ? option : key + "=" + item;
  }
  // Whether it reserved a range for a driver (memmap=nn$ss, or mem=nn$ss before 2.5.66): added
  // as E820 reserved by a parser that took it. The one rule Boot() and the doctor read.
  bool ReservesForADriver() const {
    return applied && action == Action::kAdd && type == E820Type::kReserved && end > start;
  }
};

// What the booted kernel sees.
struct BootedKernel {
  std::string cmdline;               // after GRUB expansion, as /proc/cmdline reads
  std::vector<E820Entry> e820;       // after mem=/memmap= edits ("user-defined physical RAM map")
  uint64_t usable_ram = 0;           // bytes of E820 RAM the kernel manages
  uint64_t mem_total = 0;            // /proc/meminfo MemTotal in bytes
  struct Reservation {               // ranges memmap=nn$ss reserved for a driver
    uint64_t start = 0;
    uint64_t end = 0;
    std::string option;              // the item that made it, as MemoryOptionOutcome::Label()
    bool over_ram = false;           // firmware had RAM under all of it
    bool over_hole = false;          // some part has no RAM behind it (MMIO / not in e820)
    std::string conflict;            // the MMIO window or firmware range it collides with
  };
  std::vector<Reservation> reservations;
  std::vector<std::string> messages; // dmesg lines the kernel would print about memory, and
                                     // resmem's own notes (prefixed "resmem:")
  std::vector<std::string> dmesg;    // exactly the lines this kernel version prints about its
                                     // memory map, in order and in its format, without
                                     // timestamps: diffable against a real log. The headers
                                     // ("BIOS-provided physical RAM map:", with "e820: " in
                                     // 3.5..4.11), "BIOS-e820: ...", each option's
                                     // "e820: remove/update ..." (KERN_DEBUG: absent from a
                                     // console capture) and "Malformed early option '...'",
                                     // setup_data's "e820: update" and "reserve setup_data:"
                                     // block, "user-defined physical RAM map:" and "user: ...",
                                     // then the later edits of early_edits
  std::vector<MemoryOptionOutcome> memory_options;  // every mem=/memmap= item, in order, with
                                                    // what the kernel did and what went wrong
  std::vector<OptionIssue> cmdline_issues;  // about the line as a whole (cut at
                                            // COMMAND_LINE_SIZE) and between options
                                            // (overlapping reservations)
  std::string panic;                 // non-empty when the kernel stops here ("Invalid user
                                     // supplied memory map"): the map is what it was then
  LinuxRules rules;                  // the rules of spec.kernel_version Boot() applied; what
                                     // the simulator asks of this kernel later (its IOMMU options,
                                     // pages mode's VMA flags) reads them here
};

// Applies the command line to the firmware map with the rules of spec.kernel_version
// (mock/machine/linux_rules.h names the sources), exactly as that kernel does:
//   mem=nn       drop RAM above nn (arch/x86/kernel/e820.c, parse_memopt)
//   memmap=nn$ss mark [ss, ss+nn) reserved; memmap=nn!ss protected (type 12, 4.1+);
//   memmap=nn@ss add RAM; memmap=nn#ss ACPI data; memmap=nn%ss-old+new retype (4.16+);
//   memmap=nn alone (or with anything else after nn) acts as mem=nn;
//   memmap=exactmap clears the map; comma-separated items (3.15+) (parse_memmap_one).
// A malformed option is applied as far as the kernel parsed it, and "Malformed early option"
// is printed only where that version prints it; the kernel boots on, and so does Boot(). Only
// the scenario's own mistakes (an unknown cmdline_source, a kernel_version that is no version)
// are errors. A map the kernel would panic on is returned with `panic` set.
Result<BootedKernel> Boot(const MachineSpec& spec);

// GRUB's and grub-mkconfig's rules for cmdline_source, and ExpandGrubLine: mock/machine/grub.h.

// Effective CPU memory type for [start, end) when a mapping asks for `requested` (MTRR x PAT):
// WB is granted only where the MTRRs make the whole range WB; otherwise the kernel degrades the
// mapping to UC- (arch/x86/mm/pat/memtype.c, pat_x_mtrr_type). WC and UC requests are honoured.
MemoryType EffectiveMemoryType(const MachineSpec& spec, uint64_t start, uint64_t end,
                               MemoryType requested);
// The MTRR type of one address.
MemoryType MtrrTypeAt(const MtrrConfig& mtrr, uint64_t addr);

// Whether the MTRRs make all of [start, end) write-back: the one reading of the MTRRs over a
// range, for the simulator's memory types (EffectiveMemoryType), the plan and the doctor.
// `detail` names what stops it (the MTRRs disabled, the variable MTRR that makes a part another
// type, or the part no write-back MTRR covers under a default type that is not WB), or what makes
// it write-back.
struct MtrrCoverage {
  bool write_back = false;
  std::string detail;
};
MtrrCoverage MtrrWriteBackOver(const MtrrConfig& mtrr, uint64_t start, uint64_t end);

// The MTRRs as /proc/mtrr shows them: the variable ranges, and the default type, which the file
// does not show, inferred: firmware that lists write-back ranges runs a UC default (the seed-000
// workstation's BIOS); firmware that lists only uncachable holes runs a WB default (SeaBIOS/QEMU:
// one UC range over the PCI hole), or RAM would run uncached everywhere. A line whose size is no
// power of two, whose base is not aligned to it, or whose type the model cannot hold makes no
// range: `left_out` (optional) gets, for each line, why ("" for a line that made one).
MtrrConfig MtrrFromProcMtrr(const std::vector<MtrrLine>& lines,
                            std::vector<std::string>* left_out = nullptr);

// The texts a real machine would show, rendered from the model: /proc/iomem, /proc/mtrr,
// /sys/firmware/memmap (as "start end type" lines), /proc/meminfo, /proc/cmdline, /proc/cpuinfo
// ("address sizes : 46 bits physical").
std::string RenderIomem(const MachineSpec& spec, const BootedKernel& kernel);
std::string RenderMtrr(const MachineSpec& spec);
std::string RenderFirmwareMemmap(const MachineSpec& spec);
std::string RenderMeminfo(const BootedKernel& kernel);
std::string RenderCpuinfo(const MachineSpec& spec);
// The GPU's sysfs and the NUMA/THP facts of spec.gpu_pci (mock/machine/gpu_pci.cc): for
// "/sys/bus/pci/devices" (the one device's name), its vendor, class, numa_node,
// current/max_link_speed/width, "/sys/kernel/mm/transparent_hugepage/enabled" and "getcpu".
// NotFound when the path is not one of them; ENOENT when the machine does not describe gpu_pci.
Result<std::string> RenderGpuPciSource(const MachineSpec& spec, const std::string& path);

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_MACHINE_MACHINE_H_
