// Calibration of the CUDA model against a real GPU. RunCalibration measures, through any Gpu:
//   - the registration matrix: memory kinds (backends/host stand-ins, a PROT_READ mapping, the
//     kernel's [vvar] page as a VM_IO|VM_PFNMAP mapping like remap_pfn_range makes) x flags
//     (default, portable, mapped, iomemory, readonly) x sizes, plus huge MAP_NORESERVE sizes, each
//     with the mapping's facts as smaps reported them;
//   - sequences of calls (same range twice, sub-range, overlap, unknown and interior unregister,
//     size 0, unknown flag, unaligned pointer), as FACTS.md lists them;
//   - the bandwidth table (pinned, registered, pageable; H2D and D2H; medians of passes) and
//     the host's memcpy rate with 1..16 threads.
// The result is a profile (JSON). CompareWithSim replays every case on the simulator's profile
// (mock/gpu) with the recorded facts and lists every disagreement: return codes must match;
// bandwidth classes must lie within the tolerance (issue 4: 15%).
#ifndef RESMEM_ENGINE_CALIBRATE_CALIBRATE_H_
#define RESMEM_ENGINE_CALIBRATE_CALIBRATE_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backends/api/clock.h"
#include "backends/api/gpu.h"

namespace resmem::calibrate {

struct CalibrateOptions {
  std::vector<uint64_t> sizes = {64ull << 10, 16ull << 20, 256ull << 20};
  // One call each, MAP_NORESERVE anonymous, flags default (FACTS.md: 1 TiB/256 GiB/126 GiB -> 2
  // in 0.1 ms on a 128 GiB host). Only sizes above the host's MemTotal are tried, so nothing is
  // ever pinned in full.
  std::vector<uint64_t> huge_sizes = {1ull << 40, 512ull << 30, 256ull << 30, 126ull << 30};
  std::vector<uint64_t> bandwidth_sizes = {16ull << 20, 256ull << 20};
  int passes = 7;
  std::vector<int> memcpy_threads = {1, 2, 4, 8, 16};
  uint64_t memcpy_bytes = 256ull << 20;  // per thread
  bool reserve_hugepages = true;  // raise /proc/sys/vm/nr_hugepages for the hugetlb kind, restore
  bool verbose = false;
};

Result<nlohmann::json> RunCalibration(Gpu& gpu, Clock& clock, const CalibrateOptions& options);

struct FidelityReport {
  std::string sim_profile;
  int code_cases = 0;
  int bandwidth_cases = 0;
  std::vector<std::string> disagreements;  // one line each
  std::vector<std::string> agreements;
  std::string ToMarkdown() const;
  nlohmann::json ToJson() const;
};

// Replays `profile` on the simulator's `sim_profile` with the "h100-host" machine's host model.
Result<FidelityReport> CompareWithSim(const nlohmann::json& profile,
                                      const std::string& sim_profile = "cuda-13.0-r580",
                                      double tolerance = 0.15);

}  // namespace resmem::calibrate

#endif  // RESMEM_ENGINE_CALIBRATE_CALIBRATE_H_
