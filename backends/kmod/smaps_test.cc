#include "backends/kmod/smaps.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "gtest/gtest.h"

namespace resmem {
namespace {

// The shape fs/proc/task_mmu.c prints, as captured in the QEMU guest for both driver modes.
const char kText[] =
    "55d0c0000000-55d0c0021000 rw-p 00000000 00:00 0                          [heap]\n"
    "Size:                132 kB\n"
    "KernelPageSize:        4 kB\n"
    "VmFlags: rd wr mr mw me ac \n"
    "7f3e37000000-7f3e3b000000 rw-s 00000000 00:05 97                         /dev/resmem0\n"
    "Size:              65536 kB\n"
    "KernelPageSize:        4 kB\n"
    "MMUPageSize:           4 kB\n"
    "Rss:               65536 kB\n"
    "VmFlags: rd wr sh mr mw me ms pf io de dd \n"
    "7f3e40000000-7f3e44000000 rw-s 00200000 00:05 98                         /dev/resmem1\n"
    "Size:              65536 kB\n"
    "KernelPageSize:        4 kB\n"
    "VmFlags: rd wr sh mr mw me ms de dd sd mm \n"
    "7f3e50000000-7f3e50200000 rw-s 00000000 00:10 12                         /memfd:buf (deleted)\n"
    "KernelPageSize:     2048 kB\n"
    "VmFlags: rd wr sh mr mw me ms ht \n"
    "7f3e60000000-7f3e60001000 r--s 00000000 08:01 77                         /data/file.bin\n"
    "VmFlags: rd sh mr mw me ms lo \n";

TEST(Smaps, PfnmapDeviceShowsPfIo) {
  auto vma = FindSmapsVma(kText, 0x7f3e37000000ull + 4096);
  ASSERT_TRUE(vma.ok()) << vma.status().ToString();
  EXPECT_EQ(vma->path, "/dev/resmem0");
  EXPECT_EQ(vma->perms, "rw-s");
  EXPECT_EQ(vma->rss, 65536ull * 1024);
  MappingFacts f = FactsFromSmaps(vma.value());
  EXPECT_TRUE(f.vm_pfnmap);
  EXPECT_TRUE(f.vm_io);
  EXPECT_FALSE(f.vm_mixedmap);
  EXPECT_TRUE(f.shared);
  EXPECT_TRUE(f.writable);
  EXPECT_EQ(f.backing, Backing::kDevicePfn);
  EXPECT_EQ(f.length, 64ull << 20);
  EXPECT_EQ(f.origin, "smaps /dev/resmem0");
}

TEST(Smaps, PagesDeviceShowsMixedMapAndOffset) {
  auto vma = FindSmapsVma(kText, 0x7f3e43ffffffull);
  ASSERT_TRUE(vma.ok());
  EXPECT_EQ(vma->file_offset, 0x200000u);
  MappingFacts f = FactsFromSmaps(vma.value());
  EXPECT_FALSE(f.vm_pfnmap);
  EXPECT_FALSE(f.vm_io);
  EXPECT_TRUE(f.vm_mixedmap);
  EXPECT_EQ(f.backing, Backing::kDevicePages);
}

TEST(Smaps, HugetlbShmemFileAnonymous) {
  MappingFacts huge = FactsFromSmaps(FindSmapsVma(kText, 0x7f3e50000000ull).value());
  EXPECT_EQ(huge.page_size, 2ull << 20);
  EXPECT_EQ(huge.backing, Backing::kHugetlb);
  MappingFacts file = FactsFromSmaps(FindSmapsVma(kText, 0x7f3e60000000ull).value());
  EXPECT_EQ(file.backing, Backing::kFile);
  EXPECT_FALSE(file.writable);
  EXPECT_TRUE(file.locked);
  MappingFacts heap = FactsFromSmaps(FindSmapsVma(kText, 0x55d0c0000010ull).value());
  EXPECT_EQ(heap.backing, Backing::kAnonymous);
  EXPECT_FALSE(heap.shared);
}

TEST(Smaps, AddressOutsideEveryVmaIsNotFound) {
  auto vma = FindSmapsVma(kText, 0x7f3e3b000000ull);  // one past resmem0's end
  ASSERT_FALSE(vma.ok());
  EXPECT_EQ(vma.status().code(), kNotFound);
  EXPECT_NE(vma.status().message().find("0x7f3e3b000000"), std::string::npos);
}

TEST(Smaps, MalformedHeaderNamesTheLine) {
  auto vma = FindSmapsVma("zz-yy rw-p\n", 0x10);
  ASSERT_FALSE(vma.ok());
  EXPECT_NE(vma.status().message().find("line 1"), std::string::npos) << vma.status().ToString();
}

TEST(Smaps, RealAnonymousAndShmemMappingsOfThisProcess) {
  const size_t len = 3 * 4096;
  void* anon = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(anon, MAP_FAILED);
  auto facts = ReadMappingFacts(reinterpret_cast<uint64_t>(anon) + 4096);
  ASSERT_TRUE(facts.ok()) << facts.status().ToString();
  EXPECT_EQ(facts->backing, Backing::kAnonymous);
  EXPECT_FALSE(facts->shared);
  EXPECT_FALSE(facts->vm_pfnmap);
  EXPECT_GE(facts->length, len);
  munmap(anon, len);

  int fd = memfd_create("smaps_test", 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, len), 0);
  void* shm = mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
  ASSERT_NE(shm, MAP_FAILED);
  auto sf = ReadMappingFacts(reinterpret_cast<uint64_t>(shm));
  ASSERT_TRUE(sf.ok()) << sf.status().ToString();
  EXPECT_EQ(sf->backing, Backing::kShmem);
  EXPECT_TRUE(sf->shared);
  EXPECT_FALSE(sf->writable);
  EXPECT_EQ(sf->length, len);
  munmap(shm, len);
  close(fd);
}

}  // namespace
}  // namespace resmem
