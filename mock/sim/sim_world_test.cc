// The simulated world and Platform: RAM behind reservations, rendered sources, pageable memory,
// and CopyHost's data movement, cost model and fault point.
#include "mock/sim/sim_world.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <vector>

#include "backends/platform/module_policy_parsers.h"
#include "backends/platform/module_signature.h"
#include "mock/sim/sim_memory.h"

namespace resmem::sim {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;

MachineSpec Preset(const std::string& name) {
  auto r = MachinePreset(name);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.value();
}

std::shared_ptr<SimWorld> World(const std::string& preset, uint64_t seed = 1) {
  auto w = MakeSimWorld(Preset(preset), seed);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  return w.value();
}

std::vector<uint8_t> Pattern(size_t n, uint8_t salt) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 31 + salt + (i >> 12));
  return v;
}

TEST(MakeSimWorld, ReservedRamIsStillRamAndHolesAreNot) {
  auto w = World("seed000-workstation");
  // memmap=188G$4G: the kernel no longer manages [4G, 192G), the DIMMs are still there.
  EXPECT_TRUE(w->memory.IsRam(4 * kGiB, 192 * kGiB));
  EXPECT_FALSE(w->memory.IsRam(3 * kGiB, 3 * kGiB + 4096));  // PCI hole
  const uint8_t in[4] = {1, 2, 3, 4};
  w->memory.Write(100 * kGiB, in, 4);
  uint8_t out[4] = {};
  w->memory.Read(100 * kGiB, out, 4);
  EXPECT_EQ(0, std::memcmp(in, out, 4));
  w->memory.Write(3 * kGiB, in, 4);  // the hole drops writes
  w->memory.Read(3 * kGiB, out, 4);
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(w->clock->NowSeconds(), 0);
  EXPECT_EQ(w->faults->seed(), 1u);
}

TEST(MakeSimWorld, AMalformedCommandLineBootsAsLinuxDoes) {
  // parse_memmap_one reads no start after '$' (memparse gives 0) and reserves from 0; the
  // kernel boots on, so the world comes up (mock/machine/linux_boot_test.cc has the rules).
  MachineSpec spec = Preset("qemu-q35-2g");
  spec.cmdline = "memmap=64M$";
  auto w = MakeSimWorld(spec, 1);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_EQ((*w)->kernel.reservations.size(), 1u);
  EXPECT_EQ((*w)->kernel.reservations[0].start, 0u);
  EXPECT_EQ((*w)->kernel.reservations[0].end, 64 * kMiB);
}

TEST(SimWorld, AllocateVaIsAlignedAndDisjoint) {
  auto w = World("qemu-q35-2g");
  const uint64_t a = w->AllocateVa(4096);
  const uint64_t b = w->AllocateVa(3 * kMiB);
  const uint64_t c = w->AllocateVa(1);
  EXPECT_EQ(a % (2 * kMiB), 0u);
  EXPECT_EQ(b % (2 * kMiB), 0u);
  EXPECT_EQ(c % (2 * kMiB), 0u);
  EXPECT_GE(b, a + 4096);
  EXPECT_GE(c, b + 3 * kMiB);
}

TEST(SimPlatform, ServesTheRenderedSources) {
  auto w = World("seed000-workstation");
  auto p = MakeSimPlatform(w);
  EXPECT_EQ(p->name(), "sim:seed000-workstation");
  EXPECT_EQ(p->ReadSource("/proc/iomem").value(), RenderIomem(w->spec, w->kernel));
  EXPECT_EQ(p->ReadSource("/proc/mtrr").value(), RenderMtrr(w->spec));
  EXPECT_EQ(p->ReadSource("/proc/meminfo").value(), RenderMeminfo(w->kernel));
  EXPECT_EQ(p->ReadSource("/sys/firmware/memmap").value(), RenderFirmwareMemmap(w->spec));
  EXPECT_EQ(p->ReadSource("/proc/cpuinfo").value(), RenderCpuinfo(w->spec));
  EXPECT_EQ(p->ReadSource("/proc/cmdline").value(), w->kernel.cmdline + "\n");
  EXPECT_NE(p->ReadSource("/proc/cmdline").value().find("memmap=188G$4G"), std::string::npos);
  auto pat = p->ReadSource("/sys/kernel/debug/x86/pat_memtype_list");
  ASSERT_TRUE(pat.ok());
  EXPECT_EQ(pat.value(), "PAT memtype list:\n");  // no device mapping yet
  w->AddMemtype(0x100000000ull, 0x100200000ull, MemoryType::kUncachedMinus);
  EXPECT_NE(p->ReadSource("/sys/kernel/debug/x86/pat_memtype_list")
                .value()
                .find("PAT: [mem 0x0000000100000000-0x0000000100200000] uncached-minus"),
            std::string::npos);
}

