// The managed-memory steps (seed 004) through the runner on the simulator: what they observe, and
// that their expectations (faults, migrated, remote, mbps_min/mbps_max, events) fail when the model
// disagrees; bad names, ranges and sizes are errors that say what to do.
#include <string>

#include "engine/runner/runner.h"
#include "engine/runner/scenario_text.h"
#include "engine/scenario/scenario.h"
#include "gtest/gtest.h"

namespace resmem::engine {
namespace {

constexpr char kHead[] = R"x(
[scenario]
name = "managed"
kind = "check"
seed = 1
[machine]
preset = "h100-host"
[[step]]
do = "managed_alloc"
as = "buf"
length = "64M"
[[step]]
do = "managed_touch"
buffer = "buf"
by = "cpu"
write = true
)x";

ScenarioResult RunText(const std::string& steps) {
  return RunScenarioText(std::string(kHead) + steps, "managed.toml");
}

TEST(ManagedSteps, AFirstTouchIsObservedAndHeadlined) {
  auto r = RunText(R"x(
[[step]]
do = "managed_touch"
buffer = "buf"
expect = { faults = 192, migrated = "64M", mbps_max = 20000 }
)x");
  EXPECT_EQ(r.verdict, ScenarioVerdict::kPassed) << r.reason;
  ASSERT_EQ(r.steps.size(), 3u);
  EXPECT_EQ(r.steps[2].numbers.at("evicted"), 0);
  EXPECT_NE(r.headline.find("192 faults, 64 MiB migrated"), std::string::npos) << r.headline;
}

TEST(ManagedSteps, WrongCountsAndBoundsFailWithTheFigures) {
  auto r = RunText(R"x(
[[step]]
do = "managed_touch"
buffer = "buf"
expect = { faults = 1, migrated = "1M", mbps_min = 40000 }
)x");
  EXPECT_EQ(r.verdict, ScenarioVerdict::kFailed);
  const std::string& note = r.steps[2].note;
  EXPECT_NE(note.find("faults is 192, expected 1"), std::string::npos) << note;
  EXPECT_NE(note.find("migrated 64 MiB is not 1M"), std::string::npos) << note;
  EXPECT_NE(note.find("is below 40000"), std::string::npos) << note;
}

TEST(ManagedSteps, AdviceAndPingPongReportRoundsAndEvents) {
  auto r = RunText(R"x(
[[step]]
do = "managed_advise"
buffer = "buf"
length = "2M"
advice = "preferred-location"
target = "gpu"
[[step]]
do = "managed_pingpong"
buffer = "buf"
length = "2M"
rounds = 10
expect = { migrated = "40M", events = ["keeps thrashing"] }
)x");
  EXPECT_EQ(r.verdict, ScenarioVerdict::kPassed) << r.reason;
  EXPECT_GT(r.steps[3].numbers.at("round_us"), 0);
}

TEST(ManagedSteps, BadNamesRangesAndSizesAreErrorsThatSayWhatToDo) {
  auto unknown = RunText(R"x(
[[step]]
do = "managed_prefetch"
buffer = "nope"
)x");
  EXPECT_EQ(unknown.verdict, ScenarioVerdict::kFailed);
  EXPECT_NE(unknown.reason.find("create it with managed_alloc"), std::string::npos) << unknown.reason;
  auto past = RunText(R"x(
[[step]]
do = "managed_touch"
buffer = "buf"
offset = "32M"
length = "64M"
)x");
  EXPECT_NE(past.reason.find("runs past the allocation's end"), std::string::npos) << past.reason;
  auto bar = RunText(R"x(
[[step]]
do = "alloc_device"
as = "dev"
length = "1M"
[[step]]
do = "bar_read"
device = "dev"
length = "2M"
)x");
  EXPECT_NE(bar.reason.find("larger than the device buffer"), std::string::npos) << bar.reason;
  auto tiny = RunText(R"x(
[[step]]
do = "gpu_reserve"
leave = "4K"
)x");
  EXPECT_NE(tiny.reason.find("leave at least"), std::string::npos) << tiny.reason;
}

}  // namespace
}  // namespace resmem::engine
