// The definition of every step kind, in one table (step_defs.cc): its name, what it does, its
// arguments (type, required or default, unit, allowed values, meaning, and the member of the
// kind's struct in steps.h it fills), and the expectations it may carry. From this one table
//  - the loader checks a [[step]] and builds its typed step (scenario.cc),
//  - the step tables of docs/scenarios.md are printed (StepTableMarkdown; step_table_test keeps
//    the file equal to it; `bazel run //engine/scenario:step_table -- --update` rewrites it).
#ifndef RESMEM_ENGINE_SCENARIO_STEP_DEFS_H_
#define RESMEM_ENGINE_SCENARIO_STEP_DEFS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backends/api/status.h"
#include "engine/scenario/steps.h"

namespace resmem::scenario {

// A value as the file wrote it, once the sweep case's entry of a keyed table is picked.
struct RawValue {
  enum class Kind { kString, kInt, kFloat, kBool, kList } kind = Kind::kString;
  std::string str;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::vector<std::string> list;  // lists hold strings
  int line = 0;

  std::string Text() const;      // as written, for messages and reports ("a|b" for a list)
  std::string TypeName() const;  // "a string", "an integer", ... for messages
};

enum class ArgType {
  kSize,         // bytes: an integer, or "16M", "0x1000"
  kWholeOrSize,  // a size, or "all"; absent or "all": the whole of what it applies to
  kName,         // a name another step made (a mapping, buffer or context)
  kText,         // free text (a device path)
  kInt,
  kBool,
  kNumber,       // integer or decimal
  kFlags,        // cudaHostRegister flag names, one or a list
  kChoice,       // one of `choices`
};
const char* ArgTypeName(ArgType type);  // as the docs write it: "size", "name", ...

struct ArgDef {
  std::string name;
  ArgType type = ArgType::kText;
  bool required = false;
  std::string unit;          // "Hz", "" where the type says it
  std::string default_text;  // what absence means; "" when required
  std::string help;
  std::vector<std::string> choices;  // kChoice
  // Converts `value` (a problem is returned as text, without position) and stores it in `args`,
  // which holds the definition's own kind.
  std::function<Status(const RawValue& value, StepArgs* args)> set;
};

struct ExpectDef {
  std::string name;
  std::string type;  // as the docs write it: "size", "number", "list of strings", ...
  std::string help;
  // Converts `value` (problem as text) and stores it, with its text and line, in `out`.
  std::function<Status(const RawValue& value, Expectation* out)> set;
  // The text as written where `e` has this expectation (lists longer than 3: "[N lines]").
  std::function<std::optional<std::string>(const Expectation& e)> describe;
};

struct StepDef {
  std::string name;
  std::string help;
  StepArgs blank;  // the kind with its defaults
  std::vector<ArgDef> args;
  std::vector<std::string> expectations;  // the kind's own; CommonExpectations() apply to all

  const ArgDef* FindArg(const std::string& arg) const;
  bool AllowsExpectation(const std::string& expectation) const;
  std::vector<std::string> AllowedExpectations() const;  // the common ones, then the own
};

// Every step kind, in the order of StepArgs' alternatives.
const std::vector<StepDef>& StepDefs();
const StepDef* FindStepDef(const std::string& name);
const std::vector<std::string>& StepNames();
// Every expectation, in name order; the ones every step takes.
const std::vector<ExpectDef>& ExpectDefs();
const ExpectDef* FindExpectDef(const std::string& name);
const std::vector<std::string>& CommonExpectations();

// The markdown block of docs/scenarios.md between kStepTableBegin and kStepTableEnd (both
// excluded): the step table and the expectation table.
inline constexpr char kStepTableBegin[] =
    "<!-- generated from engine/scenario/step_defs.cc; do not edit: "
    "bazel run //engine/scenario:step_table -- --update -->\n";
inline constexpr char kStepTableEnd[] = "<!-- end of the generated step tables -->\n";
std::string StepTableMarkdown();
// `doc` with the block between the markers replaced by StepTableMarkdown(); an error when the
// markers are missing or out of order.
Result<std::string> WithCurrentStepTable(const std::string& doc);

}  // namespace resmem::scenario

#endif  // RESMEM_ENGINE_SCENARIO_STEP_DEFS_H_
