// Boot(): the kernel command line applied to the firmware map with Linux's rules
// (arch/x86/kernel/e820.c: parse_memopt, parse_memmap_opt/parse_memmap_one,
// e820__finish_early_params), plus GRUB's expansion of the line before the kernel sees it.
#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstdio>

#include "mock/machine/cmdline.h"
#include "mock/machine/e820_table.h"
#include "mock/machine/machine.h"

namespace resmem::sim {
namespace {

constexpr const char* kMemForms =
    "accepted forms: mem=nn[KMGT] (e.g. mem=4G, mem=0x100000000)";
constexpr const char* kMemmapForms =
    "accepted forms: memmap=nn[KMGT]$ss (reserve), nn!ss (protected, type 12), nn@ss (RAM), "
    "nn#ss (ACPI data), nn%ss-old+new (retype), nn (like mem=nn), exactmap; "
    "several separated by commas";

std::string Hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

std::string MemRange(uint64_t start, uint64_t end) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "[mem 0x%016" PRIx64 "-0x%016" PRIx64 "]", start, end - 1);
  return buf;
}

Status Malformed(const std::string& option, const std::string& why, const char* forms) {
  // The kernel itself prints "Malformed early option '<name>'" and boots on (init/main.c,
  // do_early_param); a scenario with such a line is almost always a typo, so it is an error here.
  return Status::InvalidArgument("malformed kernel option '" + option + "': " + why + "; " +
                                 forms);
}

// The memmap=nn$ss ranges, noted so Boot can report each reservation.
struct Requested {
  uint64_t start, end;
  std::string option;
};

struct BootState {
  std::vector<E820Entry> table;
  bool userdef = false;
  std::vector<Requested> reserved;
  std::vector<std::string> notes;
};

// parse_memopt: mem=nn drops RAM above nn ("mem=nopentium" is a 32-bit relic: ignored here).
Status ApplyMem(const std::string& option, const std::string& value, BootState& st) {
  if (value == "nopentium") {
    st.notes.push_back("resmem: mem=nopentium has no effect on x86_64; ignored");
    return Status::Ok();
  }
  auto parsed = MemParse(value);
  if (parsed.consumed == 0) return Malformed(option, "no number after 'mem='", kMemForms);
  if (parsed.value == 0) return Malformed(option, "mem=0 leaves no memory", kMemForms);
  if (parsed.consumed != value.size())
    st.notes.push_back("resmem: '" + option + "': the kernel reads " + Hex(parsed.value) +
                       " and silently ignores the trailing '" + value.substr(parsed.consumed) +
                       "'");
  E820RangeRemove(st.table, parsed.value, UINT64_MAX, E820Type::kRam);
  st.userdef = true;
  return Status::Ok();
}

Result<E820Type> ParseTypeNumber(const std::string& option, const std::string& text) {
  auto p = MemParse(text);
  if (p.consumed == 0 || p.consumed != text.size())
    return Malformed(option, "type '" + text + "' is not a number", kMemmapForms);
  switch (p.value) {
    case 1: case 2: case 3: case 4: case 5: case 7: case 12:
      return static_cast<E820Type>(p.value);
    default:
      return Malformed(option, "unknown e820 type " + text + " (use 1,2,3,4,5,7 or 12)",
                       kMemmapForms);
  }
}

