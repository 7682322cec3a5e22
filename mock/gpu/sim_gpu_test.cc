// Tests of the CUDA model: one per rule of cuda_profile.cc's table, with the cited numbers.
#include "mock/gpu/sim_gpu.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <memory>
#include <vector>

namespace resmem::sim {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;

// Host memory that presents whatever facts a test gives it. Small spans keep real bytes; large
// ones (store = false) read as zeros and drop writes. A read past `sigbus_from` fails as SIGBUS.
class FakeMemory : public HostMemory {
 public:
  FakeMemory(MappingFacts facts, uint64_t address = 0, bool store = true)
      : facts_(std::move(facts)), address_(address) {
    if (store) bytes_.resize(facts_.length);
  }
  uint64_t size() const override { return facts_.length; }
  const MappingFacts& facts() const override { return facts_; }
  uint64_t address() const override { return address_; }
  Status Read(uint64_t offset, void* out, uint64_t len) override {
    RESMEM_RETURN_IF_ERROR(CheckSpan(*this, offset, len, "fake read"));
    if (offset + len > sigbus_from)
      return Status::Signal(SIGBUS, "fake: SIGBUS reading past " + std::to_string(sigbus_from));
    if (bytes_.empty()) {
      std::memset(out, 0, len);
    } else {
      std::memcpy(out, bytes_.data() + offset, len);
    }
    return Status::Ok();
  }
  Status Write(uint64_t offset, const void* in, uint64_t len) override {
    RESMEM_RETURN_IF_ERROR(CheckSpan(*this, offset, len, "fake write"));
    if (!bytes_.empty()) std::memcpy(bytes_.data() + offset, in, len);
    return Status::Ok();
  }
  std::string Describe() const override { return "fake " + facts_.Describe(); }
  std::vector<uint8_t>& bytes() { return bytes_; }
  uint64_t sigbus_from = UINT64_MAX;

 private:
  MappingFacts facts_;
  uint64_t address_;
  std::vector<uint8_t> bytes_;
};

MappingFacts Anonymous(uint64_t len) {
  MappingFacts f;
  f.length = len;
  f.backing = Backing::kAnonymous;
  return f;
}

// What remap_pfn_range makes: VM_IO|VM_PFNMAP, shared, contiguous device memory.
MappingFacts Pfnmap(uint64_t len, MemoryType type = MemoryType::kWriteBack) {
  MappingFacts f;
  f.length = len;
  f.shared = true;
  f.vm_io = true;
  f.vm_pfnmap = true;
  f.backing = Backing::kDevicePfn;
  f.physically_contiguous = true;
  f.phys_addr = 0x100000000ull;
  f.memory_type = type;
  return f;
}

struct Fixture {
  explicit Fixture(const std::string& profile_name, uint64_t seed = 1, SimGpuOptions options = {}) {
    auto p = CudaProfileByName(profile_name);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    profile = p.value();
    clock = std::make_shared<VirtualClock>();
    faults = std::make_shared<FaultInjector>(seed);
    gpu = MakeSimGpu(profile, profile.default_host, clock, faults, options);
  }
  CudaProfile profile;
  std::shared_ptr<VirtualClock> clock;
  std::shared_ptr<FaultInjector> faults;
  std::unique_ptr<Gpu> gpu;
};

int CodeOf(const Status& s) { return s.ok() ? 0 : s.code(); }

// Within 15% of the measured range [lo, hi].
void ExpectNearRange(double value, double lo, double hi, const char* what) {
  EXPECT_GE(value, 0.85 * lo) << what;
  EXPECT_LE(value, 1.15 * hi) << what;
}

Result<CopyStats> CopyOnce(Fixture& fx, HostMemory& host, uint64_t bytes,
                           CopyDirection dir = CopyDirection::kHostToDevice) {
  auto dev = fx.gpu->AllocDevice(bytes);
  if (!dev.ok()) return dev.status();
  return fx.gpu->Copy(dir, host, 0, *dev.value(), 0, bytes);
}

// ---------------------------------------------------------------- profiles
TEST(CudaProfileTest, UnknownNameIsRefusedWithTheKnownOnes) {
  auto p = CudaProfileByName("cuda-12.0");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("cuda-4.1-r285"), std::string::npos);
  EXPECT_NE(p.status().message().find("cuda-13.0-r580"), std::string::npos);
  for (const auto& n : CudaProfileNames()) EXPECT_TRUE(CudaProfileByName(n).ok()) << n;
}

// ---------------------------------------------------------------- cuda-4.1-r285 (seed 000)
TEST(Cuda41Test, PfnmapBlockRegistrationIsUnknown30) {
  Fixture fx("cuda-4.1-r285");
  FakeMemory map(Pfnmap(188ull * 1000 * 1000 * 1000), 0x7f0000000000ull, false);
  Status st = fx.gpu->Register(map, 0, 16 * kMiB, kRegisterDefault);
  EXPECT_EQ(st.space(), ErrorSpace::kCuda);
  EXPECT_EQ(st.code(), 30);
  EXPECT_EQ(CudaErrorName("cuda-4.1-r285", st.code()), "cudaErrorUnknown");
}

TEST(Cuda41Test, WholeReservationIsOutOfMemoryBeforeThePfnmapCheck) {
  Fixture fx("cuda-4.1-r285");  // default MemTotal: mem=4G leaves ~3 GB
  FakeMemory map(Pfnmap(188ull * 1000 * 1000 * 1000), 0x7f0000000000ull, false);
  EXPECT_EQ(CodeOf(fx.gpu->Register(map, 0, map.size(), kRegisterDefault)), 2);
}

TEST(Cuda41Test, MemTotalComesFromOptions) {
  SimGpuOptions o;
  o.host_mem_total = 200 * kGiB;  // a host booted without mem=: the size check passes
  Fixture fx("cuda-4.1-r285", 1, o);
  FakeMemory map(Pfnmap(188ull * 1000 * 1000 * 1000), 0x7f0000000000ull, false);
  EXPECT_EQ(CodeOf(fx.gpu->Register(map, 0, map.size(), kRegisterDefault)), 30);
}

TEST(Cuda41Test, IoMemoryAndReadOnlyFlagsAreUnknown11) {
  Fixture fx("cuda-4.1-r285");
  FakeMemory map(Pfnmap(64 * kMiB), 0x7f0000000000ull, false);
  EXPECT_EQ(CodeOf(fx.gpu->Register(map, 0, 16 * kMiB, kRegisterIoMemory)), 11);
  FakeMemory anon(Anonymous(16 * kMiB), 0x10000000, false);
  EXPECT_EQ(CodeOf(fx.gpu->Register(anon, 0, 16 * kMiB, kRegisterReadOnly)), 11);
  EXPECT_EQ(CodeOf(fx.gpu->Register(anon, 0, 16 * kMiB, kRegisterPortable)), 0);
}

TEST(Cuda41Test, PinnedHostToDeviceAtSeedRate) {
  Fixture fx("cuda-4.1-r285");
  auto pinned = fx.gpu->AllocPinned(16 * kMiB, 0);
  ASSERT_TRUE(pinned.ok());
  const double t0 = fx.clock->NowSeconds();
  auto st = CopyOnce(fx, *pinned.value(), 16 * kMiB);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(st->path, "pinned-dma");
  ExpectNearRange(st->GBps(), 5.685, 5.720, "seed 000 case C");
  EXPECT_NEAR(fx.clock->NowSeconds() - t0, st->seconds, 1e-12);
}

TEST(Cuda41Test, PageableWriteBackStagedAtSeedRate) {
  Fixture fx("cuda-4.1-r285");
  FakeMemory map(Pfnmap(64ull * kGiB, MemoryType::kWriteBack), 0x7f0000000000ull, false);
  auto st = CopyOnce(fx, map, 16 * kMiB);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(st->path, "pageable-staged");
  ExpectNearRange(st->GBps(), 3.733, 3.839, "seed 000 case B, <= 64 GB reserved");
}

TEST(Cuda41Test, PageableUncachedStagedAtSeedRate) {
  Fixture fx("cuda-4.1-r285");
  FakeMemory map(Pfnmap(188ull * kGiB, MemoryType::kUncachedMinus), 0x7f0000000000ull, false);
  auto st = CopyOnce(fx, map, 16 * kMiB);
  ASSERT_TRUE(st.ok());
  ExpectNearRange(st->GBps(), 0.14948, 0.15038, "seed 000 case B, 128/188 GB reserved");
}

