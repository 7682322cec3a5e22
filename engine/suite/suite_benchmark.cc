// The seed suite on the simulator: wall time and peak memory (prints figures, never fails on a
// slow machine). Targets: under 1 s wall and under 100 MB peak, 188 GB machines included.
// usage: suite_benchmark [SCENARIO_DIR] [REPEATS]
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "engine/report/report.h"
#include "engine/suite/suite.h"

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "scenarios";
  const int repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  std::vector<double> walls;
  resmem::engine::RunSummary summary;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = resmem::engine::RunSuite(dir, {});
    const auto t1 = std::chrono::steady_clock::now();
    if (!r.ok()) {
      std::fprintf(stderr, "suite_benchmark: %s\n", r.status().message().c_str());
      return 2;
    }
    summary = resmem::engine::Summarise(*r);
    walls.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  std::sort(walls.begin(), walls.end());
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("seed suite on the simulator: %d scenario cases (%d reproduced, %d fixed, %d checks, %d failed)\n",
              summary.total(), summary.reproduced, summary.fixed, summary.passed, summary.failed);
  std::printf("wall: median %.3f s, min %.3f s, max %.3f s over %d runs (target < 1 s)\n",
              walls[walls.size() / 2], walls.front(), walls.back(), repeats);
  std::printf("peak RSS: %.1f MB (target < 100 MB)\n", ru.ru_maxrss / 1024.0);
  return 0;
}
