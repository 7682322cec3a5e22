// `resmem bench --managed`: managed memory (seed 004) measured against pinned cudaMemcpy of the
// same run. Rows: the pinned baselines, a kernel's first touch of managed memory resident in
// system memory (fault-driven migration), cudaMemPrefetchAsync both ways, the CPU reading results
// resident on the GPU (faults back), a kernel reading resident managed memory, and CPU/GPU
// ping-pong per round without advice, preferred on the GPU, and preferred on the host and mapped
// by the GPU. Medians of --passes; every touch checks the data it reads (cuda backend).
#ifndef RESMEM_ENGINE_BENCH_MANAGED_BENCH_H_
#define RESMEM_ENGINE_BENCH_MANAGED_BENCH_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/api/clock.h"
#include "backends/api/gpu.h"
#include "backends/api/managed.h"

namespace resmem::bench {

struct ManagedBenchOptions {
  uint64_t size = 1ull << 30;          // bytes per migration row
  int passes = 5;
  uint64_t pingpong_size = 2ull << 20; // bytes both sides write per round
  int pingpong_rounds = 100;
};

struct ManagedRow {
  std::string name;      // "first-touch-gpu-read", ...
  std::string baseline;  // the pinned row it is a ratio to: "pinned-h2d" or "pinned-d2h"
  uint64_t bytes = 0;    // per pass (a ping-pong round: both sides' writes)
  double median_gbps = 0, min_gbps = 0, max_gbps = 0;
  double ratio = 0;      // median / the baseline's median
  double round_us = 0;   // ping-pong rows: median microseconds per round
  std::string data;      // "intact", "mismatch" or "" (not checked: the simulator)
  std::string note;
};

struct ManagedBenchResult {
  std::string backend;
  ManagedBenchOptions options;
  std::vector<ManagedRow> rows;
  std::vector<std::string> notes;  // rows that could not run and why
  std::string ToTable() const;
  std::string ToJson() const;
  bool DataMismatch() const;
};

// The managed part of a bench backend by name: "cuda" (backends/cuda) or "sim" (the model, with
// the cuda-13.0-r580 profile, on `clock`).
Result<std::unique_ptr<ManagedMemory>> MakeBenchManaged(const std::string& backend,
                                                        std::shared_ptr<Clock> clock);

Result<ManagedBenchResult> RunManagedBench(Gpu& gpu, ManagedMemory& managed, const std::string& backend,
                                           const ManagedBenchOptions& options);

}  // namespace resmem::bench

#endif  // RESMEM_ENGINE_BENCH_MANAGED_BENCH_H_
