// The simulated driver: load-time range checks, open/info/ioctl, mmap bounds and facts, both
// modes, the seeds' bugs (int length, kernel virtual address as PFN), holes, costs, faults.
#include "mock/region/sim_driver.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cinttypes>
#include <csignal>
#include <cstring>
#include <vector>

#include "kmod/uapi/resmem_ioctl.h"
#include "mock/region/page_table.h"
#include "mock/region/sim_mapping.h"
#include "mock/sim/sim_memory.h"

namespace resmem::sim {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;
constexpr uint64_t kResPhys = 0x140000000ull;  // memmap=64M$0x140000000 on qemu-q35-5g
constexpr uint64_t kResSize = 64 * kMiB;

std::shared_ptr<SimWorld> World(const std::string& preset, const std::string& extra_cmdline,
                                uint64_t seed = 1, int phys_addr_bits = 0) {
  auto spec = MachinePreset(preset);
  EXPECT_TRUE(spec.ok());
  MachineSpec m = spec.value();
  if (!extra_cmdline.empty()) m.cmdline += " " + extra_cmdline;
  if (phys_addr_bits) m.phys_addr_bits = phys_addr_bits;
  auto w = MakeSimWorld(m, seed);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  return w.value();
}

std::shared_ptr<SimWorld> QemuWorld() { return World("qemu-q35-5g", "memmap=64M$0x140000000"); }

bool DmesgHas(const SimWorld& w, const std::string& needle) {
  for (const auto& line : w.DmesgSnapshot())
    if (line.find(needle) != std::string::npos) return true;
  return false;
}

std::unique_ptr<RegionHandle> OpenOk(RegionProvider& p, const std::string& path = "") {
  auto h = p.Open({path});
  EXPECT_TRUE(h.ok()) << h.status().ToString();
  return std::move(h).value();
}

std::unique_ptr<HostMemory> MapOk(RegionHandle& h, uint64_t offset, uint64_t length) {
  MapRequest req;
  req.offset = offset;
  req.length = length;
  auto m = h.Map(req);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return std::move(m).value();
}

// ---- load-time checks -------------------------------------------------------------------

struct RefusalCase {
  const char* name;
  uint64_t phys;
  uint64_t size;
  int err;
  const char* words;  // in the message and dmesg
};

void PrintTo(const RefusalCase& c, std::ostream* os) { *os << c.name; }

class RangeCheckTest : public ::testing::TestWithParam<RefusalCase> {};

TEST_P(RangeCheckTest, RefusedWithItsErrnoAndADmesgLine) {
  const RefusalCase& c = GetParam();
  // Boot with the standard reservation plus one over the PCI hole (accepted by the kernel).
  auto w = World("qemu-q35-5g", "memmap=64M$0x140000000 memmap=16M$0xc0000000");
  SimDriverSpec spec;
  spec.ranges = {{kResPhys, 16 * kMiB}, {c.phys, c.size}};
  auto p = MakeSimRegionProvider(w, spec);
  auto list = p->List().value();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0], "/dev/resmem0");
  auto h = p->Open({"/dev/resmem1"});
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().space(), ErrorSpace::kErrno);
  EXPECT_EQ(h.status().code(), c.err) << h.status().ToString();
  EXPECT_NE(h.status().message().find(c.words), std::string::npos) << h.status().message();
  EXPECT_TRUE(DmesgHas(*w, "resmem1: refused"));
  EXPECT_TRUE(DmesgHas(*w, c.words));
}

