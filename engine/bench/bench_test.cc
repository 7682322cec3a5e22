// The bench on the CUDA model: every path runs, data verifies, ratios are against the same run's
// pinned baseline, and the JSON reads back. Numbers come from the model; nothing is timed here but
// the host check, whose test asserts only lower bounds (a held lane) that a slow machine keeps.
#include "engine/bench/bench.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backends/fault/fault_injector.h"
#include "engine/transfer/gpu_backend.h"

namespace resmem::bench {
namespace {

// Bench on the simulator's GPU and clock with `o` (a backend that cannot be made: its status).
Result<BenchResult> RunOnSim(const BenchOptions& o) {
  auto backend = transfer::MakeGpuBackend("sim");
  if (!backend.ok()) return backend.status();
  return RunBench(*backend->gpu, *backend->clock, backend->name, o);
}

TEST(Bench, RunsEveryPathOnTheSimAndVerifies) {
  BenchOptions o;
  o.sizes = {64 << 10, 1 << 20};
  o.passes = 3;
  o.bytes_per_sample = 1 << 20;
  auto r = RunOnSim(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // The model launches no kernels, so the zero-copy path is refused, and says so. Every other
  // path runs, the hugetlb row included: on the simulator its memory is modelled (real bytes with
  // 2 MiB-page facts), whatever hugetlb pool the build machine has.
  bool zero_copy_refused = false;
  for (const auto& n : r->notes) {
    if (n.find("zero-copy-mapped refused") != std::string::npos) zero_copy_refused = true;
    else ADD_FAILURE() << "path did not run: " << n;
  }
  EXPECT_TRUE(zero_copy_refused);
  int hugetlb_cells = 0;
  for (const auto& c : r->cells) hugetlb_cells += c.path == "registered-hugetlb";
  EXPECT_EQ(hugetlb_cells, 4);
  int pinned_cells = 0, chunked_cells = 0;
  for (const auto& c : r->cells) {
    EXPECT_EQ(c.verify_failures, 0u) << c.path << " " << c.direction << " " << c.size;
    EXPECT_EQ(c.pass_gbps.size(), 3u);
    EXPECT_GT(c.median_gbps, 0) << c.path;
    if (c.path == "pinned") {
      ++pinned_cells;
      EXPECT_DOUBLE_EQ(c.ratio_to_pinned, 1.0);
    }
    if (c.path == "registered-chunked") {
      ++chunked_cells;
      EXPECT_NE(c.choice.find("4 pieces"), std::string::npos) << c.choice;
    }
    if (c.path == "staged-file") {
      EXPECT_NE(c.choice.find("registered-direct refused"), std::string::npos) << c.choice;
    }
  }
  EXPECT_EQ(pinned_cells, 4);
  EXPECT_EQ(chunked_cells, 4);
  int staged_cells = 0;
  for (const auto& c : r->cells) staged_cells += c.path == "staged" || c.path == "staged-file";
  EXPECT_EQ(staged_cells, 8);
  auto back = BenchResultFromJson(r->ToJson());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->cells.size(), r->cells.size());
  EXPECT_NE(r->ToTable().find("registered-direct"), std::string::npos);
}

// The ceiling tests' run on the simulator: `paths` at `sizes`, 1 MiB samples, no overlap rows.
BenchOptions CeilingRun(std::vector<uint64_t> sizes, std::vector<std::string> paths, int passes) {
  BenchOptions o;
  o.sizes = std::move(sizes);
  o.paths = std::move(paths);
  o.passes = passes;
  o.bytes_per_sample = 1 << 20;
  o.overlap_blocks = 0;
  return o;
}

// The staged ceiling (issue 30): one point per direction and size, below pinned; each staged
// cell's share of it is its ratio to pinned over the ceiling's; other paths have none; the table
// prints the ceiling rows and the shares, and the JSON reads them back. On the simulator the
// ceiling is the model's (default host costs), and the run says so.
TEST(Bench, PrintsTheStagedCeilingAndEachStagedCellsShareOfIt) {
  auto r = RunOnSim(CeilingRun({1 << 20, 16 << 20}, {"pinned", "staged", "registered-direct"}, 2));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->ceiling.size(), 4u);
  EXPECT_NE(r->ceiling_source.find("modelled"), std::string::npos) << r->ceiling_source;
  for (const auto& p : r->ceiling) {
    EXPECT_GT(p.ratio_to_pinned, 0.5) << p.direction << " " << p.size;
    EXPECT_LT(p.ratio_to_pinned, 1.0) << p.direction << " " << p.size;
  }
  // A larger copy hides more of its first fill and last DMA: the ceiling rises with size.
  EXPECT_LT(r->ceiling[0].ratio_to_pinned, r->ceiling[1].ratio_to_pinned);
  int staged = 0;
  for (const auto& c : r->cells) {
    if (c.path != "staged") {
      EXPECT_EQ(c.ratio_to_ceiling, 0) << c.path;
      continue;
    }
    ++staged;
    double point = 0;
    for (const auto& p : r->ceiling)
      if (p.direction == c.direction && p.size == c.size) point = p.ratio_to_pinned;
    EXPECT_NEAR(c.ratio_to_ceiling, c.ratio_to_pinned / point, 1e-9) << c.direction << " " << c.size;
  }
  EXPECT_EQ(staged, 4);
  const std::string table = r->ToTable();
  EXPECT_NE(table.find("ceiling (staged)"), std::string::npos) << table;
  EXPECT_NE(table.find("of ceiling"), std::string::npos) << table;
  EXPECT_NE(table.find("ceiling: modelled"), std::string::npos) << table;
  auto back = BenchResultFromJson(r->ToJson());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->ceiling.size(), 4u);
  EXPECT_DOUBLE_EQ(back->ceiling[3].ratio_to_pinned, r->ceiling[3].ratio_to_pinned);
  EXPECT_EQ(back->ceiling_source, r->ceiling_source);
  for (size_t i = 0; i < r->cells.size(); ++i)
    EXPECT_DOUBLE_EQ(back->cells[i].ratio_to_ceiling, r->cells[i].ratio_to_ceiling);
}

