// AllZero (mock/sim/zero_bytes.h): the question every sparse store of the simulator asks before
// it keeps a page.
#include "mock/sim/zero_bytes.h"

#include <map>
#include <vector>

#include <gtest/gtest.h>

namespace resmem::sim {
namespace {

TEST(AllZero, EmptyAndZeroSpansAreZero) {
  std::vector<uint8_t> z(64 << 10, 0);
  EXPECT_TRUE(AllZero(z.data(), 0));
  EXPECT_TRUE(AllZero(z.data(), 1));
  EXPECT_TRUE(AllZero(z.data(), z.size()));
}

TEST(AllZero, OneNonZeroByteAnywhereIsSeen) {
  for (size_t len : {1u, 2u, 3u, 4095u, 65536u}) {
    for (size_t at : {size_t{0}, len / 2, len - 1}) {
      std::vector<uint8_t> v(len, 0);
      v[at] = 0x80;
      EXPECT_FALSE(AllZero(v.data(), len)) << "len " << len << ", byte " << at;
    }
  }
}

TEST(AllZero, SameNonZeroBytesEverywhereAreNotZero) {
  std::vector<uint8_t> v(4096, 0xaa);  // every byte equals its successor, but not zero
  EXPECT_FALSE(AllZero(v.data(), v.size()));
}

TEST(AllZero, ReadsOnlyTheSpanGiven) {
  std::vector<uint8_t> v(16, 0);
  v[8] = 1;
  EXPECT_TRUE(AllZero(v.data(), 8));
  EXPECT_FALSE(AllZero(v.data(), 9));
}

// Pages 2 and 5 of 4 KiB held: spans that touch either are not page-free, whatever their bounds.
TEST(NoPageIn, SpansAgainstTheHeldPagesAtTheirEdges) {
  const std::map<uint64_t, int> pages{{2, 0}, {5, 0}};
  EXPECT_TRUE(NoPageIn(pages, 4096, 0, 2 * 4096));          // pages 0-1
  EXPECT_FALSE(NoPageIn(pages, 4096, 0, 2 * 4096 + 1));     // its last byte in page 2
  EXPECT_TRUE(NoPageIn(pages, 4096, 3 * 4096, 2 * 4096));   // pages 3-4
  EXPECT_FALSE(NoPageIn(pages, 4096, 3 * 4096 - 1, 2));     // the end of page 2
  EXPECT_TRUE(NoPageIn(pages, 4096, 6 * 4096, 1 << 20));    // past the last page
  EXPECT_TRUE(NoPageIn(pages, 4096, 2 * 4096, 0));          // nothing asked
}

}  // namespace
}  // namespace resmem::sim
