// Reading pasted machine facts (paste.h). The formats are the kernel's own:
//   dmesg e820 lines: arch/x86/kernel/e820.c (e820__print_table; 2.6-era e820_print_map)
//   /proc/iomem: kernel/resource.c r_show; /proc/mtrr: arch/x86/kernel/cpu/mtrr/if.c
//   /sys/firmware/memmap: drivers/firmware/memmap.c; /proc/meminfo: fs/proc/meminfo.c
//   "Linux version": init/version.c linux_banner; "Command line:": arch/x86/kernel/setup.c;
//   "Kernel command line:": init/main.c start_kernel
#include "engine/paste/paste.h"

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <dirent.h>
#include <fstream>
#include <map>
#include <set>
#include <tuple>
#include <sstream>

#include "backends/platform/proc_parsers.h"
#include "mock/machine/cmdline.h"
#include "mock/machine/e820_table.h"
#include "mock/machine/e820_text.h"
#include "mock/machine/linux_rules.h"
#include "mock/machine/machine_file.h"
#include "backends/api/memory.h"
#include "backends/api/text_file.h"

namespace resmem::import {
namespace {

std::string Trim(const std::string& s) { return TrimBlanks(s); }

bool StartsWith(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

std::string Range(uint64_t start, uint64_t end) {
  return "[" + HexAddress(start) + "-" + HexAddress(end - 1) + "]";
}

// Removes what wraps a kernel line in logs: a syslog prefix ("Jan 12 10:00:00 host kernel: ",
// "2024-01-12T10:00:00+00:00 host kernel: "), a console level ("<6>") and the printk timestamp
// ("[    0.000000] "). Leading blanks after them stay (/proc/iomem indents by depth).
std::string StripPrefixes(const std::string& raw) {
  std::string s = raw;
  if (!s.empty() && s.back() == '\r') s.pop_back();
  const size_t k = s.find(" kernel: ");
  if (k != std::string::npos && k < 80 && !s.empty() &&
      (std::isdigit(static_cast<unsigned char>(s[0])) || std::isupper(static_cast<unsigned char>(s[0]))))
    s = s.substr(k + 9);
  if (s.size() >= 3 && s[0] == '<' && std::isdigit(static_cast<unsigned char>(s[1])) && s[2] == '>')
    s = s.substr(3);
  // A paste indented as a whole (a quoted log, a markdown list): blanks before the timestamp.
  const size_t first = s.find_first_not_of(" \t");
  if (first != std::string::npos && first > 0 && s[first] == '[') s = s.substr(first);
  if (!s.empty() && s[0] == '[') {
    const size_t close = s.find(']');
    bool stamp = close != std::string::npos && close > 1;
    for (size_t i = 1; stamp && i < close; ++i)
      stamp = std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.' || s[i] == ' ';
    if (stamp) {
      s = s.substr(close + 1);
      if (!s.empty() && s[0] == ' ') s = s.substr(1);  // the one space printk puts after it
    }
  }
  return s;
}

// "  fec00000-fec003ff : IOAPIC 0"
bool LooksLikeIomem(const std::string& s) {
  size_t i = 0;
  while (i < s.size() && s[i] == ' ') ++i;
  size_t digits = 0;
  while (i < s.size() && std::isxdigit(static_cast<unsigned char>(s[i]))) ++i, ++digits;
  if (digits == 0 || i >= s.size() || s[i] != '-') return false;
  return s.find(" : ", i) != std::string::npos;
}

// "12/start:0x100000"
bool LooksLikeMemmapDump(const std::string& s, int* index, std::string* field, std::string* value) {
  const size_t slash = s.find('/');
  if (slash == 0 || slash == std::string::npos) return false;
  for (size_t i = 0; i < slash; ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  const size_t colon = s.find(':', slash);
  if (colon == std::string::npos) return false;
  *field = s.substr(slash + 1, colon - slash - 1);
  if (*field != "start" && *field != "end" && *field != "type") return false;
  *index = std::atoi(s.substr(0, slash).c_str());
  *value = Trim(s.substr(colon + 1));
  return true;
}

// A shell assignment's right-hand side as written: `GRUB_CMDLINE_LINUX="quiet memmap=8G\$4G"`.
std::string AssignmentValue(const std::string& s) {
  return Trim(s.substr(s.find('=') + 1));
}

bool IsGrubCfgLinux(const std::string& t, std::string* args) {
  // grub.cfg: "linux /vmlinuz-6.1.0-13-amd64 root=UUID=... ro quiet" (also linux16, linuxefi).
  for (const char* cmd : {"linux ", "linux\t", "linux16 ", "linuxefi ", "linux16\t", "linuxefi\t"}) {
    if (!StartsWith(t, cmd)) continue;
    std::string rest = Trim(t.substr(std::string(cmd).size()));
    const size_t sp = rest.find_first_of(" \t");
    if (rest.empty() || rest[0] != '/' ) return false;
    *args = sp == std::string::npos ? "" : Trim(rest.substr(sp));
    return true;
  }
  return false;
}

// The mmio windows in a /proc/iomem tree: entries that are not e820 ranges or the kernel's own,
// not inside another window (a PCI bus's devices are not windows of their own).
std::vector<sim::MmioRange> WindowsFromIomem(const std::vector<IomemEntry>& iomem) {
  static const char* kNotWindows[] = {"Kernel code", "Kernel data", "Kernel bss",
                                      "Kernel rodata", "Crash kernel", "RAM buffer",
                                      "reserved", "System RAM (boot alias)"};
  std::vector<sim::MmioRange> out;
  int inside_window_depth = -1;
  for (const auto& e : iomem) {
    if (inside_window_depth >= 0 && e.depth > inside_window_depth) continue;
    inside_window_depth = -1;
    if (sim::ParseE820TypeWord(e.name).ok()) continue;
    if (std::find(std::begin(kNotWindows), std::end(kNotWindows), e.name) != std::end(kNotWindows))
      continue;
    out.push_back({e.start, e.end, e.name});
    inside_window_depth = e.depth;
  }
  return out;
}

uint64_t UsableBytes(const std::vector<sim::E820Entry>& table) {
  uint64_t total = 0;
  for (const auto& e : table)
    if (e.type == sim::E820Type::kRam || e.type == sim::E820Type::kReservedKern)
      total += e.end - e.start;
  return total;
}

// Unsorted or overlapping firmware ranges are legal (the kernel sanitises them,
// e820__update_table): warn, keep them.
// Changes a note's verdict and keeps Imported::errors and ::warnings equal to the number of
// error and warning notes (the fuzz target engine/paste/paste_fuzz.cc checks it: a block parsed
// together, such as /proc/mtrr, once turned its lines into errors without counting them).
void SetVerdict(LineNote* note, Verdict v, Imported& out) {
  if (note->verdict == Verdict::kWarning) --out.warnings;
  if (note->verdict == Verdict::kError) --out.errors;
  note->verdict = v;
  if (v == Verdict::kWarning) ++out.warnings;
  if (v == Verdict::kError) ++out.errors;
}

void CheckOrder(const std::vector<std::pair<sim::E820Entry, LineNote*>>& entries, Imported& out) {
  for (size_t i = 1; i < entries.size(); ++i) {
    const auto& cur = entries[i].first;
    LineNote* note = entries[i].second;
    std::string why;
    if (cur.start < entries[i - 1].first.start) why = "out of order (starts below the previous entry)";
    for (size_t j = 0; j < i && why.empty(); ++j) {
      const auto& other = entries[j].first;
      if (cur.start < other.end && other.start < cur.end)
        why = "overlaps the entry of line " + std::to_string(entries[j].second->line) + " " +
              Range(other.start, other.end);
    }
    if (why.empty()) continue;
    SetVerdict(note, Verdict::kWarning, out);
    note->what += "; " + why +
                  ": kept as the firmware gave it; the kernel sanitises the map "
                  "(e820__update_table: the higher type wins where ranges overlap)";
  }
}

}  // namespace

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kUsed: return "used";
    case Verdict::kNotUsed: return "not used";
    case Verdict::kWarning: return "warning";
    case Verdict::kError: return "error";
  }
  return "?";
}

std::string RenderFirmwareMemmapDump(const std::vector<MemmapDumpEntry>& entries) {
  // `cd /sys/firmware/memmap && grep . */*` prints, per entry directory, end, start, type
  // (alphabetical), each "N/file:value". The kernel writes start and end as 0x%llx.
  std::string out;
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string n = std::to_string(i);
    out += n + "/end:" + HexAddress(entries[i].end - 1) + "\n";
    out += n + "/start:" + HexAddress(entries[i].start) + "\n";
    out += n + "/type:" + entries[i].type + "\n";
  }
  return out;
}

