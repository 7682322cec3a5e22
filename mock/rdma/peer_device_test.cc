// Tests of the simulated third-party device: DMA mask, IOMMU, PCIe path (peer_device.h's rules).
#include "mock/rdma/peer_device.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace resmem::sim {
namespace {

constexpr uint64_t kKiB = 1ull << 10;
constexpr uint64_t kGiB = 1ull << 30;

SimPeerDevice Device(int mask, PciePath path, bool iommu, double gbps = 10) {
  PeerDeviceSpec s;
  s.dma_mask_bits = mask;
  s.path = path;
  s.iommu = iommu;
  s.link_gbps = gbps;
  return SimPeerDevice(s);
}

TEST(PeerDevice, WithoutIommuA32BitMaskCannotMapBar1Above4GiB) {
  SimPeerDevice d = Device(32, PciePath::kSameSwitch, false);
  EXPECT_EQ(d.dma_mask(), 0xffffffffu);
  auto high = d.MapResource(128 * kGiB, 64 * kKiB);
  ASSERT_FALSE(high.ok());
  EXPECT_EQ(high.status().code(), EIO);
  EXPECT_NE(high.status().message().find("overflow (mask 0xffffffff)"), std::string::npos);
  auto low = d.MapResource(0xd0000000, 64 * kKiB);
  ASSERT_TRUE(low.ok());
  EXPECT_EQ(*low, 0xd0000000u);  // dma-direct: the bus address is the physical one
  // The last page below 4 GiB fits; one that crosses 4 GiB does not.
  EXPECT_TRUE(d.MapResource(4 * kGiB - 64 * kKiB, 64 * kKiB).ok());
  EXPECT_FALSE(d.MapResource(4 * kGiB - 32 * kKiB, 64 * kKiB).ok());
  SimPeerDevice wide = Device(64, PciePath::kSameSwitch, false);
  EXPECT_EQ(*wide.MapResource(128 * kGiB, 64 * kKiB), 128 * kGiB);
}

TEST(PeerDevice, WithAnIommuEveryPageGetsItsOwnIovaBelowTheMask) {
  SimPeerDevice d = Device(32, PciePath::kSameSwitch, true);
  auto a = d.MapResource(128 * kGiB, 64 * kKiB);
  auto b = d.MapResource(128 * kGiB + 64 * kKiB, 64 * kKiB);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_LT(*a, 4 * kGiB);
  EXPECT_LT(*b, 4 * kGiB);
  EXPECT_NE(*a, *b);
}

TEST(PeerDevice, CrossSocketWritesDoNotArrive) {
  SimPeerDevice d = Device(64, PciePath::kCrossSocket, false);
  auto w = d.Write({128 * kGiB}, 64 * kKiB, 64 * kKiB, true);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), EIO);
  EXPECT_NE(w.status().message().find("doesn't work reliably"), std::string::npos);
}

TEST(PeerDevice, SameSwitchIsTheLinkRateThroughCpuIsNamedWorse) {
  SimPeerDevice s = Device(64, PciePath::kSameSwitch, false, 10);
  auto w = s.Write({128 * kGiB}, 64 * kKiB, 1000000000ull, true);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->route, "same-switch");
  EXPECT_DOUBLE_EQ(w->seconds, 0.1);
  EXPECT_EQ(w->data, "intact");
  SimPeerDevice c = Device(64, PciePath::kThroughCpu, false, 10);
  auto wc = c.Write({128 * kGiB}, 64 * kKiB, 64 * kKiB, true);
  ASSERT_TRUE(wc.ok());
  EXPECT_EQ(wc->route, "through-cpu");
  EXPECT_NE(wc->note.find("worse performance"), std::string::npos);
}

TEST(PeerDevice, AnIommuBlocksUntranslatedAddressesAndRoutesTranslatedOnesUp) {
  SimPeerDevice d = Device(64, PciePath::kSameSwitch, true);
  // Posted writes: the device sees them complete; the IOMMU drops them and the kernel logs it.
  auto blocked = d.Write({0xd0000000}, 64 * kKiB, 64 * kKiB, false);
  ASSERT_TRUE(blocked.ok()) << blocked.status().ToString();
  EXPECT_EQ(blocked->data, "lost");
  EXPECT_NE(blocked->note.find("incompatible with IOMMUs"), std::string::npos);
  EXPECT_NE(blocked->fault.find("DMAR: [DMA Write NO_PASID]"), std::string::npos);
  EXPECT_NE(blocked->fault.find("fault addr 0xd0000000"), std::string::npos);
  auto ok = d.Write({0xfff00000}, 64 * kKiB, 64 * kKiB, true);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->route, "through-cpu (IOMMU)");
}

TEST(PeerDevice, UntranslatedAddressAboveTheMaskIsMisdirected) {
  SimPeerDevice d = Device(32, PciePath::kSameSwitch, false);
  auto w = d.Write({0x2000010000ull}, 64 * kKiB, 64 * kKiB, false);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->data, "misdirected");
  EXPECT_NE(w->note.find("land at 0x10000"), std::string::npos);
  auto fine = d.Write({0xd0000000}, 64 * kKiB, 64 * kKiB, false);
  ASSERT_TRUE(fine.ok());
  EXPECT_EQ(fine->data, "intact");
}

}  // namespace
}  // namespace resmem::sim
