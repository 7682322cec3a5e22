// The engine's path choice and data movement, against a small in-memory Gpu double whose
// registration rules are the ones measured on the GPU machine (FACTS.md), so these run anywhere.
#include "engine/transfer/transfer_engine.h"

#include <cmath>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "backends/cuda/cuda_gpu.h"
#include "backends/host/host_region.h"
#include "backends/host/smaps_facts.h"
#include "engine/transfer/block_check.h"
#include "engine/transfer/staging.h"

namespace resmem::transfer {
namespace {

class HeapBuffer : public DeviceBuffer {
 public:
  explicit HeapBuffer(uint64_t n) : bytes(n) {}
  uint64_t size() const override { return bytes.size(); }
  int device() const override { return 0; }
  std::vector<uint8_t> bytes;
};

// Registration as the r580 driver answered on the GPU machine (FACTS.md): pfnmap needs IoMemory,
// IoMemory on ordinary memory is 1, a writable shared disk-file mapping is 1, calls larger than
// `max_call` are 2, overlaps 712.
class FakeGpu : public Gpu {
 public:
  explicit FakeGpu(uint64_t max_call) : max_call_(max_call) {}
  std::string name() const override { return "fake"; }
  std::string profile() const override { return "cuda-13.0-r580"; }
  Result<int> DeviceCount() override { return 1; }
  Result<DeviceAttributes> Attributes(int) override { return DeviceAttributes(); }
  Result<int> CreateContext(int) override { return Status::Unsupported("fake"); }
  Status UseContext(int) override { return Status::Ok(); }
  int current_context() const override { return 0; }
  Status Register(HostMemory& mem, uint64_t off, uint64_t len, uint32_t flags) override {
    const MappingFacts& f = mem.facts();
    if (f.vm_pfnmap != bool(flags & kRegisterIoMemory)) return Status::Cuda(1, "cudaHostRegister -> 1");
    if (f.backing == Backing::kFile && f.shared && f.writable) return Status::Cuda(1, "cudaHostRegister -> 1");
    if (len > max_call_) return Status::Cuda(2, "cudaHostRegister -> 2");
    std::lock_guard<std::mutex> l(mu_);
    for (auto& r : regs_)
      if (r.first < mem.address() + off + len && mem.address() + off < r.first + r.second)
        return Status::Cuda(712, "cudaHostRegister -> 712");
    regs_[mem.address() + off] = len;
    return Status::Ok();
  }
  Status Unregister(HostMemory& mem, uint64_t off) override {
    std::lock_guard<std::mutex> l(mu_);
    return regs_.erase(mem.address() + off) ? Status::Ok() : Status::Cuda(713, "not registered");
  }
  Result<std::unique_ptr<HostMemory>> AllocPinned(uint64_t bytes, uint32_t) override {
    ++pinned_allocs;
    return host::MapHostMemory(host::HostKind::kAnonymous, bytes);
  }
  Result<std::unique_ptr<DeviceBuffer>> AllocDevice(uint64_t bytes) override {
    return std::unique_ptr<DeviceBuffer>(new HeapBuffer(bytes));
  }
  Result<CopyStats> Copy(CopyDirection dir, HostMemory& host, uint64_t ho, DeviceBuffer& dev,
                         uint64_t dof, uint64_t len) override {
    auto& d = static_cast<HeapBuffer&>(dev).bytes;
    ++calls;
    // As the runtime does: a range outside the allocation is refused (cudaErrorInvalidValue).
    if (dof > d.size() || len > d.size() - dof) return Status::Cuda(1, "cudaMemcpy -> 1");
    if (dir == CopyDirection::kHostToDevice)
      std::memcpy(d.data() + dof, host.data() + ho, len);
    else
      std::memcpy(host.data() + ho, d.data() + dof, len);
    ++copies;
    CopyStats s;
    s.bytes = len;
    s.seconds = 1e-6;
    return s;
  }
  Result<uint64_t> DeviceChecksum(DeviceBuffer& dev, uint64_t off, uint64_t len) override {
    return Fnv1a64(static_cast<HeapBuffer&>(dev).bytes.data() + off, len);
  }
  size_t registrations() {
    std::lock_guard<std::mutex> l(mu_);
    return regs_.size();
  }
  std::atomic<int> copies{0};  // copies that moved their bytes
  std::atomic<int> calls{0};   // every Copy call, refused ones too
  int pinned_allocs = 0;

