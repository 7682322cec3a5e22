// Subcommands of the `resmem` command line register themselves here, so each command lives in its
// own library (engine/bench, engine/stream, ...) and the CLI needs no list. A command library must
// be built with alwayslink = 1 so its registration object is linked.
//
// Exit codes, shared by every command (README.md "Exit codes"):
//   0 success: every expectation held
//   1 a check failed: an expectation, a regression threshold, a data-integrity check
//   2 bad input: usage, a malformed scenario, an unknown backend/flag (the message says which)
//   3 unavailable here: the part a command needs is absent (no GPU, no module, no FUSE)
//   4 internal error
#ifndef RESMEM_ENGINE_CLI_COMMAND_H_
#define RESMEM_ENGINE_CLI_COMMAND_H_

#include <functional>
#include <string>
#include <vector>

namespace resmem::cli {

enum ExitCode : int {
  kExitOk = 0,
  kExitCheckFailed = 1,
  kExitBadInput = 2,
  kExitUnavailable = 3,
  kExitInternal = 4,
};

struct Command {
  std::string name;     // "run", "doctor", "bench", ...
  std::string summary;  // one line for `resmem --help`
  std::string usage;    // the full `resmem NAME --help` text
  // args excludes the program and command names. Writes to stdout/stderr; returns an ExitCode.
  std::function<int(const std::vector<std::string>& args)> run;
};

// Adds a command; returns true so it can initialise a static.
bool RegisterCommand(Command command);
const std::vector<Command>& Commands();

// True when args ask for help (-h, --help).
bool WantsHelp(const std::vector<std::string>& args);

}  // namespace resmem::cli

#define RESMEM_REGISTER_COMMAND(ident, ...) \
  static const bool resmem_cmd_##ident = ::resmem::cli::RegisterCommand(__VA_ARGS__)

#endif  // RESMEM_ENGINE_CLI_COMMAND_H_