// The ceiling is the design's on this host, not the run's option: a run with 1 MiB buffers is
// measured against the same ceiling as one with the default 8 MiB (staging_ceiling.h
// CeilingChunk), while a 16 MiB run may cut larger segments.
TEST(Bench, TheCeilingDoesNotDropWithSmallerStagingBuffers) {
  auto ceiling_of = [](uint64_t chunk) {
    BenchOptions o = CeilingRun({64 << 20}, {"pinned", "staged"}, 1);
    o.staging.staging_chunk = chunk;
    auto r = RunOnSim(o);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() && !r->ceiling.empty() ? r->ceiling[0].ratio_to_pinned : 0.0;
  };
  const double dflt = ceiling_of(8 << 20);
  EXPECT_GT(dflt, 0);
  EXPECT_DOUBLE_EQ(ceiling_of(1 << 20), dflt);
  EXPECT_GE(ceiling_of(16 << 20), dflt);
}

// Without a staged path there is no ceiling, in the table or the JSON.
TEST(Bench, NoCeilingWithoutAStagedPath) {
  auto r = RunOnSim(CeilingRun({1 << 20}, {"pinned", "registered-direct"}, 1));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->ceiling.empty());
  EXPECT_EQ(r->ToTable().find("ceiling"), std::string::npos);
  EXPECT_EQ(r->ToJson().find("\"ceiling\""), std::string::npos);
}

