#include "backends/host/host_region.h"

#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/vfs.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "backends/host/modelled_memory.h"
#include "backends/host/smaps_facts.h"

namespace resmem::host {
namespace {

TEST(SmapsFacts, ParsesFlagsAndBacking) {
  const std::string text =
      "7f0000000000-7f0000200000 rw-s 00000000 00:01 42     /memfd:resmem-standin (deleted)\n"
      "Size:               2048 kB\n"
      "KernelPageSize:        4 kB\n"
      "AnonHugePages:         0 kB\n"
      "VmFlags: rd wr sh mr mw me ms sd\n"
      "7f0000200000-7f0000201000 r--p 00000000 00:00 0      [vvar]\n"
      "KernelPageSize:        4 kB\n"
      "VmFlags: rd mr pf io de dd sd\n";
  auto memfd = ParseSmapsFacts(text, 0x7f0000001000);
  ASSERT_TRUE(memfd.ok()) << memfd.status().ToString();
  EXPECT_TRUE(memfd->shared);
  EXPECT_TRUE(memfd->writable);
  EXPECT_FALSE(memfd->vm_pfnmap);
  EXPECT_EQ(memfd->backing, Backing::kShmem);
  EXPECT_EQ(memfd->length, 2u << 20);

  auto vvar = ParseSmapsFacts(text, 0x7f0000200000);
  ASSERT_TRUE(vvar.ok());
  EXPECT_TRUE(vvar->vm_pfnmap);
  EXPECT_TRUE(vvar->vm_io);
  EXPECT_FALSE(vvar->writable);
  EXPECT_EQ(vvar->backing, Backing::kDevicePfn);

  auto none = ParseSmapsFacts(text, 0x1000);
  EXPECT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no mapping"), std::string::npos);
}

struct Want {
  HostKind kind;
  Backing backing;
  bool shared;
};

void ExpectFactsAndBytes(const Want& w, const HostMapOptions& o = {}) {
  auto mem = MapHostMemory(w.kind, 1 << 20, o);
  ASSERT_TRUE(mem.ok()) << HostKindName(w.kind) << ": " << mem.status().ToString();
  EXPECT_EQ((*mem)->facts().backing, w.backing) << HostKindName(w.kind);
  EXPECT_EQ((*mem)->facts().shared, w.shared) << HostKindName(w.kind);
  EXPECT_EQ((*mem)->facts().origin, "smaps");
  const char msg[] = "block 7";
  ASSERT_TRUE((*mem)->Write(4096, msg, sizeof msg).ok());
  char back[sizeof msg] = {};
  ASSERT_TRUE((*mem)->Read(4096, back, sizeof back).ok());
  EXPECT_STREQ(back, msg);
  EXPECT_FALSE((*mem)->Read((1 << 20) - 2, back, 4).ok());  // past the end
}

TEST(HostMemory, EachKindReadsBackItsOwnFacts) {
  for (Want w : {Want{HostKind::kMemfd, Backing::kShmem, true},
                 Want{HostKind::kShm, Backing::kShmem, true},
                 Want{HostKind::kAnonymous, Backing::kAnonymous, false}})
    ExpectFactsAndBytes(w);
}

// Under a test the disk-file kinds make their file in the test's own TEST_TMPDIR (Bazel's, under
// the output base), never in the machine's /var/tmp, which may be missing or read-only there:
// the simulator's bench and stream tests map the file kind too (docs/build.md, "Hermetic tests").
TEST(HostMemory, FileKindsUseTheTestsOwnDirectory) {
  const char* t = std::getenv("TEST_TMPDIR");
  ASSERT_TRUE(t && *t) << "Bazel sets TEST_TMPDIR for every test";
  EXPECT_EQ(DefaultFileDir(), t);
  auto mem = MapHostMemory(HostKind::kFile, 1 << 20);
  ASSERT_TRUE(mem.ok()) << mem.status().ToString();
  EXPECT_NE((*mem)->Describe().find(std::string(t) + "/resmem-standin-"), std::string::npos)
      << (*mem)->Describe();
}

// The disk-file kinds need a directory on a disk. Where the test's directory is tmpfs the file
// would be shmem, so the test reports itself skipped with the reason.
TEST(HostMemory, FileKindsAreDiskFiles) {
  const std::string dir = DefaultFileDir();
  struct statfs fs;
  if (statfs(dir.c_str(), &fs) != 0)
    GTEST_SKIP() << "skipped: " << dir << " cannot be read (" << std::strerror(errno)
                 << "): the disk-file kinds need a directory on a disk";
  if (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC)
    GTEST_SKIP() << "skipped: " << dir << " is tmpfs or ramfs here, so a file in it is "
                 << "shmem, not a disk file: point TEST_TMPDIR at a disk";
  ExpectFactsAndBytes({HostKind::kFile, Backing::kFile, true});
  ExpectFactsAndBytes({HostKind::kFilePrivate, Backing::kFile, false});
}

// The host backend maps MAP_HUGETLB for real: a machine with no 2 MiB pages reserved cannot
// show the facts, so the test checks the error names the way out and reports itself skipped
// with the reason (never a silent pass; docs/build.md, "Hermetic tests").
TEST(HostMemory, HugetlbNamesTheWayOutOrIsHuge) {
  auto mem = MapHostMemory(HostKind::kHugetlb, 2 << 20);
  if (!mem.ok()) {
    ASSERT_NE(mem.status().message().find("nr_hugepages"), std::string::npos)
        << mem.status().ToString();
    GTEST_SKIP() << "skipped: no 2 MiB hugetlb page to map on this machine ("
                 << mem.status().message() << ")";
  }
  EXPECT_EQ((*mem)->facts().backing, Backing::kHugetlb);
  EXPECT_EQ((*mem)->facts().page_size, 2u << 20);
}

TEST(HostMemory, ReadOnlyMappingRefusesWrites) {
  HostMapOptions o;
  o.writable = false;
  auto mem = MapHostMemory(HostKind::kAnonymous, 8192, o);
  ASSERT_TRUE(mem.ok());
  EXPECT_FALSE((*mem)->facts().writable);
  char c = 1;
  EXPECT_FALSE((*mem)->Write(0, &c, 1).ok());
}

TEST(HostRegionProvider, OpensKindsAndChecksBounds) {
  HostRegionProvider provider(4 << 20);
  auto list = provider.List();
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->size(), AllHostKinds().size());
  auto bad = provider.Open({"host:nvme", false, true});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("memfd"), std::string::npos);  // lists the choices
  auto handle = provider.Open({"host:memfd", false, true});
  ASSERT_TRUE(handle.ok());
  MapRequest past;
  past.offset = 4096;
  past.length = 4 << 20;
  EXPECT_FALSE((*handle)->Map(past).ok());
  MapRequest unaligned;
  unaligned.offset = 100;
  unaligned.length = 4096;
  EXPECT_FALSE((*handle)->Map(unaligned).ok());
  MapRequest ok;
  ok.length = 1 << 20;
  auto mem = (*handle)->Map(ok);
  ASSERT_TRUE(mem.ok());
  EXPECT_EQ((*mem)->size(), 1u << 20);
}

