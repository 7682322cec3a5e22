// Boot(): the kernel command line applied to the firmware map with the rules of the kernel
// version the machine names (mock/machine/linux_rules.h lists the sources read), plus GRUB's
// expansion of the line before the kernel sees it.
//
// The order of setup_arch (arch/x86/kernel/setup.c, 2.6.32.69 / 3.13.10 / 3.19.8 / 4.19 / 6.12):
//   e820__memory_setup / setup_memory_map    "BIOS-provided physical RAM map:" + "BIOS-e820:"
//   [before 3.14] e820_reserve_setup_data    setup_data RAM -> RESERVED_KERN, "extended ..."
//   parse_early_param                        mem=, memmap= in command-line order
//   [3.14 .. 6.14] e820__reserve_setup_data  the same, now after the user's edits
//   e820__finish_early_params               sanitize; "user-defined physical RAM map:"
// and later edits (trim_bios_range, EFI) that do not change the user map.
#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstdio>

#include "mock/machine/cmdline.h"
#include "mock/machine/e820_table.h"
#include "mock/machine/linux_rules.h"
#include "mock/machine/machine.h"

namespace resmem::sim {
namespace {

constexpr uint32_t kRamType = 1, kReservedType = 2, kAcpiType = 3, kPramType = 12,
                   kReservedKernType = 128;

std::string MemRange(uint64_t start, uint64_t end) {
  return "[mem " + KernelHex(start, 18) + "-" + KernelHex(end - 1, 18) + "]";
}

std::string Size(uint64_t bytes) {
  char buf[48];
  if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0)
    std::snprintf(buf, sizeof buf, "%" PRIu64 " GiB", bytes >> 30);
  else if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0)
    std::snprintf(buf, sizeof buf, "%" PRIu64 " MiB", bytes >> 20);
  else
    std::snprintf(buf, sizeof buf, "%" PRIu64 " bytes", bytes);
  return buf;
}

E820Type AsType(uint32_t t) { return static_cast<E820Type>(static_cast<int>(t)); }

bool IsUsable(E820Type t) { return t == E820Type::kRam || t == E820Type::kReservedKern; }

// What the phases of a boot share: the kernel's table, userdef, a panic that stops the boot
// ("" while it goes on), each mem=/memmap= item's outcome in order, the kernel's log (the
// BootedKernel's dmesg) and resmem's notes on the boot, printed after the options' issues.
struct BootState {
  BootState(const LinuxRules& r, std::vector<std::string>* log)
      : rules(r), table(r, log), dmesg(log) {}
  const LinuxRules& rules;
  KernelE820Table table;
  bool userdef = false;
  std::string panic;
  std::vector<MemoryOptionOutcome> outcomes;
  std::vector<std::string>* dmesg = nullptr;
  std::vector<std::string> notes;
};

void Issue(MemoryOptionOutcome& o, OptionProblem kind, std::string detail) {
  o.issues.push_back({kind, std::move(detail)});
}

MemoryOptionOutcome Outcome(const KernelOption& opt, const std::string& item) {
  MemoryOptionOutcome o;
  o.option = opt.raw;
  o.key = opt.key;
  o.item = item;
  o.position = opt.position;
  return o;
}

// do_early_param (init/main.c, 2.6.32.69 and 6.12): "if (p->setup_func(val) != 0)
// pr_warn("Malformed early option '%s'\n", param)".
void PrintMalformed(BootState& st, MemoryOptionOutcome& o) {
  o.malformed_printed = true;
  st.dmesg->push_back("Malformed early option '" + o.key + "'");
}

// i386 before 2.6.27 (linux_rules.h): parse_cmdline_early, then from 2.6.18 parse_mem /
// parse_memmap as early_param (Rusty Russell's conversion, id 14114744514), both returning 0:
// no option of theirs ever prints "Malformed early option".
bool I386Setup(const LinuxRules& rules) { return rules.mem_limit != MemLimitRule::kRemoveRamAbove; }

// i386 limit_regions(nn) (rules and sources in linux_rules.h, MemLimitRule): walk the table in
// its order, find the first RAM entry that reaches nn (by end address, or by the running sum of
// RAM sizes in 2.5), shorten it to nn and drop every entry after it. Nothing is printed. A table
// in which no RAM entry reaches nn is left as it is.
void LimitRegions(uint64_t limit, BootState& st) {
  auto& entries = st.table.entries;
  uint64_t ram_sum = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    auto& e = entries[i];
    if (e.type != kRamType) continue;
    const uint64_t end = e.addr + e.size;
    if (st.rules.mem_limit == MemLimitRule::kI386CutAtRamSum) {
      ram_sum += e.size;  // "current_size += e820.map[i].size; if (current_size >= size)"
      if (ram_sum < limit) continue;
      e.size -= ram_sum - limit;
    } else {
      if (end < limit) continue;  // "current_addr = addr + size; if (current_addr >= size)"
      if (st.rules.mem_limit == MemLimitRule::kI386CutAtEndSkipPast && e.addr >= limit) {
        entries.resize(i);  // "This region starts past the end ...": e820.nr_map = i
        return;
      }
      e.size -= end - limit;  // unsigned, as the kernel's: 2.4/2.6.0 never check e.addr < nn
    }
    entries.resize(i + 1);  // e820.nr_map = i + 1
    return;
  }
}

