// The staged path's pipelines on a real GPU: host-to-device copies up to 64 MiB moved by a kernel
// (--sm-copy-upto 64M; larger ones and device to host by segment DMAs), and, every copy through
// the DMAs: event polling (default), stream signals
// with host-queued DMAs (--signals), DMAs queued behind stream waits (--gpu-waits), and pieces
// moved by a kernel (--sm-copy, a 40 MiB copy going round its 32 MiB ring), and device-to-host
// segments ending in a falling ramp (--d2h-tail), placed at the ring's running cursor (the
// default) or from each buffer's start (--no-rotate-ring), or claimed only after their DMA
// (--no-prefetch-dst; the default claims before and prefetches the destination), and segment
// DMAs spread over three copy streams (--dma-streams 3), and copies cut by the segment plan
// at every length (--plan-upto, --plan-d2h-from; by default host-to-device copies up to 64 MiB and
// device-to-host ones from 64 MiB are)
// and into equal segments at every length, and with the driving lane only issuing DMAs (by
// default it fills the first segment too), both ways, at
// lengths that are and are not multiples of a segment; CopyQueue's blocks cut at the
// host-to-device cap; a failed DMA in the fill frontier and in the rotating device-to-host ring;
// a failed segment copy either way, which must leave no DMA running; an SM copy whose kernel dies.
// Every copy's data is checked.
// Without a GPU every case skips and says so (CI); the hardware runs carry this binary.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "backends/api/clock.h"
#include "backends/cuda/cuda_gpu.h"
#include "backends/fault/fault_injector.h"
#include "backends/host/host_region.h"
#include "engine/transfer/block_check.h"
#include "engine/transfer/transfer_engine.h"
#include "engine/transfer/trap_kernel.h"

#include <cuda_runtime.h>