// The module policy's files come from the machine model, in the forms the parsers read, and the
// boot's Secure Boot and lockdown lines reach dmesg.
TEST(SimPlatform, ServesTheModulePolicyFromTheMachine) {
  MachineSpec m = Preset("qemu-q35-5g");
  m.kernel_version = "6.1.0-56-amd64";
  m.cmdline = "console=ttyS0 memmap=64M$0x40000000";
  m.module_policy.described = true;
  m.module_policy.efi = true;
  m.module_policy.secure_boot = true;
  m.module_policy.trusted_keys = {"Debian Secure Boot CA"};
  auto w = MakeSimWorld(m, 1);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  auto p = MakeSimPlatform(*w);
  EXPECT_FALSE(*ParseModulesDisabled(*p->ReadSource(kModulesDisabledPath)));
  EXPECT_EQ(*ParseLockdown(*p->ReadSource(kLockdownPath)), LockdownLevel::kIntegrity);
  EXPECT_TRUE(*ParseSigEnforce(*p->ReadSource(kSigEnforcePath)));
  EXPECT_TRUE(*ParseSecureBootVariable(*p->ReadSource(kSecureBootVarPath)));
  EXPECT_EQ(*p->ReadSource(kFwPlatformSizePath), "64\n");
  EXPECT_EQ(*ParseKeySubjects(*p->ReadSource(kKeysPath)), std::vector<std::string>{"Debian Secure Boot CA"});
  auto sig = ParseModuleSignatureFacts(*p->ReadSource("module-signature:resmem"));
  ASSERT_TRUE(sig.ok()) << sig.status().message();
  EXPECT_EQ(sig->file, "/lib/modules/6.1.0-56-amd64/updates/dkms/resmem.ko");
  EXPECT_EQ(sig->state, "yes");
  EXPECT_EQ(sig->signature.signer, "DKMS module signing key");  // the default: dkms signed it
  EXPECT_TRUE(p->ReadSource("module-signature:" + sig->file).ok());
  EXPECT_EQ(p->ReadSource("module-signature:/tmp/other.ko").status().code(), ENOENT);
  const std::string log = *p->ReadSource("dmesg");
  EXPECT_NE(log.find("secureboot: Secure boot enabled\n"
                     "Kernel is locked down from EFI Secure Boot mode; see man kernel_lockdown.7\n"),
            std::string::npos) << log;

  // A legacy boot without the lockdown LSM or CONFIG_MODULE_SIG: those files are absent, and
  // an absent module is ENOENT.
  m.module_policy.efi = m.module_policy.secure_boot = false;
  m.module_policy.lockdown_lsm = m.module_policy.module_sig = false;
  m.module_policy.modules_disabled = true;
  m.module_policy.resmem_ko.state = ModuleFileSpec::State::kAbsent;
  auto bios = MakeSimPlatform(*MakeSimWorld(m, 1));
  EXPECT_TRUE(*ParseModulesDisabled(*bios->ReadSource(kModulesDisabledPath)));
  for (const char* path : {kLockdownPath, kSigEnforcePath, kSecureBootVarPath, kFwPlatformSizePath,
                           "module-signature:resmem"})
    EXPECT_EQ(bios->ReadSource(path).status().code(), ENOENT) << path;
  // A machine that does not describe its policy serves none of it, and says why.
  auto plain = MakeSimPlatform(World("qemu-q35-5g"));
  auto none = plain->ReadSource(kModulesDisabledPath);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("module_policy"), std::string::npos);
}

TEST(SimPlatform, UnknownSourceIsEnoentNamingWhatExists) {
  auto p = MakeSimPlatform(World("qemu-q35-2g"));
  auto r = p->ReadSource("/proc/nonexistent");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().space(), ErrorSpace::kErrno);
  EXPECT_EQ(r.status().code(), ENOENT);
  EXPECT_NE(r.status().message().find("/proc/iomem"), std::string::npos);
}

TEST(SimPlatform, PatListAbsentWhenPatIsOff) {
  MachineSpec spec = Preset("qemu-q35-2g");
  spec.pat_enabled = false;
  auto p = MakeSimPlatform(MakeSimWorld(spec, 1).value());
  auto r = p->ReadSource("/sys/kernel/debug/x86/pat_memtype_list");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ENOENT);
}

