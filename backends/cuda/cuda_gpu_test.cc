// The CUDA backend against a real GPU. Where there is none (CI: cudaGetDeviceCount -> 35), every
// GPU test is reported as skipped with "skipped: no GPU"; the no-GPU contract itself is checked.
#include "backends/cuda/cuda_gpu.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "backends/cuda/block_pattern.h"
#include "backends/host/host_region.h"
#include "backends/host/smaps_facts.h"

namespace resmem::cuda {
namespace {

TEST(BlockPattern, DetectsFlipsAndStaleStamps) {
  std::vector<uint64_t> block(64 * 1024 / 8);
  pattern::Fill(block.data(), block.size() * 8, 7, 99);
  EXPECT_EQ(pattern::CountMismatches(block.data(), block.size() * 8, 7, 99), 0u);
  EXPECT_EQ(pattern::CountMismatches(block.data(), block.size() * 8, 8, 99), 16u);  // 16 pages
  reinterpret_cast<uint8_t*>(block.data())[1000] ^= 0x10;
  EXPECT_EQ(pattern::CountMismatches(block.data(), block.size() * 8, 7, 99), 1u);
  reinterpret_cast<uint8_t*>(block.data())[1000] ^= 0x10;
  pattern::Stamp(block.data(), block.size() * 8, 8);
  EXPECT_EQ(pattern::CountMismatches(block.data(), block.size() * 8, 8, 99), 0u);
}

TEST(CudaGpuNoGpu, CreateSaysWhyAndTheWayOut) {
  auto gpu = CudaGpu::Create();
  if (gpu.ok()) {
    auto n = (*gpu)->DeviceCount();
    ASSERT_TRUE(n.ok());
    EXPECT_GT(*n, 0);
    return;
  }
  EXPECT_EQ(gpu.status().code(), kUnavailable);
  EXPECT_NE(gpu.status().message().find("no GPU"), std::string::npos);
  EXPECT_NE(gpu.status().message().find("--backend sim"), std::string::npos);
}

class CudaGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto g = CudaGpu::Create();
    if (!g.ok()) GTEST_SKIP() << "skipped: no GPU (" << g.status().message() << ")";
    gpu_ = std::move(g).value();
  }
  std::unique_ptr<HostMemory> Map(host::HostKind kind, uint64_t bytes, bool writable = true) {
    host::HostMapOptions o;
    o.writable = writable;
    auto m = host::MapHostMemory(kind, bytes, o);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return m.ok() ? std::move(m).value() : nullptr;
  }
  std::unique_ptr<CudaGpu> gpu_;
};

TEST_F(CudaGpuTest, AttributesOfAHostRegisteringDevice) {
  auto a = gpu_->Attributes(0);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_FALSE(a->name.empty());
  EXPECT_EQ(a->host_register_supported, 1);
  EXPECT_GE(a->async_engine_count, 1);
}

TEST_F(CudaGpuTest, RegisteredMemfdRoundTripsThePattern) {
  const uint64_t n = 16 << 20;
  auto mem = Map(host::HostKind::kMemfd, n);
  ASSERT_TRUE(mem);
  pattern::Fill(mem->data(), n, 1, 42);
  ASSERT_TRUE(gpu_->Register(*mem, 0, n, kRegisterDefault).ok());
  auto dev = gpu_->AllocDevice(n);
  ASSERT_TRUE(dev.ok());
  auto h2d = gpu_->Copy(CopyDirection::kHostToDevice, *mem, 0, **dev, 0, n);
  ASSERT_TRUE(h2d.ok()) << h2d.status().ToString();
  EXPECT_EQ(h2d->path, "pinned-dma");
  auto bad = gpu_->CountPatternMismatches(**dev, 0, n, 1, 42);
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(*bad, 0u);
  auto stale = gpu_->CountPatternMismatches(**dev, 0, n, 2, 42);
  ASSERT_TRUE(stale.ok());
  EXPECT_EQ(*stale, n / 4096);
  auto sum = gpu_->DeviceChecksum(**dev, 0, n);
  ASSERT_TRUE(sum.ok());
  EXPECT_EQ(*sum, Fnv1a64(mem->data(), n));
  std::memset(mem->data(), 0, n);
  ASSERT_TRUE(gpu_->Copy(CopyDirection::kDeviceToHost, *mem, 0, **dev, 0, n).ok());
  EXPECT_EQ(pattern::CountMismatches(mem->data(), n, 1, 42), 0u);
  EXPECT_TRUE(gpu_->Unregister(*mem, 0).ok());
}