// mem=/memmap= with a size limit: x86's e820_remove_range of the RAM above nn, or i386's
// limit_regions.
void ApplyLimit(uint64_t limit, BootState& st) {
  if (st.rules.mem_limit == MemLimitRule::kRemoveRamAbove)
    st.table.Remove(limit, UINT64_MAX - limit, kRamType, true);
  else
    LimitRegions(limit, st);
}

// i386 mem= (rules.mem_limit is an i386 rule): 2.4's parse_mem_cmdline / parse_cmdline_early
// and 2.6's parse_cmdline_early / parse_mem (sources in linux_rules.h): "nopentium" only
// disables 4 MB pages; with rules.mem_takes_map_items (2.4, early 2.5) "exactmap" (memcmp of 8
// characters) empties the table and nn@ss / nn#ss / nn$ss add RAM / ACPI data / reserved
// without setting userdef; anything else is limit_regions(nn) and sets userdef. The value is
// never checked: no "Malformed early option", and mem=0 or mem=abc is limit_regions(0).
void ApplyI386Mem(const KernelOption& opt, BootState& st) {
  using Action = MemoryOptionOutcome::Action;
  MemoryOptionOutcome o = Outcome(opt, opt.value);
  const std::string& v = opt.value;
  if (v.compare(0, 9, "nopentium") == 0) {
    o.read = v.substr(0, 9);
    o.ignored = v.substr(9);
  } else if (st.rules.mem_takes_map_items && v.compare(0, 8, "exactmap") == 0) {
    st.table.entries.clear();
    st.userdef = true;
    o.action = Action::kExactmap;
    o.read = v.substr(0, 8);
    o.ignored = v.substr(8);
  } else {
    const MemParsed size = MemParse(v, 0, st.rules);
    size_t p = size.consumed;
    const char op = p < v.size() ? v[p] : '\0';
    const uint32_t add_type = op == '@' ? kRamType : op == '#' ? kAcpiType
                            : op == '$' ? kReservedType : 0;
    if (st.rules.mem_takes_map_items && add_type) {
      const MemParsed start = MemParse(v, p + 1, st.rules);
      p += 1 + start.consumed;
      st.table.Add(start.value, size.value, add_type);
      o.action = Action::kAdd;
      o.type = AsType(add_type);
      o.start = start.value;
      o.end = size.value > UINT64_MAX - start.value ? UINT64_MAX : start.value + size.value;
    } else {
      LimitRegions(size.value, st);
      st.userdef = true;
      o.action = Action::kLimit;
      o.start = size.value;
      o.end = UINT64_MAX;
      if (size.consumed == 0)
        Issue(o, OptionProblem::kNoEffect,
              "no number after 'mem=': this kernel reads 0 and cuts the map at 0 "
              "(limit_regions(0))");
    }
    o.read = v.substr(0, p);
    o.ignored = v.substr(p);
  }
  if (!o.ignored.empty())
    Issue(o, OptionProblem::kTrailingIgnored,
          "the kernel reads '" + o.read + "' and never looks at the trailing '" + o.ignored + "'");
  st.outcomes.push_back(std::move(o));
}

// parse_memopt (e820.c; 2.6.32.69, 4.19, 6.12 read, the same logic): NULL -> -EINVAL;
// "nopentium" -> warning and -EINVAL on x86_64; userdef = 1; memparse; 0 -> -EINVAL
// ("Don't remove all memory when getting mem={invalid}"); else remove RAM from nn up. What
// follows the number is never looked at.
void ApplyMem(const KernelOption& opt, BootState& st) {
  MemoryOptionOutcome o = Outcome(opt, opt.value);
  if (!opt.has_value) {
    o.rejected = true;
    o.action = MemoryOptionOutcome::Action::kNone;
    Issue(o, OptionProblem::kNoEffect,
          "'mem' without '=' is passed to parse_memopt as NULL, which returns -EINVAL: "
          "nothing changes");
    PrintMalformed(st, o);
  } else if (opt.value == "nopentium") {
    st.dmesg->push_back("mem=nopentium ignored! (only supported on x86_32)");
    o.rejected = true;
    Issue(o, OptionProblem::kNopentium,
          "mem=nopentium only disables 4 MB pages on 32-bit kernels; x86_64 ignores it");
    PrintMalformed(st, o);
  } else {
    st.userdef = true;
    const MemParsed mp = MemParse(opt.value, 0, st.rules);
    o.read = opt.value.substr(0, mp.consumed);
    o.ignored = opt.value.substr(mp.consumed);
    if (mp.value == 0) {
      o.rejected = true;
      Issue(o, mp.consumed == 0 ? OptionProblem::kNoEffect : OptionProblem::kZeroSize,
            "the kernel reads " + std::string(mp.consumed ? "0" : "no number") +
                " from 'mem=" + opt.value +
                "' and refuses it (parse_memopt: \"Don't remove all memory\"), but it has "
                "already set userdef, so the user-defined map is printed, unchanged by this "
                "option");
      PrintMalformed(st, o);
    } else {
      ApplyLimit(mp.value, st);
      o.action = MemoryOptionOutcome::Action::kLimit;
      o.start = mp.value;
      o.end = UINT64_MAX;
      if (!o.ignored.empty())
        Issue(o, OptionProblem::kTrailingIgnored,
              "the kernel reads " + KernelHex(mp.value, 0) + " (" + Size(mp.value) +
                  ") and silently ignores the trailing '" + o.ignored +
                  "' (parse_memopt never checks what follows the number)");
    }
  }
  st.outcomes.push_back(std::move(o));
}

