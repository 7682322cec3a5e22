#include "mock/region/sim_driver.h"
#include "backends/api/uapi_info.h"

#include <cerrno>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <cstring>

#include "kmod/uapi/resmem_ioctl.h"
#include "mock/machine/module_policy.h"
#include "mock/region/range_check.h"
#include "mock/region/sim_mapping.h"
#include "backends/api/memory.h"

namespace resmem::sim {
namespace {

constexpr uint64_t kPage = 4096;

// Where the simulated kernel's vmalloc/ioremap space starts (x86-64 with 4-level paging,
// Documentation/arch/x86/x86_64/mm.rst: vmalloc/ioremap space at ffffc90000000000).
constexpr uint64_t kVmallocStart = 0xffffc90000000000ull;

struct Device {
  std::string path;  // "/dev/resmem0"
  std::string name;  // "resmem0"
  uint64_t phys = 0;
  uint64_t size = 0;
  Status refusal;                // non-OK: the driver refused the range at load
  uint64_t ioremap_base = 0;     // kKernelVirtual drivers: kernel virtual address of `phys`
  uint64_t ioremap_memtype = 0;  // its memtype entry, removed when the driver unloads
};

struct DriverState {
  std::shared_ptr<SimWorld> world;
  SimDriverSpec spec;
  std::vector<Device> devices;
  std::string module_refusal;  // non-empty: the kernel refused to load the module, and why
};

class SimRegionHandle : public RegionHandle {
 public:
  SimRegionHandle(std::shared_ptr<DriverState> state, size_t index, const OpenRequest& request)
      : state_(std::move(state)), index_(index), request_(request) {}

  Result<RegionInfo> Info() override {
    const Device& d = device();
    RegionInfo info;
    info.device = d.path;
    info.phys_addr = d.phys;
    info.size = d.size;
    info.mode = state_->spec.mode;
    info.cache = state_->spec.cache;
    info.abi_version = state_->spec.abi_version;
    return info;
  }

  Status Ioctl(unsigned long cmd, void* arg) override {
    const Device& d = device();
    const FaultOutcome f = state_->world->faults->Check("region.ioctl", d.phys, d.size);
    if (f.fired) {
      if (f.effect == FaultEffect::kError || f.effect == FaultEffect::kSignal) return f.status;
      if (f.effect == FaultEffect::kDelay) state_->world->clock->Charge(f.delay_seconds);
    }
    // The driver's switch: an unknown command is ENOTTY before the argument is looked at; a
    // known one copies to user space, which fails with EFAULT on a bad pointer.
    if (cmd != RESMEM_IOC_INFO && cmd != RESMEM_IOC_LENGTH && cmd != RESMEM_IOC_PHYS) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "0x%lx", cmd);
      return Status::Errno(ENOTTY, d.path + ": unknown ioctl " + buf +
                                       "; the driver knows RESMEM_IOC_INFO, RESMEM_IOC_LENGTH and "
                                       "RESMEM_IOC_PHYS (kmod/uapi/resmem_ioctl.h)");
    }
    if (arg == nullptr)
      return Status::Errno(EFAULT, d.path + ": ioctl argument is a null pointer; pass a buffer "
                                            "of the command's size");
    if (cmd == RESMEM_IOC_INFO) {
      RESMEM_ASSIGN_OR_RETURN(RegionInfo ri, Info());
      // RESMEM_INFO_FAULT_INJECTION means "a test build that answers RESMEM_IOC_TEST_PIN"
      // (kmod/uapi/resmem_ioctl.h); this driver answers it ENOTTY, as the production module does,
      // so the flag stays clear (its seeds' bugs are the spec's, not a test build's).
      const resmem_info info = UapiFromRegionInfo(ri, d.name);
      std::memcpy(arg, &info, sizeof info);
    } else {
      const __u64 v = cmd == RESMEM_IOC_LENGTH ? d.size : d.phys;
      std::memcpy(arg, &v, sizeof v);
    }
    return Status::Ok();
  }