 private:
  uint64_t max_call_;
  std::mutex mu_;
  std::map<uint64_t, uint64_t> regs_;
};

std::unique_ptr<HostMemory> Map(host::HostKind kind, uint64_t n) {
  auto m = host::MapHostMemory(kind, n);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return std::move(m).value();
}

TEST(TransferEngine, MemfdTakesRegisteredDirectAndUnregistersAtTheEnd) {
  FakeGpu gpu(1ull << 40);
  SteadyClock clock;
  auto mem = Map(host::HostKind::kMemfd, 4 << 20);
  {
    auto e = TransferEngine::Open(gpu, *mem, clock);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    EXPECT_EQ((*e)->choice().path, Path::kRegisteredDirect);
    EXPECT_TRUE((*e)->choice().refusals.empty());
    EXPECT_EQ(gpu.registrations(), 1u);
  }
  EXPECT_EQ(gpu.registrations(), 0u);
}

// Options the engine cannot run with are refused at Open, naming the option and the value.
TEST(TransferEngine, BadStagingOptionsAreRefusedNamingTheOption) {
  FakeGpu gpu(1ull << 40);
  SteadyClock clock;
  auto mem = Map(host::HostKind::kMemfd, 4 << 20);
  struct Case { const char* option; const char* value; void (*set)(TransferOptions*); };
  for (const Case& c : {Case{"--sm-blocks", "0", [](TransferOptions* o) { o->staging_sm_blocks = 0; }},
                        Case{"--frontier-unit", "5000", [](TransferOptions* o) { o->staging_frontier_unit = 5000; }},
                        Case{"--frontier-unit", "0", [](TransferOptions* o) { o->staging_frontier_unit = 0; }},
                        Case{"--frontier-lead-us", "-1", [](TransferOptions* o) { o->staging_frontier_lead_us = -1; }},
                        Case{"--sm-start-us", "-1", [](TransferOptions* o) { o->staging_sm_start_us = -1; }},
                        Case{"--frontier-lead-us", "nan", [](TransferOptions* o) { o->staging_frontier_lead_us = std::nan(""); }},
                        Case{"--chunk-h2d", "5000", [](TransferOptions* o) { o->staging_chunk_h2d = 5000; }},
                        Case{"--lanes", "0", [](TransferOptions* o) { o->staging_lanes = 0; }},
                        Case{"--lanes", "1025", [](TransferOptions* o) { o->staging_lanes = 1025; }},
                        Case{"--chunk", "4095", [](TransferOptions* o) { o->staging_chunk = 4095; }},
                        Case{"register_chunk", "4095", [](TransferOptions* o) { o->register_chunk = 4095; }},
                        // One buffer cannot fill while the other is in DMA: at least 2.
                        Case{"--buffers", "1", [](TransferOptions* o) { o->staging_buffers = 1; }},
                        Case{"--buffers", "17", [](TransferOptions* o) { o->staging_buffers = 17; }},
                        Case{"--min-unit", "4095", [](TransferOptions* o) { o->staging_min_unit = 4095; }},
                        Case{"--spin-us", "-1", [](TransferOptions* o) { o->staging_spin_us = -1; }},
                        Case{"--ramp-first", "5000", [](TransferOptions* o) { o->staging_ramp_first = 5000; }},
                        Case{"--edge-segment", "5000", [](TransferOptions* o) { o->staging_edge_segment = 5000; }},
                        Case{"--min-segments", "0", [](TransferOptions* o) { o->staging_min_segments = 0; }},
                        Case{"--min-segments-d2h", "-1", [](TransferOptions* o) { o->staging_min_segments_d2h = -1; }},
                        // The piece the lanes and the kernel hand over is whole pages.
                        Case{"--sm-piece", "45000", [](TransferOptions* o) { o->staging_sm_piece = 45000; }},
                        Case{"--sm-piece", "0", [](TransferOptions* o) { o->staging_sm_piece = 0; }}}) {
    TransferOptions o;
    c.set(&o);
    auto e = TransferEngine::Open(gpu, *mem, clock, o);
    ASSERT_FALSE(e.ok()) << c.option << " " << c.value;
    EXPECT_EQ(e.status().code(), kInvalidArgument);
    const std::string m = e.status().message();
    EXPECT_NE(m.find(c.option), std::string::npos) << m;
    EXPECT_NE(m.find(std::string("got ") + c.value), std::string::npos) << m;
    // A refusal names the option it is about, not another one.
    if (std::string(c.option) == "--min-segments") {
      EXPECT_EQ(m.find("--min-segments-d2h"), std::string::npos) << m;
    }
  }
}

// A copy that reaches past the end of its device buffer is refused before any copy reaches the
// GPU (a segment copy would otherwise have queued the DMAs before the one that fails), naming the
// offset, the length and the buffer's size: both directions, on a direct and the staged path.
TEST(TransferEngine, ACopyPastTheDeviceBufferIsRefusedBeforeAnyCopy) {
  FakeGpu gpu(1ull << 40);
  SteadyClock clock;
  auto mem = Map(host::HostKind::kMemfd, 4 << 20);
  HeapBuffer dev(3 << 20);
  struct Span { uint64_t offset, length; };
  for (Path p : {Path::kRegisteredDirect, Path::kStaged}) {
    TransferOptions o;
    o.allowed = {p};
    auto e = TransferEngine::Open(gpu, *mem, clock, o);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    for (CopyDirection dir : {CopyDirection::kHostToDevice, CopyDirection::kDeviceToHost}) {
      for (const Span& s : {Span{0, 4 << 20}, Span{2 << 20, (1 << 20) + 4096},
                            Span{(3 << 20) + 4096, 4096}, Span{~0ull - 4095, 8192}}) {
        const std::string what = std::string(PathName(p)) + " " + std::to_string(s.offset) +
                                 " +" + std::to_string(s.length);
        const int before = gpu.calls.load();
        auto r = (*e)->Copy(dir, 0, dev, s.offset, s.length);
        ASSERT_FALSE(r.ok()) << what;
        EXPECT_EQ(r.status().code(), kInvalidArgument) << what << ": " << r.status().ToString();
        EXPECT_EQ(gpu.calls.load(), before) << what << ": a copy reached the GPU";
        const std::string m = r.status().message();
        for (const std::string& n : {std::to_string(s.offset), std::to_string(s.length),
                                     std::to_string(dev.size())})
          EXPECT_NE(m.find(n), std::string::npos) << what << ": no " << n << " in: " << m;
      }
    }
    // The last byte of the buffer is still in.
    EXPECT_TRUE((*e)->Copy(CopyDirection::kHostToDevice, 0, dev, (3 << 20) - 4096, 4096).ok());
  }
}

TEST(TransferEngine, TooLargeForOneCallIsRegisteredInChunks) {
  FakeGpu gpu(1 << 20);
  SteadyClock clock;
  TransferOptions o;
  o.register_chunk = 1 << 20;
  auto mem = Map(host::HostKind::kShm, 4 << 20);
  ASSERT_TRUE(FillPattern(*mem, 0, 4 << 20, 1, 2).ok());
  auto e = TransferEngine::Open(gpu, *mem, clock, o);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ((*e)->choice().path, Path::kRegisteredChunked);
  ASSERT_EQ((*e)->choice().refusals.size(), 1u);
  EXPECT_NE((*e)->choice().refusals[0].find("too large for one call"), std::string::npos);
  EXPECT_EQ(gpu.registrations(), 4u);
  HeapBuffer dev(3 << 20);
  // A copy across piece boundaries is split into one DMA per piece.
  auto s = (*e)->Copy(CopyDirection::kHostToDevice, 512 << 10, dev, 0, 2 << 20);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(gpu.copies.load(), 3);
  EXPECT_EQ(std::memcmp(dev.bytes.data(), mem->data() + (512 << 10), 2 << 20), 0);
}

TEST(TransferEngine, DiskFileFallsBackToStagedAndSaysWhy) {
  FakeGpu gpu(1ull << 40);
  SteadyClock clock;
  TransferOptions o;
  o.staging_lanes = 4;
  o.staging_chunk = 64 << 10;
  const uint64_t n = 3 << 20;
  auto mem = Map(host::HostKind::kFile, n);
  ASSERT_TRUE(FillPattern(*mem, 0, n, 9, 4).ok());
  auto e = TransferEngine::Open(gpu, *mem, clock, o);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ((*e)->choice().path, Path::kStaged);
  std::string why = (*e)->choice().Describe();
  EXPECT_NE(why.find("registered-direct refused"), std::string::npos) << why;
  EXPECT_NE(why.find("writable shared mapping of a disk file"), std::string::npos) << why;
  EXPECT_NE(why.find("4 lanes"), std::string::npos) << why;
  HeapBuffer dev(n);
  auto s = (*e)->Copy(CopyDirection::kHostToDevice, 0, dev, 0, n);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->path, "staged");
  auto bad = DeviceMismatches(gpu, dev, 0, n, 9, 4);
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(*bad, 0u);
  // And back: device -> staged -> mapping, after clearing the mapping.
  std::memset(mem->data(), 0, n);
  ASSERT_TRUE((*e)->Copy(CopyDirection::kDeviceToHost, 0, dev, 0, n).ok());
  auto host_bad = HostMismatches(*mem, 0, n, 9, 4);
  ASSERT_TRUE(host_bad.ok());
  EXPECT_EQ(*host_bad, 0u);
}

// ParkLanes: after a staged copy the lanes spin (here for 100 s); parked, every worker sleeps at
// once, and the next copy wakes them and moves its bytes.
TEST(TransferEngine, ParkedLanesSleepUntilTheNextCopy) {
  FakeGpu gpu(1ull << 40);
  SteadyClock clock;
  TransferOptions o;
  o.allowed = {Path::kStaged};
  o.staging_lanes = 4;
  o.staging_chunk = 64 << 10;
  o.staging_spin_us = 100 * 1000 * 1000;
  const uint64_t n = 1 << 20;
  auto mem = Map(host::HostKind::kMemfd, n);
  ASSERT_TRUE(FillPattern(*mem, 0, n, 5, 2).ok());
  auto e = TransferEngine::Open(gpu, *mem, clock, o);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  HeapBuffer dev(n);
  ASSERT_TRUE((*e)->Copy(CopyDirection::kHostToDevice, 0, dev, 0, n).ok());
  auto sleeps_within = [&](uint64_t want, int ms) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while ((*e)->lane_sleeps() < want && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return (*e)->lane_sleeps();
  };
  EXPECT_EQ(sleeps_within(1, 100), 0u) << "the lanes slept without ParkLanes";
  (*e)->ParkLanes();
  EXPECT_EQ(sleeps_within(3, 5000), 3u) << "every worker asleep after ParkLanes";
  ASSERT_TRUE(FillPattern(*mem, 0, n, 6, 2).ok());
  ASSERT_TRUE((*e)->Copy(CopyDirection::kHostToDevice, 0, dev, 0, n).ok());
  auto bad = DeviceMismatches(gpu, dev, 0, n, 6, 2);
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(*bad, 0u);
}

TEST(TransferEngine, PfnmapIsRegisteredWithIoMemoryAfterTheDefaultIsRefused) {
  auto vvar = host::FindNamedVma("[vvar]");
  if (!vvar.ok()) GTEST_SKIP() << "skipped: no [vvar] mapping on this kernel";
  auto mem = host::WrapForeignMapping(vvar->start, 4096, "[vvar]");
  ASSERT_TRUE(mem.ok());
  FakeGpu gpu(1ull << 40);
  SteadyClock clock;
  auto e = TransferEngine::Open(gpu, **mem, clock);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ((*e)->choice().path, Path::kRegisteredDirect);
  EXPECT_TRUE((*e)->choice().register_flags & kRegisterIoMemory);
  ASSERT_FALSE((*e)->choice().refusals.empty());
  EXPECT_NE((*e)->choice().refusals[0].find("pfnmap mapping without IoMemory"), std::string::npos);
}

TEST(TransferEngine, OnlyForbiddenPathsGivesEveryRefusal) {
  FakeGpu gpu(1ull << 40);
  SteadyClock clock;
  TransferOptions o;
  o.allowed = {Path::kRegisteredDirect, Path::kZeroCopyMapped, Path::kPageableAccess};
  auto mem = Map(host::HostKind::kFile, 1 << 20);
  auto e = TransferEngine::Open(gpu, *mem, clock, o);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("registered-direct refused"), std::string::npos);
  EXPECT_NE(e.status().message().find("zero-copy-mapped refused"), std::string::npos);
  EXPECT_NE(e.status().message().find("pageable-access refused"), std::string::npos);
  EXPECT_FALSE(ParsePath("dma").ok());
  EXPECT_NE(ParsePath("dma").status().message().find("staged"), std::string::npos);
}