// memmap=exactmap (strncmp(p, "exactmap", 8)): the table is emptied and userdef set; what
// follows the 8 characters is never looked at.
void MemmapExactmap(const std::string& item, MemoryOptionOutcome& o, BootState& st) {
  st.table.entries.clear();  // e820_table->nr_entries = 0
  st.userdef = true;
  o.action = MemoryOptionOutcome::Action::kExactmap;
  o.read = item.substr(0, 8);
  o.ignored = item.substr(std::min<size_t>(8, item.size()));
  if (!o.ignored.empty())
    Issue(o, OptionProblem::kTrailingIgnored,
          "'" + item + "' is taken as exactmap: the kernel compares only 8 characters and "
          "ignores '" + o.ignored + "'");
}

// A memmap= item that starts with a size, as parse_memmap_one reads on from there.
struct MemmapItem {
  const std::string& item;
  MemParsed size;  // memparse of the item's start
  size_t p;        // the kernel's char *p: where reading goes on
  char op;         // the character right after the size ('\0' at the end)
};

// memparse of the start address after the operator; moves it.p past it. Nothing readable there
// is memparse's 0, noted on `o`.
uint64_t ReadStart(MemmapItem& it, MemoryOptionOutcome& o, const LinuxRules& rules) {
  const MemParsed s = MemParse(it.item, it.p + 1, rules);
  it.p = it.p + 1 + s.consumed;
  if (s.consumed == 0)
    Issue(o, OptionProblem::kNoStartAddress,
          std::string("nothing the kernel can read as an address follows '") + it.op +
              "': memparse returns 0, so the range starts at address 0");
  return s.value;
}

// Notes [start, start + size) on `o` (its end clamped at 2^64) and a size of 0; returns whether
// the end passes 2^64.
bool NoteRange(const MemmapItem& it, uint64_t start, MemoryOptionOutcome& o) {
  o.start = start;
  const bool wraps = it.size.value > UINT64_MAX - start;
  o.end = wraps ? UINT64_MAX : start + it.size.value;
  if (it.size.value == 0)
    Issue(o, OptionProblem::kZeroSize,
          "the size is 0: the entry is empty and e820__update_table drops it");
  return wraps;
}

// The e820 type memmap=nn<op>ss adds on this version: '@' RAM, '#' ACPI data, '$' reserved,
// '!' persistent memory (4.1 on); 0 when the operator adds nothing.
uint32_t MemmapAddType(char op, const LinuxRules& rules) {
  if (op == '@') return kRamType;
  if (op == '#') return kAcpiType;
  if (op == '$') return kReservedType;
  if (op == '!' && rules.memmap_pram) return kPramType;
  return 0;
}

// memmap=nn@ss / nn#ss / nn$ss / nn!ss: e820__range_add of the range as it is.
void MemmapAdd(MemmapItem& it, uint32_t add_type, MemoryOptionOutcome& o, BootState& st) {
  const uint64_t start = ReadStart(it, o, st.rules);
  const bool wraps = NoteRange(it, start, o);
  st.table.Add(start, it.size.value, add_type);
  o.action = MemoryOptionOutcome::Action::kAdd;
  o.type = AsType(add_type);
  if (wraps)
    Issue(o, OptionProblem::kEndWraps,
          "start " + KernelHex(start, 0) + " + size " + KernelHex(it.size.value, 0) +
              " passes 2^64: e820__range_add stores it as is, and the sanitize at the "
              "user-defined map refuses the table (\"Invalid user supplied memory map\")");
}

// memmap=nn%ss-from+to, once read and checked: __e820__range_update of [start, start + size)
// from one type to the other, an add (no from), a remove of one type (no to) or of every type
// (neither). Equal types stop the boot: st.panic is set and the kernel's BUG line printed.
void ApplyRetype(uint64_t start, uint64_t size, uint32_t from, uint32_t to,
                 MemoryOptionOutcome& o, BootState& st) {
  using Action = MemoryOptionOutcome::Action;
  if (from && to) {
    if (from == to) {
      // __e820__range_update: BUG_ON(old_type == new_type).
      Issue(o, OptionProblem::kSameTypes,
            "old and new type are both " + std::to_string(from) +
                ": __e820__range_update hits BUG_ON(old_type == new_type) and the boot "
                "stops");
      st.panic = "kernel BUG in __e820__range_update: BUG_ON(old_type == new_type) (" +
                 o.option + ")";
      st.dmesg->push_back("kernel BUG at arch/x86/kernel/e820.c" +
                          (st.rules.range_update_bug_line
                               ? ":" + std::to_string(st.rules.range_update_bug_line)
                               : std::string()) +
                          "!");
      return;
    }
    st.table.Update(start, size, from, to);
    o.action = Action::kRetype;
  } else if (to) {
    st.table.Add(start, size, to);
    o.action = Action::kAdd;
  } else if (from) {
    st.table.Remove(start, size, from, true);
    o.action = Action::kRemove;
  } else {
    st.table.Remove(start, size, 0, false);
    o.action = Action::kRemove;
  }
}