// Seed 001's rows: write-combined pinned memory H2D only, and the copy/kernel overlap, whose
// kernel is held as long as one block's copy takes (the model: 0.53 of serial for 16 blocks).
TEST(Bench, Seed001RowsWriteCombinedAndOverlap) {
  BenchOptions o;
  o.sizes = {1 << 20};
  o.paths = {"pinned", "pinned-wc"};
  o.passes = 2;
  o.overlap_block = 1 << 20;
  auto r = RunOnSim(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  int wc_cells = 0;
  for (const auto& c : r->cells)
    if (c.path == "pinned-wc") {
      ++wc_cells;
      EXPECT_EQ(c.direction, "H2D");
      EXPECT_DOUBLE_EQ(c.ratio_to_pinned, 1.0);  // wc_h2d_gain 1.0 in the model
      EXPECT_TRUE(c.unreliable.empty());
    }
  EXPECT_EQ(wc_cells, 1);
  ASSERT_EQ(r->overlap.size(), 3u);
  EXPECT_NEAR(r->overlap[0].ratio_to_serial, 1.0, 1e-9);
  EXPECT_NEAR(r->overlap[1].ratio_to_serial, 17.0 / 32, 1e-6);
  EXPECT_EQ(r->overlap[1].path, "overlapped (2 streams)");
  EXPECT_NEAR(r->overlap[1].ratio_to_pinned, 32.0 / 17 / 2, 1e-6);
  EXPECT_NEAR(r->overlap[2].ratio_to_serial, 1.0, 1e-9);
  auto back = BenchResultFromJson(r->ToJson());
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->overlap.size(), 3u);
  EXPECT_DOUBLE_EQ(back->overlap[1].ratio_to_serial, r->overlap[1].ratio_to_serial);
  EXPECT_NE(r->ToTable().find("pinned, 2 streams"), std::string::npos);
  EXPECT_NE(r->Headline().find("write-combined 100.0%"), std::string::npos) << r->Headline();
}