namespace resmem::transfer {
namespace {

// A copy's result as an assertion that prints the engine's error when it failed.
::testing::AssertionResult CopyOk(const Result<CopyStats>& r) {
  if (r.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << r.status().ToString();
}

struct Variant {
  const char* name;
  bool signals, gpu_waits, sm_copy;
  uint64_t d2h_tail = 0;
  bool prefetch_dst = true;
  int dma_streams = 1;
  bool plan = false;
  bool sm_h2d = false;  // staging_sm_copy_upto 64 MiB; false: 0, every copy through DMAs
  int sm_blocks = TransferOptions().staging_sm_blocks;
  // Host to device by the fill frontier (--frontier); false: the segment pipeline named.
  bool frontier = false;
  uint64_t frontier_unit = TransferOptions().staging_frontier_unit;
  uint64_t frontier_min_dma = TransferOptions().staging_frontier_min_dma;
  double frontier_lead_us = 0;  // --frontier-lead-us: the late issue
};

class StagedCudaLongTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto g = cuda::CudaGpu::Create();
    if (!g.ok()) GTEST_SKIP() << "skipped: no GPU (" << g.status().message() << ")";
    gpu_ = std::move(g).value();
  }
  // A memfd mapping (RAM, as a reservation is) and a device buffer of `len` bytes each.
  void MapBoth(uint64_t len) {
    auto h = host::MapHostMemory(host::HostKind::kMemfd, len);
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    host_ = std::move(h).value();
    auto d = gpu_->AllocDevice(len);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    dev_ = std::move(d).value();
  }
  // What most cases open the engine with: the staged path alone, traced (last_trace()).
  static TransferOptions TracedStaged() {
    TransferOptions o;
    o.allowed = {Path::kStaged};
    o.staging_trace = true;
    return o;
  }
  // From now on the GPU's "gpu.copy" fault point fails its `call`-th copy with CUDA error 999.
  std::shared_ptr<FaultInjector> FailCopyCall(int call, uint64_t seed) {
    auto faults = std::make_shared<FaultInjector>(seed);
    Status added = faults->AddRule(
        FaultRule::ErrorOnCall("gpu.copy", call, Status::Cuda(999, "injected fault at gpu.copy")));
    EXPECT_TRUE(added.ok()) << added.ToString();
    gpu_->set_faults(faults);
    return faults;
  }
  std::unique_ptr<cuda::CudaGpu> gpu_;
  std::unique_ptr<HostMemory> host_;
  std::unique_ptr<DeviceBuffer> dev_;
  SteadyClock clock_;
};

class StagedCudaTest : public StagedCudaLongTest, public ::testing::WithParamInterface<Variant> {};

TEST_P(StagedCudaTest, CopiesBothWaysIntact) {
  const uint64_t max = 40ull << 20;
  ASSERT_NO_FATAL_FAILURE(MapBoth(max));
  auto other = gpu_->AllocDevice(max);
  ASSERT_TRUE(other.ok());
  TransferOptions o = TracedStaged();
  o.staging_signals = GetParam().signals;
  o.staging_gpu_waits = GetParam().gpu_waits;
  o.staging_sm_copy = GetParam().sm_copy;
  o.staging_d2h_tail = GetParam().d2h_tail;
  o.staging_prefetch_dst = GetParam().prefetch_dst;
  o.staging_dma_streams = GetParam().dma_streams;
  o.staging_sm_copy_upto = GetParam().sm_h2d ? 64ull << 20 : 0;
  o.staging_sm_blocks = GetParam().sm_blocks;
  o.staging_frontier = GetParam().frontier;
  o.staging_frontier_unit = GetParam().frontier_unit;
  o.staging_frontier_min_dma = GetParam().frontier_min_dma;
  o.staging_frontier_lead_us = GetParam().frontier_lead_us;
  // "plan": every length planned; the other pipelines keep the default, but "equal_segments",
  // which plans none.
  if (GetParam().plan) o.staging_plan_upto = ~0ull, o.staging_plan_d2h_from = 4096;
  if (std::string(GetParam().name) == "equal_segments") o.staging_plan_upto = o.staging_plan_d2h_from = 0;
  // "no_driver_fill": the driving lane only issues DMAs (the default also fills segment 0).
  if (std::string(GetParam().name) == "no_driver_fill") o.staging_driver_fills = false;
  // Device-to-host segments at the ring's running cursor (the default): a 40 MiB copy goes
  // round the 32 MiB ring within itself, and "ring_tail"'s short segments skip to a buffer's
  // start. "fixed_ring": segment i in buffer i % S, demoted after draining.
  if (std::string(GetParam().name) == "fixed_ring")
    o.staging_rotate_ring = false, o.staging_demote_drain_upto = 2ull << 20;
  auto e = TransferEngine::Open(*gpu_, *host_, clock_, o);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  const std::string detail = (*e)->choice().detail;
  if (GetParam().signals && detail.find("stream signals") == std::string::npos)
    GTEST_SKIP() << "skipped: this driver has no stream memory operations (" << detail << ")";
  if ((GetParam().sm_copy || GetParam().sm_h2d) && detail.find("moved by the SMs") == std::string::npos)
    GTEST_SKIP() << "skipped: no piece ring (" << detail << ")";
  uint64_t seq = 1;
  // 64 KiB, 1 MiB + 4 KiB, 16 MiB, 40 MiB - 12 KiB: below, across and above a segment.
  for (uint64_t len : {uint64_t{64} << 10, (uint64_t{1} << 20) + 4096, uint64_t{16} << 20, max - 12288}) {
    ++seq;
    ASSERT_TRUE(FillPattern(*host_, 0, len, seq, 5).ok());
    auto up = (*e)->Copy(CopyDirection::kHostToDevice, 0, *dev_, 0, len);
    ASSERT_TRUE(up.ok()) << up.status().ToString();
    auto bad = DeviceMismatches(*gpu_, *dev_, 0, len, seq, 5);
    ASSERT_TRUE(bad.ok());
    EXPECT_EQ(*bad, 0u) << GetParam().name << " H2D " << len;
    // The SM copy ran with the blocks asked (fewer than any GPU's SMs here), or the pieces.
    const StagedTrace& t = (*e)->last_trace();
    if (t.sm_pieces > 0 && GetParam().sm_blocks < 32) {
      EXPECT_EQ(static_cast<uint64_t>(t.sm_blocks),
                std::min<uint64_t>(static_cast<uint64_t>(GetParam().sm_blocks), t.sm_pieces))
          << GetParam().name << " H2D " << len;
    }
    // By the fill frontier: DMAs that cover the copy in order, each inside one buffer, none
    // under the minimum but the last.
    if (GetParam().frontier) {
      ASSERT_EQ(t.sm_pieces, 0u);
      ASSERT_EQ(t.dma_bytes.size(), static_cast<size_t>(t.segments)) << GetParam().name;
      uint64_t at = 0;
      const uint64_t min_dma =
          FrontierShapeOf(len, o.staging_frontier_unit, o.staging_frontier_min_dma).min_dma;
      for (size_t i = 0; i < t.dma_bytes.size(); ++i) {
        const uint64_t n = t.dma_bytes[i];
        EXPECT_GT(n, 0u);
        EXPECT_LE(at % o.staging_chunk + n, o.staging_chunk) << "DMA " << i << " crosses a buffer";
        if (i + 1 < t.dma_bytes.size() && (at + n) % o.staging_chunk != 0) {
          EXPECT_GE(n, min_dma) << GetParam().name << " DMA " << i << " of " << len;
        }
        at += n;
      }
      EXPECT_EQ(at, len) << GetParam().name;
      // Every unit was filled once, after it began, and before the DMA that reads it was issued.
      const uint64_t units = (len + t.unit_bytes - 1) / t.unit_bytes;
      ASSERT_EQ(t.unit_filled_us.size(), units) << GetParam().name;
      ASSERT_EQ(t.unit_begin_us.size(), units);
      for (uint64_t u = 0; u < units; ++u) {
        EXPECT_GT(t.unit_begin_us[u], 0) << "unit " << u;
        EXPECT_LE(t.unit_begin_us[u], t.unit_filled_us[u]) << "unit " << u;
      }
      at = 0;
      for (size_t i = 0; i < t.dma_bytes.size(); ++i) {
        at += t.dma_bytes[i];
        EXPECT_LE(FrontierReachedUs(t, at), t.issue_begin_us[i])
            << GetParam().name << ": DMA " << i << " issued before its units were filled";
      }
    }
    // Put another pattern through the ring (into a second buffer) first, so a drain that ran
    // ahead of its DMA would bring back that pattern, not the one on the device.
    ASSERT_TRUE(FillPattern(*host_, 0, len, seq + 1000, 5).ok());
    ASSERT_TRUE(CopyOk((*e)->Copy(CopyDirection::kHostToDevice, 0, **other, 0, len)));
    std::memset(host_->data(), 0, len);
    auto down = (*e)->Copy(CopyDirection::kDeviceToHost, 0, *dev_, 0, len);
    ASSERT_TRUE(down.ok()) << down.status().ToString();
    auto back = HostMismatches(*host_, 0, len, seq, 5);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, 0u) << GetParam().name << " D2H " << len;
  }
}

// A copy longer than the planned window (32 segments of 8 MiB): device to host it is cut into
// 8 MiB segments and a planned tail, and every segment must fit a ring buffer.
TEST_F(StagedCudaLongTest, GigabyteCopyBothWaysIntact) {
  const uint64_t len = (1ull << 30) + 4096;
  ASSERT_NO_FATAL_FAILURE(MapBoth(len));
  TransferOptions o;
  o.allowed = {Path::kStaged};
  // Host to device planned (128 segments through the 64-slot descriptor ring), then by the fill
  // frontier (the 32 MiB ring refilled 32 times).
  o.staging_plan_upto = ~0ull;
  o.staging_frontier = false;
  auto planned = TransferEngine::Open(*gpu_, *host_, clock_, o);
  ASSERT_TRUE(planned.ok()) << planned.status().ToString();
  ASSERT_TRUE(FillPattern(*host_, 0, len, 76, 5).ok());
  ASSERT_TRUE(CopyOk((*planned)->Copy(CopyDirection::kHostToDevice, 0, *dev_, 0, len)));
  auto bad = DeviceMismatches(*gpu_, *dev_, 0, len, 76, 5);
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(*bad, 0u) << "H2D, planned";
  (*planned).reset();  // its lanes and pinned ring go before the next engine takes its own
  o.staging_frontier = true;
  auto e = TransferEngine::Open(*gpu_, *host_, clock_, o);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  ASSERT_TRUE(FillPattern(*host_, 0, len, 77, 5).ok());
  ASSERT_TRUE(CopyOk((*e)->Copy(CopyDirection::kHostToDevice, 0, *dev_, 0, len)));
  bad = DeviceMismatches(*gpu_, *dev_, 0, len, 77, 5);
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(*bad, 0u) << "H2D, by the fill frontier";
  std::memset(host_->data(), 0, len);
  ASSERT_TRUE(CopyOk((*e)->Copy(CopyDirection::kDeviceToHost, 0, *dev_, 0, len)));
  auto back = HostMismatches(*host_, 0, len, 77, 5);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, 0u) << "D2H";
}