TEST(Cuda41Test, StagedRateFollowsTheGivenHostNotConstants) {
  auto p = CudaProfileByName("cuda-4.1-r285").value();
  HostPerf slow = p.default_host, fast = p.default_host;
  slow.wb_copy_gbps = 2.0;
  fast.wb_copy_gbps = 4.0;
  const uint64_t n = 16 * kMiB;
  const double t_slow = StagedCopySeconds(p, slow, CopyDirection::kHostToDevice, MemoryType::kWriteBack, n);
  const double t_fast = StagedCopySeconds(p, fast, CopyDirection::kHostToDevice, MemoryType::kWriteBack, n);
  EXPECT_NEAR(n / t_slow / 1e9, 2.0 * 0.95, 1e-9);
  EXPECT_NEAR(n / t_fast / 1e9, 4.0 * 0.95, 1e-9);
  HostPerf uc = p.default_host;
  uc.uc_load_latency_ns = 196;  // twice the latency: half the UC rate
  EXPECT_NEAR(StagedCopySeconds(p, uc, CopyDirection::kHostToDevice, MemoryType::kUncached, n) /
                  StagedCopySeconds(p, p.default_host, CopyDirection::kHostToDevice,
                                    MemoryType::kUncached, n),
              2.0, 1e-9);
}

TEST(Cuda41Test, NonPortablePinnedFromAnotherContextIsTwentyTimesSlower) {
  Fixture fx("cuda-4.1-r285");
  auto plain = fx.gpu->AllocPinned(16 * kMiB, 0);
  auto portable = fx.gpu->AllocPinned(16 * kMiB, kRegisterPortable);
  ASSERT_TRUE(plain.ok() && portable.ok());
  auto ctx = fx.gpu->CreateContext(0);
  ASSERT_TRUE(ctx.ok());
  ASSERT_TRUE(fx.gpu->UseContext(ctx.value()).ok());
  auto slow = CopyOnce(fx, *plain.value(), 16 * kMiB);
  auto fast = CopyOnce(fx, *portable.value(), 16 * kMiB);
  ASSERT_TRUE(slow.ok() && fast.ok());
  EXPECT_EQ(slow->path, "pageable-staged");
  EXPECT_EQ(fast->path, "pinned-dma");
  const double ratio = slow->seconds / fast->seconds;
  EXPECT_GE(ratio, 20.0);   // seed 000: "20-200x slower"
  EXPECT_LE(ratio, 200.0);
  // Registered memory follows the same rule.
  FakeMemory anon(Anonymous(16 * kMiB), 0x20000000, false);
  ASSERT_TRUE(fx.gpu->UseContext(0).ok());
  ASSERT_TRUE(fx.gpu->Register(anon, 0, 16 * kMiB, 0).ok());
  ASSERT_TRUE(fx.gpu->UseContext(ctx.value()).ok());
  auto reg = CopyOnce(fx, anon, 16 * kMiB);
  ASSERT_TRUE(reg.ok());
  EXPECT_EQ(reg->path, "pageable-staged");
}

// ---------------------------------------------------------------- cuda-13.0-r580 (FACTS.md)
TEST(Cuda13Test, PfnmapWithDefaultFlagsIsInvalidValueAndIoMemoryWorks) {
  Fixture fx("cuda-13.0-r580");
  FakeMemory map(Pfnmap(1 * kGiB), 0x7f0000000000ull, false);
  EXPECT_EQ(CodeOf(fx.gpu->Register(map, 0, 16 * kMiB, kRegisterDefault)), 1);
  EXPECT_EQ(CodeOf(fx.gpu->Register(map, 0, 16 * kMiB, kRegisterIoMemory)), 0);
  auto st = CopyOnce(fx, map, 16 * kMiB);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->path, "pinned-dma");
}

TEST(Cuda13Test, IoMemoryOnOrdinaryOrScatteredMemoryIsInvalidValue) {
  Fixture fx("cuda-13.0-r580");
  FakeMemory anon(Anonymous(16 * kMiB), 0x10000000, false);
  EXPECT_EQ(CodeOf(fx.gpu->Register(anon, 0, 16 * kMiB, kRegisterIoMemory)), 1);
  MappingFacts scattered = Pfnmap(16 * kMiB);
  scattered.physically_contiguous = false;
  FakeMemory pf(scattered, 0x30000000, false);
  EXPECT_EQ(CodeOf(fx.gpu->Register(pf, 0, 16 * kMiB, kRegisterIoMemory)), 1);
}

TEST(Cuda13Test, OrdinaryBackingsRegister) {
  Fixture fx("cuda-13.0-r580");
  uint64_t va = 0x100000000ull;
  for (Backing b : {Backing::kAnonymous, Backing::kShmem, Backing::kHugetlb, Backing::kDevicePages}) {
    MappingFacts f = Anonymous(16 * kMiB);
    f.backing = b;
    f.shared = (b == Backing::kShmem || b == Backing::kDevicePages);
    FakeMemory m(f, va, false);
    va += kGiB;
    EXPECT_EQ(CodeOf(fx.gpu->Register(m, 0, 16 * kMiB, 0)), 0) << BackingName(b);
  }
  MappingFacts thp = Anonymous(64 * kMiB);
  thp.page_size = 2 * kMiB;  // THP-backed anonymous memory
  FakeMemory t(thp, va, false);
  EXPECT_EQ(CodeOf(fx.gpu->Register(t, 0, 64 * kMiB, 0)), 0);
}

TEST(Cuda13Test, WritableSharedFileIsRefusedPrivateIsNot) {
  Fixture fx("cuda-13.0-r580");
  MappingFacts f = Anonymous(16 * kMiB);
  f.backing = Backing::kFile;
  f.shared = true;
  FakeMemory shared_file(f, 0x10000000, false);
  EXPECT_EQ(CodeOf(fx.gpu->Register(shared_file, 0, 16 * kMiB, 0)), 1);
  f.shared = false;
  FakeMemory private_file(f, 0x20000000, false);
  EXPECT_EQ(CodeOf(fx.gpu->Register(private_file, 0, 16 * kMiB, 0)), 0);
  f.shared = true;
  f.backing = Backing::kFuse;
  FakeMemory fuse_file(f, 0x30000000, false);
  EXPECT_EQ(CodeOf(fx.gpu->Register(fuse_file, 0, 16 * kMiB, 0)), 1);
}

// h100.json (2026-11-21): a writable MAP_SHARED disk-file mapping registers with ReadOnly (the
// driver pins it without write access), and the refusal without it names that way out.
TEST(Cuda13Test, WritableSharedFileRegistersWithReadOnly) {
  Fixture fx("cuda-13.0-r580");
  MappingFacts f = Anonymous(16 * kMiB);
  f.backing = Backing::kFile;
  f.shared = true;
  FakeMemory shared_file(f, 0x10000000, false);
  Status refused = fx.gpu->Register(shared_file, 0, 16 * kMiB, kRegisterPortable);
  EXPECT_EQ(CodeOf(refused), 1);
  EXPECT_NE(refused.message().find("ReadOnly"), std::string::npos) << refused.message();
  EXPECT_EQ(CodeOf(fx.gpu->Register(shared_file, 0, 16 * kMiB, kRegisterReadOnly)), 0);
  f.backing = Backing::kFuse;
  FakeMemory fuse_file(f, 0x20000000, false);
  EXPECT_EQ(CodeOf(fx.gpu->Register(fuse_file, 0, 16 * kMiB,
                                    kRegisterReadOnly | kRegisterPortable)),
            0);
  // The 2012 driver had no ReadOnly flag: unknown flag, whatever the mapping.
  Fixture old("cuda-4.1-r285");
  f.backing = Backing::kFile;
  FakeMemory old_file(f, 0x10000000, false);
  EXPECT_EQ(CodeOf(old.gpu->Register(old_file, 0, 16 * kMiB, kRegisterReadOnly)), 11);
  EXPECT_EQ(CodeOf(old.gpu->Register(old_file, 0, 16 * kMiB, 0)), 0);
}