TEST(Bench, InterleavesPathsAndKeepsTheTableOrder) {
  BenchOptions o;
  o.sizes = {64 << 10, 256 << 10};
  o.paths = {"pinned", "registered-direct", "staged"};
  o.passes = 4;
  o.bytes_per_sample = 256 << 10;
  auto r = RunOnSim(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // Rows: path, then direction, then size, whatever order the passes visited them in.
  ASSERT_EQ(r->cells.size(), 3u * 2 * 2);
  const char* want[] = {"pinned", "registered-direct", "staged"};
  for (size_t i = 0; i < r->cells.size(); ++i) {
    const auto& c = r->cells[i];
    EXPECT_EQ(c.path, want[i / 4]);
    EXPECT_EQ(c.direction, (i / 2) % 2 ? "D2H" : "H2D");
    EXPECT_EQ(c.size, i % 2 ? 256u << 10 : 64u << 10);
    EXPECT_EQ(c.pass_gbps.size(), 4u);
    EXPECT_EQ(c.verify_failures, 0u);
  }
}

// Runs bench on the simulator with `o` (no warm-up, no overlap rows) and returns how many copies
// the GPU was asked for, the result in *out.
uint64_t CountBenchCopies(BenchOptions o, BenchResult* out) {
  auto faults = std::make_shared<FaultInjector>(1);
  auto backend = transfer::MakeGpuBackend("sim", 1, faults);
  EXPECT_TRUE(backend.ok()) << backend.status().ToString();
  if (!backend.ok()) return 0;
  o.warmup = false;
  o.overlap_blocks = 0;
  auto r = RunBench(*backend->gpu, *backend->clock, backend->name, o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return 0;
  *out = *r;
  return faults->calls("gpu.copy");
}

// --warm-cells: one more copy per cell, untimed, before the timed ones, and the data check still
// holds the timed copies to their own pattern; the run says it was warmed, in the table and JSON.
TEST(Bench, WarmCellsCopyOnceMoreBeforeEachCellAndSaySo) {
  BenchOptions o;
  o.sizes = {64 << 10, 256 << 10};
  // Two paths share the device buffer: a warm device-to-host copy must not bring one path's
  // data into the other's host memory.
  o.paths = {"pinned", "registered-direct"};
  o.passes = 3;
  o.bytes_per_sample = 64 << 10;  // one timed copy per cell and pass
  BenchResult cold, warm;
  const uint64_t plain = CountBenchCopies(o, &cold);
  o.warm_cells = true;
  const uint64_t warmed = CountBenchCopies(o, &warm);
  // 2 paths x 2 directions x 2 sizes x 3 passes: 24 warm copies (device to host after the load
  // the timed copies need anyway).
  EXPECT_EQ(warmed, plain + 24);
  EXPECT_FALSE(cold.warm_cells);
  ASSERT_TRUE(warm.warm_cells);
  for (const auto& c : warm.cells) EXPECT_EQ(c.verify_failures, 0u) << c.direction << " " << c.size;
  EXPECT_NE(warm.ToTable().find("--warm-cells"), std::string::npos);
  EXPECT_EQ(cold.ToTable().find("--warm-cells"), std::string::npos);
  auto back = BenchResultFromJson(warm.ToJson());
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->warm_cells);
}

// --dma-source: before each timed host-to-device copy the block reaches the host memory by a
// device-to-host copy (after one upload per cell), the timed copies still carry the cell's own
// stamp, and rows that cannot take the DMA say so.
TEST(Bench, DmaSourceWritesEachTimedBlockByTheDeviceFirst) {
  BenchOptions o;
  o.sizes = {64 << 10, 256 << 10};
  o.paths = {"pinned", "registered-direct", "staged", "pageable"};
  o.passes = 3;
  o.bytes_per_sample = 128 << 10;  // two timed copies of 64 KiB, one of 256 KiB
  BenchResult plain, dma;
  const uint64_t plain_copies = CountBenchCopies(o, &plain);
  o.dma_source = true;
  const uint64_t dma_copies = CountBenchCopies(o, &dma);
  // pinned, registered-direct and staged take the DMA: per pass and H2D cell one upload and one
  // device write per timed copy: 3 paths x 3 passes x ((1 + 2) + (1 + 1)) = 45.
  EXPECT_EQ(dma_copies, plain_copies + 45);
  for (const auto& c : dma.cells) EXPECT_EQ(c.verify_failures, 0u) << c.path << " " << c.direction;
  std::string notes;
  for (const auto& n : dma.notes) notes += n + "\n";
  EXPECT_NE(notes.find("pageable: --dma-source not applied"), std::string::npos) << notes;
  EXPECT_FALSE(plain.dma_source);
  ASSERT_TRUE(dma.dma_source);
  EXPECT_NE(dma.ToTable().find("--dma-source"), std::string::npos);
  EXPECT_EQ(plain.ToTable().find("--dma-source"), std::string::npos);
  auto back = BenchResultFromJson(dma.ToJson());
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->dma_source);
}

// A synthetic run: the limits mark what they must and nothing else.
BenchResult Synthetic(double pinned_h2d, double registered_h2d) {
  BenchResult r;
  r.backend = "test";
  for (const char* dir : {"H2D", "D2H"}) {
    BenchCell p;
    p.path = "pinned";
    p.direction = dir;
    p.size = 256u << 20;
    p.median_gbps = std::string(dir) == "H2D" ? pinned_h2d : 53.0;
    p.ratio_to_pinned = 1;
    BenchCell g = p;
    g.path = "registered-direct";
    g.median_gbps = std::string(dir) == "H2D" ? registered_h2d : 53.0;
    g.ratio_to_pinned = g.median_gbps / p.median_gbps;
    r.cells.push_back(p);
    r.cells.push_back(g);
  }
  return r;
}