Result<std::string> DumpFirmwareMemmapDir(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (!d) return Status::Errno(errno, "cannot open " + dir + " (a /sys/firmware/memmap folder)");
  std::vector<long> indexes;
  while (dirent* ent = readdir(d)) {
    char* end = nullptr;
    const long n = std::strtol(ent->d_name, &end, 10);
    if (end != ent->d_name && !*end) indexes.push_back(n);
  }
  closedir(d);
  std::sort(indexes.begin(), indexes.end());
  std::string out;
  for (long n : indexes) {
    for (const char* field : {"end", "start", "type"}) {
      std::ifstream in(dir + "/" + std::to_string(n) + "/" + field);
      std::string value;
      if (!in || !std::getline(in, value))
        return Status::Errno(ENOENT, "cannot read " + dir + "/" + std::to_string(n) + "/" + field);
      out += std::to_string(n) + "/" + field + ":" + value + "\n";
    }
  }
  if (indexes.empty()) return Status::Errno(ENOENT, dir + " has no entry folders (0/, 1/, ...)");
  return out;
}

Result<std::vector<PasteInput>> ReadPasteFiles(const std::vector<std::string>& paths) {
  std::vector<PasteInput> out;
  auto read_file = [&](const std::string& path) -> Status {
    RESMEM_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path, ""));
    out.push_back({path, std::move(text)});
    return Status::Ok();
  };
  for (const auto& path : paths) {
    DIR* d = opendir(path.c_str());
    if (!d) {
      RESMEM_RETURN_IF_ERROR(read_file(path));
      continue;
    }
    std::vector<std::string> names;
    bool numbered = false;
    while (dirent* ent = readdir(d)) {
      const std::string name = ent->d_name;
      if (name == "." || name == "..") continue;
      numbered = numbered || std::all_of(name.begin(), name.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
      names.push_back(name);
    }
    closedir(d);
    if (numbered) {
      RESMEM_ASSIGN_OR_RETURN(std::string dump, DumpFirmwareMemmapDir(path));
      out.push_back({path, dump});
      continue;
    }
    std::sort(names.begin(), names.end());
    for (const auto& name : names) {
      const std::string full = path + "/" + name;
      DIR* sub = opendir(full.c_str());
      if (sub) {  // only the files of the folder itself
        closedir(sub);
        continue;
      }
      RESMEM_RETURN_IF_ERROR(read_file(full));
    }
  }
  return out;
}