TEST_F(CudaGpuTest, RegistrationCodesMatchTheMeasuredDriver) {
  // FACTS.md "cudaHostRegister / cuMemHostRegister return codes seen there".
  auto file = Map(host::HostKind::kFile, 1 << 20);
  ASSERT_TRUE(file);
  EXPECT_EQ(gpu_->Register(*file, 0, 1 << 20, 0).code(), 1);
  auto ro = Map(host::HostKind::kAnonymous, 1 << 20, false);
  ASSERT_TRUE(ro);
  EXPECT_EQ(gpu_->Register(*ro, 0, 1 << 20, 0).code(), 1);
  EXPECT_TRUE(gpu_->Register(*ro, 0, 1 << 20, kRegisterReadOnly).ok());
  auto anon = Map(host::HostKind::kAnonymous, 1 << 20);
  ASSERT_TRUE(anon);
  EXPECT_EQ(gpu_->Register(*anon, 0, 1 << 20, kRegisterIoMemory).code(), 1);
  ASSERT_TRUE(gpu_->Register(*anon, 0, 1 << 20, 0).ok());
  EXPECT_EQ(gpu_->Register(*anon, 0, 1 << 20, 0).code(), 712);      // same range twice
  EXPECT_EQ(gpu_->Register(*anon, 4096, 8192, 0).code(), 712);      // a sub-range
  EXPECT_EQ(gpu_->Unregister(*anon, 4096).code(), 1);               // interior pointer
  EXPECT_TRUE(gpu_->Unregister(*anon, 0).ok());
  EXPECT_EQ(gpu_->Unregister(*anon, 0).code(), 713);                // not registered
}

// A range past its buffer or mapping: the backend refuses it before CUDA sees it, with CUDA's
// own answer, which the test takes from CUDA itself on this machine (the H200, r580: 1
// cudaErrorInvalidValue, also with a second allocation right after the first).
TEST_F(CudaGpuTest, RangesPastTheEndAnswerAsCudaDoes) {
  const uint64_t m4 = 4 << 20;
  void* raw = nullptr;
  void* after = nullptr;
  ASSERT_EQ(cudaMalloc(&raw, m4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&after, m4), cudaSuccess);
  auto pinned = gpu_->AllocPinned(2 * m4, 0);
  ASSERT_TRUE(pinned.ok()) << pinned.status().ToString();
  const int cuda_says = static_cast<int>(
      cudaMemcpy(static_cast<char*>(raw) + m4 / 2, (*pinned)->data(), m4, cudaMemcpyHostToDevice));
  cudaGetLastError();
  cudaFree(raw);
  cudaFree(after);
  EXPECT_EQ(cuda_says, static_cast<int>(cudaErrorInvalidValue));
  auto dev = gpu_->AllocDevice(m4);
  ASSERT_TRUE(dev.ok());
  auto expect_cuda = [&](const Status& st, const char* what) {
    EXPECT_EQ(st.space(), ErrorSpace::kCuda) << what << ": " << st.ToString();
    EXPECT_EQ(st.code(), cuda_says) << what << ": " << st.ToString();
  };
  for (CopyDirection dir : {CopyDirection::kHostToDevice, CopyDirection::kDeviceToHost})
    expect_cuda(gpu_->Copy(dir, **pinned, 0, **dev, m4 / 2, m4).status(), "copy past the device buffer");
  expect_cuda(gpu_->Copy(CopyDirection::kHostToDevice, **pinned, 6 << 20, **dev, 0, m4).status(),
              "copy past the host span");
  expect_cuda(gpu_->DeviceChecksum(**dev, m4 / 2, m4).status(), "checksum past the device buffer");
  auto anon = Map(host::HostKind::kAnonymous, 64 << 10);
  ASSERT_TRUE(anon);
  expect_cuda(gpu_->Register(*anon, 32 << 10, 64 << 10, 0), "registration past the mapping");
  EXPECT_TRUE(gpu_->Copy(CopyDirection::kHostToDevice, **pinned, 0, **dev, 0, m4).ok());
}

TEST_F(CudaGpuTest, PfnmapNeedsIoMemory) {
  auto vvar = host::FindNamedVma("[vvar]");
  if (!vvar.ok()) GTEST_SKIP() << "skipped: no [vvar] mapping on this kernel";
  auto mem = host::WrapForeignMapping(vvar->start, 4096, "[vvar]");
  ASSERT_TRUE(mem.ok());
  Status st = gpu_->Register(**mem, 0, 4096, 0);
  EXPECT_EQ(st.code(), 1) << st.ToString();
  Status io = gpu_->Register(**mem, 0, 4096, kRegisterIoMemory);
  EXPECT_TRUE(io.ok()) << io.ToString();
  if (io.ok()) gpu_->Unregister(**mem, 0);
}

