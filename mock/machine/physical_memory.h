// Sparse physical memory: 4 KiB pages materialise on first write; unwritten RAM reads as zeros.
// Ranges with no RAM behind them (holes) read as zeros and drop writes, as QEMU showed for memmap=
// over the PCI hole (FACTS.md).
#ifndef RESMEM_MOCK_MACHINE_PHYSICAL_MEMORY_H_
#define RESMEM_MOCK_MACHINE_PHYSICAL_MEMORY_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace resmem::sim {

class PhysicalMemory {
 public:
  static constexpr uint64_t kPageSize = 4096;
  // Declares where RAM is; everything else is a hole.
  void SetRam(std::vector<std::pair<uint64_t, uint64_t>> ranges);  // [start, end)
  bool IsRam(uint64_t start, uint64_t end) const;  // every byte of [start, end) is RAM
  void Read(uint64_t phys, void* out, uint64_t len) const;
  void Write(uint64_t phys, const void* in, uint64_t len);
  // The 8-byte words at base + offsets[i], i < n, as n Reads / Writes of 8 bytes in that order,
  // under one lock (the card's register block, mock/sim/physical_bus.h).
  void ReadWords(uint64_t base, const uint64_t* offsets, uint64_t* values, size_t n) const;
  void WriteWords(uint64_t base, const uint64_t* offsets, const uint64_t* values, size_t n);
  uint64_t materialised_pages() const;

 private:
  using Page = std::array<uint8_t, kPageSize>;
  // The last pages an access found materialised and RAM from end to end, by page number modulo
  // kRecentPages: an access inside one of them skips the RAM map's search and the page table's
  // hash. The card's engine and driver read and write its registers 8 bytes at a time, millions
  // of times in an hour of simulated acquisition (scenarios/card/hour_of_acquisition.toml: 40%
  // of its time went to those two lookups). A page is freed only by SetRam, which forgets them.
  static constexpr size_t kRecentPages = 8;
  struct RecentPage {
    uint64_t number = UINT64_MAX;
    Page* page = nullptr;
  };
  void ReadLocked(uint64_t phys, void* out, uint64_t len) const;  // mu_ held
  void WriteLocked(uint64_t phys, const void* in, uint64_t len);  // mu_ held
  Page* Recent(uint64_t phys, uint64_t len) const;  // the page holding all of [phys, phys+len), or null
  void Remember(uint64_t number, Page* page) const;  // when that page is RAM from end to end

  std::vector<std::pair<uint64_t, uint64_t>> ram_;
  std::unordered_map<uint64_t, std::unique_ptr<Page>> pages_;
  mutable std::array<RecentPage, kRecentPages> recent_;
  mutable std::mutex mu_;
};

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_MACHINE_PHYSICAL_MEMORY_H_
