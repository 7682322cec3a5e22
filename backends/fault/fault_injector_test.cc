#include "backends/fault/fault_injector.h"

#include <cerrno>

#include "gtest/gtest.h"

namespace resmem {
namespace {

FaultRule ErrorRule(const std::string& point, FaultTrigger trigger) {
  FaultRule r;
  r.point = point;
  r.trigger = trigger;
  r.effect = FaultEffect::kError;
  r.error = Status::Errno(EIO, "injected");
  return r;
}

TEST(FaultInjector, RefusesUnknownPointNamingTheKnownOnes) {
  FaultInjector f(1);
  Status s = f.AddRule(ErrorRule("gpu.teleport", FaultTrigger::kAlways));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("gpu.copy"), std::string::npos);
}

TEST(FaultInjector, NthFiresOnceOnTheNthCall) {
  FaultInjector f(1);
  ASSERT_TRUE(f.AddRule(FaultRule::ErrorOnCall("gpu.copy", 3, Status::Errno(EIO, "injected"))).ok());
  EXPECT_FALSE(f.Check("gpu.copy").fired);
  EXPECT_FALSE(f.Check("gpu.copy").fired);
  FaultOutcome o = f.Check("gpu.copy");
  EXPECT_TRUE(o.fired);
  EXPECT_EQ(o.status.code(), EIO);
  EXPECT_FALSE(f.Check("gpu.copy").fired);
  EXPECT_EQ(f.calls("gpu.copy"), 4u);
  ASSERT_EQ(f.fired().size(), 1u);
  EXPECT_EQ(f.fired()[0].call, 3u);
}

TEST(FaultInjector, AddressRangeFiresOnOverlapOnly) {
  FaultInjector f(1);
  FaultRule r = ErrorRule("region.read", FaultTrigger::kAddressRange);
  r.range_start = 0x1000;
  r.range_end = 0x2000;
  ASSERT_TRUE(f.AddRule(r).ok());
  EXPECT_FALSE(f.Check("region.read", 0, 0x1000).fired);
  EXPECT_TRUE(f.Check("region.read", 0xfff, 2).fired);
  EXPECT_FALSE(f.Check("region.read", 0x2000, 16).fired);
}

TEST(FaultInjector, ProbabilityIsReproducibleFromTheSeed) {
  auto pattern = [](uint64_t seed) {
    FaultInjector f(seed);
    FaultRule r = ErrorRule("gpu.copy", FaultTrigger::kProbability);
    r.probability = 0.3;
    EXPECT_TRUE(f.AddRule(r).ok());
    std::string bits;
    for (int i = 0; i < 64; ++i) bits += f.Check("gpu.copy").fired ? '1' : '0';
    return bits;
  };
  EXPECT_EQ(pattern(42), pattern(42));
  EXPECT_NE(pattern(42), pattern(43));
  const std::string p = pattern(7);
  const auto ones = std::count(p.begin(), p.end(), '1');
  EXPECT_GT(ones, 5);
  EXPECT_LT(ones, 40);
}

TEST(FaultInjector, EffectsCarryTheirParameters) {
  FaultInjector f(9);
  FaultRule delay;
  delay.point = "host.memcpy";
  delay.effect = FaultEffect::kDelay;
  delay.delay_seconds = 0.25;
  ASSERT_TRUE(f.AddRule(delay).ok());
  EXPECT_DOUBLE_EQ(f.Check("host.memcpy").delay_seconds, 0.25);

  FaultRule shrt;
  shrt.point = "gpu.copy";
  shrt.effect = FaultEffect::kShortCopy;
  shrt.short_fraction = 0.25;
  ASSERT_TRUE(f.AddRule(shrt).ok());
  EXPECT_EQ(f.Check("gpu.copy", 0, 1000).short_length, 250u);

  FaultRule corrupt;
  corrupt.point = "stream.block";
  corrupt.effect = FaultEffect::kCorrupt;
  corrupt.max_fires = 1;
  ASSERT_TRUE(f.AddRule(corrupt).ok());
  FaultOutcome o = f.Check("stream.block", 0, 4096);
  EXPECT_TRUE(o.fired);
  EXPECT_LT(o.corrupt_offset, 4096u);
  EXPECT_NE(o.corrupt_xor, 0);
  EXPECT_FALSE(f.Check("stream.block", 0, 4096).fired);  // max_fires
}

TEST(FaultInjector, ValidatesParameters) {
  FaultInjector f(1);
  FaultRule r = ErrorRule("gpu.copy", FaultTrigger::kProbability);
  r.probability = 1.5;
  EXPECT_FALSE(f.AddRule(r).ok());
  FaultRule e;
  e.point = "gpu.copy";
  e.effect = FaultEffect::kError;  // no error code
  EXPECT_FALSE(f.AddRule(e).ok());
}

}  // namespace
}  // namespace resmem