// h100.json (2026-11-21): IoMemory on the read-only [vvar] page (VM_IO|VM_PFNMAP, facts from
// smaps, so contiguity unknown) -> 0 without ReadOnly; ReadOnly alone does not help a pfnmap.
TEST(Cuda13Test, IoMemoryOnAReadOnlyPfnmapPageNeedsNoReadOnlyFlag) {
  Fixture fx("cuda-13.0-r580");
  MappingFacts vvar = Pfnmap(4096);
  vvar.shared = false;
  vvar.writable = false;
  vvar.physically_contiguous = false;
  FakeMemory page(vvar, 0x7fff0000, false);
  EXPECT_EQ(CodeOf(fx.gpu->Register(page, 0, 4096, kRegisterIoMemory)), 0);
  ASSERT_EQ(CodeOf(fx.gpu->Unregister(page, 0)), 0);
  EXPECT_EQ(CodeOf(fx.gpu->Register(page, 0, 4096, kRegisterReadOnly)), 1);
  EXPECT_EQ(CodeOf(fx.gpu->Register(page, 0, 4096, 0)), 1);
  // More than one page of unknown contiguity is still refused, also when a small span crosses
  // a page boundary (the driver compares each page's PFN with the previous one).
  MappingFacts two = vvar;
  two.length = 2 * 4096;
  FakeMemory pages(two, 0x7ffe0000, false);
  EXPECT_EQ(CodeOf(fx.gpu->Register(pages, 0, 2 * 4096, kRegisterIoMemory)), 1);
  EXPECT_EQ(CodeOf(fx.gpu->Register(pages, 4000, 200, kRegisterIoMemory)), 1);
  EXPECT_EQ(CodeOf(fx.gpu->Register(pages, 4096, 4096, kRegisterIoMemory)), 0);
}

// The whole registration matrix of h100.json (2026-11-21): memory kind x flags, the facts as
// smaps reported them (kinds and codes transcribed from the profile; every size gave the same
// code). engine/calibrate:fidelity_test replays the file itself.
TEST(Cuda13Test, H100RegistrationMatrix) {
  Fixture fx("cuda-13.0-r580");
  auto facts = [](Backing b, bool shared, bool writable) {
    MappingFacts f = Anonymous(64 << 10);
    f.backing = b;
    f.shared = shared;
    f.writable = writable;
    return f;
  };
  MappingFacts vvar = facts(Backing::kDevicePfn, false, false);
  vvar.length = 4096;
  vvar.vm_io = vvar.vm_pfnmap = true;
  struct Row {
    const char* kind;
    MappingFacts facts;
    int codes[5];  // default, portable, mapped, iomemory, readonly
  };
  const Row rows[] = {
      {"anon", facts(Backing::kAnonymous, false, true), {0, 0, 0, 1, 0}},
      {"anon-readonly", facts(Backing::kAnonymous, false, false), {1, 1, 1, 1, 0}},
      {"memfd/shm", facts(Backing::kShmem, true, true), {0, 0, 0, 1, 0}},
      {"hugetlb", facts(Backing::kHugetlb, false, true), {0, 0, 0, 1, 0}},
      {"file", facts(Backing::kFile, true, true), {1, 1, 1, 1, 0}},
      {"file-private", facts(Backing::kFile, false, true), {0, 0, 0, 1, 0}},
      {"pfnmap-vvar", vvar, {1, 1, 1, 0, 1}},
  };
  const uint32_t flags[5] = {kRegisterDefault, kRegisterPortable, kRegisterMapped,
                             kRegisterIoMemory, kRegisterReadOnly};
  for (const Row& row : rows) {
    for (int i = 0; i < 5; ++i) {
      FakeMemory mem(row.facts, 0, false);  // a fresh span per case, as the calibration maps one
      Status st = fx.gpu->Register(mem, 0, mem.size(), flags[i]);
      EXPECT_EQ(CodeOf(st), row.codes[i])
          << row.kind << " " << RegisterFlagsName(flags[i]) << ": " << st.ToString();
      if (st.ok()) {
        EXPECT_EQ(CodeOf(fx.gpu->Unregister(mem, 0)), 0);
      }
    }
  }
}

TEST(Cuda13Test, ReadOnlyMappingNeedsReadOnlyFlag) {
  Fixture fx("cuda-13.0-r580");
  MappingFacts f = Anonymous(16 * kMiB);
  f.writable = false;
  FakeMemory ro(f, 0x10000000, false);
  Status st = fx.gpu->Register(ro, 0, 16 * kMiB, 0);
  EXPECT_EQ(CodeOf(st), 1);
  EXPECT_NE(st.message().find("ReadOnly"), std::string::npos) << st.message();
  EXPECT_EQ(CodeOf(fx.gpu->Register(ro, 0, 16 * kMiB, kRegisterReadOnly)), 0);
}

TEST(Cuda13Test, OneCallLargerThanMemTotalIsOutOfMemoryChunksWork) {
  SimGpuOptions o;
  o.host_mem_total = 131981020ull * 1024;  // the 128 GiB GPU machine's MemTotal
  Fixture fx("cuda-13.0-r580", 1, o);
  FakeMemory big(Anonymous(1024 * kGiB), 0x100000000000ull, false);
  EXPECT_EQ(CodeOf(fx.gpu->Register(big, 0, 1024 * kGiB, 0)), 2);
  EXPECT_EQ(CodeOf(fx.gpu->Register(big, 0, 256 * kGiB, 0)), 2);
  EXPECT_EQ(CodeOf(fx.gpu->Register(big, 0, 126 * kGiB, 0)), 2);
  const double t0 = fx.clock->NowSeconds();
  EXPECT_EQ(CodeOf(fx.gpu->Register(big, 0, 125 * kGiB, 0)), 0);
  EXPECT_GT(fx.clock->NowSeconds() - t0, 30.0);  // 125 GiB pins at ~3.2 GB/s: ~42 s
  EXPECT_EQ(CodeOf(fx.gpu->Register(big, 125 * kGiB, 100 * kGiB, 0)), 0);  // a second chunk
}

TEST(Cuda13Test, HalfTebibyteInOneCallFailsEvenWithEnoughMemory) {
  SimGpuOptions o;
  o.host_mem_total = 2048 * kGiB;
  Fixture fx("cuda-13.0-r580", 1, o);
  FakeMemory big(Anonymous(1024 * kGiB), 0x100000000000ull, false);
  EXPECT_EQ(CodeOf(fx.gpu->Register(big, 0, 512 * kGiB, 0)), 2);
  EXPECT_EQ(CodeOf(fx.gpu->Register(big, 0, 511 * kGiB, 0)), 0);
  EXPECT_EQ(CodeOf(fx.gpu->Register(big, 511 * kGiB, 511 * kGiB, 0)), 0);
}

TEST(Cuda13Test, OverlapsAreAlreadyRegistered712) {
  Fixture fx("cuda-13.0-r580");
  FakeMemory m(Anonymous(64 * kMiB), 0x10000000, false);
  ASSERT_EQ(CodeOf(fx.gpu->Register(m, 0, 32 * kMiB, 0)), 0);
  EXPECT_EQ(CodeOf(fx.gpu->Register(m, 0, 32 * kMiB, 0)), 712);          // same range
  EXPECT_EQ(CodeOf(fx.gpu->Register(m, 4 * kMiB, 4 * kMiB, 0)), 712);    // sub-range
  EXPECT_EQ(CodeOf(fx.gpu->Register(m, 16 * kMiB, 32 * kMiB, 0)), 712);  // overlap
  EXPECT_EQ(CodeOf(fx.gpu->Register(m, 32 * kMiB, 32 * kMiB, 0)), 0);    // adjacent is fine
  EXPECT_EQ(CudaErrorName("cuda-13.0-r580", 712), "cudaErrorHostMemoryAlreadyRegistered");
}

TEST(Cuda13Test, UnregisterRules) {
  Fixture fx("cuda-13.0-r580");
  FakeMemory m(Anonymous(64 * kMiB), 0x10000000, false);
  FakeMemory other(Anonymous(64 * kMiB), 0x20000000, false);
  ASSERT_EQ(CodeOf(fx.gpu->Register(m, 0, 32 * kMiB, 0)), 0);
  EXPECT_EQ(CodeOf(fx.gpu->Unregister(other, 0)), 713);       // unknown pointer
  EXPECT_EQ(CodeOf(fx.gpu->Unregister(m, 4096)), 1);          // interior pointer
  EXPECT_EQ(CodeOf(fx.gpu->Unregister(m, 0)), 0);
  EXPECT_EQ(CodeOf(fx.gpu->Unregister(m, 0)), 713);           // already gone
  EXPECT_EQ(CodeOf(fx.gpu->Register(m, 0, 0, 0)), 1);         // size 0
  EXPECT_EQ(CodeOf(fx.gpu->Register(m, 0, 4096, 0x10)), 1);   // unknown flag
}

