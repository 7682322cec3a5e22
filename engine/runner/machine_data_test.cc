// A machine given as data in the scenario, the boot step's user_map/dmesg expectations against
// the kernel's printed map, and the doctor step's exact findings, on the simulator.
#include <gtest/gtest.h>

#include "engine/runner/runner.h"
#include "engine/runner/scenario_text.h"

namespace resmem::engine {
namespace {

const char kMachine[] = R"(
[scenario]
name = "inline-machine"
[machine]
name = "two-gig"
cmdline = "memmap=64M$0x40000000"
e820 = [
  { start = 0x0, last = 0x9fbff, type = "usable" },
  { start = 0x9fc00, last = 0x9ffff, type = "reserved" },
  { start = 0xf0000, last = 0xfffff, type = "reserved" },
  { start = 0x100000, last = 0x7fffffff, type = "usable" },
]
mmio = [{ start = 0x80000000, last = 0xfebfffff, name = "PCI Bus 0000:00" }]
)";

ScenarioResult RunText(const std::string& steps) {
  return RunScenarioText(std::string(kMachine) + steps, "t.toml");
}

const char kUserMap[] =
    "  \"user: [mem 0x0000000000000000-0x000000000009fbff] usable\",\n"
    "  \"user: [mem 0x000000000009fc00-0x000000000009ffff] reserved\",\n"
    "  \"user: [mem 0x00000000000f0000-0x00000000000fffff] reserved\",\n"
    "  \"user: [mem 0x0000000000100000-0x000000003fffffff] usable\",\n"
    "  \"user: [mem 0x0000000040000000-0x0000000043ffffff] reserved\",\n"
    "  \"user: [mem 0x0000000044000000-0x000000007fffffff] usable\",\n";

TEST(MachineData, TheLoggedUserMapMatchesLineForLine) {
  auto r = RunText(std::string("[[step]]\ndo = \"boot\"\nexpect.user_map = [\n") + kUserMap + "]\n");
  EXPECT_EQ(r.verdict, ScenarioVerdict::kPassed) << r.reason;
}

TEST(MachineData, AWrongUserMapFailsWithTheFirstDifference) {
  std::string map = kUserMap;
  map.replace(map.find("0x0000000043ffffff"), 18, "0x0000000047ffffff");
  auto r = RunText(std::string("[[step]]\ndo = \"boot\"\nexpect.user_map = [\n") + map + "]\n");
  ASSERT_EQ(r.verdict, ScenarioVerdict::kFailed);
  EXPECT_NE(r.reason.find("the user map differs from line 5 (expected 6 user: lines, the kernel printed 6)"),
            std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("expected: user: [mem 0x0000000040000000-0x0000000047ffffff] reserved"),
            std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("printed:  user: [mem 0x0000000040000000-0x0000000043ffffff] reserved"),
            std::string::npos) << r.reason;
}

TEST(MachineData, AShorterUserMapSaysTheCounts) {
  auto r = RunText("[[step]]\ndo = \"boot\"\nexpect.user_map = [\"user: [mem 0x0000000000000000-0x000000000009fbff] usable\"]\n");
  ASSERT_EQ(r.verdict, ScenarioVerdict::kFailed);
  EXPECT_NE(r.reason.find("expected 1 user: lines, the kernel printed 6"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("expected: (no more lines)"), std::string::npos) << r.reason;
}

TEST(MachineData, DmesgLinesMustAppearInOrder) {
  auto ok = RunText(
      "[[step]]\ndo = \"boot\"\nexpect.dmesg = [\"BIOS-e820: [mem 0x0000000000100000-0x000000007fffffff] usable\", "
      "\"user-defined physical RAM map:\", \"user: [mem 0x0000000040000000-0x0000000043ffffff] reserved\"]\n");
  EXPECT_EQ(ok.verdict, ScenarioVerdict::kPassed) << ok.reason;
  auto bad = RunText(
      "[[step]]\ndo = \"boot\"\nexpect.dmesg = [\"user-defined physical RAM map:\", "
      "\"BIOS-e820: [mem 0x0000000000100000-0x000000007fffffff] usable\"]\n");
  ASSERT_EQ(bad.verdict, ScenarioVerdict::kFailed);
  EXPECT_NE(bad.reason.find("dmesg line 2 of the expectation was not printed after line 1"), std::string::npos)
      << bad.reason;
}

TEST(MachineData, FindingsIsTheExactList) {
  auto r = RunText("[[step]]\ndo = \"doctor\"\nexpect.findings = [\"no-such-finding\"]\n");
  ASSERT_EQ(r.verdict, ScenarioVerdict::kFailed);
  EXPECT_NE(r.reason.find("expected exactly [no-such-finding]"), std::string::npos) << r.reason;
}

}  // namespace
}  // namespace resmem::engine