namespace {

// One reading of a paste: a reader per input format fills the state line by line, then the
// Settle* steps decide what the whole paste says (the firmware map, the command line, the
// version, the architecture) and note why. Notes are appended as lines are read; pointers into
// the vector would move, so the steps that revisit a note keep its index.
class PasteReader {
 public:
  PasteReader(const std::vector<PasteInput>& inputs, const GivenFacts& given)
      : inputs_(inputs), given_(given) {
    out_.machine = sim::BlankMachine();
    out_.machine.name = "imported";
  }

  Imported Read() {
    for (const auto& input : inputs_) ReadInput(input);
    SettleIomem();
    SettleMtrr();
    SettleFirmwareMap();
    SettleCmdline();
    SettleVersion();
    SettleArch();
    SettleUserMap();
    if (blank_) Note("", 0, Verdict::kNotUsed, std::to_string(blank_) + " blank lines");
    return std::move(out_);
  }

 private:
  // One pasted line, its prefixes stripped (s) and trimmed (t), where it came from.
  struct Line {
    const std::string& file;
    int n;
    const std::string& s;
    const std::string& t;
  };
  using LineReader = bool (PasteReader::*)(const Line&);
  // A command line of one kind and the note that read it.
  struct CmdlineSeen {
    bool have = false;
    std::string text;
    size_t note = 0;
  };

  size_t Note(const std::string& file, int line, Verdict v, const std::string& what) {
    out_.notes.push_back({file, line, v, what});
    if (v == Verdict::kWarning) ++out_.warnings;
    if (v == Verdict::kError) ++out_.errors;
    return out_.notes.size() - 1;
  }

  void ReadInput(const PasteInput& input) {
    if (input.text.empty()) Note(input.name, 0, Verdict::kWarning, "empty input: nothing to read");
    if (ReadProcCmdlineFile(input)) return;
    // Each line goes to the first reader whose format it is; the order matters where formats
    // share words (an iomem line before a map line, a map line before prose).
    static const LineReader kReaders[] = {
        &PasteReader::ReadIomemLine,   &PasteReader::ReadMemmapDumpLine,
        &PasteReader::ReadMtrrLine,    &PasteReader::ReadMapHeader,
        &PasteReader::ReadMapLine,     &PasteReader::ReadReprintLine,
        &PasteReader::ReadEditLine,    &PasteReader::ReadLowmemLine,
        &PasteReader::ReadVersionLine, &PasteReader::ReadCommandLine,
        &PasteReader::ReadGrubLine,    &PasteReader::ReadCpuinfoLine,
        &PasteReader::ReadMeminfoLine};
    std::istringstream in(input.text);
    std::string raw;
    int n = 0;
    while (std::getline(in, raw)) {
      ++n;
      const std::string s = StripPrefixes(raw);
      const std::string t = Trim(s);
      if (t.empty()) {
        ++blank_;
        continue;
      }
      if (t[0] == '#') {
        Note(input.name, n, Verdict::kNotUsed, "a comment");
        continue;
      }
      const Line line{input.name, n, s, t};
      bool read = false;
      for (LineReader reader : kReaders)
        if ((read = (this->*reader)(line))) break;
      if (!read)
        Note(input.name, n, Verdict::kNotUsed,
             "not a line resmem import reads (dmesg e820/command line, /proc/iomem, /proc/mtrr, "
             "/sys/firmware/memmap, cpuinfo address sizes, MemTotal, GRUB lines)");
    }
  }

  // /proc/cmdline has no marker of its own: a file named *cmdline* of one line is read as it
  // (what `resmem doctor --record` writes as cmdline.txt).
  bool ReadProcCmdlineFile(const PasteInput& input) {
    const std::string base = input.name.substr(input.name.find_last_of('/') + 1);
    const std::string one_line = Trim(input.text);
    if (base.find("cmdline") == std::string::npos || one_line.empty() ||
        one_line.find('\n') != std::string::npos || StartsWith(one_line, "GRUB_CMDLINE") ||
        one_line.find("ommand line:") != std::string::npos)
      return false;
    if (proc_cmdline_.have) {
      Note(input.name, 1, Verdict::kNotUsed, "another /proc/cmdline: the first one is used");
    } else {
      proc_cmdline_ = {true, one_line,
                       Note(input.name, 1, Verdict::kUsed, "/proc/cmdline (a file named " + base + ")")};
    }
    return true;
  }

  // "  fec00000-fec003ff : IOAPIC 0": read as a block later (its tree needs every line).
  bool ReadIomemLine(const Line& l) {
    if (!LooksLikeIomem(l.s)) return false;
    iomem_text_ += l.s + "\n";
    iomem_notes_.push_back(Note(l.file, l.n, Verdict::kUsed, "/proc/iomem"));
    return true;
  }