// The engine cuts a copy as its plan says (the trace counts the segments it ran), and into equal
// segments where the plan is off: host to device 16 MiB, device to host 64 MiB, the defaults'
// planned sizes, whose plans have more segments than the equal cut.
TEST_F(StagedCudaLongTest, CopiesFollowTheirPlan) {
  const uint64_t max = 64ull << 20;
  ASSERT_NO_FATAL_FAILURE(MapBoth(max));
  struct Case { CopyDirection dir; uint64_t len; };
  for (const Case& k : {Case{CopyDirection::kHostToDevice, 16ull << 20},
                        Case{CopyDirection::kDeviceToHost, 64ull << 20}}) {
    const bool h2d = k.dir == CopyDirection::kHostToDevice;
    int segments[2] = {0, 0};  // planned, equal
    for (int planned = 1; planned >= 0; --planned) {
      TransferOptions o = TracedStaged();
      o.staging_sm_copy_upto = 0;  // host to device through the segment DMAs
      o.staging_frontier = false;  // and their plan
      if (!planned) o.staging_plan_upto = o.staging_plan_d2h_from = 0;
      auto e = TransferEngine::Open(*gpu_, *host_, clock_, o);
      ASSERT_TRUE(e.ok()) << e.status().ToString();
      ASSERT_TRUE(CopyOk((*e)->Copy(k.dir, 0, *dev_, 0, k.len)));
      segments[planned ? 0 : 1] = (*e)->last_trace().segments;
    }
    const TransferOptions d;
    const SegmentPlan plan = PlanSegments(
        h2d ? PlanDirection::kHostToDevice : PlanDirection::kDeviceToHost, k.len, d.staging_chunk,
        d.staging_costs);
    EXPECT_EQ(segments[0], static_cast<int>(plan.segments.size())) << (h2d ? "H2D" : "D2H");
    EXPECT_NE(segments[0], segments[1]) << (h2d ? "H2D" : "D2H") << ": the plan was not used";
    EXPECT_EQ(segments[1], 8) << (h2d ? "H2D" : "D2H") << ": equal segments, at least 8 per copy";
  }
}

// CopyQueue cuts host-to-device blocks at the host-to-device cap, as single copies are
// (staging_chunk_h2d, 4 MiB by default; 0: the buffer size, 8 MiB): two 16 MiB blocks go in 8
// segments of 4 MiB, or in 4 of 8 MiB with the cap off (the trace counts them: 32 MiB in 8
// segments of at most 4 MiB are 4 MiB each), and arrive intact either way.
TEST_F(StagedCudaLongTest, CopyQueueKeepsToTheHostToDeviceCap) {
  const uint64_t block = 16ull << 20;
  ASSERT_NO_FATAL_FAILURE(MapBoth(2 * block));
  const TransferOptions d;
  ASSERT_EQ(d.staging_chunk_h2d, 4ull << 20);
  for (const uint64_t cap : {d.staging_chunk_h2d, uint64_t{0}}) {
    TransferOptions o = TracedStaged();
    o.staging_chunk_h2d = cap;
    auto e = TransferEngine::Open(*gpu_, *host_, clock_, o);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    const uint64_t seq = 40 + cap;
    ASSERT_TRUE(FillPattern(*host_, 0, 2 * block, seq, 5).ok());
    uint64_t handed = 0;
    Status st = (*e)->CopyQueue(
        [&](QueuedBlock* b) -> Result<QueuePoll> {
          if (handed == 2) return QueuePoll::kEnd;
          *b = QueuedBlock{handed * block, dev_.get(), handed * block, block, handed};
          ++handed;
          return QueuePoll::kBlock;
        },
        [](const QueuedBlock&) { return Status::Ok(); });
    ASSERT_TRUE(st.ok()) << st.ToString();
    const uint64_t segment = cap ? cap : d.staging_chunk;
    const StagedTrace& t = (*e)->last_trace();
    EXPECT_EQ(t.segment_bytes, segment) << "cap " << cap << ": " << (*e)->choice().detail;
    EXPECT_EQ(t.segments, static_cast<int>(2 * block / segment)) << "cap " << cap;
    auto m = DeviceMismatches(*gpu_, *dev_, 0, 2 * block, seq, 5);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_EQ(*m, 0u) << "cap " << cap;
  }
}

// Host to device, the driving lane fills pieces of the first segment while the other lanes
// enter (staging_driver_fills), and does not when that is off: the trace counts its pieces.
// A hundred 1 MiB copies each way of the option: the lanes could take every piece of one copy
// before the driving lane looks, not of a hundred (H100 host, staged6 run 4: 6 pieces in 20).
TEST_F(StagedCudaLongTest, DrivingLaneFillsTheFirstSegmentUnlessTold) {
  const uint64_t len = 1ull << 20;
  ASSERT_NO_FATAL_FAILURE(MapBoth(len));
  for (bool fills : {true, false}) {
    TransferOptions o = TracedStaged();
    o.staging_sm_copy_upto = 0;  // host to device through the segment DMAs
    o.staging_frontier = false;  // the segment pipeline's driver fill
    o.staging_driver_fills = fills;
    auto e = TransferEngine::Open(*gpu_, *host_, clock_, o);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    uint64_t pieces = 0;
    for (int i = 0; i < 100; ++i) {
      ASSERT_TRUE(FillPattern(*host_, 0, len, 50 + i, 5).ok());
      ASSERT_TRUE(CopyOk((*e)->Copy(CopyDirection::kHostToDevice, 0, *dev_, 0, len)));
      pieces += (*e)->last_trace().driver_pieces;
      auto bad = DeviceMismatches(*gpu_, *dev_, 0, len, 50 + i, 5);
      ASSERT_TRUE(bad.ok());
      ASSERT_EQ(*bad, 0u) << "copy " << i << (fills ? "" : ", no driver fill");
    }
    std::printf("note: the driving lane filled %llu pieces in 100 copies (%s)\n",
                (unsigned long long)pieces, fills ? "default" : "--no-driver-fill");
    if (fills) EXPECT_GT(pieces, 0u) << "the driving lane never filled a piece";
    else EXPECT_EQ(pieces, 0u) << "the driving lane filled with staging_driver_fills off";
  }
}

