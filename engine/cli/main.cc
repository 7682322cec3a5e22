// resmem: test the path from reserved physical memory to NVIDIA GPUs.
//   resmem run scenarios/            run every scenario on the simulator, print the verdicts
//   resmem doctor                    name the known failures this machine would hit
//   resmem COMMAND --help            the command's options
//   resmem --version                 the version (//:version.bzl)
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "engine/cli/command.h"
#include "engine/cli/version.h"

namespace {

void PrintHelp() {
  std::cout << "resmem: simulation and fault injection for reserved physical memory -> NVIDIA GPU\n\n"
               "usage: resmem COMMAND [options]\n       resmem --version\n\ncommands:\n";
  for (const auto& c : resmem::cli::Commands()) {
    std::string name = c.name;
    name.resize(12, ' ');
    std::cout << "  " << name << c.summary << "\n";
  }
  std::cout << "\n`resmem COMMAND --help` explains a command. Exit codes: 0 ok, 1 a check failed,\n"
               "2 bad input, 3 a needed part is unavailable here, 4 internal error.\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    PrintHelp();
    return args.empty() ? resmem::cli::kExitBadInput : resmem::cli::kExitOk;
  }
  if (args[0] == "--version") {
    std::cout << "resmem " RESMEM_VERSION "\n";
    return resmem::cli::kExitOk;
  }
  const std::string name = args[0];
  args.erase(args.begin());
  for (const auto& c : resmem::cli::Commands()) {
    if (c.name != name) continue;
    if (resmem::cli::WantsHelp(args)) {
      std::cout << c.usage;
      return resmem::cli::kExitOk;
    }
    return c.run(args);
  }
  std::cerr << "resmem: unknown command '" << name << "'; `resmem --help` lists the commands\n";
  return resmem::cli::kExitBadInput;
}
