// docs/scenarios.md holds the step tables that the step definitions print, byte for byte: a step,
// argument or expectation added, renamed or re-described in step_defs.cc must reach the docs.
#include <fstream>
#include <sstream>
#include <string>

#include "engine/scenario/step_defs.h"
#include "gtest/gtest.h"

namespace resmem::scenario {
namespace {

constexpr char kRegenerate[] =
    "regenerate with: bazel run //engine/scenario:step_table -- --update";

std::string ReadDoc() {
  std::ifstream in("docs/scenarios.md");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "" when equal, else the first line that differs, both versions.
std::string FirstDifference(const std::string& doc, const std::string& want) {
  std::istringstream a(doc), b(want);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool more_a = static_cast<bool>(std::getline(a, la));
    const bool more_b = static_cast<bool>(std::getline(b, lb));
    if (!more_a && !more_b) return "";
    if (!more_a || !more_b || la != lb)
      return "docs/scenarios.md line " + std::to_string(line) + ":\n  in the file: " +
             (more_a ? la : "(end of file)") + "\n  generated:   " + (more_b ? lb : "(end of file)");
  }
}

TEST(StepTable, DocsHoldTheGeneratedTables) {
  const std::string doc = ReadDoc();
  ASSERT_FALSE(doc.empty()) << "docs/scenarios.md is not in the test's runfiles";
  auto want = WithCurrentStepTable(doc);
  ASSERT_TRUE(want.ok()) << want.status().message();
  EXPECT_EQ(FirstDifference(doc, *want), "") << kRegenerate;
}

// The comparison fails on a difference: an edited row, a step the definitions lack.
TEST(StepTable, AnEditedTableIsCaught) {
  const std::string doc = ReadDoc();
  std::string edited = doc;
  const std::string row = "| `munmap` |";
  const size_t at = edited.find(row);
  ASSERT_NE(at, std::string::npos);
  edited.insert(at, "| `teleport` | move the data | - | - |\n");
  auto want = WithCurrentStepTable(edited);
  ASSERT_TRUE(want.ok());
  const std::string diff = FirstDifference(edited, *want);
  EXPECT_NE(diff.find("teleport"), std::string::npos) << diff;
  EXPECT_EQ(*want, doc);  // regenerating restores the file

  std::string no_markers = doc;
  no_markers.erase(no_markers.find(kStepTableEnd), sizeof kStepTableEnd - 1);
  auto missing = WithCurrentStepTable(no_markers);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("markers are missing"), std::string::npos);
}

// The table says what the definitions say: each kind, its required arguments, its defaults.
TEST(StepTable, RowsComeFromTheDefinitions) {
  const std::string table = StepTableMarkdown();
  for (const auto& d : StepDefs()) EXPECT_NE(table.find("| `" + d.name + "` |"), std::string::npos) << d.name;
  EXPECT_NE(table.find("`as` (name, required)"), std::string::npos);
  EXPECT_NE(table.find("`writable` (bool, default true)"), std::string::npos);
  EXPECT_NE(table.find("`passes` (integer, 1 to 1000, default 1)"), std::string::npos);
  EXPECT_NE(table.find("`blocks` (integer, at least 1, required)"), std::string::npos);
  EXPECT_NE(table.find("`rate_hz` (number, Hz, default flat out)"), std::string::npos);
  EXPECT_NE(table.find("`direction` (h2d \\| d2h, required)"), std::string::npos);
  for (const auto& e : ExpectDefs()) EXPECT_NE(table.find("| `" + e.name + "` |"), std::string::npos) << e.name;
}

}  // namespace
}  // namespace resmem::scenario
