#include "mock/region/sim_mapping.h"

#include <algorithm>
#include <cinttypes>
#include <csignal>
#include <cstdio>

#include "mock/machine/linux_rules.h"
#include "mock/region/page_table.h"
#include "backends/api/memory.h"

namespace resmem::sim {
namespace {

constexpr uint64_t kPage = 4096;

}  // namespace

MemoryType RequestedMemoryType(CacheType cache) {
  switch (cache) {
    case CacheType::kWriteBack: return MemoryType::kWriteBack;
    case CacheType::kWriteCombining: return MemoryType::kWriteCombining;
    case CacheType::kUncached: return MemoryType::kUncachedMinus;
  }
  return MemoryType::kWriteBack;
}

SimMapping::SimMapping(std::shared_ptr<SimWorld> world, const SimMappingSetup& setup)
    : SimHostMemory(std::move(world)), setup_(setup) {
  facts_.length = setup.length;
  facts_.readable = true;
  facts_.writable = setup.writable;
  facts_.shared = setup.shared;
  if (setup.mode == MapMode::kPfnmap) {
    // remap_pfn_range sets VM_IO | VM_PFNMAP (mm/memory.c, remap_pfn_range_notrack).
    facts_.vm_io = true;
    facts_.vm_pfnmap = true;
    facts_.backing = Backing::kDevicePfn;
  } else {
    // Struct pages: devmap entries through vmf_insert_mixed in a VM_MIXEDMAP VMA up to 6.16,
    // refcounted folio entries in a plain shared VMA from 6.17 (LinuxRules::pfn_t_devmap).
    facts_.vm_mixedmap = world_->kernel.rules.pfn_t_devmap;
    facts_.backing = Backing::kDevicePages;
  }
  facts_.memory_type =
      EffectiveMemoryType(world_->spec, setup.range_phys, setup.range_phys + setup.range_size,
                          RequestedMemoryType(setup.cache));
  facts_.page_size = kPage;
  facts_.physically_contiguous = true;
  facts_.phys_addr = setup.range_phys + setup.offset;
  facts_.origin = "sim";
  address_ = world_->AllocateVa(setup.length);
  // The remap reserves the memory type of what it mapped (arch/x86/mm/pat/memtype.c,
  // track_pfn_remap); pat_memtype_list shows it while the mapping lives.
  if (setup.remapped_bytes && !setup.pfn_is_kernel_virtual)
    memtype_id_ = world_->AddMemtype(setup.range_phys + setup.offset,
                                    setup.range_phys + setup.offset + setup.remapped_bytes,
                                    facts_.memory_type);
}

SimMapping::~SimMapping() {
  if (memtype_id_) world_->RemoveMemtype(memtype_id_);
}

std::string SimMapping::Describe() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s [0x%" PRIx64 "+%s] mapped at 0x%" PRIx64 " (%s, sim)",
                setup_.device.c_str(), setup_.range_phys + setup_.offset,
                FormatSize(setup_.length).c_str(), address_, MapModeName(setup_.mode));
  return buf;
}

uint64_t SimMapping::PteOfPage(uint64_t page) const { return RemapPte(setup_.first_pfn + page); }

uint64_t SimMapping::PhysOf(uint64_t offset) const {
  return PtePhys(PteOfPage(offset / kPage)) + offset % kPage;
}

