// e820 table editing, after arch/x86/kernel/e820.c (2.6.32.69, 3.6, 4.19, 6.12 read; see
// linux_rules.h). The algorithms are written here from the kernel's description of them.
#include "mock/machine/e820_table.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace resmem::sim {
namespace {

constexpr uint32_t kTypeRam = 1, kTypeReserved = 2, kTypeAcpi = 3, kTypeNvs = 4,
                   kTypeUnusable = 5, kTypePmem = 7, kTypePram = 12, kTypeReservedKern = 128,
                   kTypeSoftReserved = 0xefffffffu;

const LinuxRules& NewestRules() {
  static const LinuxRules* rules = new LinuxRules(LinuxRulesFor("").value());
  return *rules;
}

}  // namespace

std::string KernelHex(uint64_t v, int width) {
  char digits[32];
  std::snprintf(digits, sizeof digits, "%" PRIx64, v);
  std::string out = digits;
  while (static_cast<int>(out.size()) + 2 < width) out.insert(out.begin(), '0');
  return "0x" + out;
}

const char* E820TypeName(E820Type t) {
  // /proc/iomem and /sys/firmware/memmap names: e820.c, e820_type_to_string() (6.12).
  switch (t) {
    case E820Type::kRam: return "System RAM";
    case E820Type::kReservedKern: return "System RAM";  // 4.19: "case E820_TYPE_RESERVED_KERN:"
    case E820Type::kReserved: return "Reserved";
    case E820Type::kAcpi: return "ACPI Tables";
    case E820Type::kNvs: return "ACPI Non-volatile Storage";
    case E820Type::kUnusable: return "Unusable memory";
    case E820Type::kPmem: return "Persistent Memory";
    case E820Type::kPram: return "Persistent Memory (legacy)";
    case E820Type::kSoftReserved: return "Soft Reserved";
    case E820Type::kHole: return "(no firmware entry)";
  }
  return "Unknown E820 type";
}

std::vector<E820Entry> SanitizeE820(const std::vector<E820Entry>& table) {
  KernelE820Table t(NewestRules(), nullptr);
  for (const auto& e : table) {
    if (e.type == E820Type::kHole || e.end <= e.start) continue;
    t.entries.push_back({e.start, e.end - e.start, static_cast<uint32_t>(e.type)});
  }
  if (t.entries.size() == 1) return t.ToEntries();  // the kernel would leave one entry as is
  t.UpdateTable();
  return t.ToEntries();
}

uint64_t E820BytesOfType(const std::vector<E820Entry>& table, uint64_t start, uint64_t end,
                         E820Type type) {
  uint64_t bytes = 0;
  for (const auto& e : SanitizeE820(table)) {
    if (e.type != type) continue;
    const uint64_t a = std::max(e.start, start), b = std::min(e.end, end);
    if (b > a) bytes += b - a;
  }
  return bytes;
}

// ---- KernelE820Table ----

std::string KernelE820Table::TypeText(uint32_t type) const {
  // e820_print_type. 2.6.32.69: "(usable)" for E820_RAM and E820_RESERVED_KERN, "(reserved)",
  // "(ACPI data)", "(ACPI NVS)", "(unusable)", else "type %u" (no parentheses).
  // 4.19/6.12: the same words without parentheses, "persistent (type %u)" for 7 and 12,
  // "soft reserved" (5.5+); RESERVED_KERN's "usable" case was dropped with the type (6.15).
  std::string word;
  switch (type) {
    case kTypeRam: word = "usable"; break;
    case kTypeReservedKern:
      if (rules_.keeps_setup_data) word = "usable";
      break;
    case kTypeReserved: word = "reserved"; break;
    case kTypeAcpi: word = "ACPI data"; break;
    case kTypeNvs: word = "ACPI NVS"; break;
    case kTypeUnusable: word = "unusable"; break;
    case kTypePmem:
    case kTypePram:
      if (rules_.memmap_pram) return "persistent (type " + std::to_string(type) + ")";
      break;
    case kTypeSoftReserved:
      if (rules_.soft_reserved) word = "soft reserved";
      break;
    default: break;
  }
  if (word.empty()) return "type " + std::to_string(type);
  return rules_.old_print_format ? "(" + word + ")" : word;
}

