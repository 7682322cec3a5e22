// Sparse physical memory: 4 KiB pages materialise on first write; unwritten RAM reads as zeros.
// Ranges with no RAM behind them (holes) read as zeros and drop writes, as QEMU showed for memmap=
// over the PCI hole (FACTS.md).
#ifndef RESMEM_MOCK_MACHINE_PHYSICAL_MEMORY_H_
#define RESMEM_MOCK_MACHINE_PHYSICAL_MEMORY_H_

#include <array>
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
  uint64_t materialised_pages() const;

 private:
  std::vector<std::pair<uint64_t, uint64_t>> ram_;
  std::unordered_map<uint64_t, std::unique_ptr<std::array<uint8_t, kPageSize>>> pages_;
  mutable std::mutex mu_;
};

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_MACHINE_PHYSICAL_MEMORY_H_