// memmap=nn%ss-from+to (4.16 on): the start, then "-from" and "+to" (each optional, read by
// simple_strtoull); anything after them is -EINVAL before any change.
void MemmapRetype(MemmapItem& it, MemoryOptionOutcome& o, BootState& st) {
  const std::string& item = it.item;
  const uint64_t start = ReadStart(it, o, st.rules);
  uint32_t from = 0, to = 0;  // enum e820_type: simple_strtoull's value truncated to 32 bits
  if (it.p < item.size() && item[it.p] == '-') {
    const MemParsed t = SimpleStrtoull(item, it.p + 1);
    from = static_cast<uint32_t>(t.value);
    it.p += 1 + t.consumed;
  }
  if (it.p < item.size() && item[it.p] == '+') {
    const MemParsed t = SimpleStrtoull(item, it.p + 1);
    to = static_cast<uint32_t>(t.value);
    it.p += 1 + t.consumed;
  }
  o.read = item.substr(0, it.p);
  o.ignored = item.substr(it.p);
  if (it.p != item.size()) {  // "if (*p != '\0') return -EINVAL;" before any change
    o.rejected = true;
    Issue(o, OptionProblem::kMalformed,
          "after the types the kernel finds '" + o.ignored +
              "' and returns -EINVAL before changing anything (the user-defined map is "
              "still printed: userdef is already set)");
    return;
  }
  NoteRange(it, start, o);
  o.type = AsType(to);
  o.from = from ? AsType(from) : E820Type::kHole;
  ApplyRetype(start, it.size.value, from, to, o, st);
}

// "} else { e820__range_remove(mem_size, ULLONG_MAX - mem_size, E820_TYPE_RAM, 1); }":
// anything but a known operator after the size makes the item act as mem=nn (on i386 before
// 2.6.27: "} else { limit_regions(mem_size); userdef = 1; }", id 24181767570).
void MemmapActsAsMem(const MemmapItem& it, MemoryOptionOutcome& o, BootState& st) {
  const std::string& item = it.item;
  const char op = it.op;
  ApplyLimit(it.size.value, st);
  st.userdef = true;
  o.action = MemoryOptionOutcome::Action::kLimit;
  o.start = it.size.value;
  o.end = UINT64_MAX;
  const std::string nn = item.substr(0, it.size.consumed);
  if ((op == '!' && !st.rules.memmap_pram) || (op == '%' && !st.rules.memmap_retype))
    Issue(o, OptionProblem::kUnknownForm,
          std::string("Linux ") + st.rules.version + " does not know memmap=nn" + op +
              "ss (" + (op == '!' ? "added in 4.1" : "added in 4.16") +
              "), so the item acts as mem=" + nn);
  if (it.size.value == 0)
    Issue(o, OptionProblem::kRemovesAllRam,
          "'" + item + "' reads a size of 0 and acts as mem=0: unlike mem=, memmap= has no "
          "guard, so every usable byte is removed");
  else
    Issue(o, OptionProblem::kActsAsMem,
          "'memmap=" + item + "' has no $, !, @, # or % right after the size, so it acts as "
          "mem=" + nn + " (removes usable RAM above " + KernelHex(it.size.value, 0) +
              ") and reserves nothing" +
              (std::isdigit(static_cast<unsigned char>(op))
                   ? "; memmap=" + nn + "$" + item.substr(it.p) + " would reserve"
                   : ""));
}

// parse_memmap_one (e820.c 6.12; 2.6.32.69's parse_memmap_opt has the same body without '!'
// and '%'). Returns the outcome; `rejected` is its -EINVAL.
MemoryOptionOutcome MemmapOne(const KernelOption& opt, const std::string& item, BootState& st) {
  MemoryOptionOutcome o = Outcome(opt, item);
  if (item.compare(0, 8, "exactmap") == 0) {
    MemmapExactmap(item, o, st);
    return o;
  }
  const MemParsed size = MemParse(item, 0, st.rules);
  // i386 parse_memmap has no "no digits" check: memparse's 0 goes on to limit_regions(0).
  const bool i386 = I386Setup(st.rules);
  if (size.consumed == 0 && !i386) {
    o.rejected = true;
    o.ignored = item;
    Issue(o, OptionProblem::kNoEffect,
          "'" + item + "' does not start with a size, so parse_memmap_one returns -EINVAL "
          "before changing anything");
    return o;
  }
  // x86: every item with a size sets userdef. i386 sets user_defined_memmap only for exactmap
  // and the limit_regions branch, not for nn@ss / nn#ss / nn$ss (parse_memmap, id 14114744514;
  // parse_cmdline_early, id 24181767570).
  if (!i386) st.userdef = true;
  MemmapItem it{item, size, size.consumed,
                size.consumed < item.size() ? item[size.consumed] : '\0'};
  if (const uint32_t add_type = MemmapAddType(it.op, st.rules)) {
    MemmapAdd(it, add_type, o, st);
  } else if (it.op == '%' && st.rules.memmap_retype) {
    MemmapRetype(it, o, st);
    return o;  // its own check of what follows, before any change
  } else {
    MemmapActsAsMem(it, o, st);
  }
  o.read = item.substr(0, it.p);
  o.ignored = item.substr(it.p);
  if (it.p != item.size()) {  // "return *p == '\0' ? 0 : -EINVAL;" after the change was made
    o.rejected = true;
    Issue(o, OptionProblem::kMalformed,
          "the kernel read '" + o.read + "', applied it, and ignored '" + o.ignored + "'");
  }
  return o;
}

