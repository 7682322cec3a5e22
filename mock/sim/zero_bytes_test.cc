// AllZero (mock/sim/zero_bytes.h): the question every sparse store of the simulator asks before
// it keeps a page.
#include "mock/sim/zero_bytes.h"

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

}  // namespace
}  // namespace resmem::sim