  // "12/start:0x100000" of `cd /sys/firmware/memmap && grep . */*`. The value is checked before
  // the entry exists: an entry made by a line that is then refused had no note to name its file
  // (found by the paste fuzz target: memmap_notes[0] of an empty vector).
  bool ReadMemmapDumpLine(const Line& l) {
    int idx = 0;
    std::string field, value;
    if (!LooksLikeMemmapDump(l.t, &idx, &field, &value)) return false;
    uint64_t v = 0;
    if (field != "type") {
      char* end = nullptr;
      v = std::strtoull(value.c_str(), &end, 16);
      if (value.empty() || *end) {
        Note(l.file, l.n, Verdict::kError, "/sys/firmware/memmap: '" + value + "' is not hex");
        return true;
      }
      if (field == "end" && v == UINT64_MAX) {
        Note(l.file, l.n, Verdict::kError, "/sys/firmware/memmap: an end of 2^64-1 cannot be held");
        return true;
      }
    }
    auto& e = memmap_[idx];
    if (field == "type") e.type = value;
    else if (field == "start") e.start = v;
    else e.end = v + 1;
    memmap_fields_[idx] |= field == "start" ? 1 : field == "end" ? 2 : 4;
    memmap_notes_.push_back(
        Note(l.file, l.n, Verdict::kUsed, "/sys/firmware/memmap entry " + std::to_string(idx) + " " + field));
    return true;
  }

  // "reg00: base=0x000000000 (    0MB), size=131072MB, count=1: write-back"
  bool ReadMtrrLine(const Line& l) {
    if (!StartsWith(l.t, "reg") || l.t.find("base=") == std::string::npos) return false;
    mtrr_text_ += l.t + "\n";
    mtrr_notes_.push_back(Note(l.file, l.n, Verdict::kUsed, "/proc/mtrr"));
    return true;
  }

  // The headers dmesg prints before the firmware's map and the user-defined one.
  bool ReadMapHeader(const Line& l) {
    if (l.t.find("user-defined physical RAM map:") != std::string::npos) {
      after_user_header_ = true;
      Note(l.file, l.n, Verdict::kUsed, "start of the kernel's user-defined map (the expected result)");
      return true;
    }
    if (l.t.find("BIOS-provided physical RAM map:") != std::string::npos) {
      Note(l.file, l.n, Verdict::kUsed, "start of the firmware map");
      return true;
    }
    return false;
  }

  // A map line: the firmware's (BIOS-e820, and the BIOS-e801/BIOS-88 and Xen maps that stand in
  // for it) or the user-defined one (user:), in either print form.
  bool ReadMapLine(const Line& l) {
    const std::string& t = l.t;
    if (!StartsWith(t, "BIOS-e820:") && !StartsWith(t, "BIOS-e801:") && !StartsWith(t, "BIOS-88:") &&
        !StartsWith(t, "Xen:") && !StartsWith(t, "user:"))
      return false;
    auto r = sim::ParseE820MapLine(t);
    if (!r.ok()) {
      Note(l.file, l.n, Verdict::kError, "cannot read this map line: " + r.status().message());
      return true;
    }
    // The same map line twice (a paste of dmesg and of `dmesg | grep e820` together) is read
    // once; two identical ranges mean nothing more than one.
    if (!seen_map_lines_.insert(t).second) {
      Note(l.file, l.n, Verdict::kNotUsed, "the same map line again: read once");
      return true;
    }
    if (r->old_form && old_form_line_.empty()) old_form_line_ = t;
    const std::string what = std::string(r->old_form ? "old form (end exclusive) " : "") +
                             Range(r->entry.start, r->entry.end) + " " + sim::E820TypeWord(r->entry.type);
    if (r->who == "user") {
      user_.push_back(r->entry);
      out_.user_map.push_back(t);
      user_notes_.push_back(Note(l.file, l.n, Verdict::kUsed, "expected user map line " + what));
      return true;
    }
    // A Xen dom0 starts from the map the hypervisor gives it (arch/x86/xen/setup.c,
    // xen_memory_setup), printed as "Xen: [mem ...]"; without e820 the 2.x kernels made one up
    // from int 15h e801/88 and printed it as "BIOS-e801:"/"BIOS-88:" (arch/i386/kernel/setup.c,
    // setup_memory_region).
    bios_.push_back(r->entry);
    bios_notes_.push_back(Note(l.file, l.n, Verdict::kUsed,
                               (r->who == "BIOS-e820" ? std::string("firmware map entry ")
                                                      : "firmware map entry (" + r->who + ") ") + what));
    return true;
  }

  // e820__reserve_setup_data / e820__update_table_print print the map again after the kernel's
  // own edits; the early edits above it say the same, so it is not needed.
  bool ReadReprintLine(const Line& l) {
    const std::string& t = l.t;
    const bool header = t.find("extended physical RAM map:") != std::string::npos ||
                        t.find("modified physical RAM map:") != std::string::npos;
    if (!header && !StartsWith(t, "reserve setup_data: ") && !StartsWith(t, "modified: "))
      return false;
    auto r = sim::ParseE820MapLine(t);
    Note(l.file, l.n, Verdict::kNotUsed,
         header ? "start of the map after the kernel's own edits (the early edits give it)"
         : r.ok() ? "the map after the kernel's own edits (the early edits give it)"
                  : "a line of the map after the kernel's own edits, unreadable: " + r.status().message());
    return true;
  }