void ApplyMemmap(const KernelOption& opt, BootState& st) {
  if (!st.rules.memmap_comma_list) {
    // Before 3.15 (3.13.10 read): one item per memmap=, its -EINVAL printed by do_early_param.
    if (!opt.has_value) {
      MemoryOptionOutcome o = Outcome(opt, "");
      o.rejected = true;
      Issue(o, OptionProblem::kNoEffect,
            "'memmap' without '=' reaches parse_memmap_opt as NULL: -EINVAL, nothing changes");
      PrintMalformed(st, o);
      st.outcomes.push_back(std::move(o));
      return;
    }
    MemoryOptionOutcome o = MemmapOne(opt, opt.value, st);
    if (o.rejected) {
      if (opt.value.find(',') != std::string::npos)
        Issue(o, OptionProblem::kMalformed,
              "Linux " + st.rules.version + " reads one item per memmap= (comma lists came in "
              "3.15): everything from the first ',' on is ignored; give each range its own "
              "memmap=");
      if (!I386Setup(st.rules)) PrintMalformed(st, o);
    }
    st.outcomes.push_back(std::move(o));
    return;
  }
  // parse_memmap_opt (3.19.8, 4.19, 6.12): "while (str) { k = strchr(str, ','); ...
  // parse_memmap_one(str); }" and "return 0": errors are never reported.
  if (!opt.has_value) {
    MemoryOptionOutcome o = Outcome(opt, "");
    o.rejected = true;
    Issue(o, OptionProblem::kNoEffect,
          "'memmap' without '=' reaches parse_memmap_opt as NULL: its loop never runs, "
          "nothing changes and nothing is printed");
    st.outcomes.push_back(std::move(o));
    return;
  }
  size_t pos = 0;
  while (true) {
    const size_t comma = opt.value.find(',', pos);
    const std::string item =
        opt.value.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    st.outcomes.push_back(MemmapOne(opt, item, st));
    if (!st.panic.empty() || comma == std::string::npos) break;
    pos = comma + 1;
  }
}

bool Overlaps(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1) { return a0 < b1 && b0 < a1; }

// A memmap=nn$ss range, noted so Boot can judge each reservation.
struct Requested {
  uint64_t start, end;
  std::string option;
};

BootedKernel::Reservation Judge(const MachineSpec& spec, const Requested& r,
                                std::vector<std::string>& messages) {
  BootedKernel::Reservation res;
  res.start = r.start;
  res.end = r.end;
  res.option = r.option;
  const auto firmware = SanitizeE820(spec.firmware_e820);
  const uint64_t ram = E820BytesOfType(firmware, r.start, r.end, E820Type::kRam);
  res.over_ram = ram == r.end - r.start;
  res.over_hole = !res.over_ram;
  for (const auto& m : spec.mmio) {
    if (!Overlaps(r.start, r.end, m.start, m.end)) continue;
    res.over_hole = true;
    if (res.conflict.empty()) res.conflict = m.name;
    // e820__reserve_resources_late -> insert_resource_expand_to_fit (kernel/resource.c) when
    // the range straddles the window's edge; nested silently when inside it (FACTS.md, QEMU).
    if (r.start < m.start || r.end > m.end)
      messages.push_back("Expanded resource Reserved due to conflict with " + m.name);
  }
  if (res.conflict.empty() && res.over_hole) {
    for (const auto& e : firmware) {
      if (e.type != E820Type::kRam && Overlaps(r.start, r.end, e.start, e.end)) {
        res.conflict = std::string("firmware ") + E820TypeName(e.type) + " " +
                       MemRange(e.start, e.end);
        break;
      }
    }
    if (res.conflict.empty()) res.conflict = "no firmware map entry (a hole)";
  }
  if (res.over_hole)
    messages.push_back("resmem: " + r.option + " reserves " + MemRange(r.start, r.end) +
                       " where the firmware has no RAM (" + res.conflict +
                       "); the kernel accepts it, reads there return 0 and writes vanish "
                       "(FACTS.md, QEMU)");
  return res;
}

// What the kernel receives from what was written (mock/machine/grub.h: dash, GRUB's lexer and
// loader): sets k.cmdline, and notes each stage that changed the options in k.messages.
Status ReceiveCmdline(const MachineSpec& spec, BootedKernel& k) {
  RESMEM_ASSIGN_OR_RETURN(KernelCmdlineTrace trace,
                          TraceKernelCmdline(spec.cmdline_source, spec.cmdline));
  k.cmdline = trace.kernel;
  if (trace.Changed()) {
    for (const auto& line : trace.StageLines()) k.messages.push_back("resmem: " + line);
    for (const auto& n : trace.notes) k.messages.push_back("resmem: " + n);
  }
  return Status::Ok();
}