TEST(BlockCheck, FakeDeviceChecksumFindsOneBadBlock) {
  FakeGpu gpu(1ull << 40);
  auto mem = Map(host::HostKind::kAnonymous, 1 << 20);
  ASSERT_TRUE(FillPattern(*mem, 0, 1 << 20, 5, 6).ok());
  HeapBuffer dev(1 << 20);
  ASSERT_TRUE(gpu.Copy(CopyDirection::kHostToDevice, *mem, 0, dev, 0, 1 << 20).ok());
  EXPECT_EQ(*DeviceMismatches(gpu, dev, 0, 1 << 20, 5, 6), 0u);
  dev.bytes[12345] ^= 1;
  EXPECT_EQ(*DeviceMismatches(gpu, dev, 0, 1 << 20, 5, 6), 1u);
  EXPECT_EQ(*DeviceMismatches(gpu, dev, 0, 1 << 20, 6, 6), 1u);
}


// CopyQueue's contract on a path without the CUDA segment ring (one Copy per block): blocks
// arrive in order with their bytes, kWait is polled again, and a callback's error ends the queue.
TEST(TransferEngine, CopyQueueDeliversBlocksInOrderAndStopsOnError) {
  FakeGpu gpu(1ull << 40);
  SteadyClock clock;
  const uint64_t block = 64 << 10;
  auto mem = Map(host::HostKind::kMemfd, 4 * block);
  for (uint64_t i = 0; i < 4 * block; ++i) mem->data()[i] = static_cast<uint8_t>(i * 7 + i / block);
  auto e = TransferEngine::Open(gpu, *mem, clock);
  ASSERT_TRUE(e.ok());
  std::vector<HeapBuffer> devs;
  for (int i = 0; i < 4; ++i) devs.emplace_back(block);
  int polls = 0, handed = 0;
  std::vector<uint64_t> arrived;
  Status st = (*e)->CopyQueue(
      [&](QueuedBlock* b) -> Result<QueuePoll> {
        if (++polls % 2 == 0) return QueuePoll::kWait;  // the producer is not always ready
        if (handed == 4) return QueuePoll::kEnd;
        *b = QueuedBlock{(3 - handed) * block, &devs[handed], 0, block,
                         static_cast<uint64_t>(handed)};
        ++handed;
        return QueuePoll::kBlock;
      },
      [&](const QueuedBlock& b) {
        arrived.push_back(b.tag);
        return Status::Ok();
      });
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(arrived, (std::vector<uint64_t>{0, 1, 2, 3}));
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(std::memcmp(devs[i].bytes.data(), mem->data() + (3 - i) * block, block), 0) << i;
  // An error from `arrived` ends the queue with that status.
  handed = 0;
  st = (*e)->CopyQueue(
      [&](QueuedBlock* b) -> Result<QueuePoll> {
        *b = QueuedBlock{0, &devs[0], 0, block, static_cast<uint64_t>(handed++)};
        return QueuePoll::kBlock;
      },
      [&](const QueuedBlock& b) {
        return b.tag == 2 ? Status::Internal("check of block 2 failed") : Status::Ok();
      });
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("block 2"), std::string::npos);
  EXPECT_EQ(handed, 3);
}

