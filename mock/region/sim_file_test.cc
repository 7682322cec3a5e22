// SimDeviceFile: the simulated device under the system calls (open flags, read/write at and past
// the end, lseek, mmap access modes, fault points), as kmod/resmem.c answers them.
#include "mock/region/sim_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <vector>

#include "kmod/uapi/resmem_ioctl.h"
#include "mock/region/sim_driver.h"

namespace resmem::sim {
namespace {

constexpr uint64_t kResPhys = 0x140000000ull;  // memmap=64M$0x140000000 on qemu-q35-5g
constexpr uint64_t kResSize = 64ull << 20;

class SimFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = MachinePreset("qemu-q35-5g");
    ASSERT_TRUE(m.ok());
    MachineSpec spec = m.value();
    spec.cmdline += " memmap=64M$0x140000000";
    auto w = MakeSimWorld(spec, 1);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    world_ = w.value();
    provider_ = MakeSimRegionProvider(world_, SimDriverSpec());
  }
  std::unique_ptr<SimDeviceFile> OpenOk(int flags) {
    auto f = SimDeviceFile::Open(world_, *provider_, "/dev/resmem0", flags);
    EXPECT_TRUE(f.ok()) << f.status().ToString();
    return f.ok() ? std::move(f).value() : nullptr;
  }
  int OpenErr(const std::string& path, int flags) {
    auto f = SimDeviceFile::Open(world_, *provider_, path, flags);
    return f.ok() ? 0 : f.status().code();
  }
  std::shared_ptr<SimWorld> world_;
  std::unique_ptr<RegionProvider> provider_;
};

TEST_F(SimFileTest, OpenFlagsAsTheKernelTreatsACharDevice) {
  EXPECT_EQ(OpenErr("/dev/resmem0", O_RDWR | O_CREAT), 0);
  EXPECT_EQ(OpenErr("/dev/resmem0", O_RDWR | O_CREAT | O_EXCL), EEXIST);
  EXPECT_EQ(OpenErr("/dev/resmem0", O_RDWR | O_DIRECT), EINVAL);
  EXPECT_EQ(OpenErr("/dev/resmem9", O_RDWR), ENOENT);
  EXPECT_EQ(OpenErr("/dev/resmem0", O_RDWR | O_TRUNC), 0);
  auto f = OpenOk(O_RDWR);
  EXPECT_TRUE(f->Fstat().char_device);
  EXPECT_EQ(f->Fstat().size, 0u);
}

TEST_F(SimFileTest, ReadAndWriteStopAtTheEnd) {
  auto f = OpenOk(O_RDWR);
  std::vector<uint8_t> buf(4096, 0xab), back(4096);
  ASSERT_EQ(f->Seek(kResSize - 100, SEEK_SET).value(), static_cast<int64_t>(kResSize - 100));
  EXPECT_EQ(f->Write(buf.data(), buf.size()).value(), 100u);  // short at the end
  EXPECT_EQ(f->Seek(0, SEEK_CUR).value(), static_cast<int64_t>(kResSize));
  EXPECT_EQ(f->Write(buf.data(), buf.size()).status().code(), ENOSPC);
  EXPECT_EQ(f->Write(buf.data(), 0).value(), 0u);
  EXPECT_EQ(f->Read(back.data(), back.size()).value(), 0u);  // EOF
  ASSERT_TRUE(f->Seek(-100, SEEK_END).ok());
  EXPECT_EQ(f->Read(back.data(), back.size()).value(), 100u);
  EXPECT_EQ(std::memcmp(back.data(), buf.data(), 100), 0);
  ASSERT_TRUE(f->Seek(4096, SEEK_END).ok());
  EXPECT_EQ(f->Read(back.data(), back.size()).value(), 0u);
  EXPECT_EQ(f->Write(buf.data(), 1).status().code(), ENOSPC);
}

TEST_F(SimFileTest, AccessModesAndAppend) {
  uint8_t b = 0;
  EXPECT_EQ(OpenOk(O_WRONLY)->Read(&b, 1).status().code(), EBADF);
  EXPECT_EQ(OpenOk(O_RDONLY)->Write(&b, 1).status().code(), EBADF);
  auto app = OpenOk(O_RDWR | O_APPEND);
  EXPECT_EQ(app->Write(&b, 1).status().code(), ENOSPC);  // the end is the position
  EXPECT_EQ(app->Seek(0, SEEK_CUR).value(), 0);
}

