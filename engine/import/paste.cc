// Reading pasted machine facts (paste.h). The formats are the kernel's own:
//   dmesg e820 lines: arch/x86/kernel/e820.c (e820__print_table; 2.6-era e820_print_map)
//   /proc/iomem: kernel/resource.c r_show; /proc/mtrr: arch/x86/kernel/cpu/mtrr/if.c
//   /sys/firmware/memmap: drivers/firmware/memmap.c; /proc/meminfo: fs/proc/meminfo.c
//   "Linux version": init/version.c linux_banner; "Command line:": arch/x86/kernel/setup.c;
//   "Kernel command line:": init/main.c start_kernel
#include "engine/import/paste.h"

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
#include "mock/machine/machine_file.h"
#include "backends/api/memory.h"

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
// error and warning notes (the fuzz target engine/fuzz/paste_fuzz.cc checks it: a block parsed
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
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status::Errno(ENOENT, "cannot read '" + path + "'; check the path");
    std::stringstream ss;
    ss << in.rdbuf();
    out.push_back({path, ss.str()});
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

Imported ReadPaste(const std::vector<PasteInput>& inputs, const GivenFacts& given) {
  Imported out;
  out.machine = sim::BlankMachine();
  out.machine.name = "imported";
  // Notes are appended as lines are read; pointers into the vector would move, so the parts
  // that need to revisit a note keep its index.
  std::vector<sim::E820Entry> bios;
  std::vector<size_t> bios_notes;
  std::vector<size_t> user_notes;
  std::vector<sim::E820Entry> user;
  bool after_user_header = false;
  std::string kernel_cmdline, grub_cfg_args, default_grub_linux, default_grub_default;
  std::string setup_cmdline, proc_cmdline;
  bool have_proc_cmdline = false;
  size_t proc_cmdline_note = 0;
  size_t kernel_cmdline_note = 0, setup_cmdline_note = 0;
  bool have_kernel_cmdline = false, have_setup_cmdline = false, have_grub_cfg = false,
       have_default_grub = false;
  std::vector<size_t> grub_notes;
  std::string iomem_text, mtrr_text;
  std::vector<size_t> iomem_notes, mtrr_notes;
  std::map<int, MemmapDumpEntry> memmap;
  std::map<int, int> memmap_fields;
  std::vector<size_t> memmap_notes;
  int blank = 0;
  std::set<std::string> seen_map_lines;
  std::string arch_seen, arch_evidence;  // the architecture the paste shows, and the line

  auto note = [&](const std::string& file, int line, Verdict v, const std::string& what) {
    out.notes.push_back({file, line, v, what});
    if (v == Verdict::kWarning) ++out.warnings;
    if (v == Verdict::kError) ++out.errors;
    return out.notes.size() - 1;
  };

  for (const auto& input : inputs) {
    std::istringstream in(input.text);
    std::string raw;
    int n = 0;
    if (input.text.empty()) note(input.name, 0, Verdict::kWarning, "empty input: nothing to read");
    // /proc/cmdline has no marker of its own: a file named *cmdline* of one line is read as it
    // (what `resmem doctor --record` writes as cmdline.txt).
    const std::string base = input.name.substr(input.name.find_last_of('/') + 1);
    const std::string one_line = Trim(input.text);
    if (base.find("cmdline") != std::string::npos && !one_line.empty() &&
        one_line.find('\n') == std::string::npos && !StartsWith(one_line, "GRUB_CMDLINE") &&
        one_line.find("ommand line:") == std::string::npos) {
      if (have_proc_cmdline) {
        note(input.name, 1, Verdict::kNotUsed, "another /proc/cmdline: the first one is used");
      } else {
        have_proc_cmdline = true;
        proc_cmdline = one_line;
        proc_cmdline_note = note(input.name, 1, Verdict::kUsed, "/proc/cmdline (a file named " + base + ")");
      }
      continue;
    }
    while (std::getline(in, raw)) {
      ++n;
      const std::string s = StripPrefixes(raw);
      const std::string t = Trim(s);
      const std::string& f = input.name;
      if (t.empty()) {
        ++blank;
        continue;
      }
      if (t[0] == '#') {
        note(f, n, Verdict::kNotUsed, "a comment");
        continue;
      }
      int idx = 0;
      std::string field, value;
      if (LooksLikeIomem(s)) {
        iomem_text += s + "\n";
        iomem_notes.push_back(note(f, n, Verdict::kUsed, "/proc/iomem"));
        continue;
      }
      if (LooksLikeMemmapDump(t, &idx, &field, &value)) {
        // The value is checked before the entry exists: an entry made by a line that is then
        // refused had no note to name its file (found by the paste fuzz target: memmap_notes[0]
        // of an empty vector).
        uint64_t v = 0;
        if (field != "type") {
          char* end = nullptr;
          v = std::strtoull(value.c_str(), &end, 16);
          if (value.empty() || *end) {
            note(f, n, Verdict::kError, "/sys/firmware/memmap: '" + value + "' is not hex");
            continue;
          }
          if (field == "end" && v == UINT64_MAX) {
            note(f, n, Verdict::kError, "/sys/firmware/memmap: an end of 2^64-1 cannot be held");
            continue;
          }
        }
        auto& e = memmap[idx];
        if (field == "type") e.type = value;
        else if (field == "start") e.start = v;
        else e.end = v + 1;
        memmap_fields[idx] |= field == "start" ? 1 : field == "end" ? 2 : 4;
        memmap_notes.push_back(note(f, n, Verdict::kUsed, "/sys/firmware/memmap entry " + std::to_string(idx) + " " + field));
        continue;
      }
      if (StartsWith(t, "reg") && t.find("base=") != std::string::npos) {
        mtrr_text += t + "\n";
        mtrr_notes.push_back(note(f, n, Verdict::kUsed, "/proc/mtrr"));
        continue;
      }
      if (t.find("user-defined physical RAM map:") != std::string::npos) {
        after_user_header = true;
        note(f, n, Verdict::kUsed, "start of the kernel's user-defined map (the expected result)");
        continue;
      }
      if (t.find("BIOS-provided physical RAM map:") != std::string::npos) {
        note(f, n, Verdict::kUsed, "start of the firmware map");
        continue;
      }
      if (StartsWith(t, "BIOS-e820:") || StartsWith(t, "BIOS-e801:") || StartsWith(t, "BIOS-88:") ||
          StartsWith(t, "Xen:") || StartsWith(t, "user:")) {
        auto r = sim::ParseE820MapLine(t);
        if (!r.ok()) {
          note(f, n, Verdict::kError, "cannot read this map line: " + r.status().message());
          continue;
        }
        // The same map line twice (a paste of dmesg and of `dmesg | grep e820` together) is
        // read once; two identical ranges mean nothing more than one.
        if (!seen_map_lines.insert(t).second) {
          note(f, n, Verdict::kNotUsed, "the same map line again: read once");
          continue;
        }
        const std::string what = std::string(r->old_form ? "old form (end exclusive) " : "") +
                                 Range(r->entry.start, r->entry.end) + " " +
                                 sim::E820TypeWord(r->entry.type);
        if (r->who != "user") {
          // A Xen dom0 starts from the map the hypervisor gives it (arch/x86/xen/setup.c,
          // xen_memory_setup), printed as "Xen: [mem ...]"; without e820 the 2.x kernels made
          // one up from int 15h e801/88 and printed it as "BIOS-e801:"/"BIOS-88:"
          // (arch/i386/kernel/setup.c, setup_memory_region).
          bios.push_back(r->entry);
          bios_notes.push_back(note(f, n, Verdict::kUsed,
                                    (r->who == "BIOS-e820" ? std::string("firmware map entry ")
                                                           : "firmware map entry (" + r->who + ") ") + what));
        } else {
          user.push_back(r->entry);
          out.user_map.push_back(t);
          user_notes.push_back(note(f, n, Verdict::kUsed, "expected user map line " + what));
        }
        continue;
      }
      if (t.find("extended physical RAM map:") != std::string::npos ||
          t.find("modified physical RAM map:") != std::string::npos ||
          StartsWith(t, "reserve setup_data: ") || StartsWith(t, "modified: ")) {
        // e820__reserve_setup_data / e820__update_table_print print the map again after the
        // kernel's own edits; the early edits above it say the same, so it is not needed.
        auto r = sim::ParseE820MapLine(t);
        note(f, n, Verdict::kNotUsed,
             StartsWith(t, "reserve") || StartsWith(t, "modified")
                 ? (r.ok() ? "the map after the kernel's own edits (the early edits give it)"
                           : "a line of the map after the kernel's own edits, unreadable: " + r.status().message())
                 : "start of the map after the kernel's own edits (the early edits give it)");
        continue;
      }
      if (StartsWith(t, "e820: update ") || StartsWith(t, "e820: remove ") ||
          StartsWith(t, "e820 update range: ") || StartsWith(t, "e820 remove range: ")) {
        auto e = sim::ParseE820EditLine(t);
        if (!e.ok()) {
          note(f, n, Verdict::kError, "cannot read this edit: " + e.status().message());
        } else if (after_user_header) {
          note(f, n, Verdict::kNotUsed,
               "an e820 edit printed after the user-defined map: the kernel made it later than "
               "the map under test");
        } else {
          out.machine.early_edits.push_back(*e);
          note(f, n, Verdict::kUsed, "the kernel's own early e820 edit");
        }
        continue;
      }
      if (t.find("MB LOWMEM available.") != std::string::npos ||
          t.find("MB HIGHMEM available.") != std::string::npos) {
        // printk(KERN_NOTICE "%ldMB LOWMEM available.\n") exists only in 32-bit x86's
        // setup_memory (arch/i386/kernel/setup.c, 2.4 .. 2.6; arch/x86 *_32.c later).
        arch_seen = "i386";
        arch_evidence = t;
        note(f, n, Verdict::kUsed, "a 32-bit (i386) kernel: only it prints LOWMEM/HIGHMEM");
        continue;
      }
      if (StartsWith(t, "Linux version ")) {
        std::istringstream words(t.substr(14));
        std::string version;
        words >> version;
        for (const char* a : {"x86_64", "i386", "i486", "i586", "i686"})
          if (arch_seen.empty() && t.find(a) != std::string::npos) {
            arch_seen = std::string(a) == "x86_64" ? "x86_64" : "i386";
            arch_evidence = t;
          }
        int major = 0, minor = 0;
        if (std::sscanf(version.c_str(), "%d.%d", &major, &minor) == 2 && major >= 2) {
          out.machine.kernel_version = version;
          note(f, n, Verdict::kUsed, "kernel version " + version);
        } else {
          note(f, n, Verdict::kWarning, "cannot read a version from '" + version + "'");
        }
        continue;
      }
      const size_t kcl = t.find("Kernel command line:");
      if (StartsWith(t, "Command line:") || kcl != std::string::npos) {
        // "Command line:" (arch/x86/kernel/setup.c) is printed before a built-in
        // CONFIG_CMDLINE is merged in; "Kernel command line:" (init/main.c, start_kernel) is the
        // line the early options were parsed from. The latter wins when both are pasted.
        const bool parsed_line = kcl != std::string::npos;
        const std::string line = Trim(t.substr(parsed_line ? kcl + 20 : 13));
        std::string& slot = parsed_line ? kernel_cmdline : setup_cmdline;
        size_t& slot_note = parsed_line ? kernel_cmdline_note : setup_cmdline_note;
        bool& have = parsed_line ? have_kernel_cmdline : have_setup_cmdline;
        if (have) {
          note(f, n, line == slot ? Verdict::kNotUsed : Verdict::kWarning,
               line == slot ? "the same command line again"
                            : "a second, different command line of the same kind: the first one is used");
          continue;
        }
        have = true;
        slot = line;
        std::string what = parsed_line ? "the kernel's command line (Kernel command line:)"
                                       : "the boot loader's command line (Command line:)";
        Verdict v = Verdict::kUsed;
        // x86's COMMAND_LINE_SIZE (arch/x86/include/asm/setup.h) is 2048 on current kernels: the
        // kernel keeps at most 2047 characters, so a longer logged line is not a kernel's.
        if (line.size() > 2047) {
          v = Verdict::kWarning;
          what += "; it is " + std::to_string(line.size()) +
                  " characters, longer than an x86 kernel keeps (COMMAND_LINE_SIZE 2048): kept "
                  "whole, check the paste";
        }
        slot_note = note(f, n, v, what);
        continue;
      }
      if (StartsWith(t, "GRUB_CMDLINE_LINUX=") || StartsWith(t, "GRUB_CMDLINE_LINUX_DEFAULT=")) {
        const bool def = StartsWith(t, "GRUB_CMDLINE_LINUX_DEFAULT=");
        (def ? default_grub_default : default_grub_linux) = AssignmentValue(t);
        have_default_grub = true;
        grub_notes.push_back(note(f, n, Verdict::kUsed, std::string("/etc/default/grub ") +
                                                            (def ? "GRUB_CMDLINE_LINUX_DEFAULT" : "GRUB_CMDLINE_LINUX")));
        continue;
      }
      std::string args;
      if (IsGrubCfgLinux(t, &args)) {
        if (have_grub_cfg) {
          note(f, n, Verdict::kNotUsed, "another grub.cfg linux line: the first one is used");
          continue;
        }
        have_grub_cfg = true;
        grub_cfg_args = args;
        grub_notes.push_back(note(f, n, Verdict::kUsed, "grub.cfg linux line"));
        continue;
      }
      if (StartsWith(t, "address sizes")) {
        auto bits = ParsePhysAddressBits(t);
        if (!bits.ok()) {
          note(f, n, Verdict::kError, bits.status().message());
        } else if (*bits < 32 || *bits > 52) {
          note(f, n, Verdict::kWarning, "physical address width " + std::to_string(*bits) + " is outside x86-64's 32..52: not used");
        } else {
          out.machine.phys_addr_bits = *bits;
          note(f, n, Verdict::kUsed, "/proc/cpuinfo physical address width " + std::to_string(*bits));
        }
        continue;
      }
      if (StartsWith(t, "MemTotal:")) {
        auto total = ParseMeminfoTotal(t);
        if (!total.ok()) {
          note(f, n, Verdict::kError, total.status().message());
        } else {
          out.mem_total = *total;
          note(f, n, Verdict::kUsed, "/proc/meminfo MemTotal");
        }
        continue;
      }
      note(f, n, Verdict::kNotUsed, "not a line resmem import reads (dmesg e820/command line, "
                                    "/proc/iomem, /proc/mtrr, /sys/firmware/memmap, cpuinfo "
                                    "address sizes, MemTotal, GRUB lines)");
    }
  }

  // /proc/iomem: a block of lines, parsed together (its tree needs them all).
  std::vector<IomemEntry> iomem;
  if (!iomem_text.empty()) {
    auto parsed = ParseIomem(iomem_text);
    if (parsed.ok()) {
      iomem = *parsed;
      out.machine.mmio = WindowsFromIomem(iomem);
    } else {
      const bool hidden = parsed.status().code() == kFailedPrecondition;
      for (size_t i : iomem_notes) {
        SetVerdict(&out.notes[i], hidden ? Verdict::kNotUsed : Verdict::kError, out);
        out.notes[i].what = hidden ? "/proc/iomem with every address 0: not used" : "/proc/iomem: not used";
      }
      note(inputs.empty() ? "" : out.notes[iomem_notes[0]].file, out.notes[iomem_notes[0]].line,
           hidden ? Verdict::kWarning : Verdict::kError,
           hidden ? "/proc/iomem was read as a normal user: the kernel shows every address as 0 "
                    "to readers without CAP_SYS_ADMIN (kernel/resource.c, r_show), so its ranges "
                    "cannot be used; paste `sudo cat /proc/iomem`"
                  : parsed.status().message());
    }
  }

  // /proc/mtrr: variable ranges. The default type is not in the file: inferred as the doctor
  // does (engine/doctor/doctor.cc UniformWriteBack): write-back ranges listed -> default UC,
  // only uncachable holes listed -> default WB.
  if (!mtrr_text.empty()) {
    auto parsed = ParseMtrr(mtrr_text);
    if (!parsed.ok()) {
      for (size_t i : mtrr_notes) SetVerdict(&out.notes[i], Verdict::kError, out);
      note(out.notes[mtrr_notes[0]].file, out.notes[mtrr_notes[0]].line, Verdict::kError,
           parsed.status().message());
    } else {
      bool any_wb = false;
      for (size_t k = 0; k < parsed->size(); ++k) {
        const MtrrLine& m = (*parsed)[k];
        sim::MtrrRange r;
        r.base = m.base;
        r.size = m.size;
        r.type = m.type;
        if (m.type == MemoryType::kUnknown) r.type_name = m.type_name;
        any_wb = any_wb || m.type == MemoryType::kWriteBack;
        if (m.size == 0 || (m.size & (m.size - 1)) || (m.base & (m.size - 1))) {
          SetVerdict(&out.notes[mtrr_notes[k]], Verdict::kWarning, out);
          out.notes[mtrr_notes[k]].what += ": size not a power of two or base not aligned to it; not used";
          continue;
        }
        if (m.type == MemoryType::kUnknown && m.type_name != "write-through" && m.type_name != "write-protect") {
          SetVerdict(&out.notes[mtrr_notes[k]], Verdict::kWarning, out);
          out.notes[mtrr_notes[k]].what += ": unknown type '" + m.type_name + "'; not used";
          continue;
        }
        out.machine.mtrr.variable.push_back(r);
      }
      out.machine.mtrr.default_type = any_wb ? MemoryType::kUncached : MemoryType::kWriteBack;
      note(out.notes[mtrr_notes[0]].file, 0, Verdict::kUsed,
           std::string("/proc/mtrr does not show the default type: inferred ") +
               (any_wb ? "uncachable (write-back ranges are listed)"
                       : "write-back (only uncachable ranges are listed)"));
    }
  }

  // The firmware map: BIOS-e820 lines, else /sys/firmware/memmap, else /proc/iomem.
  std::vector<std::pair<sim::E820Entry, LineNote*>> ordered;
  if (!bios.empty()) {
    out.machine.firmware_e820 = bios;
    out.firmware_source = "dmesg's firmware map lines";
    for (size_t i = 0; i < bios.size(); ++i) ordered.push_back({bios[i], &out.notes[bios_notes[i]]});
    for (size_t i : memmap_notes) {
      SetVerdict(&out.notes[i], Verdict::kNotUsed, out);
      out.notes[i].what += ": not used, the BIOS-e820 lines give the firmware map";
    }
  } else if (!memmap.empty()) {
    bool complete = true;
    for (const auto& [i, bits] : memmap_fields) {
      if (bits != 7) {
        complete = false;
        std::string missing;
        if (!(bits & 1)) missing += " start";
        if (!(bits & 2)) missing += " end";
        if (!(bits & 4)) missing += " type";
        note(out.notes[memmap_notes[0]].file, 0, Verdict::kError,
             "/sys/firmware/memmap entry " + std::to_string(i) + " lacks its" + missing +
                 ": the dump is cut; paste all of `grep . */*`");
      }
    }
    for (const auto& [i, e] : memmap) {
      if (!complete) break;
      auto type = sim::ParseE820TypeWord(e.type);
      if (!type.ok() || e.end <= e.start) {
        note(out.notes[memmap_notes[0]].file, 0, Verdict::kError,
             "/sys/firmware/memmap entry " + std::to_string(i) + ": " +
                 (type.ok() ? "end before start" : type.status().message()));
        continue;
      }
      out.machine.firmware_e820.push_back({e.start, e.end, *type});
    }
    if (!out.machine.firmware_e820.empty()) out.firmware_source = "/sys/firmware/memmap";
  } else if (!iomem.empty()) {
    for (const auto& e : iomem) {
      if (e.depth != 0) continue;
      auto type = sim::ParseE820TypeWord(e.name);
      if (type.ok()) out.machine.firmware_e820.push_back({e.start, e.end, *type});
    }
    if (!out.machine.firmware_e820.empty()) {
      out.firmware_source = "/proc/iomem";
      note(out.notes[iomem_notes[0]].file, 0, Verdict::kWarning,
           "the firmware map is taken from /proc/iomem, which shows it after mem=/memmap= "
           "edits: a reservation there looks like firmware-reserved memory. Paste the "
           "BIOS-e820 lines of dmesg or /sys/firmware/memmap for the firmware's own map");
    }
  }
  for (size_t i = 0; i < ordered.size(); ++i) ordered[i].second = &out.notes[bios_notes[i]];
  CheckOrder(ordered, out);
  out.has_firmware_map = !out.machine.firmware_e820.empty();
  if (!out.has_firmware_map)
    note(inputs.empty() ? "(no input)" : inputs[0].name, 0, Verdict::kError,
         "no firmware memory map found: paste the BIOS-e820 lines of dmesg (`dmesg | grep -i "
         "e820`), /sys/firmware/memmap (`cd /sys/firmware/memmap && grep . */*`) or, as root, "
         "/proc/iomem");

  // The command line: what the kernel logged wins (it is what the kernel received); GRUB
  // lines are the machine's line only when no kernel line was pasted.
  if (have_kernel_cmdline && have_setup_cmdline) {
    LineNote& setup = out.notes[setup_cmdline_note];
    SetVerdict(&setup, Verdict::kNotUsed, out);
    setup.what += setup_cmdline == kernel_cmdline
                      ? ": the same as the Kernel command line"
                      : ": not used, it differs from the Kernel command line, which includes "
                        "what the kernel added (a built-in CONFIG_CMDLINE) and is what it parsed";
  } else if (have_setup_cmdline) {
    have_kernel_cmdline = true;
    kernel_cmdline = setup_cmdline;
    kernel_cmdline_note = setup_cmdline_note;
  }
  // /proc/cmdline reads as the line the kernel kept (saved_command_line): the same as the
  // "Kernel command line:" it printed.
  if (have_proc_cmdline) {
    if (have_kernel_cmdline && kernel_cmdline != proc_cmdline) {
      LineNote& pn = out.notes[proc_cmdline_note];
      SetVerdict(&pn, Verdict::kWarning, out);
      pn.what += ": differs from the logged command line, which is used (pasted from another boot?)";
    } else if (have_kernel_cmdline) {
      out.notes[proc_cmdline_note].what += ": the same as the logged command line";
    } else {
      have_kernel_cmdline = true;
      kernel_cmdline = proc_cmdline;
    }
  }
  if (given.has_cmdline) {
    note("", 0, Verdict::kUsed,
         "the command line given with --cmdline: '" + given.cmdline + "'" +
             (have_kernel_cmdline ? " (it replaces the logged one: '" + kernel_cmdline + "')"
                                  : ""));
    have_kernel_cmdline = true;
    kernel_cmdline = given.cmdline;
  }
  if (have_kernel_cmdline) {
    out.machine.cmdline = kernel_cmdline;
    out.machine.cmdline_source = "kernel";
    for (size_t i : grub_notes) {
      SetVerdict(&out.notes[i], Verdict::kNotUsed, out);
      out.notes[i].what += ": not used, the kernel's logged command line is what it received";
    }
  } else if (have_grub_cfg) {
    out.machine.cmdline = grub_cfg_args;
    out.machine.cmdline_source = "grub-cfg";
  } else if (have_default_grub) {
    // grub-mkconfig's 10_linux passes "${GRUB_CMDLINE_LINUX} ${GRUB_CMDLINE_LINUX_DEFAULT}";
    // both values are kept as written (quotes included) for the shell pass.
    out.machine.cmdline = default_grub_linux;
    if (!default_grub_default.empty())
      out.machine.cmdline += (out.machine.cmdline.empty() ? "" : " ") + default_grub_default;
    out.machine.cmdline_source = "etc-default-grub";
  }
  (void)kernel_cmdline_note;
  if (!user.empty()) {
    bool map_options = false;
    for (const auto& opt : sim::SplitKernelCmdline(out.machine.cmdline))
      map_options = map_options || opt.key == "mem" || opt.key == "memmap";
    if (!map_options)
      note(out.notes[user_notes[0]].file, 0, Verdict::kWarning,
           "a user-defined map was logged, but no pasted command line has the mem=/memmap= "
           "options that made it: add them to the scenario's cmdline (or paste the \"Kernel "
           "command line:\" line)");
  }

  if (!given.kernel_version.empty()) {
    note("", 0, Verdict::kUsed,
         "kernel version " + given.kernel_version + " given with --kernel" +
             (!out.machine.kernel_version.empty() &&
                      out.machine.kernel_version != given.kernel_version
                  ? " (it replaces the logged " + out.machine.kernel_version + ")"
                  : ""));
    out.machine.kernel_version = given.kernel_version;
  }
  // The architecture: given, else shown by the paste, else x86_64 (the model's default).
  out.arch_source = !given.arch.empty()     ? "given with --arch"
                    : !arch_seen.empty()      ? "the log's line '" + arch_evidence + "'"
                                              : "not shown by the paste: x86_64 assumed "
                                                "(give --arch i386 for a 32-bit kernel)";
  if (!given.arch.empty()) {
    out.machine.arch = given.arch;
    note("", 0, Verdict::kUsed,
         "architecture " + given.arch + " given with --arch" +
             (!arch_seen.empty() && arch_seen != given.arch
                  ? " (the paste suggests " + arch_seen + ": '" + arch_evidence + "')"
                  : ""));
  } else if (!arch_seen.empty()) {
    if (arch_seen == "i386") out.machine.arch = "i386";
    if (arch_seen == "i386" && out.machine.kernel_version.empty())
      note("", 0, Verdict::kWarning,
           "a 32-bit kernel without a \"Linux version\" line: the scenario gets the newest "
           "rules, which a 32-bit kernel follows only from 2.6.27; give --kernel VERSION");
  } else {
    int major = 0, minor = 0, patch = 0;
    const int got = std::sscanf(out.machine.kernel_version.c_str(), "%d.%d.%d", &major,
                                &minor, &patch);
    if (got >= 2 && std::make_tuple(major, minor, got == 3 ? patch : 0) <
                        std::make_tuple(2, 6, 27))
      note("", 0, Verdict::kWarning,
           "nothing in the paste says whether Linux " + out.machine.kernel_version +
               " ran as i386 or x86_64 (no LOWMEM/HIGHMEM line, no arch in the version "
               "line); before 2.6.27 their mem= rules differ. The scenario assumes x86_64: "
               "give --arch i386 for a 32-bit kernel");
  }

  // The logged user map: the expected result. Its usable RAM is the boot step's expectation.
  out.user_map_usable = UsableBytes(user);
  if (!user.empty() && !after_user_header)
    note(out.notes[user_notes[0]].file, 0, Verdict::kWarning,
         "user: lines without the \"user-defined physical RAM map:\" line before them");

  // What the kernel keeps for itself: usable RAM minus MemTotal, where both are known.
  const uint64_t usable = !user.empty() ? out.user_map_usable
                                        : UsableBytes(sim::SanitizeE820(out.machine.firmware_e820));
  if (out.mem_total) {
    if (usable > out.mem_total && out.has_firmware_map) {
      out.machine.kernel_reserved_bytes = usable - out.mem_total;
    } else if (out.has_firmware_map) {
      note("", 0, Verdict::kWarning,
           "MemTotal is not below the usable RAM of the map; the kernel's own share is left 0");
    }
  }
  if (blank) note("", 0, Verdict::kNotUsed, std::to_string(blank) + " blank lines");
  return out;
}

}  // namespace resmem::import