TEST(Cuda13Test, UnalignedPointerRegistersAndCopiesCorrectly) {
  Fixture fx("cuda-13.0-r580");
  FakeMemory m(Anonymous(1 * kMiB), 0x10000000);
  for (size_t i = 0; i < m.bytes().size(); ++i) m.bytes()[i] = static_cast<uint8_t>(i * 7 + 3);
  for (uint64_t off : {1ull, 100ull}) {
    ASSERT_EQ(CodeOf(fx.gpu->Register(m, off, 4096, 0)), 0) << off;
    auto dev = fx.gpu->AllocDevice(4096);
    ASSERT_TRUE(dev.ok());
    auto st = fx.gpu->Copy(CopyDirection::kHostToDevice, m, off, *dev.value(), 0, 4096);
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(st->path, "pinned-dma");
    EXPECT_EQ(fx.gpu->DeviceChecksum(*dev.value(), 0, 4096).value(),
              Fnv1a64(m.bytes().data() + off, 4096));
    ASSERT_EQ(CodeOf(fx.gpu->Unregister(m, off)), 0);
  }
}

TEST(Cuda13Test, RegistrationPinsUntouchedMemoryAtThreePointTwoGBps) {
  Fixture fx("cuda-13.0-r580");
  FakeMemory m(Anonymous(8 * kGiB), 0x100000000ull, false);
  double t0 = fx.clock->NowSeconds();
  ASSERT_EQ(CodeOf(fx.gpu->Register(m, 0, 8 * kGiB, 0)), 0);
  ExpectNearRange(fx.clock->NowSeconds() - t0, 2.65, 2.65, "FACTS: 8 GiB took 2.65 s");
  // Resident (locked) pages: FACTS 64 MiB touched 2-4 ms.
  MappingFacts locked = Anonymous(64 * kMiB);
  locked.locked = true;
  FakeMemory l(locked, 0x400000000ull, false);
  t0 = fx.clock->NowSeconds();
  ASSERT_EQ(CodeOf(fx.gpu->Register(l, 0, 64 * kMiB, 0)), 0);
  ExpectNearRange(fx.clock->NowSeconds() - t0, 0.002, 0.004, "FACTS: touched 64 MiB 2-4 ms");
  // A refused registration costs no pinning time.
  t0 = fx.clock->NowSeconds();
  ASSERT_EQ(CodeOf(fx.gpu->Register(m, 0, 8 * kGiB, 0)), 712);
  EXPECT_EQ(fx.clock->NowSeconds(), t0);
}

TEST(Cuda13Test, PinnedAndRegisteredCopiesAtLinkRate) {
  Fixture fx("cuda-13.0-r580");
  for (uint64_t n : {16 * kMiB, 256 * kMiB}) {
    auto pinned = fx.gpu->AllocPinned(n, 0);
    ASSERT_TRUE(pinned.ok());
    auto h2d = CopyOnce(fx, *pinned.value(), n);
    ASSERT_TRUE(h2d.ok());
    ExpectNearRange(h2d->GBps(), 53.39, 54.79, "h100-range.json pinned H2D medians");
    auto d2h = CopyOnce(fx, *pinned.value(), n, CopyDirection::kDeviceToHost);
    ASSERT_TRUE(d2h.ok());
    ExpectNearRange(d2h->GBps(), 53.89, 55.00, "h100-range.json pinned D2H medians");
  }
  FakeMemory shm(Anonymous(16 * kMiB), 0x10000000, false);
  ASSERT_TRUE(fx.gpu->Register(shm, 0, 16 * kMiB, 0).ok());
  auto reg = CopyOnce(fx, shm, 16 * kMiB);
  ASSERT_TRUE(reg.ok());
  EXPECT_EQ(reg->path, "pinned-dma");
  ExpectNearRange(reg->GBps(), 54.0, 55.0, "FACTS registered malloc or /dev/shm");
}

// Pageable write-back copies against the medians of twelve calibration runs (h100-range.json):
// H2D 16 MiB 13.29, 256 MiB 8.02; D2H 16 MiB 13.77, 256 MiB 14.27 GB/s (cuda_profile.cc).
TEST(Cuda13Test, PageableCopiesMatchTheH100CalibrationMedians) {
  Fixture fx("cuda-13.0-r580");
  FakeMemory small(Anonymous(16 * kMiB), 0x10000000, false);
  FakeMemory large(Anonymous(256 * kMiB), 0x20000000, false);
  auto h2d_s = CopyOnce(fx, small, 16 * kMiB);
  auto h2d_l = CopyOnce(fx, large, 256 * kMiB);
  auto d2h_s = CopyOnce(fx, small, 16 * kMiB, CopyDirection::kDeviceToHost);
  auto d2h_l = CopyOnce(fx, large, 256 * kMiB, CopyDirection::kDeviceToHost);
  ASSERT_TRUE(h2d_s.ok() && h2d_l.ok() && d2h_s.ok() && d2h_l.ok());
  EXPECT_EQ(h2d_s->path, "pageable-staged");
  EXPECT_EQ(d2h_l->path, "pageable-staged");
  EXPECT_NEAR(h2d_s->GBps(), 13.29, 0.05) << "median of 12 runs, pageable H2D 16 MiB";
  EXPECT_NEAR(h2d_l->GBps(), 8.02, 0.05) << "median of 12 runs, pageable H2D 256 MiB";
  EXPECT_NEAR(d2h_s->GBps(), 14.02, 0.05) << "mean of the medians 13.77 and 14.27 (D2H)";
  // The shape, not only the numbers: H2D slows past the staging buffers, D2H does not.
  EXPECT_GT(h2d_s->GBps(), 1.3 * h2d_l->GBps());
  EXPECT_NEAR(d2h_s->GBps(), d2h_l->GBps(), 1e-9);
  // Still far below pinned DMA: the reason to register.
  EXPECT_LT(d2h_s->GBps(), 0.5 * fx.profile.link_d2h_gbps);
  std::printf("cuda-13.0-r580 pageable: H2D 16 MiB %.2f, 256 MiB %.2f; D2H 16 MiB %.2f, "
              "256 MiB %.2f GB/s\n",
              h2d_s->GBps(), h2d_l->GBps(), d2h_s->GBps(), d2h_l->GBps());
}

// The profile carries the measured spread of every copy class calibrate measures, and the
// model's own rate (on its default host, as the fidelity report replays it) lies inside each,
// with no margin: a refit that leaves the measured range fails here.
TEST(Cuda13Test, ModelRateLiesInsideEveryMeasuredRange) {
  auto p = CudaProfileByName("cuda-13.0-r580").value();
  ASSERT_EQ(p.measured_copies.size(), 12u) << "3 classes x 2 directions x 2 sizes";
  for (const auto& c : p.measured_copies) {
    const double model = ModelledGbps(p, p.default_host, c);
    const std::string what = c.copy_class + (c.direction == CopyDirection::kHostToDevice ? " H2D " : " D2H ") +
                             std::to_string(c.bytes >> 20) + " MiB";
    EXPECT_LE(c.min_gbps, c.median_gbps) << what;
    EXPECT_LE(c.median_gbps, c.max_gbps) << what;
    EXPECT_GE(c.runs, 3) << what << ": a range needs several runs";
    EXPECT_GE(model, c.min_gbps) << what << ": model below the measured range";
    EXPECT_LE(model, c.max_gbps) << what << ": model above the measured range";
    std::printf("%-22s measured %.2f-%.2f (median %.2f, %d runs), model %.2f GB/s\n",
                what.c_str(), c.min_gbps, c.max_gbps, c.median_gbps, c.runs, model);
  }
  // The 2012 profile has no measured ranges (seed 000 gives single figures only).
  EXPECT_TRUE(CudaProfileByName("cuda-4.1-r285").value().measured_copies.empty());
}

