#include "engine/bench/bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <tuple>
#include <nlohmann/json.hpp>

#include "backends/api/median.h"
#include "backends/host/host_region.h"
#include "backends/host/modelled_memory.h"
#include "engine/transfer/block_check.h"
#include "engine/transfer/lane_pool.h"
#include "engine/transfer/staging_ceiling.h"
#include "engine/transfer/transfer_engine.h"

namespace resmem::bench {
namespace {

using transfer::TransferEngine;

const char* DirName(CopyDirection d) { return d == CopyDirection::kHostToDevice ? "H2D" : "D2H"; }

}  // namespace

std::vector<BenchPath> DefaultPaths() {
  return {{"pinned", "pinned", ""},
          {"pinned-wc", "pinned-wc", "", true},
          {"registered-direct", "memfd", "registered-direct"},
          {"registered-hugetlb", "hugetlb", "registered-direct"},
          {"registered-chunked", "memfd", "registered-chunked"},
          {"staged", "memfd", "staged"},
          {"staged-file", "file", "staged"},
          {"zero-copy-mapped", "memfd", "zero-copy-mapped"},
          {"pageable", "anon", "pageable"}};
}

namespace {

// Seed 001's overlap: pinned on one stream, pinned on two, pageable on two. Each kernel holds the
// GPU as long as one block's copy took alone (measured first), where overlap gains the most.
Result<std::vector<OverlapRow>> RunOverlap(Gpu& gpu, const BenchOptions& o,
                                           const std::map<std::pair<std::string, uint64_t>, double>& pinned_gbps) {
  const uint64_t block = o.overlap_block;
  if (block == 0 || block % 4096)
    return Status::InvalidArgument("overlap block " + std::to_string(block) +
                                   " is not a positive multiple of 4 KiB");
  RESMEM_ASSIGN_OR_RETURN(auto dev, gpu.AllocDevice(2 * block));
  RESMEM_ASSIGN_OR_RETURN(auto pinned, gpu.AllocPinned(2 * block, 0));
  RESMEM_ASSIGN_OR_RETURN(auto pageable, host::MapHostMemory(host::HostKind::kAnonymous, 2 * block));
  RESMEM_RETURN_IF_ERROR(transfer::FillPattern(*pinned, 0, 2 * block, 0, o.seed));
  RESMEM_RETURN_IF_ERROR(transfer::FillPattern(*pageable, 0, 2 * block, 0, o.seed));
  PipelineSpec probe;
  probe.block_size = block;
  probe.blocks = 1;
  RESMEM_ASSIGN_OR_RETURN(PipelineStats alone, gpu.CopyKernelPipeline(*pinned, *dev, probe));
  const double kernel_us = alone.copy_seconds * 1e6;
  auto base = pinned_gbps.find({"H2D", block});
  const double pinned_rate = base != pinned_gbps.end() && base->second > 0
                                 ? base->second
                                 : (alone.copy_seconds > 0 ? block / alone.copy_seconds / 1e9 : 0);
  struct Case {
    const char* name;
    HostMemory* mem;
    int streams;
  };
  std::vector<OverlapRow> rows;
  for (const Case& c : {Case{"pinned, 1 stream", pinned.get(), 1}, Case{"pinned, 2 streams", pinned.get(), 2},
                        Case{"pageable, 2 streams", pageable.get(), 2}}) {
    OverlapRow row;
    row.name = c.name;
    row.streams = c.streams;
    row.block = block;
    row.blocks = o.overlap_blocks;
    row.kernel_us = kernel_us;
    PipelineSpec spec;
    spec.block_size = block;
    spec.blocks = o.overlap_blocks;
    spec.streams = c.streams;
    spec.kernel_us = kernel_us;
    std::vector<double> ratios;
    for (int p = 0; p < o.passes; ++p) {
      RESMEM_ASSIGN_OR_RETURN(PipelineStats st, gpu.CopyKernelPipeline(*c.mem, *dev, spec));
      row.pass_seconds.push_back(st.seconds);
      ratios.push_back(st.ratio_to_serial);
      row.copy_us = st.copy_seconds * 1e6;
      row.path = st.path;
    }
    row.median_seconds = MedianMean(row.pass_seconds);
    row.ratio_to_serial = MedianMean(ratios);
    row.gbps = row.median_seconds > 0 ? block * static_cast<double>(row.blocks) / row.median_seconds / 1e9 : 0;
    row.ratio_to_pinned = pinned_rate > 0 ? row.gbps / pinned_rate : 0;
    if (o.verbose)
      std::fprintf(stderr, "overlap %-20s %8.3f ms %7.2f GB/s %.2f of serial %s\n", row.name.c_str(),
                   1e3 * row.median_seconds, row.gbps, row.ratio_to_serial, row.path.c_str());
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

LaneHostCheck CheckLaneHost(int lanes, const uint8_t* src, uint8_t* dst, uint64_t bytes,
                            const std::function<void(int lane)>& lane_hook) {
  using Steady = std::chrono::steady_clock;
  transfer::LanePoolOptions lo;
  lo.lanes = lanes;
  lo.spin_us = 20000;
  transfer::LanePool pool(lo);
  pool.Run(lanes, [](int) {});  // every worker started
  std::vector<double> t;
  for (int i = 0; i < 50; ++i) {
    const auto a = Steady::now();
    pool.Run(lanes, [&](int lane) {
      if (lane_hook) lane_hook(lane);
    });
    t.push_back(std::chrono::duration<double, std::micro>(Steady::now() - a).count());
  }
  LaneHostCheck c;
  c.dispatch_us = MedianMean(t);
  const uint64_t share = bytes / static_cast<uint64_t>(lanes) / 64 * 64;
  const auto a = Steady::now();
  pool.Run(lanes, [&](int lane) { std::memcpy(dst + lane * share, src + lane * share, share); });
  const double s = std::chrono::duration<double>(Steady::now() - a).count();
  c.memcpy_gbps = s > 0 ? share * lanes / s / 1e9 : 0;
  return c;
}

namespace {

// A path opened for the passes: its host memory filled with its pattern, its engine (none: the
// GPU's own cudaMemcpy, as the pinned rows copy) and the engine's "took ..." line.
struct OpenPath {
  BenchPath path;
  uint64_t fill_seed = 0;
  std::unique_ptr<HostMemory> mem;
  std::unique_ptr<TransferEngine> engine;
  std::string choice;
  // --dma-source: the block's device copy reaches the host memory by a DMA: gpu.Copy (pinned
  // memory), the path's own engine (registered paths), or `writer`, a registered-direct
  // engine on the same memory (staged paths: their copies never use the registration).
  bool dma_writes = false;
  std::unique_ptr<TransferEngine> writer;
};

// The lanes' memcpy rate is measured between two buffers of this size (host memory the DMAs
// share): a figure for the reader, not a limit (42.2 GB/s on a quiet H100 host, docs/hil/
// 2026-11-24-h100-staged4 run 11; a host whose memory other tenants load shows less).
constexpr uint64_t kCheckBytes = 64ull << 20;

// What RunBench's phases share: the run's sizes, the device buffer every path copies to and
// from, the open paths, the cells being filled pass by pass, and the result.
struct Bench {
  Bench(Gpu& g, Clock& c, const BenchOptions& opts) : gpu(g), clock(c), o(opts) {}
  Gpu& gpu;
  Clock& clock;
  const BenchOptions& o;
  std::vector<uint64_t> sizes;
  uint64_t max_size = 0;
  std::unique_ptr<DeviceBuffer> dev;  // max_size bytes
  std::vector<OpenPath> open;
  // Host check (CheckLaneHost) before each pass: only where a staged path runs on a real clock.
  bool staged_runs = false;
  std::vector<uint8_t> check_src, check_dst;
  // cells[(direction, size, path index)], filled pass by pass.
  std::map<std::tuple<int, uint64_t, size_t>, BenchCell> cells;
  uint64_t seq = 0;  // the stamp of the block last copied
  BenchResult result;
};

// o.sizes, or 64 KiB .. 256 MiB x4; each a positive multiple of 4 KiB.
Result<std::vector<uint64_t>> SizesOf(const BenchOptions& o) {
  std::vector<uint64_t> sizes = o.sizes;
  if (sizes.empty())
    for (uint64_t s = 64 << 10; s <= (256ull << 20); s *= 4) sizes.push_back(s);
  for (uint64_t s : sizes)
    if (s == 0 || s % 4096)
      return Status::InvalidArgument("bench size " + std::to_string(s) +
                                     " is not a positive multiple of 4 KiB");
  return sizes;
}

// The paths o.paths names, in DefaultPaths' order, pinned always first: every ratio is against
// pinned memory of this same run.
Result<std::vector<BenchPath>> PathsOf(const BenchOptions& o) {
  std::vector<BenchPath> paths;
  for (const auto& p : DefaultPaths())
    if (o.paths.empty() || std::find(o.paths.begin(), o.paths.end(), p.name) != o.paths.end())
      paths.push_back(p);
  if (paths.empty()) {
    std::string all;
    for (const auto& p : DefaultPaths()) all += " " + p.name;
    return Status::InvalidArgument("--paths names no known path; choose from:" + all);
  }
  if (paths.front().name != "pinned") paths.insert(paths.begin(), DefaultPaths().front());
  return paths;
}

// op.mem: max_size bytes of op.path's host memory. false: it cannot be had here (a note says
// why; the path is left out); the baseline's cudaMallocHost failing is an error.
Result<bool> AllocPathMemory(Bench& b, OpenPath& op) {
  const BenchPath& path = op.path;
  if (path.host_kind == "pinned") {
    auto pinned = b.gpu.AllocPinned(b.max_size, 0);
    if (!pinned.ok()) return pinned.status().WithContext("baseline cudaMallocHost");
    op.mem = std::move(pinned).value();
  } else if (path.host_kind == "pinned-wc") {
    auto wc = b.gpu.AllocPinned(b.max_size, kAllocWriteCombined);
    if (!wc.ok()) {
      b.result.notes.push_back(path.name + ": " + wc.status().ToString());
      return false;
    }
    op.mem = std::move(wc).value();
  } else {
    RESMEM_ASSIGN_OR_RETURN(host::HostKind kind, host::ParseHostKind(path.host_kind));
    // On a virtual clock (the simulator) the kind is modelled: real bytes, the kind's facts, and
    // nothing of the build machine's hugetlb pool or disk (docs/build.md, "Hermetic tests").
    auto m = b.clock.is_virtual() ? host::MapModelledMemory(kind, b.max_size) : host::MapHostMemory(kind, b.max_size);
    if (!m.ok()) {
      b.result.notes.push_back(path.name + ": " + m.status().ToString());
      return false;
    }
    op.mem = std::move(m).value();
  }
  return true;
}

// op.engine: the transfer engine forced onto op.path's engine path. false: it will not open on
// this memory (a note says why; the path is left out).
Result<bool> OpenPathEngine(Bench& b, OpenPath& op) {
  const BenchPath& path = op.path;
  transfer::TransferOptions to = b.o.staging;
  RESMEM_ASSIGN_OR_RETURN(transfer::Path forced, transfer::ParsePath(path.engine_path));
  to.allowed = {forced};
  // Chunked registers the span in four pieces, so every copy of the largest block crosses
  // piece boundaries.
  to.register_chunk = std::max<uint64_t>(4096, b.max_size / 4 / 4096 * 4096);
  auto e = TransferEngine::Open(b.gpu, *op.mem, b.clock, to);
  if (!e.ok()) {
    b.result.notes.push_back(path.name + " on " + path.host_kind + ": " + e.status().message());
    return false;
  }
  op.engine = std::move(e).value();
  op.choice = op.engine->choice().Describe();
  if (path.name == "staged-file") {
    // Say why registration is impossible here: the engine's own choice among all paths.
    transfer::TransferOptions all;
    all.register_chunk = 64ull << 20;
    all.allowed = {transfer::Path::kRegisteredDirect, transfer::Path::kRegisteredChunked};
    auto probe = TransferEngine::Open(b.gpu, *op.mem, b.clock, all);
    if (!probe.ok()) op.choice += "; " + probe.status().message();
  }
  return true;
}

// --dma-source: how the device's write reaches op's memory (OpenPath::dma_writes, writer), or a
// note saying why its blocks stay CPU-written.
void OpenDmaWriter(Bench& b, OpenPath& op) {
  const std::string& ep = op.path.engine_path;
  if (ep.empty() || ep == "registered-direct" || ep == "registered-chunked") {
    op.dma_writes = true;
  } else if (ep != "staged") {
    // A registration of its own would change what the path measures (pageable copies of
    // registered memory are DMAs; zero-copy memory is registered already).
    b.result.notes.push_back(op.path.name + ": --dma-source not applied (registering its memory "
                             "for the DMA would change what the path measures), so its "
                             "blocks stay CPU-written");
  } else {
    transfer::TransferOptions wo;
    wo.allowed = {transfer::Path::kRegisteredDirect};
    auto w = TransferEngine::Open(b.gpu, *op.mem, b.clock, wo);
    if (w.ok()) {
      op.writer = std::move(w).value();
      op.dma_writes = true;
    } else {
      b.result.notes.push_back(op.path.name + ": --dma-source: its host memory takes no DMA (" +
                               w.status().message() + "), so its blocks stay CPU-written");
    }
  }
}

// Opens every path before anything is timed, so passes can interleave them. A path that cannot
// run here is left out with a note.
Status OpenPaths(Bench& b, const std::vector<BenchPath>& paths) {
  for (size_t pi = 0; pi < paths.size(); ++pi) {
    OpenPath op;
    op.path = paths[pi];
    op.fill_seed = b.o.seed * 1000003 + pi;
    RESMEM_ASSIGN_OR_RETURN(bool have_memory, AllocPathMemory(b, op));
    if (!have_memory) continue;
    RESMEM_RETURN_IF_ERROR(transfer::FillPattern(*op.mem, 0, b.max_size, 0, op.fill_seed));
    op.choice = op.path.host_kind == "pinned-wc" ? "cudaHostAlloc(WriteCombined) buffer, cudaMemcpy"
                                                 : "cudaMallocHost buffer, cudaMemcpy";
    if (!op.path.engine_path.empty()) {
      RESMEM_ASSIGN_OR_RETURN(bool have_engine, OpenPathEngine(b, op));
      if (!have_engine) continue;
    }
    if (b.o.dma_source) OpenDmaWriter(b, op);
    b.open.push_back(std::move(op));
  }
  return Status::Ok();
}

// One copy between op's host memory and the device buffer, through `engine` (none: the GPU's own
// cudaMemcpy, as the pinned rows copy).
Result<CopyStats> CopyBy(Bench& b, TransferEngine* engine, OpenPath& op, CopyDirection dir,
                         uint64_t size) {
  if (engine) return engine->Copy(dir, 0, *b.dev, 0, size);
  return b.gpu.Copy(dir, *op.mem, 0, *b.dev, 0, size);
}

// One copy of op's path.
Result<CopyStats> CopyOnPath(Bench& b, OpenPath& op, CopyDirection dir, uint64_t size) {
  return CopyBy(b, op.engine.get(), op, dir, size);
}

// --dma-source: the stamped block goes up once (H2D) into the device buffer the timed copies
// land in, and before each timed copy comes back by DMA (D2H) into the path's host memory: the
// same bytes, now written by the device.
Status DmaMove(Bench& b, OpenPath& op, CopyDirection dir, uint64_t size) {
  auto s = CopyBy(b, op.writer ? op.writer.get() : op.engine.get(), op, dir, size);
  return s.ok() ? Status::Ok()
                : s.status().WithContext(std::string("--dma-source: ") +
                                         (dir == CopyDirection::kHostToDevice
                                              ? "the block to the device"
                                              : "the device's write of the block") +
                                         " for " + op.path.name + " " + FormatSize(size));
}

// One untimed copy of max_size per path and direction.
Status WarmUp(Bench& b) {
  for (auto& op : b.open)
    for (CopyDirection dir : {CopyDirection::kHostToDevice, CopyDirection::kDeviceToHost}) {
      if (dir == CopyDirection::kDeviceToHost && op.path.h2d_only) continue;
      auto s = CopyOnPath(b, op, dir, b.max_size);
      if (!s.ok()) return s.status().WithContext("warm-up " + op.path.name + " " + DirName(dir));
    }
  return Status::Ok();
}

// Host check: how long an empty job takes on as many lanes as the staged path uses. Real time
// only: under a virtual clock (the simulator) copy times are modelled.
void PrepareHostCheck(Bench& b) {
  for (const auto& op : b.open)
    b.staged_runs |= op.path.engine_path == "staged" && !b.clock.is_virtual();
  if (b.staged_runs) {
    b.result.check_lanes = std::max(1, b.o.staging.staging_lanes);
    b.check_src.assign(kCheckBytes, 1);
    b.check_dst.assign(kCheckBytes, 2);
  }
}

// Only one engine's lanes spin at a time: the host check's and each path's copies get the CPUs
// without another staged engine's 16 lanes still spinning from its last copy (they did:
// staged-file read 54-62% of pinned from 1 to 64 MiB, right after staged; H200,
// docs/hil/2026-11-28-h200-staged13, run 4). Parks every engine's lanes but keep's.
void ParkAllBut(Bench& b, const OpenPath* keep) {
  for (auto& other : b.open)
    if (&other != keep && other.engine) other.engine->ParkLanes();
}

// The pass's host check (PrepareHostCheck): every lane parked, then CheckLaneHost.
void CheckHost(Bench& b) {
  ParkAllBut(b, nullptr);
  const LaneHostCheck c =
      CheckLaneHost(b.result.check_lanes, b.check_src.data(), b.check_dst.data(), kCheckBytes);
  b.result.lane_dispatch_us.push_back(c.dispatch_us);
  b.result.lane_memcpy_gbps.push_back(c.memcpy_gbps);
}

// Puts block b.seq where the cell's timed copies start from: host to device, stamped into the
// path's host memory (--dma-source: then up to the device for the DMA back); device to host, on
// the device with a stale host copy. --warm-cells: one untimed copy of the cell first.
Status StageBlock(Bench& b, OpenPath& op, const BenchCell& cell, CopyDirection dir,
                  uint64_t size) {
  auto warm = [&]() -> Status {
    auto w = CopyOnPath(b, op, dir, size);
    return w.ok() ? Status::Ok()
                  : w.status().WithContext("warm copy " + op.path.name + " " + cell.direction +
                                           " " + FormatSize(size));
  };
  if (dir == CopyDirection::kHostToDevice) {
    // The warm copy moves another stamp than the timed copies', so the check sees their data.
    if (b.o.warm_cells) {
      RESMEM_RETURN_IF_ERROR(transfer::StampPattern(*op.mem, 0, size, b.seq ^ (1ull << 62)));
      RESMEM_RETURN_IF_ERROR(warm());
    }
    RESMEM_RETURN_IF_ERROR(transfer::StampPattern(*op.mem, 0, size, b.seq));
    if (op.dma_writes) RESMEM_RETURN_IF_ERROR(DmaMove(b, op, CopyDirection::kHostToDevice, size));
  } else {
    // Load the device with this pass's block (the warm copy brings it back, not another path's
    // data from the device buffer every path shares), then make the host copy stale.
    RESMEM_RETURN_IF_ERROR(transfer::StampPattern(*op.mem, 0, size, b.seq));
    RESMEM_RETURN_IF_ERROR(CopyOnPath(b, op, CopyDirection::kHostToDevice, size).status());
    if (b.o.warm_cells) RESMEM_RETURN_IF_ERROR(warm());
    RESMEM_RETURN_IF_ERROR(transfer::StampPattern(*op.mem, 0, size, b.seq ^ (1ull << 63)));
  }
  return Status::Ok();
}

// The cell's timed copies: `reps` copies of the staged block (each after the device's write of
// it, with --dma-source host to device), then the block verified where it landed; one pass's
// GB/s added to the cell.
Status TimeCopies(Bench& b, OpenPath& op, BenchCell& cell, CopyDirection dir, uint64_t size,
                  uint64_t reps) {
  double seconds = 0;
  const bool dma_first = op.dma_writes && dir == CopyDirection::kHostToDevice;
  for (uint64_t r = 0; r < reps; ++r) {
    if (dma_first) RESMEM_RETURN_IF_ERROR(DmaMove(b, op, CopyDirection::kDeviceToHost, size));
    auto s = CopyOnPath(b, op, dir, size);
    if (!s.ok())
      return s.status().WithContext(op.path.name + " " + cell.direction + " " + FormatSize(size));
    seconds += s->seconds;
  }
  auto bad = dir == CopyDirection::kHostToDevice
                 ? transfer::DeviceMismatches(b.gpu, *b.dev, 0, size, b.seq, op.fill_seed)
                 : transfer::HostMismatches(*op.mem, 0, size, b.seq, op.fill_seed);
  if (!bad.ok()) return bad.status().WithContext("verify " + op.path.name);
  cell.verify_failures += *bad > 0;
  cell.pass_gbps.push_back(seconds > 0 ? size * reps / seconds / 1e9 : 0);
  return Status::Ok();
}

// One pass: every (direction, size), and within it every path, starting from another path each
// pass so that no path is always first after a size change.
Status RunPass(Bench& b, int pass) {
  if (b.staged_runs) CheckHost(b);
  for (CopyDirection dir : {CopyDirection::kHostToDevice, CopyDirection::kDeviceToHost}) {
    for (uint64_t size : b.sizes) {
      const uint64_t reps = std::clamp<uint64_t>(b.o.bytes_per_sample / size, 1, 1024);
      for (size_t k = 0; k < b.open.size(); ++k) {
        const size_t pi = (k + pass) % b.open.size();
        OpenPath& op = b.open[pi];
        if (dir == CopyDirection::kDeviceToHost && op.path.h2d_only) continue;
        ParkAllBut(b, &op);
        BenchCell& cell = b.cells[{dir == CopyDirection::kHostToDevice ? 0 : 1, size, pi}];
        if (cell.path.empty()) {
          cell.path = op.path.name;
          cell.direction = DirName(dir);
          cell.size = size;
          cell.choice = op.choice;
        }
        ++b.seq;
        RESMEM_RETURN_IF_ERROR(StageBlock(b, op, cell, dir, size));
        RESMEM_RETURN_IF_ERROR(TimeCopies(b, op, cell, dir, size, reps));
      }
    }
  }
  return Status::Ok();
}

// A staged path's SM copies that went by DMAs: their kernel had not started in time
// (TransferOptions::staging_sm_start_us), so something else held the GPU's SMs.
void NoteSmCopiesGivenToDmas(Bench& b) {
  for (const auto& op : b.open)
    if (op.engine && op.engine->sm_copies_given_to_dmas() > 0)
      b.result.notes.push_back(op.path.name + ": " +
                               std::to_string(op.engine->sm_copies_given_to_dmas()) +
                               " SM copies went by DMAs (their kernel had not started within " +
                               std::to_string(static_cast<int>(b.o.staging.staging_sm_start_us)) +
                               " us)");
}

// The staged path's ceiling, before the passes (BenchResult::ceiling), where a staged path runs:
// measured on the CUDA runtime with the staged row's lanes and buffers, every other engine's
// lanes parked; on the simulator, the model's default host costs.
Status MeasureCeiling(Bench& b) {
  bool staged = false;
  for (const auto& op : b.open) staged |= op.path.engine_path == "staged";
  if (!staged) return Status::Ok();
  std::vector<transfer::CeilingCell> cells;
  if (b.clock.is_virtual()) {
    cells = transfer::CeilingCells(transfer::StagingCosts{}, b.sizes, b.o.staging.staging_chunk);
    b.result.ceiling_source = "modelled: the default host costs of segment_plan.h (" +
                              transfer::StagingCosts{}.Describe() +
                              "); the simulator has no lanes or copy engine to time";
  } else {
    ParkAllBut(b, nullptr);
    RESMEM_ASSIGN_OR_RETURN(auto host, host::MapHostMemory(host::HostKind::kMemfd,
                                                           std::max<uint64_t>(b.max_size, 16ull << 20)));
    auto m = transfer::MeasureCeilingOnGpu(b.gpu, *host, b.o.staging, std::max(11, b.o.passes),
                                           b.sizes);
    if (!m.ok()) {
      b.result.notes.push_back("ceiling: not measured: " + m.status().ToString());
      return Status::Ok();
    }
    cells = m->cells;
    b.result.ceiling_source = "measured on this host before the passes (staging_ceiling.h): " +
                              m->costs.Describe();
  }
  for (const auto& c : cells)
    b.result.ceiling.push_back({DirName(c.direction), c.size, c.percent_of_pinned / 100});
  return Status::Ok();
}

// Each staged cell's share of the ceiling at its direction and size.
void SetRatiosToCeiling(BenchResult& result) {
  for (auto& c : result.cells) {
    if (c.path.rfind("staged", 0) != 0) continue;
    for (const auto& p : result.ceiling)
      if (p.direction == c.direction && p.size == c.size && p.ratio_to_pinned > 0)
        c.ratio_to_ceiling = c.ratio_to_pinned / p.ratio_to_pinned;
  }
}

// Moves the cells into result.cells in the order of the table (path, then direction, then
// size), each with its median over the passes.
void CollectCells(Bench& b) {
  for (size_t pi = 0; pi < b.open.size(); ++pi)
    for (int d = 0; d < 2; ++d)
      for (uint64_t size : b.sizes) {
        if (d == 1 && b.open[pi].path.h2d_only) continue;
        BenchCell& cell = b.cells[{d, size, pi}];
        cell.median_gbps = MedianMean(cell.pass_gbps);
        if (b.o.verbose)
          std::fprintf(stderr, "bench %-18s %s %9s %8.2f GB/s%s\n", cell.path.c_str(),
                       cell.direction.c_str(), FormatSize(size).c_str(), cell.median_gbps,
                       cell.verify_failures ? "  DATA MISMATCH" : "");
        b.result.cells.push_back(std::move(cell));
      }
}

// The pinned row's median GB/s by (direction, size): what every ratio is taken against.
std::map<std::pair<std::string, uint64_t>, double> PinnedMedians(const std::vector<BenchCell>& cells) {
  std::map<std::pair<std::string, uint64_t>, double> pinned;
  for (const auto& c : cells)
    if (c.path == "pinned") pinned[{c.direction, c.size}] = c.median_gbps;
  return pinned;
}

// Sets every cell's ratio to the pinned cell of its direction and size; returns the pinned
// medians by (direction, size).
std::map<std::pair<std::string, uint64_t>, double> SetRatiosToPinned(BenchResult& result) {
  auto pinned = PinnedMedians(result.cells);
  for (auto& c : result.cells) {
    double base = pinned[{c.direction, c.size}];
    c.ratio_to_pinned = base > 0 ? c.median_gbps / base : 0;
  }
  return pinned;
}

}  // namespace

Result<BenchResult> RunBench(Gpu& gpu, Clock& clock, const std::string& backend,
                             const BenchOptions& o) {
  Bench b(gpu, clock, o);
  RESMEM_ASSIGN_OR_RETURN(b.sizes, SizesOf(o));
  if (o.passes < 1) return Status::InvalidArgument("--passes must be at least 1");
  b.max_size = *std::max_element(b.sizes.begin(), b.sizes.end());
  RESMEM_ASSIGN_OR_RETURN(std::vector<BenchPath> paths, PathsOf(o));
  b.result.backend = backend;
  b.result.reference = o.reference;
  b.result.warm_cells = o.warm_cells;
  b.result.dma_source = o.dma_source;
  RESMEM_ASSIGN_OR_RETURN(b.dev, gpu.AllocDevice(b.max_size));
  RESMEM_RETURN_IF_ERROR(OpenPaths(b, paths));
  if (o.warmup) RESMEM_RETURN_IF_ERROR(WarmUp(b));
  PrepareHostCheck(b);
  RESMEM_RETURN_IF_ERROR(MeasureCeiling(b));
  b.seq = o.seed << 32;
  for (int pass = 0; pass < o.passes; ++pass) RESMEM_RETURN_IF_ERROR(RunPass(b, pass));
  NoteSmCopiesGivenToDmas(b);
  CollectCells(b);
  const auto pinned = SetRatiosToPinned(b.result);
  SetRatiosToCeiling(b.result);
  MarkUnreliable(&b.result, b.sizes);
  if (o.overlap_blocks > 0) {
    auto rows = RunOverlap(gpu, o, pinned);
    if (rows.ok())
      b.result.overlap = std::move(rows).value();
    else
      b.result.notes.push_back("overlap: " + rows.status().ToString());
  }
  return std::move(b.result);
}

void MarkUnreliable(BenchResult* r, const std::vector<uint64_t>& sizes) {
  char why[448];
  if (!r->lane_dispatch_us.empty()) {
    size_t slow = 0;
    for (double us : r->lane_dispatch_us) slow += us > kMaxLaneDispatchUs;
    const double slowest =
        *std::max_element(r->lane_dispatch_us.begin(), r->lane_dispatch_us.end());
    if (3 * slow > r->lane_dispatch_us.size() || slowest > kMaxLaneStallUs) {
      std::snprintf(why, sizeof why,
                    "host CPU disturbed: an empty job on %d lanes took more than %.0f us in %zu of "
                    "%zu passes, %.1f us at most (median %.1f us; a quiet H100 host: ~1 us; limits: "
                    "over %.0f us in more than a third of the passes, or over %.0f us in any): "
                    "staged copies need every lane scheduled",
                    r->check_lanes, kMaxLaneDispatchUs, slow, r->lane_dispatch_us.size(), slowest,
                    MedianMean(r->lane_dispatch_us), kMaxLaneDispatchUs, kMaxLaneStallUs);
      bool any = false;
      for (auto& c : r->cells) {
        if (c.path.rfind("staged", 0) != 0) continue;
        c.unreliable = why;
        any = true;
      }
      if (any) r->unreliable.push_back(why);
    }
  }
  for (auto& c : r->cells) {
    // pinned-wc may beat pinned for real: that is the claim it measures (seed 001).
    if (c.path == "pinned" || c.path == "pinned-wc" || c.ratio_to_pinned <= kMaxRatioToPinned)
      continue;
    std::snprintf(why, sizeof why,
                  "%s %s %s at %.1f%% of pinned (limit %.0f%%): the pinned baseline of this run "
                  "is low",
                  c.path.c_str(), c.direction.c_str(), FormatSize(c.size).c_str(),
                  100 * c.ratio_to_pinned, 100 * kMaxRatioToPinned);
    c.unreliable = why;
    r->unreliable.push_back(why);
  }
  if (r->reference.gbps.empty() || sizes.empty()) return;
  // Compare at the reference tool's size where the bench ran it, else at the largest size.
  uint64_t at = *std::max_element(sizes.begin(), sizes.end());
  if (std::find(sizes.begin(), sizes.end(), r->reference.size) != sizes.end())
    at = r->reference.size;
  for (auto& c : r->cells) {
    if (c.path != "pinned" || c.size != at) continue;
    auto ref = r->reference.gbps.find(c.direction);
    if (ref == r->reference.gbps.end() || ref->second <= 0) continue;
    const double below = 1 - c.median_gbps / ref->second;
    if (below <= kMaxPinnedBelowReference) continue;
    std::snprintf(why, sizeof why,
                  "pinned %s %s %.2f GB/s is %.1f%% below %s's %.2f GB/s%s on this host (limit "
                  "%.0f%%)",
                  c.direction.c_str(), FormatSize(c.size).c_str(), c.median_gbps, 100 * below,
                  r->reference.source.c_str(), ref->second,
                  r->reference.size && r->reference.size != c.size
                      ? (" at " + FormatSize(r->reference.size)).c_str()
                      : "",
                  100 * kMaxPinnedBelowReference);
    c.unreliable = why;
    r->unreliable.push_back(why);
  }
}

Result<ReferenceBandwidth> ReferenceFromNvbandwidthJson(const std::string& text, uint64_t size) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.contains("nvbandwidth") || !j["nvbandwidth"].contains("testcases"))
    return Status::InvalidArgument(
        "not nvbandwidth JSON (no nvbandwidth.testcases): run nvbandwidth with -j and give its "
        "output");
  ReferenceBandwidth ref;
  ref.size = size;
  ref.source = "nvbandwidth";
  const auto& top = j["nvbandwidth"];
  if (top.contains("version") && top["version"].is_string())
    ref.source += " " + top["version"].get<std::string>();
  for (const auto& t : top["testcases"]) {
    const std::string name = t.value("name", "");
    const char* dir = name == "host_to_device_memcpy_ce"   ? "H2D"
                      : name == "device_to_host_memcpy_ce" ? "D2H"
                                                           : nullptr;
    if (!dir) continue;
    if (t.value("status", "") != "Passed" || !t.contains("sum") || !t["sum"].is_number())
      return Status::InvalidArgument("nvbandwidth testcase " + name + " did not pass (status '" +
                                     t.value("status", "") + "')");
    ref.gbps[dir] = t["sum"].get<double>();
  }
  if (ref.gbps.empty())
    return Status::InvalidArgument(
        "nvbandwidth JSON has neither host_to_device_memcpy_ce nor device_to_host_memcpy_ce: run "
        "nvbandwidth -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce -j");
  return ref;
}

std::string BenchResult::ToJson() const {
  nlohmann::json j;
  j["backend"] = backend;
  j["notes"] = notes;
  j["headline"] = Headline();
  j["unreliable"] = !unreliable.empty();
  j["unreliable_reasons"] = unreliable;
  j["warm_cells"] = warm_cells;
  j["dma_source"] = dma_source;
  if (!lane_dispatch_us.empty()) {
    j["check_lanes"] = check_lanes;
    j["lane_dispatch_us"] = lane_dispatch_us;
    j["lane_memcpy_gbps"] = lane_memcpy_gbps;
  }
  if (!reference.gbps.empty())
    j["reference"] = {{"source", reference.source}, {"size", reference.size},
                      {"gbps", reference.gbps}};
  if (!ceiling.empty()) {
    j["ceiling_source"] = ceiling_source;
    for (const auto& p : ceiling)
      j["ceiling"].push_back(
          {{"direction", p.direction}, {"size", p.size}, {"ratio_to_pinned", p.ratio_to_pinned}});
  }
  for (const auto& v : overlap)
    j["overlap"].push_back({{"name", v.name},
                            {"streams", v.streams},
                            {"block", v.block},
                            {"blocks", v.blocks},
                            {"kernel_us", v.kernel_us},
                            {"copy_us", v.copy_us},
                            {"pass_seconds", v.pass_seconds},
                            {"median_seconds", v.median_seconds},
                            {"gbps", v.gbps},
                            {"ratio_to_serial", v.ratio_to_serial},
                            {"ratio_to_pinned", v.ratio_to_pinned},
                            {"path", v.path}});
  for (const auto& c : cells) {
    j["cells"].push_back({{"path", c.path},
                          {"direction", c.direction},
                          {"size", c.size},
                          {"pass_gbps", c.pass_gbps},
                          {"median_gbps", c.median_gbps},
                          {"ratio_to_pinned", c.ratio_to_pinned},
                          {"ratio_to_ceiling", c.ratio_to_ceiling},
                          {"verify_failures", c.verify_failures},
                          {"choice", c.choice},
                          {"unreliable", c.unreliable}});
  }
  return j.dump(1);
}

Result<BenchResult> BenchResultFromJson(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.contains("cells"))
    return Status::InvalidArgument("not a bench JSON (no \"cells\"): write one with --json");
  BenchResult r;
  r.backend = j.value("backend", "");
  for (const auto& n : j.value("notes", std::vector<std::string>())) r.notes.push_back(n);
  r.unreliable = j.value("unreliable_reasons", std::vector<std::string>());
  r.warm_cells = j.value("warm_cells", false);
  r.dma_source = j.value("dma_source", false);
  r.check_lanes = j.value("check_lanes", 0);
  r.lane_dispatch_us = j.value("lane_dispatch_us", std::vector<double>());
  r.lane_memcpy_gbps = j.value("lane_memcpy_gbps", std::vector<double>());
  if (j.contains("reference") && j["reference"].is_object()) {
    r.reference.source = j["reference"].value("source", "");
    r.reference.size = j["reference"].value("size", uint64_t{0});
    r.reference.gbps = j["reference"].value("gbps", std::map<std::string, double>());
  }
  r.ceiling_source = j.value("ceiling_source", "");
  for (const auto& p : j.value("ceiling", nlohmann::json::array()))
    r.ceiling.push_back({p.value("direction", ""), p.value("size", uint64_t{0}),
                         p.value("ratio_to_pinned", 0.0)});
  for (const auto& c : j["cells"]) {
    BenchCell cell;
    cell.path = c.value("path", "");
    cell.direction = c.value("direction", "");
    cell.size = c.value("size", uint64_t{0});
    cell.pass_gbps = c.value("pass_gbps", std::vector<double>());
    cell.median_gbps = c.value("median_gbps", 0.0);
    cell.ratio_to_pinned = c.value("ratio_to_pinned", 0.0);
    cell.ratio_to_ceiling = c.value("ratio_to_ceiling", 0.0);
    cell.verify_failures = c.value("verify_failures", uint64_t{0});
    cell.choice = c.value("choice", "");
    cell.unreliable = c.value("unreliable", "");
    r.cells.push_back(cell);
  }
  for (const auto& v : j.value("overlap", nlohmann::json::array())) {
    OverlapRow row;
    row.name = v.value("name", "");
    row.streams = v.value("streams", 1);
    row.block = v.value("block", uint64_t{0});
    row.blocks = v.value("blocks", 0);
    row.kernel_us = v.value("kernel_us", 0.0);
    row.copy_us = v.value("copy_us", 0.0);
    row.pass_seconds = v.value("pass_seconds", std::vector<double>());
    row.median_seconds = v.value("median_seconds", 0.0);
    row.gbps = v.value("gbps", 0.0);
    row.ratio_to_serial = v.value("ratio_to_serial", 0.0);
    row.ratio_to_pinned = v.value("ratio_to_pinned", 0.0);
    row.path = v.value("path", "");
    r.overlap.push_back(row);
  }
  return r;
}

std::string BenchResult::ToTable() const {
  std::string out = "backend " + backend + "; GB/s (1e9 B/s), median of passes; ratio to pinned\n";
  if (warm_cells)
    out += "each cell's timed copies follow an untimed copy of their own path and size "
           "(--warm-cells)\n";
  if (dma_source)
    out += "host to device: each timed copy's block was written into its host memory by the "
           "GPU's copy engine first, as a capture card's DMA writes it (--dma-source)\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-20s %-4s %10s %10s %8s %-9s %s\n", "path", "dir", "size", "GB/s",
                "ratio", "verified", ceiling.empty() ? "" : "of ceiling");
  if (!unreliable.empty()) out = "UNRELIABLE RUN (cells marked !): ratios to pinned cannot be trusted\n" + out;
  out += line;
  auto pinned = PinnedMedians(cells);
  for (const auto& p : ceiling) {
    std::snprintf(line, sizeof line, "%-20s %-4s %10s %10.2f %7.1f%%  %-9s\n", "ceiling (staged)",
                  p.direction.c_str(), FormatSize(p.size).c_str(),
                  pinned[{p.direction, p.size}] * p.ratio_to_pinned, 100 * p.ratio_to_pinned, "-");
    out += line;
  }
  for (const auto& c : cells) {
    char share[16] = "";
    if (c.ratio_to_ceiling > 0) std::snprintf(share, sizeof share, "%.1f%%", 100 * c.ratio_to_ceiling);
    std::snprintf(line, sizeof line, "%-20s %-4s %10s %10.2f %7.1f%%%s %-9s %s\n", c.path.c_str(),
                  c.direction.c_str(), FormatSize(c.size).c_str(), c.median_gbps,
                  100 * c.ratio_to_pinned, c.unreliable.empty() ? " " : "!",
                  c.verify_failures ? ("FAILED x" + std::to_string(c.verify_failures)).c_str()
                                    : "ok", share);
    out += line;
  }
  if (!ceiling.empty()) out += "ceiling: " + ceiling_source + "\n";
  if (!overlap.empty()) {
    std::snprintf(line, sizeof line,
                  "overlap (seed 001): %d x %s H2D + a kernel per block held %.0f us; ratio to "
                  "serial = time / blocks x (copy + kernel)\n",
                  overlap.front().blocks, FormatSize(overlap.front().block).c_str(),
                  overlap.front().kernel_us);
    out += line;
    std::snprintf(line, sizeof line, "%-20s %10s %10s %8s %8s %s\n", "case", "ms", "GB/s",
                  "/serial", "/pinned", "path");
    out += line;
    for (const auto& v : overlap) {
      std::snprintf(line, sizeof line, "%-20s %10.3f %10.2f %8.2f %7.1f%% %s\n", v.name.c_str(),
                    1e3 * v.median_seconds, v.gbps, v.ratio_to_serial, 100 * v.ratio_to_pinned,
                    v.path.c_str());
      out += line;
    }
  }
  for (const auto& n : notes) out += "note: " + n + "\n";
  if (!reference.gbps.empty()) {
    out += "reference: " + reference.source;
    if (reference.size) out += " at " + FormatSize(reference.size);
    for (const auto& [dir, gbps] : reference.gbps) {
      std::snprintf(line, sizeof line, "; %s %.2f GB/s", dir.c_str(), gbps);
      out += line;
    }
    out += "\n";
  }
  if (!lane_dispatch_us.empty()) {
    std::snprintf(line, sizeof line,
                  "host check: an empty job on %d lanes, median %.1f us over %zu passes (max "
                  "%.1f; limit %.0f); their memcpy %.1f GB/s (median)\n",
                  check_lanes, MedianMean(lane_dispatch_us), lane_dispatch_us.size(),
                  *std::max_element(lane_dispatch_us.begin(), lane_dispatch_us.end()),
                  kMaxLaneDispatchUs, MedianMean(lane_memcpy_gbps));
    out += line;
  }
  for (const auto& u : unreliable) out += "unreliable: " + u + "\n";
  out += Headline() + "\n";
  return out;
}

