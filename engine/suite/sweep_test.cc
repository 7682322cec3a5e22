// The sweep's cases give the outcomes the kernel's and CUDA's rules say (sweep.h), and a wrong
// expectation is caught: behaviour only, the speed is the benchmark's (sweep_benchmark).
#include "engine/suite/sweep.h"

#include <set>

#include "gtest/gtest.h"

namespace resmem::engine {
namespace {

constexpr uint64_t kGiB = 1ull << 30;

class SweepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = sim::MachinePreset("seed000-workstation");
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    machine_ = *m;
  }
  // The case with these parameters (the profile by name).
  SweepCase Find(uint64_t res_gib, uint64_t wb_gib, const std::string& profile) {
    for (size_t i = 0; i < space_.size(); ++i) {
      SweepCase c = space_.At(i);
      if (c.reservation_bytes == res_gib * kGiB && c.layout->wb_bytes == wb_gib * kGiB &&
          c.profile->name == profile) {
        return c;
      }
    }
    ADD_FAILURE() << "no case " << res_gib << "G " << wb_gib << "G " << profile;
    return space_.At(0);
  }
  const StepResult* StepOf(const ScenarioResult& r, const std::string& op) {
    for (const auto& s : r.steps) {
      if (s.op == op) return &s;
    }
    return nullptr;
  }
  SweepSpace space_ = StandardSweepSpace();
  sim::MachineSpec machine_;
};

TEST_F(SweepTest, SpaceHasTenThousandDistinctCases) {
  EXPECT_GE(space_.size(), 10000u);
  std::set<std::string> labels;
  for (size_t i = 0; i < space_.size(); ++i) labels.insert(space_.At(i).Label());
  EXPECT_EQ(labels.size(), space_.size());
}

TEST_F(SweepTest, CliffFollowsTheMtrrCoverage) {
  // 76 GiB at 4 GiB ends at 80 GiB: inside 80 GiB of WB; 77 GiB crosses it (the mtrr_cliff check).
  for (uint64_t res : {76, 77}) {
    SweepCase c = Find(res, 80, "pfnmap/wb/cuda-4.1-r285/default");
    ScenarioResult r = RunScenario(MakeSweepScenario(c, machine_), {});
    EXPECT_EQ(r.verdict, ScenarioVerdict::kPassed) << c.Label() << ": " << r.reason;
    const StepResult* map = StepOf(r, "mmap");
    ASSERT_NE(map, nullptr);
    EXPECT_EQ(map->texts.at("memory_type"), res == 76 ? "WB" : "UC-") << c.Label();
  }
}

TEST_F(SweepTest, RegistrationFollowsTheModeTheEraAndTheFlags) {
  struct Want {
    const char* profile;
    const char* observed;  // text the register step's observation contains
  } wants[] = {
      {"pfnmap/wb/cuda-4.1-r285/default", "cudaErrorUnknown"},
      {"pfnmap/wb/cuda-13.0-r580/default", "cudaErrorInvalidValue"},
      {"pfnmap/wc/cuda-13.0-r580/iomemory", "ok"},
      {"pages/uc/cuda-13.0-r580/default", "ok"},
      {"pages/wb/cuda-13.0-r580/iomemory", "cudaErrorInvalidValue"},
  };
  for (const Want& w : wants) {
    SweepCase c = Find(16, 128, w.profile);
    ScenarioResult r = RunScenario(MakeSweepScenario(c, machine_), {});
    EXPECT_EQ(r.verdict, ScenarioVerdict::kPassed) << c.Label() << ": " << r.reason;
    const StepResult* reg = StepOf(r, "register");
    ASSERT_NE(reg, nullptr);
    EXPECT_NE(reg->observed.find(w.observed), std::string::npos)
        << c.Label() << ": observed " << reg->observed;
  }
}

TEST_F(SweepTest, AWrongExpectationFailsTheCase) {
  SweepCase c = Find(77, 80, "pfnmap/wb/cuda-13.0-r580/default");
  scenario::Scenario s = MakeSweepScenario(c, machine_);
  s.steps[1].expect.memory_type->value = "WB";  // the truth is UC-
  ScenarioResult r = RunScenario(s, {});
  EXPECT_EQ(r.verdict, ScenarioVerdict::kFailed);
}

TEST_F(SweepTest, OneProfileAcrossEverySizeAndLayoutHolds) {
  const size_t slice = space_.reservations.size() * space_.layouts.size();
  auto totals = RunSweep(space_, slice * 4, slice);  // pfnmap/wc/cuda-13.0-r580/default
  ASSERT_TRUE(totals.ok()) << totals.status().ToString();
  EXPECT_EQ(totals->cases, slice);
  EXPECT_EQ(totals->failed, 0u) << (totals->failures.empty() ? "" : totals->failures[0]);
}

}  // namespace
}  // namespace resmem::engine