// copy_bootdata copies COMMAND_LINE_SIZE bytes and parse_early_param keeps
// COMMAND_LINE_SIZE - 1 characters of them (strlcpy / strscpy): the rest never reaches the
// kernel, and /proc/cmdline shows the kept part. Cuts k.cmdline to what is kept, notes the cut
// in k.cmdline_issues, and returns the arguments lost whole.
std::vector<KernelOption> CutToCommandLineSize(const LinuxRules& rules, BootedKernel& k) {
  const size_t keep = rules.command_line_size - 1;
  std::vector<KernelOption> lost;
  if (k.cmdline.size() <= keep) return lost;
  const std::string full = k.cmdline;
  k.cmdline.resize(keep);
  const auto all = SplitKernelCmdline(full);
  const auto kept = SplitKernelCmdline(k.cmdline);
  std::string detail = "the command line has " + std::to_string(full.size()) +
                       " characters; x86's COMMAND_LINE_SIZE is " +
                       std::to_string(rules.command_line_size) + ", so the kernel reads the "
                       "first " + std::to_string(keep);
  if (!kept.empty() && kept.size() <= all.size() && kept.back().raw != all[kept.size() - 1].raw)
    detail += "; '" + all[kept.size() - 1].raw + "' is cut to '" + kept.back().raw + "'";
  for (size_t i = kept.size(); i < all.size(); ++i) lost.push_back(all[i]);
  if (!lost.empty())
    detail += "; " + std::to_string(lost.size()) + " argument(s) after it are lost, from '" +
              lost.front().raw + "'";
  k.cmdline_issues.push_back({OptionProblem::kLineCut, detail});
  return lost;
}

// e820__memory_setup: the firmware map, sanitized with this version's rules, printed.
void SetupMemoryMap(const MachineSpec& spec, BootState& st) {
  for (const auto& e : spec.firmware_e820)
    if (e.type != E820Type::kHole && e.end > e.start)
      st.table.entries.push_back({e.start, e.end - e.start, static_cast<uint32_t>(e.type)});
  st.table.UpdateTable();  // a single entry stays as it is
  st.table.PrintHeader("BIOS-provided physical RAM map:");
  st.table.Print("BIOS-e820");
}

// The kernel's own edits from the log, split by when the version applies them.
struct KernelEdits {
  std::vector<E820Edit> setup_data;  // RAM -> RESERVED_KERN (e820_reserve_setup_data)
  std::vector<E820Edit> late;        // anything else: after the user map
};

KernelEdits SplitKernelEdits(const MachineSpec& spec) {
  KernelEdits edits;
  for (const auto& e : spec.early_edits) {
    if (e.from == E820Type::kRam && e.to == E820Type::kReservedKern)
      edits.setup_data.push_back(e);
    else
      edits.late.push_back(e);
  }
  return edits;
}

// e820_reserve_setup_data: setup_data kept as RESERVED_KERN and the table printed again; a
// version that no longer marks it (6.15 on) gets a note in st.notes instead.
void ReserveSetupData(const std::vector<E820Edit>& setup_data, BootState& st) {
  if (setup_data.empty()) return;
  if (!st.rules.keeps_setup_data) {
    st.notes.push_back("resmem: Linux " + st.rules.version +
                       " no longer marks setup_data in the e820 table (6.15 dropped "
                       "E820_TYPE_RESERVED_KERN); " + std::to_string(setup_data.size()) +
                       " setup_data edit(s) of the machine not applied");
    return;
  }
  for (const auto& e : setup_data)
    st.table.Update(e.start, e.end - e.start, kRamType, kReservedKernType);
  st.table.UpdateTable();  // its result is not checked there
  // setup.c's printk never had the "e820: " prefix (3.6, 3.13.10, 3.19.8, 4.4.155 read).
  st.dmesg->push_back("extended physical RAM map:");
  st.table.Print("reserve setup_data");
}

// A mem=/memmap= argument the kernel never applies, with why (none after a panic).
void NotApplied(const KernelOption& opt, OptionProblem kind, const std::string& detail,
                BootState& st) {
  MemoryOptionOutcome o = Outcome(opt, opt.value);
  o.applied = false;
  if (!detail.empty()) Issue(o, kind, detail);
  st.outcomes.push_back(std::move(o));
}