// With staging_sm_copy_upto (64 MiB) a host-to-device copy up to it is moved by the kernel and a
// larger one by segment DMAs; device to host always by segment DMAs; by default up to 64 MiB.
// The trace says which (sm_pieces against segments), and every copy's data is checked.
TEST_F(StagedCudaLongTest, HostToDeviceCopiesUpToTheLimitGoThroughTheSms) {
  EXPECT_EQ(TransferOptions().staging_sm_copy_upto, 64u << 20) << "the SM copy's default limit";
  EXPECT_EQ(TransferOptions().staging_sm_blocks, 32) << "the SM copy's blocks by default";
  const uint64_t limit = 64ull << 20;
  const uint64_t max = limit + (4ull << 20);
  ASSERT_NO_FATAL_FAILURE(MapBoth(max));
  TransferOptions o = TracedStaged();
  o.staging_sm_copy_upto = limit;
  auto e = TransferEngine::Open(*gpu_, *host_, clock_, o);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  if ((*e)->choice().detail.find("moved by the SMs") == std::string::npos)
    GTEST_SKIP() << "skipped: no piece ring (" << (*e)->choice().detail << ")";
  auto probe = gpu_->NewPieceRing(4096, 1, 1);  // for the device's SM count
  ASSERT_TRUE(probe.ok()) << probe.status().ToString();
  const uint64_t sms = static_cast<uint64_t>(probe->sms);
  gpu_->FreePieceRing(*probe);
  struct Case { CopyDirection dir; uint64_t len; bool sms; };
  uint64_t seq = 300;
  for (const Case& k : {Case{CopyDirection::kHostToDevice, 64ull << 10, true},
                        Case{CopyDirection::kHostToDevice, 1ull << 20, true},
                        Case{CopyDirection::kHostToDevice, limit, true},
                        Case{CopyDirection::kHostToDevice, max, false},
                        Case{CopyDirection::kDeviceToHost, 1ull << 20, false}}) {
    const bool h2d = k.dir == CopyDirection::kHostToDevice;
    const std::string what = std::string(h2d ? "H2D " : "D2H ") + std::to_string(k.len >> 10) + " KiB";
    ++seq;
    ASSERT_TRUE(FillPattern(*host_, 0, k.len, seq, 5).ok());
    if (!h2d) {  // the pattern onto the device first, then back into a cleared mapping
      ASSERT_TRUE(CopyOk((*e)->Copy(CopyDirection::kHostToDevice, 0, *dev_, 0, k.len)));
      std::memset(host_->data(), 0, k.len);
    }
    ASSERT_TRUE(CopyOk((*e)->Copy(k.dir, 0, *dev_, 0, k.len))) << what;
    const StagedTrace& t = (*e)->last_trace();
    if (k.sms) {
      EXPECT_EQ(t.sm_pieces, (k.len + o.staging_sm_piece - 1) / o.staging_sm_piece) << what;
      // The kernel's own count of its blocks: 32, or fewer where the SMs or the pieces are fewer.
      EXPECT_EQ(static_cast<uint64_t>(t.sm_blocks), std::min<uint64_t>({32, sms, t.sm_pieces}))
          << what;
      EXPECT_EQ(t.segments, 0) << what;
      EXPECT_LE(t.launched_us, t.returned_us) << what;
      // On an idle GPU the kernel starts well within the start wait.
      EXPECT_FALSE(t.sm_given_to_dmas) << what;
      EXPECT_GT(t.sm_started_us, t.launched_us) << what;
    } else {
      EXPECT_EQ(t.sm_pieces, 0u) << what;
      EXPECT_GT(t.segments, 0) << what;
    }
    auto bad = h2d ? DeviceMismatches(*gpu_, *dev_, 0, k.len, seq, 5)
                   : HostMismatches(*host_, 0, k.len, seq, 5);
    ASSERT_TRUE(bad.ok());
    EXPECT_EQ(*bad, 0u) << what;
  }
}

