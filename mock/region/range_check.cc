#include "mock/region/range_check.h"
#include "backends/api/memory.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <utility>

namespace resmem::sim {
namespace {

constexpr uint64_t kPage = 4096;

std::string Span(uint64_t start, uint64_t end) {  // end exclusive, printed inclusive as Linux does
  char buf[64];
  std::snprintf(buf, sizeof buf, "[mem 0x%" PRIx64 "-0x%" PRIx64 "]", start, end - 1);
  return buf;
}

bool Overlaps(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1) { return a0 < b1 && b0 < a1; }

}  // namespace

Status CheckDriverRange(const SimWorld& world, const DriverRange& range,
                        const std::vector<DriverRange>& served) {
  const uint64_t phys = range.phys;
  const uint64_t size = range.size;
  if (size == 0)
    return Status::Errno(ERANGE, "range at " + HexAddress(phys) +
                                     " has size 0; give the size of the memmap=nn$ss reservation");
  const int bits = world.spec.phys_addr_bits;
  if (phys + size < phys || (bits < 64 && ((phys + size - 1) >> bits) != 0))
    return Status::Errno(EOVERFLOW, "range " + HexAddress(phys) + " + " + HexAddress(size) +
                                        " ends past the " + std::to_string(bits) +
                                        "-bit physical address space; check the size and start "
                                        "(memmap=nn$ss takes the size first)");
  const uint64_t end = phys + size;
  if (phys % kPage || size % kPage)
    return Status::Errno(EDOM, "range " + Span(phys, end) +
                                   " is not page aligned; start and size must be multiples of "
                                   "4 KiB");

  // System RAM the kernel manages: the booted e820 map (after mem=/memmap= edits).
  for (const auto& e : world.kernel.e820)
    if (e.type == E820Type::kRam && Overlaps(phys, end, e.start, e.end))
      return Status::Errno(
          EPERM, "range " + Span(phys, end) + " intersects System RAM " + Span(e.start, e.end) +
                     " that the kernel manages; serving it would expose the kernel's pages. "
                     "Reserve it at boot with memmap=nn$ss (escape the $ in GRUB as \\$)");

  // arch/x86/kernel/e820.c, do_mark_busy: below 1 MiB is the legacy BIOS/VGA/ROM area.
  if (phys < (1ull << 20))
    return Status::Errno(ENXIO, "range " + Span(phys, end) +
                                    " starts below 1 MiB, the legacy BIOS/VGA/ROM area, not RAM "
                                    "to serve; reserve RAM above 1 MiB");

  // Entirely inside what the kernel marked Reserved: memmap=nn$ss reservations and the
  // firmware's reserved entries (both are top-level "Reserved" in /proc/iomem). Adjacent
  // entries count as one.
  std::vector<std::pair<uint64_t, uint64_t>> reserved;
  for (const auto& r : world.kernel.reservations) reserved.emplace_back(r.start, r.end);
  for (const auto& e : world.kernel.e820)
    if (e.type == E820Type::kReserved) reserved.emplace_back(e.start, e.end);
  std::sort(reserved.begin(), reserved.end());
  std::vector<std::pair<uint64_t, uint64_t>> merged;
  for (const auto& r : reserved) {
    if (!merged.empty() && r.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  }
  bool inside = false;
  for (const auto& r : merged)
    if (phys >= r.first && end <= r.second) inside = true;
  if (!inside) {
    std::string have;
    for (const auto& r : world.kernel.reservations)
      have += (have.empty() ? "" : ", ") + Span(r.start, r.end);
    return Status::Errno(EADDRNOTAVAIL,
                         "range " + Span(phys, end) +
                             " is not entirely inside a range the kernel marked Reserved "
                             "(memmap= reservations: " + (have.empty() ? "none" : have) +
                             "); boot with memmap=" + HexAddress(size) + "$" + HexAddress(phys) +
                             " or pick a reserved range");
  }

  for (const auto& s : served)
    if (Overlaps(phys, end, s.phys, s.phys + s.size))
      return Status::Errno(EBUSY, "range " + Span(phys, end) + " overlaps " +
                                      Span(s.phys, s.phys + s.size) +
                                      " that another resmem device already serves; give each "
                                      "device its own range");

  // RAM behind every byte: the firmware map decides, not the kernel's (FACTS.md: QEMU accepted
  // memmap= over the PCI hole and reads returned 0).
  for (const auto& m : world.spec.mmio)
    if (Overlaps(phys, end, m.start, m.end))
      return Status::Errno(ENXIO, "range " + Span(phys, end) + " lies inside the device window " +
                                      Span(m.start, m.end) + " (" + m.name +
                                      "): device address space with no RAM behind it. Reserve "
                                      "RAM listed in /sys/firmware/memmap as System RAM");
  if (!world.memory.IsRam(phys, end))
    return Status::Errno(ENXIO, "range " + Span(phys, end) +
                                    " has no RAM behind part of it (a hole in the firmware's "
                                    "memory map): reads would return zeros and writes vanish. "
                                    "Reserve RAM listed in /sys/firmware/memmap as System RAM");
  return Status::Ok();
}

}  // namespace resmem::sim
