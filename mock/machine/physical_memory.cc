// Sparse physical memory with holes.
#include "mock/machine/physical_memory.h"

#include <algorithm>
#include <cstring>

namespace resmem::sim {
namespace {

// Calls fn(addr, len, is_ram) for consecutive pieces of [phys, phys+len) that lie in one page
// and are wholly RAM or wholly hole. `ram` is sorted and merged.
template <typename Fn>
void ForEachPiece(const std::vector<std::pair<uint64_t, uint64_t>>& ram, uint64_t phys,
                  uint64_t len, Fn fn) {
  uint64_t a = phys;
  const uint64_t end = phys + len;  // callers bound len so this does not wrap
  while (a < end) {
    uint64_t b = std::min(end, (a / PhysicalMemory::kPageSize + 1) * PhysicalMemory::kPageSize);
    if (b <= a) b = end;  // the last page of the address space
    // The RAM range at or after a.
    auto it = std::upper_bound(ram.begin(), ram.end(), std::make_pair(a, UINT64_MAX));
    bool is_ram = false;
    if (it != ram.begin() && std::prev(it)->second > a) {
      is_ram = true;
      b = std::min(b, std::prev(it)->second);
    } else if (it != ram.end()) {
      b = std::min(b, std::max(it->first, a + 1));
    }
    fn(a, b - a, is_ram);
    a = b;
  }
}

}  // namespace

void PhysicalMemory::SetRam(std::vector<std::pair<uint64_t, uint64_t>> ranges) {
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<uint64_t, uint64_t>> merged;
  for (const auto& r : ranges) {
    if (r.second <= r.first) continue;
    if (!merged.empty() && r.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  }
  std::lock_guard<std::mutex> lock(mu_);
  ram_ = std::move(merged);
  recent_ = {};
  // Pages that are no longer RAM at all lose their contents.
  for (auto it = pages_.begin(); it != pages_.end();) {
    const uint64_t p = it->first * kPageSize;
    bool any = false;
    for (const auto& r : ram_) any = any || (r.first < p + kPageSize && p < r.second);
    it = any ? std::next(it) : pages_.erase(it);
  }
}

bool PhysicalMemory::IsRam(uint64_t start, uint64_t end) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (end <= start) return false;
  for (const auto& r : ram_)
    if (r.first <= start && end <= r.second) return true;  // ranges are merged
  return false;
}

PhysicalMemory::Page* PhysicalMemory::Recent(uint64_t phys, uint64_t len) const {
  const uint64_t number = phys / kPageSize;
  const RecentPage& r = recent_[number % kRecentPages];
  return r.number == number && phys % kPageSize + len <= kPageSize ? r.page : nullptr;
}

void PhysicalMemory::Remember(uint64_t number, Page* page) const {
  const uint64_t start = number * kPageSize;
  auto it = std::upper_bound(ram_.begin(), ram_.end(), std::make_pair(start, UINT64_MAX));
  if (it == ram_.begin()) return;
  const uint64_t end = std::prev(it)->second;  // of the RAM range that starts at or before the page
  if (end <= start || end - start < kPageSize) return;  // the page is not RAM from end to end
  recent_[number % kRecentPages] = {number, page};
}

void PhysicalMemory::Read(uint64_t phys, void* out, uint64_t len) const {
  std::lock_guard<std::mutex> lock(mu_);
  ReadLocked(phys, out, len);
}

void PhysicalMemory::Write(uint64_t phys, const void* in, uint64_t len) {
  std::lock_guard<std::mutex> lock(mu_);
  WriteLocked(phys, in, len);
}

void PhysicalMemory::ReadWords(uint64_t base, const uint64_t* offsets, uint64_t* values, size_t n) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < n; ++i) ReadLocked(base + offsets[i], &values[i], sizeof values[i]);
}

void PhysicalMemory::WriteWords(uint64_t base, const uint64_t* offsets, const uint64_t* values, size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < n; ++i) WriteLocked(base + offsets[i], &values[i], sizeof values[i]);
}

void PhysicalMemory::ReadLocked(uint64_t phys, void* out, uint64_t len) const {
  if (len > UINT64_MAX - phys) len = UINT64_MAX - phys;
  auto* dst = static_cast<uint8_t*>(out);
  if (const Page* page = Recent(phys, len)) {
    std::memcpy(dst, page->data() + phys % kPageSize, len);
    return;
  }
  ForEachPiece(ram_, phys, len, [&](uint64_t a, uint64_t n, bool is_ram) {
    uint8_t* d = dst + (a - phys);
    auto page = is_ram ? pages_.find(a / kPageSize) : pages_.end();
    if (page == pages_.end()) {
      std::memset(d, 0, n);  // a hole, or RAM never written
    } else {
      std::memcpy(d, page->second->data() + a % kPageSize, n);
      Remember(page->first, page->second.get());
    }
  });
}

void PhysicalMemory::WriteLocked(uint64_t phys, const void* in, uint64_t len) {
  if (len > UINT64_MAX - phys) len = UINT64_MAX - phys;
  const auto* src = static_cast<const uint8_t*>(in);
  if (Page* page = Recent(phys, len)) {
    std::memcpy(page->data() + phys % kPageSize, src, len);
    return;
  }
  ForEachPiece(ram_, phys, len, [&](uint64_t a, uint64_t n, bool is_ram) {
    if (!is_ram) return;  // writes to a hole vanish
    auto& page = pages_[a / kPageSize];
    if (!page) {
      page = std::make_unique<Page>();
      page->fill(0);
    }
    std::memcpy(page->data() + a % kPageSize, src + (a - phys), n);
    Remember(a / kPageSize, page.get());
  });
}

uint64_t PhysicalMemory::materialised_pages() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pages_.size();
}

}  // namespace resmem::sim
