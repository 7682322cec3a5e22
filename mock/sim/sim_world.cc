#include "mock/sim/sim_world.h"
#include "mock/sim/zero_bytes.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <vector>

#include "backends/platform/module_policy_parsers.h"
#include "backends/platform/module_signature.h"
#include "mock/sim/sim_memory.h"

namespace resmem::sim {
namespace {

constexpr uint64_t kTwoMiB = 2ull << 20;
constexpr uint64_t kCopyChunk = 1ull << 20;  // bounded buffer for CopyHost's data movement

// Salt of the world's own RNG stream (the fault injector draws from another).
constexpr uint64_t kWorldRngSalt = 0x51a1d;

// Linux's names of cache modes in pat_memtype_list (arch/x86/mm/pat/memtype.c, cattr_name()).
const char* CattrName(MemoryType t) {
  switch (t) {
    case MemoryType::kWriteBack: return "write-back";
    case MemoryType::kWriteCombining: return "write-combining";
    case MemoryType::kUncached: return "uncached";
    case MemoryType::kUncachedMinus: return "uncached-minus";
    case MemoryType::kUnknown: return "broken";
  }
  return "broken";
}

class SimPlatform : public Platform {
 public:
  explicit SimPlatform(std::shared_ptr<SimWorld> world) : world_(std::move(world)) {}

  std::string name() const override { return "sim:" + world_->spec.name; }

  Result<std::string> ReadSource(const std::string& path) override {
    const MachineSpec& spec = world_->spec;
    const BootedKernel& kernel = world_->kernel;
    if (path == "/proc/iomem") return RenderIomem(spec, kernel);
    if (path == "/proc/mtrr") return RenderMtrr(spec);
    // /proc/cmdline reads as the command line and a newline (fs/proc/cmdline.c).
    if (path == "/proc/cmdline") return kernel.cmdline + "\n";
    if (path == "/proc/meminfo") return RenderMeminfo(kernel);
    if (path == "/sys/firmware/memmap") return RenderFirmwareMemmap(spec);
    // The boot loader file the scenario wrote its command line in (mock/machine/grub.h).
    if (path == "/etc/default/grub" || path == "/boot/grub/grub.cfg") {
      const BootLoaderFile f = BootLoaderFileFor(spec.cmdline_source, spec.cmdline);
      if (f.path == path) return f.text;
    }
    if (path == "/proc/cpuinfo") return RenderCpuinfo(spec);
    // The IOMMU's sysfs (mock/machine/iommu.h), only where the machine describes its IOMMU: a
    // machine that does not is one whose IOMMU nobody recorded, and the doctor says so.
    if (path == "/sys/class/iommu" || path == "/sys/kernel/iommu_groups" ||
        path == "/sys/firmware/acpi/tables") {
      if (!spec.iommu.described)
        return Status::Errno(ENOENT, path + ": the simulated machine does not describe its "
                                            "IOMMU (machine key iommu = { vendor = ... })");
      if (path == "/sys/firmware/acpi/tables") return RenderAcpiTables(spec.iommu);
      const IommuKernel k = ReadIommuOptions(kernel.cmdline, spec.iommu, kernel.rules);
      return path == "/sys/class/iommu" ? RenderIommuUnits(spec.iommu, k)
                                        : RenderIommuGroups(spec.iommu, k);
    }
    if (IsModulePolicySource(path)) return ReadModulePolicySource(path);
    // The GPU's link, its NUMA node, the caller's and THP (machine key gpu_pci).
    if (auto g = RenderGpuPciSource(spec, path); g.ok() || g.status().code() != kNotFound ||
                                                 g.status().space() != ErrorSpace::kResmem)
      return g;
    // uname -m: a 32-bit kernel of the i386 tree reports its build's CPU class (i686 for the
    // distributions' kernels); empty arch means x86_64 (machine.h).
    if (path == "uname:machine") return (spec.arch == "i386" ? std::string("i686") : std::string("x86_64")) + "\n";
    // uname -r, where the machine names its kernel (the doctor reads the option rules from it).
    if (path == "/proc/sys/kernel/osrelease" && !spec.kernel_version.empty())
      return spec.kernel_version + "\n";
    // The kernel log so far, one line each, without timestamps: the boot's map lines
    // (BootedKernel::dmesg) first, then what the drivers printed.
    if (path == "dmesg") {
      std::string out;
      for (const auto& line : world_->DmesgSnapshot()) out += line + "\n";
      return out;
    }
    // /proc/version (fs/proc/version.c: the linux_banner): the version the machine names. A
    // machine that names none runs the newest rules the model knows, which have no version
    // string: the file is absent rather than invented, so a recording replays the same rules.
    if (path == "/proc/version") {
      if (spec.kernel_version.empty())
        return Status::Errno(ENOENT, path + ": the simulated machine names no kernel version "
                                            "(machine key kernel = \"6.8.0\"), so it runs the "
                                            "newest rules the model knows and has no version string");
      return "Linux version " + spec.kernel_version + " (resmem simulator) #1 SMP\n";
    }
    if (path == "/sys/kernel/debug/x86/pat_memtype_list") {
      // The debugfs file exists only when PAT is on (memtype.c, pat_memtype_list_init).
      if (!spec.pat_enabled)
        return Status::Errno(ENOENT, path + ": PAT is disabled on this machine (nopat or no CPU "
                                            "support), so the kernel has no memtype list");
      return RenderPatMemtypeList();
    }
    return Status::Errno(ENOENT, path + ": not a source the simulated machine has; it serves "
                                        "/proc/iomem, /proc/mtrr, /proc/cmdline, /proc/meminfo, "
                                        "/sys/firmware/memmap, /proc/cpuinfo, /proc/version, dmesg, "
                                        "/sys/kernel/debug/x86/pat_memtype_list, and where the "
                                        "machine describes its IOMMU /sys/class/iommu, "
                                        "/sys/kernel/iommu_groups, /sys/firmware/acpi/tables; "
                                        "where it describes its module policy "
                                        "/proc/sys/kernel/modules_disabled, "
                                        "/sys/kernel/security/lockdown, "
                                        "/sys/module/module/parameters/sig_enforce, the SecureBoot "
                                        "efivar, /sys/firmware/efi/fw_platform_size, /proc/keys, "
                                        "module-signature:resmem");
  }