std::string BenchResult::Headline() const {
  std::string out;
  uint64_t largest = 0;
  for (const auto& c : cells) largest = std::max(largest, c.size);
  for (const char* dir : {"H2D", "D2H"}) {
    char buf[256];
    double pinned = 0, reg = 0, reg_huge = 0, staged = 0;
    for (const auto& c : cells) {
      if (c.size != largest || c.direction != dir) continue;
      if (c.path == "pinned") pinned = c.median_gbps;
      if (c.path == "registered-direct") reg = c.ratio_to_pinned;
      if (c.path == "registered-hugetlb") reg_huge = c.ratio_to_pinned;
      if (c.path == "staged") staged = c.ratio_to_pinned;
    }
    auto pct = [](double ratio) {
      char b[32];
      if (ratio <= 0) return std::string("n/a");
      std::snprintf(b, sizeof b, "%.1f%%", 100 * ratio);
      return std::string(b);
    };
    std::snprintf(buf, sizeof buf,
                  "%s %s: pinned %.1f GB/s; registered memfd %s, hugetlb %s of pinned "
                  "(target >= 98%%); staged %s (target >= 90%%)\n",
                  dir, FormatSize(largest).c_str(), pinned, pct(reg).c_str(),
                  pct(reg_huge).c_str(), pct(staged).c_str());
    out += buf;
  }
  // Seed 001's figures: write-combined and zero-copy H2D at the largest size, and the overlap.
  double wc = 0, zero_copy = 0;
  for (const auto& c : cells) {
    if (c.size != largest || c.direction != "H2D") continue;
    if (c.path == "pinned-wc") wc = c.ratio_to_pinned;
    if (c.path == "zero-copy-mapped") zero_copy = c.ratio_to_pinned;
  }
  if (wc > 0 || zero_copy > 0 || !overlap.empty()) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "seed 001, H2D %s: write-combined %.1f%%, zero-copy kernel %.1f%% of pinned",
                  FormatSize(largest).c_str(), 100 * wc, 100 * zero_copy);
    out += buf;
    for (const auto& v : overlap) {
      std::snprintf(buf, sizeof buf, "; %s %.2f of serial", v.name.c_str(), v.ratio_to_serial);
      out += buf;
    }
    out += "\n";
  }
  if (!unreliable.empty())
    out += "UNRELIABLE: " + std::to_string(unreliable.size()) +
           " cell(s) outside the limits (the 'unreliable:' lines say which)\n";
  if (!out.empty()) out.pop_back();
  return out;
}

}  // namespace resmem::bench
