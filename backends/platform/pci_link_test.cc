#include "backends/platform/pci_link.h"

#include <gtest/gtest.h>

namespace resmem {
namespace {

TEST(PciLink, SpeedsAsSysfsPrintsThem) {
  EXPECT_EQ(*ParsePcieSpeed("32.0 GT/s PCIe\n"), 5);
  EXPECT_EQ(*ParsePcieSpeed("8.0 GT/s PCIe"), 3);
  EXPECT_EQ(*ParsePcieSpeed("2.5 GT/s PCIe"), 1);
  EXPECT_EQ(*ParsePcieSpeed("8 GT/s"), 3);  // older kernels
  EXPECT_FALSE(ParsePcieSpeed("Unknown\n").ok());
  EXPECT_FALSE(ParsePcieSpeed("12.0 GT/s PCIe").ok());
  for (int g = 1; g <= 6; ++g) EXPECT_EQ(*ParsePcieSpeed(PcieSpeedText(g)), g);
}

TEST(PciLink, WidthsAndRates) {
  EXPECT_EQ(*ParsePcieWidth("16\n"), 16);
  EXPECT_FALSE(ParsePcieWidth("x16").ok());
  EXPECT_NEAR(PcieLinkGBps(5, 16), 63.0, 0.1);
  EXPECT_NEAR(PcieLinkGBps(3, 8), 7.88, 0.01);
  EXPECT_EQ(PcieLinkGBps(0, 16), 0);
  EXPECT_EQ(PcieLinkName(3, 8), "Gen3 x8");
}

TEST(PciLink, ThpAndGetcpu) {
  EXPECT_EQ(*ParseThpMode("always [madvise] never\n"), "madvise");
  EXPECT_EQ(*ParseThpMode(RenderThpMode("never")), "never");
  EXPECT_FALSE(ParseThpMode("always madvise never").ok());
  auto p = ParseGetcpu("7 1\n");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->cpu, 7);
  EXPECT_EQ(p->node, 1);
  EXPECT_FALSE(ParseGetcpu("x").ok());
}

}  // namespace
}  // namespace resmem
