#include "engine/cli/command.h"

#include <algorithm>
#include <memory>
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
  std::vector<std::pair<const CLI::App*, Action>> actions;
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

// CLI11 reports help, version and every problem as an exception: they end here, as the exit
// codes of command.h. `who` is "resmem run" for a problem inside the command `run`.
int Report(const CLI::ParseError& e, const CLI::App& app, const std::string& who,
           std::ostream& out, std::ostream& err) {
  if (dynamic_cast<const CLI::CallForVersion*>(&e)) {
    out << e.what() << "\n";
    return kExitOk;
  }
  if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {  // --help
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
  std::vector<std::string> reversed = Reversed(args);
  try {
    p.app->parse(reversed);
  } catch (const CLI::ParseError& e) {
    const auto chosen = p.app->get_subcommands();
    if (chosen.empty() && e.get_exit_code() != static_cast<int>(CLI::ExitCodes::Success)) {
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
    const std::string who =
        chosen.empty() ? program.name : program.name + " " + chosen.front()->get_name();
    // CLI11 checks what is required before it complains of what it did not expect; a mistyped
    // option is the likelier cause of both, so it is named first.
    const std::vector<std::string> unexpected =
        chosen.empty() ? p.app->remaining(false) : chosen.front()->remaining(false);
    if (!unexpected.empty() && !dynamic_cast<const CLI::ExtrasError*>(&e) &&
        e.get_exit_code() != static_cast<int>(CLI::ExitCodes::Success))
      return Report(CLI::ExtrasError(unexpected), *p.app, who, out, err);
    return Report(e, *p.app, who, out, err);
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
  } catch (const CLI::ParseError& e) {
    return Report(e, app, app.get_name(), out, err);
  }
  return std::nullopt;
}

}  // namespace resmem::cli