// Device-to-host segments: equal without a tail; with one, the last segment's bytes fall in a
// ramp to about the tail, the bounds cover [0, length) with no gap, and a copy of fewer than two
// segments is left alone.
TEST(DrainSegmentBoundsTest, EqualSegmentsThenAFallingRamp) {
  const uint64_t M = 1ull << 20;
  EXPECT_EQ(DrainSegmentBounds(64 * M, 8 * M, 0),
            (std::vector<uint64_t>{0, 8 * M, 16 * M, 24 * M, 32 * M, 40 * M, 48 * M, 56 * M, 64 * M}));
  EXPECT_EQ(DrainSegmentBounds(64 * M, 8 * M, 1 * M),
            (std::vector<uint64_t>{0, 8 * M, 16 * M, 24 * M, 32 * M, 40 * M, 48 * M, 56 * M, 60 * M,
                                   62 * M, 63 * M, 64 * M}));
  EXPECT_EQ(DrainSegmentBounds(10 * M, 8 * M, 1 * M), (std::vector<uint64_t>{0, 8 * M, 10 * M}));
  for (uint64_t len : {16 * M + 4096, 256 * M - 12288, 40 * M}) {
    auto b = DrainSegmentBounds(len, 8 * M, 512 << 10);
    ASSERT_GE(b.size(), 2u);
    EXPECT_EQ(b.front(), 0u);
    EXPECT_EQ(b.back(), len);
    for (size_t i = 1; i < b.size(); ++i) {
      EXPECT_GT(b[i], b[i - 1]) << len;
      EXPECT_LE(b[i] - b[i - 1], 8 * M) << len;
    }
    EXPECT_LE(b[b.size() - 1] - b[b.size() - 2], 512u << 10) << len;
  }
}