  Result<std::unique_ptr<HostMemory>> Map(const MapRequest& request) override {
    const Device& d = device();
    const SimDriverSpec& spec = state_->spec;
    SimWorld& world = *state_->world;
    const std::string what = "mmap " + d.path;
    const FaultOutcome f =
        world.faults->Check("region.mmap", d.phys + request.offset, request.length);
    if (f.fired) {
      if (f.effect == FaultEffect::kError || f.effect == FaultEffect::kSignal) return f.status;
      if (f.effect == FaultEffect::kDelay) world.clock->Charge(f.delay_seconds);
    }
    // mmap(2)'s own checks (mm/mmap.c, do_mmap): zero length, unaligned offset, and a shared
    // writable mapping of a file opened read-only.
    if (request.length == 0)
      return Status::Errno(EINVAL, what + ": length 0; map at least one page");
    if (request.offset % kPage)
      return Status::Errno(EINVAL, what + ": offset " + HexAddress(request.offset) +
                                       " is not a multiple of the 4 KiB page size");
    if (request.shared && request.writable && !request_.writable)
      return Status::Errno(EACCES, what + ": shared writable mapping of a device opened "
                                          "read-only; open it O_RDWR or map PROT_READ");
    // The module refuses private mappings (kmod/resmem.c, resmem_mmap); the forum drivers
    // (range_check off) did not look.
    if (spec.range_check && !request.shared)
      return Status::Errno(EINVAL, what + ": MAP_PRIVATE of physical memory makes no sense "
                                          "(a write would copy the page); map MAP_SHARED");
    const uint64_t vma_size = (request.length + kPage - 1) & ~(kPage - 1);
    if (vma_size < request.length)
      return Status::Errno(ENOMEM, what + ": length " + HexAddress(request.length) +
                                       " does not fit the address space");

    SimMappingSetup setup;
    setup.device = d.path;
    setup.range_phys = d.phys;
    setup.range_size = d.size;
    setup.offset = request.offset;
    setup.length = request.length;
    setup.writable = request.writable;
    setup.shared = request.shared;
    setup.mode = spec.mode;
    setup.cache = spec.cache;
    if (spec.length_as_int32) {
      // The forum driver: `int len = vma->vm_end - vma->vm_start;` then checks and remaps len
      // bytes. 188 GiB becomes 0, 3 GiB becomes negative: the check passes and nothing is
      // remapped, yet mmap returns success.
      const int32_t len = static_cast<int32_t>(static_cast<uint32_t>(vma_size));
      if (len > 0 && (request.offset > d.size || static_cast<uint64_t>(len) > d.size - request.offset))
        return Status::Errno(EINVAL, what + ": offset " + HexAddress(request.offset) + " + length " +
                                         HexAddress(static_cast<uint64_t>(len)) + " is past the " +
                                         FormatSize(d.size) + " the device serves");
      setup.remapped_bytes = len > 0 ? static_cast<uint64_t>(len) : 0;
      setup.length_truncated = static_cast<uint64_t>(len < 0 ? 0 : len) != vma_size;
      if (setup.length_truncated)
        world.Log("resmem: " + d.name + ": mmap length " + HexAddress(vma_size) + " as int is " +
                  std::to_string(len) + ": remapping " + std::to_string(setup.remapped_bytes) +
                  " bytes");
    } else {
      // The module's bounds (kmod/resmem.c): never a mapping of neighbouring memory.
      if (request.offset > d.size || vma_size > d.size - request.offset)
        return Status::Errno(EINVAL, what + ": offset " + HexAddress(request.offset) + " + length " +
                                         FormatSize(request.length) + " reaches past the " +
                                         FormatSize(d.size) + " the device serves; map inside it");
      setup.remapped_bytes = vma_size;
    }
    if (spec.pfn_source == SimDriverSpec::PfnSource::kKernelVirtual) {
      // Seed 002: remap_pfn_range(vma, start, (unsigned long)ioremap_address, ...).
      setup.pfn_is_kernel_virtual = true;
      setup.first_pfn = d.ioremap_base + request.offset;
    } else {
      setup.first_pfn = (d.phys + request.offset) / kPage;
    }
    return std::unique_ptr<HostMemory>(new SimMapping(state_->world, setup));
  }