TEST_F(CudaGpuTest, ChunkedRegistrationAndZeroCopy) {
  const uint64_t n = 64 << 20;
  auto mem = Map(host::HostKind::kShm, n);
  ASSERT_TRUE(mem);
  pattern::Fill(mem->data(), n, 3, 5);
  std::vector<uint64_t> pieces;
  Status st = RegisterInChunks(*gpu_, *mem, 0, n, kRegisterMapped, 16 << 20, &pieces);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(pieces.size(), 4u);
  auto dev = gpu_->AllocDevice(16 << 20);
  ASSERT_TRUE(dev.ok());
  auto z = gpu_->CopyMapped(CopyDirection::kHostToDevice, *mem, 16 << 20, **dev, 0, 16 << 20);
  ASSERT_TRUE(z.ok()) << z.status().ToString();
  EXPECT_EQ(z->path, "zero-copy-mapped");
  // Bytes 16 MiB.. of the block are words 2M.. of the pattern: check via a host copy.
  std::vector<uint8_t> back(16 << 20);
  auto pinned = gpu_->AllocPinned(16 << 20, 0);
  ASSERT_TRUE(pinned.ok());
  ASSERT_TRUE(gpu_->Copy(CopyDirection::kDeviceToHost, **pinned, 0, **dev, 0, 16 << 20).ok());
  EXPECT_EQ(std::memcmp((*pinned)->data(), mem->data() + (16 << 20), 16 << 20), 0);
  for (uint64_t p : pieces) EXPECT_TRUE(gpu_->Unregister(*mem, p).ok());
}

TEST_F(CudaGpuTest, SecondContextCopies) {
  auto ctx = gpu_->CreateContext(0);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  EXPECT_EQ(*ctx, 1);
  ASSERT_TRUE(gpu_->UseContext(1).ok());
  auto pinned = gpu_->AllocPinned(1 << 20, kRegisterPortable);
  auto dev = gpu_->AllocDevice(1 << 20);
  ASSERT_TRUE(pinned.ok() && dev.ok());
  EXPECT_TRUE(gpu_->Copy(CopyDirection::kHostToDevice, **pinned, 0, **dev, 0, 1 << 20).ok());
  EXPECT_FALSE(gpu_->UseContext(7).ok());
  ASSERT_TRUE(gpu_->UseContext(0).ok());
}

}  // namespace
}  // namespace resmem::cuda

