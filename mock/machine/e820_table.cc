// e820 table editing, after arch/x86/kernel/e820.c.
#include "mock/machine/e820_table.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace resmem::sim {

const char* E820TypeName(E820Type t) {
  // /proc/iomem and /sys/firmware/memmap names: e820.c, e820_type_to_string().
  switch (t) {
    case E820Type::kRam: return "System RAM";
    case E820Type::kReserved: return "Reserved";
    case E820Type::kAcpi: return "ACPI Tables";
    case E820Type::kNvs: return "ACPI Non-volatile Storage";
    case E820Type::kUnusable: return "Unusable memory";
    case E820Type::kPmem: return "Persistent Memory";
    case E820Type::kPram: return "Persistent Memory (legacy)";
    case E820Type::kHole: return "(no firmware entry)";
  }
  return "Unknown E820 type";
}

std::string E820PrintTypeName(E820Type t) {
  switch (t) {
    case E820Type::kRam: return "usable";
    case E820Type::kReserved: return "reserved";
    case E820Type::kAcpi: return "ACPI data";
    case E820Type::kNvs: return "ACPI NVS";
    case E820Type::kUnusable: return "unusable";
    case E820Type::kPmem:
    case E820Type::kPram: return "persistent (type " + std::to_string(static_cast<int>(t)) + ")";
    case E820Type::kHole: return "hole";
  }
  return "type " + std::to_string(static_cast<int>(t));
}

std::string E820PrintLine(const std::string& who, const E820Entry& e) {
  // The kernel's vsprintf prints the 0x of "%#018Lx" even for zero; glibc's does not, so the
  // prefix is spelled out.
  char buf[128];
  std::snprintf(buf, sizeof buf, "%s: [mem 0x%016" PRIx64 "-0x%016" PRIx64 "] ", who.c_str(),
                e.start, e.end - 1);
  return buf + E820PrintTypeName(e.type);
}

std::vector<E820Entry> SanitizeE820(const std::vector<E820Entry>& table) {
  std::vector<uint64_t> cuts;
  for (const auto& e : table) {
    if (e.type == E820Type::kHole || e.end <= e.start) continue;
    cuts.push_back(e.start);
    cuts.push_back(e.end);
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::vector<E820Entry> out;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    const uint64_t a = cuts[i], b = cuts[i + 1];
    int best = 0;
    for (const auto& e : table) {
      if (e.type == E820Type::kHole || e.start > a || e.end < b) continue;
      best = std::max(best, static_cast<int>(e.type));
    }
    if (best == 0) continue;  // a gap between entries
    const E820Type type = static_cast<E820Type>(best);
    if (!out.empty() && out.back().end == a && out.back().type == type) {
      out.back().end = b;
    } else {
      out.push_back({a, b, type});
    }
  }
  return out;
}

void E820RangeAdd(std::vector<E820Entry>& table, uint64_t start, uint64_t size, E820Type type) {
  const uint64_t end = (start + size < start) ? UINT64_MAX : start + size;
  if (end > start) table.push_back({start, end, type});
}

void E820RangeUpdate(std::vector<E820Entry>& table, uint64_t start, uint64_t end,
                     E820Type old_type, E820Type new_type) {
  std::vector<E820Entry> out;
  for (const auto& e : SanitizeE820(table)) {
    if (e.type != old_type || e.end <= start || e.start >= end) {
      out.push_back(e);
      continue;
    }
    if (e.start < start) out.push_back({e.start, start, e.type});
    if (new_type != E820Type::kHole)
      out.push_back({std::max(e.start, start), std::min(e.end, end), new_type});
    if (e.end > end) out.push_back({end, e.end, e.type});
  }
  table = SanitizeE820(out);
}

void E820RangeRemove(std::vector<E820Entry>& table, uint64_t start, uint64_t end,
                     E820Type old_type) {
  E820RangeUpdate(table, start, end, old_type, E820Type::kHole);
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

}  // namespace resmem::sim
