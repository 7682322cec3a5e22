// SparsePages (mock/sim/sparse_pages.h): the byte store of simulated process memory and of the
// GPU model's buffers. What it reads back, which pages it holds, and what NoneIn promises.
#include "mock/sim/sparse_pages.h"

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace resmem::sim {
namespace {

TEST(SparsePages, UnwrittenBytesReadAsZerosAndHoldNoPage) {
  SparsePages<4096> s;
  std::vector<uint8_t> out(10000, 0xee);
  s.Read(123, out.data(), out.size());
  EXPECT_EQ(out, std::vector<uint8_t>(out.size(), 0));
  EXPECT_EQ(s.page_count(), 0u);
  EXPECT_TRUE(s.NoneIn(0, 1ull << 40));
}

TEST(SparsePages, ZerosWrittenIntoAbsentPagesStoreNothing) {
  SparsePages<4096> s;
  std::vector<uint8_t> zeros(3 * 4096 + 5, 0);
  s.Write(100, zeros.data(), zeros.size());
  EXPECT_EQ(s.page_count(), 0u);
  // One non-zero byte in the middle page: that page alone is held.
  zeros[4096] = 7;
  s.Write(100, zeros.data(), zeros.size());
  EXPECT_EQ(s.page_count(), 1u);
  EXPECT_FALSE(s.NoneIn(100 + 4096, 1));
  EXPECT_TRUE(s.NoneIn(0, 4096));
}

TEST(SparsePages, ZeroDropsPagesClearedWholeAndKeepsPagesClearedInPart) {
  SparsePages<4096> s;
  std::vector<uint8_t> ones(4 * 4096, 1);
  s.Write(0, ones.data(), ones.size());
  ASSERT_EQ(s.page_count(), 4u);
  s.Zero(4096, 2 * 4096);  // pages 1 and 2 whole
  EXPECT_EQ(s.page_count(), 2u);
  EXPECT_TRUE(s.NoneIn(4096, 2 * 4096));
  s.Zero(10, 100);  // part of page 0: kept, cleared there
  EXPECT_EQ(s.page_count(), 2u);
  std::vector<uint8_t> out(4096);
  s.Read(0, out.data(), out.size());
  for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], (i >= 10 && i < 110) ? 0 : 1) << "byte " << i;
  s.Zero(0, 0);  // nothing
  EXPECT_EQ(s.page_count(), 2u);
}

TEST(SparsePages, NoneInAgainstTheHeldPagesAtTheirEdges) {
  SparsePages<4096> s;
  const uint8_t one = 1;
  s.Write(2 * 4096, &one, 1);  // pages 2 and 5 held
  s.Write(5 * 4096, &one, 1);
  EXPECT_TRUE(s.NoneIn(0, 2 * 4096));          // pages 0-1
  EXPECT_FALSE(s.NoneIn(0, 2 * 4096 + 1));     // its last byte in page 2
  EXPECT_TRUE(s.NoneIn(3 * 4096, 2 * 4096));   // pages 3-4
  EXPECT_FALSE(s.NoneIn(3 * 4096 - 1, 2));     // the end of page 2
  EXPECT_TRUE(s.NoneIn(6 * 4096, 1 << 20));    // past the last page
  EXPECT_TRUE(s.NoneIn(2 * 4096, 0));          // nothing asked
}

TEST(SparsePages, NoneInAtThePageEdges) {
  SparsePages<65536> s;
  const uint8_t one = 1;
  s.Write(65536, &one, 1);  // page 1's first byte
  EXPECT_TRUE(s.NoneIn(0, 65536));       // page 0 only
  EXPECT_FALSE(s.NoneIn(0, 65537));      // reaches page 1
  EXPECT_FALSE(s.NoneIn(65535, 2));
  EXPECT_FALSE(s.NoneIn(2 * 65536 - 1, 1));  // page 1's last byte: held page, so not certain
  EXPECT_TRUE(s.NoneIn(2 * 65536, 65536));
  EXPECT_TRUE(s.NoneIn(65536, 0));       // an empty span holds nothing
}

// Random writes, reads and clears (1 byte to three pages, any alignment) against a flat copy of
// the same bytes, for both page sizes the simulator uses. After each clear, no page the clear
// covered whole is held. Seeded: a failure prints the seed that replays it.
template <uint64_t kPage>
void AgreeWithFlatCopy(uint32_t seed) {
  SCOPED_TRACE("seed " + std::to_string(seed) + ", pages of " + std::to_string(kPage));
  std::mt19937_64 rng(seed);
  const uint64_t span = 48 * kPage;
  SparsePages<kPage> s;
  std::vector<uint8_t> flat(span, 0), buf(3 * kPage);
  for (int op = 0; op < 4000; ++op) {
    const uint64_t len = 1 + rng() % buf.size();
    const uint64_t at = rng() % (span - len);
    switch (rng() % 4) {
      case 0:
      case 1: {
        const bool zeros = rng() % 4 == 0;  // zeros into held and absent pages alike
        for (uint64_t i = 0; i < len; ++i) buf[i] = zeros ? 0 : static_cast<uint8_t>(rng() | 1);
        s.Write(at, buf.data(), len);
        std::memcpy(flat.data() + at, buf.data(), len);
        break;
      }
      case 2: {
        s.Zero(at, len);
        std::memset(flat.data() + at, 0, len);
        const uint64_t first_whole = (at + kPage - 1) / kPage, end_whole = (at + len) / kPage;
        if (end_whole > first_whole) {
          ASSERT_TRUE(s.NoneIn(first_whole * kPage, (end_whole - first_whole) * kPage)) << "op " << op;
        }
        break;
      }
      default: {
        s.Read(at, buf.data(), len);
        ASSERT_EQ(0, std::memcmp(buf.data(), flat.data() + at, len)) << "op " << op << ": read " << len << " at " << at;
        if (s.NoneIn(at, len)) {
          for (uint64_t i = 0; i < len; ++i) ASSERT_EQ(flat[at + i], 0) << "op " << op << ": NoneIn but byte " << at + i;
        }
      }
    }
  }
  // A page with a non-zero byte is held: NoneIn never says "zeros" over data.
  for (uint64_t p = 0; p < span / kPage; ++p) {
    bool nonzero = false;
    for (uint64_t i = 0; i < kPage && !nonzero; ++i) nonzero = flat[p * kPage + i] != 0;
    if (nonzero) {
      EXPECT_FALSE(s.NoneIn(p * kPage, kPage)) << "page " << p;
    }
  }
}

TEST(SparsePages, AgreesWithAFlatCopyUnderRandomAccess) {
  AgreeWithFlatCopy<4096>(20261130);
  AgreeWithFlatCopy<65536>(20261130);
}

}  // namespace
}  // namespace resmem::sim