namespace resmem::cuda {
namespace {

TEST_F(CudaGpuTest, FaultPointsFireOnTheRealBackend) {
  auto faults = std::make_shared<FaultInjector>(7);
  ASSERT_TRUE(faults
                  ->AddRule(FaultRule::ErrorOnCall("gpu.copy", 1,
                                                   Status::Cuda(999, "injected fault at gpu.copy")))
                  .ok());
  FaultRule corrupt;
  corrupt.point = "gpu.copy";
  corrupt.trigger = FaultTrigger::kNth;
  corrupt.nth = 2;
  corrupt.effect = FaultEffect::kCorrupt;
  ASSERT_TRUE(faults->AddRule(corrupt).ok());
  gpu_->set_faults(faults);
  const uint64_t n = 1 << 20;
  auto pinned = gpu_->AllocPinned(n, 0);
  auto dev = gpu_->AllocDevice(n);
  ASSERT_TRUE(pinned.ok() && dev.ok());
  pattern::Fill((*pinned)->data(), n, 1, 2);
  auto first = gpu_->Copy(CopyDirection::kHostToDevice, **pinned, 0, **dev, 0, n);
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.status().code(), 999);
  ASSERT_TRUE(gpu_->Copy(CopyDirection::kHostToDevice, **pinned, 0, **dev, 0, n).ok());
  EXPECT_EQ(*gpu_->CountPatternMismatches(**dev, 0, n, 1, 2), 1u);  // one flipped byte
  ASSERT_TRUE(gpu_->Copy(CopyDirection::kHostToDevice, **pinned, 0, **dev, 0, n).ok());
  EXPECT_EQ(*gpu_->CountPatternMismatches(**dev, 0, n, 1, 2), 0u);
}

// Seed 001 on the GPU: write-combined pinned memory, a context with CU_CTX_MAP_HOST, copy and
// kernel overlap, dma-buf export (cuda.h: 4 KiB host-page alignment; FACTS.md: cudaMallocHost
// memory -> 1).
TEST_F(CudaGpuTest, WriteCombinedPinnedCopiesIntact) {
  const uint64_t n = 4 << 20;
  auto wc = gpu_->AllocPinned(n, kAllocWriteCombined);
  ASSERT_TRUE(wc.ok()) << wc.status().ToString();
  EXPECT_EQ((*wc)->facts().memory_type, MemoryType::kWriteCombining);
  std::vector<uint8_t> bytes(n);
  for (uint64_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(i * 13);
  ASSERT_TRUE((*wc)->Write(0, bytes.data(), n).ok());
  auto dev = gpu_->AllocDevice(n);
  ASSERT_TRUE(dev.ok());
  auto c = gpu_->Copy(CopyDirection::kHostToDevice, **wc, 0, **dev, 0, n);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->path, "pinned-dma");
  EXPECT_EQ(*gpu_->DeviceChecksum(**dev, 0, n), Fnv1a64(bytes.data(), n));
}

TEST_F(CudaGpuTest, DriverContextWithMapHostZeroCopies) {
  auto ctx = gpu_->CreateContextWithFlags(0, kDeviceMapHost);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  ASSERT_TRUE(gpu_->UseContext(*ctx).ok());
  const uint64_t n = 1 << 20;
  auto mapped = gpu_->AllocPinned(n, kRegisterMapped);
  auto dev = gpu_->AllocDevice(n);
  ASSERT_TRUE(mapped.ok() && dev.ok());
  auto z = gpu_->CopyMapped(CopyDirection::kHostToDevice, **mapped, 0, **dev, 0, n);
  EXPECT_TRUE(z.ok()) << z.status().ToString();
  ASSERT_TRUE(gpu_->UseContext(0).ok());
}

TEST_F(CudaGpuTest, TwoStreamsOverlapCopyAndKernel) {
  const uint64_t block = 16 << 20;
  auto pinned = gpu_->AllocPinned(2 * block, 0);
  auto dev = gpu_->AllocDevice(2 * block);
  ASSERT_TRUE(pinned.ok() && dev.ok());
  PipelineSpec spec;
  spec.block_size = block;
  spec.blocks = 1;
  auto alone = gpu_->CopyKernelPipeline(**pinned, **dev, spec);
  ASSERT_TRUE(alone.ok()) << alone.status().ToString();
  spec.blocks = 16;
  spec.kernel_us = alone->copy_seconds * 1e6;
  spec.streams = 1;
  auto serial = gpu_->CopyKernelPipeline(**pinned, **dev, spec);
  spec.streams = 2;
  auto overlapped = gpu_->CopyKernelPipeline(**pinned, **dev, spec);
  ASSERT_TRUE(serial.ok() && overlapped.ok());
  EXPECT_GT(serial->ratio_to_serial, 0.85) << serial->path;
  EXPECT_LT(overlapped->ratio_to_serial, 0.8) << overlapped->path;
}

TEST_F(CudaGpuTest, DmaBufExportOfDeviceMemory) {
  const uint64_t n = 4 << 20;
  auto dev = gpu_->AllocDevice(n);
  ASSERT_TRUE(dev.ok());
  auto whole = gpu_->ExportDmaBuf(**dev, 0, n);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_EQ(whole->size, n);
  auto sub = gpu_->ExportDmaBuf(**dev, 4096, 4096);
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  EXPECT_EQ(sub->size, 4096u);
  auto pinned = gpu_->AllocPinned(n, 0);
  ASSERT_TRUE(pinned.ok());
  auto host = gpu_->ExportDmaBufHost(**pinned, 0, n);
  EXPECT_FALSE(host.ok());
  EXPECT_EQ(host.status().code(), 1) << host.status().ToString();
  // VMM memory made RDMA-capable (FACTS: GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED 1) exports too,
  // and moves data like cudaMalloc memory.
  auto vmm = gpu_->AllocDeviceVmm(n, true);
  ASSERT_TRUE(vmm.ok()) << vmm.status().ToString();
  auto e = gpu_->ExportDmaBuf(**vmm, 0, (*vmm)->size());
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->size, (*vmm)->size());
  EXPECT_TRUE(gpu_->Copy(CopyDirection::kHostToDevice, **pinned, 0, **vmm, 0, n).ok());
}