INSTANTIATE_TEST_SUITE_P(
    Checks, RangeCheckTest,
    ::testing::Values(
        RefusalCase{"SizeZero", kResPhys + 32 * kMiB, 0, ERANGE, "size 0"},
        RefusalCase{"Wraps", 0xfffffffffffff000ull, 0x2000, EOVERFLOW, "address space"},
        RefusalCase{"PastAddressWidth", 1ull << 40, 4096, EOVERFLOW, "40-bit"},
        RefusalCase{"Unaligned", kResPhys + 32 * kMiB + 0x100, 4096, EDOM, "page aligned"},
        RefusalCase{"UnalignedSize", kResPhys + 32 * kMiB, 100, EDOM, "page aligned"},
        RefusalCase{"SystemRam", 0x10000000, 4096, EPERM, "System RAM"},
        RefusalCase{"StraddlesSystemRam", kResPhys - 4096, 8192, EPERM, "System RAM"},
        RefusalCase{"LegacyFirstMiB", 0xa0000, 4096, ENXIO, "below 1 MiB"},
        RefusalCase{"NotReserved", 0x200000000ull, 4096, EADDRNOTAVAIL, "marked Reserved"},
        RefusalCase{"OverlapsDevice", kResPhys + 8 * kMiB, 16 * kMiB, EBUSY, "already serves"},
        RefusalCase{"PciHole", 0xc0000000, 16 * kMiB, ENXIO, "PCI Bus"},
        RefusalCase{"FirmwareReservedNoRam", 0xfeffc000, 4096, ENXIO, "no RAM behind"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(SimDriver, DefaultRangesAreTheReservationsOneDeviceEach) {
  auto w = World("qemu-q35-5g", "memmap=64M$0x140000000 memmap=32M$0x150000000");
  auto p = MakeSimRegionProvider(w, {});
  EXPECT_EQ(p->name(), "sim");
  auto list = p->List().value();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[1], "/dev/resmem1");
  auto h = OpenOk(*p, "/dev/resmem1");
  auto info = h->Info().value();
  EXPECT_EQ(info.device, "/dev/resmem1");
  EXPECT_EQ(info.phys_addr, 0x150000000ull);
  EXPECT_EQ(info.size, 32 * kMiB);
  EXPECT_EQ(info.mode, MapMode::kPfnmap);
  EXPECT_EQ(info.abi_version, 1u);
  EXPECT_TRUE(DmesgHas(*w, "resmem0: [mem 0x140000000-0x143ffffff] mode=pfnmap cache=wb"));
  // Empty path: the first device.
  EXPECT_EQ(OpenOk(*p)->Info().value().device, "/dev/resmem0");
}

TEST(SimDriver, NoReservationMeansNoDeviceAndTheWayOut) {
  auto w = World("qemu-q35-5g", "");
  auto p = MakeSimRegionProvider(w, {});
  EXPECT_TRUE(p->List().value().empty());
  auto h = p->Open({""});
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), ENOENT);
  EXPECT_NE(h.status().message().find("memmap="), std::string::npos);
  auto h2 = p->Open({"/dev/resmem3"});
  EXPECT_EQ(h2.status().code(), ENOENT);
}

// The kernel decides whether resmem.ko loads at all (mock/machine/module_policy.h): refused, it
// serves no device and every open says why; loaded, the devices come up as before.
std::shared_ptr<SimWorld> PolicyWorld(bool secure_boot, std::vector<std::string> keys,
                                      const std::string& extra_cmdline = "") {
  auto spec = MachinePreset("qemu-q35-5g");
  EXPECT_TRUE(spec.ok());
  MachineSpec m = spec.value();
  m.cmdline += " memmap=64M$0x140000000 " + extra_cmdline;
  m.module_policy.described = true;
  m.module_policy.efi = true;
  m.module_policy.secure_boot = secure_boot;
  m.module_policy.trusted_keys = std::move(keys);
  auto w = MakeSimWorld(m, 1);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  return w.value();
}

TEST(SimDriver, AModuleTheKernelRefusesHasNoDeviceAndOpenSaysWhy) {
  auto w = PolicyWorld(true, {"Debian Secure Boot CA"});  // dkms's key never enrolled
  auto p = MakeSimRegionProvider(w, SimDriverSpec{});
  EXPECT_TRUE(p->List()->empty());
  for (const std::string path : {"", "/dev/resmem0"}) {
    auto h = p->Open({path});
    ASSERT_FALSE(h.ok());
    EXPECT_EQ(h.status().code(), ENOENT);
    const std::string& msg = h.status().message();
    EXPECT_NE(msg.find("open /dev/resmem0: no such device: the kernel refused to load the resmem module"),
              std::string::npos) << msg;
    EXPECT_NE(msg.find("signed by 'DKMS module signing key', a key the kernel does not trust"),
              std::string::npos) << msg;
    EXPECT_NE(msg.find("Key was rejected by service"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'Loading of module with unavailable key is rejected'"), std::string::npos) << msg;
  }
  EXPECT_TRUE(DmesgHas(*w, "Loading of module with unavailable key is rejected"));
  EXPECT_FALSE(DmesgHas(*w, "resmem: resmem0:"));  // the driver never ran
}

TEST(SimDriver, AnEnrolledKeyLoadsAndLockdownRefusesOnlyTheRangesParameter) {
  auto w = PolicyWorld(true, {"Debian Secure Boot CA", "DKMS module signing key"});
  auto p = MakeSimRegionProvider(w, SimDriverSpec{});
  EXPECT_EQ(*p->List(), std::vector<std::string>{"/dev/resmem0"});
  OpenOk(*p);
  // The same module given ranges=: the kernel refuses the hardware parameter under lockdown.
  auto w2 = PolicyWorld(true, {"DKMS module signing key"});
  SimDriverSpec with_ranges;
  with_ranges.ranges = {{kResPhys, kResSize}};
  auto refused = MakeSimRegionProvider(w2, with_ranges);
  auto h = refused->Open({"/dev/resmem0"});
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), ENOENT);
  EXPECT_NE(h.status().message().find("Operation not permitted"), std::string::npos) << h.status().message();
  EXPECT_TRUE(DmesgHas(*w2, "Lockdown: insmod: unsafe module parameters is restricted; see man kernel_lockdown.7"));
  EXPECT_TRUE(DmesgHas(*w2, "resmem: `64M$0x140000000' invalid for parameter `ranges'"));
  // Without Secure Boot an unsigned module loads and taints the kernel.
  auto w3 = PolicyWorld(false, {});
  auto plain = MakeSimRegionProvider(w3, with_ranges);
  OpenOk(*plain, "/dev/resmem0");
  EXPECT_TRUE(DmesgHas(*w3, "resmem: module verification failed: signature and/or required key missing"));
  // modules_disabled refuses even a trusted module.
  auto spec = MachinePreset("qemu-q35-5g");
  MachineSpec m = spec.value();
  m.cmdline += " memmap=64M$0x140000000";
  m.module_policy.described = true;
  m.module_policy.modules_disabled = true;
  auto disabled = MakeSimRegionProvider(*MakeSimWorld(m, 1), SimDriverSpec{});
  auto d = disabled->Open({""});
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("modules_disabled is 1"), std::string::npos) << d.status().message();
}

