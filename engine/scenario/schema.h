// The schema of scenario steps: each step's arguments (name, type, required, allowed values) and
// the expectations it can carry. Docs (docs/scenarios.md) list the same table.
#ifndef RESMEM_ENGINE_SCENARIO_SCHEMA_H_
#define RESMEM_ENGINE_SCENARIO_SCHEMA_H_

#include <string>
#include <vector>

#include "backends/api/status.h"
#include "engine/scenario/scenario.h"

namespace resmem::scenario {

enum class ArgType { kSize, kString, kInt, kBool, kNumber, kFlags, kName };

struct ArgSchema {
  std::string name;
  ArgType type;
  bool required;
  std::string help;
  std::vector<std::string> choices;  // for kString: allowed values (empty = any)
};

struct OpSchema {
  std::string name;
  std::string help;
  std::vector<ArgSchema> args;
  std::vector<std::string> expect_keys;
};

const OpSchema* FindOp(const std::string& name);
const std::vector<OpSchema>& AllOps();
// Checks a value against its argument's type and choices.
Status CheckArg(const ArgSchema& arg, const Value& value);

}  // namespace resmem::scenario

#endif  // RESMEM_ENGINE_SCENARIO_SCHEMA_H_
