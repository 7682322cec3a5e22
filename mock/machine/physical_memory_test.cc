// Sparse physical memory: materialises only written pages; holes read zero and drop writes.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "mock/machine/physical_memory.h"

namespace resmem::sim {
namespace {

constexpr uint64_t kGiB = 1ull << 30;

TEST(PhysicalMemory, A188GBMachineWithAFewWritesMaterialisesAFewPages) {
  PhysicalMemory mem;
  mem.SetRam({{0, 0x9fc00}, {0x100000, 3 * kGiB}, {4 * kGiB, 192 * kGiB}});
  EXPECT_TRUE(mem.IsRam(4 * kGiB, 192 * kGiB));
  const char msg[] = "block 1";
  mem.Write(4 * kGiB, msg, sizeof msg);
  mem.Write(100 * kGiB + 4090, msg, sizeof msg);  // straddles two pages
  mem.Write(192 * kGiB - 8, msg, 4);
  EXPECT_EQ(mem.materialised_pages(), 4u);
  char back[sizeof msg] = {};
  mem.Read(100 * kGiB + 4090, back, sizeof back);
  EXPECT_STREQ(back, msg);
  uint64_t never = 1;
  mem.Read(150 * kGiB, &never, sizeof never);
  EXPECT_EQ(never, 0u);
}

TEST(PhysicalMemory, HolesReadZeroAndDropWrites) {
  PhysicalMemory mem;
  mem.SetRam({{0, 0x9fc00}, {0x100000, 3 * kGiB}});
  EXPECT_FALSE(mem.IsRam(3 * kGiB - 4096, 3 * kGiB + 4096));
  EXPECT_FALSE(mem.IsRam(0x9f000, 0xa0000));
  std::vector<uint8_t> ones(8192, 0xff);
  mem.Write(3 * kGiB - 4096, ones.data(), ones.size());  // half RAM, half PCI hole
  std::vector<uint8_t> back(8192, 0xaa);
  mem.Read(3 * kGiB - 4096, back.data(), back.size());
  for (size_t i = 0; i < 4096; ++i) ASSERT_EQ(back[i], 0xff) << i;
  for (size_t i = 4096; i < 8192; ++i) ASSERT_EQ(back[i], 0) << i;
  EXPECT_EQ(mem.materialised_pages(), 1u);
  // Partial page at the end of low RAM (0x9fc00): the RAM part keeps data, the rest does not.
  mem.Write(0x9fbf0, ones.data(), 32);
  mem.Read(0x9fbf0, back.data(), 32);
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(back[i], 0xff);
  for (size_t i = 16; i < 32; ++i) EXPECT_EQ(back[i], 0);
}

TEST(PhysicalMemory, ConcurrentWritersToDistinctPages) {
  PhysicalMemory mem;
  mem.SetRam({{0, 64ull << 20}});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&mem, t] {
      for (uint64_t i = 0; i < 256; ++i) {
        const uint64_t value = (uint64_t(t) << 32) | i;
        mem.Write((t * 256 + i) * PhysicalMemory::kPageSize, &value, sizeof value);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mem.materialised_pages(), 1024u);
  for (uint64_t t = 0; t < 4; ++t) {
    uint64_t v = 0;
    mem.Read((t * 256 + 17) * PhysicalMemory::kPageSize, &v, sizeof v);
    EXPECT_EQ(v, (t << 32) | 17);
  }
}

TEST(PhysicalMemory, ShrinkingRamForgetsPagesOutsideIt) {
  PhysicalMemory mem;
  mem.SetRam({{0, 1 * kGiB}});
  const uint32_t v = 7;
  mem.Write(512ull << 20, &v, sizeof v);
  mem.SetRam({{0, 256ull << 20}});
  EXPECT_EQ(mem.materialised_pages(), 0u);
  uint32_t back = 1;
  mem.Read(512ull << 20, &back, sizeof back);
  EXPECT_EQ(back, 0u);
}

}  // namespace
}  // namespace resmem::sim