// While a program's kernel holds every SM (HoldEverySm), an SM copy's kernel cannot start: the
// copy goes by DMAs after staging_sm_start_us instead of waiting for the SMs, and its kernel,
// when it runs after the hold, leaves without storing anything. Here a 16 MiB copy goes by DMAs
// with most of its pieces never filled, then a 1 MiB copy into another buffer, still during the
// hold, fills the first ring slots with another pattern and goes by DMAs too. After the hold a
// kernel that stored without the verdict would copy that pattern into the first copy's
// buffer; one that waited for its missing pieces would keep every later kernel from starting,
// so the next copy would go by DMAs. With a start wait of 0 the copy waits for the SMs instead.
TEST_F(StagedCudaLongTest, SmCopyGoesByDmasWhileAProgramsKernelHoldsEverySm) {
  const uint64_t len = 16ull << 20, next = 1ull << 20;
  const double hold_us = 100e3;
  ASSERT_NO_FATAL_FAILURE(MapBoth(len));
  auto other = gpu_->AllocDevice(next);
  ASSERT_TRUE(other.ok());
  for (const double start_us : {TransferOptions().staging_sm_start_us, 0.0}) {
    const std::string what = "start wait " + std::to_string(start_us) + " us";
    TransferOptions o = TracedStaged();
    o.staging_sm_copy_upto = len;
    o.staging_sm_start_us = start_us;
    auto e = TransferEngine::Open(*gpu_, *host_, clock_, o);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    if ((*e)->choice().detail.find("moved by the SMs") == std::string::npos)
      GTEST_SKIP() << "skipped: no piece ring (" << (*e)->choice().detail << ")";
    // An idle GPU: the SMs move it.
    ASSERT_TRUE(FillPattern(*host_, 0, len, 601, 5).ok());
    ASSERT_TRUE(CopyOk((*e)->Copy(CopyDirection::kHostToDevice, 0, *dev_, 0, len))) << what;
    EXPECT_FALSE((*e)->last_trace().sm_given_to_dmas) << what;
    EXPECT_GT((*e)->last_trace().sm_pieces, 0u) << what;
    // Every SM held; the hold's blocks are placed well within the millisecond slept.
    ASSERT_TRUE(gpu_->HoldEverySm(hold_us).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_TRUE(FillPattern(*host_, 0, len, 602, 5).ok());
    const double t0 = clock_.NowSeconds();
    ASSERT_TRUE(CopyOk((*e)->Copy(CopyDirection::kHostToDevice, 0, *dev_, 0, len))) << what;
    const double took_us = (clock_.NowSeconds() - t0) * 1e6;
    const StagedTrace& t = (*e)->last_trace();
    std::printf("note: %s, 16 MiB beside a kernel holding every SM for %.0f us: %.1f us, %s "
                "(kernel launched by %.1f, given up at %.1f; the DMAs' copy %.1f us: lanes in by "
                "%.1f, segment 0 filled %.1f, its DMA issued %.1f, done %.1f)\n",
                what.c_str(), hold_us, took_us, t.sm_given_to_dmas ? "by DMAs" : "by the SMs",
                t.launched_us, t.sm_abandoned_us, t.returned_us, t.lane_enter_max_us,
                t.filled_us.empty() ? 0.0 : t.filled_us[0],
                t.issued_us.empty() ? 0.0 : t.issued_us[0],
                t.done_us.empty() ? 0.0 : t.done_us[0]);
    if (start_us == 0) {
      EXPECT_FALSE(t.sm_given_to_dmas) << what << ": waits for the SMs";
      EXPECT_EQ((*e)->sm_copies_given_to_dmas(), 0u);
      auto bad = DeviceMismatches(*gpu_, *dev_, 0, len, 602, 5);
      ASSERT_TRUE(bad.ok());
      EXPECT_EQ(*bad, 0u) << what;
      continue;
    }
    EXPECT_TRUE(t.sm_given_to_dmas) << what;
    EXPECT_EQ(t.sm_started_us, 0) << what << ": the kernel had not started";
    EXPECT_GT(t.segments, 0) << what << ": the DMAs' copy";
    // Still during the hold (a data check needs the SMs: it waits for the hold to end, so the
    // checks come after): the first slots get another pattern, for another buffer.
    ASSERT_TRUE(FillPattern(*host_, 0, next, 603, 5).ok());
    ASSERT_TRUE(CopyOk((*e)->Copy(CopyDirection::kHostToDevice, 0, **other, 0, next))) << what;
    EXPECT_TRUE((*e)->last_trace().sm_given_to_dmas) << what << ": during the hold";
    EXPECT_EQ((*e)->sm_copies_given_to_dmas(), 2u);
    auto bad = DeviceMismatches(*gpu_, **other, 0, next, 603, 5);
    ASSERT_TRUE(bad.ok());
    EXPECT_EQ(*bad, 0u) << what;
    // After the hold both abandoned kernels run, then the next copy's.
    std::this_thread::sleep_for(std::chrono::duration<double, std::micro>(hold_us));
    ASSERT_TRUE(FillPattern(*host_, 0, next, 604, 5).ok());
    ASSERT_TRUE(CopyOk((*e)->Copy(CopyDirection::kHostToDevice, 0, **other, 0, next))) << what;
    EXPECT_FALSE((*e)->last_trace().sm_given_to_dmas)
        << what << ": an abandoned kernel kept the next one from starting";
    bad = DeviceMismatches(*gpu_, **other, 0, next, 604, 5);
    ASSERT_TRUE(bad.ok());
    EXPECT_EQ(*bad, 0u) << what;
    bad = DeviceMismatches(*gpu_, *dev_, 0, len, 602, 5);
    ASSERT_TRUE(bad.ok());
    EXPECT_EQ(*bad, 0u) << what << ": an abandoned kernel wrote into its copy's buffer";
  }
}

// By the fill frontier, a DMA that fails (the "gpu.copy" fault point, on the copy's second DMA:
// a 16 MiB copy has at least two, one per 8 MiB buffer) ends the copy with that error, stops the
// lanes, and leaves the engine whole: the next copy is intact.
TEST_F(StagedCudaLongTest, FrontierCopyReturnsAFailedDmaAndTheNextCopyIsIntact) {
  const uint64_t len = 16ull << 20;
  ASSERT_NO_FATAL_FAILURE(MapBoth(len));
  TransferOptions o = TracedStaged();
  o.staging_frontier = true;
  o.staging_sm_copy_upto = 0;  // 16 MiB by the DMAs
  auto e = TransferEngine::Open(*gpu_, *host_, clock_, o);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  if ((*e)->choice().detail.find("fill frontier (") == std::string::npos)
    GTEST_SKIP() << "skipped: no copies by the fill frontier (" << (*e)->choice().detail << ")";
  auto faults = FailCopyCall(2, 11);
  ASSERT_TRUE(FillPattern(*host_, 0, len, 41, 5).ok());
  auto failed = (*e)->Copy(CopyDirection::kHostToDevice, 0, *dev_, 0, len);
  ASSERT_FALSE(failed.ok()) << "the injected DMA error was lost";
  EXPECT_EQ(failed.status().code(), 999) << failed.status().ToString();
  EXPECT_EQ(faults->fired().size(), 1u);
  gpu_->set_faults(nullptr);
  ASSERT_TRUE(FillPattern(*host_, 0, len, 42, 5).ok());
  auto again = (*e)->Copy(CopyDirection::kHostToDevice, 0, *dev_, 0, len);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_GE((*e)->last_trace().segments, 2);
  auto bad = DeviceMismatches(*gpu_, *dev_, 0, len, 42, 5);
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(*bad, 0u);
}

// Device to host through the rotating ring, a DMA that fails (the "gpu.copy" fault point, on
// the copy's third DMA, with two already queued into the ring) ends the copy with that error and
// stops the lanes; the next copy, which starts past the failed one in the ring while the failed
// copy's queued DMAs may still be landing, is intact.
TEST_F(StagedCudaLongTest, DrainCopyReturnsAFailedDmaAndTheNextCopyIsIntact) {
  const uint64_t len = 16ull << 20;
  ASSERT_NO_FATAL_FAILURE(MapBoth(len));
  TransferOptions o = TracedStaged();
  auto e = TransferEngine::Open(*gpu_, *host_, clock_, o);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  if ((*e)->choice().detail.find("ring's running cursor") == std::string::npos)
    GTEST_SKIP() << "skipped: no rotating ring (" << (*e)->choice().detail << ")";
  ASSERT_TRUE(FillPattern(*host_, 0, len, 51, 5).ok());
  ASSERT_TRUE((*e)->Copy(CopyDirection::kHostToDevice, 0, *dev_, 0, len).ok());
  auto faults = FailCopyCall(3, 12);
  auto failed = (*e)->Copy(CopyDirection::kDeviceToHost, 0, *dev_, 0, len);
  ASSERT_FALSE(failed.ok()) << "the injected DMA error was lost";
  EXPECT_EQ(failed.status().code(), 999) << failed.status().ToString();
  EXPECT_EQ(faults->fired().size(), 1u);
  gpu_->set_faults(nullptr);
  ASSERT_TRUE(FillPattern(*host_, 0, len, 52, 5).ok());  // the device still holds block 51
  auto again = (*e)->Copy(CopyDirection::kDeviceToHost, 0, *dev_, 0, len);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_GE((*e)->last_trace().segments, 3);
  auto bad = HostMismatches(*host_, 0, len, 51, 5);
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(*bad, 0u);
}

// Whether the calling thread's stream has nothing left to run: the stream a segment copy's DMAs
// are queued on (lane 0, which queues them, is the calling thread).
bool ThreadStreamIdle() {
  const cudaError_t err = cudaStreamQuery(cudaStreamPerThread);
  if (err == cudaErrorNotReady) cudaGetLastError();
  return err == cudaSuccess;
}

// A segment copy whose DMA fails returns only once the DMAs queued before it are done: right
// after Copy returns, their stream is idle. Device to host the third DMA fails (16 MiB: two
// queued before it), and the next host-to-device copy through the segment pump (the SM copy off)
// fills the ring those DMAs were writing, and must reach the device intact (before the fix 19 of
// 20 arrived with stale bytes on the H200, and the stream was busy 20 of 20 times); host to
// device the last DMA fails (the plan's first DMAs are short and done by the third; by the last
// the DMAs queue behind each other), and the next device-to-host copy brings back the device's
// data. The host holds the block of 51, the block of 52, and room for the device-to-host copies.
TEST_F(StagedCudaLongTest, AFailedSegmentCopyLeavesNoDmaRunning) {
  const uint64_t len = 16ull << 20;
  ASSERT_NO_FATAL_FAILURE(MapBoth(3 * len));
  auto other = gpu_->AllocDevice(len);
  ASSERT_TRUE(other.ok());
  TransferOptions o = TracedStaged();
  o.staging_sm_copy_upto = 0;  // host to device through the segment pump
  auto e = TransferEngine::Open(*gpu_, *host_, clock_, o);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  ASSERT_TRUE(FillPattern(*host_, 0, len, 51, 5).ok());
  ASSERT_TRUE(FillPattern(*host_, len, len, 52, 5).ok());
  for (int round = 0; round < 20; ++round) {
    const std::string what = "round " + std::to_string(round);
    ASSERT_TRUE(CopyOk((*e)->Copy(CopyDirection::kHostToDevice, 0, *dev_, 0, len))) << what;
    const int h2d_dmas = (*e)->last_trace().segments;  // one DMA per segment through the pump
    ASSERT_GE(h2d_dmas, 3) << what;
    auto faults = FailCopyCall(3, 100 + round);
    auto failed = (*e)->Copy(CopyDirection::kDeviceToHost, 2 * len, *dev_, 0, len);
    const bool idle = ThreadStreamIdle();
    gpu_->set_faults(nullptr);
    ASSERT_FALSE(failed.ok()) << what << ": the injected DMA error was lost";
    EXPECT_EQ(failed.status().code(), 999) << failed.status().ToString();
    EXPECT_TRUE(idle) << what << ": a DMA of the failed device-to-host copy still ran";
    ASSERT_TRUE(CopyOk((*e)->Copy(CopyDirection::kHostToDevice, len, **other, 0, len))) << what;
    EXPECT_GT((*e)->last_trace().segments, 0) << what << ": not through the segment pump";
    auto bad = DeviceMismatches(*gpu_, **other, 0, len, 52, 5);
    ASSERT_TRUE(bad.ok());
    EXPECT_EQ(*bad, 0u) << what << ": the host-to-device copy after the failed one";
    faults = FailCopyCall(h2d_dmas, 200 + round);
    failed = (*e)->Copy(CopyDirection::kHostToDevice, 0, *dev_, 0, len);
    const bool idle_h2d = ThreadStreamIdle();
    gpu_->set_faults(nullptr);
    ASSERT_FALSE(failed.ok()) << what << ": the injected DMA error was lost";
    EXPECT_EQ(failed.status().code(), 999) << failed.status().ToString();
    EXPECT_TRUE(idle_h2d) << what << ": a DMA of the failed host-to-device copy still ran";
    ASSERT_TRUE(CopyOk((*e)->Copy(CopyDirection::kDeviceToHost, 2 * len, **other, 0, len)));
    auto back = HostMismatches(*host_, 2 * len, len, 52, 5);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, 0u) << what << ": the device-to-host copy after the failed one";
  }
}