  // The kernel's own early edits: "e820: update [mem ...] usable ==> reserved" (and the old
  // form "e820 update range: ...", which only kernels before 3.5 print).
  bool ReadEditLine(const Line& l) {
    const std::string& t = l.t;
    const bool old_form = StartsWith(t, "e820 update range: ") || StartsWith(t, "e820 remove range: ");
    if (!old_form && !StartsWith(t, "e820: update ") && !StartsWith(t, "e820: remove ")) return false;
    if (old_form && old_form_line_.empty()) old_form_line_ = t;
    auto e = sim::ParseE820EditLine(t);
    if (!e.ok()) {
      Note(l.file, l.n, Verdict::kError, "cannot read this edit: " + e.status().message());
    } else if (after_user_header_) {
      Note(l.file, l.n, Verdict::kNotUsed,
           "an e820 edit printed after the user-defined map: the kernel made it later than the "
           "map under test");
    } else {
      out_.machine.early_edits.push_back(*e);
      Note(l.file, l.n, Verdict::kUsed, "the kernel's own early e820 edit");
    }
    return true;
  }

  // printk(KERN_NOTICE "%ldMB LOWMEM available.\n") exists only in 32-bit x86's setup_memory
  // (arch/i386/kernel/setup.c, 2.4 .. 2.6; arch/x86 *_32.c later).
  bool ReadLowmemLine(const Line& l) {
    if (l.t.find("MB LOWMEM available.") == std::string::npos &&
        l.t.find("MB HIGHMEM available.") == std::string::npos)
      return false;
    arch_seen_ = "i386";
    arch_evidence_ = l.t;
    Note(l.file, l.n, Verdict::kUsed, "a 32-bit (i386) kernel: only it prints LOWMEM/HIGHMEM");
    return true;
  }

  // "Linux version 2.6.32-5-686 (...) ... i686 ..." (init/version.c linux_banner).
  bool ReadVersionLine(const Line& l) {
    if (!StartsWith(l.t, "Linux version ")) return false;
    std::istringstream words(l.t.substr(14));
    std::string version;
    words >> version;
    for (const char* a : {"x86_64", "i386", "i486", "i586", "i686"})
      if (arch_seen_.empty() && l.t.find(a) != std::string::npos) {
        arch_seen_ = std::string(a) == "x86_64" ? "x86_64" : "i386";
        arch_evidence_ = l.t;
      }
    auto rules = sim::LinuxRulesFor(version);
    if (rules.ok() && rules->major >= 2) {
      out_.machine.kernel_version = version;
      Note(l.file, l.n, Verdict::kUsed, "kernel version " + version);
    } else {
      Note(l.file, l.n, Verdict::kWarning, "cannot read a version from '" + version + "'");
    }
    return true;
  }

  // "Command line:" (arch/x86/kernel/setup.c) is printed before a built-in CONFIG_CMDLINE is
  // merged in; "Kernel command line:" (init/main.c, start_kernel) is the line the early options
  // were parsed from. The latter wins when both are pasted. Only a line that starts with one of
  // them is the kernel's: prose that mentions a command line is not one.
  bool ReadCommandLine(const Line& l) {
    const bool parsed_line = StartsWith(l.t, "Kernel command line:");
    if (!parsed_line && !StartsWith(l.t, "Command line:")) return false;
    const std::string line = Trim(l.t.substr(parsed_line ? 20 : 13));
    CmdlineSeen& slot = parsed_line ? kernel_cmdline_ : setup_cmdline_;
    if (slot.have) {
      Note(l.file, l.n, line == slot.text ? Verdict::kNotUsed : Verdict::kWarning,
           line == slot.text ? "the same command line again"
                             : "a second, different command line of the same kind: the first one is used");
      return true;
    }
    std::string what = parsed_line ? "the kernel's command line (Kernel command line:)"
                                   : "the boot loader's command line (Command line:)";
    Verdict v = Verdict::kUsed;
    // x86's COMMAND_LINE_SIZE (arch/x86/include/asm/setup.h) is 2048 on current kernels: the
    // kernel keeps at most 2047 characters, so a longer logged line is not a kernel's.
    if (line.size() > 2047) {
      v = Verdict::kWarning;
      what += "; it is " + std::to_string(line.size()) +
              " characters, longer than an x86 kernel keeps (COMMAND_LINE_SIZE 2048): kept whole, "
              "check the paste";
    }
    slot = {true, line, Note(l.file, l.n, v, what)};
    return true;
  }

  // /etc/default/grub's GRUB_CMDLINE_LINUX(_DEFAULT)= and grub.cfg's linux line.
  bool ReadGrubLine(const Line& l) {
    if (StartsWith(l.t, "GRUB_CMDLINE_LINUX=") || StartsWith(l.t, "GRUB_CMDLINE_LINUX_DEFAULT=")) {
      const bool def = StartsWith(l.t, "GRUB_CMDLINE_LINUX_DEFAULT=");
      (def ? default_grub_default_ : default_grub_linux_) = AssignmentValue(l.t);
      have_default_grub_ = true;
      grub_notes_.push_back(Note(l.file, l.n, Verdict::kUsed,
                                 std::string("/etc/default/grub ") +
                                     (def ? "GRUB_CMDLINE_LINUX_DEFAULT" : "GRUB_CMDLINE_LINUX")));
      return true;
    }
    std::string args;
    if (!IsGrubCfgLinux(l.t, &args)) return false;
    if (have_grub_cfg_) {
      Note(l.file, l.n, Verdict::kNotUsed, "another grub.cfg linux line: the first one is used");
      return true;
    }
    have_grub_cfg_ = true;
    grub_cfg_args_ = args;
    grub_notes_.push_back(Note(l.file, l.n, Verdict::kUsed, "grub.cfg linux line"));
    return true;
  }

