// The texts a real machine shows, rendered from the model in the kernel's own formats.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <memory>

#include "mock/machine/e820_table.h"
#include "mock/machine/machine.h"

namespace resmem::sim {
namespace {

// A node of the iomem resource tree (kernel/resource.c). end is inclusive, as the kernel's.
struct Res {
  uint64_t start, end;
  std::string name;
  std::vector<std::unique_ptr<Res>> children;
};

enum class Insert { kDone, kConflict };

// insert_resource(): nests `r` inside a child that contains it; adopts the children `r`
// contains; a partial overlap is a conflict (`conflict` names the resource in the way).
// A range equal to an existing one nests inside it (`equal_adopts` false: a ROM or window
// claimed inside a firmware entry) or becomes its parent (true: __insert_resource's rule for
// the late e820 reserved entries).
Insert InsertResource(Res& parent, std::unique_ptr<Res>& r, std::string* conflict,
                      bool equal_adopts = false) {
  for (auto& c : parent.children) {
    if (c->end < r->start || c->start > r->end) continue;
    const bool inside_c = c->start <= r->start && r->end <= c->end;
    const bool contains_c = r->start <= c->start && c->end <= r->end;
    if (inside_c && !(contains_c && equal_adopts))
      return InsertResource(*c, r, conflict, equal_adopts);
    if (!contains_c) {
      *conflict = c->name;
      return Insert::kConflict;
    }
  }
  // r contains every child it overlaps (or equals one, then it becomes that one's parent).
  std::vector<std::unique_ptr<Res>> keep;
  for (auto& c : parent.children) {
    if (c->end < r->start || c->start > r->end) keep.push_back(std::move(c));
    else r->children.push_back(std::move(c));
  }
  keep.push_back(std::move(r));
  std::sort(keep.begin(), keep.end(),
            [](const auto& a, const auto& b) { return a->start < b->start; });
  parent.children = std::move(keep);
  return Insert::kDone;
}

// The extent of the top-level resource `r` collides with, for expand-to-fit.
bool FindConflictExtent(const Res& parent, const Res& r, uint64_t* s, uint64_t* e) {
  for (const auto& c : parent.children) {
    if (c->end < r.start || c->start > r.end) continue;
    const bool inside_c = c->start <= r.start && r.end <= c->end;
    const bool contains_c = r.start <= c->start && c->end <= r.end;
    if (inside_c && !contains_c) return FindConflictExtent(*c, r, s, e);
    if (!contains_c) {
      *s = c->start;
      *e = c->end;
      return true;
    }
  }
  return false;
}

void Print(const Res& r, int depth, std::string& out) {
  // kernel/resource.c r_show(): "%*s%0*llx-%0*llx : %s\n", width 8 for iomem, 2 spaces a level.
  char buf[96];
  std::snprintf(buf, sizeof buf, "%*s%08" PRIx64 "-%08" PRIx64 " : ", depth * 2, "", r.start,
                r.end);
  out += buf + r.name + "\n";
  for (const auto& c : r.children) Print(*c, depth + 1, out);
}

std::unique_ptr<Res> MakeRes(uint64_t start, uint64_t end_excl, const std::string& name) {
  auto r = std::make_unique<Res>();
  r->start = start;
  r->end = end_excl - 1;
  r->name = name;
  return r;
}

}  // namespace

std::string RenderIomem(const MachineSpec& spec, const BootedKernel& kernel) {
  Res root{0, UINT64_MAX, "PCI mem", {}};
  std::string ignored;
  // 1. e820__reserve_resources(): every entry except reserved ones at or above 1 MiB.
  for (const auto& e : kernel.e820) {
    if (e.type == E820Type::kReserved && e.start >= 0x100000) continue;
    auto r = MakeRes(e.start, e.end, E820TypeName(e.type));
    InsertResource(root, r, &ignored);
  }
  // 2. The firmware's device windows (PCI root bus _CRS, IOAPIC, HPET, LAPIC, ROMs).
  for (const auto& m : spec.mmio) {
    auto r = MakeRes(m.start, m.end, m.name);
    InsertResource(root, r, &ignored);  // a window colliding with RAM is dropped, as Linux does
  }
  // 3. e820__reserve_resources_late(): reserved entries, expanded to fit around what they
  //    straddle (insert_resource_expand_to_fit).
  for (const auto& e : kernel.e820) {
    if (e.type != E820Type::kReserved || e.start < 0x100000) continue;
    auto r = MakeRes(e.start, e.end, E820TypeName(e.type));
    for (int tries = 0; tries < 64; ++tries) {
      uint64_t s, t;
      if (!FindConflictExtent(root, *r, &s, &t)) break;
      r->start = std::min(r->start, s);
      r->end = std::max(r->end, t);
    }
    InsertResource(root, r, &ignored, /*equal_adopts=*/true);
  }
  std::string out;
  for (const auto& c : root.children) Print(*c, 0, out);
  return out;
}

std::string RenderMtrr(const MachineSpec& spec) {
  // arch/x86/kernel/cpu/mtrr/if.c, mtrr_seq_show(): base and size in pages; sizes under 1 MiB
  // in KB. Types as mtrr_attrib_to_str() spells them.
  auto type_name = [](MemoryType t) {
    switch (t) {
      case MemoryType::kWriteBack: return "write-back";
      case MemoryType::kWriteCombining: return "write-combining";
      case MemoryType::kUncached:
      case MemoryType::kUncachedMinus: return "uncachable";
      default: return "?";
    }
  };
  auto word = [&](const MtrrRange& r) -> std::string {
    return r.type == MemoryType::kUnknown && !r.type_name.empty() ? r.type_name : type_name(r.type);
  };
  if (!spec.mtrr.enabled) return "";
  std::string out;
  int i = 0;
  for (const auto& r : spec.mtrr.variable) {
    char buf[160];
    const uint64_t base_pages = r.base >> 12;
    uint64_t size = r.size >> 12;
    char factor = 'M';
    if (size < (0x100000 >> 12)) {
      factor = 'K';
      size <<= 2;  // pages -> KiB
    } else {
      size >>= 8;  // pages -> MiB
    }
    std::snprintf(buf, sizeof buf,
                  "reg%02d: base=0x%06" PRIx64 "000 (%5" PRIu64 "MB), size=%5" PRIu64
                  "%cB, count=1: %s\n",
                  i++, base_pages, r.base >> 20, size, factor, word(r).c_str());
    out += buf;
  }
  return out;
}

std::string RenderFirmwareMemmap(const MachineSpec& spec) {
  // /sys/firmware/memmap/N/{start,end,type} (drivers/firmware/memmap.c): the firmware's map
  // before any memmap= edit; end inclusive. One line per entry directory.
  std::string out;
  for (const auto& e : SanitizeE820(spec.firmware_e820)) {
    char buf[80];
    std::snprintf(buf, sizeof buf, "0x%016" PRIx64 " 0x%016" PRIx64 " ", e.start, e.end - 1);
    out += buf + std::string(E820TypeName(e.type)) + "\n";
  }
  return out;
}

std::string RenderMeminfo(const BootedKernel& kernel) {
  // fs/proc/meminfo.c show_val_kb(): label padded to 16 columns, value right-aligned in 8.
  auto line = [](const char* label, uint64_t kb) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%-16s%8" PRIu64 " kB\n", label, kb);
    return std::string(buf);
  };
  const uint64_t total_kb = kernel.mem_total / 1024;
  return line("MemTotal:", total_kb) + line("MemFree:", total_kb * 9 / 10) +
         line("MemAvailable:", total_kb * 9 / 10) + line("Buffers:", 0) +
         line("Cached:", total_kb / 20) + "HugePages_Total:       0\n" +
         "HugePages_Free:        0\n" + line("Hugepagesize:", 2048);
}

std::string RenderCpuinfo(const MachineSpec& spec) {
  // arch/x86/kernel/cpu/proc.c show_cpuinfo(): "address sizes\t: %u bits physical, %u bits
  // virtual".
  // The vendor follows the IOMMU's where the machine names an AMD one (an IVRS table comes with
  // an AMD platform); otherwise Intel, as before the machine format described an IOMMU.
  const char* vendor = spec.iommu.vendor == IommuVendor::kAmd ? "AuthenticAMD" : "GenuineIntel";
  return std::string("processor\t: 0\nvendor_id\t: ") + vendor + "\nmodel name\t: simulated " + spec.name +
         "\nflags\t\t: fpu pae mtrr pat sse2 constant_tsc\naddress sizes\t: " +
         std::to_string(spec.phys_addr_bits) + " bits physical, 48 bits virtual\n\n";
}

}  // namespace resmem::sim
