// memory_fit: what bench and stream hold at once, against RAM and the GPU's memory.
#include "engine/cli/memory_fit.h"

#include <gtest/gtest.h>

namespace resmem::cli {
namespace {

constexpr uint64_t kGiB = 1ull << 30;

TEST(SaturatingProduct, StopsAtTheTopOf64Bits) {
  EXPECT_EQ(SaturatingProduct(kGiB, 4), 4 * kGiB);
  EXPECT_EQ(SaturatingProduct(kGiB, 0), 0u);
  EXPECT_EQ(SaturatingProduct(kGiB, 1ull << 40), UINT64_MAX);
}

// More than is free now but within the RAM: a warning with the figures and the way out, which
// the commands print before they start; nothing when it fits or MemAvailable was unreadable.
TEST(RamWarning, OnlyPastWhatIsFreeNow) {
  EXPECT_EQ(RamWarning("the ring,", 20 * kGiB, 17 * kGiB, "give fewer --slots"),
            "the ring, is 20 GiB, more than the 17 GiB this machine has free now (MemAvailable): "
            "the kernel may swap or end the run for memory; give fewer --slots");
  EXPECT_EQ(RamWarning("the ring,", 17 * kGiB, 17 * kGiB, "x"), "");
  EXPECT_EQ(RamWarning("the ring,", 20 * kGiB, 0, "x"), "");
}

// Past MemTotal is refused (exit 2 in the commands), naming the size and the way out.
TEST(CheckFitsRam, RefusesPastMemTotal) {
  const Status past = CheckFitsRam("the ring,", UINT64_MAX, "give fewer --slots");
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.code(), kInvalidArgument);
  EXPECT_NE(past.message().find("the ring, is more than 2^64 bytes, more than this machine's "),
            std::string::npos)
      << past.message();
  EXPECT_NE(past.message().find("of RAM (MemTotal); give fewer --slots"), std::string::npos);
  EXPECT_TRUE(CheckFitsRam("the ring,", 4096, "x").ok());
}

}  // namespace
}  // namespace resmem::cli