// The child of SmCopyReturnsAnErrorWhenItsKernelDies: a 64 MiB SM copy (twice the piece ring,
// so the lanes wait for slots the kernel frees) while a kernel on another stream traps ~50 us
// in. Exits 0 once the copy returned an error (or, saying so, without a piece ring), 1 when it
// returned Ok (the trap came too late to test anything), 2 when the set-up failed, 3 when the
// watchdog found the copy still running after 20 s. Says which on stderr (Leave).
[[noreturn]] void Leave(int code, const std::string& why) {
  std::fprintf(stderr, "%s\n", why.c_str());
  std::_Exit(code);
}
[[noreturn]] void CopyBesideADyingKernel(cuda::CudaGpu& gpu, Clock& clock) {
  std::thread([] {
    std::this_thread::sleep_for(std::chrono::seconds(20));
    Leave(3, "hung: the copy had not returned after 20 s");
  }).detach();
  const uint64_t len = 64ull << 20;
  auto host = host::MapHostMemory(host::HostKind::kMemfd, len);
  auto dev = gpu.AllocDevice(len);
  if (!host.ok() || !dev.ok()) Leave(2, "set-up: no host mapping or device buffer");
  TransferOptions o;
  o.allowed = {Path::kStaged};
  o.staging_sm_copy_upto = len;
  auto e = TransferEngine::Open(gpu, **host, clock, o);
  if (!e.ok()) Leave(2, "set-up: " + e.status().ToString());
  if ((*e)->choice().detail.find("moved by the SMs") == std::string::npos)
    Leave(0, "the copy returned: nothing, skipped: no piece ring");
  // Two small copies first: the piece kernel is loaded and the lanes awake, so the trap falls
  // inside the large copy.
  for (int i = 0; i < 2; ++i)
    if (!(*e)->Copy(CopyDirection::kHostToDevice, 0, **dev, 0, 1 << 20).ok())
      Leave(2, "set-up: a 1 MiB copy failed");
  if (!gpu.BindThread().ok() || LaunchTrapAfter(90000) != 0)
    Leave(2, "set-up: the trap kernel did not launch");
  auto r = (*e)->Copy(CopyDirection::kHostToDevice, 0, **dev, 0, len);
  if (r.ok()) Leave(1, "the copy returned Ok: the trap came after it");
  Leave(0, "the copy returned: " + r.status().ToString());
}

