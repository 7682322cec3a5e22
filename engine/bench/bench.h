// `resmem bench`: H2D and D2H bandwidth per transfer path and block size against a cudaMallocHost
// baseline measured in the same run. Each cell is the median of several passes (FACTS.md: any one
// pass can drop 10-50%); every pass's data is verified (block_check.h). Targets are printed, never
// asserted on timing: registered >= 98% of pinned, staged >= 90% (issue 4).
//
// Paths are interleaved: every path is opened first, then each pass visits every (direction,
// size) and within it every path, starting from a different path each pass, after one untimed
// warm-up copy per path and direction. Measuring one path after another made the baseline, which
// ran first, pay for the GPU and the link warming up: on the H100 the pinned row read 45.0 GB/s at
// 256 MiB while nvbandwidth measured 53.6-54.7 GB/s on the same host minutes before, and
// registered copies came out at 122% of "pinned" (issue 11).
//
// A run whose baseline cannot be trusted says so (BenchResult::unreliable, in the table and the
// JSON): a path faster than pinned by more than 2%, or a pinned figure more than 3% below the
// reference tool's figure for the same host (NVIDIA's nvbandwidth, host_to_device_memcpy_ce and
// device_to_host_memcpy_ce, given with --nvbandwidth).
#ifndef RESMEM_ENGINE_BENCH_BENCH_H_
#define RESMEM_ENGINE_BENCH_BENCH_H_

#include <cstdint>
#include <functional>
#include <map>
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
  bool h2d_only = false;    // no D2H cells (write-combined memory: the CPU would read it back)
};
// pinned (baseline), registered-direct (memfd), registered-hugetlb (MAP_HUGETLB: 2 MiB pages,
// closer to a physically contiguous reservation; needs /proc/sys/vm/nr_hugepages), registered-chunked (memfd, 64 MiB pieces),
// staged (the staged engine forced on memfd: RAM, as the reservation is, so the figures are the
// engine's own), staged-file (a disk file: registration refused, so the engine stages; its page
// cache writeback also takes CPUs from the lanes and write-protects pages the D2H copies then
// fault on, so it runs below "staged"), zero-copy-mapped (memfd),
// pageable (anonymous, unregistered), pinned-wc (cudaHostAllocWriteCombined, H2D only: seed 001
// says WC memory transfers faster; its D2H cells would need the CPU to read WC memory back for
// the check, which is what WC memory is slow at).
std::vector<BenchPath> DefaultPaths();

// What the reference tool measured on this host: GB/s per direction ("H2D", "D2H") for copies of
// `size` bytes (nvbandwidth's -b), read from nvbandwidth's JSON output (-j).
struct ReferenceBandwidth {
  std::string source;  // "nvbandwidth <version> (<file>)"
  uint64_t size = 0;   // its buffer size; 0 = unknown (then the largest bench size is compared)
  std::map<std::string, double> gbps;
};
// Reads nvbandwidth -j output: testcases host_to_device_memcpy_ce -> "H2D", device_to_host_memcpy_ce
// -> "D2H" (their "sum" over the one GPU's row). Errors name what is missing.
Result<ReferenceBandwidth> ReferenceFromNvbandwidthJson(const std::string& json, uint64_t size);

// The limits that mark a run unreliable (issue 11).
constexpr double kMaxRatioToPinned = 1.02;     // no path beats the pinned baseline by more
constexpr double kMaxPinnedBelowReference = 0.03;  // the baseline within 3% of nvbandwidth
// Staged figures need every lane thread scheduled: an empty job on the staging lanes takes
// 3.5-5.5 us on a quiet H100 host and 1,000 us and more on a disturbed one (docs/hil/
// 2026-11-24-h100-staged4, runs 1-3), where staged copies fell to a quarter of their speed while
// pinned copies (one thread) did not move. More than a third of the passes above this limit
// marks every staged cell unreliable.
constexpr double kMaxLaneDispatchUs = 50;
// So does one pass above this: a stall of a scheduler tick. The check samples one moment per
// pass, and a host that stalls the lanes that long once in a run stalls its staged copies too:
// of 14 H100 bench runs with such a pass that the rule above let through, 10 read staged
// copies far below the same tree's quiet runs (16 MiB at 20.5%, 256 MiB at 38-73%), and the
// quiet runs' slowest pass took 1-12 us (docs/hil/2026-11-25-h100-staged11, section 8).
constexpr double kMaxLaneStallUs = 500;

