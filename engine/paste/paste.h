// What users paste about their machine, read into a machine: dmesg (both e820 forms, with or
// without timestamps or syslog prefixes), /proc/iomem, /sys/firmware/memmap (a `grep . */*`
// dump), /proc/mtrr, /proc/cpuinfo, /proc/meminfo, /etc/default/grub and grub.cfg lines, in any
// order and mixed. Every input line gets a verdict: used, not used (and why), a warning or an
// error. Nothing is skipped silently.
#ifndef RESMEM_ENGINE_PASTE_PASTE_H_
#define RESMEM_ENGINE_PASTE_PASTE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "backends/api/status.h"
#include "mock/machine/machine.h"

namespace resmem::import {

struct PasteInput {
  std::string name;  // file name for messages ("dmesg.txt", "-" for stdin)
  std::string text;
};

enum class Verdict { kUsed, kNotUsed, kWarning, kError };
const char* VerdictName(Verdict v);  // "used", "not used", "warning", "error"

struct LineNote {
  std::string file;
  int line = 0;      // 1-based; 0 for a note about the whole input
  Verdict verdict = Verdict::kUsed;
  std::string what;  // what it was read as, or why it was not
};

struct Imported {
  sim::MachineSpec machine;       // BlankMachine() plus what the paste gave
  bool has_firmware_map = false;  // a firmware map was found (the machine can boot)
  std::string firmware_source;    // "BIOS-e820 lines", "/sys/firmware/memmap", "/proc/iomem"
  std::vector<std::string> user_map;  // the logged "user:" lines, prefix and timestamps removed,
                                      // as the kernel printed them ("user: [mem ...] usable")
  uint64_t user_map_usable = 0;   // bytes of usable RAM in the logged user map
  uint64_t mem_total = 0;         // /proc/meminfo MemTotal, 0 when not given
  std::string arch_source;        // where machine.arch comes from, in words ("--arch", the
                                  // line that shows it, or "not shown: x86_64 assumed")
  std::vector<LineNote> notes;    // one per non-blank input line, in input order, plus notes
                                  // about the whole paste (line 0)
  int errors = 0, warnings = 0;
};

// What the user states beside the paste (`resmem import --cmdline/--arch`): it wins over what
// the paste says, with a note.
struct GivenFacts {
  bool has_cmdline = false;
  std::string cmdline;  // as the kernel received it (cmdline_source "kernel")
  std::string arch;     // "x86_64" or "i386"; empty: from the paste
  std::string kernel_version;  // "2.6.9"; empty: from the paste's "Linux version" line
};

// Reads every input. Fails only when nothing describes a firmware map (the scenario could not
// boot): kInvalidArgument naming what to paste. The notes say the rest. The kernel's
// architecture comes from the paste where it shows one: "LOWMEM available" / "HIGHMEM
// available" (printed only by 32-bit kernels, arch/i386 setup_memory) or i386..i686 / x86_64 in
// the "Linux version" line; otherwise it is left empty (x86_64) with a warning for kernels
// before 2.6.27, where i386 and x86_64 differ.
Imported ReadPaste(const std::vector<PasteInput>& inputs, const GivenFacts& given = {});

// /sys/firmware/memmap as a directory (0/, 1/, ... each with start, end, type) rendered as the
// dump `grep . */*` prints ("0/end:0x9fbff"), which ReadPaste reads.
Result<std::string> DumpFirmwareMemmapDir(const std::string& dir);

// The inputs behind paths: a file is read whole; a folder is a copy of /sys/firmware/memmap when
// it has numbered entry folders (DumpFirmwareMemmapDir), else every file in it, in name order
// (a folder of captured sources). Fails naming the path it cannot read.
Result<std::vector<PasteInput>> ReadPasteFiles(const std::vector<std::string>& paths);

// "0/end:0x9fbff" lines of the entries [start, end) with their /sys/firmware/memmap type names,
// in the order given.
struct MemmapDumpEntry {
  uint64_t start = 0, end = 0;  // end exclusive
  std::string type;             // "System RAM"
};
std::string RenderFirmwareMemmapDump(const std::vector<MemmapDumpEntry>& entries);

}  // namespace resmem::import

#endif  // RESMEM_ENGINE_PASTE_PASTE_H_