TEST(SimPlatform, PageableMemoryFactsAndRoundTrip) {
  auto w = World("h100-host");
  auto p = MakeSimPlatform(w);
  auto m = p->AllocPageable(16 * kMiB);
  ASSERT_TRUE(m.ok());
  HostMemory& mem = *m.value();
  EXPECT_EQ(mem.size(), 16 * kMiB);
  EXPECT_EQ(mem.facts().backing, Backing::kAnonymous);
  EXPECT_EQ(mem.facts().memory_type, MemoryType::kWriteBack);
  EXPECT_FALSE(mem.facts().shared);
  EXPECT_FALSE(mem.facts().vm_pfnmap);
  EXPECT_NE(mem.address(), 0u);
  EXPECT_EQ(mem.data(), nullptr);
  auto other = p->AllocPageable(4096);
  EXPECT_NE(other.value()->address(), mem.address());

  const auto data = Pattern(10000, 7);
  ASSERT_TRUE(mem.Write(5000, data.data(), data.size()).ok());
  std::vector<uint8_t> back(data.size());
  ASSERT_TRUE(mem.Read(5000, back.data(), back.size()).ok());
  EXPECT_EQ(back, data);
  uint8_t z = 0xff;
  ASSERT_TRUE(mem.Read(8 * kMiB, &z, 1).ok());  // untouched reads as zero
  EXPECT_EQ(z, 0);
  auto& anon = dynamic_cast<SimAnonymousMemory&>(mem);
  EXPECT_EQ(anon.touched_pages(), 3u);  // bytes [5000, 15000) lie in pages 1, 2 and 3
  EXPECT_EQ(anon.stored_pages(), 3u);
}

TEST(SimPlatform, PageableMemoryBoundsAndZeroSize) {
  auto p = MakeSimPlatform(World("h100-host"));
  EXPECT_FALSE(p->AllocPageable(0).ok());
  auto m = p->AllocPageable(4096).value();
  uint8_t b[2];
  Status st = m->Read(4095, b, 2);
  EXPECT_EQ(st.space(), ErrorSpace::kResmem);
  EXPECT_EQ(st.code(), kInvalidArgument);
}

TEST(SimPlatform, FirstTouchCostsAPageFaultPerPage) {
  auto w = World("h100-host");
  auto p = MakeSimPlatform(w);
  auto m = p->AllocPageable(1 * kMiB).value();
  const auto data = Pattern(1 * kMiB, 1);
  const HostPerf& perf = w->spec.perf;
  const double t0 = w->clock->NowSeconds();
  ASSERT_TRUE(m->Write(0, data.data(), data.size()).ok());
  const double first = w->clock->NowSeconds() - t0;
  ASSERT_TRUE(m->Write(0, data.data(), data.size()).ok());
  const double second = w->clock->NowSeconds() - t0 - first;
  EXPECT_NEAR(second, 1.0 * kMiB / perf.WriteBytesPerSecond(MemoryType::kWriteBack), 1e-12);
  EXPECT_NEAR(first - second, 256 * perf.page_fault_us * 1e-6, 1e-12);
}

TEST(SimPlatform, UnchargedAccessMovesBytesWithoutChargingTheClock) {
  auto w = World("h100-host");
  auto m = MakeSimPlatform(w)->AllocPageable(1 * kMiB).value();
  const auto data = Pattern(8192, 5);
  ASSERT_TRUE(WriteUncharged(*m, 100, data.data(), data.size()).ok());
  std::vector<uint8_t> back(data.size());
  ASSERT_TRUE(ReadUncharged(*m, 100, back.data(), back.size()).ok());
  EXPECT_EQ(back, data);
  EXPECT_EQ(w->clock->NowSeconds(), 0);
  EXPECT_FALSE(ReadUncharged(*m, 1 * kMiB, back.data(), 1).ok());
  ASSERT_TRUE(m->Read(100, back.data(), back.size()).ok());  // the charging path does charge
  EXPECT_GT(w->clock->NowSeconds(), 0);
}

