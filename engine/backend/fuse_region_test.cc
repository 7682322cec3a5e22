// The `fuse` Region backend against a live emulated mount: the facts it reports make the CUDA
// model judge the mapping as the real device's, and each control-file fault comes back as the
// status the real device would give.
#include "backends/fuse/fuse_region.h"

#include <signal.h>

#include <cerrno>

#include "gtest/gtest.h"
#include "kmod/uapi/resmem_ioctl.h"
#include "mock/fuse/control.h"
#include "mock/fuse/fuse_device.h"
#include "mock/fuse/memory_region_provider.h"
#include "mock/gpu/sim_gpu.h"

namespace resmem {
namespace {

using fuse_emu::FuseDevice;
using fuse_emu::MemoryDeviceSpec;

constexpr uint64_t kSize = 8ull << 20;

class FuseRegionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MemoryDeviceSpec pfn;
    pfn.device = "/dev/resmem0";
    pfn.size = kSize;
    pfn.phys_addr = 0x100000000ull;
    MemoryDeviceSpec pages = pfn;
    pages.device = "/dev/resmem1";
    pages.mode = MapMode::kPages;
    pages.phys_addr = 0x200000000ull;
    auto p = fuse_emu::MakeMemoryRegionProvider({pfn, pages});
    ASSERT_TRUE(p.ok());
    backing_ = std::move(p).value();
    auto dev = FuseDevice::Mount(*backing_);
    ASSERT_TRUE(dev.ok()) << dev.status().ToString();
    mount_ = std::move(dev).value();
    regions_ = MakeFuseRegionProvider(mount_->mount_dir());
  }
  void TearDown() override {
    regions_.reset();
    mount_.reset();
    EXPECT_TRUE(fuse_emu::ResmemFuseMounts().empty());
  }
  std::unique_ptr<RegionHandle> OpenOk(const std::string& path) {
    OpenRequest r;
    r.path = path;
    auto h = regions_->Open(r);
    EXPECT_TRUE(h.ok()) << h.status().ToString();
    return h.ok() ? std::move(h).value() : nullptr;
  }
  std::unique_ptr<HostMemory> MapAll(RegionHandle& h) {
    MapRequest m;
    m.length = kSize;
    auto mem = h.Map(m);
    EXPECT_TRUE(mem.ok()) << mem.status().ToString();
    return mem.ok() ? std::move(mem).value() : nullptr;
  }

  std::unique_ptr<RegionProvider> backing_;
  std::unique_ptr<FuseDevice> mount_;
  std::unique_ptr<RegionProvider> regions_;
};

TEST_F(FuseRegionTest, ListsDevicesAndAnswersInfo) {
  auto names = regions_->List();
  ASSERT_TRUE(names.ok()) << names.status().ToString();
  EXPECT_EQ(names.value(), (std::vector<std::string>{"/dev/resmem0", "/dev/resmem1"}));
  auto h = OpenOk("/dev/resmem1");
  ASSERT_TRUE(h);
  auto info = h->Info();
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->device, "/dev/resmem1");
  EXPECT_EQ(info->size, kSize);
  EXPECT_EQ(info->phys_addr, 0x200000000ull);
  EXPECT_EQ(info->mode, MapMode::kPages);
  __u64 len = 0;
  EXPECT_TRUE(h->Ioctl(RESMEM_IOC_LENGTH, &len).ok());
  EXPECT_EQ(len, kSize);
  EXPECT_EQ(h->Ioctl(_IOR(RESMEM_IOC_MAGIC, 42, __u64), &len).code(), ENOTTY);
}

TEST_F(FuseRegionTest, PfnmapMappingCarriesTheDevicesFactsAndTheCudaModelJudgesThem) {
  auto h = OpenOk("/dev/resmem0");
  ASSERT_TRUE(h);
  auto mem = MapAll(*h);
  ASSERT_TRUE(mem);
  const MappingFacts& f = mem->facts();
  EXPECT_TRUE(f.vm_io);
  EXPECT_TRUE(f.vm_pfnmap);
  EXPECT_EQ(f.backing, Backing::kDevicePfn);
  EXPECT_EQ(f.origin, "fuse-emulated");
  EXPECT_EQ(f.phys_addr.value_or(0), 0x100000000ull);
  EXPECT_NE(mem->data(), nullptr);

  // The CUDA model refuses plain registration of a pfnmap mapping (r580: 1) and accepts IoMemory
  // (FACTS.md, the [vvar] experiment) - the same verdicts as for the real device.
  auto profile = sim::CudaProfileByName("cuda-13.0-r580");
  ASSERT_TRUE(profile.ok());
  auto gpu = sim::MakeSimGpu(profile.value(), sim::HostPerf(), std::make_shared<VirtualClock>(),
                             std::make_shared<FaultInjector>(1));
  Status plain = gpu->Register(*mem, 0, 1 << 20, kRegisterDefault);
  EXPECT_EQ(plain.space(), ErrorSpace::kCuda);
  EXPECT_EQ(plain.code(), 1) << plain.ToString();
  EXPECT_TRUE(gpu->Register(*mem, 0, 1 << 20, kRegisterIoMemory).ok());
}

