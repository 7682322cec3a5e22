// The replay driver of the fuzz targets under Bazel (gcc has no libFuzzer): every file of the
// corpus folders named on the command line goes through LLVMFuzzerTestOneInput once, so the
// committed corpus (the seeds, what fuzzing found, and each crash's reproducer) is a regression
// test in `bazel test //...` and in the asan lane. ci/fuzz.sh links the same target files with
// libFuzzer's own main instead.
//
// Usage: TARGET_test DIR_OR_FILE... ; exit 0 when every input ran (a target aborts on a broken
// property, and a sanitizer stops the process), 1 when an argument is unreadable or names no
// input at all (an empty corpus proves nothing).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
    return 1;
  }
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    const fs::path arg(argv[i]);
    if (fs::is_directory(arg, ec)) {
      for (const auto& entry : fs::directory_iterator(arg, ec))
        if (entry.is_regular_file()) inputs.push_back(entry.path());
    } else if (fs::is_regular_file(arg, ec)) {
      inputs.push_back(arg);
    } else {
      std::fprintf(stderr, "%s: no such file or folder; pass a corpus folder\n", argv[i]);
      return 1;
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "no corpus file under the arguments: nothing replayed, nothing proved\n");
    return 1;
  }
  std::sort(inputs.begin(), inputs.end());
  size_t bytes = 0;
  for (const auto& path : inputs) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    const std::string data = ss.str();
    bytes += data.size();
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(data.data()), data.size());
  }
  std::printf("replayed %zu corpus files (%zu bytes): no crash, no failed check\n", inputs.size(),
              bytes);
  return 0;
}