struct BenchOptions {
  std::vector<uint64_t> sizes;  // default 64 KiB .. 256 MiB, x4
  std::vector<std::string> paths;  // names from DefaultPaths(); empty = all
  int passes = 7;
  uint64_t bytes_per_sample = 64ull << 20;  // small blocks are repeated up to this many bytes
  bool warmup = true;  // one untimed copy per path and direction before the first pass
  // One untimed copy of the same path, direction and size right before each cell's timed
  // copies (of another pattern, so the check still sees the timed copies' data). Off, a cell's
  // first copy meets the caches as the other path's copies and stamps left them: on the H100
  // host a staged copy then runs up to a third slower than one after a copy of its own (the
  // pinned ring and the driver's data cold; docs/hil/2026-11-24-h100-staged9). On, every cell
  // measures copies that follow copies of their own, as a program copying block after block
  // makes them. The run says which (BenchResult::warm_cells).
  bool warm_cells = false;
  // Host to device: before each timed copy the GPU's copy engine writes the block into the
  // path's host memory (a device-to-host DMA from a device copy of the stamped block), as a
  // capture card's DMA lands a block in the reservation right before the program moves it on.
  // The copy then meets the caches as a device's write leaves them, not as the CPU's stamps and
  // the other paths left them. Why: on the H100 host the fill frontier stand-alone read a block
  // the copy engine had just written as fast as one left cached by the copy before (16 MiB
  // 85-87% of pinned), and one behind 512 MiB of other CPU writes at 65-69%, its first DMA
  // issued 75-99 us in (docs/hil/2026-11-25-h100-staged11, run 4). In bench (run 6, three
  // rounds) the staged rows read the same either way up to 64 MiB (16 MiB 83.0% of pinned
  // against 82.7) and 1.5-3 points lower at 256 MiB, a device write the shared cache does not
  // hold. The staged rows' memory is registered for that DMA by a second engine (their copies
  // never use it); the pageable and zero-copy rows keep CPU-stamped blocks (a registration
  // would change what they measure), as does a staged row whose memory the driver will not
  // register; the run's notes say which. Device-to-host cells are unchanged. The run says it
  // (BenchResult::dma_source).
  bool dma_source = false;
  ReferenceBandwidth reference;  // empty gbps: no cross-check with a reference tool
  transfer::TransferOptions staging;  // the staged row's lanes, buffers, units (allowed is set here)
  uint64_t seed = 1;
  bool verbose = false;
  // Copy/kernel overlap (seed 001): overlap_blocks blocks of overlap_block bytes, H2D then a
  // kernel per block that holds the GPU as long as one block's copy takes; 0 blocks: skipped.
  int overlap_blocks = 16;
  uint64_t overlap_block = 16ull << 20;
};

// One row of the overlap table: the pipeline's whole time against copy + kernel one after the
// other, and its rate against pinned cudaMemcpy of the same run.
struct OverlapRow {
  std::string name;   // "pinned, 1 stream", "pinned, 2 streams", "pageable, 2 streams"
  int streams = 1;
  uint64_t block = 0;
  int blocks = 0;
  double kernel_us = 0, copy_us = 0;
  std::vector<double> pass_seconds;
  double median_seconds = 0;
  double gbps = 0;             // blocks x block / median seconds
  double ratio_to_serial = 0;  // median over passes
  double ratio_to_pinned = 0;  // gbps / pinned H2D cudaMemcpy GB/s of one block, same run
  std::string path;
};

