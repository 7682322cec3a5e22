// Subcommands of the `resmem` command line register themselves here, so each command lives in its
// own library (engine/bench, engine/stream, ...) and the CLI needs no list. A command library must
// be built with alwayslink = 1 so its registration object is linked.
//
// One definition per command: `define` declares on a CLI11 app (libcli11-dev) the command's
// options and positionals - names, value types, defaults, choices, ranges, help text - bound to the
// command's own typed values, and returns the action that runs on those values once they parsed.
// Parsing, `--help` and every message about bad input come from that definition.
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
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

// CLI11 itself is included only where options are declared (values.h, transfer_options.h, the
// command sources): its header costs every source that includes it 8 s of compile time, 14 under
// the asan lane's sanitizers (2026-11-30), and a program's main() needs none of it.
namespace CLI {
class App;
}  // namespace CLI

namespace resmem::cli {

enum ExitCode : int {
  kExitOk = 0,
  kExitCheckFailed = 1,
  kExitBadInput = 2,
  kExitUnavailable = 3,
  kExitInternal = 4,
};

// What a command does once its options parsed: returns an ExitCode. Writes to stdout/stderr.
using Action = std::function<int()>;

struct Command {
  std::string name;     // "run", "doctor", "bench", ...
  std::string summary;  // one line: `resmem --help` lists it; the top of `resmem NAME --help`
  // Declares the options on `app` (already named and described) and returns the action. Called
  // once per parse, so the values it binds start from their defaults every time.
  std::function<Action(CLI::App& app)> define;
};

// Adds a command; returns true so it can initialise a static.
bool RegisterCommand(Command command);
const std::vector<Command>& Commands();

// A program made of the registered commands (resmem, resmem-gpu).
struct Program {
  std::string name;     // "resmem"
  std::string about;    // one line for `resmem --help`
  std::string version;  // `resmem --version` prints it
};

// `PROGRAM COMMAND ARGS...` (args exclude the program's own name). `--help` anywhere prints the
// help of the command named (of the program without one) to `out`, exit 0; `--version` likewise.
// Bad input (unknown command or option, a missing or malformed value, a value outside its choices
// or range) goes to `err` as "PROGRAM COMMAND: what is wrong" and the --help that explains, exit 2.
// Otherwise the command's action runs and its exit code is returned.
int RunProgram(const Program& program, const std::vector<std::string>& args, std::ostream& out,
               std::ostream& err);

// One command's help text, as `PROGRAM NAME --help` prints it; nullopt for an unknown name.
std::optional<std::string> CommandHelp(const Program& program, const std::string& name);

// An app set up as the commands' are (defaults shown in the help); subcommands inherit it.
std::unique_ptr<CLI::App> MakeApp(const std::string& description, const std::string& name);

// For a program with a single command line of its own (a probe binary, not a subcommand): parses
// `args` into `app` (made by MakeApp). nullopt: the values are set, go on; otherwise the exit code, the help or the
// error already written as RunProgram writes them.
std::optional<int> ParseArgs(CLI::App& app, const std::vector<std::string>& args,
                             std::ostream& out, std::ostream& err);

}  // namespace resmem::cli

#define RESMEM_REGISTER_COMMAND(ident, ...) \
  static const bool resmem_cmd_##ident = ::resmem::cli::RegisterCommand(__VA_ARGS__)

#endif  // RESMEM_ENGINE_CLI_COMMAND_H_