// The rotating device-to-host ring: small copies follow each other through the ring instead of
// reusing its first bytes; a segment that would cross a buffer's end starts the next buffer; a
// copy longer than the ring waits, segment by segment, for the ones a lap before it, and for
// nothing else; the cursor comes round to the start.
TEST(PlaceInRingTest, CopiesFollowEachOtherRoundTheRing) {
  const uint64_t K = 1ull << 10, M = 1ull << 20;
  std::vector<RingPlace> p;
  // Four buffers of 8 MiB (32 MiB). A 1 MiB copy in 256 KiB segments, twice.
  uint64_t at = PlaceInRing({256 * K, 256 * K, 256 * K, 256 * K}, 4, 8 * M, 0, &p);
  EXPECT_EQ(at, 1 * M);
  EXPECT_EQ(p, (std::vector<RingPlace>{{0, 0, 0}, {0, 256 * K, 0}, {0, 512 * K, 0}, {0, 768 * K, 0}}));
  at = PlaceInRing({256 * K, 256 * K, 256 * K, 256 * K}, 4, 8 * M, at, &p);
  EXPECT_EQ(at, 2 * M);
  EXPECT_EQ(p[0], (RingPlace{0, 1 * M, 0}));
  // From 7 MiB + 512 KiB a 1 MiB segment would cross into buffer 1: it starts there.
  at = PlaceInRing({512 * K, 1 * M}, 4, 8 * M, 7 * M, &p);
  EXPECT_EQ(p, (std::vector<RingPlace>{{0, 7 * M, 0}, {1, 0, 0}}));
  EXPECT_EQ(at, 9 * M);
  // 40 MiB in 2 MiB segments from the start: segments 16-19 go round into buffer 0 and each
  // waits for the segment whose bytes it overwrites (and those before it), not for later ones.
  std::vector<uint64_t> twenty(20, 2 * M);
  at = PlaceInRing(twenty, 4, 8 * M, 0, &p);
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(p[i].wait, 0u) << i;
  EXPECT_EQ(p[16], (RingPlace{0, 0, 1}));
  EXPECT_EQ(p[19], (RingPlace{0, 6 * M, 4}));
  EXPECT_EQ(at, 8 * M);
  // The fixed ring (staging_rotate_ring off) is whole-buffer segments from the start: segment i
  // in buffer i % 4 at offset 0, after segment i - 4.
  at = PlaceInRing(std::vector<uint64_t>(6, 8 * M), 4, 8 * M, 0, &p);
  EXPECT_EQ(p, (std::vector<RingPlace>{{0, 0, 0}, {1, 0, 0}, {2, 0, 0}, {3, 0, 0}, {0, 0, 1}, {1, 0, 2}}));
  EXPECT_EQ(at, 16 * M);
  // From the ring's last 1 MiB, a 2 MiB segment cannot fit: it starts at buffer 0 again, and
  // the cursor never leaves [0, ring).
  at = PlaceInRing({2 * M}, 4, 8 * M, 31 * M, &p);
  EXPECT_EQ(p[0], (RingPlace{0, 0, 0}));
  EXPECT_EQ(at, 2 * M);
}