std::string KernelE820Table::MapLine(const std::string& who, uint64_t start, uint64_t size,
                                     uint32_t type) const {
  char buf[160];
  if (rules_.old_print_format) {
    // 2.6.32.69 e820_print_map: printk(" %s: %016Lx - %016Lx ", who, addr, addr + size).
    std::snprintf(buf, sizeof buf, " %s: %016" PRIx64 " - %016" PRIx64 " ", who.c_str(), start,
                  start + size);
    return buf + TypeText(type);
  }
  // 3.6+: "%s: [mem %#018Lx-%#018Lx] ", addr, addr + size - 1.
  return who + ": [mem " + KernelHex(start, 18) + "-" + KernelHex(start + size - 1, 18) + "] " +
         TypeText(type);
}

std::string KernelE820Table::UpdateLine(uint64_t start, uint64_t end, uint32_t old_type,
                                        uint32_t new_type) const {
  if (rules_.old_print_format) {
    // 2.6.32.69 __e820_update_range: "e820 update range: %016Lx - %016Lx " (end exclusive).
    char buf[96];
    std::snprintf(buf, sizeof buf, "e820 update range: %016" PRIx64 " - %016" PRIx64 " ", start,
                  end);
    return buf + TypeText(old_type) + " ==> " + TypeText(new_type);
  }
  // 3.6+: "e820: update [mem %#010Lx-%#010Lx] ", start, end - 1.
  return "e820: update [mem " + KernelHex(start, 10) + "-" + KernelHex(end - 1, 10) + "] " +
         TypeText(old_type) + " ==> " + TypeText(new_type);
}

std::string KernelE820Table::RemoveLine(uint64_t start, uint64_t end, uint32_t old_type,
                                        bool check_type) const {
  if (!rules_.prints_remove) return "";  // 2.6.32.69 e820_remove_range prints nothing
  if (rules_.old_print_format) {
    // 3.0: "e820 remove range: 0000000100000000 - ffffffffffffffff (usable)" (end exclusive).
    char buf[96];
    std::snprintf(buf, sizeof buf, "e820 remove range: %016" PRIx64 " - %016" PRIx64 " ", start,
                  end);
    return buf + (check_type ? TypeText(old_type) : std::string());
  }
  // 3.6+: printk(KERN_DEBUG "e820: remove [mem %#010Lx-%#010Lx] ", start, end - 1); the type
  // only when check_type, so an unchecked remove ends in a space.
  return "e820: remove [mem " + KernelHex(start, 10) + "-" + KernelHex(end - 1, 10) + "] " +
         (check_type ? TypeText(old_type) : std::string());
}

void KernelE820Table::PrintHeader(const std::string& text) const {
  Emit((rules_.header_e820_prefix ? "e820: " : "") + text);
}

void KernelE820Table::Print(const std::string& who) const {
  for (const auto& e : entries) Emit(MapLine(who, e.addr, e.size, e.type));
}

void KernelE820Table::Add(uint64_t start, uint64_t size, uint32_t type) {
  if (entries.size() >= rules_.max_entries) {
    // 2.6.32.69: "Ooops! Too many entries in the memory map!"; 3.6: "e820: too many entries;
    // ignoring [mem %#010llx-%#010llx]"; 4.19/6.12: without the "e820: ".
    if (rules_.old_print_format) {
      Emit("Ooops! Too many entries in the memory map!");
    } else {
      Emit(std::string(rules_.header_e820_prefix ? "e820: " : "") +
           "too many entries; ignoring [mem " + KernelHex(start, 10) + "-" +
           KernelHex(start + size - 1, 10) + "]");
    }
    return;
  }
  entries.push_back({start, size, type});
}

void KernelE820Table::Update(uint64_t start, uint64_t size, uint32_t old_type,
                             uint32_t new_type) {
  // __e820__range_update (6.12; the same in 2.6.32.69): clamp, print, then per entry of
  // old_type: fully inside -> retyped; strictly containing the range -> split in three (two
  // appended); partly -> the overlap appended as new_type and the entry shrunk.
  if (size > UINT64_MAX - start) size = UINT64_MAX - start;
  const uint64_t end = start + size;
  Emit(UpdateLine(start, end, old_type, new_type));
  const size_t n = entries.size();
  for (size_t i = 0; i < n; ++i) {
    Entry e = entries[i];
    if (e.type != old_type) continue;
    const uint64_t e_end = e.addr + e.size;
    if (e.addr >= start && e_end <= end) {
      entries[i].type = new_type;
      continue;
    }
    if (e.addr < start && e_end > end) {
      Add(start, size, new_type);
      Add(end, e_end - end, e.type);
      entries[i].size = start - e.addr;
      continue;
    }
    const uint64_t fs = std::max(start, e.addr), fe = std::min(end, e_end);
    if (fs >= fe) continue;
    Add(fs, fe - fs, new_type);
    entries[i].size -= fe - fs;
    if (e.addr < fs) continue;
    entries[i].addr = fe;
  }
}

