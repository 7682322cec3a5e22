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
// (mock/gpu) with the recorded facts and lists every disagreement: return codes must match in
// every run; the simulator's copy rate of each bandwidth class must lie inside the measured spread
// of the runs, widened by a stated margin.
//
// Profile formats (both are read):
//   format 1: one run; each bandwidth class has "gbps" (the median of its passes).
//   format 2: several runs merged (MergeProfiles, `resmem calibrate --runs N` or --merge); each
//     bandwidth class keeps "gbps" (the median of the runs' medians, so format-1 readers still
//     work) and adds "run_gbps" (each run's median) and "range" {min, median, max, runs};
//     registration cases and sequence calls add "code_runs" (each run's code).
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

// The spread of one bandwidth class over the runs of a profile. A format-1 entry is a range of
// one run (min = median = max = its "gbps").
struct BandwidthRange {
  double min_gbps = 0;
  double median_gbps = 0;
  double max_gbps = 0;
  std::vector<double> run_gbps;  // each run's median, in run order
  int runs() const { return static_cast<int>(run_gbps.size()); }
};
// Errors (InvalidArgument) name the entry when it has neither "run_gbps" nor a "gbps" > 0.
Result<BandwidthRange> BandwidthRangeOf(const nlohmann::json& bandwidth_entry);

// Merges profiles of one GPU model and driver era (format 1 or 2, e.g. a merge of earlier merges)
// into one format-2 profile. `sources` names each input (file names) for the "runs" list and for
// errors. Refused (InvalidArgument, naming both sources): profiles of different devices, driver
// profiles or device attributes, and input that is not a calibration profile. Cases found in some
// runs only are kept with the codes of those runs.
Result<nlohmann::json> MergeProfiles(const std::vector<nlohmann::json>& profiles,
                                     const std::vector<std::string>& sources);

// The margin by which CompareWithSim widens the measured spread [min, max] of a bandwidth class:
// the model agrees when min * (1 - margin) <= sim <= max * (1 + margin). For a one-run profile
// this is the tolerance of issue 4 (15%) around the one figure.
constexpr double kDefaultBandwidthMargin = 0.15;
struct FidelityReport {
  std::string sim_profile;
  std::string host;  // the host model the simulator replayed the profile on (CompareWithSim)
  double margin = kDefaultBandwidthMargin;
  int runs = 1;  // runs behind the profile (the most any bandwidth class has)
  int code_cases = 0;
  int bandwidth_cases = 0;
  struct Bandwidth {
    std::string cls, direction;
    uint64_t size = 0;
    BandwidthRange measured;
    double sim_gbps = 0;
    bool inside = false;  // inside the measured spread widened by the margin
  };
  std::vector<Bandwidth> bandwidth;
  std::vector<std::string> disagreements;  // one line each
  std::vector<std::string> agreements;
  std::string ToMarkdown() const;
  nlohmann::json ToJson() const;
};

// Replays `profile` on the simulator's `sim_profile` with the "h100-host" machine's host model,
// its memcpy rates replaced by the ones the profile measured on its own host (host_memcpy_gbps),
// where it has them: pageable copies are modelled from the host's memcpy rate, so a profile from
// another GPU host is judged on that host's rates, not the H100 host's.
// `margin` widens each measured bandwidth spread (see kDefaultBandwidthMargin).
Result<FidelityReport> CompareWithSim(const nlohmann::json& profile,
                                      const std::string& sim_profile = "cuda-13.0-r580",
                                      double margin = kDefaultBandwidthMargin);

}  // namespace resmem::calibrate

#endif  // RESMEM_ENGINE_CALIBRATE_CALIBRATE_H_