// A host-to-device segment cap (staging_chunk_h2d) cuts host-to-device copies and their plans
// into its size while device-to-host copies keep the buffer size.
TEST(SegmentCapTest, HostToDeviceSegmentsStopAtTheirOwnCap) {
  TransferOptions o;
  const auto up = CopyDirection::kHostToDevice, down = CopyDirection::kDeviceToHost;
  o.staging_chunk_h2d = 0;  // the buffer size
  EXPECT_EQ(SegmentCap(o, up), 8ull << 20);
  EXPECT_EQ(SegmentSize(o, up, 256ull << 20), 8ull << 20);
  o.staging_chunk_h2d = 16ull << 20;  // larger than the buffers: cut to them
  EXPECT_EQ(SegmentCap(o, up), 8ull << 20);
  o.staging_chunk_h2d = 4ull << 20;
  EXPECT_EQ(TransferOptions().staging_chunk_h2d, 4ull << 20);  // the default (H200, runs 1-2)
  EXPECT_EQ(SegmentCap(o, up), 4ull << 20);
  EXPECT_EQ(SegmentCap(o, down), 8ull << 20);
  EXPECT_EQ(SegmentSize(o, up, 256ull << 20), 4ull << 20);
  EXPECT_EQ(SegmentSize(o, down, 256ull << 20), 8ull << 20);
  EXPECT_EQ(SegmentSize(o, up, 16ull << 20), 2ull << 20);  // 8 segments: under the cap anyway
}

// The plans of single copies (Staging::PlanFor, 64 MiB: planned both ways by default) keep to the
// same caps: with the default costs an uncapped host-to-device plan cuts a segment of 4.75 MiB,
// a capped one none above the cap; a device-to-host plan is the same with or without the cap.
TEST(SegmentCapTest, PlansKeepToTheCapOfTheirDirection) {
  FakeGpu gpu(1ull << 40);
  auto mem = Map(host::HostKind::kMemfd, 4 << 20);
  auto largest = [&](uint64_t chunk_h2d, CopyDirection dir) {
    TransferOptions o;
    o.staging_chunk_h2d = chunk_h2d;
    Staging s(gpu, *mem, o);
    CopyRequest c;
    c.dir = dir;
    c.length = 64ull << 20;
    const std::vector<uint64_t>* plan = s.PlanFor(c);
    EXPECT_NE(plan, nullptr);
    return plan && !plan->empty() ? *std::max_element(plan->begin(), plan->end()) : 0;
  };
  const auto up = CopyDirection::kHostToDevice, down = CopyDirection::kDeviceToHost;
  EXPECT_GT(largest(0, up), 4ull << 20);
  EXPECT_LE(largest(4ull << 20, up), 4ull << 20);
  EXPECT_LE(largest(2ull << 20, up), 2ull << 20);
  EXPECT_EQ(largest(2ull << 20, down), largest(0, down));
  EXPECT_GT(largest(0, down), 4ull << 20);
}

// Pieces of a staged segment: about two per filling lane, at least the floor, 4 KiB multiples (the
// H100 probe's "pieces 72 KiB" for 2 MiB segments and 276 KiB for 8 MiB on 16 lanes; with the
// 16 KiB floor a 256 KiB segment gives each of 15 filling lanes a piece, 64 KiB gave 4 of them).
TEST(SegmentPieceTest, TwoPerFillingLaneAtLeastTheFloor) {
  EXPECT_EQ(SegmentPiece(2ull << 20, 16, 16 << 10), 72ull << 10);
  EXPECT_EQ(SegmentPiece(8ull << 20, 16, 16 << 10), 276ull << 10);
  EXPECT_EQ(SegmentPiece(256ull << 10, 16, 16 << 10), 16ull << 10);
  EXPECT_EQ(SegmentPiece(256ull << 10, 16, 64 << 10), 64ull << 10);
  EXPECT_EQ(SegmentPiece(512ull << 10, 16, 16 << 10), 20ull << 10);
  EXPECT_EQ(SegmentPiece(256ull << 10, 16, 10 << 10), 12ull << 10);  // floor rounded to 4 KiB
  EXPECT_EQ(SegmentPiece(4ull << 20, 2, 16 << 10), 2ull << 20);      // one filling lane: halves
  EXPECT_EQ(TransferOptions().staging_min_piece, 16ull << 10);
}

// How a host-to-device segment is filled, by its own size (HostToDeviceFill): with the defaults
// (demoted from 512 KiB, non-temporal below 8 MiB) small segments stream and the rest are demoted;
// without the demote, the short last segment of a copy cut into 8 MiB segments still streams
// (the rule once looked at the copy's segment limit instead), and staging_nt_tail streams a
// copy's last segments whatever their size.
// The next DMA by the fill frontier: none while two are queued, none for fewer waiting bytes than
// the minimum unless the copy's rest is filled, else every waiting byte up to the buffer's end.
TEST(NextFrontierDmaTest, WaitsForTheMinimumOrTheRestAndStaysInItsBuffer) {
  constexpr uint64_t K = 1024, M = K * K, kChunk = 8 * M;
  struct Row {
    uint64_t issued, frontier, length;
    int in_flight;
    uint64_t want;
  };
  const Row rows[] = {
      {0, 0, 4 * M, 0, 0},                  // nothing filled
      {0, 128 * K, 4 * M, 0, 0},            // under the 256 KiB minimum
      {0, 256 * K, 4 * M, 0, 256 * K},      // the minimum: all of it
      {0, 3 * M, 4 * M, 1, 3 * M},          // everything waiting, one queued
      {0, 3 * M, 4 * M, 2, 0},              // two queued: none
      {4 * M - 32 * K, 4 * M, 4 * M, 1, 32 * K},  // the rest, under the minimum
      {7 * M, 9 * M, 64 * M, 0, M},         // up to the first buffer's end
      {8 * M, 9 * M, 64 * M, 0, M},         // then from the next buffer's start
      {9 * M, 9 * M, 64 * M, 0, 0},         // nothing new
      {32 * M - 64 * K, 40 * M, 64 * M, 1, 64 * K},  // cut at a buffer's end, under the minimum
  };
  for (const Row& r : rows)
    EXPECT_EQ(NextFrontierDma(r.issued, r.frontier, r.length, r.in_flight, 2, 256 * K, kChunk),
              r.want)
        << "issued " << r.issued << " frontier " << r.frontier << " in flight " << r.in_flight;
  EXPECT_EQ(NextFrontierDma(0, M, M, 0, 2, 256 * K, 0), 0u) << "no buffer";
}

