// `resmem bench`: H2D and D2H bandwidth per transfer path and block size against a cudaMallocHost
// baseline measured in the same run. Each cell is the median of several passes (FACTS.md: any one
// pass can drop 10-50%); every pass's data is verified (block_check.h). Targets are printed, never
// asserted on timing: registered >= 98% of pinned, staged >= 90% (issue 4).
#ifndef RESMEM_ENGINE_BENCH_BENCH_H_
#define RESMEM_ENGINE_BENCH_BENCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "backends/api/clock.h"
#include "backends/api/gpu.h"
#include "engine/transfer/transfer_engine.h"

namespace resmem::bench {

// A row of the bench: a path and the host memory kind it runs on.
struct BenchPath {
  std::string name;       // "pinned", "registered-direct", "staged", ...
  std::string host_kind;  // backends/host kind ("memfd", "file", "anon"); "pinned" for baseline
  std::string engine_path;  // transfer engine path forced, or "" for the baseline
};
// pinned (baseline), registered-direct (memfd), registered-hugetlb (MAP_HUGETLB: 2 MiB pages,
// closer to a physically contiguous reservation; needs /proc/sys/vm/nr_hugepages), registered-chunked (memfd, 64 MiB pieces),
// staged (disk file: registration refused, so the engine stages), zero-copy-mapped (memfd),
// pageable (anonymous, unregistered).
std::vector<BenchPath> DefaultPaths();

struct BenchOptions {
  std::vector<uint64_t> sizes;  // default 64 KiB .. 256 MiB, x4
  std::vector<std::string> paths;  // names from DefaultPaths(); empty = all
  int passes = 5;
  uint64_t bytes_per_sample = 64ull << 20;  // small blocks are repeated up to this many bytes
  transfer::TransferOptions staging;  // the staged row's lanes, buffers, units (allowed is set here)
  uint64_t seed = 1;
  bool verbose = false;
};

struct BenchCell {
  std::string path;
  std::string direction;  // "H2D", "D2H"
  uint64_t size = 0;
  std::vector<double> pass_gbps;
  double median_gbps = 0;
  double ratio_to_pinned = 0;  // median / pinned median for the same direction and size
  uint64_t verify_failures = 0;
  std::string choice;  // the engine's "took ..." line
};

struct BenchResult {
  std::string backend;
  std::vector<BenchCell> cells;
  std::vector<std::string> notes;  // paths that could not run and why
  std::string ToJson() const;
  std::string ToTable() const;
  // Headline: ratios at the largest size for registered-direct and staged, per direction.
  std::string Headline() const;
};

Result<BenchResult> RunBench(Gpu& gpu, Clock& clock, const std::string& backend,
                             const BenchOptions& options);

// Reads a bench JSON back (for plotting on another machine).
Result<BenchResult> BenchResultFromJson(const std::string& json);
// Writes <prefix>.dat and <prefix>.gp and runs gnuplot to make `png` when gnuplot is on PATH.
// Returns a note saying what was made.
Result<std::string> WritePlot(const BenchResult& result, const std::string& png);

}  // namespace resmem::bench

#endif  // RESMEM_ENGINE_BENCH_BENCH_H_