TEST_F(SimFileTest, SeekRules) {
  auto f = OpenOk(O_RDWR);
  EXPECT_EQ(f->Seek(-1, SEEK_SET).status().code(), EINVAL);
  EXPECT_EQ(f->Seek(-4096, SEEK_CUR).status().code(), EINVAL);
  EXPECT_EQ(f->Seek(0, SEEK_CUR).value(), 0);  // unchanged by the failed seeks
  EXPECT_EQ(f->Seek(0, SEEK_HOLE).value(), static_cast<int64_t>(kResSize));
  EXPECT_EQ(f->Seek(10, SEEK_DATA).value(), 10);
  EXPECT_EQ(f->Seek(kResSize, SEEK_DATA).status().code(), ENXIO);
  EXPECT_EQ(f->Seek(0, 99).status().code(), EINVAL);
}

TEST_F(SimFileTest, MappingsFollowTheOpenModeAndSeeWrites) {
  EXPECT_EQ(OpenOk(O_WRONLY)->Map(0, 4096, true, true).status().code(), EACCES);
  EXPECT_EQ(OpenOk(O_RDONLY)->Map(0, 4096, true, true).status().code(), EACCES);
  auto ro = OpenOk(O_RDONLY)->Map(0, 4096, false, true);
  ASSERT_TRUE(ro.ok()) << ro.status().ToString();
  uint8_t x = 1;
  const Status store = (*ro)->Write(0, &x, 1);
  EXPECT_EQ(store.space(), ErrorSpace::kSignal);
  EXPECT_EQ(store.code(), SIGSEGV);
  EXPECT_EQ(OpenOk(O_RDWR)->Map(0, 4096, true, false).status().code(), EINVAL);  // MAP_PRIVATE

  auto f = OpenOk(O_RDWR);
  auto m = f->Map(8192, 4096, true, true);
  ASSERT_TRUE(m.ok());
  const char msg[] = "written by write(2)";
  ASSERT_TRUE(f->Seek(8192, SEEK_SET).ok());
  ASSERT_EQ(f->Write(msg, sizeof msg).value(), sizeof msg);
  char seen[sizeof msg] = {};
  ASSERT_TRUE((*m)->Read(0, seen, sizeof seen).ok());
  EXPECT_STREQ(seen, msg);
}

TEST_F(SimFileTest, ReadWriteMeetTheFaultPoints) {
  FaultRule eio;
  eio.point = "region.read";
  eio.trigger = FaultTrigger::kAddressRange;
  eio.range_start = kResPhys + 4096;
  eio.range_end = kResPhys + 8192;
  eio.effect = FaultEffect::kError;
  eio.error = Status::Errno(EIO, "injected");
  ASSERT_TRUE(world_->faults->AddRule(eio).ok());
  FaultRule bus;
  bus.point = "region.write";
  bus.trigger = FaultTrigger::kAddressRange;
  bus.range_start = kResPhys;
  bus.range_end = kResPhys + 4096;
  bus.effect = FaultEffect::kSignal;
  bus.error = Status::Signal(SIGBUS, "injected bus error");
  ASSERT_TRUE(world_->faults->AddRule(bus).ok());
  auto f = OpenOk(O_RDWR);
  uint8_t buf[16] = {};
  EXPECT_TRUE(f->Read(buf, sizeof buf).ok());
  ASSERT_TRUE(f->Seek(4096, SEEK_SET).ok());
  EXPECT_EQ(f->Read(buf, sizeof buf).status().code(), EIO);
  ASSERT_TRUE(f->Seek(0, SEEK_SET).ok());
  const Status w = f->Write(buf, sizeof buf).status();
  EXPECT_EQ(w.space(), ErrorSpace::kErrno);  // no signal reaches a read/write caller
  EXPECT_EQ(w.code(), EIO);
}

}  // namespace
}  // namespace resmem::sim
