// A small launcher of the GPU commands (bench, stream, calibrate) for the hardware-in-the-loop
// run, for hosts where the full `resmem` binary is not built: `resmem-gpu COMMAND ARGS...`.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "engine/cli/command.h"

int main(int argc, char** argv) {
  const auto& commands = resmem::cli::Commands();
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::puts("usage: resmem-gpu COMMAND [ARGS...]; commands:");
    for (const auto& c : commands) std::printf("  %-10s %s\n", c.name.c_str(), c.summary.c_str());
    return argc < 2 ? resmem::cli::kExitBadInput : resmem::cli::kExitOk;
  }
  for (const auto& c : commands)
    if (c.name == argv[1]) return c.run(std::vector<std::string>(argv + 2, argv + argc));
  std::fprintf(stderr, "resmem-gpu: unknown command '%s' (try --help)\n", argv[1]);
  return resmem::cli::kExitBadInput;
}
