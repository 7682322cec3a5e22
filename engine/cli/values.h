// Value kinds the commands' definitions share (engine/cli/command.h), as CLI11 options:
//   a byte size ("16M", "4G", "0x1000", "1.5G": ParseSize in backends/api/memory.h), alone or as a
//   comma-separated list; the error names the option, the text and why it is no size;
//   a whole number that must not be negative.
#ifndef RESMEM_ENGINE_CLI_VALUES_H_
#define RESMEM_ENGINE_CLI_VALUES_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "backends/api/status.h"

namespace resmem::cli {

// A count or a seed: a whole number, 0 or more, decimal or 0x hex, at most 2^64-1. (CLI11 alone
// would read "-1" into an unsigned option as 2^64-1, and "010" as octal 8: a decimal number with
// a leading zero is refused, naming the number meant.)
CLI::Validator NonNegativeInteger();

// The same with a least value: `--blocks 0` measures nothing ("'0' is less than 1, the least").
CLI::Validator WholeNumberFrom(uint64_t least);

// A number (a rate, a fraction), finite and 0 or more: "-5" is refused as "not a number of 0 or
// more" (CLI::NonNegativeNumber would print the range up to DBL_MAX, all 309 digits of it).
CLI::Validator NonNegativeReal();

// A FILE or DIR option's check: '' names nothing (a script's unset variable, where `--json ""`
// wrote no report and said nothing); the message says to give a path, or, unless `required`, to
// leave the option out.
CLI::Validator PathNamed(bool required = false);

// A check that answers with a Status (a parser of the engine): its message when the value is
// refused. `name` is what the value is ("BACKEND").
// --machine's check: '' names no machine (a script's unset variable would otherwise send the
// command to the real host); `without` says what leaving the option out does ("plan for this
// machine").
CLI::Validator MachineNamed(const std::string& without);

CLI::Validator CheckedBy(const std::string& name,
                         std::function<Status(const std::string&)> check);

// Turns a SIZE text into its number of bytes before CLI11 converts it; refuses what ParseSize
// refuses and sizes below `least_bytes`.
CLI::Validator ByteSize(uint64_t least_bytes = 0);

// "16M", "4G", "12345": the short spelling ParseSize reads back, for defaults in the help.
std::string SpellSize(uint64_t bytes);

// `--name SIZE` bound to `*bytes`; the help shows the default as SIZE spells it.
CLI::Option* AddSizeOption(CLI::App& app, const std::string& name, uint64_t* bytes,
                           const std::string& help, uint64_t least_bytes = 0);

// The same for a size that has no default (absent: nullopt).
CLI::Option* AddSizeOption(CLI::App& app, const std::string& name, std::optional<uint64_t>* bytes,
                           const std::string& help);

// `--name SIZE,SIZE,...` bound to `*sizes`: the list given replaces the default.
CLI::Option* AddSizeListOption(CLI::App& app, const std::string& name,
                               std::vector<uint64_t>* sizes, const std::string& help);

}  // namespace resmem::cli

#endif  // RESMEM_ENGINE_CLI_VALUES_H_
