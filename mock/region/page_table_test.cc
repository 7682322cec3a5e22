// The PTE model against the values the seeds and FACTS.md printed.
#include "mock/region/page_table.h"

#include <gtest/gtest.h>

namespace resmem::sim {
namespace {

TEST(RemapPte, KernelVirtualAddressAsPfnGivesSeed002sPte) {
  // Seed 002: ioremap returned 0xffffc20011890000, given to remap_pfn_range as the PFN; the
  // kernel printed "PTE 7c20011890000227".
  EXPECT_EQ(RemapPte(0xffffc20011890000ull), 0x7c20011890000227ull);
}

TEST(RemapPte, PhysicalPfnRoundTrips) {
  const uint64_t phys = 0x140000000ull;
  const uint64_t pte = RemapPte(phys >> 12);
  EXPECT_EQ(PtePhys(pte), phys);
  EXPECT_EQ(pte & 0xfff, kRemapPteFlags);
  EXPECT_EQ(PteReservedBits(pte, 36), 0u);
}

TEST(PteReservedBits, DependOnTheAddressWidth) {
  const uint64_t pte = RemapPte(0xffffc20011890000ull);
  EXPECT_NE(PteReservedBits(pte, 36), 0u);  // seed 002's CPU: frame bit 40 is reserved
  EXPECT_NE(PteReservedBits(pte, 40), 0u);
  EXPECT_EQ(PteReservedBits(pte, 46), 0u);  // the same PTE on a 46-bit CPU is a valid frame
  EXPECT_EQ(PteReservedBits(pte, 52), 0u);  // nothing is reserved below bit 52 then
  // A frame just above a 40-bit width is reserved there, not at 46 bits.
  const uint64_t above40 = RemapPte((1ull << 40) >> 12);
  EXPECT_NE(PteReservedBits(above40, 40), 0u);
  EXPECT_EQ(PteReservedBits(above40, 46), 0u);
}

TEST(ReservedBitFaultCode, ReadAndWrite) {
  EXPECT_EQ(ReservedBitFaultCode(false), 0xd);  // seed 002 printed 000d
  EXPECT_EQ(ReservedBitFaultCode(true), 0xf);
}

TEST(CorruptedPageTableOops, KernelLines) {
  const std::string oops =
      CorruptedPageTableOops("rmem_map", 0x7f63179e1000ull, 0x7c20011890000227ull, 0xd, 3);
  EXPECT_EQ(oops,
            "rmem_map: Corrupted page table at address 7f63179e1000\n"
            "PTE 7c20011890000227\n"
            "Bad pagetable: 000d [#3] PREEMPT SMP NOPTI");
}

}  // namespace
}  // namespace resmem::sim
