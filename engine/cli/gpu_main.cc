// A small launcher of the GPU commands (bench, stream, calibrate) for the hardware-in-the-loop
// run, for hosts where the full `resmem` binary is not built: `resmem-gpu COMMAND ARGS...`.
#include <iostream>
#include <string>
#include <vector>

#include "engine/cli/command.h"
#include "engine/cli/version.h"

int main(int argc, char** argv) {
  const resmem::cli::Program program{
      "resmem-gpu", "resmem-gpu: the GPU commands of resmem (bench, stream, calibrate)",
      "resmem-gpu " RESMEM_VERSION};
  return resmem::cli::RunProgram(program, std::vector<std::string>(argv + 1, argv + argc),
                                 std::cout, std::cerr);
}