TEST_F(FuseRegionTest, PagesModeMappingIsMixedmapWithStructPages) {
  auto h = OpenOk("resmem1");
  ASSERT_TRUE(h);
  auto mem = MapAll(*h);
  ASSERT_TRUE(mem);
  EXPECT_FALSE(mem->facts().vm_pfnmap);
  EXPECT_TRUE(mem->facts().vm_mixedmap);
  EXPECT_EQ(mem->facts().backing, Backing::kDevicePages);
}

TEST_F(FuseRegionTest, ReadWriteThroughTheMappingAndDeviceSideFill) {
  auto h = OpenOk("/dev/resmem0");
  ASSERT_TRUE(h);
  auto mem = MapAll(*h);
  ASSERT_TRUE(mem);
  uint64_t v = 0x1122334455667788ull, back = 0;
  ASSERT_TRUE(mem->Write(4096, &v, sizeof v).ok());
  ASSERT_TRUE(mem->Read(4096, &back, sizeof back).ok());
  EXPECT_EQ(back, v);
  ASSERT_TRUE(mount_->Control("fill resmem0 64K 64K 9").ok());
  ASSERT_TRUE(mem->Read(65536 + 8 * 3, &back, sizeof back).ok());
  EXPECT_EQ(back, fuse_emu::FillPatternWord(9, 65536 / 8 + 3));
  EXPECT_FALSE(mem->Read(kSize - 4, &back, 8).ok());  // out of bounds: checked, no fault
}

TEST_F(FuseRegionTest, EioRangeIsASigbusStatusNotACrash) {
  // Armed before the open: a file opened with no fault armed may be served by passthrough, which
  // no fault can reach, and the daemon refuses to arm one then (docs/fuse.md "Memory speed").
  ASSERT_TRUE(mount_->Control("eio resmem0 2M 4096").ok());
  auto h = OpenOk("/dev/resmem0");
  ASSERT_TRUE(h);
  auto mem = MapAll(*h);
  ASSERT_TRUE(mem);
  uint8_t buf[64];
  Status st = mem->Read((2 << 20) + 10, buf, sizeof buf);
  EXPECT_EQ(st.space(), ErrorSpace::kSignal);
  EXPECT_EQ(st.code(), SIGBUS);
  EXPECT_NE(st.message().find("eio fault"), std::string::npos);
  EXPECT_TRUE(mem->Read(3 << 20, buf, sizeof buf).ok());
}

TEST_F(FuseRegionTest, RefusalsComeBackAsTheDevicesErrno) {
  ASSERT_TRUE(mount_->Control("refuse-mmap resmem0\nrefuse-open resmem1 EACCES").ok());
  auto h = OpenOk("/dev/resmem0");
  ASSERT_TRUE(h);
  MapRequest m;
  m.length = 4096;
  auto mem = h->Map(m);
  ASSERT_FALSE(mem.ok());
  EXPECT_EQ(mem.status().space(), ErrorSpace::kErrno);
  EXPECT_EQ(mem.status().code(), ENODEV);
  OpenRequest r;
  r.path = "/dev/resmem1";
  auto refused = regions_->Open(r);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), EACCES);
}

TEST_F(FuseRegionTest, DeadDaemonIsEnotconn) {
  auto h = OpenOk("/dev/resmem0");
  ASSERT_TRUE(h);
  ASSERT_TRUE(mount_->Control("die").ok());
  auto info = h->Info();
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().code(), ENOTCONN);
  EXPECT_NE(info.status().message().find("daemon is gone"), std::string::npos);
}

TEST(FuseRegionNoMount, MissingMountIsUnavailableWithTheWayOut) {
  auto regions = MakeFuseRegionProvider("/nonexistent/resmem-mount");
  auto names = regions->List();
  ASSERT_FALSE(names.ok());
  EXPECT_EQ(names.status().code(), kUnavailable);
  EXPECT_NE(names.status().message().find("resmem fuse --machine"), std::string::npos);
}

}  // namespace
}  // namespace resmem