  // /proc/cpuinfo "address sizes : 46 bits physical, 48 bits virtual".
  bool ReadCpuinfoLine(const Line& l) {
    if (!StartsWith(l.t, "address sizes")) return false;
    auto bits = ParsePhysAddressBits(l.t);
    if (!bits.ok()) {
      Note(l.file, l.n, Verdict::kError, bits.status().message());
    } else if (*bits < 32 || *bits > 52) {
      Note(l.file, l.n, Verdict::kWarning,
           "physical address width " + std::to_string(*bits) + " is outside x86-64's 32..52: not used");
    } else {
      out_.machine.phys_addr_bits = *bits;
      Note(l.file, l.n, Verdict::kUsed, "/proc/cpuinfo physical address width " + std::to_string(*bits));
    }
    return true;
  }

  // /proc/meminfo "MemTotal:       16316068 kB".
  bool ReadMeminfoLine(const Line& l) {
    if (!StartsWith(l.t, "MemTotal:")) return false;
    auto total = ParseMeminfoTotal(l.t);
    if (!total.ok()) {
      Note(l.file, l.n, Verdict::kError, total.status().message());
    } else {
      out_.mem_total = *total;
      Note(l.file, l.n, Verdict::kUsed, "/proc/meminfo MemTotal");
    }
    return true;
  }

  // /proc/iomem: parsed as a block; its windows become the machine's mmio ranges.
  void SettleIomem() {
    if (iomem_text_.empty()) return;
    auto parsed = ParseIomem(iomem_text_);
    if (parsed.ok()) {
      iomem_ = *parsed;
      out_.machine.mmio = WindowsFromIomem(iomem_);
      return;
    }
    const bool hidden = parsed.status().code() == kFailedPrecondition;
    for (size_t i : iomem_notes_) {
      SetVerdict(&out_.notes[i], hidden ? Verdict::kNotUsed : Verdict::kError, out_);
      out_.notes[i].what = hidden ? "/proc/iomem with every address 0: not used" : "/proc/iomem: not used";
    }
    Note(out_.notes[iomem_notes_[0]].file, out_.notes[iomem_notes_[0]].line,
         hidden ? Verdict::kWarning : Verdict::kError,
         hidden ? "/proc/iomem was read as a normal user: the kernel shows every address as 0 to "
                  "readers without CAP_SYS_ADMIN (kernel/resource.c, r_show), so its ranges cannot "
                  "be used; paste `sudo cat /proc/iomem`"
                : parsed.status().message());
  }

  // /proc/mtrr: variable ranges and the default type the file does not show, as the model reads
  // them (sim::MtrrFromProcMtrr: the one reading for import and the doctor).
  void SettleMtrr() {
    if (mtrr_text_.empty()) return;
    auto parsed = ParseMtrr(mtrr_text_);
    if (!parsed.ok()) {
      for (size_t i : mtrr_notes_) SetVerdict(&out_.notes[i], Verdict::kError, out_);
      Note(out_.notes[mtrr_notes_[0]].file, out_.notes[mtrr_notes_[0]].line, Verdict::kError,
           parsed.status().message());
      return;
    }
    std::vector<std::string> left_out;
    out_.machine.mtrr = sim::MtrrFromProcMtrr(*parsed, &left_out);
    for (size_t k = 0; k < left_out.size(); ++k) {
      if (left_out[k].empty()) continue;
      LineNote& note = out_.notes[mtrr_notes_[k]];
      SetVerdict(&note, Verdict::kWarning, out_);
      note.what += ": " + left_out[k] + "; not used";
    }
    const bool default_uc = out_.machine.mtrr.default_type == MemoryType::kUncached;
    Note(out_.notes[mtrr_notes_[0]].file, 0, Verdict::kUsed,
         std::string("/proc/mtrr does not show the default type: inferred ") +
             (default_uc ? "uncachable (write-back ranges are listed)" : "write-back (only uncachable ranges are listed)"));
  }

  // The firmware map: BIOS-e820 lines, else /sys/firmware/memmap, else /proc/iomem.
  void SettleFirmwareMap() {
    if (!bios_.empty()) {
      out_.machine.firmware_e820 = bios_;
      out_.firmware_source = "dmesg's firmware map lines";
      for (size_t i : memmap_notes_) {
        SetVerdict(&out_.notes[i], Verdict::kNotUsed, out_);
        out_.notes[i].what += ": not used, the BIOS-e820 lines give the firmware map";
      }
      std::vector<std::pair<sim::E820Entry, LineNote*>> ordered;
      for (size_t i = 0; i < bios_.size(); ++i) ordered.push_back({bios_[i], &out_.notes[bios_notes_[i]]});
      CheckOrder(ordered, out_);
    } else if (!memmap_.empty()) {
      SettleMemmapDump();
    } else if (!iomem_.empty()) {
      SettleIomemAsFirmwareMap();
    }
    out_.has_firmware_map = !out_.machine.firmware_e820.empty();
    if (!out_.has_firmware_map)
      Note(inputs_.empty() ? "(no input)" : inputs_[0].name, 0, Verdict::kError,
           "no firmware memory map found: paste the BIOS-e820 lines of dmesg (`dmesg | grep -i "
           "e820`), /sys/firmware/memmap (`cd /sys/firmware/memmap && grep . */*`) or, as root, "
           "/proc/iomem");
  }