// parse_memmap_one: one comma-separated item of memmap=.
Status ApplyMemmapOne(const std::string& option, const std::string& item, BootState& st) {
  if (item == "exactmap") {
    st.table.clear();  // e820_table->nr_entries = 0; the following items define the map
    st.userdef = true;
    return Status::Ok();
  }
  const auto size = MemParse(item);
  if (size.consumed == 0)
    return Malformed(option, "'" + item + "' does not start with a size", kMemmapForms);
  st.userdef = true;
  if (size.consumed == item.size()) {
    // "memmap=nn" alone: e820__range_remove(nn, ULLONG_MAX - nn, E820_TYPE_RAM, 1), as mem=nn.
    if (size.value == 0) return Malformed(option, "memmap=0 leaves no memory", kMemmapForms);
    E820RangeRemove(st.table, size.value, UINT64_MAX, E820Type::kRam);
    st.notes.push_back("resmem: '" + option + "' has no $, !, @ or # part, so it acts as mem=" +
                       item + " and reserves nothing");
    return Status::Ok();
  }
  const char op = item[size.consumed];
  const std::string rest = item.substr(size.consumed + 1);
  const auto at = MemParse(rest);
  if (std::string("$!@#%").find(op) == std::string::npos)
    return Malformed(option, std::string("unexpected '") + op + "' after the size", kMemmapForms);
  if (at.consumed == 0)
    return Malformed(option, std::string("no start address after '") + op + "'", kMemmapForms);
  if (size.value == 0) return Malformed(option, "zero size", kMemmapForms);
  const uint64_t start = at.value;
  const uint64_t end = (start + size.value < start) ? UINT64_MAX : start + size.value;
  if (op == '%') {
    // memmap=nn%ss-old+new: e820__range_update(ss, nn, old, new).
    const std::string types = rest.substr(at.consumed);
    const size_t plus = types.find('+');
    if (types.empty() || types[0] != '-' || plus == std::string::npos)
      return Malformed(option, "'%' needs -oldtype+newtype after the start", kMemmapForms);
    RESMEM_ASSIGN_OR_RETURN(E820Type old_type,
                            ParseTypeNumber(option, types.substr(1, plus - 1)));
    RESMEM_ASSIGN_OR_RETURN(E820Type new_type, ParseTypeNumber(option, types.substr(plus + 1)));
    E820RangeUpdate(st.table, start, end, old_type, new_type);
    return Status::Ok();
  }
  if (at.consumed != rest.size())  // parse_memmap_one: "return *p == '\0' ? 0 : -EINVAL"
    return Malformed(option, "trailing '" + rest.substr(at.consumed) + "'", kMemmapForms);
  switch (op) {
    case '$':
      E820RangeAdd(st.table, start, size.value, E820Type::kReserved);
      st.reserved.push_back({start, end, option});
      break;
    case '!': E820RangeAdd(st.table, start, size.value, E820Type::kPram); break;
    case '@': E820RangeAdd(st.table, start, size.value, E820Type::kRam); break;
    case '#': E820RangeAdd(st.table, start, size.value, E820Type::kAcpi); break;
  }
  return Status::Ok();
}

Status ApplyMemmap(const std::string& option, const std::string& value, BootState& st) {
  if (value.empty()) return Malformed(option, "empty value", kMemmapForms);
  size_t pos = 0;
  while (pos <= value.size()) {  // parse_memmap_opt: strchr(str, ',')
    const size_t comma = value.find(',', pos);
    const std::string item =
        value.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (item.empty()) return Malformed(option, "empty item in the comma list", kMemmapForms);
    RESMEM_RETURN_IF_ERROR(ApplyMemmapOne(option, item, st));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return Status::Ok();
}

bool Overlaps(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1) { return a0 < b1 && b0 < a1; }

BootedKernel::Reservation Judge(const MachineSpec& spec, const Requested& r,
                                std::vector<std::string>& messages) {
  BootedKernel::Reservation res;
  res.start = r.start;
  res.end = r.end;
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

}  // namespace

Result<BootedKernel> Boot(const MachineSpec& spec) {
  BootedKernel k;
  // What the kernel receives from what was written (mock/machine/grub.h: dash, GRUB's lexer and
  // loader); each stage that changed the options is noted.
  RESMEM_ASSIGN_OR_RETURN(KernelCmdlineTrace trace,
                          TraceKernelCmdline(spec.cmdline_source, spec.cmdline));
  k.cmdline = trace.kernel;
  if (trace.Changed()) {
    for (const auto& line : trace.StageLines()) k.messages.push_back("resmem: " + line);
    for (const auto& n : trace.notes) k.messages.push_back("resmem: " + n);
  }
  BootState st;
  st.table = SanitizeE820(spec.firmware_e820);
  for (const auto& e : st.table) k.dmesg.push_back(E820PrintLine("BIOS-e820", e));
  for (const auto& opt : SplitKernelCmdline(k.cmdline)) {
    // Early parameters run in command-line order (init/main.c, parse_early_param).
    if (opt.key == "mem") {
      if (!opt.has_value) return Malformed(opt.raw, "no value", kMemForms);
      RESMEM_RETURN_IF_ERROR(ApplyMem(opt.raw, opt.value, st));
    } else if (opt.key == "memmap") {
      if (!opt.has_value) return Malformed(opt.raw, "no value", kMemmapForms);
      RESMEM_RETURN_IF_ERROR(ApplyMemmap(opt.raw, opt.value, st));
    }
  }
  k.e820 = SanitizeE820(st.table);
  if (st.userdef) {  // e820__finish_early_params
    k.dmesg.push_back("user-defined physical RAM map:");
    for (const auto& e : k.e820) k.dmesg.push_back(E820PrintLine("user", e));
  }
  // messages keeps the map lines first, as before, then the notes.
  k.messages.insert(k.messages.begin(), k.dmesg.begin(), k.dmesg.end());
  for (const auto& n : st.notes) k.messages.push_back(n);
  for (const auto& r : st.reserved) k.reservations.push_back(Judge(spec, r, k.messages));
  k.usable_ram = E820BytesOfType(k.e820, 0, UINT64_MAX, E820Type::kRam);
  k.mem_total = k.usable_ram > spec.kernel_reserved_bytes
                    ? k.usable_ram - spec.kernel_reserved_bytes
                    : 0;
  return k;
}

}  // namespace resmem::sim