TEST(ForeignMapping, VvarIsPfnmapWhereTheKernelHasIt) {
  auto vvar = FindNamedVma("[vvar]");
  if (!vvar.ok()) GTEST_SKIP() << "skipped: no [vvar] mapping on this kernel";
  auto mem = WrapForeignMapping(vvar->start, vvar->length, "[vvar]");
  ASSERT_TRUE(mem.ok()) << mem.status().ToString();
  EXPECT_TRUE((*mem)->facts().vm_pfnmap);
  EXPECT_EQ((*mem)->facts().backing, Backing::kDevicePfn);
}

// A device description for the stand-in: one device of the given size and mode.
class OneDevice : public RegionProvider {
 public:
  OneDevice(uint64_t size, MapMode mode) : size_(size), mode_(mode) {}
  std::string name() const override { return "one"; }
  Result<std::vector<std::string>> List() override { return std::vector<std::string>{"/dev/resmem0"}; }
  Result<std::unique_ptr<RegionHandle>> Open(const OpenRequest& r) override {
    if (!r.path.empty() && r.path != "/dev/resmem0") return Status::Errno(ENOENT, "no " + r.path);
    return std::unique_ptr<RegionHandle>(new HostRegionProviderHandle(size_, mode_));
  }

 private:
  // Only Info is asked of the described device.
  class HostRegionProviderHandle : public RegionHandle {
   public:
    HostRegionProviderHandle(uint64_t size, MapMode mode) : size_(size), mode_(mode) {}
    Result<RegionInfo> Info() override {
      RegionInfo i;
      i.device = "/dev/resmem0";
      i.size = size_;
      i.mode = mode_;
      return i;
    }
    Result<std::unique_ptr<HostMemory>> Map(const MapRequest&) override {
      return Status::Internal("the stand-in must not map the described device");
    }
    Status Ioctl(unsigned long, void*) override { return Status::Ok(); }

   private:
    uint64_t size_;
    MapMode mode_;
  };
  uint64_t size_;
  MapMode mode_;
};

TEST(StandinRegion, PfnmapMappingsThatFitAreTheReadOnlyVvar) {
  auto vvar = FindNamedVma("[vvar]");
  if (!vvar.ok()) GTEST_SKIP() << "skipped: no [vvar] mapping on this kernel";
  auto provider = MakeStandinRegionProvider(std::make_shared<OneDevice>(1ull << 30, MapMode::kPfnmap));
  ASSERT_TRUE(provider.ok());
  auto handle = (*provider)->Open({});
  ASSERT_TRUE(handle.ok()) << handle.status().ToString();
  EXPECT_EQ((*handle)->Info()->size, 1ull << 30);
  MapRequest r;
  r.length = 4096;
  auto writable = (*handle)->Map(r);
  ASSERT_FALSE(writable.ok());
  EXPECT_EQ(writable.status().code(), EACCES);
  EXPECT_NE(writable.status().message().find("writable = false"), std::string::npos);
  r.writable = false;
  auto mem = (*handle)->Map(r);
  ASSERT_TRUE(mem.ok()) << mem.status().ToString();
  EXPECT_TRUE((*mem)->facts().vm_pfnmap);
  EXPECT_TRUE((*mem)->facts().vm_io);
  EXPECT_EQ((*mem)->address(), vvar->start);
  // Longer than [vvar]: ordinary memory of that length, whose facts say so.
  r.length = 16 << 20;
  r.writable = true;
  auto longer = (*handle)->Map(r);
  ASSERT_TRUE(longer.ok()) << longer.status().ToString();
  EXPECT_FALSE((*longer)->facts().vm_pfnmap);
  EXPECT_EQ((*longer)->facts().backing, Backing::kShmem);
}