// The fit is a multiple of the host's memcpy rate (it follows the machine), never above the
// link, and only for write-back memory: uncached memory keeps the efficiency model.
TEST(Cuda13Test, PageableFitFollowsTheHostAndSparesUncachedMemory) {
  auto p = CudaProfileByName("cuda-13.0-r580").value();
  const uint64_t n = 16 * kMiB;
  HostPerf slow = p.default_host, fast = p.default_host;
  slow.wb_copy_gbps = 5;
  fast.wb_copy_gbps = 100;  // faster than the link
  const auto rate = [&](const HostPerf& h, CopyDirection d, MemoryType t) {
    return n / StagedCopySeconds(p, h, d, t, n) / 1e9;
  };
  EXPECT_NEAR(rate(slow, CopyDirection::kHostToDevice, MemoryType::kWriteBack),
              5 * p.pageable_wb_h2d.overlapped_ratio, 1e-9);
  EXPECT_NEAR(rate(slow, CopyDirection::kDeviceToHost, MemoryType::kWriteBack),
              5 * p.pageable_wb_d2h.overlapped_ratio, 1e-9);
  EXPECT_NEAR(rate(fast, CopyDirection::kHostToDevice, MemoryType::kWriteBack), p.link_h2d_gbps,
              1e-9);
  // Uncached: 16-byte loads at 100 ns each, times the 0.95 pipeline efficiency.
  HostPerf uc = p.default_host;
  uc.uc_load_latency_ns = 100;
  EXPECT_NEAR(rate(uc, CopyDirection::kHostToDevice, MemoryType::kUncached), 0.16 * 0.95, 1e-9);
}

TEST(Cuda13Test, SecondContextHasNoSlowdown) {
  Fixture fx("cuda-13.0-r580");
  FakeMemory m(Anonymous(16 * kMiB), 0x10000000, false);
  ASSERT_TRUE(fx.gpu->Register(m, 0, 16 * kMiB, 0).ok());
  auto ctx = fx.gpu->CreateContext(0);
  ASSERT_TRUE(ctx.ok());
  ASSERT_TRUE(fx.gpu->UseContext(ctx.value()).ok());
  auto st = CopyOnce(fx, m, 16 * kMiB);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->path, "pinned-dma");
  ExpectNearRange(st->GBps(), 49, 51, "FACTS registered in one context, copied in another");
  // Registrations are per context: this context has nothing to unregister.
  EXPECT_EQ(CodeOf(fx.gpu->Unregister(m, 0)), 713);
}

TEST(Cuda13Test, AttributesOfTheH100) {
  Fixture fx("cuda-13.0-r580");
  auto a = fx.gpu->Attributes(0);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(a->host_register_supported, 1);
  EXPECT_EQ(a->pageable_memory_access_uses_host_page_tables, 0);
  EXPECT_EQ(a->read_only_host_register_supported, 1);
  EXPECT_EQ(a->pageable_memory_access, 0);
  EXPECT_EQ(a->async_engine_count, 3);
  EXPECT_EQ(CodeOf(fx.gpu->Attributes(1).status()), 101);
  EXPECT_EQ(fx.gpu->name(), "sim:cuda-13.0-r580");
}

// ---------------------------------------------------------------- both profiles
class BothProfiles : public ::testing::TestWithParam<std::string> {};

TEST_P(BothProfiles, BytesRoundTripAndChecksumAgrees) {
  Fixture fx(GetParam());
  FakeMemory src(Anonymous(3 * kMiB + 123), 0x10000000);
  DeterministicRng rng(42);
  for (auto& b : src.bytes()) b = static_cast<uint8_t>(rng.NextU64());
  auto dev = fx.gpu->AllocDevice(4 * kMiB);
  ASSERT_TRUE(dev.ok());
  auto st = fx.gpu->Copy(CopyDirection::kHostToDevice, src, 0, *dev.value(), 5, src.size());
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(st->bytes, src.size());
  EXPECT_EQ(fx.gpu->DeviceChecksum(*dev.value(), 5, src.size()).value(),
            Fnv1a64(src.bytes().data(), src.size()));
  FakeMemory dst(Anonymous(src.size()), 0x20000000);
  ASSERT_TRUE(fx.gpu->Copy(CopyDirection::kDeviceToHost, dst, 0, *dev.value(), 5, src.size()).ok());
  EXPECT_EQ(dst.bytes(), src.bytes());
}

// A copy whose source was never written moves no bytes (the sparse stores skip them), yet it
// overwrites what the destination held with zeros, in both directions, at unaligned offsets
// across chunks; a corrupt fault on such a copy still flips its byte.
TEST_P(BothProfiles, CopiesOfUnwrittenMemoryOverwriteWithZeros) {
  Fixture fx(GetParam(), 3);
  const uint64_t n = 3 * kMiB + 777;
  std::vector<uint8_t> data(n), back(n), zeros(n, 0);
  DeterministicRng rng(7);
  for (auto& b : data) b = static_cast<uint8_t>(rng.NextU64() | 1);
  auto fresh = fx.gpu->AllocPinned(4 * kMiB, 0).value();
  auto full = fx.gpu->AllocPinned(4 * kMiB, 0).value();
  ASSERT_TRUE(full->Write(0, data.data(), n).ok());
  auto dev = fx.gpu->AllocDevice(4 * kMiB).value();
  ASSERT_TRUE(fx.gpu->Copy(CopyDirection::kHostToDevice, *full, 0, *dev, 3, n).ok());
  ASSERT_TRUE(fx.gpu->Copy(CopyDirection::kHostToDevice, *fresh, 5, *dev, 3, n - 100).ok());
  EXPECT_EQ(fx.gpu->DeviceChecksum(*dev, 3, n - 100).value(), Fnv1a64(zeros.data(), n - 100));
  EXPECT_EQ(fx.gpu->DeviceChecksum(*dev, 3 + n - 100, 100).value(), Fnv1a64(data.data() + n - 100, 100));
  auto unwritten = fx.gpu->AllocDevice(4 * kMiB).value();
  ASSERT_TRUE(fx.gpu->Copy(CopyDirection::kDeviceToHost, *full, 11, *unwritten, 0, n - 11).ok());
  ASSERT_TRUE(full->Read(0, back.data(), n).ok());
  EXPECT_TRUE(std::equal(back.begin(), back.begin() + 11, data.begin()));
  EXPECT_TRUE(std::all_of(back.begin() + 11, back.end(), [](uint8_t b) { return b == 0; }));
  FaultRule corrupt = FaultRule::ErrorOnCall("gpu.copy", 4, Status::Cuda(fx.profile.error_unknown, "unused"));
  corrupt.effect = FaultEffect::kCorrupt;
  ASSERT_TRUE(fx.faults->AddRule(corrupt).ok());
  ASSERT_TRUE(fx.gpu->Copy(CopyDirection::kHostToDevice, *fresh, 0, *unwritten, 0, n).ok());  // call 4
  FakeMemory out(Anonymous(n), 0x20000000);
  ASSERT_TRUE(fx.gpu->Copy(CopyDirection::kDeviceToHost, out, 0, *unwritten, 0, n).ok());
  EXPECT_EQ(std::count_if(out.bytes().begin(), out.bytes().end(), [](uint8_t b) { return b != 0; }), 1);
}

TEST_P(BothProfiles, DeviceIsSparseAndBounded) {
  Fixture fx(GetParam());
  auto whole = fx.gpu->AllocDevice(fx.profile.device_memory);
  ASSERT_TRUE(whole.ok());
  auto more = fx.gpu->AllocDevice(1);
  EXPECT_EQ(CodeOf(more.status()), 2);
  std::vector<uint8_t> zeros(4096, 0);
  EXPECT_EQ(fx.gpu->DeviceChecksum(*whole.value(), fx.profile.device_memory - 4096, 4096).value(),
            Fnv1a64(zeros.data(), zeros.size()));
  whole.value().reset();
  EXPECT_TRUE(fx.gpu->AllocDevice(1).ok());  // freed on destruction
  auto dev = fx.gpu->AllocDevice(4096);
  FakeMemory src(Anonymous(4096), 0x10000000);
  auto st = fx.gpu->Copy(CopyDirection::kHostToDevice, src, 0, *dev.value(), 1, 4096);
  EXPECT_EQ(CodeOf(st.status()), fx.profile.error_invalid_value);  // past the buffer's end
}