// The GPU model's copies of pages never written: ReadUncharged says the span reads as zeros and
// moves nothing; over written bytes it reads them. WriteZerosUncharged leaves zeros where data
// was, and a write of zeros still faults in the pages it touches.
TEST(SimPlatform, UnchargedZerosSkipUnwrittenPagesAndOverwriteWrittenOnes) {
  auto w = World("h100-host");
  auto m = MakeSimPlatform(w)->AllocPageable(1 * kMiB).value();
  auto* anon = dynamic_cast<SimAnonymousMemory*>(m.get());
  ASSERT_NE(anon, nullptr);
  std::vector<uint8_t> back(3 * 4096, 0xaa);
  bool zeros = false;
  ASSERT_TRUE(ReadUncharged(*m, 4096 + 10, back.data(), back.size(), &zeros).ok());
  EXPECT_TRUE(zeros);
  EXPECT_EQ(back[0], 0xaa);  // not moved
  const auto data = Pattern(8192, 5);
  ASSERT_TRUE(WriteUncharged(*m, 4096 + 10, data.data(), data.size()).ok());
  ASSERT_TRUE(ReadUncharged(*m, 4096 + 10, back.data(), data.size(), &zeros).ok());
  EXPECT_FALSE(zeros);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), back.begin()));
  ASSERT_TRUE(WriteZerosUncharged(*m, 4096 + 100, 4096).ok());
  ASSERT_TRUE(ReadUncharged(*m, 4096 + 10, back.data(), data.size()).ok());
  for (size_t i = 0; i < data.size(); ++i)
    ASSERT_EQ(back[i], i >= 90 && i < 90 + 4096 ? 0 : data[i]) << "byte " << i;
  const uint64_t touched = anon->touched_pages();
  ASSERT_TRUE(WriteZerosUncharged(*m, 64 * 4096, 2 * 4096).ok());
  EXPECT_EQ(anon->touched_pages(), touched + 2);
  EXPECT_EQ(w->clock->NowSeconds(), 0);
}

class CopyHostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    world = World("h100-host", 42);
    platform = MakeSimPlatform(world);
  }
  std::unique_ptr<HostMemory> Alloc(uint64_t n) { return platform->AllocPageable(n).value(); }
  std::shared_ptr<SimWorld> world;
  std::unique_ptr<Platform> platform;
};

TEST_F(CopyHostTest, MovesTheBytesAcrossChunksAtUnalignedOffsets) {
  auto src = Alloc(8 * kMiB);
  auto dst = Alloc(8 * kMiB);
  const auto data = Pattern(3 * kMiB + 123, 9);
  ASSERT_TRUE(src->Write(777, data.data(), data.size()).ok());
  auto r = platform->CopyHost(*dst, 4097, *src, 777, data.size());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<uint8_t> back(data.size());
  ASSERT_TRUE(dst->Read(4097, back.data(), back.size()).ok());
  EXPECT_EQ(back, data);
  uint8_t edge[2] = {0xff, 0xff};
  ASSERT_TRUE(dst->Read(4095, edge, 2).ok());  // bytes before the copy stayed zero
  EXPECT_EQ(edge[0], 0);
  EXPECT_EQ(edge[1], 0);
}

TEST_F(CopyHostTest, ChargesTheSlowerEndPlusFirstTouchAndReturnsIt) {
  auto src = Alloc(16 * kMiB);
  auto dst = Alloc(16 * kMiB);
  const HostPerf& perf = world->spec.perf;
  const double rate = std::min(perf.ReadBytesPerSecond(MemoryType::kWriteBack,
                                                       perf.memcpy_load_bytes),
                               perf.WriteBytesPerSecond(MemoryType::kWriteBack));
  const double before = world->clock->NowSeconds();
  auto first = platform->CopyHost(*dst, 0, *src, 0, 16 * kMiB);
  ASSERT_TRUE(first.ok());
  EXPECT_NEAR(world->clock->NowSeconds() - before, first.value(), 1e-12);
  EXPECT_NEAR(first.value(), 16.0 * kMiB / rate + 4096 * perf.page_fault_us * 1e-6, 1e-9);
  auto second = platform->CopyHost(*dst, 0, *src, 0, 16 * kMiB);
  EXPECT_NEAR(second.value(), 16.0 * kMiB / rate, 1e-9);  // pages already touched
  std::printf("h100-host model: 16 MiB pageable memcpy first %.3f ms, warm %.3f ms (%.2f GB/s)\n",
              first.value() * 1e3, second.value() * 1e3, 16.0 * kMiB / second.value() / 1e9);
}

