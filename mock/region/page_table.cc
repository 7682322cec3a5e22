#include "mock/region/page_table.h"

#include <cinttypes>
#include <cstdio>

namespace resmem::sim {

uint64_t RemapPte(uint64_t pfn) {
  constexpr uint64_t kNx = 1ull << 63;
  return ((pfn << 12) & ~kNx) | kRemapPteFlags;
}

uint64_t PteReservedBits(uint64_t pte, int phys_addr_bits) {
  if (phys_addr_bits >= 52) return 0;
  const uint64_t above_width = ~((1ull << phys_addr_bits) - 1);
  const uint64_t below_52 = (1ull << 52) - 1;
  return pte & above_width & below_52;
}

int ReservedBitFaultCode(bool write) { return 0x1 | (write ? 0x2 : 0) | 0x4 | 0x8; }

std::string CorruptedPageTableOops(const std::string& comm, uint64_t va, uint64_t pte,
                                   int error_code, int oops_number) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%s: Corrupted page table at address %" PRIx64 "\nPTE %016" PRIx64
                "\nBad pagetable: %04x [#%d] PREEMPT SMP NOPTI",
                comm.c_str(), va, pte, error_code, oops_number);
  return buf;
}

}  // namespace resmem::sim
