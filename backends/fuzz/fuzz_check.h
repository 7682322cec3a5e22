// What a fuzz target does when a property it checks does not hold: print the finding and abort,
// so libFuzzer records a crash with its reproducer and the Bazel replay test fails.
#ifndef RESMEM_BACKENDS_FUZZ_FUZZ_CHECK_H_
#define RESMEM_BACKENDS_FUZZ_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>
#include <string>

namespace resmem::fuzz {

[[noreturn]] inline void Finding(const std::string& what) {
  std::fprintf(stderr, "FUZZ FINDING: %s\n", what.c_str());
  std::abort();
}

}  // namespace resmem::fuzz

#endif  // RESMEM_BACKENDS_FUZZ_FUZZ_CHECK_H_
