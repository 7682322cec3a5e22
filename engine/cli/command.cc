#include "engine/cli/command.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <ostream>
#include <utility>

#include "CLI/CLI.hpp"

namespace resmem::cli {
namespace {

std::vector<Command>& Registry() {
  static std::vector<Command> commands;
  return commands;
}

// An empty list shows no default (always_capture_default would show "[]").
void HideEmptyDefaults(CLI::App& app) {
  for (CLI::Option* opt : app.get_options())
    if (opt->get_default_str() == "[]") opt->default_str("");
}

// The program's app with every registered command as a subcommand, and each command's action.
struct ProgramApp {
  std::unique_ptr<CLI::App> app;
  std::vector<std::pair<CLI::App*, Action>> actions;
};

ProgramApp Build(const Program& program) {
  ProgramApp p;
  p.app = MakeApp(program.about, program.name);
  p.app->set_version_flag("--version", program.version, "print the version and exit");
  p.app->require_subcommand(1);
  p.app->footer("`" + program.name +
                " COMMAND --help` explains a command. Exit codes: 0 ok, 1 a check failed,\n"
                "2 bad input, 3 a needed part is unavailable here, 4 internal error.");
  for (const Command& c : Commands()) {
    CLI::App* sub = p.app->add_subcommand(c.name, c.summary);
    p.actions.emplace_back(sub, c.define(*sub));
    HideEmptyDefaults(*sub);
  }
  return p;
}

// --help or --version: CLI11 reports them as errors whose exit code is Success.
bool AsksForHelp(const CLI::ParseError& e) {
  return e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success);
}

// CLI11 reports help, version and every problem as an exception: they end here, as the exit
// codes of command.h. `who` is "resmem run" for a problem inside the command `run`.
int Report(const CLI::ParseError& e, const CLI::App& app, const std::string& who,
           std::ostream& out, std::ostream& err) {
  if (dynamic_cast<const CLI::CallForVersion*>(&e)) {
    out << e.what() << "\n";
    return kExitOk;
  }
  if (AsksForHelp(e)) {  // --help
    out << app.help();
    return kExitOk;
  }
  err << who << ": " << e.what() << "\n"
      << "`" << who << " --help` lists the options, their values and defaults\n";
  return kExitBadInput;
}

std::vector<std::string> Reversed(const std::vector<std::string>& args) {
  return std::vector<std::string>(args.rbegin(), args.rend());  // CLI11 takes them last first
}

// What `app` was given and took for nothing, in the order given. CLI11 lists there too the `--`
// that ended the options (no extra: remaining_size() leaves it out), which is dropped.
std::vector<std::string> Leftover(const CLI::App& app) {
  std::vector<std::string> left = app.remaining(false);
  if (left.size() > app.remaining_size(false)) left.erase(std::find(left.begin(), left.end(), "--"));
  return left;
}

// "The following arguments were not expected: A B", A and B in the order given (CLI11's
// ExtrasError joins its list last first, as it parses).
CLI::ExtrasError NotExpected(const std::vector<std::string>& args) {
  return CLI::ExtrasError(Reversed(args));
}

// "--json=" (nothing after the '=') before any `--`: CLI11 takes the next argument as the value,
// so `run --json= a.toml` took a.toml for the report's file and then said "PATH is required".
std::optional<CLI::ValidationError> ValueLeftOut(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size() && args[i] != "--"; ++i) {
    const std::string& a = args[i];
    if (a.size() < 4 || a.rfind("--", 0) != 0 || a.find('=') != a.size() - 1) continue;
    const std::string name = a.substr(0, a.size() - 1);
    const std::string taken = i + 1 < args.size()
                                  ? ", so the next argument (" + args[i + 1] +
                                        ") would be taken as its value"
                                  : "";
    return CLI::ValidationError(name, "'" + a + "' has nothing after the '='" + taken +
                                          "; write " + name + "=VALUE or " + name + " VALUE");
  }
  return std::nullopt;
}

// CLI11 2.1 leaves a command at a `--` once its positionals hold what they need and hands what
// follows to the program: `run a.toml -- b.toml` said b.toml was not expected, where after a
// `--` everything is a path. A command whose positional takes any number of values gets a hidden
// positional that wants one more, which keeps it there; it is never given one (the one before
// it takes them all). Only for a line with a `--`: the usage would show it as "[...]". Returns
// those added, to take out again before a help is printed.
std::vector<std::pair<CLI::App*, CLI::Option*>> KeepAfterDashes(
    ProgramApp& p, const std::vector<std::string>& args, std::vector<std::string>* never_given) {
  std::vector<std::pair<CLI::App*, CLI::Option*>> added;
  if (std::find(args.begin(), args.end(), "--") == args.end()) return added;
  for (const auto& entry : p.actions) {
    CLI::App* sub = entry.first;
    const auto unbounded = sub->get_options([](const CLI::Option* o) {
      return o->get_positional() &&
             o->get_items_expected_max() >= CLI::detail::expected_max_vector_size;
    });
    if (unbounded.empty()) continue;
    CLI::Option* keep = sub->add_option("AFTER-DASHES", *never_given)->expected(1, -1)->group("");
    added.emplace_back(sub, keep);
  }
  return added;
}

