// Managed memory on a real GPU. Where there is none (CI: cudaGetDeviceCount -> 35), the GPU tests
// are reported as skipped with "skipped: no GPU"; the no-GPU contract itself is checked.
#include "backends/cuda/cuda_managed.h"

#include <gtest/gtest.h>

#include "backends/cuda/managed_kernels.h"

namespace resmem::cuda {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

TEST(CudaManagedNoGpu, CreateSaysWhyAndTheWayOut) {
  auto m = CudaManaged::Create();
  if (m.ok()) return;  // a GPU: the tests below run
  EXPECT_EQ(m.status().code(), kUnavailable);
  EXPECT_NE(m.status().message().find("--backend sim"), std::string::npos);
}

TEST(ManagedWord, DiffersPerIndexAndKey) {
  EXPECT_NE(ManagedWord(0, 1), ManagedWord(1, 1));
  EXPECT_NE(ManagedWord(5, 1), ManagedWord(5, 2));
}

class CudaManagedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = CudaManaged::Create();
    if (!m.ok()) GTEST_SKIP() << "skipped: no GPU (" << m.status().message() << ")";
    mm_ = std::move(m).value();
  }
  std::unique_ptr<CudaManaged> mm_;
};

TEST_F(CudaManagedTest, WhatTheCpuWritesTheKernelReadsAfterMigratingAndBack) {
  auto id = mm_->Alloc(64 * kMiB);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  ASSERT_TRUE(mm_->Touch(*id, 0, 64 * kMiB, Processor::kCpu, true, 1).ok());
  auto gpu = mm_->Touch(*id, 0, 64 * kMiB, Processor::kGpu, false, 1);
  ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
  EXPECT_EQ(gpu->data, "intact");
  EXPECT_GT(gpu->seconds, 0);
  ASSERT_TRUE(mm_->Touch(*id, 0, 64 * kMiB, Processor::kGpu, true, 1).ok());
  auto cpu = mm_->Touch(*id, 0, 64 * kMiB, Processor::kCpu, false, 1);
  EXPECT_EQ(cpu->data, "intact");
}

TEST_F(CudaManagedTest, PrefetchAdviceAndPingPongKeepTheData) {
  auto id = mm_->Alloc(8 * kMiB);
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(mm_->Touch(*id, 0, 8 * kMiB, Processor::kCpu, true, 1).ok());
  ASSERT_TRUE(mm_->Prefetch(*id, 0, 8 * kMiB, Processor::kGpu).ok());
  ASSERT_TRUE(mm_->Advise(*id, 0, 8 * kMiB, ManagedAdvice::kPreferredLocation, Processor::kCpu).ok());
  ASSERT_TRUE(mm_->Advise(*id, 0, 8 * kMiB, ManagedAdvice::kAccessedBy, Processor::kGpu).ok());
  auto pp = mm_->PingPong(*id, 0, 2 * kMiB, 10);
  ASSERT_TRUE(pp.ok()) << pp.status().ToString();
  EXPECT_EQ(pp->data, "intact");
}

TEST_F(CudaManagedTest, BadRangesAndBarReadsAreRefusedWithReasons) {
  auto id = mm_->Alloc(kMiB);
  ASSERT_TRUE(id.ok());
  EXPECT_FALSE(mm_->Touch(*id, kMiB / 2, kMiB, Processor::kGpu, false, 1).ok());
  EXPECT_FALSE(mm_->Touch(*id, 4, 8, Processor::kGpu, false, 1).ok());
  auto bar = mm_->ReadDeviceThroughBar(kMiB);
  ASSERT_FALSE(bar.ok());
  EXPECT_NE(bar.status().message().find("gdrdrv"), std::string::npos);
}

}  // namespace
}  // namespace resmem::cuda
