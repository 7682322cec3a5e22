// The staged path's pipelines on a real GPU: host-to-device copies up to 64 MiB moved by a kernel
// (--sm-copy-upto 64M; larger ones and device to host by segment DMAs), and, every copy through
// the DMAs: event polling (default), stream signals
// with host-queued DMAs (--signals), DMAs queued behind stream waits (--gpu-waits), and pieces
// moved by a kernel (--sm-copy, a 40 MiB copy going round its 32 MiB ring), and device-to-host
// segments ending in a falling ramp (--d2h-tail) or claimed only after their DMA
// (--no-prefetch-dst; the default claims before and prefetches the destination), and segment
// DMAs spread over three copy streams (--dma-streams 3), and copies cut by the segment plan
// at every length (--plan-upto, --plan-d2h-from; by default host-to-device copies up to 64 MiB and
// device-to-host ones from 64 MiB are)
// and into equal segments at every length, and with the driving lane only issuing DMAs (by
// default it fills the first segment too), both ways, at
// lengths that are and are not multiples of a segment. Every copy's data is checked.
// Without a GPU every case skips and says so (CI); the hardware runs carry this binary.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "backends/api/clock.h"
#include "backends/cuda/cuda_gpu.h"
#include "backends/host/host_region.h"
#include "engine/transfer/block_check.h"
#include "engine/transfer/transfer_engine.h"

namespace resmem::transfer {
namespace {

struct Variant {
  const char* name;
  bool signals, gpu_waits, sm_copy;
  uint64_t d2h_tail = 0;
  bool prefetch_dst = true;
  int dma_streams = 1;
  bool plan = false;
  bool sm_h2d = false;  // staging_sm_copy_upto 64 MiB; false: 0, every copy through DMAs
};

class StagedCudaLongTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto g = cuda::CudaGpu::Create();
    if (!g.ok()) GTEST_SKIP() << "skipped: no GPU (" << g.status().message() << ")";
    gpu_ = std::move(g).value();
  }
  std::unique_ptr<cuda::CudaGpu> gpu_;
  SteadyClock clock_;
};

class StagedCudaTest : public StagedCudaLongTest, public ::testing::WithParamInterface<Variant> {};

TEST_P(StagedCudaTest, CopiesBothWaysIntact) {
  const uint64_t max = 40ull << 20;
  auto host = host::MapHostMemory(host::HostKind::kMemfd, max);
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  auto dev = gpu_->AllocDevice(max);
  ASSERT_TRUE(dev.ok());
  auto other = gpu_->AllocDevice(max);
  ASSERT_TRUE(other.ok());
  TransferOptions o;
  o.allowed = {Path::kStaged};
  o.staging_signals = GetParam().signals;
  o.staging_gpu_waits = GetParam().gpu_waits;
  o.staging_sm_copy = GetParam().sm_copy;
  o.staging_d2h_tail = GetParam().d2h_tail;
  o.staging_prefetch_dst = GetParam().prefetch_dst;
  o.staging_dma_streams = GetParam().dma_streams;
  o.staging_sm_copy_upto = GetParam().sm_h2d ? 64ull << 20 : 0;
  // "plan": every length planned; the other pipelines keep the default, but "equal_segments",
  // which plans none.
  if (GetParam().plan) o.staging_plan_upto = ~0ull, o.staging_plan_d2h_from = 4096;
  if (std::string(GetParam().name) == "equal_segments") o.staging_plan_upto = o.staging_plan_d2h_from = 0;
  // "no_driver_fill": the driving lane only issues DMAs (the default also fills segment 0).
  if (std::string(GetParam().name) == "no_driver_fill") o.staging_driver_fills = false;
  auto e = TransferEngine::Open(*gpu_, **host, clock_, o);
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
    ASSERT_TRUE(FillPattern(**host, 0, len, seq, 5).ok());
    auto up = (*e)->Copy(CopyDirection::kHostToDevice, 0, **dev, 0, len);
    ASSERT_TRUE(up.ok()) << up.status().ToString();
    auto bad = DeviceMismatches(*gpu_, **dev, 0, len, seq, 5);
    ASSERT_TRUE(bad.ok());
    EXPECT_EQ(*bad, 0u) << GetParam().name << " H2D " << len;
    // Put another pattern through the ring (into a second buffer) first, so a drain that ran
    // ahead of its DMA would bring back that pattern, not the one on the device.
    ASSERT_TRUE(FillPattern(**host, 0, len, seq + 1000, 5).ok());
    ASSERT_TRUE((*e)->Copy(CopyDirection::kHostToDevice, 0, **other, 0, len).ok());
    std::memset((*host)->data(), 0, len);
    auto down = (*e)->Copy(CopyDirection::kDeviceToHost, 0, **dev, 0, len);
    ASSERT_TRUE(down.ok()) << down.status().ToString();
    auto back = HostMismatches(**host, 0, len, seq, 5);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, 0u) << GetParam().name << " D2H " << len;
  }
}