  void SettleMemmapDump() {
    bool complete = true;
    for (const auto& [i, bits] : memmap_fields_) {
      if (bits == 7) continue;
      complete = false;
      std::string missing;
      if (!(bits & 1)) missing += " start";
      if (!(bits & 2)) missing += " end";
      if (!(bits & 4)) missing += " type";
      Note(out_.notes[memmap_notes_[0]].file, 0, Verdict::kError,
           "/sys/firmware/memmap entry " + std::to_string(i) + " lacks its" + missing +
               ": the dump is cut; paste all of `grep . */*`");
    }
    if (!complete) return;
    for (const auto& [i, e] : memmap_) {
      auto type = sim::ParseE820TypeWord(e.type);
      if (!type.ok() || e.end <= e.start) {
        Note(out_.notes[memmap_notes_[0]].file, 0, Verdict::kError,
             "/sys/firmware/memmap entry " + std::to_string(i) + ": " +
                 (type.ok() ? "end before start" : type.status().message()));
        continue;
      }
      out_.machine.firmware_e820.push_back({e.start, e.end, *type});
    }
    if (!out_.machine.firmware_e820.empty()) out_.firmware_source = "/sys/firmware/memmap";
  }

  void SettleIomemAsFirmwareMap() {
    for (const auto& e : iomem_) {
      if (e.depth != 0) continue;
      auto type = sim::ParseE820TypeWord(e.name);
      if (type.ok()) out_.machine.firmware_e820.push_back({e.start, e.end, *type});
    }
    if (out_.machine.firmware_e820.empty()) return;
    out_.firmware_source = "/proc/iomem";
    Note(out_.notes[iomem_notes_[0]].file, 0, Verdict::kWarning,
         "the firmware map is taken from /proc/iomem, which shows it after mem=/memmap= edits: a "
         "reservation there looks like firmware-reserved memory. Paste the BIOS-e820 lines of "
         "dmesg or /sys/firmware/memmap for the firmware's own map");
  }

  // What the kernel logged wins (it is what the kernel received), then /proc/cmdline, then
  // --cmdline over both; GRUB lines are the machine's line only when none of those was given.
  void SettleCmdline() {
    CmdlineSeen kernel = LoggedCmdline();
    if (given_.has_cmdline) {
      Note("", 0, Verdict::kUsed,
           "the command line given with --cmdline: '" + given_.cmdline + "'" +
               (kernel.have ? " (it replaces the logged one: '" + kernel.text + "')" : ""));
      kernel = {true, given_.cmdline, 0};
    }
    if (kernel.have) {
      out_.machine.cmdline = kernel.text;
      out_.machine.cmdline_source = "kernel";
      for (size_t i : grub_notes_) {
        SetVerdict(&out_.notes[i], Verdict::kNotUsed, out_);
        out_.notes[i].what += ": not used, the kernel's logged command line is what it received";
      }
    } else if (have_grub_cfg_) {
      out_.machine.cmdline = grub_cfg_args_;
      out_.machine.cmdline_source = "grub-cfg";
    } else if (have_default_grub_) {
      // grub-mkconfig's 10_linux passes "${GRUB_CMDLINE_LINUX} ${GRUB_CMDLINE_LINUX_DEFAULT}";
      // both values are kept as written (quotes included) for the shell pass.
      out_.machine.cmdline = default_grub_linux_;
      if (!default_grub_default_.empty())
        out_.machine.cmdline += (out_.machine.cmdline.empty() ? "" : " ") + default_grub_default_;
      out_.machine.cmdline_source = "etc-default-grub";
    } else {
      Note("", 0, Verdict::kWarning,
           "no command line in the paste: the scenario boots with none. Paste dmesg's \"Kernel "
           "command line:\" line or /proc/cmdline (a file named cmdline), or give it: --cmdline "
           "'memmap=64M$0x40000000'");
    }
  }

  // The logged command line: "Kernel command line:" over "Command line:", checked against
  // /proc/cmdline (the line the kernel kept, saved_command_line: the same as the one it printed).
  CmdlineSeen LoggedCmdline() {
    CmdlineSeen kernel = kernel_cmdline_;
    if (kernel.have && setup_cmdline_.have) {
      LineNote& setup = out_.notes[setup_cmdline_.note];
      SetVerdict(&setup, Verdict::kNotUsed, out_);
      setup.what += setup_cmdline_.text == kernel.text
                        ? ": the same as the Kernel command line"
                        : ": not used, it differs from the Kernel command line, which includes "
                          "what the kernel added (a built-in CONFIG_CMDLINE) and is what it parsed";
    } else if (setup_cmdline_.have) {
      kernel = setup_cmdline_;
    }
    if (!proc_cmdline_.have) return kernel;
    LineNote& pn = out_.notes[proc_cmdline_.note];
    if (kernel.have && kernel.text != proc_cmdline_.text) {
      SetVerdict(&pn, Verdict::kWarning, out_);
      pn.what += ": differs from the logged command line, which is used (pasted from another boot?)";
    } else if (kernel.have) {
      pn.what += ": the same as the logged command line";
    } else {
      kernel = proc_cmdline_;
    }
    return kernel;
  }