 private:
  const Device& device() const { return state_->devices[index_]; }
  std::shared_ptr<DriverState> state_;
  size_t index_;
  OpenRequest request_;
};

class SimRegionProvider : public RegionProvider {
 public:
  explicit SimRegionProvider(std::shared_ptr<DriverState> state) : state_(std::move(state)) {}
  ~SimRegionProvider() override {
    for (const Device& d : state_->devices)
      if (d.ioremap_memtype) state_->world->RemoveMemtype(d.ioremap_memtype);
  }

  std::string name() const override { return "sim"; }

  Result<std::vector<std::string>> List() override {
    std::vector<std::string> out;
    for (const Device& d : state_->devices)
      if (d.refusal.ok()) out.push_back(d.path);
    return out;
  }

  Result<std::unique_ptr<RegionHandle>> Open(const OpenRequest& request) override {
    // No module, no node: what open(2) of a /dev/resmemN that udev never made answers.
    if (!state_->module_refusal.empty())
      return Status::Errno(ENOENT, "open " + (request.path.empty() ? std::string("/dev/resmem0") : request.path) +
                                       ": no such device: " + state_->module_refusal);
    const auto& devices = state_->devices;
    size_t index = devices.size();
    if (request.path.empty()) {
      for (size_t i = 0; i < devices.size() && index == devices.size(); ++i)
        if (devices[i].refusal.ok()) index = i;
      if (index == devices.size()) {
        std::string why = "no resmem device is present";
        if (devices.empty())
          why += ": the kernel has no memmap=nn$ss reservation and the driver was given no "
                 "ranges; add memmap=<size>$<start> to the command line";
        for (const Device& d : devices)
          why += "; " + d.name + " refused: " + d.refusal.message();
        const int err = devices.empty() ? ENOENT : devices.front().refusal.code();
        return Status::Errno(err, why);
      }
    } else {
      for (size_t i = 0; i < devices.size(); ++i)
        if (devices[i].path == request.path) index = i;
      if (index == devices.size()) {
        std::string have;
        for (const Device& d : devices)
          if (d.refusal.ok()) have += (have.empty() ? "" : ", ") + d.path;
        return Status::Errno(ENOENT, request.path + ": no such device; present: " +
                                         (have.empty() ? "none" : have));
      }
      if (!devices[index].refusal.ok())
        return devices[index].refusal.WithContext(
            "open " + request.path + ": the driver refused this range at load (see dmesg)");
    }
    const Device& d = devices[index];
    const FaultOutcome f = state_->world->faults->Check("region.open", d.phys, d.size);
    if (f.fired) {
      if (f.effect == FaultEffect::kError || f.effect == FaultEffect::kSignal) return f.status;
      if (f.effect == FaultEffect::kDelay) state_->world->clock->Charge(f.delay_seconds);
    }
    return std::unique_ptr<RegionHandle>(new SimRegionHandle(state_, index, request));
  }

 private:
  std::shared_ptr<DriverState> state_;
};

// The ranges= parameter the driver was given (SimDriverSpec::ranges, in memmap= syntax: the size
// in the largest unit that divides it), or none.
std::vector<std::string> HardwareParams(const SimDriverSpec& spec) {
  if (spec.ranges.empty()) return {};
  std::string value;
  for (const auto& [phys, size] : spec.ranges) {
    uint64_t n = size;
    const char* unit = "";
    for (const auto& [bytes, u] : {std::pair<uint64_t, const char*>{1ull << 30, "G"}, {1ull << 20, "M"}, {1ull << 10, "K"}})
      if (size % bytes == 0) {
        n = size / bytes;
        unit = u;
        break;
      }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%" PRIu64 "%s$0x%" PRIx64, n, unit, phys);
    value += (value.empty() ? "" : ",") + std::string(buf);
  }
  return {"ranges=" + value};
}

