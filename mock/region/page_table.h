// The user page-table entries the simulated driver's remap produces, and what the CPU does with
// them. x86-64, 4 KiB pages.
#ifndef RESMEM_MOCK_REGION_PAGE_TABLE_H_
#define RESMEM_MOCK_REGION_PAGE_TABLE_H_

#include <cstdint>
#include <string>

namespace resmem::sim {

// Flag bits of a remap_pfn_range PTE: present, writable, user, accessed (0x27) and
// _PAGE_SPECIAL (0x200). Both observed PTEs end in 227: seed 002 "PTE 7c20011890000227" and
// FACTS.md's QEMU run "PTE 800fd1ab04000227".
constexpr uint64_t kRemapPteFlags = 0x227;
// Bits 12..51 hold the page frame (arch/x86/include/asm/pgtable_types.h, PTE_PFN_MASK with a
// 52-bit __PHYSICAL_MASK).
constexpr uint64_t kPtePfnMask = 0x000ffffffffff000ull;

// The PTE remap_pfn_range writes for page frame `pfn`: pfn << PAGE_SHIFT (wrapping at 64 bits)
// with the flags, NX clear. The seed's 2.6.28 kernel did not mask the frame, which is why a
// kernel virtual address given as the PFN leaves bits set far above the address width (seed
// 002: the ioremap address 0xffffc20011890000 became PTE 7c20011890000227).
uint64_t RemapPte(uint64_t pfn);

// Bits of `pte` between the CPU's physical address width and bit 51: reserved, so the MMU
// raises a page fault with error code RSVD (Intel SDM vol. 3, 4.5.4; CPUID 0x80000008).
uint64_t PteReservedBits(uint64_t pte, int phys_addr_bits);

// Physical address of the frame `pte` points at.
inline uint64_t PtePhys(uint64_t pte) { return pte & kPtePfnMask; }

// x86 page-fault error code of an access through a present PTE with reserved bits: P (1), W (2)
// on writes, U (4) from user mode, RSVD (8). A read gives 000d (as seed 002 printed), a write
// 000f.
int ReservedBitFaultCode(bool write);

// The kernel's lines for that fault (arch/x86/mm/fault.c, pgtable_bad(), and the oops header of
// __die()): "<comm>: Corrupted page table at address <va>", "PTE <16 hex>",
// "Bad pagetable: <code> [#<n>] PREEMPT SMP NOPTI", joined by '\n'.
std::string CorruptedPageTableOops(const std::string& comm, uint64_t va, uint64_t pte,
                                   int error_code, int oops_number);

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_REGION_PAGE_TABLE_H_