  Result<std::unique_ptr<HostMemory>> AllocPageable(uint64_t bytes) override {
    if (bytes == 0)
      return Status::InvalidArgument("AllocPageable: size 0; ask for at least one byte");
    // User address space of x86-64 with 4-level paging: 128 TiB.
    if (bytes > (1ull << 47))
      return Status::Errno(ENOMEM, "AllocPageable: " + FormatSize(bytes) +
                                       " exceeds the 128 TiB user address space");
    return std::unique_ptr<HostMemory>(new SimAnonymousMemory(world_, bytes));
  }

  Result<double> CopyHost(HostMemory& dst, uint64_t dst_offset, HostMemory& src,
                          uint64_t src_offset, uint64_t length) override;

  Clock& clock() override { return *world_->clock; }

 private:
  static bool IsModulePolicySource(const std::string& path) {
    return path == kModulesDisabledPath || path == kLockdownPath || path == kSigEnforcePath ||
           path == kSecureBootVarPath || path == kFwPlatformSizePath || path == kKeysPath ||
           path.rfind(kModuleSignatureSource, 0) == 0;
  }

  // The module policy's files (mock/machine/module_policy.h), only where the machine describes
  // its policy; each absent where the kernel would not have it.
  Result<std::string> ReadModulePolicySource(const std::string& path) const {
    const ModulePolicySpec& p = world_->spec.module_policy;
    if (!p.described)
      return Status::Errno(ENOENT, path + ": the simulated machine does not describe its module "
                                          "policy (machine key module_policy = { efi = ... })");
    const ModuleKernel k = ReadModulePolicy(world_->kernel.cmdline, p);
    auto absent = [&](const std::string& why) { return Status::Errno(ENOENT, path + ": " + why); };
    if (path == kModulesDisabledPath) return std::string(k.modules_disabled ? "1\n" : "0\n");
    if (path == kLockdownPath) {
      if (!k.lockdown_lsm) return absent("the kernel has no lockdown LSM (module_policy.lockdown_lsm = false)");
      return RenderLockdown(k.lockdown);
    }
    if (path == kSigEnforcePath) {
      if (!k.module_sig) return absent("the kernel is built without CONFIG_MODULE_SIG (module_policy.module_sig = false)");
      return std::string(k.sig_enforce ? "Y\n" : "N\n");
    }
    if (path == kSecureBootVarPath || path == kFwPlatformSizePath) {
      if (!p.efi) return absent("not an EFI boot (module_policy.efi = false)");
      return path == kFwPlatformSizePath ? std::string("64\n") : RenderSecureBootVariable(p.secure_boot);
    }
    if (path == kKeysPath) return RenderKeys(k.trusted_keys);
    return RenderResmemSignature(path.substr(std::string(kModuleSignatureSource).size()));
  }