TEST_P(BothProfiles, HostAccessFailurePropagates) {
  Fixture fx(GetParam());
  FakeMemory m(Anonymous(4 * kMiB), 0x10000000);
  m.sigbus_from = 2 * kMiB + 10;
  auto st = CopyOnce(fx, m, 4 * kMiB);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.status().space(), ErrorSpace::kSignal);
  EXPECT_EQ(st.status().code(), SIGBUS);
}

TEST_P(BothProfiles, CopyFaultEffects) {
  Fixture fx(GetParam(), 7);
  FakeMemory src(Anonymous(2 * kMiB), 0x10000000);
  for (size_t i = 0; i < src.bytes().size(); ++i) src.bytes()[i] = static_cast<uint8_t>(i);
  auto dev = fx.gpu->AllocDevice(2 * kMiB);
  ASSERT_TRUE(dev.ok());
  auto copy = [&] {
    return fx.gpu->Copy(CopyDirection::kHostToDevice, src, 0, *dev.value(), 0, src.size());
  };
  const FaultRule err =
      FaultRule::ErrorOnCall("gpu.copy", 1, Status::Cuda(fx.profile.error_unknown, "injected"));
  ASSERT_TRUE(fx.faults->AddRule(err).ok());
  FaultRule delay = err;
  delay.nth = 2;
  delay.effect = FaultEffect::kDelay;
  delay.delay_seconds = 0.5;
  ASSERT_TRUE(fx.faults->AddRule(delay).ok());
  FaultRule corrupt = err;
  corrupt.nth = 3;
  corrupt.effect = FaultEffect::kCorrupt;
  ASSERT_TRUE(fx.faults->AddRule(corrupt).ok());
  // Calls 4 and 5 below are a read-back and a clearing copy; call 6 is cut short.
  FaultRule shortc = err;
  shortc.nth = 6;
  shortc.effect = FaultEffect::kShortCopy;
  shortc.short_fraction = 0.25;
  ASSERT_TRUE(fx.faults->AddRule(shortc).ok());

  auto r1 = copy();  // error
  EXPECT_EQ(CodeOf(r1.status()), fx.profile.error_unknown);
  const double t0 = fx.clock->NowSeconds();
  auto r2 = copy();  // delay
  ASSERT_TRUE(r2.ok());
  EXPECT_GE(fx.clock->NowSeconds() - t0, 0.5);
  EXPECT_GE(r2->seconds, 0.5);
  auto r3 = copy();  // corrupt: exactly one byte differs
  ASSERT_TRUE(r3.ok());
  FakeMemory out(Anonymous(src.size()), 0x20000000);
  ASSERT_TRUE(fx.gpu->Copy(CopyDirection::kDeviceToHost, out, 0, *dev.value(), 0, src.size()).ok());
  int differing = 0;
  for (size_t i = 0; i < src.size(); ++i) differing += out.bytes()[i] != src.bytes()[i];
  EXPECT_EQ(differing, 1);
  // short: clear the device, then only a quarter arrives.
  FakeMemory zeros(Anonymous(src.size()), 0x30000000);
  ASSERT_TRUE(fx.gpu->Copy(CopyDirection::kHostToDevice, zeros, 0, *dev.value(), 0, src.size()).ok());
  auto r6 = copy();
  ASSERT_FALSE(r6.ok());
  EXPECT_NE(r6.status().message().find("short copy"), std::string::npos) << r6.status().message();
  ASSERT_TRUE(fx.gpu->Copy(CopyDirection::kDeviceToHost, out, 0, *dev.value(), 0, src.size()).ok());
  const uint64_t quarter = src.size() / 4;
  EXPECT_EQ(0, std::memcmp(out.bytes().data(), src.bytes().data(), quarter));
  for (size_t i = quarter; i < src.size(); ++i) ASSERT_EQ(out.bytes()[i], 0) << i;
}

TEST_P(BothProfiles, RegisterAllocAndChecksumFaults) {
  Fixture fx(GetParam());
  for (const char* point : {"gpu.register", "gpu.unregister", "gpu.alloc", "gpu.checksum"}) {
    FaultRule r;
    r.point = point;
    r.error = Status::Cuda(fx.profile.error_unknown, std::string("injected at ") + point);
    r.max_fires = 1;
    ASSERT_TRUE(fx.faults->AddRule(r).ok());
  }
  FakeMemory m(Anonymous(4 * kMiB), 0x10000000, false);
  EXPECT_EQ(CodeOf(fx.gpu->Register(m, 0, kMiB, 0)), fx.profile.error_unknown);
  EXPECT_EQ(CodeOf(fx.gpu->Register(m, 0, kMiB, 0)), 0);  // fired once
  EXPECT_EQ(CodeOf(fx.gpu->Unregister(m, 0)), fx.profile.error_unknown);
  EXPECT_EQ(CodeOf(fx.gpu->Unregister(m, 0)), 0);
  EXPECT_EQ(CodeOf(fx.gpu->AllocDevice(4096).status()), fx.profile.error_unknown);
  auto dev = fx.gpu->AllocDevice(4096);
  ASSERT_TRUE(dev.ok());
  EXPECT_EQ(CodeOf(fx.gpu->DeviceChecksum(*dev.value(), 0, 4096).status()), fx.profile.error_unknown);
  EXPECT_TRUE(fx.gpu->DeviceChecksum(*dev.value(), 0, 4096).ok());
  EXPECT_EQ(fx.faults->fired().size(), 4u);
}

// The same seed replays the same faults, bytes and clock; another seed does not.
struct RunResult {
  std::vector<uint64_t> checksums;
  double clock = 0;
  size_t fired = 0;
};
RunResult RunWithSeed(const std::string& profile, uint64_t seed) {
  Fixture fx(profile, seed);
  FaultRule r;
  r.point = "gpu.copy";
  r.trigger = FaultTrigger::kProbability;
  r.probability = 0.5;
  r.effect = FaultEffect::kCorrupt;
  EXPECT_TRUE(fx.faults->AddRule(r).ok());
  FakeMemory src(Anonymous(64 * 1024), 0x10000000);
  RunResult out;
  auto dev = fx.gpu->AllocDevice(src.size());
  for (int i = 0; i < 32; ++i) {
    for (auto& b : src.bytes()) b = static_cast<uint8_t>(i);
    EXPECT_TRUE(fx.gpu->Copy(CopyDirection::kHostToDevice, src, 0, *dev.value(), 0, src.size()).ok());
    out.checksums.push_back(fx.gpu->DeviceChecksum(*dev.value(), 0, src.size()).value());
  }
  out.clock = fx.clock->NowSeconds();
  out.fired = fx.faults->fired().size();
  return out;
}

TEST_P(BothProfiles, Deterministic) {
  RunResult a = RunWithSeed(GetParam(), 1234), b = RunWithSeed(GetParam(), 1234);
  RunResult c = RunWithSeed(GetParam(), 99);
  EXPECT_EQ(a.checksums, b.checksums);
  EXPECT_EQ(a.clock, b.clock);
  EXPECT_EQ(a.fired, b.fired);
  EXPECT_GT(a.fired, 0u);
  EXPECT_NE(a.checksums, c.checksums);
}

TEST_P(BothProfiles, ContextsAndDevices) {
  SimGpuOptions o;
  o.device_count = 2;
  Fixture fx(GetParam(), 1, o);
  EXPECT_EQ(fx.gpu->DeviceCount().value(), 2);
  EXPECT_EQ(fx.gpu->current_context(), 0);
  auto c1 = fx.gpu->CreateContext(1);
  ASSERT_TRUE(c1.ok());
  EXPECT_EQ(CodeOf(fx.gpu->CreateContext(2).status()), fx.profile.error_invalid_device);
  EXPECT_EQ(CodeOf(fx.gpu->UseContext(7)), fx.profile.error_invalid_context);
  ASSERT_TRUE(fx.gpu->UseContext(c1.value()).ok());
  auto dev = fx.gpu->AllocDevice(4096);
  ASSERT_TRUE(dev.ok());
  EXPECT_EQ(dev.value()->device(), 1);
}