// Whether the kernel loads the module at all (mock/machine/module_policy.h), where the machine
// describes its module policy: the kernel's lines go to dmesg; a refusal is returned as the
// reason every open then gives, "" when the module loads.
std::string LoadModule(SimWorld& world, const SimDriverSpec& spec) {
  const ModulePolicySpec& policy = world.spec.module_policy;
  if (!policy.described) return "";
  const ModuleLoad load = DecideModuleLoad(ReadModulePolicy(world.kernel.cmdline, policy),
                                           policy.resmem_ko, HardwareParams(spec));
  for (const auto& line : load.dmesg) world.Log(line);
  if (load.loaded) return "";
  std::string quoted;
  for (const auto& line : load.dmesg) quoted += (quoted.empty() ? "" : "; ") + ("'" + line + "'");
  return "the kernel refused to load the resmem module: " + load.why + "; " + load.loader_error +
         (quoted.empty() ? "" : "; dmesg: " + quoted);
}

}  // namespace

std::unique_ptr<RegionProvider> MakeSimRegionProvider(std::shared_ptr<SimWorld> world,
                                                      const SimDriverSpec& spec) {
  auto state = std::make_shared<DriverState>();
  state->world = world;
  state->spec = spec;
  state->module_refusal = LoadModule(*world, spec);
  if (!state->module_refusal.empty()) return std::make_unique<SimRegionProvider>(std::move(state));
  std::vector<DriverRange> ranges;
  if (spec.ranges.empty()) {
    for (const auto& r : world->kernel.reservations) ranges.push_back({r.start, r.end - r.start});
  } else {
    for (const auto& r : spec.ranges) ranges.push_back({r.first, r.second});
  }
  std::vector<DriverRange> served;
  for (size_t i = 0; i < ranges.size(); ++i) {
    Device d;
    d.name = "resmem" + std::to_string(i);
    d.path = "/dev/" + d.name;
    d.phys = ranges[i].phys;
    d.size = ranges[i].size;
    if (spec.range_check) d.refusal = CheckDriverRange(*world, ranges[i], served);
    if (!d.refusal.ok()) {
      world->Log("resmem: " + d.name + ": refused: " + d.refusal.ToString());
    } else {
      served.push_back(ranges[i]);
      if (spec.pfn_source == SimDriverSpec::PfnSource::kKernelVirtual) {
        // The seed-002 driver ioremaps the range at load; ioremap hands out a vmalloc-area
        // address and holds the range uncached-minus in the memtype list. The address is drawn
        // (2 MiB aligned) from [vmalloc + 768 GiB, vmalloc + 1 TiB): its low 40 bits, which the
        // PTE's frame field keeps, reach bits 50-51, so on every CPU narrower than 51 address
        // bits the PTE has reserved bits set, as in seed 002 (page_table.h).
        d.ioremap_base =
            kVmallocStart + (3ull << 38) + (world->RandomBelow(1ull << 17) << 21);
        d.ioremap_memtype = world->AddMemtype(d.phys, d.phys + d.size, MemoryType::kUncachedMinus);
      }
      char line[200];
      std::snprintf(line, sizeof line,
                    "resmem: %s: [mem 0x%" PRIx64 "-0x%" PRIx64 "] mode=%s cache=%s%s",
                    d.name.c_str(), d.phys, d.phys + d.size - 1, MapModeName(spec.mode),
                    CacheTypeName(spec.cache), spec.range_check ? "" : " (no range check)");
      world->Log(line);
    }
    state->devices.push_back(std::move(d));
  }
  return std::make_unique<SimRegionProvider>(std::move(state));
}

}  // namespace resmem::sim
