#include <cerrno>
#include <csignal>
#include <thread>
#include <vector>

#include "backends/api/clock.h"
#include "backends/api/gpu.h"
#include "backends/api/median.h"
#include "backends/api/memory.h"
#include "backends/api/region.h"
#include "backends/api/status.h"
#include "gtest/gtest.h"

namespace resmem {
namespace {

TEST(Median, MeanOfTheMiddlePairOrItsUpperValue) {
  EXPECT_EQ(MedianMean({}), 0);
  EXPECT_EQ(MedianUpper({}), 0);
  EXPECT_EQ(MedianMean({5}), 5);
  EXPECT_EQ(MedianUpper({5}), 5);
  EXPECT_EQ(MedianMean({9, 1, 4}), 4);  // unsorted in, the middle value out
  EXPECT_EQ(MedianUpper({9, 1, 4}), 4);
  EXPECT_EQ(MedianMean({8, 1, 2, 4}), 3);  // sorted 1 2 4 8: (2 + 4) / 2
  EXPECT_EQ(MedianUpper({8, 1, 2, 4}), 4);
}

TEST(Status, CarriesSpaceCodeAndMessage) {
  Status s = Status::Errno(EINVAL, "offset past the end");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.space(), ErrorSpace::kErrno);
  EXPECT_EQ(s.code(), EINVAL);
  EXPECT_EQ(s.ToString(), "errno 22 (EINVAL): offset past the end");
  EXPECT_EQ(s.WithContext("mmap").message(), "mmap: offset past the end");
  EXPECT_EQ(Status::Signal(SIGKILL, "x").ToString(), "signal 9 (SIGKILL): x");
  EXPECT_TRUE(Status().ok());
}

TEST(Result, HoldsValueOrError) {
  Result<int> good(5);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 5);
  Result<int> bad(Status::Cuda(30, "unknown"));
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), 30);
}

TEST(ParseSize, KernelStyleUnits) {
  EXPECT_EQ(*ParseSize("188G"), 188ull << 30);
  EXPECT_EQ(*ParseSize("64M"), 64ull << 20);
  EXPECT_EQ(*ParseSize("0x1000"), 4096u);
  EXPECT_EQ(*ParseSize("16MiB"), 16ull << 20);
  EXPECT_EQ(*ParseSize("1.5G"), 3ull << 29);
  EXPECT_FALSE(ParseSize("12Q").ok());
  EXPECT_FALSE(ParseSize("").ok());
  EXPECT_FALSE(ParseSize("-4").ok());
  EXPECT_NE(ParseSize("12Q").status().message().find("unit"), std::string::npos);
}

// Found by the fuse_control fuzz target (docs/reliability.md, "Fuzzing"): decimal sizes went
// through a double, so numbers above 2^53 came back as a neighbour.
TEST(ParseSize, ExactAbove2To53) {
  EXPECT_EQ(*ParseSize("49570089023552443"), 49570089023552443ull);
  EXPECT_EQ(*ParseSize("18446744073709551615"), 18446744073709551615ull);
  EXPECT_FALSE(ParseSize("18446744073709551616").ok());
  EXPECT_EQ(*ParseSize("16383P"), 16383ull << 50);
  EXPECT_FALSE(ParseSize("16384P").ok());
  EXPECT_EQ(*ParseSize("0.5K"), 512u);
  EXPECT_FALSE(ParseSize("0.3K").ok());
  EXPECT_FALSE(ParseSize("nan").ok());
  EXPECT_FALSE(ParseSize("inf").ok());
  EXPECT_FALSE(ParseSize(".").ok());
  EXPECT_FALSE(ParseSize("-0").ok());
}

// The digits of a size's 0x and of a count (engine/cli/values.cc): digits of the base only, and
// no more than 2^64-1 (one past it is no value, not a wrapped one).
TEST(ReadDigits, OnlyTheBasesDigitsAndAt64Bits) {
  EXPECT_EQ(ReadDigits("4096", 10).value, 4096u);
  EXPECT_EQ(ReadDigits("ffFF", 16).value, 0xffffu);
  EXPECT_TRUE(ReadDigits("18446744073709551615", 10).fits);
  EXPECT_EQ(ReadDigits("ffffffffffffffff", 16).value, UINT64_MAX);
  for (const auto& [digits, base] : std::vector<std::pair<std::string, int>>{
           {"18446744073709551616", 10}, {"10000000000000000", 16}, {"99999999999999999999999", 10}}) {
    const DigitsRead r = ReadDigits(digits, base);
    EXPECT_TRUE(r.digits_only) << digits;
    EXPECT_FALSE(r.fits) << digits;
  }
  for (const auto& [digits, base] : std::vector<std::pair<std::string, int>>{
           {"", 10}, {"-1", 10}, {"+1", 16}, {"1a", 10}, {"0x1", 16}, {"1 ", 10}, {"g", 16}}) {
    EXPECT_FALSE(ReadDigits(digits, base).digits_only) << "'" << digits << "'";
    EXPECT_FALSE(ReadDigits(digits, base).fits) << "'" << digits << "'";
  }
}