  // The version: --kernel, else the "Linux version" line, else what the map's print form says:
  // the old form (end exclusive) is what kernels before 3.5 print (linux_rules.h
  // old_print_format), so such a paste takes the rules of 3.4, the newest of them.
  void SettleVersion() {
    if (!given_.kernel_version.empty()) {
      Note("", 0, Verdict::kUsed,
           "kernel version " + given_.kernel_version + " given with --kernel" +
               (!out_.machine.kernel_version.empty() && out_.machine.kernel_version != given_.kernel_version
                    ? " (it replaces the logged " + out_.machine.kernel_version + ")"
                    : ""));
      out_.machine.kernel_version = given_.kernel_version;
      return;
    }
    if (!out_.machine.kernel_version.empty() || old_form_line_.empty()) return;
    out_.machine.kernel_version = kNewestOldFormVersion;
    Note("", 0, Verdict::kWarning,
         std::string("no \"Linux version\" line, and the map is in the old print form ('") +
             old_form_line_ + "'), which only kernels before 3.5 print: the scenario takes the "
             "rules of " + kNewestOldFormVersion + ", the newest of them; give --kernel VERSION for the exact ones");
  }

  // The architecture: given, else shown by the paste, else x86_64 (the model's default).
  void SettleArch() {
    out_.arch_source = !given_.arch.empty() ? "given with --arch"
                       : !arch_seen_.empty() ? "the log's line '" + arch_evidence_ + "'"
                                             : "not shown by the paste: x86_64 assumed (give --arch i386 for a 32-bit kernel)";
    if (!given_.arch.empty()) {
      out_.machine.arch = given_.arch;
      Note("", 0, Verdict::kUsed,
           "architecture " + given_.arch + " given with --arch" +
               (!arch_seen_.empty() && arch_seen_ != given_.arch
                    ? " (the paste suggests " + arch_seen_ + ": '" + arch_evidence_ + "')"
                    : ""));
      return;
    }
    if (!arch_seen_.empty()) {
      if (arch_seen_ == "i386") out_.machine.arch = "i386";
      if (arch_seen_ == "i386" && out_.machine.kernel_version.empty())
        Note("", 0, Verdict::kWarning,
             "a 32-bit kernel without a \"Linux version\" line: the scenario gets the newest "
             "rules, which a 32-bit kernel follows only from 2.6.27; give --kernel VERSION");
      return;
    }
    auto rules = sim::LinuxRulesFor(out_.machine.kernel_version);
    if (!out_.machine.kernel_version.empty() && rules.ok() && !rules->AtLeast(2, 6, 27))
      Note("", 0, Verdict::kWarning,
           "nothing in the paste says whether Linux " + out_.machine.kernel_version +
               " ran as i386 or x86_64 (no LOWMEM/HIGHMEM line, no arch in the version line); "
               "before 2.6.27 their mem= rules differ. The scenario assumes x86_64: give --arch "
               "i386 for a 32-bit kernel");
  }

  // The logged user map is the expected result: its usable RAM is the boot step's expectation.
  // What the kernel keeps for itself: usable RAM minus MemTotal, where both are known.
  void SettleUserMap() {
    if (!user_.empty()) {
      // The options the model's boot reads as mem=/memmap= (after GRUB's expansion of a GRUB
      // source): the same reader as the simulator, the doctor and the plan.
      bool map_options = false;
      if (out_.has_firmware_map) {
        auto booted = sim::Boot(out_.machine);
        map_options = booted.ok() && !booted->memory_options.empty();
      }
      if (out_.has_firmware_map && !map_options)
        Note(out_.notes[user_notes_[0]].file, 0, Verdict::kWarning,
             "a user-defined map was logged, but no pasted command line has the mem=/memmap= "
             "options that made it: add them to the scenario's cmdline (or paste the \"Kernel "
             "command line:\" line)");
      if (!after_user_header_)
        Note(out_.notes[user_notes_[0]].file, 0, Verdict::kWarning,
             "user: lines without the \"user-defined physical RAM map:\" line before them");
    }
    out_.user_map_usable = UsableBytes(user_);
    const uint64_t usable = !user_.empty() ? out_.user_map_usable
                                           : UsableBytes(sim::SanitizeE820(out_.machine.firmware_e820));
    if (!out_.mem_total || !out_.has_firmware_map) return;
    if (usable > out_.mem_total)
      out_.machine.kernel_reserved_bytes = usable - out_.mem_total;
    else
      Note("", 0, Verdict::kWarning,
           "MemTotal is not below the usable RAM of the map; the kernel's own share is left 0");
  }

  static constexpr const char* kNewestOldFormVersion = "3.4";

  const std::vector<PasteInput>& inputs_;
  const GivenFacts& given_;
  Imported out_;
  std::vector<sim::E820Entry> bios_, user_;
  std::vector<size_t> bios_notes_, user_notes_, grub_notes_, iomem_notes_, mtrr_notes_, memmap_notes_;
  bool after_user_header_ = false;
  std::string old_form_line_;  // the first map or edit line in the old print form
  CmdlineSeen kernel_cmdline_, setup_cmdline_, proc_cmdline_;
  std::string grub_cfg_args_, default_grub_linux_, default_grub_default_;
  bool have_grub_cfg_ = false, have_default_grub_ = false;
  std::string iomem_text_, mtrr_text_;
  std::vector<IomemEntry> iomem_;
  std::map<int, MemmapDumpEntry> memmap_;
  std::map<int, int> memmap_fields_;
  int blank_ = 0;
  std::set<std::string> seen_map_lines_;
  std::string arch_seen_, arch_evidence_;  // the architecture the paste shows, and the line
};

}  // namespace

Imported ReadPaste(const std::vector<PasteInput>& inputs, const GivenFacts& given) {
  return PasteReader(inputs, given).Read();
}

}  // namespace resmem::import