TEST(SimDriver, WithoutRangeCheckServesAHoleThatReadsZerosAndDropsWrites) {
  auto w = World("qemu-q35-5g", "memmap=16M$0xc0000000");
  SimDriverSpec spec;
  spec.range_check = false;
  auto p = MakeSimRegionProvider(w, spec);
  auto m = MapOk(*OpenOk(*p), 0, 16 * kMiB);
  const uint32_t v = 0xdeadbeef;
  ASSERT_TRUE(m->Write(4096, &v, 4).ok());
  uint32_t back = 1;
  ASSERT_TRUE(m->Read(4096, &back, 4).ok());
  EXPECT_EQ(back, 0u);  // FACTS.md: every word mismatched, reads returned 0
  EXPECT_EQ(w->memory.materialised_pages(), 0u);
  // With the check on, the same range is refused.
  auto checked = MakeSimRegionProvider(w, {});
  EXPECT_EQ(checked->Open({""}).status().code(), ENXIO);
}

TEST(SimDriver, RamBehindAReservationRoundTripsThroughPhysicalMemory) {
  auto w = QemuWorld();
  auto p = MakeSimRegionProvider(w, {});
  auto h = OpenOk(*p);
  auto m = MapOk(*h, 8192, 1 * kMiB);
  const char msg[] = "block 0001";
  ASSERT_TRUE(m->Write(100, msg, sizeof msg).ok());
  char back[sizeof msg] = {};
  w->memory.Read(kResPhys + 8192 + 100, back, sizeof back);
  EXPECT_STREQ(back, msg);
  // A second mapping of the same device at offset 0 sees it at 8192 + 100.
  auto m2 = MapOk(*h, 0, kResSize);
  char back2[sizeof msg] = {};
  ASSERT_TRUE(m2->Read(8192 + 100, back2, sizeof back2).ok());
  EXPECT_STREQ(back2, msg);
  EXPECT_NE(m->address(), m2->address());
  // Span bounds of the mapping itself.
  EXPECT_EQ(m->Read(1 * kMiB - 1, back, 2).code(), kInvalidArgument);
}

// ---- mmap bounds and facts --------------------------------------------------------------

TEST(SimDriver, MapBoundsNeverReachNeighbouringMemory) {
  auto w = QemuWorld();
  auto p = MakeSimRegionProvider(w, {});
  auto h = OpenOk(*p);
  auto expect_errno = [&](uint64_t off, uint64_t len, int err, const char* words) {
    MapRequest r;
    r.offset = off;
    r.length = len;
    auto m = h->Map(r);
    ASSERT_FALSE(m.ok()) << off << "+" << len;
    EXPECT_EQ(m.status().code(), err) << m.status().ToString();
    EXPECT_NE(m.status().message().find(words), std::string::npos) << m.status().message();
  };
  expect_errno(0, 0, EINVAL, "length 0");
  expect_errno(100, 4096, EINVAL, "not a multiple");
  expect_errno(0, kResSize + 4096, EINVAL, "reaches past");
  expect_errno(kResSize - 4096, 8192, EINVAL, "reaches past");
  expect_errno(kResSize, 1, EINVAL, "reaches past");  // the length rounds up to a page
  expect_errno(2 * kResSize, 4096, EINVAL, "reaches past");
  MapRequest priv;
  priv.length = 4096;
  priv.shared = false;
  auto refused = h->Map(priv);
  EXPECT_EQ(refused.status().code(), EINVAL);
  EXPECT_NE(refused.status().message().find("MAP_SHARED"), std::string::npos);
  SimDriverSpec forum;
  forum.range_check = false;
  auto private_ok = OpenOk(*MakeSimRegionProvider(w, forum))->Map(priv);
  ASSERT_TRUE(private_ok.ok());
  EXPECT_FALSE(private_ok.value()->facts().shared);
  EXPECT_TRUE(h->Map({kResSize - 4096, 4096}).ok());
  EXPECT_TRUE(h->Map({0, kResSize - 10}).ok());
}

