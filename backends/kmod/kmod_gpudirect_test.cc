// Host-side tests of the kmod GpuDirect part: what it refuses and how it names what is missing.
// The part itself runs against the modules in the QEMU lane (//ci/qemu:kmod_lane_test, the
// scenario_seed003_* cases).
#include "backends/kmod/kmod_gpudirect.h"

#include <unistd.h>

#include <cstdio>
#include <string>

#include "gtest/gtest.h"

namespace resmem {
namespace {

KmodGpuDirectOptions Missing() {
  KmodGpuDirectOptions o;
  o.provider = "/nonexistent-resmem-dir/nv_p2p_standin";
  o.edu_glob = "/nonexistent-resmem-dir/resmem_edu*";
  o.table_version_param = "/nonexistent-resmem-dir/table_version";
  return o;
}

bool Has(const Status& st, const std::string& text) { return st.message().find(text) != std::string::npos; }

TEST(KmodGpuDirect, CallsBeforeSetupSaySetUpFirst) {
  auto gd = MakeKmodGpuDirect(Missing());
  EXPECT_EQ(gd->name(), "kmod");
  auto va = gd->AllocGpu(65536, 0);
  ASSERT_FALSE(va.ok());
  EXPECT_EQ(va.status().code(), kInvalidArgument);
  EXPECT_TRUE(Has(va.status(), "p2p_setup")) << va.status().message();
  EXPECT_FALSE(gd->Dma(0x100000000ull, 65536, 0, 1).ok());
  EXPECT_TRUE(gd->Events().empty());
}

TEST(KmodGpuDirect, MissingProviderNamesTheModuleAndTheLane) {
  auto gd = MakeKmodGpuDirect(Missing());
  Status st = gd->Configure(GpuDirectConfig{});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.space(), ErrorSpace::kResmem);
  EXPECT_EQ(st.code(), kUnavailable);
  EXPECT_TRUE(Has(st, "no /nonexistent-resmem-dir/nv_p2p_standin")) << st.message();
  EXPECT_TRUE(Has(st, "load nv_p2p_standin.ko")) << st.message();
  EXPECT_TRUE(Has(st, "ci/qemu/kmod_lane.sh")) << st.message();
}

TEST(KmodGpuDirect, MissingEduDeviceNamesTheModule) {
  char path[] = "/tmp/resmem-standin-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  KmodGpuDirectOptions o = Missing();
  o.provider = path;  // there, but no edu device
  auto gd = MakeKmodGpuDirect(o);
  Status st = gd->Configure(GpuDirectConfig{});
  unlink(path);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), kUnavailable);
  EXPECT_TRUE(Has(st, "no /nonexistent-resmem-dir/resmem_edu* device")) << st.message();
  EXPECT_TRUE(Has(st, "load resmem_edu.ko")) << st.message();
}

TEST(KmodGpuDirect, WhatTheLaneCannotBeIsRefusedWithTheReason) {
  struct Case {
    const char* what;
    void (*set)(GpuDirectConfig*);
    const char* reason;
  } cases[] = {
      {"bar1_base", [](GpuDirectConfig* c) { c->bar1_base = 16ull << 30; }, "ivshmem-plain's BAR2"},
      {"link_gbps", [](GpuDirectConfig* c) { c->link_gbps = 10.0; }, "edu's, measured"},
      {"cross-socket", [](GpuDirectConfig* c) { c->path = PciePath::kCrossSocket; }, "one PCI root bus"},
      {"callback_waits", [](GpuDirectConfig* c) { c->callback_waits_for_dma = false; }, "always waits"},
      {"put_after_callback", [](GpuDirectConfig* c) { c->put_pages_after_callback = true; }, "never calls nvidia_p2p_put_pages"},
      {"built_against", [](GpuDirectConfig* c) { c->built_against_version = 0x00010002; }, "built against 0x00010001"},
  };
  for (const auto& k : cases) {
    GpuDirectConfig c;
    k.set(&c);
    Status st = MakeKmodGpuDirect(Missing())->Configure(c);
    ASSERT_FALSE(st.ok()) << k.what;
    EXPECT_EQ(st.code(), kUnavailable) << k.what;
    EXPECT_TRUE(Has(st, k.reason)) << k.what << ": " << st.message();
    EXPECT_TRUE(Has(st, "not_applicable.kmod")) << k.what << ": " << st.message();
  }
  GpuDirectConfig same;
  same.built_against_version = kKmodBuiltAgainstVersion;  // the module's own: accepted, then the node is missing
  EXPECT_TRUE(Has(MakeKmodGpuDirect(Missing())->Configure(same), "load nv_p2p_standin.ko"));
}

TEST(KmodGpuDirect, BadInputIsInvalidArgument) {
  GpuDirectConfig c;
  c.gpu = "volta";
  Status st = MakeKmodGpuDirect(Missing())->Configure(c);
  EXPECT_EQ(st.code(), kInvalidArgument);
  EXPECT_TRUE(Has(st, "h100 and kepler-guide")) << st.message();
  c = GpuDirectConfig{};
  c.dma_mask_bits = 16;
  st = MakeKmodGpuDirect(Missing())->Configure(c);
  EXPECT_EQ(st.code(), kInvalidArgument);
  EXPECT_TRUE(Has(st, "24 to 64")) << st.message();
}

TEST(KmsgRecord, TheMessageWithoutPrefixOrDictionary) {
  EXPECT_EQ(KmsgRecordText("4,1187,23840848,-;nv_p2p_standin: dma_map_pages refused: (-EIO)\n"
                           " SUBSYSTEM=pci\n DEVICE=+pci:0000:00:12.0\n"),
            "nv_p2p_standin: dma_map_pages refused: (-EIO)");
  EXPECT_EQ(KmsgRecordText("6,2,3,c;a; b;c"), "a; b;c");  // only the first ';' ends the prefix
  EXPECT_EQ(KmsgRecordText("6,2,3,-;"), "");
  EXPECT_EQ(KmsgRecordText("no prefix here"), "");
}

TEST(PcieRoute, FromTheDevicesSysfsPaths) {
  // QEMU's guest: edu and ivshmem-plain right on the root bus.
  EXPECT_EQ(PcieRouteOf("/sys/devices/pci0000:00/0000:00:10.0", "/sys/devices/pci0000:00/0000:00:12.0"), "through-cpu");
  // Two downstream ports of one switch.
  EXPECT_EQ(PcieRouteOf("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:03:00.0",
                        "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:02.0/0000:04:00.0"),
            "same-switch");
  // Two root ports of one root complex.
  EXPECT_EQ(PcieRouteOf("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0",
                        "/sys/devices/pci0000:00/0000:00:02.0/0000:02:00.0"),
            "through-cpu");
  // Two host bridges (two sockets, or two root complexes of one): not a route the guide names.
  EXPECT_EQ(PcieRouteOf("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0",
                        "/sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0"),
            "");
  EXPECT_EQ(PcieRouteOf("", "/sys/devices/pci0000:00/0000:00:12.0"), "");
}

}  // namespace
}  // namespace resmem
