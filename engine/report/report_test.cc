#include "engine/report/report.h"

#include <sstream>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace resmem::engine {
namespace {

std::vector<ScenarioResult> Sample() {
  ScenarioResult ok;
  ok.name = "seed000-register-pfnmap-r285";
  ok.file = "scenarios/seed000/register_pfnmap_r285.toml";
  ok.kind = "bug";
  ok.backend = "sim";
  ok.seed = 1;
  ok.verdict = ScenarioVerdict::kReproduced;
  ok.headline = "register: cuda 30 cudaErrorUnknown";
  ScenarioResult bad = ok;
  bad.name = "broken";
  bad.verdict = ScenarioVerdict::kFailed;
  bad.seed = 77;
  bad.reason = "step 3 (register, line 9): expected cudaErrorUnknown";
  StepResult st;
  st.index = 3;
  st.op = "register";
  st.verdict = StepVerdict::kFail;
  st.observed = "ok";
  st.expected = "error=cudaErrorUnknown";
  st.note = "expected cudaErrorUnknown";
  bad.steps.push_back(st);
  ScenarioResult na = ok;
  na.name = "elsewhere";
  na.verdict = ScenarioVerdict::kNotApplicable;
  na.reason = "no module on the GPU machine";
  return {ok, bad, na};
}

TEST(Report, TableShowsVerdictsFailuresWithReplayAndSummary) {
  std::ostringstream out;
  RenderTable(Sample(), false, out);
  const std::string t = out.str();
  EXPECT_NE(t.find("REPRODUCED"), std::string::npos);
  EXPECT_NE(t.find("register: cuda 30 cudaErrorUnknown"), std::string::npos);
  EXPECT_NE(t.find("replay: resmem run scenarios/seed000/register_pfnmap_r285.toml --backend sim --seed 77"),
            std::string::npos);
  EXPECT_NE(t.find("no module on the GPU machine"), std::string::npos);
  EXPECT_NE(t.find("3 scenario cases: 1 bugs reproduced, 0 fixes working, 0 checks passed, 1 failed"),
            std::string::npos);
}

TEST(Report, JsonIsParseableAndCarriesTheSeed) {
  auto j = nlohmann::json::parse(RenderJson(Sample()));
  EXPECT_EQ(j["backend"], "sim");
  ASSERT_EQ(j["scenarios"].size(), 3u);
  EXPECT_EQ(j["scenarios"][1]["seed"], 77);
  EXPECT_EQ(j["scenarios"][1]["verdict"], "FAILED");
  EXPECT_EQ(j["summary"]["failed"], 1);
  EXPECT_EQ(j["summary"]["not_applicable"], 1);
}

}  // namespace
}  // namespace resmem::engine