TEST(SimDriver, ReadOnlyOpenRefusesSharedWritableMap) {
  auto w = QemuWorld();
  auto p = MakeSimRegionProvider(w, {});
  OpenRequest ro;
  ro.writable = false;
  auto h = p->Open(ro).value();
  MapRequest r;
  r.length = 4096;
  EXPECT_EQ(h->Map(r).status().code(), EACCES);
  r.writable = false;
  auto m = h->Map(r);
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(m.value()->facts().writable);
}

TEST(SimDriver, PfnmapFacts) {
  auto w = QemuWorld();
  auto m = MapOk(*OpenOk(*MakeSimRegionProvider(w, {})), 4096, 1 * kMiB);
  const MappingFacts& f = m->facts();
  EXPECT_TRUE(f.vm_io);
  EXPECT_TRUE(f.vm_pfnmap);
  EXPECT_FALSE(f.vm_mixedmap);
  EXPECT_EQ(f.backing, Backing::kDevicePfn);
  EXPECT_TRUE(f.physically_contiguous);
  ASSERT_TRUE(f.phys_addr.has_value());
  EXPECT_EQ(*f.phys_addr, kResPhys + 4096);
  EXPECT_TRUE(f.shared);
  EXPECT_EQ(f.length, 1 * kMiB);
  EXPECT_EQ(f.memory_type, MemoryType::kWriteBack);
  EXPECT_EQ(m->address() % (2 * kMiB), 0u);
  EXPECT_NE(m->Describe().find("/dev/resmem0"), std::string::npos);
}

std::shared_ptr<SimWorld> QemuWorldOn(const std::string& kernel_version) {
  auto spec = MachinePreset("qemu-q35-5g");
  EXPECT_TRUE(spec.ok());
  MachineSpec m = spec.value();
  m.cmdline += " memmap=64M$0x140000000";
  m.kernel_version = kernel_version;
  auto w = MakeSimWorld(m, 1);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  return w.value();
}

TEST(SimDriver, PagesModeVmFlagsFollowTheKernel) {
  // Up to 6.16 pages mode's VMA is VM_MIXEDMAP (devmap entries); from 6.17 it has none of pf, io
  // and mm (folio entries): the QEMU lane's 6.12 and 7.3 kernels.
  for (const auto& [version, mixedmap] : {std::pair<std::string, bool>{"6.12.117+deb12-amd64", true},
                                          {"7.3.4+deb13-amd64", false}, {"", false}}) {
    SimDriverSpec spec;
    spec.mode = MapMode::kPages;
    auto h = OpenOk(*MakeSimRegionProvider(QemuWorldOn(version), spec));
    auto m = MapOk(*h, 0, 1 * kMiB);
    EXPECT_EQ(m->facts().vm_mixedmap, mixedmap) << "kernel '" << version << "'";
    EXPECT_FALSE(m->facts().vm_io || m->facts().vm_pfnmap) << version;
    EXPECT_EQ(m->facts().backing, Backing::kDevicePages) << version;
  }
}

TEST(SimDriver, PagesModeFacts) {
  auto w = QemuWorld();
  SimDriverSpec spec;
  spec.mode = MapMode::kPages;
  auto h = OpenOk(*MakeSimRegionProvider(w, spec));
  EXPECT_EQ(h->Info().value().mode, MapMode::kPages);
  auto m = MapOk(*h, 0, 1 * kMiB);
  EXPECT_FALSE(m->facts().vm_io);
  EXPECT_FALSE(m->facts().vm_pfnmap);
  EXPECT_FALSE(m->facts().vm_mixedmap);  // the newest rules: folio entries (above)
  EXPECT_EQ(m->facts().backing, Backing::kDevicePages);
  const uint64_t v = 42;
  ASSERT_TRUE(m->Write(0, &v, 8).ok());
  uint64_t back = 0;
  w->memory.Read(kResPhys, &back, 8);
  EXPECT_EQ(back, 42u);
}

