// Calibration run on the CUDA model itself: the profile it writes must replay on the same model
// with no disagreement, and a profile edited to disagree must have that case listed.
#include "engine/calibrate/calibrate.h"

#include <gtest/gtest.h>

#include "engine/transfer/gpu_backend.h"

namespace resmem::calibrate {
namespace {

CalibrateOptions Small() {
  CalibrateOptions o;
  o.sizes = {64 << 10};
  o.bandwidth_sizes = {1 << 20};
  o.huge_sizes = {1ull << 40};
  o.passes = 1;
  o.memcpy_threads = {1};
  o.memcpy_bytes = 1 << 20;
  o.reserve_hugepages = false;
  return o;
}

TEST(Calibrate, SimProfileReplaysOnTheSimWithoutDisagreement) {
  auto b = transfer::MakeGpuBackend("sim");
  ASSERT_TRUE(b.ok());
  auto profile = RunCalibration(*b->gpu, *b->clock, Small());
  ASSERT_TRUE(profile.ok()) << profile.status().ToString();
  ASSERT_TRUE(profile->contains("registration"));
  // Every kind x flag for 64 KiB (hugetlb may be skipped without reserved pages).
  EXPECT_GE((*profile)["registration"].size(), 7u * 5u);
  bool file_refused = false;
  for (const auto& c : (*profile)["registration"])
    if (c["kind"] == "file" && c["flags"] == "default") file_refused = c["code"] == 1;
  EXPECT_TRUE(file_refused) << "the model must refuse a writable shared disk-file mapping";
  auto report = CompareWithSim(*profile);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_GT(report->code_cases, 40);
  EXPECT_EQ(report->bandwidth_cases, 6);
  for (const auto& d : report->disagreements) ADD_FAILURE() << d;
}

TEST(Calibrate, AnEditedCodeIsListedAsADisagreement) {
  auto b = transfer::MakeGpuBackend("sim");
  ASSERT_TRUE(b.ok());
  auto profile = RunCalibration(*b->gpu, *b->clock, Small());
  ASSERT_TRUE(profile.ok());
  (*profile)["registration"][0]["code"] = 999;
  (*profile)["bandwidth"][0]["gbps"] = 1000.0;
  auto report = CompareWithSim(*profile);
  ASSERT_TRUE(report.ok());
  ASSERT_EQ(report->disagreements.size(), 2u);
  EXPECT_NE(report->disagreements[0].find("measured 999"), std::string::npos);
  EXPECT_NE(report->ToMarkdown().find("## Disagreements (2)"), std::string::npos);
  EXPECT_FALSE(CompareWithSim(nlohmann::json::object()).ok());
}

}  // namespace
}  // namespace resmem::calibrate