// parse_early_param: every argument in order (parse_args, do_early_param); "mem" and
// "memmap" match by parameq, i.e. exactly (neither name has '-' or '_'). The arguments `lost`
// past COMMAND_LINE_SIZE are noted after them, unapplied.
void ParseEarlyParams(const std::string& cmdline, const std::vector<KernelOption>& lost,
                      BootState& st) {
  const LinuxRules& rules = st.rules;
  for (const auto& opt : SplitKernelCmdline(cmdline)) {
    if (opt.key != "mem" && opt.key != "memmap") continue;
    if (!st.panic.empty() || (opt.after_dashdash && rules.stops_at_dashdash)) {
      NotApplied(opt, OptionProblem::kIgnoredAfterDashDash,
                 st.panic.empty()
                     ? "'" + opt.raw + "' comes after \"--\": parse_args stops there and hands "
                       "the rest to init, so it is no kernel option"
                     : std::string(),
                 st);
      continue;
    }
    if (opt.key == "memmap" && rules.mem_takes_map_items) {
      // 2.4 and early 2.5 have no memmap= (Pavel Machek's patch, id 34134566908, added it):
      // the argument goes to init untouched.
      NotApplied(opt, OptionProblem::kUnknownForm,
                 "Linux " + rules.version + " has no memmap= option (it came in 2.5.6x): its "
                 "spellings are mem=exactmap and mem=nn@ss / nn#ss / nn$ss",
                 st);
      continue;
    }
    if (opt.key == "mem" && I386Setup(rules) && opt.has_value)
      ApplyI386Mem(opt, st);
    else if (opt.key == "mem") ApplyMem(opt, st);
    else ApplyMemmap(opt, st);
  }
  for (const auto& opt : lost) {
    if (opt.key != "mem" && opt.key != "memmap") continue;
    NotApplied(opt, OptionProblem::kLineCut,
               "'" + opt.raw + "' lies past COMMAND_LINE_SIZE: the kernel never sees it", st);
  }
}

// e820__finish_early_params / finish_e820_parsing: with userdef, the user's table sanitized
// and printed, or the panic of a table that cannot be sanitized. i386 before 2.6.27 prints the
// user's table as it stands (linux_rules.h).
void FinishEarlyParams(BootState& st) {
  if (!st.panic.empty() || !st.userdef) return;
  if (st.rules.sanitizes_user_map && !st.table.UpdateTable()) {
    st.panic = "Invalid user supplied memory map";
    st.dmesg->push_back("Kernel panic - not syncing: Invalid user supplied memory map");
  } else {
    st.table.PrintHeader("user-defined physical RAM map:");
    st.table.Print("user");
  }
}

// The map the kernel holds now, into k.e820 with k.panic; when it panicked on a table it could
// not sanitize, the newest sanitize of the same entries (ends past 2^64 clamped) shows what was
// asked for.
void TakeKernelMap(BootState& st, BootedKernel& k) {
  k.panic = st.panic;
  k.e820 = st.panic.empty() ? st.table.ToEntries() : SanitizeE820(st.table.ToEntries());
  if (!st.panic.empty())
    st.notes.push_back("resmem: the kernel stops here: " + st.panic +
                       (st.table.entries.size() < 2 && st.panic[0] == 'I'
                            ? " (the table has fewer than 2 entries; e820__update_table "
                              "refuses such a table)"
                            : ""));
}

// Later edits of the log (trim_bios_range, EFI): after the user map, so they do not change it,
// but they do change the table the kernel goes on with (trim_bios_range ends in
// e820__update_table, arch/x86/kernel/setup.c): /proc/iomem and usable RAM show them in k.e820.
void ApplyLateEdits(const std::vector<E820Edit>& late, BootState& st, BootedKernel& k) {
  if (!st.panic.empty() || late.empty()) return;
  for (const auto& e : late) {
    const uint32_t from = static_cast<uint32_t>(e.from);
    if (e.to == E820Type::kHole)
      st.table.Remove(e.start, e.end - e.start, from, e.from != E820Type::kHole);
    else
      st.table.Update(e.start, e.end - e.start, from, static_cast<uint32_t>(e.to));
  }
  if (st.table.UpdateTable()) k.e820 = st.table.ToEntries();
}

// Moves the option outcomes into k.memory_options and judges each memmap$ reservation against
// the firmware map (k.reservations; Judge's notes into `judged`, an issue on each option over
// non-RAM). Returns the reservations, none when the kernel panicked (no kernel holds them).
std::vector<Requested> JudgeReservations(const MachineSpec& spec, BootState& st,
                                         BootedKernel& k, std::vector<std::string>& judged) {
  std::vector<Requested> reserved;
  for (auto& o : st.outcomes)
    if (o.ReservesForADriver()) reserved.push_back({o.start, o.end, o.Label()});
  k.memory_options = std::move(st.outcomes);
  if (!k.panic.empty()) reserved.clear();
  for (const auto& r : reserved) {
    k.reservations.push_back(Judge(spec, r, judged));
    const auto& res = k.reservations.back();
    for (auto& o : k.memory_options)
      if (o.Label() == r.option && o.start == r.start && res.over_hole)
        Issue(o, OptionProblem::kOverNonRam,
              "reserves " + MemRange(r.start, r.end) + " where the firmware has no RAM (" +
                  res.conflict + "); the kernel accepts it");
  }
  return reserved;
}

// Two reservations that overlap: noted in k.cmdline_issues, pair by pair.
void NoteOverlappingReservations(const std::vector<Requested>& reserved, BootedKernel& k) {
  for (size_t i = 0; i < reserved.size(); ++i)
    for (size_t j = i + 1; j < reserved.size(); ++j)
      if (Overlaps(reserved[i].start, reserved[i].end, reserved[j].start, reserved[j].end))
        k.cmdline_issues.push_back(
            {OptionProblem::kOverlapsReservation,
             "'" + reserved[i].option + "' " + MemRange(reserved[i].start, reserved[i].end) +
                 " and '" + reserved[j].option + "' " +
                 MemRange(reserved[j].start, reserved[j].end) +
                 " overlap: e820__update_table merges them into one reserved range"});
}