// strtoull took a sign after 0x and wrapped: "0x-1" was 2^64-1, "0x-40000000" 16384 PiB.
TEST(ParseSize, HexHasNoSignAndFitsIn64Bits) {
  EXPECT_EQ(*ParseSize("0xffffffffffffffff"), UINT64_MAX);
  EXPECT_EQ(*ParseSize("0X4000_0000"), 1ull << 30);
  for (const char* bad : {"0x-1", "0x-40000000", "0x+10", "-0x10", "+4096", "4-", "16M-"}) {
    auto r = ParseSize(bad);
    ASSERT_FALSE(r.ok()) << bad << " read as " << *r;
    EXPECT_NE(r.status().message().find(std::string("'") + bad + "'"), std::string::npos)
        << r.status().message();
  }
  EXPECT_NE(ParseSize("0x-1").status().message().find("no sign"), std::string::npos);
  auto big = ParseSize("0x10000000000000000");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("'0x10000000000000000' does not fit in 64 bits"),
            std::string::npos)
      << big.status().message();
  EXPECT_FALSE(ParseSize("0xfg").ok());
}

TEST(FormatSize, Readable) {
  EXPECT_EQ(FormatSize(188ull << 30), "188 GiB");
  EXPECT_EQ(FormatSize(4096), "4 KiB");
  EXPECT_EQ(FormatSize(100), "100 B");
}

TEST(CudaErrorNames, PerEra) {
  EXPECT_EQ(CudaErrorName("cuda-4.1-r285", 30), "cudaErrorUnknown");
  EXPECT_EQ(CudaErrorName("cuda-13.0-r580", 999), "cudaErrorUnknown");
  EXPECT_EQ(CudaErrorName("cuda-13.0-r580", 1), "cudaErrorInvalidValue");
  EXPECT_EQ(CudaErrorFromName("cuda-4.1-r285", "cudaErrorInvalidValue"), 11);
  EXPECT_EQ(CudaErrorFromName("cuda-13.0-r580", "cudaErrorHostMemoryAlreadyRegistered"), 712);
  EXPECT_EQ(CudaErrorFromName("cuda-13.0-r580", "cudaErrorNope"), -1);
}

TEST(RegisterFlags, NamesRoundTrip) {
  EXPECT_EQ(RegisterFlagsName(kRegisterPortable | kRegisterIoMemory), "portable|iomemory");
  EXPECT_EQ(RegisterFlagsName(0), "default");
  EXPECT_EQ(*ParseRegisterFlag("IoMemory"), kRegisterIoMemory);
  EXPECT_FALSE(ParseRegisterFlag("fast").ok());
}

TEST(Names, ParseEnums) {
  EXPECT_EQ(*ParseMemoryType("uc-"), MemoryType::kUncachedMinus);
  EXPECT_EQ(*ParseMapMode("pages"), MapMode::kPages);
  EXPECT_EQ(*ParseCacheType("wc"), CacheType::kWriteCombining);
  EXPECT_FALSE(ParseCacheType("fast").has_value());
  EXPECT_EQ(ErrnoFromName("ENOTTY"), ENOTTY);
}

TEST(Fnv, KnownVector) {
  // FNV-1a 64 of "a" is 0xaf63dc4c8601ec8c (the published test vector).
  EXPECT_EQ(Fnv1a64("a", 1), 0xaf63dc4c8601ec8cull);
  // Continuation equals one pass.
  EXPECT_EQ(Fnv1a64("ab", 2), Fnv1a64("b", 1, Fnv1a64("a", 1)));
}

// The FUSE daemon's worker threads charge one world's clock at once (docs/reliability.md "tsan"):
// no charge may be lost, and ThreadSanitizer must see no race. 0.5 s steps add up exactly.
TEST(VirtualClock, ChargesFromSeveralThreadsAllCount) {
  VirtualClock clock;
  constexpr int kThreads = 4, kCharges = 100000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&clock] {
      for (int i = 0; i < kCharges; ++i) clock.Charge(0.5);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(clock.NowSeconds(), 0.5 * kThreads * kCharges);
  clock.Charge(-1);  // a negative or zero cost moves nothing
  clock.Charge(0);
  EXPECT_EQ(clock.NowSeconds(), 0.5 * kThreads * kCharges);
}

}  // namespace
}  // namespace resmem