// Stream signals (the staged path's --signals / --gpu-waits): a copy queued behind a wait does
// not run until the host sets the word; the write after it lands only once the copy's bytes are
// in; waits compare cyclically.
TEST_F(CudaGpuTest, StreamSignalsHoldAndReleaseACopy) {
  auto sig = gpu_->NewSignals(2);
  if (!sig.ok() && sig.status().code() == kUnsupported)
    GTEST_SKIP() << "skipped: " << sig.status().message();
  ASSERT_TRUE(sig.ok()) << sig.status().ToString();
  const uint64_t n = 4 << 20;
  auto pinned = gpu_->AllocPinned(n, 0);
  ASSERT_TRUE(pinned.ok());
  pattern::Fill((*pinned)->data(), n, 3, 9);
  auto dev = gpu_->AllocDevice(n);
  ASSERT_TRUE(dev.ok());
  ASSERT_TRUE(gpu_->BindThread().ok());
  ASSERT_TRUE(gpu_->WaitSignalAsync(*sig, 0, 5).ok());
  ASSERT_TRUE(gpu_->EnqueueCopy(CopyDirection::kHostToDevice, **pinned, 0, **dev, 0, n).ok());
  ASSERT_TRUE(gpu_->SetSignalAsync(*sig, 1, 7).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(sig->host[1], 0u) << "the copy ran before its wait was satisfied";
  sig->host[0] = 5;
  const auto t0 = std::chrono::steady_clock::now();
  while (sig->host[1] != 7u && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5)) {
  }
  EXPECT_EQ(sig->host[1], 7u) << "the stream never wrote its word";
  ASSERT_TRUE(gpu_->SyncStream().ok());
  auto bad = gpu_->CountPatternMismatches(**dev, 0, n, 3, 9);
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(*bad, 0u);
  // 0xFFFFFFF0 -> 0x10 is "later" cyclically: a wait for 0x10 is satisfied by 0x10, one for
  // 0xFFFFFFF8 by 0x10 as well (it is 24 ahead).
  sig->host[0] = 0x10;
  ASSERT_TRUE(gpu_->WaitSignalAsync(*sig, 0, 0xFFFFFFF8u).ok());
  ASSERT_TRUE(gpu_->SetSignalAsync(*sig, 1, 8).ok());
  ASSERT_TRUE(gpu_->SyncStream().ok());
  EXPECT_EQ(sig->host[1], 8u);
  EXPECT_FALSE(gpu_->WaitSignalAsync(*sig, 2, 1).ok());  // index out of range
  gpu_->FreeSignals(*sig);
}

// The piece ring's kernel runs on a stream of its own: non-blocking (the legacy default stream
// does not wait for it, nor it for that) and at the device's greatest priority, so its blocks are
// placed before a program's remaining ones (docs/hil/2026-11-24-h100-staged7, smx-run7: 108.5 us
// beside 10 us blocks, 1,982 us at default priority). Freeing the ring frees the stream.
TEST_F(CudaGpuTest, PieceRingStreamIsNonBlockingAtTheGreatestPriority) {
  auto ring = gpu_->NewPieceRing(32 << 10, 4, 32);
  if (!ring.ok() && ring.status().code() == kUnsupported)
    GTEST_SKIP() << "skipped: " << ring.status().message();
  ASSERT_TRUE(ring.ok()) << ring.status().ToString();
  ASSERT_NE(ring->stream, nullptr);
  int least = 0, greatest = 0, priority = 0;
  unsigned flags = 0;
  ASSERT_EQ(cudaDeviceGetStreamPriorityRange(&least, &greatest), cudaSuccess);
  ASSERT_EQ(cudaStreamGetPriority(static_cast<cudaStream_t>(ring->stream), &priority), cudaSuccess);
  ASSERT_EQ(cudaStreamGetFlags(static_cast<cudaStream_t>(ring->stream), &flags), cudaSuccess);
  EXPECT_EQ(priority, greatest) << "least " << least;
  EXPECT_NE(priority, least) << "this device has one priority only";
  EXPECT_EQ(flags & cudaStreamNonBlocking, static_cast<unsigned>(cudaStreamNonBlocking));
  gpu_->FreePieceRing(*ring);
  EXPECT_EQ(ring->stream, nullptr);
}

// The piece kernel's blocks: as many as asked, at most the device's SMs, never none.
TEST_F(CudaGpuTest, PieceRingBlocksAreCutToTheSmCountAndNoneIsRefused) {
  int sms = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  auto none = gpu_->NewPieceRing(32 << 10, 4, 0);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), kInvalidArgument);
  EXPECT_NE(none.status().message().find("0 blocks"), std::string::npos) << none.status().message();
  for (int asked : {1, 3, sms, sms + 1, 100000}) {
    auto ring = gpu_->NewPieceRing(32 << 10, 4, asked);
    ASSERT_TRUE(ring.ok()) << ring.status().ToString();
    EXPECT_EQ(ring->sms, sms);
    EXPECT_EQ(ring->blocks, std::min(asked, sms)) << "asked " << asked;
    gpu_->FreePieceRing(*ring);
  }
}

}  // namespace
}  // namespace resmem::cuda
