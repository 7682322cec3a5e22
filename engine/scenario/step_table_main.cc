// Prints the step tables of docs/scenarios.md from the step definitions (step_defs.cc).
//   bazel run //engine/scenario:step_table               the tables, on stdout
//   bazel run //engine/scenario:step_table -- --update   rewrites them in docs/scenarios.md of the
//                                                        workspace (between the markers)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "engine/scenario/step_defs.h"

int main(int argc, char** argv) {
  using resmem::scenario::StepTableMarkdown;
  using resmem::scenario::WithCurrentStepTable;
  if (argc == 1) {
    std::cout << StepTableMarkdown();
    return 0;
  }
  if (argc != 2 || std::strcmp(argv[1], "--update") != 0) {
    std::cerr << "usage: step_table [--update]  (--update rewrites docs/scenarios.md's step tables)\n";
    return 2;
  }
  // `bazel run` starts the binary in its runfiles; the workspace is named in this variable.
  const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY");
  const std::string path = std::string(workspace ? workspace : ".") + "/docs/scenarios.md";
  std::ifstream in(path);
  if (!in) {
    std::cerr << "step_table: cannot read " << path << "; run it with `bazel run` from the workspace\n";
    return 1;
  }
  std::stringstream doc;
  doc << in.rdbuf();
  in.close();
  auto updated = WithCurrentStepTable(doc.str());
  if (!updated.ok()) {
    std::cerr << "step_table: " << path << ": " << updated.status().message() << "\n";
    return 1;
  }
  if (*updated == doc.str()) {
    std::cout << path << ": the step tables are current\n";
    return 0;
  }
  std::ofstream out(path, std::ios::trunc);
  out << *updated;
  if (!out) {
    std::cerr << "step_table: cannot write " << path << "\n";
    return 1;
  }
  std::cout << path << ": step tables rewritten\n";
  return 0;
}
