// The H100 profile measured on the GPU machine (mock/gpu/profiles/h100.json, written by
// `resmem calibrate --backend cuda`) against the simulator's cuda-13.0-r580 profile: every return
// code must agree and every bandwidth class must lie within 15% (issue 4). The full list is
// printed, so a failure names each disagreement.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "engine/calibrate/calibrate.h"

namespace resmem::calibrate {
namespace {

TEST(Fidelity, H100ProfileAgreesWithTheSimulator) {
  std::ifstream in("mock/gpu/profiles/h100.json");
  ASSERT_TRUE(in) << "mock/gpu/profiles/h100.json missing from the test's runfiles";
  std::stringstream ss;
  ss << in.rdbuf();
  auto profile = nlohmann::json::parse(ss.str(), nullptr, false);
  ASSERT_FALSE(profile.is_discarded());
  EXPECT_EQ(profile.value("gpu", ""), "cuda") << "the committed profile must come from real hardware";
  auto report = CompareWithSim(profile, "cuda-13.0-r580", 0.15);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  std::printf("%s\n", report->ToMarkdown().c_str());
  EXPECT_GT(report->code_cases, 100);
  EXPECT_GT(report->bandwidth_cases, 0);
  for (const auto& d : report->disagreements) ADD_FAILURE() << d;
}

}  // namespace
}  // namespace resmem::calibrate