SimAccess SimMapping::BeginAccess(uint64_t offset, uint64_t len, AccessKind kind) {
  SimAccess access;
  access.valid_bytes = len;
  const bool write = kind == AccessKind::kWrite;

  // A store through a mapping without PROT_WRITE: the CPU's protection fault, which the kernel
  // turns into SIGSEGV (arch/x86/mm/fault.c access_error -> bad_area_access_error).
  if (write && !setup_.writable) {
    access.valid_bytes = 0;
    access.status = Status::Signal(SIGSEGV, "segmentation fault: store to " + setup_.device +
                                                " mapped without PROT_WRITE");
    return access;
  }
  // Past the remapped part there is no PTE and no fault handler: SIGBUS.
  if (offset + len > setup_.remapped_bytes) {
    const uint64_t fault_at = std::max(offset, setup_.remapped_bytes);
    access.valid_bytes = fault_at - offset;
    char msg[256];
    std::snprintf(msg, sizeof msg,
                  "bus error at 0x%" PRIx64 " (%s offset %" PRIu64 "): beyond the %" PRIu64
                  " bytes the driver remapped%s",
                  address_ + fault_at, setup_.device.c_str(), fault_at, setup_.remapped_bytes,
                  setup_.length_truncated ? " (mmap length truncated to int)" : "");
    access.status = Status::Signal(SIGBUS, msg);
    if (access.valid_bytes == 0) return access;
  }
  const uint64_t n = access.valid_bytes;

  // The page table: a frame with bits above the CPU's address width is a reserved-bit fault;
  // the kernel prints the oops and kills the process (seed 002; FACTS.md: SIGKILL, rc 137).
  const uint64_t pte = PteOfPage(offset / kPage);
  if (PteReservedBits(pte, world_->spec.phys_addr_bits)) return ReservedBitFault(offset, pte, write);
  const uint64_t phys = PhysOf(offset);
  if (setup_.pfn_is_kernel_virtual) WarnIfOutsideReservation(phys, n);

  // Fault points over the physical span, so a scenario can fail an address range.
  const FaultOutcome f = world_->faults->Check(write ? "region.write" : "region.read", phys, n);
  if (f.fired) ApplyFault(f, access);
  return access;
}

SimAccess SimMapping::ReservedBitFault(uint64_t offset, uint64_t pte, bool write) {
  const uint64_t va = address_ + offset;
  const std::string oops = CorruptedPageTableOops("resmem", va, pte, ReservedBitFaultCode(write),
                                                  world_->NextOops());
  size_t start = 0;
  while (start <= oops.size()) {
    const size_t nl = oops.find('\n', start);
    world_->Log(oops.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  SimAccess access;
  access.valid_bytes = 0;
  access.status = Status::Signal(
      SIGKILL, oops + "\nThe PTE's frame " + HexAddress(PtePhys(pte)) + " has bits above the " +
                   std::to_string(world_->spec.phys_addr_bits) +
                   "-bit physical address width: the driver gave remap_pfn_range a kernel "
                   "virtual address as the PFN. Pass phys_addr >> PAGE_SHIFT instead");
  return access;
}

void SimMapping::WarnIfOutsideReservation(uint64_t phys, uint64_t n) {
  const uint64_t lo = setup_.range_phys;
  const uint64_t hi = setup_.range_phys + setup_.range_size;
  std::lock_guard<std::mutex> lock(mu_);
  if (warned_outside_ || (phys >= lo && phys + n <= hi && phys + n >= phys)) return;
  warned_outside_ = true;
  world_->Log("resmem: warning: " + setup_.device + " mapping at " + HexAddress(address_) +
              " translates to phys " + HexAddress(phys) + ", outside the reservation " + HexAddress(lo) +
              "-" + HexAddress(hi - 1) +
              ": the PFN is a kernel virtual address that fits the address width, so "
              "accesses silently hit other memory");
}

void SimMapping::ApplyFault(const FaultOutcome& f, SimAccess& access) {
  switch (f.effect) {
    case FaultEffect::kError:
    case FaultEffect::kSignal:
      access.valid_bytes = 0;
      access.status = f.status;
      break;
    case FaultEffect::kDelay: access.delay_seconds = f.delay_seconds; break;
    case FaultEffect::kCorrupt:
      access.corrupt_offset = f.corrupt_offset;
      access.corrupt_xor = f.corrupt_xor;
      break;
    case FaultEffect::kShortCopy:
      // A torn access: only the first bytes move, and nothing reports it.
      access.valid_bytes = std::min(access.valid_bytes, f.short_length);
      break;
  }
}

void SimMapping::RawRead(uint64_t offset, void* out, uint64_t len) {
  world_->memory.Read(PhysOf(offset), out, len);
}

void SimMapping::RawWrite(uint64_t offset, const void* in, uint64_t len) {
  world_->memory.Write(PhysOf(offset), in, len);
}

}  // namespace resmem::sim