  // The installed resmem.ko as the host renders the pseudo-source (backends/platform/
  // module_signature.h): where dkms puts it, signed as the machine says.
  Result<std::string> RenderResmemSignature(const std::string& what) const {
    const ModulePolicySpec& p = world_->spec.module_policy;
    const std::string release =
        world_->spec.kernel_version.empty() ? "simulated" : world_->spec.kernel_version;
    ModuleSignatureFacts f;
    f.file = "/lib/modules/" + release + "/updates/dkms/resmem.ko";
    if (what != "resmem" && what != f.file)
      return Status::Errno(ENOENT, "module-signature:" + what + ": the simulated machine has only its "
                                   "resmem.ko (module-signature:resmem, " + f.file + ")");
    if (p.resmem_ko.state == ModuleFileSpec::State::kAbsent)
      return Status::Errno(ENOENT, "resmem.ko is not installed for kernel " + release +
                                       " (module_policy.resmem_ko = \"absent\")");
    f.state = p.resmem_ko.state == ModuleFileSpec::State::kSigned ? "yes" : "no";
    if (f.state == "yes") {
      f.signature.is_signed = true;
      f.signature.signer = p.resmem_ko.signer;
      f.signature.hash = "sha256";  // dkms and sign-file's default (CONFIG_MODULE_SIG_HASH)
    }
    return RenderModuleSignatureFacts(f);
  }

  std::string RenderPatMemtypeList() const {
    // Format of memtype_seq_show() in arch/x86/mm/pat/memtype.c.
    std::vector<MemtypeEntry> entries;
    {
      std::lock_guard<std::mutex> lock(world_->mu);
      entries = world_->memtypes;
    }
    std::sort(entries.begin(), entries.end(), [](const MemtypeEntry& a, const MemtypeEntry& b) {
      return a.start < b.start || (a.start == b.start && a.id < b.id);
    });
    std::string out = "PAT memtype list:\n";
    char line[96];
    for (const auto& e : entries) {
      std::snprintf(line, sizeof line, "PAT: [mem 0x%016" PRIx64 "-0x%016" PRIx64 "] %s\n",
                    e.start, e.end, CattrName(e.type));
      out += line;
    }
    return out;
  }