TEST(Bench, MarksARatioAbove102PercentUnreliable) {
  BenchResult ok = Synthetic(54.0, 54.9);  // 101.7%
  MarkUnreliable(&ok, {256u << 20});
  EXPECT_TRUE(ok.unreliable.empty()) << ok.unreliable[0];
  BenchResult bad = Synthetic(45.0, 54.9);  // 122%, the H100 run of issue 11
  MarkUnreliable(&bad, {256u << 20});
  ASSERT_EQ(bad.unreliable.size(), 1u);
  EXPECT_NE(bad.unreliable[0].find("registered-direct H2D 256 MiB at 122.0% of pinned"),
            std::string::npos)
      << bad.unreliable[0];
  EXPECT_FALSE(bad.cells[1].unreliable.empty());
  EXPECT_TRUE(bad.cells[0].unreliable.empty());
  EXPECT_NE(bad.ToTable().find("UNRELIABLE RUN"), std::string::npos);
  auto back = BenchResultFromJson(bad.ToJson());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->unreliable, bad.unreliable);
  EXPECT_EQ(back->cells[1].unreliable, bad.cells[1].unreliable);
}

// A host whose lane threads are not scheduled (an empty job on the staging lanes took ~1 ms, as
// on a disturbed H100 host) makes the staged cells unreliable, not the pinned ones; one slow pass
// in three does not.
TEST(Bench, MarksStagedCellsUnreliableOnADisturbedHost) {
  auto with_staged = [] {
    BenchResult r = Synthetic(54.0, 54.0);
    BenchCell st = r.cells[0];
    st.path = "staged";
    st.median_gbps = 20;
    st.ratio_to_pinned = 20 / 54.0;
    r.cells.push_back(st);
    r.check_lanes = 16;
    return r;
  };
  BenchResult quiet = with_staged();
  quiet.lane_dispatch_us = {4.1, 480.0, 5.5};  // one of three above 50 us, none above 500
  MarkUnreliable(&quiet, {256u << 20});
  EXPECT_TRUE(quiet.unreliable.empty()) << quiet.unreliable[0];
  // One stall of a scheduler tick in nine passes is enough.
  BenchResult stalled = with_staged();
  stalled.lane_dispatch_us = {4.1, 5.0, 3.9, 4.4, 1041.4, 5.5, 4.0, 4.8, 5.1};
  MarkUnreliable(&stalled, {256u << 20});
  ASSERT_EQ(stalled.unreliable.size(), 1u);
  EXPECT_NE(stalled.unreliable[0].find("in 1 of 9 passes, 1041.4 us at most"), std::string::npos)
      << stalled.unreliable[0];
  EXPECT_NE(stalled.unreliable[0].find("over 500 us in any"), std::string::npos);
  EXPECT_FALSE(stalled.cells.back().unreliable.empty());
  BenchResult busy = with_staged();
  busy.lane_dispatch_us = {4.1, 1041.4, 1210.6, 5.5};
  busy.lane_memcpy_gbps = {120, 30, 25, 118};
  MarkUnreliable(&busy, {256u << 20});
  ASSERT_EQ(busy.unreliable.size(), 1u);
  EXPECT_NE(busy.unreliable[0].find("host CPU disturbed: an empty job on 16 lanes took more than "
                                    "50 us in 2 of 4 passes"),
            std::string::npos)
      << busy.unreliable[0];
  EXPECT_FALSE(busy.cells.back().unreliable.empty());
  for (size_t i = 0; i + 1 < busy.cells.size(); ++i) EXPECT_TRUE(busy.cells[i].unreliable.empty());
  EXPECT_NE(busy.ToTable().find("host check: an empty job on 16 lanes"), std::string::npos);
  auto back = BenchResultFromJson(busy.ToJson());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->lane_dispatch_us, busy.lane_dispatch_us);
  EXPECT_EQ(back->check_lanes, 16);
  EXPECT_EQ(back->lane_memcpy_gbps, busy.lane_memcpy_gbps);
}