TEST(SimDriver, MemoryTypeCoversTheWholeReservation) {
  // Seed 000: the MTRRs cover the first 128 GB WB; a reservation [4G, 192G) is not uniformly WB,
  // so even a 16 MiB mapping at its start is degraded.
  auto big = World("seed000-workstation", "");
  auto m = MapOk(*OpenOk(*MakeSimRegionProvider(big, {})), 0, 16 * kMiB);
  EXPECT_NE(m->facts().memory_type, MemoryType::kWriteBack);
  EXPECT_EQ(m->facts().memory_type,
            EffectiveMemoryType(big->spec, 4 * kGiB, 192 * kGiB, MemoryType::kWriteBack));
  // memmap=60G$4G stays inside the WB MTRR: write-back.
  auto spec = MachinePreset("seed000-workstation").value();
  spec.cmdline = "mem=4G memmap=60G$4G";
  auto small = MakeSimWorld(spec, 1).value();
  auto m2 = MapOk(*OpenOk(*MakeSimRegionProvider(small, {})), 0, 16 * kMiB);
  EXPECT_EQ(m2->facts().memory_type, MemoryType::kWriteBack);
  // cache=wc asks for write-combining.
  SimDriverSpec wc;
  wc.cache = CacheType::kWriteCombining;
  auto m3 = MapOk(*OpenOk(*MakeSimRegionProvider(small, wc)), 0, 16 * kMiB);
  EXPECT_EQ(m3->facts().memory_type, MemoryType::kWriteCombining);
}

TEST(SimDriver, UncachedReadsAreChargedAtTheUncachedRate) {
  auto w = World("seed000-workstation", "");
  auto m = MapOk(*OpenOk(*MakeSimRegionProvider(w, {})), 0, 16 * kMiB);
  const HostPerf& perf = w->spec.perf;
  std::vector<uint8_t> buf(16 * kMiB);
  const double t0 = w->clock->NowSeconds();
  ASSERT_TRUE(m->Read(0, buf.data(), buf.size()).ok());
  const double uc = w->clock->NowSeconds() - t0;
  EXPECT_NEAR(uc, 16.0 * kMiB / perf.ReadBytesPerSecond(m->facts().memory_type,
                                                        perf.memcpy_load_bytes), 1e-9);
  EXPECT_GT(uc, 10 * 16.0 * kMiB / perf.ReadBytesPerSecond(MemoryType::kWriteBack,
                                                           perf.memcpy_load_bytes));
  std::printf("seed000 model: read 16 MiB from the mapping: %.1f ms (%.1f MB/s; seed: 91 MB/s)\n",
              uc * 1e3, 16.0 * kMiB / uc / 1e6);

  // CopyHost from the mapping into pageable memory costs the same slow reads (seed 000's
  // staging: 52 MB/s).
  auto platform = MakeSimPlatform(w);
  auto dst = platform->AllocPageable(16 * kMiB).value();
  auto secs = platform->CopyHost(*dst, 0, *m, 0, 16 * kMiB);
  ASSERT_TRUE(secs.ok());
  EXPECT_GE(secs.value(), uc);
  std::printf("seed000 model: memcpy 16 MiB mapping -> malloc: %.1f ms (%.1f MB/s)\n",
              secs.value() * 1e3, 16.0 * kMiB / secs.value() / 1e6);
}

TEST(SimDriver, MemtypeListShowsLiveMappings) {
  auto w = QemuWorld();
  auto platform = MakeSimPlatform(w);
  auto h = OpenOk(*MakeSimRegionProvider(w, {}));
  const std::string line = "PAT: [mem 0x0000000140000000-0x0000000140100000] write-back";
  {
    auto m = MapOk(*h, 0, 1 * kMiB);
    EXPECT_NE(platform->ReadSource("/sys/kernel/debug/x86/pat_memtype_list").value().find(line),
              std::string::npos);
  }
  EXPECT_EQ(platform->ReadSource("/sys/kernel/debug/x86/pat_memtype_list").value().find(line),
            std::string::npos);
}

// ---- ioctls -------------------------------------------------------------------------------

