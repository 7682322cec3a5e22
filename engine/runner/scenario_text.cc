#include "engine/runner/scenario_text.h"

#include "engine/scenario/scenario.h"
#include "gtest/gtest.h"

namespace resmem::engine {

ScenarioResult RunScenarioText(const std::string& text, const std::string& name,
                               const RunOptions& options) {
  auto parsed = scenario::ParseScenarioText(text, name);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  if (!parsed.ok()) return {};
  return RunScenario(parsed->front(), options);
}

}  // namespace resmem::engine