// An SM copy whose kernel dies mid-copy (another kernel of the context traps) returns the
// kernel's error within seconds instead of waiting forever for the kernel's words (before the
// fix: 3 of 3 hung on the H200). In a child process: the trap leaves the context unusable.
TEST_F(StagedCudaLongTest, SmCopyReturnsAnErrorWhenItsKernelDies) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the child runs afresh, its own CUDA context
  EXPECT_EXIT(CopyBesideADyingKernel(*gpu_, clock_), ::testing::ExitedWithCode(0),
              "the copy returned: ");
}

// What SignalledCopyEndsOnAQueueErrorWithGpuWaits copies with: 64 MiB host to device in equal
// segments (no plan, no SM copy), their DMAs queued behind stream waits (--signals --gpu-waits).
TransferOptions GpuWaitOptions() {
  TransferOptions o;
  o.allowed = {Path::kStaged};
  o.staging_signals = o.staging_gpu_waits = true;
  o.staging_sm_copy_upto = 0;
  o.staging_plan_upto = o.staging_plan_d2h_from = 0;
  return o;
}
constexpr uint64_t kGpuWaitCopy = 64ull << 20;

// Its child: 200 such copies, the k-th DMA of each refused as it is queued (k from 2 to 13:
// past the buffers' count, so waits for two segments of one buffer are queued), and lane 0
// releases the waits it queued while the lanes still fill. Exits 0 when every copy returned the
// injected error, 1 when one returned Ok or another error, 2 when the set-up failed, 3 when the
// watchdog found a copy still running after 30 s.
[[noreturn]] void QueueErrorsBehindStreamWaits(cuda::CudaGpu& gpu, Clock& clock) {
  std::thread([] {
    std::this_thread::sleep_for(std::chrono::seconds(30));
    Leave(3, "hung: a copy had not returned after 30 s");
  }).detach();
  auto host = host::MapHostMemory(host::HostKind::kMemfd, kGpuWaitCopy);
  auto dev = gpu.AllocDevice(kGpuWaitCopy);
  if (!host.ok() || !dev.ok()) Leave(2, "set-up: no host mapping or device buffer");
  auto e = TransferEngine::Open(gpu, **host, clock, GpuWaitOptions());
  if (!e.ok()) Leave(2, "set-up: " + e.status().ToString());
  for (int round = 0; round < 200; ++round) {
    auto faults = std::make_shared<FaultInjector>(300 + round);
    const int k = 2 + round % 12;
    if (!faults->AddRule(FaultRule::ErrorOnCall("gpu.copy", k, Status::Cuda(999, "injected"))).ok())
      Leave(2, "set-up: the fault rule");
    gpu.set_faults(faults);
    auto r = (*e)->Copy(CopyDirection::kHostToDevice, 0, **dev, 0, kGpuWaitCopy);
    gpu.set_faults(nullptr);
    if (r.ok() || r.status().code() != 999)
      Leave(1, "round " + std::to_string(round) + ": " + (r.ok() ? "Ok" : r.status().ToString()));
  }
  Leave(0, "every copy returned its error: 200 rounds (" + (*e)->choice().detail + ")");
}

// A copy through stream signals with the GPU waiting (--gpu-waits) whose DMA cannot be queued
// returns that error: lane 0 releases every wait it queued with the copy's last token, and a lane
// that finishes a segment afterwards raises its buffer's word, never lowers it (staging.h,
// RaiseToken). With a plain store such a lane set the word back to its own segment's token, and
// a wait queued for a later segment of that buffer was never met: the stream never drained.
TEST_F(StagedCudaLongTest, SignalledCopyEndsOnAQueueErrorWithGpuWaits) {
  ASSERT_NO_FATAL_FAILURE(MapBoth(kGpuWaitCopy));
  auto e = TransferEngine::Open(*gpu_, *host_, clock_, GpuWaitOptions());
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  if ((*e)->choice().detail.find("DMAs queued behind stream signals") == std::string::npos)
    GTEST_SKIP() << "skipped: no stream signals (" << (*e)->choice().detail << ")";
  e->reset();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(QueueErrorsBehindStreamWaits(*gpu_, clock_), ::testing::ExitedWithCode(0),
              "every copy returned its error: 200 rounds");
}

