// Host-side tests of the kmod backend. The module itself runs only in the QEMU lane
// (//ci/qemu:kmod_lane_test), where the same library is exercised against /dev/resmemN.
#include "backends/kmod/kmod_region.h"

#include "gtest/gtest.h"
#include "kmod/uapi/resmem_ioctl.h"

namespace resmem {
namespace {

TEST(KmodRegion, NoDevicesListsEmptyAndOpenExplains) {
  auto provider = MakeKmodRegionProvider("/nonexistent-resmem-dir/resmem*");
  auto list = provider->List();
  ASSERT_TRUE(list.ok());
  EXPECT_TRUE(list->empty());
  auto handle = provider->Open(OpenRequest{});
  ASSERT_FALSE(handle.ok());
  EXPECT_EQ(handle.status().code(), kUnavailable);
  EXPECT_NE(handle.status().message().find("docs/kmod.md"), std::string::npos);
}

TEST(KmodRegion, MissingDeviceIsEnoentWithHint) {
  auto provider = MakeKmodRegionProvider();
  OpenRequest req;
  req.path = "/nonexistent-resmem-dir/resmem0";
  auto handle = provider->Open(req);
  ASSERT_FALSE(handle.ok());
  EXPECT_EQ(handle.status().space(), ErrorSpace::kErrno);
  EXPECT_EQ(handle.status().code(), ENOENT);
  EXPECT_NE(handle.status().message().find("module not loaded"), std::string::npos);
}

TEST(KmodRegion, ForeignCharDeviceAnswersEnottyToInfo) {
  auto provider = MakeKmodRegionProvider("/dev/null");
  OpenRequest req;
  req.path = "/dev/null";
  auto handle = provider->Open(req);
  ASSERT_TRUE(handle.ok()) << handle.status().ToString();
  auto info = handle.value()->Info();
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().code(), ENOTTY);
  EXPECT_NE(info.status().message().find("not a resmem device"), std::string::npos);
  auto skew = CheckKmodAbi("/dev/null");
  EXPECT_FALSE(skew.ok());
}

TEST(KmodRegion, AbiSkewBothDirections) {
  EXPECT_EQ(KmodLibraryAbiVersion(), static_cast<uint32_t>(RESMEM_ABI_VERSION));
  AbiSkew same = CompareAbi("/dev/resmem0", 1, 1);
  EXPECT_FALSE(same.skewed);
  AbiSkew old_module = CompareAbi("/dev/resmem0", 1, 2);
  EXPECT_TRUE(old_module.skewed);
  EXPECT_NE(old_module.message.find("module is older"), std::string::npos);
  AbiSkew old_library = CompareAbi("/dev/resmem0", 3, 2);
  EXPECT_TRUE(old_library.skewed);
  EXPECT_NE(old_library.message.find("library is older"), std::string::npos);
}

}  // namespace
}  // namespace resmem