TEST(Bench, ChecksThePinnedBaselineAgainstNvbandwidth) {
  // The shape of nvbandwidth v0.8's -j output, trimmed to what is read.
  const std::string json = R"({"nvbandwidth": {"version": "v0.8", "testcases": [
      {"name": "host_to_device_memcpy_ce", "status": "Passed", "sum": 54.7},
      {"name": "device_to_host_memcpy_ce", "status": "Passed", "sum": 54.0}]}})";
  auto ref = ReferenceFromNvbandwidthJson(json, 256u << 20);
  ASSERT_TRUE(ref.ok()) << ref.status().ToString();
  EXPECT_DOUBLE_EQ(ref->gbps.at("H2D"), 54.7);
  EXPECT_DOUBLE_EQ(ref->gbps.at("D2H"), 54.0);
  BenchResult within = Synthetic(53.5, 53.0);  // 2.2% below: fine; D2H 53.0 is 1.9% below
  within.reference = *ref;
  MarkUnreliable(&within, {16u << 20, 256u << 20});
  EXPECT_TRUE(within.unreliable.empty()) << within.unreliable[0];
  BenchResult low = Synthetic(45.0, 44.0);  // 17.7% below nvbandwidth
  low.reference = *ref;
  MarkUnreliable(&low, {16u << 20, 256u << 20});
  ASSERT_EQ(low.unreliable.size(), 1u);
  EXPECT_NE(low.unreliable[0].find("pinned H2D 256 MiB 45.00 GB/s is 17.7% below nvbandwidth"),
            std::string::npos)
      << low.unreliable[0];
  EXPECT_NE(low.ToTable().find("reference: nvbandwidth v0.8 at 256 MiB; D2H 54.00 GB/s; H2D 54.70"),
            std::string::npos)
      << low.ToTable();
  // What is not nvbandwidth output, or a failed testcase, is refused with the reason.
  EXPECT_FALSE(ReferenceFromNvbandwidthJson("{}", 0).ok());
  auto failed = ReferenceFromNvbandwidthJson(
      R"({"nvbandwidth": {"testcases": [{"name": "host_to_device_memcpy_ce", "status": "Error"}]}})",
      0);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("did not pass"), std::string::npos);
}

TEST(Bench, RefusesSizesThatAreNotWholePages) {
  ASSERT_TRUE(transfer::MakeGpuBackend("sim").ok());
  BenchOptions o;
  o.sizes = {1000};
  auto r = RunOnSim(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("4 KiB"), std::string::npos);
  EXPECT_FALSE(transfer::MakeGpuBackend("opencl").ok());
}

// The host check's measurement itself: the lanes' memcpy moves every byte of each lane's share,
// and an empty job takes as long as its slowest lane (one lane held 2 ms shows as >= 2 ms, so a
// lane the OS does not schedule shows too).
TEST(Bench, HostCheckTimesTheSlowestLaneAndCopiesEveryShare) {
  const uint64_t bytes = 4ull << 20;
  std::vector<uint8_t> src(bytes), dst(bytes, 0);
  for (uint64_t i = 0; i < bytes; ++i) src[i] = static_cast<uint8_t>(i * 131 + 7);
  const LaneHostCheck quiet = CheckLaneHost(4, src.data(), dst.data(), bytes);
  EXPECT_GT(quiet.dispatch_us, 0);
  EXPECT_GT(quiet.memcpy_gbps, 0);
  EXPECT_TRUE(std::equal(src.begin(), src.end(), dst.begin())) << "4 shares of 1 MiB, all copied";
  const LaneHostCheck held = CheckLaneHost(4, src.data(), dst.data(), bytes, [](int lane) {
    if (lane == 3) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  });
  EXPECT_GE(held.dispatch_us, 2000) << "one lane held 2 ms";
  EXPECT_GT(held.dispatch_us, kMaxLaneDispatchUs);
}

}  // namespace
}  // namespace resmem::bench