// The child of CopiesCrossTheWordsWrap: `copies` copies of `len` both ways in turn (host to
// device, back into the other half of the mapping), each checked, with the word protocols
// counting from `first` (TransferOptions::staging_first_number). `o` picks the strategy, whose
// name must be in the engine's choice. Exits 0 when every copy arrived whole, 1 at the first that
// did not (or failed), 2 when the set-up failed, 3 when the watchdog found a copy still running
// after 30 s.
[[noreturn]] void CopiesAcrossTheWrap(cuda::CudaGpu& gpu, Clock& clock, TransferOptions o,
                                      const std::string& strategy, uint64_t len, int copies) {
  std::thread([] {
    std::this_thread::sleep_for(std::chrono::seconds(30));
    Leave(3, "hung: a copy had not returned after 30 s");
  }).detach();
  auto host = host::MapHostMemory(host::HostKind::kMemfd, 2 * len);
  auto dev = gpu.AllocDevice(len);
  if (!host.ok() || !dev.ok()) Leave(2, "set-up: no host mapping or device buffer");
  auto e = TransferEngine::Open(gpu, **host, clock, o);
  if (!e.ok()) Leave(2, "set-up: " + e.status().ToString());
  if ((*e)->choice().detail.find(strategy) == std::string::npos)
    Leave(2, "set-up: not " + strategy + " (" + (*e)->choice().detail + ")");
  for (int i = 0; i < copies; ++i) {
    const std::string what = "copy " + std::to_string(i);
    if (!FillPattern(**host, 0, len, 1000 + i, 5).ok()) Leave(2, "set-up: the pattern");
    auto up = (*e)->Copy(CopyDirection::kHostToDevice, 0, **dev, 0, len);
    if (!up.ok()) Leave(1, what + " to the device: " + up.status().ToString());
    auto bad = DeviceMismatches(gpu, **dev, 0, len, 1000 + i, 5);
    if (!bad.ok() || *bad != 0) Leave(1, what + " reached the device with mismatches");
    auto down = (*e)->Copy(CopyDirection::kDeviceToHost, len, **dev, 0, len);
    if (!down.ok()) Leave(1, what + " to the host: " + down.status().ToString());
    auto back = HostMismatches(**host, len, len, 1000 + i, 5);
    if (!back.ok() || *back != 0) Leave(1, what + " came back with mismatches");
  }
  Leave(0, "every copy arrived whole: " + std::to_string(copies));
}

// The word protocols count on across 2^31 (their words compare cyclically): an engine that lives
// long enough gets there (the SM copy after about 64 TiB in 32 KiB pieces). Each copy sets its
// words to "nothing yet" before it starts. Before: the SM copy's intent word, written only when
// a kernel starts late, still read 0, which reads as reached past 2^31: the first copy there
// hung (its kernel left at once). Stream signals' words that no copy had set for 2^31 numbers
// (here the fresh ring's zeros, just past 2^31) read as reached too: DMAs went before their
// segments were filled and lanes refilled buffers being read.
TEST_F(StagedCudaLongTest, CopiesCrossTheWordsWrap) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  TransferOptions sm;
  sm.allowed = {Path::kStaged};
  sm.staging_first_number = 0x7fffff00u;  // 1 MiB copies take 33 numbers: the 8th crosses
  EXPECT_EXIT(CopiesAcrossTheWrap(*gpu_, clock_, sm, "moved by the SMs", 1 << 20, 40),
              ::testing::ExitedWithCode(0), "every copy arrived whole: 40");
  TransferOptions signals;
  signals.allowed = {Path::kStaged};
  signals.staging_signals = true;
  signals.staging_sm_copy_upto = 0;
  signals.staging_plan_upto = signals.staging_plan_d2h_from = 0;
  signals.staging_first_number = 0x80000100u;
  EXPECT_EXIT(CopiesAcrossTheWrap(*gpu_, clock_, signals, "DMAs queued behind stream signals",
                                  64ull << 20, 20),
              ::testing::ExitedWithCode(0), "every copy arrived whole: 20");
}

INSTANTIATE_TEST_SUITE_P(Pipelines, StagedCudaTest,
                         ::testing::Values(Variant{"sm_h2d", false, false, false, 0, true, 1, false, true},
                                           // one block takes every piece: a 40 MiB copy goes
                                           // round the 32 MiB ring through one SM
                                           Variant{"sm_h2d_one_block", false, false, false, 0, true, 1, false, true, 1},
                                           Variant{"sm_copy_three_blocks", false, false, true, 0, true, 1, false, false, 3},
                                           Variant{"events", false, false, false},
                                           Variant{"signals", true, false, false},
                                           Variant{"gpu_waits", true, true, false},
                                           Variant{"sm_copy", false, false, true},
                                           Variant{"d2h_tail", false, false, false, 512 << 10},
                                           Variant{"claim_after_dma", false, false, false, 0, false},
                                           Variant{"fixed_ring", false, false, false},
                                           Variant{"ring_tail", false, false, false, 192 << 10},
                                           Variant{"dma_streams", false, false, false, 0, true, 3},
                                           Variant{"plan", false, false, false, 0, true, 1, true},
                                           Variant{"equal_segments", false, false, false},
                                           Variant{"no_driver_fill", false, false, false},
                                           Variant{"frontier", true, false, false, 0, true, 1, false, false, 32, true},
                                           // a DMA for every 4 KiB unit filled: the most DMAs
                                           Variant{"frontier_every_unit", true, false, false, 0, true, 1, false, false, 32, true, 4096, 0},
                                           Variant{"frontier_dma_streams", true, false, false, 0, true, 3, false, false, 32, true},
                                           Variant{"frontier_late", true, false, false, 0, true, 1, false, false, 32, true, 32 << 10, 256 << 10, 8.0}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace resmem::transfer