// A copy longer than the planned window (32 segments of 8 MiB): device to host it is cut into
// 8 MiB segments and a planned tail, and every segment must fit a ring buffer.
TEST_F(StagedCudaLongTest, GigabyteCopyBothWaysIntact) {
  const uint64_t len = (1ull << 30) + 4096;
  auto host = host::MapHostMemory(host::HostKind::kMemfd, len);
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  auto dev = gpu_->AllocDevice(len);
  ASSERT_TRUE(dev.ok());
  TransferOptions o;
  o.allowed = {Path::kStaged};
  o.staging_plan_upto = ~0ull;  // host to device planned too
  auto e = TransferEngine::Open(*gpu_, **host, clock_, o);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  ASSERT_TRUE(FillPattern(**host, 0, len, 77, 5).ok());
  ASSERT_TRUE((*e)->Copy(CopyDirection::kHostToDevice, 0, **dev, 0, len).ok());
  auto bad = DeviceMismatches(*gpu_, **dev, 0, len, 77, 5);
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(*bad, 0u) << "H2D";
  std::memset((*host)->data(), 0, len);
  ASSERT_TRUE((*e)->Copy(CopyDirection::kDeviceToHost, 0, **dev, 0, len).ok());
  auto back = HostMismatches(**host, 0, len, 77, 5);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, 0u) << "D2H";
}