TEST_F(CopyHostTest, HugeUntouchedCopyStaysSparseAndCostsVirtualTimeOnly) {
  auto src = Alloc(64 * kGiB);
  auto dst = Alloc(64 * kGiB);
  const auto wall = std::chrono::steady_clock::now();
  auto r = platform->CopyHost(*dst, 0, *src, 0, 64 * kGiB);
  ASSERT_TRUE(r.ok());
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
  auto& anon = dynamic_cast<SimAnonymousMemory&>(*dst);
  EXPECT_EQ(anon.stored_pages(), 0u);
  EXPECT_EQ(anon.touched_pages(), 64 * kGiB / 4096);
  EXPECT_GT(r.value(), 1.0);  // several virtual seconds for 64 GiB at ~11 GB/s
  std::printf("64 GiB sparse copy: %.2f virtual s, %.3f wall s\n", r.value(), wall_s);
}

TEST_F(CopyHostTest, BoundsAreChecked) {
  auto src = Alloc(4096);
  auto dst = Alloc(8192);
  auto r = platform->CopyHost(*dst, 0, *src, 1, 4096);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("source"), std::string::npos);
  r = platform->CopyHost(*dst, 8192, *src, 0, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("destination"), std::string::npos);
}

TEST_F(CopyHostTest, FaultErrorReturnsAndMovesNothing) {
  ASSERT_TRUE(world->faults
                  ->AddRule(FaultRule::ErrorOnCall("host.memcpy", 2, Status::Errno(EIO, "injected")))
                  .ok());
  auto src = Alloc(4096);
  auto dst = Alloc(4096);
  const uint8_t one = 1;
  ASSERT_TRUE(src->Write(0, &one, 1).ok());
  EXPECT_TRUE(platform->CopyHost(*dst, 0, *src, 0, 4096).ok());
  ASSERT_TRUE(dst->Write(0, "\0", 1).ok());
  auto r = platform->CopyHost(*dst, 0, *src, 0, 4096);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), EIO);
  uint8_t b = 9;
  ASSERT_TRUE(dst->Read(0, &b, 1).ok());
  EXPECT_EQ(b, 0);
  EXPECT_TRUE(platform->CopyHost(*dst, 0, *src, 0, 4096).ok());  // third call fine
}

TEST_F(CopyHostTest, FaultDelayCorruptAndShort) {
  auto src = Alloc(1 * kMiB);
  auto dst = Alloc(1 * kMiB);
  const auto data = Pattern(1 * kMiB, 3);
  ASSERT_TRUE(src->Write(0, data.data(), data.size()).ok());
  const double base = platform->CopyHost(*dst, 0, *src, 0, kMiB).value();  // touches dst

  FaultRule delay;
  delay.point = "host.memcpy";
  delay.effect = FaultEffect::kDelay;
  delay.delay_seconds = 0.5;
  delay.max_fires = 1;
  ASSERT_TRUE(world->faults->AddRule(delay).ok());
  const double warm = base - 256 * world->spec.perf.page_fault_us * 1e-6;
  EXPECT_NEAR(platform->CopyHost(*dst, 0, *src, 0, kMiB).value(), warm + 0.5, 1e-9);

  FaultRule corrupt;
  corrupt.point = "host.memcpy";
  corrupt.effect = FaultEffect::kCorrupt;
  corrupt.max_fires = 1;
  ASSERT_TRUE(world->faults->AddRule(corrupt).ok());
  ASSERT_TRUE(platform->CopyHost(*dst, 0, *src, 0, kMiB).ok());
  std::vector<uint8_t> back(kMiB);
  ASSERT_TRUE(dst->Read(0, back.data(), back.size()).ok());
  int differing = 0;
  for (size_t i = 0; i < back.size(); ++i) differing += back[i] != data[i];
  EXPECT_EQ(differing, 1);

  FaultRule short_copy;
  short_copy.point = "host.memcpy";
  short_copy.effect = FaultEffect::kShortCopy;
  short_copy.short_fraction = 0.25;
  short_copy.max_fires = 1;
  ASSERT_TRUE(world->faults->AddRule(short_copy).ok());
  auto fresh = Alloc(kMiB);
  ASSERT_TRUE(platform->CopyHost(*fresh, 0, *src, 0, kMiB).ok());
  ASSERT_TRUE(fresh->Read(0, back.data(), back.size()).ok());
  EXPECT_TRUE(std::equal(back.begin(), back.begin() + kMiB / 4, data.begin()));
  EXPECT_EQ(back[kMiB / 4], 0);
  EXPECT_EQ(back[kMiB - 1], 0);
}

}  // namespace
}  // namespace resmem::sim