TEST(SimDriver, Ioctls) {
  auto w = QemuWorld();
  SimDriverSpec spec;
  spec.mode = MapMode::kPages;
  spec.cache = CacheType::kUncached;
  auto h = OpenOk(*MakeSimRegionProvider(w, spec));
  resmem_info info;
  std::memset(&info, 0xff, sizeof info);
  ASSERT_TRUE(h->Ioctl(RESMEM_IOC_INFO, &info).ok());
  EXPECT_EQ(info.abi_version, static_cast<__u32>(RESMEM_ABI_VERSION));
  EXPECT_EQ(info.mode, static_cast<__u32>(RESMEM_MODE_PAGES));
  EXPECT_EQ(info.cache, static_cast<__u32>(RESMEM_CACHE_UC));
  EXPECT_EQ(info.phys_addr, kResPhys);
  EXPECT_EQ(info.size, kResSize);
  EXPECT_STREQ(info.name, "resmem0");
  __u64 v = 0;
  ASSERT_TRUE(h->Ioctl(RESMEM_IOC_LENGTH, &v).ok());
  EXPECT_EQ(v, kResSize);
  ASSERT_TRUE(h->Ioctl(RESMEM_IOC_PHYS, &v).ok());
  EXPECT_EQ(v, kResPhys);
  Status st = h->Ioctl(_IOR('R', 99, __u64), &v);
  EXPECT_EQ(st.code(), ENOTTY);
  EXPECT_NE(st.message().find("RESMEM_IOC_INFO"), std::string::npos);
  EXPECT_EQ(h->Ioctl(_IOR('R', 99, __u64), nullptr).code(), ENOTTY);
  EXPECT_EQ(h->Ioctl(RESMEM_IOC_PHYS, nullptr).code(), EFAULT);
  EXPECT_EQ(h->Ioctl(RESMEM_IOC_INFO, nullptr).code(), EFAULT);
}

// ---- seed bug: the mmap length through an int ----------------------------------------------

TEST(SimDriver, LengthAsInt32Of188GiBMapsNothingButMmapSucceeds) {
  auto w = World("seed000-workstation", "");
  SimDriverSpec spec;
  spec.length_as_int32 = true;
  auto m = MapOk(*OpenOk(*MakeSimRegionProvider(w, spec)), 0, 188 * kGiB);
  ASSERT_EQ(m->size(), 188 * kGiB);
  uint8_t b = 0;
  Status st = m->Read(0, &b, 1);
  EXPECT_EQ(st.space(), ErrorSpace::kSignal);
  EXPECT_EQ(st.code(), SIGBUS);
  EXPECT_NE(st.message().find("beyond the 0 bytes the driver remapped (mmap length truncated "
                              "to int)"),
            std::string::npos)
      << st.message();
  char addr[32];
  std::snprintf(addr, sizeof addr, "bus error at 0x%" PRIx64, m->address());
  EXPECT_NE(st.message().find(addr), std::string::npos);
  // Without the bug the whole range works.
  auto good = MapOk(*OpenOk(*MakeSimRegionProvider(w, {})), 0, 188 * kGiB);
  EXPECT_TRUE(good->Read(188 * kGiB - 1, &b, 1).ok());
}

TEST(SimDriver, LengthAsInt32KeepsTheLow32BitsAndTearsAWrite) {
  auto w = World("seed000-workstation", "");
  SimDriverSpec spec;
  spec.length_as_int32 = true;
  auto h = OpenOk(*MakeSimRegionProvider(w, spec));
  auto m = MapOk(*h, 0, 4 * kGiB + 8192);  // int: 8192
  uint8_t b = 0;
  EXPECT_TRUE(m->Read(4096, &b, 1).ok());
  EXPECT_EQ(m->Read(8192, &b, 1).code(), SIGBUS);
  const uint8_t four[4] = {1, 2, 3, 4};
  Status st = m->Write(8190, four, 4);
  EXPECT_EQ(st.code(), SIGBUS);
  uint8_t back[2] = {};
  w->memory.Read(4 * kGiB + 8190, back, 2);  // the first two bytes landed
  EXPECT_EQ(back[0], 1);
  EXPECT_EQ(back[1], 2);
  // 3 GiB is negative as an int: nothing remapped.
  auto neg = MapOk(*h, 0, 3 * kGiB);
  EXPECT_EQ(neg->Read(0, &b, 1).code(), SIGBUS);
  EXPECT_TRUE(DmesgHas(*w, "as int is -1073741824"));
  // Small lengths are unaffected and still bounded.
  auto small = MapOk(*h, 0, 16 * kMiB);
  EXPECT_TRUE(small->Read(16 * kMiB - 1, &b, 1).ok());
}

// ---- seed bug: kernel virtual address as the PFN --------------------------------------------

