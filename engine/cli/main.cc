// resmem: test the path from reserved physical memory to NVIDIA GPUs.
//   resmem run scenarios/            run every scenario on the simulator, print the verdicts
//   resmem doctor                    name the known failures this machine would hit
//   resmem COMMAND --help            the command's options (from its CLI11 definition)
//   resmem --version                 the version (//:version.bzl)
#include <iostream>
#include <string>
#include <vector>

#include "engine/cli/command.h"
#include "engine/cli/version.h"

int main(int argc, char** argv) {
  const resmem::cli::Program program{
      "resmem", "resmem: simulation and fault injection for reserved physical memory -> NVIDIA GPU",
      "resmem " RESMEM_VERSION};
  return resmem::cli::RunProgram(program, std::vector<std::string>(argv + 1, argv + argc),
                                 std::cout, std::cerr);
}