INSTANTIATE_TEST_SUITE_P(Profiles, BothProfiles,
                         ::testing::Values("cuda-4.1-r285", "cuda-13.0-r580"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& ch : n)
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace resmem::sim

namespace resmem::sim {
namespace {

// The model over the simulated machines of mock/machine: MemTotal from the booted kernel, host
// rates from the preset's HostPerf.
TEST(SimGpuOnMachineTest, Seed000WorkstationReproducesTheSeed) {
  auto spec = MachinePreset("seed000-workstation");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  auto kernel = Boot(spec.value());
  ASSERT_TRUE(kernel.ok()) << kernel.status().ToString();
  SimGpuOptions o;
  o.host_mem_total = kernel->mem_total;
  auto profile = CudaProfileByName("cuda-4.1-r285").value();
  auto clock = std::make_shared<VirtualClock>();
  auto gpu = MakeSimGpu(profile, spec->perf, clock, nullptr, o);
  FakeMemory map(Pfnmap(188ull * kGiB), 0x7f0000000000ull, false);
  EXPECT_EQ(CodeOf(gpu->Register(map, 0, map.size(), 0)), 2);
  EXPECT_EQ(CodeOf(gpu->Register(map, 0, 16 * kMiB, 0)), 30);
  auto dev = gpu->AllocDevice(16 * kMiB);
  ASSERT_TRUE(dev.ok());
  auto st = gpu->Copy(CopyDirection::kHostToDevice, map, 0, *dev.value(), 0, 16 * kMiB);
  ASSERT_TRUE(st.ok());
  ExpectNearRange(st->GBps(), 3.733, 3.839, "seed 000 case B");
  std::printf("seed000-workstation: MemTotal %s, pageable WB %.3f GB/s\n",
              FormatSize(kernel->mem_total).c_str(), st->GBps());
}

TEST(SimGpuOnMachineTest, H100HostBracketsFactsMemTotal) {
  auto spec = MachinePreset("h100-host");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  auto kernel = Boot(spec.value());
  ASSERT_TRUE(kernel.ok()) << kernel.status().ToString();
  std::printf("h100-host preset MemTotal: %llu bytes (%s); measured on the GPU machine: %llu\n",
              static_cast<unsigned long long>(kernel->mem_total), FormatSize(kernel->mem_total).c_str(),
              131981020ull * 1024);
  SimGpuOptions o;
  o.host_mem_total = kernel->mem_total;
  auto profile = CudaProfileByName("cuda-13.0-r580").value();
  auto gpu = MakeSimGpu(profile, spec->perf, std::make_shared<VirtualClock>(), nullptr, o);
  FakeMemory big(Anonymous(256 * kGiB), 0x100000000000ull, false);
  EXPECT_EQ(CodeOf(gpu->Register(big, 0, 256 * kGiB, 0)), 2);  // FACTS: 256 GiB -> 2
  // FACTS: 126 GiB -> 2 and 125 GiB -> 0 on this host; holds when the preset's MemTotal lies
  // in (125 GiB, 126 GiB) as the measured one does.
  EXPECT_EQ(CodeOf(gpu->Register(big, 0, 126 * kGiB, 0)), 2);
  EXPECT_EQ(CodeOf(gpu->Register(big, 0, 125 * kGiB, 0)), 0);
}

// ---- seed 001: write-combined and mapped pinned memory, streams; dma-buf ----

TEST(Seed001Test, WriteCombinedPinnedIsWcMemoryAndCopiesAtThePinnedRate) {
  Fixture fx("cuda-13.0-r580");
  auto wc = fx.gpu->AllocPinned(16 * kMiB, kAllocWriteCombined);
  ASSERT_TRUE(wc.ok()) << wc.status().ToString();
  EXPECT_EQ((*wc)->facts().memory_type, MemoryType::kWriteCombining);
  auto plain = fx.gpu->AllocPinned(16 * kMiB, 0);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ((*plain)->facts().memory_type, MemoryType::kWriteBack);
  auto dev = fx.gpu->AllocDevice(16 * kMiB);
  ASSERT_TRUE(dev.ok());
  auto a = fx.gpu->Copy(CopyDirection::kHostToDevice, **wc, 0, **dev, 0, 16 * kMiB);
  auto b = fx.gpu->Copy(CopyDirection::kHostToDevice, **plain, 0, **dev, 0, 16 * kMiB);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->path, "pinned-dma");
  // wc_h2d_gain 1.0 (cuda_profile.cc): no gain until the H100 says otherwise.
  EXPECT_DOUBLE_EQ(a->seconds, b->seconds);
  // A gain in the profile shows in the rate.
  CudaProfile p = fx.profile;
  p.wc_h2d_gain = 1.4;
  EXPECT_NEAR(PinnedCopySeconds(p, CopyDirection::kHostToDevice, kGiB) /
                  WriteCombinedCopySeconds(p, CopyDirection::kHostToDevice, kGiB), 1.4, 1e-9);
  // cudaHostRegister does not know the flag.
  FakeMemory anon(Anonymous(kMiB));
  EXPECT_EQ(CodeOf(fx.gpu->Register(anon, 0, kMiB, kAllocWriteCombined)), 1);
}

TEST(Seed001Test, Cuda41NeedsDeviceMapHostBeforeTheContextExists) {
  {
    Fixture fx("cuda-4.1-r285");
    auto mapped = fx.gpu->AllocPinned(kMiB, kRegisterMapped);  // creates the context
    auto dev = fx.gpu->AllocDevice(kMiB);
    ASSERT_TRUE(mapped.ok() && dev.ok());
    auto z = fx.gpu->CopyMapped(CopyDirection::kHostToDevice, **mapped, 0, **dev, 0, kMiB);
    EXPECT_EQ(CodeOf(z.status()), 11);  // cudaErrorInvalidValue in 4.1's numbering
    EXPECT_NE(z.status().message().find("cudaDeviceMapHost"), std::string::npos);
    EXPECT_EQ(CodeOf(fx.gpu->SetDeviceFlags(kDeviceMapHost)), 36);  // cudaErrorSetOnActiveProcess
  }
  {
    Fixture fx("cuda-4.1-r285");
    ASSERT_TRUE(fx.gpu->SetDeviceFlags(kDeviceMapHost).ok());
    auto mapped = fx.gpu->AllocPinned(kMiB, kRegisterMapped);
    auto unmapped = fx.gpu->AllocPinned(kMiB, 0);
    auto dev = fx.gpu->AllocDevice(kMiB);
    ASSERT_TRUE(mapped.ok() && unmapped.ok() && dev.ok());
    auto z = fx.gpu->CopyMapped(CopyDirection::kHostToDevice, **mapped, 0, **dev, 0, kMiB);
    ASSERT_TRUE(z.ok()) << z.status().ToString();
    EXPECT_EQ(z->path, "zero-copy-mapped");
    EXPECT_NEAR(z->GBps(), 5.69 * 0.92, 0.01);
    // 4.1 maps only what asked for cudaHostAllocMapped.
    EXPECT_EQ(CodeOf(fx.gpu->CopyMapped(CopyDirection::kHostToDevice, **unmapped, 0, **dev, 0, kMiB).status()), 11);
  }
  {
    // A 4.1 cuCtxCreate context maps pinned memory only when created with CU_CTX_MAP_HOST.
    Fixture fx("cuda-4.1-r285");
    auto dev = fx.gpu->AllocDevice(kMiB);
    auto bare = fx.gpu->CreateContextWithFlags(0, 0);
    auto with = fx.gpu->CreateContextWithFlags(0, kDeviceMapHost);
    ASSERT_TRUE(dev.ok() && bare.ok() && with.ok());
    ASSERT_TRUE(fx.gpu->UseContext(*bare).ok());
    auto in_bare = fx.gpu->AllocPinned(kMiB, kRegisterMapped);
    ASSERT_TRUE(fx.gpu->UseContext(*with).ok());
    auto in_with = fx.gpu->AllocPinned(kMiB, kRegisterMapped);
    ASSERT_TRUE(in_bare.ok() && in_with.ok());
    EXPECT_EQ(CodeOf(fx.gpu->CopyMapped(CopyDirection::kHostToDevice, **in_bare, 0, **dev, 0, kMiB).status()), 11);
    EXPECT_TRUE(fx.gpu->CopyMapped(CopyDirection::kHostToDevice, **in_with, 0, **dev, 0, kMiB).ok());
  }
}

TEST(Seed001Test, Cuda13MapsInRuntimeAndDriverContextsWithOrWithoutMapHost) {
  Fixture fx("cuda-13.0-r580");
  auto plain = fx.gpu->AllocPinned(kMiB, 0);  // unified addressing: mapped without the flag
  auto wc = fx.gpu->AllocPinned(kMiB, kAllocWriteCombined);  // the documented exception
  auto dev = fx.gpu->AllocDevice(kMiB);
  ASSERT_TRUE(plain.ok() && wc.ok() && dev.ok());
  auto z = fx.gpu->CopyMapped(CopyDirection::kHostToDevice, **plain, 0, **dev, 0, kMiB);
  ASSERT_TRUE(z.ok()) << z.status().ToString();
  EXPECT_NEAR(z->GBps(), 53.8 * 0.92, 0.01);
  EXPECT_EQ(CodeOf(fx.gpu->CopyMapped(CopyDirection::kHostToDevice, **wc, 0, **dev, 0, kMiB).status()), 1);
  // A cuCtxCreate context without CU_CTX_MAP_HOST maps all the same (the H100, 2026-11-23:
  // 29.1 GB/s zero-copy there), and so does one with it.
  auto bare = fx.gpu->CreateContextWithFlags(0, 0);
  auto with = fx.gpu->CreateContextWithFlags(0, kDeviceMapHost);
  ASSERT_TRUE(bare.ok() && with.ok());
  ASSERT_TRUE(fx.gpu->UseContext(*bare).ok());
  auto in_bare = fx.gpu->AllocPinned(kMiB, kRegisterMapped);
  ASSERT_TRUE(in_bare.ok());
  EXPECT_TRUE(fx.gpu->CopyMapped(CopyDirection::kHostToDevice, **in_bare, 0, **dev, 0, kMiB).ok());
  ASSERT_TRUE(fx.gpu->UseContext(*with).ok());
  auto in_with = fx.gpu->AllocPinned(kMiB, kRegisterMapped);
  ASSERT_TRUE(in_with.ok());
  EXPECT_TRUE(fx.gpu->CopyMapped(CopyDirection::kHostToDevice, **in_with, 0, **dev, 0, kMiB).ok());
}

TEST(Seed001Test, ZeroCopyNeedsPinnedOrRegisteredMemoryAndMovesTheBytes) {
  Fixture fx("cuda-13.0-r580");
  FakeMemory anon(Anonymous(64 * 1024));
  for (size_t i = 0; i < anon.bytes().size(); ++i) anon.bytes()[i] = static_cast<uint8_t>(i * 7);
  auto dev = fx.gpu->AllocDevice(64 * 1024);
  ASSERT_TRUE(dev.ok());
  EXPECT_EQ(CodeOf(fx.gpu->CopyMapped(CopyDirection::kHostToDevice, anon, 0, **dev, 0, 64 * 1024).status()), 1);
  ASSERT_TRUE(fx.gpu->Register(anon, 0, 64 * 1024, kRegisterMapped).ok());
  ASSERT_TRUE(fx.gpu->CopyMapped(CopyDirection::kHostToDevice, anon, 0, **dev, 0, 64 * 1024).ok());
  auto sum = fx.gpu->DeviceChecksum(**dev, 0, 64 * 1024);
  ASSERT_TRUE(sum.ok());
  EXPECT_EQ(*sum, Fnv1a64(anon.bytes().data(), anon.bytes().size()));
}

TEST(Seed001Test, TwoStreamsOverlapCopyAndKernelOnlyFromPinnedMemory) {
  Fixture fx("cuda-13.0-r580");
  auto pinned = fx.gpu->AllocPinned(32 * kMiB, 0);
  auto dev = fx.gpu->AllocDevice(32 * kMiB);
  ASSERT_TRUE(pinned.ok() && dev.ok());
  PipelineSpec spec;
  spec.block_size = 16 * kMiB;
  spec.blocks = 16;
  spec.kernel_us = 312;
  spec.streams = 1;
  auto serial = fx.gpu->CopyKernelPipeline(**pinned, **dev, spec);
  spec.streams = 2;
  auto overlapped = fx.gpu->CopyKernelPipeline(**pinned, **dev, spec);
  ASSERT_TRUE(serial.ok() && overlapped.ok()) << serial.status().ToString();
  const double c = 16.0 * kMiB / 53.8e9, k = 312e-6;
  EXPECT_NEAR(serial->seconds, 16 * (c + k), 1e-9);
  EXPECT_NEAR(overlapped->seconds, c + 15 * std::max(c, k) + k, 1e-9);
  EXPECT_EQ(overlapped->path, "overlapped (2 streams)");
  EXPECT_NEAR(overlapped->ratio_to_serial, 0.53, 0.01);
  // Pageable memory: cudaMemcpyAsync is synchronous, nothing overlaps.
  FakeMemory anon(Anonymous(32 * kMiB), 0, false);
  auto pageable = fx.gpu->CopyKernelPipeline(anon, **dev, spec);
  ASSERT_TRUE(pageable.ok());
  EXPECT_DOUBLE_EQ(pageable->ratio_to_serial, 1.0);
  EXPECT_NE(pageable->path.find("pageable"), std::string::npos);
  // The device must hold two slots.
  auto small = fx.gpu->AllocDevice(16 * kMiB);
  ASSERT_TRUE(small.ok());
  EXPECT_FALSE(fx.gpu->CopyKernelPipeline(**pinned, **small, spec).ok());
}

TEST(Seed001Test, DmaBufExportFollowsTheHostPageRule) {
  Fixture fx("cuda-13.0-r580");
  auto dev = fx.gpu->AllocDevice(4 * kMiB);
  ASSERT_TRUE(dev.ok());
  auto whole = fx.gpu->ExportDmaBuf(**dev, 0, 4 * kMiB);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->size, 4 * kMiB);  // FACTS: lseek(SEEK_END) is the size
  auto sub = fx.gpu->ExportDmaBuf(**dev, 4096, 4096);  // FACTS: +4 KiB works
  ASSERT_TRUE(sub.ok());
  EXPECT_EQ(sub->size, 4096u);
  EXPECT_EQ(CodeOf(fx.gpu->ExportDmaBuf(**dev, 100, 4096).status()), 1);
  EXPECT_EQ(CodeOf(fx.gpu->ExportDmaBuf(**dev, 0, 100).status()), 1);
  EXPECT_EQ(CodeOf(fx.gpu->ExportDmaBuf(**dev, 0, 0).status()), 1);
  EXPECT_EQ(CodeOf(fx.gpu->ExportDmaBuf(**dev, 2 * kMiB, 4 * kMiB).status()), 1);
  auto pinned = fx.gpu->AllocPinned(kMiB, 0);
  ASSERT_TRUE(pinned.ok());
  EXPECT_EQ(CodeOf(fx.gpu->ExportDmaBufHost(**pinned, 0, kMiB).status()), 1);  // FACTS
  // VMM memory: exported with and without gpuDirectRDMACapable (the H100, 2026-11-23: 'VMM 4M
  // whole, not RDMA-capable' -> 0); sizes round to 2 MiB; the range rules still apply.
  auto vmm = fx.gpu->AllocDeviceVmm(3 * kMiB, true);
  auto plain_vmm = fx.gpu->AllocDeviceVmm(kMiB, false);
  ASSERT_TRUE(vmm.ok() && plain_vmm.ok());
  EXPECT_EQ((*vmm)->size(), 4 * kMiB);
  EXPECT_TRUE(fx.gpu->ExportDmaBuf(**vmm, 0, 4 * kMiB).ok());
  auto plain_whole = fx.gpu->ExportDmaBuf(**plain_vmm, 0, 2 * kMiB);
  ASSERT_TRUE(plain_whole.ok()) << plain_whole.status().ToString();
  EXPECT_EQ(plain_whole->size, 2 * kMiB);
  EXPECT_EQ(CodeOf(fx.gpu->ExportDmaBuf(**plain_vmm, 100, 4096).status()), 1);
  // CUDA 4.1 had no such call.
  Fixture old("cuda-4.1-r285");
  auto d41 = old.gpu->AllocDevice(kMiB);
  ASSERT_TRUE(d41.ok());
  EXPECT_EQ(old.gpu->ExportDmaBuf(**d41, 0, kMiB).status().code(), kUnsupported);
}

}  // namespace
}  // namespace resmem::sim