TEST(SimDriver, KernelVirtualPfnCorruptsThePageTableOnFirstAccess) {
  auto w = World("seed002-workstation", "", 7);
  SimDriverSpec spec;
  spec.pfn_source = SimDriverSpec::PfnSource::kKernelVirtual;
  auto h = OpenOk(*MakeSimRegionProvider(w, spec));
  auto mem = MapOk(*h, 4096, 8 * kGiB - 4096);  // mmap succeeds, as in the seed
  auto& mapping = dynamic_cast<SimMapping&>(*mem);
  const uint64_t pte = mapping.PteOfPage(0);
  EXPECT_NE(PteReservedBits(pte, w->spec.phys_addr_bits), 0u);

  const uint8_t a = 'a';
  Status st = mem->Write(0, &a, 1);  // mptr[0] = 'a'
  ASSERT_EQ(st.space(), ErrorSpace::kSignal);
  EXPECT_EQ(st.code(), SIGKILL);
  char expect[64];
  std::snprintf(expect, sizeof expect, "Corrupted page table at address %" PRIx64, mem->address());
  EXPECT_NE(st.message().find(expect), std::string::npos) << st.message();
  char pte_line[32];
  std::snprintf(pte_line, sizeof pte_line, "PTE %016" PRIx64, pte);
  EXPECT_NE(st.message().find(pte_line), std::string::npos);
  EXPECT_NE(st.message().find("Bad pagetable: 000f [#1]"), std::string::npos);
  EXPECT_NE(st.message().find("phys_addr >> PAGE_SHIFT"), std::string::npos);
  EXPECT_TRUE(DmesgHas(*w, expect));
  EXPECT_TRUE(DmesgHas(*w, pte_line));
  EXPECT_TRUE(DmesgHas(*w, "Bad pagetable: 000f [#1] PREEMPT SMP NOPTI"));
  // A read oopses too, with the read error code and the next oops number.
  uint8_t b;
  EXPECT_EQ(mem->Read(100, &b, 1).code(), SIGKILL);
  EXPECT_TRUE(DmesgHas(*w, "Bad pagetable: 000d [#2]"));
  // Nothing reached memory.
  EXPECT_EQ(w->memory.materialised_pages(), 0u);
}

TEST(SimDriver, KernelVirtualPfnIsDeterministicPerSeed) {
  auto pte_for = [](uint64_t seed) {
    auto w = World("seed002-workstation", "", seed);
    SimDriverSpec spec;
    spec.pfn_source = SimDriverSpec::PfnSource::kKernelVirtual;
    auto m = MapOk(*OpenOk(*MakeSimRegionProvider(w, spec)), 0, 4096);
    return dynamic_cast<SimMapping&>(*m).PteOfPage(0);
  };
  EXPECT_EQ(pte_for(11), pte_for(11));
  EXPECT_NE(pte_for(11), pte_for(12));
}

TEST(SimDriver, KernelVirtualPfnInsideTheAddressWidthHitsOtherMemorySilently) {
  // A CPU with 52 address bits has no reserved bits to trip: the PTE points somewhere else.
  auto w = World("seed002-workstation", "", 7, 52);
  SimDriverSpec spec;
  spec.pfn_source = SimDriverSpec::PfnSource::kKernelVirtual;
  auto mem = MapOk(*OpenOk(*MakeSimRegionProvider(w, spec)), 0, 1 * kMiB);
  const uint8_t a = 'a';
  EXPECT_TRUE(mem->Write(0, &a, 1).ok());
  EXPECT_TRUE(DmesgHas(*w, "outside the reservation"));
  uint8_t at_reservation = 1;
  w->memory.Read(4 * kGiB, &at_reservation, 1);
  EXPECT_EQ(at_reservation, 0);  // the reserved range did not receive the byte
}

TEST(SimDriver, CopyHostThroughBuggyMappingsFailsLikeTheAccess) {
  auto w = World("seed002-workstation", "", 3);
  auto platform = MakeSimPlatform(w);
  auto dst = platform->AllocPageable(1 * kMiB).value();
  SimDriverSpec kv;
  kv.pfn_source = SimDriverSpec::PfnSource::kKernelVirtual;
  auto bad = MapOk(*OpenOk(*MakeSimRegionProvider(w, kv)), 0, 1 * kMiB);
  EXPECT_EQ(platform->CopyHost(*dst, 0, *bad, 0, 4096).status().code(), SIGKILL);

  SimDriverSpec trunc;
  trunc.length_as_int32 = true;
  auto t = MapOk(*OpenOk(*MakeSimRegionProvider(w, trunc)), 0, 4 * kGiB + 8192);  // int: 8192
  std::vector<uint8_t> ones(16384, 1);
  auto src = platform->AllocPageable(16384).value();
  ASSERT_TRUE(src->Write(0, ones.data(), ones.size()).ok());
  auto r = platform->CopyHost(*t, 0, *src, 0, 16384);
  EXPECT_EQ(r.status().code(), SIGBUS);
  uint8_t landed[2] = {};
  w->memory.Read(4 * kGiB + 8191, landed, 2);
  EXPECT_EQ(landed[0], 1);  // the remapped part received its bytes
  EXPECT_EQ(landed[1], 0);  // nothing past it
}

// ---- fault points ---------------------------------------------------------------------------

FaultRule ErrorRule(const std::string& point, int err) {
  FaultRule r;
  r.point = point;
  r.error = Status::Errno(err, "injected");
  return r;
}