// The help words (--help, -h) that come after the line's first `--`, when none comes before it:
// after a `--` nothing is an option, yet CLI11 2.1 hands what a command leaves there to the
// program, which answered `plan 1G -- --help` with the help. Empty otherwise.
std::vector<std::string> HelpAfterDashes(const std::vector<std::string>& args) {
  const auto is_help = [](const std::string& a) { return a == "--help" || a == "-h"; };
  const auto dashes = std::find(args.begin(), args.end(), "--");
  std::vector<std::string> after;
  if (dashes == args.end() || std::any_of(args.begin(), dashes, is_help)) return after;
  std::copy_if(dashes, args.end(), std::back_inserter(after), is_help);
  return after;
}

// Why a line is refused, or its help: a value left out after '=' first, then what nobody took
// (CLI11 checks what is required before it complains of what it did not expect; a mistyped
// option is the likelier cause of both), then CLI11's own error. `command`: the command chosen,
// whose leftovers come before the program's (what the program holds came after them).
int Explain(const CLI::ParseError& e, const CLI::App& app, const CLI::App* command,
            const std::string& who, const std::vector<std::string>& args, std::ostream& out,
            std::ostream& err) {
  if (AsksForHelp(e)) {
    const std::vector<std::string> words = HelpAfterDashes(args);
    return words.empty() ? Report(e, app, who, out, err)
                         : Report(NotExpected(words), app, who, out, err);
  }
  if (auto left_out = ValueLeftOut(args)) return Report(*left_out, app, who, out, err);
  std::vector<std::string> unexpected = command ? Leftover(*command) : std::vector<std::string>();
  for (const std::string& a : Leftover(app)) unexpected.push_back(a);
  if (!unexpected.empty()) return Report(NotExpected(unexpected), app, who, out, err);
  return Report(e, app, who, out, err);
}

// The refusal of a line CLI11 could not parse (or of one ValueLeftOut refuses), or its help.
int Refuse(const CLI::ParseError& e, const ProgramApp& p, const Program& program,
           const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const auto chosen = p.app->get_subcommands();
  if (chosen.empty() && !AsksForHelp(e)) {
    if (args.empty()) {
      err << program.name << ": give a command\n" << p.app->help();
      return kExitBadInput;
    }
    if (args[0].rfind("-", 0) != 0) {
      err << program.name << ": unknown command '" << args[0] << "'; `" << program.name
          << " --help` lists the commands\n";
      return kExitBadInput;
    }
  }
  if (chosen.empty()) return Explain(e, *p.app, nullptr, program.name, args, out, err);
  const std::string who = program.name + " " + chosen.front()->get_name();
  return Explain(e, *p.app, chosen.front(), who, args, out, err);
}

}  // namespace

bool RegisterCommand(Command command) {
  auto& reg = Registry();
  reg.push_back(std::move(command));
  std::sort(reg.begin(), reg.end(),
            [](const Command& a, const Command& b) { return a.name < b.name; });
  return true;
}

const std::vector<Command>& Commands() { return Registry(); }

int RunProgram(const Program& program, const std::vector<std::string>& args, std::ostream& out,
               std::ostream& err) {
  ProgramApp p = Build(program);
  std::vector<std::string> never_given;
  const auto kept = KeepAfterDashes(p, args, &never_given);
  std::vector<std::string> reversed = Reversed(args);
  try {
    p.app->parse(reversed);
    if (auto left_out = ValueLeftOut(args)) throw *left_out;
  } catch (const CLI::ParseError& e) {
    if (AsksForHelp(e))
      for (const auto& [sub, option] : kept) sub->remove_option(option);
    return Refuse(e, p, program, args, out, err);
  }
  const auto chosen = p.app->get_subcommands();
  for (const auto& [sub, action] : p.actions)
    if (!chosen.empty() && sub == chosen.front()) return action();
  err << program.name << ": no command ran\n";  // require_subcommand(1) makes this unreachable
  return kExitInternal;
}

std::optional<std::string> CommandHelp(const Program& program, const std::string& name) {
  ProgramApp p = Build(program);
  for (const auto& entry : p.actions) {
    if (entry.first->get_name() == name) return entry.first->help(program.name);
  }
  return std::nullopt;
}

std::unique_ptr<CLI::App> MakeApp(const std::string& description, const std::string& name) {
  auto app = std::make_unique<CLI::App>(description, name);
  app->option_defaults()->always_capture_default();  // every option's default in its help line
  app->get_formatter()->column_width(32);
  return app;
}

std::optional<int> ParseArgs(CLI::App& app, const std::vector<std::string>& args,
                             std::ostream& out, std::ostream& err) {
  HideEmptyDefaults(app);
  std::vector<std::string> reversed = Reversed(args);
  try {
    app.parse(reversed);
    if (auto left_out = ValueLeftOut(args)) throw *left_out;
  } catch (const CLI::ParseError& e) {
    return Explain(e, app, nullptr, app.get_name(), args, out, err);
  }
  return std::nullopt;
}

}  // namespace resmem::cli
