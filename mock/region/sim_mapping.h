// A mapping of a simulated /dev/resmemN: the HostMemory mmap() returns. Its page table
// translates each virtual page to a frame the driver chose (the physical address, or the seed
// bug's kernel virtual address), and CPU accesses go to the world's sparse physical memory.
#ifndef RESMEM_MOCK_REGION_SIM_MAPPING_H_
#define RESMEM_MOCK_REGION_SIM_MAPPING_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "backends/api/region.h"
#include "mock/sim/sim_memory.h"

namespace resmem::sim {

struct SimMappingSetup {
  std::string device;           // "/dev/resmem0"
  uint64_t range_phys = 0;      // the device's whole reservation
  uint64_t range_size = 0;
  uint64_t offset = 0;          // mmap offset into the range (page aligned)
  uint64_t length = 0;          // mmap length (the span's size)
  bool writable = true;
  bool shared = true;
  MapMode mode = MapMode::kPfnmap;
  CacheType cache = CacheType::kWriteBack;
  // Frame of the mapping's first page: phys >> 12, or (seed 002) the kernel virtual address of
  // the driver's ioremap of that byte, passed unshifted.
  uint64_t first_pfn = 0;
  bool pfn_is_kernel_virtual = false;
  // Bytes of the mapping the driver remapped (less than length when the length went through an
  // int); accesses past it are SIGBUS.
  uint64_t remapped_bytes = 0;
  bool length_truncated = false;
};

// The memory type a device's mapping gets: the cache type requested (wb -> WB, wc -> WC,
// uc -> UC- as x86's pgprot_noncached() asks, arch/x86/include/asm/pgtable_types.h) combined
// with the MTRRs over the WHOLE reservation (old kernels reserved the memtype for the whole
// remap; seed 000's 188 GB past the 128 GB the MTRRs cover became uncached).
MemoryType RequestedMemoryType(CacheType cache);

class SimMapping : public SimHostMemory {
 public:
  SimMapping(std::shared_ptr<SimWorld> world, const SimMappingSetup& setup);
  ~SimMapping() override;

  uint64_t size() const override { return facts_.length; }
  const MappingFacts& facts() const override { return facts_; }
  uint64_t address() const override { return address_; }
  std::string Describe() const override;

  // Order of checks: a store to a mapping without PROT_WRITE (SIGSEGV), the remapped part (SIGBUS past it), the page table (SIGKILL and an oops in
  // dmesg when the PTE has reserved bits; a dmesg warning when the frame lies outside the
  // reservation), then fault point region.read / region.write with the PHYSICAL span.
  SimAccess BeginAccess(uint64_t offset, uint64_t len, AccessKind kind) override;
  void RawRead(uint64_t offset, void* out, uint64_t len) override;
  void RawWrite(uint64_t offset, const void* in, uint64_t len) override;

  // The PTE of the mapping's virtual page `page` (0-based), and where byte `offset` lands.
  uint64_t PteOfPage(uint64_t page) const;
  uint64_t PhysOf(uint64_t offset) const;
  const SimMappingSetup& setup() const { return setup_; }

 private:
  // BeginAccess's checks past the protection and the remapped part: the oops of a PTE with
  // reserved bits (the access killed); the one-time warning of a frame outside the reservation;
  // a fired fault point's effect on the access.
  SimAccess ReservedBitFault(uint64_t offset, uint64_t pte, bool write);
  void WarnIfOutsideReservation(uint64_t phys, uint64_t n);
  static void ApplyFault(const FaultOutcome& f, SimAccess& access);

  SimMappingSetup setup_;
  MappingFacts facts_;
  uint64_t address_ = 0;
  uint64_t memtype_id_ = 0;
  std::mutex mu_;
  bool warned_outside_ = false;
};

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_REGION_SIM_MAPPING_H_
