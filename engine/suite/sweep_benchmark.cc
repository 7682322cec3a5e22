// The simulator at scale (docs/benchmarks.md "Simulator at scale"): the standard sweep of
// 10,080 cases (reservation sizes x MTRR layouts x driver profiles, engine/suite/sweep.h) on the
// simulator, then the seed suite; wall time and peak RSS of each. Prints figures, never fails on
// a slow machine (targets: sweep of 10,000 cases < 10 s and < 200 MB; seed suite < 1 s).
// Exit 1 when a case's outcome is not what the rules say (that is a wrong answer, not slowness).
//
//   sweep_benchmark [SCENARIO_DIR] [--cases N]
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "engine/report/report.h"
#include "engine/suite/suite.h"
#include "engine/suite/sweep.h"

namespace {

double PeakRssMb() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;
}

// User + system CPU seconds of this process: on a shared machine the wall time also holds the
// time other processes had the cores.
double CpuSeconds() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "scenarios";
  size_t cases = 0;  // 0: the whole space
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--cases") == 0 && i + 1 < argc) {
      cases = std::strtoull(argv[++i], nullptr, 10);
    } else if (argv[i][0] != '-') {
      dir = argv[i];
    } else {
      std::fprintf(stderr, "usage: sweep_benchmark [SCENARIO_DIR] [--cases N]\n");
      return 2;
    }
  }
  const resmem::engine::SweepSpace space = resmem::engine::StandardSweepSpace();
  if (cases == 0 || cases > space.size()) cases = space.size();

  double cpu0 = CpuSeconds();
  auto t0 = std::chrono::steady_clock::now();
  auto sweep = resmem::engine::RunSweep(space, 0, cases);
  const double sweep_s = Seconds(t0);
  const double sweep_cpu = CpuSeconds() - cpu0;
  if (!sweep.ok()) {
    std::fprintf(stderr, "sweep_benchmark: %s\n", sweep.status().ToString().c_str());
    return 2;
  }
  const double sweep_rss = PeakRssMb();
  std::printf("sweep on the simulator: %zu cases (%zu reservation sizes x %zu MTRR layouts x %zu "
              "driver profiles), %zu passed, %zu failed\n",
              sweep->cases, space.reservations.size(), space.layouts.size(),
              space.profiles.size(), sweep->passed, sweep->failed);
  std::printf("sweep wall: %.3f s, CPU %.3f s (%.1f us wall per case; target < 10 s for 10,000)\n",
              sweep_s, sweep_cpu, sweep_s / sweep->cases * 1e6);
  std::printf("sweep peak RSS: %.1f MB (target < 200 MB)\n", sweep_rss);
  for (const auto& f : sweep->failures) std::printf("  FAILED %s\n", f.c_str());

  cpu0 = CpuSeconds();
  t0 = std::chrono::steady_clock::now();
  auto suite = resmem::engine::RunSuite(dir, {});
  const double suite_s = Seconds(t0);
  const double suite_cpu = CpuSeconds() - cpu0;
  if (!suite.ok()) {
    std::fprintf(stderr, "sweep_benchmark: seed suite: %s\n", suite.status().message().c_str());
    return 2;
  }
  const auto summary = resmem::engine::Summarise(*suite);
  std::printf("seed suite (%s): %d cases, %d failed, wall %.3f s, CPU %.3f s (target < 1 s), peak "
              "RSS so far %.1f MB\n",
              dir.c_str(), summary.total(), summary.failed, suite_s, suite_cpu, PeakRssMb());
  return sweep->failed == 0 ? 0 : 1;
}