// The firmware's RAM at or above `limit` that no reservation covers.
uint64_t RamAboveOutsideReservations(const std::vector<E820Entry>& firmware, uint64_t limit,
                                     const std::vector<Requested>& reserved) {
  uint64_t lost_ram = 0;
  for (const auto& e : firmware) {
    if (e.type != E820Type::kRam || e.end <= limit) continue;
    uint64_t a = std::max(e.start, limit);
    // Subtract the reserved parts of [a, e.end).
    std::vector<std::pair<uint64_t, uint64_t>> cuts;
    for (const auto& r : reserved)
      if (Overlaps(a, e.end, r.start, r.end))
        cuts.push_back({std::max(a, r.start), std::min(e.end, r.end)});
    std::sort(cuts.begin(), cuts.end());
    uint64_t covered = 0, upto = a;
    for (const auto& c : cuts) {
      const uint64_t s = std::max(c.first, upto);
      if (c.second > s) covered += c.second - s;
      upto = std::max(upto, c.second);
    }
    lost_ram += (e.end - a) - covered;
  }
  return lost_ram;
}

// mem= below a reservation: mem= removes only usable RAM (e820__range_remove(..., RAM, 1)),
// so the reservation survives, and RAM above the limit outside every reservation is lost:
// an issue on each such applied mem= of k.memory_options.
void NoteMemBelowReservations(const MachineSpec& spec, const std::vector<Requested>& reserved,
                              BootedKernel& k) {
  const auto firmware = SanitizeE820(spec.firmware_e820);
  for (auto& o : k.memory_options) {
    if (!o.applied || o.key != "mem" || o.action != MemoryOptionOutcome::Action::kLimit)
      continue;
    bool below = false;
    for (const auto& r : reserved) below = below || r.end > o.start;
    if (!below) continue;
    const uint64_t lost_ram = RamAboveOutsideReservations(firmware, o.start, reserved);
    if (lost_ram > 0)
      Issue(o, OptionProblem::kMemBelowReservation,
            "mem=" + o.item + " is below the end of a memmap$ reservation: the reservation "
            "stays (mem= removes only usable RAM) but " + Size(lost_ram) +
                " of RAM above " + KernelHex(o.start, 0) +
                " that no reservation covers is lost to the kernel");
  }
}

// k.messages in their order: the command-line stage notes already there are put after the
// kernel's dmesg; then the command line's issues, each option's issues (but over non-RAM,
// which Judge's note says), the boot's notes, and Judge's notes.
void AssembleMessages(const std::vector<std::string>& notes,
                      const std::vector<std::string>& judged, BootedKernel& k) {
  k.messages.insert(k.messages.begin(), k.dmesg.begin(), k.dmesg.end());
  for (const auto& issue : k.cmdline_issues) k.messages.push_back("resmem: " + issue.detail);
  for (const auto& o : k.memory_options)
    for (const auto& issue : o.issues)
      if (issue.kind != OptionProblem::kOverNonRam)  // Judge's note says it
        k.messages.push_back("resmem: '" + o.Label() + "': " + issue.detail);
  for (const auto& n : notes) k.messages.push_back(n);
  for (const auto& n : judged) k.messages.push_back(n);
}

// Usable RAM of k.e820 (RAM and RESERVED_KERN), and MemTotal: that less what the kernel keeps.
void CountUsableRam(const MachineSpec& spec, BootedKernel& k) {
  for (const auto& e : k.e820)
    if (IsUsable(e.type)) k.usable_ram += e.end - e.start;
  k.mem_total = k.usable_ram > spec.kernel_reserved_bytes
                    ? k.usable_ram - spec.kernel_reserved_bytes
                    : 0;
}

}  // namespace

// The phases of setup_arch in the order the file's head lists, each a function above; the
// BootState carries the table, userdef, a panic and the option outcomes between them.
Result<BootedKernel> Boot(const MachineSpec& spec) {
  BootedKernel k;
  RESMEM_RETURN_IF_ERROR(ReceiveCmdline(spec, k));
  RESMEM_ASSIGN_OR_RETURN(const LinuxRules rules,
                          LinuxRulesFor(spec.kernel_version, spec.arch));
  k.rules = rules;
  BootState st(rules, &k.dmesg);
  const std::vector<KernelOption> lost = CutToCommandLineSize(rules, k);
  SetupMemoryMap(spec, st);
  const KernelEdits edits = SplitKernelEdits(spec);
  if (!rules.setup_data_after_params) ReserveSetupData(edits.setup_data, st);
  ParseEarlyParams(k.cmdline, lost, st);
  if (st.panic.empty() && rules.setup_data_after_params) ReserveSetupData(edits.setup_data, st);
  FinishEarlyParams(st);
  TakeKernelMap(st, k);
  ApplyLateEdits(edits.late, st, k);
  std::vector<std::string> judged;  // Judge's notes, after the option notes
  const std::vector<Requested> reserved = JudgeReservations(spec, st, k, judged);
  NoteOverlappingReservations(reserved, k);
  NoteMemBelowReservations(spec, reserved, k);
  AssembleMessages(st.notes, judged, k);
  CountUsableRam(spec, k);
  return k;
}

}  // namespace resmem::sim