// Held (the queued DMAs are projected to run longer than the lead): with one queued, the next
// waits and grows, unless it already reaches its buffer's end or the copy's end; with none
// queued the hold changes nothing.
TEST(NextFrontierDmaTest, AHeldDmaWaitsWhileOneIsQueuedUnlessItCannotGrow) {
  constexpr uint64_t K = 1024, M = K * K, kChunk = 8 * M;
  struct Row {
    uint64_t issued, frontier, length;
    int in_flight;
    uint64_t held, not_held;
  };
  const Row rows[] = {
      {M, 3 * M, 64 * M, 1, 0, 2 * M},          // one queued: wait and grow
      {M, 3 * M, 64 * M, 0, 2 * M, 2 * M},      // none queued: issue
      {6 * M, 8 * M, 64 * M, 1, 2 * M, 2 * M},  // reaches its buffer's end: no growing further
      {6 * M, 10 * M, 64 * M, 1, 2 * M, 2 * M},  // past it: cut there either way
      {12 * M, 16 * M, 16 * M, 1, 4 * M, 4 * M},  // the copy's rest
      {M, 3 * M, 64 * M, 2, 0, 0},              // two queued: none either way
  };
  for (const Row& r : rows) {
    const std::string where = "issued " + std::to_string(r.issued) + " frontier " +
                              std::to_string(r.frontier) + " in flight " +
                              std::to_string(r.in_flight);
    EXPECT_EQ(NextFrontierDma(r.issued, r.frontier, r.length, r.in_flight, 2, 256 * K, kChunk,
                              true),
              r.held)
        << where;
    EXPECT_EQ(NextFrontierDma(r.issued, r.frontier, r.length, r.in_flight, 2, 256 * K, kChunk,
                              false),
              r.not_held)
        << where;
  }
}

// The fill's frontier from unit times: the latest fill among the units a prefix covers, however
// the units finished out of order; the line names each step and the longest unit.
TEST(FrontierFillTest, TheFrontierWaitsForItsSlowestUnit) {
  constexpr uint64_t K = 1024;
  StagedTrace t;
  EXPECT_EQ(FrontierReachedUs(t, 64 * K), -1) << "no unit times";
  EXPECT_EQ(DescribeUnitFills(t), "");
  t.bytes = 8 * 32 * K - 4096;  // the last unit 28 KiB
  t.unit_bytes = 32 * K;
  t.unit_begin_us = {1, 1.5, 2, 2, 3, 4, 5, 6};
  t.unit_filled_us = {5, 3, 9, 4, 20, 6, 7, 8};
  EXPECT_EQ(FrontierReachedUs(t, 0), 0);
  EXPECT_EQ(FrontierReachedUs(t, 1), 5) << "unit 0";
  EXPECT_EQ(FrontierReachedUs(t, 64 * K), 5) << "units 0-1";
  EXPECT_EQ(FrontierReachedUs(t, 64 * K + 1), 9) << "units 0-2";
  EXPECT_EQ(FrontierReachedUs(t, 160 * K), 20) << "unit 4, the slowest";
  EXPECT_EQ(FrontierReachedUs(t, t.bytes), 20);
  EXPECT_EQ(FrontierReachedUs(t, 1ull << 30), 20) << "past the copy: all of it";
  const std::string line = DescribeUnitFills(t);
  for (const char* part : {"8 units of 32 KiB", "first began at 1.0 us", "256 KiB at 20.0",
                           "1 MiB at 20.0", "a quarter at 5.0", "half at 9.0", "all at 20.0",
                           "a unit took 2.0 us (median)", "17.0 at most (unit 4)"})
    EXPECT_NE(line.find(part), std::string::npos) << part << " in: " << line;
  t.unit_begin_us.pop_back();
  EXPECT_EQ(DescribeUnitFills(t), "") << "begin and fill times that do not pair up";
}