// Both read /proc/meminfo (every Linux kernel since 3.14 has MemAvailable): what is free now
// is never more than the RAM.
TEST(Meminfo, MemAvailableIsReadAndNoMoreThanMemTotal) {
  const uint64_t total = MemTotalBytes();
  const uint64_t available = MemAvailableBytes();
  ASSERT_GT(total, 0u);
  ASSERT_GT(available, 0u);
  EXPECT_LE(available, total);
  EXPECT_NE(available, total);  // the kernel and its caches hold some
}

TEST(StandinRegion, PagesAreMemfdAndPastMemTotalNoreserve) {
  const uint64_t mem_total = MemTotalBytes();
  ASSERT_GT(mem_total, 0u);
  const uint64_t huge = (mem_total + (1ull << 30)) & ~((1ull << 30) - 1);
  auto provider = MakeStandinRegionProvider(std::make_shared<OneDevice>(2 * huge, MapMode::kPages));
  ASSERT_TRUE(provider.ok());
  auto handle = (*provider)->Open({});
  ASSERT_TRUE(handle.ok());
  MapRequest r;
  r.length = 1 << 20;
  auto small = (*handle)->Map(r);
  ASSERT_TRUE(small.ok()) << small.status().ToString();
  EXPECT_EQ((*small)->facts().backing, Backing::kShmem);
  EXPECT_TRUE((*small)->facts().shared);
  r.length = huge;  // more than this machine has: address space only
  auto big = (*handle)->Map(r);
  // A kernel that refuses address space beyond RAM (vm.overcommit_memory=2, a ulimit -v) cannot
  // stand in a device larger than the machine: the host feature is missing, not the stand-in.
  if (!big.ok() && big.status().code() == ENOMEM)
    GTEST_SKIP() << "skipped: this machine refuses a MAP_NORESERVE mapping of " << huge
                 << " bytes, more than its RAM (vm.overcommit_memory=2 or a ulimit -v): "
                 << big.status().message();
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  EXPECT_EQ((*big)->facts().backing, Backing::kAnonymous);
  EXPECT_EQ((*big)->size(), huge);
  r.offset = 2 * huge - 4096;
  r.length = 8192;  // bounds are the described device's
  EXPECT_FALSE((*handle)->Map(r).ok());
  OpenRequest other;
  other.path = "/dev/resmem7";
  EXPECT_EQ((*provider)->Open(other).status().code(), ENOENT);  // the description decides
}

// The simulator's stand-in for each kind: the facts smaps would show, real bytes behind them, and
// nothing of this machine's hugetlb pool (a build machine without huge pages runs it too).
TEST(ModelledMemory, HugetlbFactsOverRealBytesOnAnyMachine) {
  HostMapOptions o;
  o.huge_page_size = 1ull << 30;
  const MappingFacts gig = ModelledFacts(HostKind::kHugetlb, 3ull << 30, o);
  EXPECT_EQ(gig.backing, Backing::kHugetlb);
  EXPECT_EQ(gig.page_size, 1ull << 30);
  EXPECT_EQ(gig.origin, "modelled");
  EXPECT_EQ(ModelledFacts(HostKind::kHugetlb, 4 << 20).page_size, 2u << 20);
  EXPECT_TRUE(ModelledFacts(HostKind::kMemfd, 4096).shared);
  HostMapOptions thp;
  thp.transparent_huge = 1;
  EXPECT_TRUE(ModelledFacts(HostKind::kAnonymous, 4096, thp).transparent_huge);
  EXPECT_FALSE(ModelledFacts(HostKind::kAnonymous, 4096).resident);

  auto m = MapModelledMemory(HostKind::kHugetlb, 4 << 20);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)->facts().page_size, 2u << 20);
  EXPECT_EQ((*m)->size(), 4u << 20);
  const uint64_t word = 0x1234567890abcdefull;
  ASSERT_TRUE((*m)->Write((4 << 20) - 8, &word, 8).ok());
  uint64_t back = 0;
  ASSERT_TRUE((*m)->Read((4 << 20) - 8, &back, 8).ok());
  EXPECT_EQ(back, word);
  EXPECT_FALSE((*m)->Write(4 << 20, &word, 8).ok());  // past the end
  EXPECT_FALSE(MapModelledMemory(HostKind::kAnonymous, 0).ok());
}

}  // namespace
}  // namespace resmem::host