struct BenchCell {
  std::string path;
  std::string direction;  // "H2D", "D2H"
  uint64_t size = 0;
  std::vector<double> pass_gbps;
  double median_gbps = 0;
  double ratio_to_pinned = 0;  // median / pinned median for the same direction and size
  // Staged paths: ratio_to_pinned / the ceiling's share of pinned at this direction and size
  // (BenchResult::ceiling); 0 where there is no ceiling.
  double ratio_to_ceiling = 0;
  uint64_t verify_failures = 0;
  std::string choice;  // the engine's "took ..." line
  std::string unreliable;  // why this cell cannot be trusted ("" = fine)
};

struct BenchResult {
  std::string backend;
  std::vector<BenchCell> cells;
  std::vector<std::string> notes;  // paths that could not run and why
  ReferenceBandwidth reference;    // what the baseline was checked against (empty: nothing)
  std::vector<OverlapRow> overlap;  // copy/kernel overlap (seed 001); empty: not run
  std::vector<std::string> unreliable;  // why the run's ratios cannot be trusted (empty: fine)
  bool warm_cells = false;  // BenchOptions::warm_cells
  bool dma_source = false;  // BenchOptions::dma_source
  // Host check, per pass before its copies (only where a staged path runs): the median time of
  // an empty job on as many lane threads as the staged path uses, in microseconds.
  // Also per pass: the lanes' memcpy rate between two 64 MiB buffers, GB/s (a figure only).
  int check_lanes = 0;
  std::vector<double> lane_dispatch_us;
  std::vector<double> lane_memcpy_gbps;
  // The staged path's ceiling (engine/transfer/staging_ceiling.h), where a staged path runs: per
  // direction and size, the share of a pinned copy that no segment schedule beats on this host.
  // On a GPU, measured in this run before the passes (the host's costs); on the simulator, the
  // model's default host costs (no lanes or copy engine to time). ceiling_source says which.
  struct CeilingPoint {
    std::string direction;  // "H2D", "D2H"
    uint64_t size = 0;
    double ratio_to_pinned = 0;
  };
  std::vector<CeilingPoint> ceiling;
  std::string ceiling_source;  // "" = none
  std::string ToJson() const;
  std::string ToTable() const;
  // Headline: ratios at the largest size for registered-direct and staged, per direction.
  std::string Headline() const;
};

Result<BenchResult> RunBench(Gpu& gpu, Clock& clock, const std::string& backend,
                             const BenchOptions& options);

// bench's host check, before each pass that runs a staged path on a real clock: the median time
// of 50 empty jobs on `lanes` staging lanes (a job returns when its slowest lane has run, so one
// unscheduled lane shows), and the lanes' memcpy rate copying `bytes` from `src` to `dst`, each
// lane its share. `lane_hook` (tests) runs inside every empty job on every lane.
struct LaneHostCheck {
  double dispatch_us = 0;
  double memcpy_gbps = 0;
};
LaneHostCheck CheckLaneHost(int lanes, const uint8_t* src, uint8_t* dst, uint64_t bytes,
                            const std::function<void(int lane)>& lane_hook = nullptr);

// Sets BenchCell::unreliable and BenchResult::unreliable from the limits above: any non-pinned
// cell above kMaxRatioToPinned, the pinned cell at the reference's size (or the largest of
// `sizes`) more than kMaxPinnedBelowReference below r->reference, and every staged cell when more
// than a third of r->lane_dispatch_us exceed kMaxLaneDispatchUs or any exceeds kMaxLaneStallUs.
// RunBench calls it.
void MarkUnreliable(BenchResult* r, const std::vector<uint64_t>& sizes);

// Reads a bench JSON back (for plotting on another machine).
Result<BenchResult> BenchResultFromJson(const std::string& json);

}  // namespace resmem::bench

#endif  // RESMEM_ENGINE_BENCH_BENCH_H_
