// RenderJunit: a passing, a failing, an N/A, an UNAVAILABLE and an ERROR case give the elements a
// CI reads, grouped by folder with counts; odd characters in messages stay well-formed.
#include "engine/report/junit.h"

#include <string>

#include "gtest/gtest.h"

namespace resmem::engine {
namespace {

ScenarioResult Case(const std::string& file, const std::string& name, ScenarioVerdict v) {
  ScenarioResult r;
  r.file = file;
  r.name = name;
  r.kind = "bug";
  r.backend = "sim";
  r.seed = 7;
  r.verdict = v;
  r.seconds = 0.25;
  return r;
}

std::vector<ScenarioResult> Sample() {
  ScenarioResult ok = Case("scenarios/seed000/a.toml", "seed000-a", ScenarioVerdict::kReproduced);
  ok.case_label = "64G";
  ok.headline = "register: cuda 30 cudaErrorUnknown";
  ScenarioResult bad = Case("scenarios/seed000/b.toml", "seed000-b", ScenarioVerdict::kFailed);
  bad.seed = 77;
  bad.reason = "step 3 (register, line 9): expected cudaErrorUnknown; observed ok";
  StepResult st;
  st.index = 3;
  st.op = "register";
  st.line = 9;
  st.verdict = StepVerdict::kFail;
  st.observed = "ok";
  st.expected = "error=cudaErrorUnknown";
  st.note = "expected cudaErrorUnknown";
  bad.steps.push_back(st);
  bad.dmesg.push_back("resmem: mapped 4 MiB");
  ScenarioResult na = Case("scenarios/card/c.toml", "card-c", ScenarioVerdict::kNotApplicable);
  na.reason = "no module on the GPU machine";
  ScenarioResult un = Case("scenarios/card/d.toml", "card-d", ScenarioVerdict::kUnavailable);
  un.reason = "no GPU here";
  ScenarioResult err = Case("e.toml", "e", ScenarioVerdict::kError);
  err.reason = "unknown backend";
  return {ok, bad, na, un, err};
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Junit, ClassNameIsTheFolder) {
  EXPECT_EQ(JunitClassName("scenarios/card/backpressure.toml"), "scenarios.card");
  EXPECT_EQ(JunitClassName("./scenarios/seed000/x.toml"), "scenarios.seed000");
  EXPECT_EQ(JunitClassName("/tmp/t/x.toml"), "tmp.t");
  EXPECT_EQ(JunitClassName("x.toml"), ".");
}

TEST(Junit, SuitesPerFolderWithCounts) {
  const std::string x = RenderJunit(Sample());
  EXPECT_TRUE(Has(x, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites "));
  EXPECT_TRUE(Has(x, "tests=\"5\" failures=\"1\" errors=\"1\" skipped=\"2\" time=\"1.250000\">"));
  EXPECT_TRUE(Has(x, "<testsuite name=\"scenarios.seed000\" tests=\"2\" failures=\"1\" errors=\"0\" "
                     "skipped=\"0\" time=\"0.500000\">"));
  EXPECT_TRUE(Has(x, "<testsuite name=\"scenarios.card\" tests=\"2\" failures=\"0\" errors=\"0\" "
                     "skipped=\"2\""));
  EXPECT_TRUE(Has(x, "<testsuite name=\".\" tests=\"1\" failures=\"0\" errors=\"1\""));
  EXPECT_LT(x.find("scenarios.seed000"), x.find("scenarios.card"));  // order of the run
}

TEST(Junit, PassingCaseHasNameClassTimeAndHeadline) {
  const std::string x = RenderJunit(Sample());
  EXPECT_TRUE(Has(x, "<testcase name=\"seed000-a [64G]\" classname=\"scenarios.seed000\" "
                     "time=\"0.250000\">\n      <system-out>REPRODUCED (bug, seed 7, "
                     "scenarios/seed000/a.toml): register: cuda 30 cudaErrorUnknown</system-out>"));
}

TEST(Junit, FailureNamesStepObservationAndReplay) {
  const std::string x = RenderJunit(Sample());
  const size_t at = x.find("<failure message=\"step 3 (register, line 9): expected "
                           "cudaErrorUnknown; observed ok\" type=\"FAILED\">");
  ASSERT_NE(at, std::string::npos) << x;
  const std::string body = x.substr(at, x.find("</failure>", at) - at);
  EXPECT_TRUE(Has(body, "step 3 (register, line 9) FAIL: expected error=cudaErrorUnknown: expected "
                        "cudaErrorUnknown; observed ok"));
  EXPECT_TRUE(Has(body, "dmesg: resmem: mapped 4 MiB"));
  EXPECT_TRUE(Has(body, "seed 77; replay: resmem run scenarios/seed000/b.toml --backend sim --seed 77"));
}

TEST(Junit, NotApplicableAndUnavailableAreSkippedWithTheReason) {
  const std::string x = RenderJunit(Sample());
  EXPECT_TRUE(Has(x, "<skipped message=\"N/A: no module on the GPU machine\"/>"));
  EXPECT_TRUE(Has(x, "<skipped message=\"UNAVAILABLE: no GPU here\"/>"));
  EXPECT_TRUE(Has(x, "<error message=\"unknown backend\" type=\"ERROR\">"));
}

TEST(Junit, OddCharactersAreEscaped) {
  EXPECT_EQ(XmlEscape("a<b>&\"c\" 'd'"), "a&lt;b&gt;&amp;&quot;c&quot; &apos;d&apos;");
  EXPECT_EQ(XmlEscape("x\ny\tz\r"), "x&#10;y&#9;z&#13;");
  EXPECT_EQ(XmlEscape(std::string("nul\0bel\x07", 8)), "nul\\x00bel\\x07");
  EXPECT_EQ(XmlEscape("\xC3\xA9t\xC3\xA9 \xE2\x80\x94"), "\xC3\xA9t\xC3\xA9 \xE2\x80\x94");  // UTF-8 kept
  EXPECT_EQ(XmlEscape("bad \xFF\xC3"), "bad \\xFF\\xC3");  // not UTF-8: as text
  std::vector<ScenarioResult> odd = {Case("s/x.toml", "a<b>&c", ScenarioVerdict::kFailed)};
  odd[0].reason = "observed \"cudaErrorX\" <&>\x01";
  const std::string x = RenderJunit(odd);
  EXPECT_TRUE(Has(x, "name=\"a&lt;b&gt;&amp;c\""));
  EXPECT_TRUE(Has(x, "message=\"observed &quot;cudaErrorX&quot; &lt;&amp;&gt;\\x01\""));
}

}  // namespace
}  // namespace resmem::engine