  std::shared_ptr<SimWorld> world_;
};

// A span seen through the split access interface when it is simulated, or through plain
// Read/Write when it is not (a real buffer used with the simulated platform).
struct CopyEnd {
  HostMemory& mem;
  SimHostMemory* sim;  // null for non-simulated memory
  uint64_t offset;
};

Result<double> SimPlatform::CopyHost(HostMemory& dst, uint64_t dst_offset, HostMemory& src,
                                     uint64_t src_offset, uint64_t length) {
  RESMEM_RETURN_IF_ERROR(CheckSpan(src, src_offset, length, "CopyHost source"));
  RESMEM_RETURN_IF_ERROR(CheckSpan(dst, dst_offset, length, "CopyHost destination"));
  if (length == 0) return 0.0;
  auto* sim_src = dynamic_cast<SimHostMemory*>(&src);
  auto* sim_dst = dynamic_cast<SimHostMemory*>(&dst);

  double delay = 0;
  uint64_t n = length;
  Status failure;
  // Fault point of the memcpy itself, keyed by the destination's virtual address.
  const FaultOutcome memcpy_fault =
      world_->faults->Check("host.memcpy", dst.address() + dst_offset, length);
  std::optional<uint64_t> corrupt_at;
  uint8_t corrupt_xor = 0;
  if (memcpy_fault.fired) {
    switch (memcpy_fault.effect) {
      case FaultEffect::kError:
      case FaultEffect::kSignal: return memcpy_fault.status;
      case FaultEffect::kDelay: delay += memcpy_fault.delay_seconds; break;
      case FaultEffect::kShortCopy: n = std::min(n, memcpy_fault.short_length); break;
      case FaultEffect::kCorrupt:
        corrupt_at = memcpy_fault.corrupt_offset;
        corrupt_xor = memcpy_fault.corrupt_xor;
        break;
    }
  }
  // The accesses at both ends: signals (SIGBUS past a truncated remap, SIGKILL on a corrupted
  // page table) and their fault points, once for the whole copy.
  if (sim_src) {
    SimAccess a = sim_src->BeginAccess(src_offset, n, AccessKind::kRead);
    delay += a.delay_seconds;
    if (a.valid_bytes < n) n = a.valid_bytes;
    if (!a.status.ok()) failure = a.status;
    if (a.corrupt_offset && !corrupt_at) {
      corrupt_at = a.corrupt_offset;
      corrupt_xor = a.corrupt_xor;
    }
  }
  if (sim_dst && failure.ok()) {
    SimAccess a = sim_dst->BeginAccess(dst_offset, n, AccessKind::kWrite);
    delay += a.delay_seconds;
    if (a.valid_bytes < n) n = a.valid_bytes;
    if (!a.status.ok()) failure = a.status;
    if (a.corrupt_offset && !corrupt_at) {
      corrupt_at = a.corrupt_offset;
      corrupt_xor = a.corrupt_xor;
    }
  }

  // Cost: the slower of reading the source type with memcpy's loads and writing the destination
  // type (HostPerf, mock/machine), plus first-touch page faults of an anonymous destination.
  const HostPerf& perf = world_->spec.perf;
  const double read_rate =
      perf.ReadBytesPerSecond(src.facts().memory_type, perf.memcpy_load_bytes);
  const double write_rate = perf.WriteBytesPerSecond(dst.facts().memory_type);
  const double rate = std::min(read_rate, write_rate);
  double seconds = rate > 0 ? static_cast<double>(n) / rate : 0;
  if (sim_dst && dst.facts().backing == Backing::kAnonymous)
    seconds += static_cast<double>(sim_dst->UntouchedPages(dst_offset, n)) * perf.page_fault_us *
               1e-6;
  seconds += delay;

  // Data moves in bounded chunks. Zeros over zeros are skipped, so copying an untouched span
  // does not materialise sparse memory at either end.
  std::vector<uint8_t> buf(static_cast<size_t>(std::min<uint64_t>(n, kCopyChunk)));
  std::vector<uint8_t> old;
  for (uint64_t done = 0; done < n;) {
    const uint64_t c = std::min<uint64_t>(kCopyChunk, n - done);
    const bool src_known_zero = sim_src && sim_src->ReadsAsZero(src_offset + done, c);
    bool src_zero = src_known_zero;
    if (!src_known_zero) {
      if (sim_src) {
        sim_src->RawRead(src_offset + done, buf.data(), c);
      } else {
        Status st = src.Read(src_offset + done, buf.data(), c);
        if (!st.ok()) {
          failure = st;
          n = done;
          break;
        }
      }
      src_zero = AllZero(buf.data(), c);
    }
    if (sim_dst && src_zero) {
      bool dst_zero = sim_dst->ReadsAsZero(dst_offset + done, c);
      if (!dst_zero) {
        old.resize(c);
        sim_dst->RawRead(dst_offset + done, old.data(), c);
        dst_zero = AllZero(old.data(), c);
      }
      // Zeros over zeros change nothing but anonymous memory's record of touched pages.
      if (!dst_zero || sim_dst->UntouchedPages(dst_offset + done, c))
        sim_dst->RawZero(dst_offset + done, c);
    } else if (sim_dst) {
      sim_dst->RawWrite(dst_offset + done, buf.data(), c);
    } else {
      if (src_known_zero) std::memset(buf.data(), 0, c);
      Status st = dst.Write(dst_offset + done, buf.data(), c);
      if (!st.ok()) {
        failure = st;
        n = done;
        break;
      }
    }
    done += c;
  }
  if (corrupt_at && *corrupt_at < n) {
    uint8_t b = 0;
    if (sim_dst) {
      sim_dst->RawRead(dst_offset + *corrupt_at, &b, 1);
      b ^= corrupt_xor;
      sim_dst->RawWrite(dst_offset + *corrupt_at, &b, 1);
    } else if (dst.Read(dst_offset + *corrupt_at, &b, 1).ok()) {
      b ^= corrupt_xor;
      (void)dst.Write(dst_offset + *corrupt_at, &b, 1);
    }
  }
  world_->clock->Charge(seconds);
  if (!failure.ok()) return failure;
  return seconds;
}

}  // namespace

uint64_t SimWorld::AllocateVa(uint64_t length) {
  std::lock_guard<std::mutex> lock(mu);
  const uint64_t va = (next_user_va + kTwoMiB - 1) & ~(kTwoMiB - 1);
  uint64_t rounded = (length + kTwoMiB - 1) & ~(kTwoMiB - 1);
  if (rounded == 0) rounded = kTwoMiB;
  next_user_va = va + rounded + kTwoMiB;  // guard gap
  return va;
}

void SimWorld::Log(std::string line) {
  std::lock_guard<std::mutex> lock(mu);
  dmesg.push_back(std::move(line));
}

std::vector<std::string> SimWorld::DmesgSnapshot() const {
  std::lock_guard<std::mutex> lock(mu);
  return dmesg;
}

uint64_t SimWorld::AddMemtype(uint64_t start, uint64_t end, MemoryType type) {
  std::lock_guard<std::mutex> lock(mu);
  const uint64_t id = next_memtype_id++;
  memtypes.push_back({id, start, end, type});
  return id;
}

void SimWorld::RemoveMemtype(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu);
  memtypes.erase(std::remove_if(memtypes.begin(), memtypes.end(),
                                [id](const MemtypeEntry& e) { return e.id == id; }),
                 memtypes.end());
}