TEST(SimDriver, FaultPointsOpenMmapIoctl) {
  auto w = QemuWorld();
  auto p = MakeSimRegionProvider(w, {});
  auto h = OpenOk(*p);
  FaultRule open = ErrorRule("region.open", EMFILE);
  open.max_fires = 1;
  ASSERT_TRUE(w->faults->AddRule(open).ok());
  EXPECT_EQ(p->Open({""}).status().code(), EMFILE);
  EXPECT_TRUE(p->Open({""}).ok());

  FaultRule mmap = ErrorRule("region.mmap", ENOMEM);
  mmap.trigger = FaultTrigger::kNth;
  mmap.nth = 2;
  ASSERT_TRUE(w->faults->AddRule(mmap).ok());
  EXPECT_TRUE(h->Map({0, 4096}).ok());
  EXPECT_EQ(h->Map({0, 4096}).status().code(), ENOMEM);
  EXPECT_TRUE(h->Map({0, 4096}).ok());

  FaultRule ioctl = ErrorRule("region.ioctl", EIO);
  ioctl.max_fires = 1;
  ASSERT_TRUE(w->faults->AddRule(ioctl).ok());
  __u64 v;
  EXPECT_EQ(h->Ioctl(RESMEM_IOC_PHYS, &v).code(), EIO);
  EXPECT_TRUE(h->Ioctl(RESMEM_IOC_PHYS, &v).ok());
}

TEST(SimDriver, ReadWriteFaultsOverAPhysicalRange) {
  auto w = QemuWorld();
  auto m = MapOk(*OpenOk(*MakeSimRegionProvider(w, {})), 0, kResSize);
  FaultRule eio = ErrorRule("region.read", EIO);
  eio.trigger = FaultTrigger::kAddressRange;
  eio.range_start = kResPhys + 1 * kMiB;
  eio.range_end = kResPhys + 2 * kMiB;
  ASSERT_TRUE(w->faults->AddRule(eio).ok());
  FaultRule bus;
  bus.point = "region.write";
  bus.trigger = FaultTrigger::kAddressRange;
  bus.range_start = kResPhys + 3 * kMiB;
  bus.range_end = kResPhys + 3 * kMiB + 4096;
  bus.effect = FaultEffect::kSignal;
  bus.error = Status::Signal(SIGBUS, "injected bus error");
  ASSERT_TRUE(w->faults->AddRule(bus).ok());

  uint8_t buf[16];
  EXPECT_TRUE(m->Read(0, buf, 16).ok());
  EXPECT_EQ(m->Read(1 * kMiB + 10, buf, 16).code(), EIO);
  EXPECT_EQ(m->Read(1 * kMiB - 8, buf, 16).code(), EIO);  // straddles the start
  EXPECT_TRUE(m->Read(2 * kMiB, buf, 16).ok());
  EXPECT_TRUE(m->Write(0, buf, 16).ok());
  Status st = m->Write(3 * kMiB, buf, 16);
  EXPECT_EQ(st.space(), ErrorSpace::kSignal);
  EXPECT_EQ(st.code(), SIGBUS);
  // CopyHost through the faulty range fails the same way.
  auto platform = MakeSimPlatform(w);
  auto dst = platform->AllocPageable(2 * kMiB).value();
  EXPECT_EQ(platform->CopyHost(*dst, 0, *m, 512 * 1024, 1 * kMiB).status().code(), EIO);
}

TEST(SimDriver, ReadDelayAndCorruption) {
  auto w = QemuWorld();
  auto m = MapOk(*OpenOk(*MakeSimRegionProvider(w, {})), 0, kResSize);
  std::vector<uint8_t> data(4096, 0x5a);
  ASSERT_TRUE(m->Write(0, data.data(), data.size()).ok());
  FaultRule delay;
  delay.point = "region.read";
  delay.effect = FaultEffect::kDelay;
  delay.delay_seconds = 2.0;
  delay.max_fires = 1;
  ASSERT_TRUE(w->faults->AddRule(delay).ok());
  std::vector<uint8_t> back(4096);
  const double t0 = w->clock->NowSeconds();
  ASSERT_TRUE(m->Read(0, back.data(), back.size()).ok());
  EXPECT_GE(w->clock->NowSeconds() - t0, 2.0);
  FaultRule corrupt;
  corrupt.point = "region.read";
  corrupt.effect = FaultEffect::kCorrupt;
  corrupt.max_fires = 1;
  ASSERT_TRUE(w->faults->AddRule(corrupt).ok());
  ASSERT_TRUE(m->Read(0, back.data(), back.size()).ok());
  int differing = 0;
  for (size_t i = 0; i < back.size(); ++i) differing += back[i] != data[i];
  EXPECT_EQ(differing, 1);
  ASSERT_TRUE(m->Read(0, back.data(), back.size()).ok());  // memory itself is intact
  EXPECT_EQ(back, data);
}

}  // namespace
}  // namespace resmem::sim
