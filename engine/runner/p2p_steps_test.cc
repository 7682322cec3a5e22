// The GPUDirect RDMA steps (p2p_*) through the runner on the simulator: what they observe, and that
// their expectations (pins, hits, evictions, events, path, data) fail when the model disagrees.
#include <string>

#include "engine/runner/runner.h"
#include "engine/runner/scenario_text.h"
#include "engine/scenario/scenario.h"
#include "gtest/gtest.h"

namespace resmem::engine {
namespace {

constexpr char kHead[] = R"x(
[scenario]
name = "p2p"
kind = "check"
seed = 1
[machine]
preset = "seed000-workstation"
[[step]]
do = "p2p_setup"
gpu = "kepler-guide"
[[step]]
do = "p2p_alloc"
as = "ring"
length = "224M"
)x";

ScenarioResult RunText(const std::string& steps, RunOptions options = {}) {
  return RunScenarioText(std::string(kHead) + steps, "p2p.toml", options);
}

// The real GPUDirect part (gpudirect=kmod) on a machine without the lane's modules: the scenario
// is UNAVAILABLE with what to load, not FAILED, and [step.on.kmod] is not what the sim runs.
TEST(P2pSteps, AMissingRealPartIsUnavailableNamingWhatToLoad) {
  RunOptions options;
  options.options["gpudirect"] = "kmod";
  options.options["p2p_provider"] = "/nonexistent-resmem-dir/nv_p2p_standin";
  auto r = RunText(R"x(
[[step]]
do = "p2p_dma"
buffer = "ring"
expect = { data = "intact" }
)x", options);
  EXPECT_EQ(r.verdict, ScenarioVerdict::kUnavailable) << r.reason;
  EXPECT_NE(r.reason.find("step 1 (p2p_setup"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("load nv_p2p_standin.ko"), std::string::npos) << r.reason;
  ASSERT_EQ(r.steps.size(), 3u);
  EXPECT_EQ(r.steps[1].verdict, StepVerdict::kNotRun);
}

TEST(P2pSteps, ARingThatFitsIsPinnedOnceAndObserved) {
  auto r = RunText(R"x(
[[step]]
do = "p2p_dma"
buffer = "ring"
block = "32M"
rounds = 2
expect = { pins = 7, hits = 7, evictions = 0, path = "same-switch", data = "intact" }
)x");
  EXPECT_EQ(r.verdict, ScenarioVerdict::kPassed) << r.reason;
  ASSERT_EQ(r.steps.size(), 3u);
  EXPECT_EQ(r.steps[2].numbers.at("transfers"), 14);
  EXPECT_GT(r.steps[2].numbers.at("mbps"), 0);
  EXPECT_NE(r.headline.find("7 pins, 7 hits, 0 evictions"), std::string::npos) << r.headline;
}

TEST(P2pSteps, TheHeadlineSeparatesWhatOneStepShows) {
  // A rate, a data verdict and a path from one step read as three parts, not "MB/sdata".
  auto r = RunText(R"x(
[[step]]
do = "p2p_dma"
buffer = "ring"
block = "32M"
expect = { mbps = 5690, tolerance = 0.01, data = "intact", path = "same-switch" }
)x");
  EXPECT_EQ(r.verdict, ScenarioVerdict::kPassed) << r.reason;
  EXPECT_NE(r.headline.find(" MB/s, data intact, same-switch"), std::string::npos) << r.headline;
}

TEST(P2pSteps, AWrongCountFailsAndSaysWhatWasObserved) {
  auto r = RunText(R"x(
[[step]]
do = "p2p_dma"
buffer = "ring"
block = "32M"
rounds = 2
expect = { hits = 3 }
)x");
  EXPECT_EQ(r.verdict, ScenarioVerdict::kFailed);
  EXPECT_NE(r.reason.find("hits is 7, expected 3"), std::string::npos) << r.reason;
}

// A pin of 1 MiB of the ring, then its cudaFree, whose events must contain `events` in order.
std::string PinThenFree(const std::string& events) {
  return R"x(
[[step]]
do = "p2p_pin"
buffer = "ring"
length = "1M"
[[step]]
do = "p2p_free"
buffer = "ring"
expect = { events = )x" + events + " }\n";
}

TEST(P2pSteps, EventsMustHappenInTheGivenOrder) {
  auto ok = RunText(PinThenFree(
      R"x(["calls free_callback(data)", "driver: forgets page table 1", "nvidia: frees page table 1"])x"));
  EXPECT_EQ(ok.verdict, ScenarioVerdict::kPassed) << ok.reason;
  auto bad = RunText(PinThenFree(R"x(["nvidia: frees page table 1", "driver: forgets page table 1"])x"));
  EXPECT_EQ(bad.verdict, ScenarioVerdict::kFailed);
  EXPECT_NE(bad.reason.find("event 2 of the expectation did not happen after event 1"), std::string::npos)
      << bad.reason;
}

TEST(P2pSteps, CachedTokensNeedAnEarlierQuery) {
  auto r = RunText(R"x(
[[step]]
do = "p2p_pin"
buffer = "ring"
tokens = "cached"
)x");
  EXPECT_EQ(r.verdict, ScenarioVerdict::kFailed);
  EXPECT_NE(r.reason.find("no p2p_tokens step queried 'ring'"), std::string::npos) << r.reason;
}

TEST(P2pSteps, AnUnknownGpudirectPartIsAnErrorNamingTheKnownOnes) {
  RunOptions o;
  o.options["gpudirect"] = "edu";
  auto r = RunText("", o);
  EXPECT_EQ(r.verdict, ScenarioVerdict::kError);
  EXPECT_NE(r.reason.find("no gpudirect part 'edu'"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("sim"), std::string::npos) << r.reason;
}

}  // namespace
}  // namespace resmem::engine