void KernelE820Table::Remove(uint64_t start, uint64_t size, uint32_t old_type,
                             bool check_type) {
  // e820__range_remove (6.12): clamp, print, then per entry: fully inside -> zeroed (memset;
  // the zero entry stays counted until the next sanitize); strictly containing -> the tail
  // appended and the head kept; partly -> shrunk. (2.6.32.69 lacks the "strictly containing"
  // case; mem= and a bare memmap=nn, its only callers there, never reach it.)
  if (size > UINT64_MAX - start) size = UINT64_MAX - start;
  const uint64_t end = start + size;
  if (const std::string line = RemoveLine(start, end, old_type, check_type); !line.empty())
    Emit(line);
  const size_t n = entries.size();
  for (size_t i = 0; i < n; ++i) {
    Entry e = entries[i];
    if (check_type && e.type != old_type) continue;
    const uint64_t e_end = e.addr + e.size;
    if (e.addr >= start && e_end <= end) {
      entries[i] = Entry{};
      continue;
    }
    if (e.addr < start && e_end > end) {
      Add(end, e_end - end, e.type);
      entries[i].size = start - e.addr;
      continue;
    }
    const uint64_t fs = std::max(start, e.addr), fe = std::min(end, e_end);
    if (fs >= fe) continue;
    entries[i].size -= fe - fs;
    if (e.addr < fs) continue;
    entries[i].addr = fe;
  }
}

bool KernelE820Table::NoMerge(uint32_t type) const {
  // 4.4.155/4.19: "current_type != last_type || current_type == E820_TYPE_PRAM";
  // 6.12 e820_nomerge(): PRAM and SOFT_RESERVED.
  return (rules_.memmap_pram && type == kTypePram) ||
         (rules_.soft_reserved && type == kTypeSoftReserved);
}

bool KernelE820Table::UpdateTable() {
  // e820__update_table (6.12) / sanitize_e820_map (2.6.32.69).
  if (entries.size() < 2) return false;  // "If there's only one memory region, don't bother"
  for (const auto& e : entries)
    if (e.addr + e.size < e.addr) return false;  // "Bail out if we find any unreasonable addresses"
  // Change points: every start and end of a non-empty entry. At each point the type is the
  // largest of the entries covering [point, next point); an entry is emitted where the type
  // changes (or, for a no-merge type, at every change point), empty ones dropped.
  std::vector<uint64_t> points;
  for (const auto& e : entries) {
    if (e.size == 0) continue;
    points.push_back(e.addr);
    points.push_back(e.addr + e.size);
  }
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  std::vector<Entry> out;
  uint32_t last_type = 0;
  uint64_t last_addr = 0;
  for (const uint64_t p : points) {
    uint32_t current = 0;
    for (const auto& e : entries)
      if (e.size != 0 && e.addr <= p && p - e.addr < e.size) current = std::max(current, e.type);
    if (current != last_type || NoMerge(current)) {
      if (last_type != 0 && p > last_addr) {
        if (out.size() >= rules_.max_entries) break;  // "No more space left for new entries?"
        out.push_back({last_addr, p - last_addr, last_type});
      }
      if (current != 0) last_addr = p;
      last_type = current;
    }
  }
  entries = out;
  return true;
}

std::vector<E820Entry> KernelE820Table::ToEntries() const {
  std::vector<E820Entry> out;
  for (const auto& e : entries) {
    if (e.size == 0) continue;
    const uint64_t end = e.addr + e.size < e.addr ? UINT64_MAX : e.addr + e.size;
    out.push_back({e.addr, end, static_cast<E820Type>(static_cast<int>(e.type))});
  }
  return out;
}

}  // namespace resmem::sim