int SimWorld::NextOops() {
  std::lock_guard<std::mutex> lock(mu);
  return ++oops_count;
}

uint64_t SimWorld::RandomBelow(uint64_t n) {
  std::lock_guard<std::mutex> lock(mu);
  return rng.Below(n);
}

Result<std::shared_ptr<SimWorld>> MakeSimWorld(const MachineSpec& spec, uint64_t seed) {
  Result<BootedKernel> booted = Boot(spec);
  if (!booted.ok()) return booted.status().WithContext("booting machine '" + spec.name + "'");
  auto world = std::make_shared<SimWorld>();
  world->spec = spec;
  world->kernel = std::move(booted).value();
  world->clock = std::make_shared<VirtualClock>();
  world->faults = std::make_shared<FaultInjector>(seed);
  world->rng = DeterministicRng(seed).Fork(kWorldRngSalt);
  for (const auto& m : world->kernel.messages) world->dmesg.push_back(m);
  // What the kernel prints about the command line's IOMMU options (mock/machine/iommu.h; the
  // QEMU lane's kernel prints the same lines: guest case doctor_iommu_options_ignored).
  if (spec.iommu.described)
    for (const auto& line :
         ReadIommuOptions(world->kernel.cmdline, spec.iommu, world->kernel.rules).dmesg)
      world->dmesg.push_back(line);
  // Secure Boot, lockdown and the options the kernel refused (mock/machine/module_policy.h).
  if (spec.module_policy.described)
    for (const auto& line : ReadModulePolicy(world->kernel.cmdline, spec.module_policy).dmesg)
      world->dmesg.push_back(line);

  // RAM is behind the firmware's e820 RAM entries: mem= and memmap=nn$ss change what the kernel
  // manages, not what the DIMMs hold (FACTS.md: the reserved range round-trips data in QEMU).
  // Everything else (PCI hole, MMIO windows, firmware-reserved ranges) is a hole: reads give
  // zeros, writes vanish (FACTS.md: memmap= over the PCI hole read back 0).
  std::vector<std::pair<uint64_t, uint64_t>> ram;
  for (const auto& e : spec.firmware_e820)
    if (e.type == E820Type::kRam && e.end > e.start) ram.emplace_back(e.start, e.end);
  std::sort(ram.begin(), ram.end());
  std::vector<std::pair<uint64_t, uint64_t>> merged;
  for (const auto& r : ram) {
    if (!merged.empty() && r.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  }
  world->memory.SetRam(std::move(merged));
  return world;
}

std::unique_ptr<Platform> MakeSimPlatform(std::shared_ptr<SimWorld> world) {
  return std::make_unique<SimPlatform>(std::move(world));
}

}  // namespace resmem::sim
