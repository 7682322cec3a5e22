#include "engine/scenario/scenario.h"

#include "gtest/gtest.h"

namespace resmem::scenario {
namespace {

constexpr char kGood[] = R"(
[scenario]
name = "demo"
kind = "bug"
seed = 9

[machine]
preset = "seed000-workstation"
cmdline = "mem=4G memmap=16G$4G"

[driver]
mode = "pages"
cache = "wc"

[cuda]
profile = "cuda-4.1-r285"

[[fault]]
point = "gpu.copy"
trigger = "nth"
nth = 2
error = "cudaErrorUnknown"

[[step]]
do = "open"

[[step]]
do = "mmap"
as = "res"
length = "1G"
[step.on.cuda]
skip = "no module there"

[[step]]
do = "register"
span = "res"
flags = ["portable", "iomemory"]
expect = { error = "cudaErrorUnknown" }
)";

TEST(Scenario, ParsesEverySection) {
  auto r = ParseScenarioText(kGood, "demo.toml");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 1u);
  const Scenario& s = (*r)[0];
  EXPECT_EQ(s.name, "demo");
  EXPECT_EQ(s.seed, 9u);
  EXPECT_EQ(s.machine.cmdline, "mem=4G memmap=16G$4G");
  EXPECT_EQ(s.driver.mode, MapMode::kPages);
  EXPECT_EQ(s.driver.cache, CacheType::kWriteCombining);
  ASSERT_EQ(s.faults.size(), 1u);
  EXPECT_EQ(s.faults[0].error.code(), 30);  // 4.1 numbering, since [cuda] came first
  ASSERT_EQ(s.steps.size(), 3u);
  EXPECT_EQ(*s.steps[1].on.at("cuda").skip, "no module there");
  EXPECT_EQ(s.steps[2].expect.Get("error")->str, "cudaErrorUnknown");
  EXPECT_EQ(s.steps[2].Arg("flags")->list.size(), 2u);
}

void ExpectError(const std::string& text, const std::string& want_line, const std::string& want_key) {
  auto r = ParseScenarioText(text, "bad.toml");
  ASSERT_FALSE(r.ok()) << "parsed: " << text;
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("bad.toml:" + want_line + ":"), std::string::npos) << m;
  EXPECT_NE(m.find("'" + want_key + "'"), std::string::npos) << m;
}

TEST(Scenario, MalformedFilesNameFileLineAndKey) {
  const std::string head = "[scenario]\nname = \"x\"\n[machine]\npreset = \"seed000-workstation\"\n";
  ExpectError(head + "[[step]]\ndo = \"teleport\"\n", "6", "step.do");
  ExpectError(head + "[[step]]\ndo = \"open\"\nspeed = 3\n", "7", "step.speed");
  ExpectError(head + "[[step]]\ndo = \"mmap\"\nas = \"r\"\nlength = \"12Q\"\n", "8", "step.length");
  ExpectError(head + "[[step]]\ndo = \"register\"\n", "5", "step.span");
  ExpectError(head + "[driver]\nmode = \"fast\"\n[[step]]\ndo = \"open\"\n", "6", "driver.mode");
  ExpectError("[scenario]\nname = \"x\"\n[machine]\npreset = \"nope\"\n[[step]]\ndo = \"open\"\n", "4", "machine.preset");
  ExpectError(head + "[[fault]]\npoint = \"gpu.warp\"\nerror = \"EIO\"\n[[step]]\ndo = \"open\"\n", "6", "fault.point");
  ExpectError(head + "[[step]]\ndo = \"open\"\nexpect = { speed = 1 }\n", "7", "step.expect.speed");
  ExpectError(head + "colour = \"red\"\n[[step]]\ndo = \"open\"\n", "5", "machine.colour");
  ExpectError(head + "[[step]]\ndo = \"open\"\nexpect = { error = \"nonsense\" }\n", "7", "step.expect.error");
}

TEST(Scenario, SyntaxErrorsNameTheLine) {
  auto r = ParseScenarioText("[scenario]\nname = \"x\n", "syn.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("syn.toml:2"), std::string::npos) << r.status().message();
}

TEST(Scenario, SweepMakesOneCasePerValueWithKeyedExpectations) {
  const std::string text = R"(
[scenario]
name = "sw"
[sweep]
size = ["1G", "2G"]
[machine]
preset = "seed000-workstation"
cmdline = "mem=4G memmap=${size}$4G"
[[step]]
do = "boot"
expect.usable_ram = { "1G" = "3G", "2G" = "3G" }
)";
  auto r = ParseScenarioText(text, "sw.toml");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].case_label, "size=1G");
  EXPECT_EQ((*r)[1].machine.cmdline, "mem=4G memmap=2G$4G");
  EXPECT_EQ((*r)[1].steps[0].expect.Get("usable_ram")->str, "3G");

  const std::string missing = R"(
[scenario]
name = "sw"
[sweep]
size = ["1G", "2G"]
[machine]
preset = "seed000-workstation"
[[step]]
do = "boot"
expect.usable_ram = { "1G" = "3G" }
)";
  auto m = ParseScenarioText(missing, "sw.toml");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("2G"), std::string::npos);
}

constexpr char kPerBackend[] = R"(
[scenario]
name = "per-backend"
not_applicable.cuda = { "128G" = "the cliff needs memory types" }

[sweep]
reservation = ["1G", "128G"]

[machine]
preset = "seed000-workstation"
cmdline = "mem=4G memmap=${reservation}$4G"

[[step]]
do = "open"

[[step]]
do = "mmap"
as = "res"
length = "1G"
[step.on.cuda]
length = "4K"
writable = false
expect = { vm_flags = "pf io" }
)";

TEST(ScenarioFile, PerBackendArgumentsAndPerCaseNotApplicable) {
  auto cases = ParseScenarioText(kPerBackend, "per.toml");
  ASSERT_TRUE(cases.ok()) << cases.status().ToString();
  ASSERT_EQ(cases->size(), 2u);
  EXPECT_EQ((*cases)[0].not_applicable.count("cuda"), 0u);  // 1G applies
  EXPECT_EQ((*cases)[1].not_applicable.at("cuda"), "the cliff needs memory types");
  const auto& on = (*cases)[0].steps[1].on.at("cuda");
  EXPECT_EQ(on.args.at("length").str, "4K");
  EXPECT_FALSE(on.args.at("writable").b);
  EXPECT_EQ(on.expect->Get("vm_flags")->str, "pf io");
  EXPECT_EQ((*cases)[0].steps[1].Arg("length")->str, "1G");  // the step's own stays
}

TEST(ScenarioFile, PerBackendArgumentsAreCheckedLikeTheStepsOwn) {
  std::string text = kPerBackend;
  const std::string good = "length = \"4K\"";
  text.replace(text.find(good), good.size(), "lenght = \"4K\"");
  auto bad = ParseScenarioText(text, "per.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("per.toml:"), std::string::npos);
  EXPECT_NE(bad.status().message().find("step.on.cuda.lenght"), std::string::npos) << bad.status().message();

  text = kPerBackend;
  text.replace(text.find("writable = false"), 16, "writable = 3");
  bad = ParseScenarioText(text, "per.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("step.on.cuda.writable"), std::string::npos) << bad.status().message();

  text = kPerBackend;
  text.replace(text.find("[sweep]"), 7, "[swept]");
  bad = ParseScenarioText(text, "per.toml");
  ASSERT_FALSE(bad.ok());
}

}  // namespace
}  // namespace resmem::scenario

