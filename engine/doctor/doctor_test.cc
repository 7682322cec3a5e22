#include "engine/doctor/doctor.h"

#include <map>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "mock/region/region_mocks.h"

namespace resmem::engine {
namespace {

using ::testing::Return;
using ::testing::ByMove;

// A platform whose sources are given texts, as a real machine would show them.
class TextPlatform : public Platform {
 public:
  explicit TextPlatform(std::map<std::string, std::string> files) : files_(std::move(files)) {}
  std::string name() const override { return "text"; }
  Result<std::string> ReadSource(const std::string& path) override {
    auto it = files_.find(path);
    if (it == files_.end()) return Status::Errno(ENOENT, path + " absent");
    return it->second;
  }
  Result<std::unique_ptr<HostMemory>> AllocPageable(uint64_t) override { return Status::Unsupported("no"); }
  Result<double> CopyHost(HostMemory&, uint64_t, HostMemory&, uint64_t, uint64_t) override {
    return Status::Unsupported("no");
  }
  Clock& clock() override { return clock_; }

 private:
  std::map<std::string, std::string> files_;
  VirtualClock clock_;
};

// A 12 GB machine as seed 002 describes it: RAM to 3G, PCI hole, RAM 4G-13G.
std::map<std::string, std::string> Seed002(const std::string& cmdline, const std::string& iomem) {
  return {
      {"/proc/cmdline", cmdline + "\n"},
      {"/proc/meminfo", "MemTotal:        3000000 kB\n"},
      {"/proc/iomem", iomem},
      {"/sys/firmware/memmap",
       "0x0000000000000000 0x000000000009fbff System RAM\n"
       "0x0000000000100000 0x00000000bfffffff System RAM\n"
       "0x00000000fec00000 0x00000000fec00fff Reserved\n"
       "0x0000000100000000 0x000000033fffffff System RAM\n"},
      {"/proc/mtrr",
       "reg00: base=0x000000000 (    0MB), size=16384MB, count=1: write-back\n"
       "reg01: base=0x0c0000000 ( 3072MB), size= 1024MB, count=1: uncachable\n"},
      {"/proc/cpuinfo", "address sizes\t: 36 bits physical, 48 bits virtual\n"},
  };
}

bool Has(const DoctorReport& r, const std::string& id) {
  for (const auto& f : r.findings)
    if (f.id == id) return true;
  return false;
}

TEST(Doctor, MemLimitBelowTheHole) {
  TextPlatform p(Seed002("mem=4G memmap=8G$4G",
                         "00000000-0009fbff : System RAM\n00100000-bfffffff : System RAM\n"
                         "100000000-2ffffffff : Reserved\n"));
  auto r = Diagnose(p, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(Has(*r, "mem-limit-below-hole"));
  EXPECT_FALSE(Has(*r, "reservation-over-hole"));
  EXPECT_FALSE(Has(*r, "reservation-not-write-back"));  // [4G,12G) is inside the 16 GB WB MTRR
  EXPECT_TRUE(Has(*r, "register-larger-than-memtotal"));
  ASSERT_EQ(r->facts.reservations.size(), 1u);
  EXPECT_EQ(r->facts.reservations[0].start, 4ull << 30);
}

TEST(Doctor, UnescapedDollarAndHoleAndUncached) {
  TextPlatform p1(Seed002("memmap=8G", "00100000-bfffffff : System RAM\n"));
  auto r1 = Diagnose(p1, nullptr);
  ASSERT_TRUE(r1.ok());
  EXPECT_TRUE(Has(*r1, "memmap-without-reservation"));
  EXPECT_TRUE(Has(*r1, "no-reservation"));
  EXPECT_TRUE(r1->has_errors());

  TextPlatform p2(Seed002("memmap=256M$0xc0000000", "00100000-bfffffff : System RAM\n"));
  auto r2 = Diagnose(p2, nullptr);
  ASSERT_TRUE(r2.ok());
  EXPECT_TRUE(Has(*r2, "reservation-over-hole"));
  EXPECT_TRUE(Has(*r2, "reservation-not-write-back"));  // the UC MTRR over the hole

  TextPlatform p3(Seed002("memmap=8G$0x140000000", "00100000-bfffffff : System RAM\n"));
  auto r3 = Diagnose(p3, nullptr);
  ASSERT_TRUE(r3.ok());
  EXPECT_FALSE(Has(*r3, "reservation-over-hole"));
  EXPECT_FALSE(Has(*r3, "reservation-not-write-back"));  // [5G,13G) lies inside the 16 GB WB MTRR
}

TEST(Doctor, DeviceAbiSkewAndPfnmapAdvice) {
  TextPlatform p(Seed002("memmap=8G$0x140000000", "00100000-bfffffff : System RAM\n"));
  testing::NiceMock<MockRegionProvider> provider;
  auto handle = std::make_unique<testing::NiceMock<MockRegionHandle>>();
  RegionInfo info;
  info.device = "/dev/resmem0";
  info.phys_addr = 5ull << 30;
  info.size = 8ull << 30;
  info.mode = MapMode::kPfnmap;
  info.abi_version = 99;
  EXPECT_CALL(*handle, Info()).WillRepeatedly(Return(Result<RegionInfo>(info)));
  EXPECT_CALL(provider, List()).WillOnce(Return(Result<std::vector<std::string>>(std::vector<std::string>{"/dev/resmem0"})));
  EXPECT_CALL(provider, Open(testing::_))
      .WillOnce(Return(ByMove(Result<std::unique_ptr<RegionHandle>>(std::move(handle)))));
  auto r = Diagnose(p, &provider);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(Has(*r, "abi-version-skew"));
  EXPECT_TRUE(Has(*r, "pfnmap-needs-iomemory"));
  ASSERT_EQ(r->devices.size(), 1u);
}

TEST(Doctor, DefaultTypeInferredWriteBackWhenOnlyHolesAreListed) {
  // SeaBIOS/QEMU: one UC range over the PCI hole, default type WB (not shown in /proc/mtrr).
  auto files = Seed002("memmap=64M$0x40000000 memmap=64M$0xc0000000", "00100000-bfffffff : System RAM\n");
  files["/proc/mtrr"] = "reg00: base=0x0c0000000 ( 3072MB), size= 1024MB, count=1: uncachable\n";
  TextPlatform p(files);
  auto r = Diagnose(p, nullptr);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->facts.reservations.size(), 2u);
  EXPECT_TRUE(r->facts.reservations[0].uniform_write_back) << r->facts.reservations[0].mtrr_detail;
  EXPECT_FALSE(r->facts.reservations[1].uniform_write_back);
}

TEST(Doctor, MissingSourcesAreNotedNotFatal) {
  TextPlatform p(std::map<std::string, std::string>{{"/proc/cmdline", "quiet\n"}});
  auto r = Diagnose(p, nullptr);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(Has(*r, "no-reservation"));
  EXPECT_GE(r->facts.unreadable.size(), 4u);
}

}  // namespace
}  // namespace resmem::engine
