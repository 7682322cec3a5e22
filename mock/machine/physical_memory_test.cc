// Sparse physical memory: materialises only written pages; holes read zero and drop writes.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
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

// A page that is RAM only from its middle (memmap= and the firmware's map need not meet at a page
// boundary): after the RAM half is read and written, writes to the hole half still vanish.
TEST(PhysicalMemory, APageHalfRamKeepsItsHoleAfterRepeatedAccess) {
  PhysicalMemory mem;
  mem.SetRam({{0, 0x800}, {0x1800, 0x10000}});
  uint64_t v = 0x1122334455667788;
  for (int i = 0; i < 3; ++i) {
    mem.Write(0x1800, &v, sizeof v);
    mem.Read(0x1800, &v, sizeof v);
  }
  mem.Write(0x1000, &v, sizeof v);
  uint64_t hole = 1;
  mem.Read(0x1000, &hole, sizeof hole);
  EXPECT_EQ(hole, 0u);
  EXPECT_EQ(v, 0x1122334455667788u);
}

// Random reads and writes (lengths 0 to three pages, most within one page, as the card's 8-byte
// register accesses are) over RAM with holes and half-RAM pages, against a flat copy of the
// same bytes; RAM changed halfway. Seeded: a failure prints the seed that replays it.
TEST(PhysicalMemory, AgreesWithAFlatCopyUnderRandomAccess) {
  constexpr uint64_t kSpan = 64 * PhysicalMemory::kPageSize;
  const uint32_t seed = 20261130;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  PhysicalMemory mem;
  std::vector<std::pair<uint64_t, uint64_t>> ram = {{0x800, 0x9000}, {0x10000, 0x30000}, {0x30800, 0x3f000}};
  mem.SetRam(ram);
  std::vector<uint8_t> flat(kSpan, 0);
  auto is_ram = [&](uint64_t a) {
    for (const auto& r : ram)
      if (r.first <= a && a < r.second) return true;
    return false;
  };
  std::vector<uint8_t> buf(3 * PhysicalMemory::kPageSize);
  for (int op = 0; op < 50000; ++op) {
    if (op == 25000) {  // RAM shrinks: what left it reads zero
      ram = {{0x800, 0x5000}, {0x10400, 0x30000}};
      mem.SetRam(ram);
      for (uint64_t a = 0; a < kSpan; ++a)
        if (!is_ram(a)) flat[a] = 0;
    }
    const uint64_t len = rng() % 4 ? 8 : rng() % buf.size();
    const uint64_t at = rng() % (kSpan - len);
    if (rng() % 8 == 0) {  // a batch of words, as the card's registers are read and published
      const uint64_t base = rng() % (kSpan / 2);
      const uint64_t offsets[] = {rng() % (kSpan / 2 - 8), rng() % (kSpan / 2 - 8), rng() % (kSpan / 2 - 8)};
      uint64_t words[3] = {rng(), rng(), rng()};
      if (rng() % 2) {
        mem.WriteWords(base, offsets, words, 3);
        for (int w = 0; w < 3; ++w)
          for (uint64_t i = 0; i < 8; ++i)
            if (is_ram(base + offsets[w] + i)) flat[base + offsets[w] + i] = static_cast<uint8_t>(words[w] >> (8 * i));
      } else {
        mem.ReadWords(base, offsets, words, 3);
        for (int w = 0; w < 3; ++w)
          ASSERT_EQ(0, std::memcmp(&words[w], flat.data() + base + offsets[w], 8)) << "op " << op << ": word " << w;
      }
    } else if (rng() % 2) {
      for (uint64_t i = 0; i < len; ++i) buf[i] = static_cast<uint8_t>(rng());
      mem.Write(at, buf.data(), len);
      for (uint64_t i = 0; i < len; ++i)
        if (is_ram(at + i)) flat[at + i] = buf[i];
    } else {
      mem.Read(at, buf.data(), len);
      ASSERT_EQ(0, std::memcmp(buf.data(), flat.data() + at, len)) << "op " << op << ": read " << len << " at " << at;
    }
  }
}

}  // namespace
}  // namespace resmem::sim