// The engine cuts a copy as its plan says (the trace counts the segments it ran), and into equal
// segments where the plan is off: host to device 16 MiB, device to host 64 MiB, the defaults'
// planned sizes, whose plans have more segments than the equal cut.
TEST_F(StagedCudaLongTest, CopiesFollowTheirPlan) {
  const uint64_t max = 64ull << 20;
  auto host = host::MapHostMemory(host::HostKind::kMemfd, max);
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  auto dev = gpu_->AllocDevice(max);
  ASSERT_TRUE(dev.ok());
  struct Case { CopyDirection dir; uint64_t len; };
  for (const Case& k : {Case{CopyDirection::kHostToDevice, 16ull << 20},
                        Case{CopyDirection::kDeviceToHost, 64ull << 20}}) {
    const bool h2d = k.dir == CopyDirection::kHostToDevice;
    int segments[2] = {0, 0};  // planned, equal
    for (int planned = 1; planned >= 0; --planned) {
      TransferOptions o;
      o.allowed = {Path::kStaged};
      o.staging_trace = true;
      o.staging_sm_copy_upto = 0;  // host to device through the segment DMAs
      if (!planned) o.staging_plan_upto = o.staging_plan_d2h_from = 0;
      auto e = TransferEngine::Open(*gpu_, **host, clock_, o);
      ASSERT_TRUE(e.ok()) << e.status().ToString();
      ASSERT_TRUE((*e)->Copy(k.dir, 0, **dev, 0, k.len).ok());
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

// Host to device, the driving lane fills pieces of the first segment while the other lanes
// enter (staging_driver_fills), and does not when that is off: the trace counts its pieces.
// A hundred 1 MiB copies each way of the option: the lanes could take every piece of one copy
// before the driving lane looks, not of a hundred (H100 host, staged6 run 4: 6 pieces in 20).
TEST_F(StagedCudaLongTest, DrivingLaneFillsTheFirstSegmentUnlessTold) {
  const uint64_t len = 1ull << 20;
  auto host = host::MapHostMemory(host::HostKind::kMemfd, len);
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  auto dev = gpu_->AllocDevice(len);
  ASSERT_TRUE(dev.ok());
  for (bool fills : {true, false}) {
    TransferOptions o;
    o.allowed = {Path::kStaged};
    o.staging_trace = true;
    o.staging_sm_copy_upto = 0;  // host to device through the segment DMAs
    o.staging_driver_fills = fills;
    auto e = TransferEngine::Open(*gpu_, **host, clock_, o);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    uint64_t pieces = 0;
    for (int i = 0; i < 100; ++i) {
      ASSERT_TRUE(FillPattern(**host, 0, len, 50 + i, 5).ok());
      ASSERT_TRUE((*e)->Copy(CopyDirection::kHostToDevice, 0, **dev, 0, len).ok());
      pieces += (*e)->last_trace().driver_pieces;
      auto bad = DeviceMismatches(*gpu_, **dev, 0, len, 50 + i, 5);
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
// larger one by segment DMAs; device to host always by segment DMAs; by default (0) every copy
// by DMAs. The trace says which (sm_pieces against segments), and every copy's data is checked.
TEST_F(StagedCudaLongTest, HostToDeviceCopiesUpToTheLimitGoThroughTheSms) {
  EXPECT_EQ(TransferOptions().staging_sm_copy_upto, 0u) << "the SM copy is opt-in";
  const uint64_t limit = 64ull << 20;
  const uint64_t max = limit + (4ull << 20);
  auto host = host::MapHostMemory(host::HostKind::kMemfd, max);
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  auto dev = gpu_->AllocDevice(max);
  ASSERT_TRUE(dev.ok());
  TransferOptions o;
  o.allowed = {Path::kStaged};
  o.staging_trace = true;
  o.staging_sm_copy_upto = limit;
  auto e = TransferEngine::Open(*gpu_, **host, clock_, o);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  if ((*e)->choice().detail.find("moved by the SMs") == std::string::npos)
    GTEST_SKIP() << "skipped: no piece ring (" << (*e)->choice().detail << ")";
  struct Case { CopyDirection dir; uint64_t len; bool sms; };
  uint64_t seq = 300;
  for (const Case& k : {Case{CopyDirection::kHostToDevice, 1ull << 20, true},
                        Case{CopyDirection::kHostToDevice, limit, true},
                        Case{CopyDirection::kHostToDevice, max, false},
                        Case{CopyDirection::kDeviceToHost, 1ull << 20, false}}) {
    const bool h2d = k.dir == CopyDirection::kHostToDevice;
    const std::string what = std::string(h2d ? "H2D " : "D2H ") + std::to_string(k.len >> 10) + " KiB";
    ++seq;
    ASSERT_TRUE(FillPattern(**host, 0, k.len, seq, 5).ok());
    if (!h2d) {  // the pattern onto the device first, then back into a cleared mapping
      ASSERT_TRUE((*e)->Copy(CopyDirection::kHostToDevice, 0, **dev, 0, k.len).ok());
      std::memset((*host)->data(), 0, k.len);
    }
    ASSERT_TRUE((*e)->Copy(k.dir, 0, **dev, 0, k.len).ok()) << what;
    const StagedTrace& t = (*e)->last_trace();
    if (k.sms) {
      EXPECT_EQ(t.sm_pieces, (k.len + o.staging_sm_piece - 1) / o.staging_sm_piece) << what;
      EXPECT_EQ(t.segments, 0) << what;
      EXPECT_LE(t.launched_us, t.returned_us) << what;
    } else {
      EXPECT_EQ(t.sm_pieces, 0u) << what;
      EXPECT_GT(t.segments, 0) << what;
    }
    auto bad = h2d ? DeviceMismatches(*gpu_, **dev, 0, k.len, seq, 5)
                   : HostMismatches(**host, 0, k.len, seq, 5);
    ASSERT_TRUE(bad.ok());
    EXPECT_EQ(*bad, 0u) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(Pipelines, StagedCudaTest,
                         ::testing::Values(Variant{"sm_h2d", false, false, false, 0, true, 1, false, true},
                                           Variant{"events", false, false, false},
                                           Variant{"signals", true, false, false},
                                           Variant{"gpu_waits", true, true, false},
                                           Variant{"sm_copy", false, false, true},
                                           Variant{"d2h_tail", false, false, false, 512 << 10},
                                           Variant{"claim_after_dma", false, false, false, 0, false},
                                           Variant{"dma_streams", false, false, false, 0, true, 3},
                                           Variant{"plan", false, false, false, 0, true, 1, true},
                                           Variant{"equal_segments", false, false, false},
                                           Variant{"no_driver_fill", false, false, false}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace resmem::transfer