// A copy's unit and smallest DMA: 64 units at least (down to 4 KiB), the smallest DMA an eighth
// of the copy between the unit and the option.
TEST(FrontierShapeTest, ShortCopiesGetSmallerUnitsAndDmas) {
  constexpr uint64_t K = 1024, M = K * K;
  struct Row {
    uint64_t length, unit, min_dma, want_unit, want_min;
  };
  const Row rows[] = {
      {64 * M, 32 * K, 256 * K, 32 * K, 256 * K},
      {4 * M, 32 * K, 256 * K, 32 * K, 256 * K},
      {2 * M, 32 * K, 256 * K, 32 * K, 256 * K},  // 64 units of 32 KiB
      {1 * M, 32 * K, 256 * K, 16 * K, 128 * K},
      {64 * K, 32 * K, 256 * K, 4 * K, 8 * K},
      {4 * K, 32 * K, 256 * K, 4 * K, 4 * K},      // the unit is the floor of the smallest DMA
      {1 * M, 48 * K, 256 * K, 12 * K, 128 * K},   // halved twice: 64 units of 12 KiB fit
      {64 * K, 12 * K, 256 * K, 12 * K, 12 * K},   // not to 6 KiB: no multiple of 4 KiB
      {64 * M, 32 * K, 0, 32 * K, 0},              // no minimum asked: none
  };
  for (const Row& r : rows) {
    const FrontierShape s = FrontierShapeOf(r.length, r.unit, r.min_dma);
    EXPECT_EQ(s.unit, r.want_unit) << r.length << " " << r.unit;
    EXPECT_EQ(s.min_dma, r.want_min) << r.length << " " << r.unit;
  }
}

// A ring of 8 units whose words a copy numbered from base 100 stamped: unit u of the copy
// lives in ring unit u % 8 and reads 100 + u until a later lap (u + 8) refills it.
TEST(FirstRefilledUnitTest, FindsTheFirstUnitALaterLapOverwrote) {
  constexpr uint64_t kBase = 100, kRing = 8;
  uint64_t ring[kRing];
  for (uint64_t u = 0; u < kRing; ++u) ring[u] = kBase + u;
  auto word = [&](uint64_t u) { return ring[u % kRing]; };
  EXPECT_EQ(FirstRefilledUnit(word, kBase, 0, 8), 8u) << "every unit reads its own number";
  EXPECT_EQ(FirstRefilledUnit(word, kBase, 3, 3), 3u) << "no units: none refilled";
  ring[5] = kBase + 13;  // the second lap's unit 13 took ring unit 5 too early
  EXPECT_EQ(FirstRefilledUnit(word, kBase, 0, 8), 5u);
  EXPECT_EQ(FirstRefilledUnit(word, kBase, 2, 5), 5u) << "a DMA that ends before it";
  EXPECT_EQ(FirstRefilledUnit(word, kBase, 5, 6), 5u);
  ring[2] = 7;  // a word an earlier copy left (not filled yet in this one) counts too
  EXPECT_EQ(FirstRefilledUnit(word, kBase, 0, 8), 2u);
  // The second lap, legitimately refilled after the first lap's DMAs were done.
  for (uint64_t u = 8; u < 16; ++u) ring[u % kRing] = kBase + u;
  EXPECT_EQ(FirstRefilledUnit(word, kBase, 8, 16), 16u);
  EXPECT_EQ(FirstRefilledUnit(word, kBase, 0, 1), 0u) << "unit 0's space now holds unit 8";
}

TEST(HostToDeviceFillTest, BySegmentSizeThenTheTail) {
  const TransferOptions d;
  ASSERT_EQ(d.staging_demote_fill_from, 512ull << 10);
  ASSERT_EQ(d.staging_nt_fill_below, 8ull << 20);
  ASSERT_FALSE(d.staging_nt_tail);
  EXPECT_EQ(HostToDeviceFill(d, 256 << 10, false), SegmentFill::kNonTemporal);
  EXPECT_EQ(HostToDeviceFill(d, 512 << 10, false), SegmentFill::kCachedDemoted);
  EXPECT_EQ(HostToDeviceFill(d, 8ull << 20, false), SegmentFill::kCachedDemoted);
  EXPECT_EQ(HostToDeviceFill(d, 8ull << 20, true), SegmentFill::kCachedDemoted);

  TransferOptions no_demote;
  no_demote.staging_demote_fill_from = 0;
  EXPECT_EQ(HostToDeviceFill(no_demote, 1ull << 20, true), SegmentFill::kNonTemporal);
  EXPECT_EQ(HostToDeviceFill(no_demote, (8ull << 20) - 4096, false), SegmentFill::kNonTemporal);
  EXPECT_EQ(HostToDeviceFill(no_demote, 8ull << 20, false), SegmentFill::kCached);
  EXPECT_EQ(HostToDeviceFill(no_demote, 8ull << 20, true), SegmentFill::kCached);
  no_demote.staging_nt_tail = true;
  EXPECT_EQ(HostToDeviceFill(no_demote, 8ull << 20, true), SegmentFill::kNonTemporal);
  EXPECT_EQ(HostToDeviceFill(no_demote, 8ull << 20, false), SegmentFill::kCached);

  TransferOptions cached;  // --cached-fill and no demote: every segment cached
  cached.staging_nt_fill_below = 0;
  cached.staging_demote_fill_from = 0;
  EXPECT_EQ(HostToDeviceFill(cached, 64 << 10, false), SegmentFill::kCached);
  EXPECT_EQ(HostToDeviceFill(cached, 64 << 10, true), SegmentFill::kCached);
}

}  // namespace
}  // namespace resmem::transfer
