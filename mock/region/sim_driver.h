// The simulated reserved-memory driver: what kmod/resmem.c does, and the seeds' buggy variants of
// it, on a simulated machine. It serves the same ioctls (kmod/uapi/resmem_ioctl.h).
#ifndef RESMEM_MOCK_REGION_SIM_DRIVER_H_
#define RESMEM_MOCK_REGION_SIM_DRIVER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "backends/api/region.h"
#include "mock/sim/sim_world.h"

namespace resmem::sim {

struct SimDriverSpec {
  MapMode mode = MapMode::kPfnmap;
  CacheType cache = CacheType::kWriteBack;
  // Seed 002's bug: the driver hands remap_pfn_range the kernel virtual address of its ioremap
  // instead of the physical address >> PAGE_SHIFT.
  enum class PfnSource { kPhysical, kKernelVirtual } pfn_source = PfnSource::kPhysical;
  // The mmap length passes through an int (the truncation DESIGN.md lists).
  bool length_as_int32 = false;
  // Refuse ranges that are not reserved, overlap System RAM or have no RAM behind them (what
  // kmod/resmem.c checks at load, table in mock/region/range_check.h), and private mappings.
  // The forum drivers had no such checks.
  bool range_check = true;
  // Fault in lazily (modern driver) instead of remapping the whole VMA at mmap time.
  bool lazy_fault = true;
  uint32_t abi_version = 1;
  // Ranges the driver serves; empty = every memmap=nn$ss reservation, one device each.
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // (phys, size)
};

// Creates the provider: devices "/dev/resmem0", ... over the world's booted machine, numbered by
// the position of their range. Load-time refusals (range_check; the errno table is in
// mock/region/range_check.h) do not fail creation: the device is absent from List() and Open()
// of it returns the refusal's errno, which the driver also logged to world->dmesg.
// Where the machine describes its module policy (mock/machine/module_policy.h), the kernel
// first decides whether it loads resmem.ko at all, with the ranges= parameter when spec.ranges
// is given (a hardware parameter, refused under lockdown): its lines go to dmesg, and a refused
// module has no device: List() is empty and every Open() is ENOENT saying the module was
// refused and why (the loader's error and the kernel's lines).
//
// Behaviour (each rule cites its source in the .cc files):
//   Open: unknown path ENOENT; empty path = first present device; fault point "region.open"
//     (address/length: the device's range). O_SYNC is accepted and ignored (the module picks
//     the cache type from its cache= parameter, not from the open flags).
//   Info: RegionInfo of the device. Ioctl: RESMEM_IOC_INFO / _LENGTH / _PHYS
//     (kmod/uapi/resmem_ioctl.h; INFO's flags 0, as the production module's: RESMEM_IOC_TEST_PIN
//     is ENOTTY); unknown cmd ENOTTY (before the argument is looked at), null argument EFAULT;
//     fault point "region.ioctl".
//   Map: fault point "region.mmap" (physical span); length 0 or unaligned offset EINVAL; shared
//     writable map of a read-only open EACCES; MAP_PRIVATE EINVAL when range_check (the module's
//     rule; forum drivers accepted it); offset+length (rounded up to pages) past the
//     range EINVAL -- unless length_as_int32, where only the int's worth is remapped and
//     accesses past it are SIGBUS. The HostMemory is a SimMapping (mock/region/sim_mapping.h):
//     facts from the mode, memory type from the cache type over the whole reservation, page
//     table from pfn_source (kKernelVirtual: SIGKILL and the "Corrupted page table" oops on
//     first access), fault points "region.read"/"region.write" over physical addresses.
//   A store through a mapping made without PROT_WRITE is SIGSEGV.
//   read/write/lseek/fstat and the open flags (what a program meets through a descriptor) are
//     SimDeviceFile's (mock/region/sim_file.h), over a handle of this driver.
//   lazy_fault does not change what the simulation shows: a lazily faulting driver maps the
//     same frames with the same flags, only later.
std::unique_ptr<RegionProvider> MakeSimRegionProvider(std::shared_ptr<SimWorld> world,
                                                      const SimDriverSpec& spec);

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_REGION_SIM_DRIVER_H_
