// Tests of the simulated third-party driver over the simulated NVIDIA driver and device: lazy
// unpinning, the free callback, version checks, tokens, the DMA mask and the IOMMU end to end.
#include "mock/rdma/sim_gpudirect.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <memory>
#include <string>
#include <vector>

namespace resmem::sim {
namespace {

constexpr uint64_t kKiB = 1ull << 10;
constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;

struct Rig {
  std::shared_ptr<VirtualClock> clock = std::make_shared<VirtualClock>();
  SimGpuDirect gd{clock, 1};
  explicit Rig(GpuDirectConfig c) {
    Status st = gd.Configure(c);
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
};

GpuDirectConfig Config(const std::string& gpu, UnpinPolicy unpin = UnpinPolicy::kLazy) {
  GpuDirectConfig c;
  c.gpu = gpu;
  c.unpin = unpin;
  return c;
}

// The index of the first event containing `text`, or -1.
int At(const std::vector<std::string>& ev, const std::string& text) {
  for (size_t i = 0; i < ev.size(); ++i)
    if (ev[i].find(text) != std::string::npos) return static_cast<int>(i);
  return -1;
}

TEST(SimGpuDirect, ConfigureRefusesUnknownProfilesMasksAndUnalignedBars) {
  auto clock = std::make_shared<VirtualClock>();
  SimGpuDirect gd(clock, 1);
  EXPECT_FALSE(gd.AllocGpu(kMiB, 0).ok());  // not set up yet
  GpuDirectConfig c;
  c.gpu = "volta";
  EXPECT_FALSE(gd.Configure(c).ok());
  c.gpu = "h100";
  c.dma_mask_bits = 16;
  EXPECT_FALSE(gd.Configure(c).ok());
  c.dma_mask_bits = 64;
  c.bar1_base = 0x1000;
  EXPECT_FALSE(gd.Configure(c).ok());
  c.bar1_base.reset();
  EXPECT_TRUE(gd.Configure(c).ok());
}

TEST(SimGpuDirect, NeverUnpinningFillsTheGuideEraBar1) {
  Rig r(Config("kepler-guide", UnpinPolicy::kNever));
  auto va = r.gd.AllocGpu(256 * kMiB, 0);
  ASSERT_TRUE(va.ok());
  auto s = r.gd.Dma(*va, 256 * kMiB, 32 * kMiB, 1);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), ENOMEM);
  EXPECT_NE(s.status().message().find("transfer 8"), std::string::npos);
}

TEST(SimGpuDirect, LazyUnpinningEvictsTheLeastRecentlyUsedAndCountsIt) {
  Rig r(Config("kepler-guide"));
  auto va = r.gd.AllocGpu(256 * kMiB, 0);
  auto s = r.gd.Dma(*va, 256 * kMiB, 32 * kMiB, 1);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->transfers, 8u);
  EXPECT_EQ(s->pins, 8u);
  EXPECT_EQ(s->evictions, 1u);
  EXPECT_EQ(s->hits, 0u);
  // The first block was the least recently used: it is the one given back.
  auto again = r.gd.Dma(*va + 32 * kMiB, 32 * kMiB, 32 * kMiB, 1);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->hits, 1u);
  auto first = r.gd.Dma(*va, 32 * kMiB, 32 * kMiB, 1);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->hits, 0u);
  EXPECT_EQ(first->evictions, 1u);
}

TEST(SimGpuDirect, ARingThatFitsIsPinnedOnceAndHitsAfterwards) {
  Rig lazy(Config("kepler-guide"));
  auto va = lazy.gd.AllocGpu(224 * kMiB, 0);
  auto s = lazy.gd.Dma(*va, 224 * kMiB, 32 * kMiB, 3);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->pins, 7u);
  EXPECT_EQ(s->hits, 14u);
  EXPECT_EQ(s->evictions, 0u);
  Rig each(Config("kepler-guide", UnpinPolicy::kAfterEach));
  auto vb = each.gd.AllocGpu(224 * kMiB, 0);
  auto e = each.gd.Dma(*vb, 224 * kMiB, 32 * kMiB, 3);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->pins, 21u);
  EXPECT_EQ(e->hits, 0u);
  EXPECT_EQ(each.gd.nvidia()->bar1_mapped(), 0u);
}

TEST(SimGpuDirect, TransfersChargeTheLinkRateToTheClock) {
  GpuDirectConfig c = Config("h100");
  c.link_gbps = 10;
  Rig r(c);
  auto va = r.gd.AllocGpu(64 * kMiB, 0);
  auto s = r.gd.Dma(*va, 64 * kMiB, 16 * kMiB, 1);
  ASSERT_TRUE(s.ok());
  EXPECT_NEAR(s->seconds, 64.0 * kMiB / 10e9, 1e-12);
  EXPECT_NEAR(r.clock->NowSeconds(), s->seconds, 1e-12);
  EXPECT_EQ(s->route, "same-switch");
  EXPECT_EQ(s->data, "intact");
}

TEST(SimGpuDirect, MisalignedTransferIsEinvalAndAlignedOneWorks) {
  Rig r(Config("h100"));
  auto va = r.gd.AllocGpu(4 * kMiB, 0);
  auto bad = r.gd.Dma(*va + 4 * kKiB, 64 * kKiB, 0, 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), EINVAL);
  EXPECT_TRUE(r.gd.Dma(*va, 64 * kKiB, 0, 1).ok());
}

TEST(SimGpuDirect, FreeDuringDmaRunsTheCallbackInTheRealOrder) {
  Rig r(Config("h100"));
  auto va = r.gd.AllocGpu(4 * kMiB, 0);
  ASSERT_TRUE(r.gd.Dma(*va, 4 * kMiB, 0, 1).ok());
  ASSERT_TRUE(r.gd.FreeGpu(*va, true).ok());
  const auto ev = r.gd.Events();
  const int revoke = At(ev, "calls free_callback"), cb = At(ev, "driver: free_callback"),
            wait = At(ev, "waits for the DMA in flight"), forget = At(ev, "driver: forgets page table"),
            freed = At(ev, "nvidia: frees page table"), gone = At(ev, "GPU memory at");
  ASSERT_GE(revoke, 0);
  EXPECT_LT(revoke, cb);
  EXPECT_LT(cb, wait);
  EXPECT_LT(wait, forget);
  EXPECT_LT(forget, freed);
  EXPECT_LT(freed, gone);
  EXPECT_EQ(At(ev, "use-after-free"), -1);
  // The range is revoked: a transfer into it is refused, not written through the old table.
  auto after = r.gd.Dma(*va, 4 * kMiB, 0, 1);
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.status().code(), EINVAL);
  EXPECT_NE(after.status().message().find("revoked"), std::string::npos);
}

TEST(SimGpuDirect, PutPagesAfterTheCallbackIsAUseAfterFree) {
  GpuDirectConfig c = Config("h100");
  c.put_pages_after_callback = true;
  Rig r(c);
  auto va = r.gd.AllocGpu(4 * kMiB, 0);
  auto pin = r.gd.Pin(*r.gd.QueryTokens(*va), *va, 4 * kMiB);
  ASSERT_TRUE(pin.ok());
  ASSERT_TRUE(r.gd.FreeGpu(*va, true).ok());
  EXPECT_TRUE(r.gd.Unpin(pin->id).ok());  // the real call returns 0
  EXPECT_GE(At(r.gd.Events(), "use-after-free"), 0);

  Rig good(Config("h100"));
  auto vb = good.gd.AllocGpu(4 * kMiB, 0);
  auto pb = good.gd.Pin(*good.gd.QueryTokens(*vb), *vb, 4 * kMiB);
  ASSERT_TRUE(good.gd.FreeGpu(*vb, true).ok());
  EXPECT_TRUE(good.gd.Unpin(pb->id).ok());
  EXPECT_EQ(At(good.gd.Events(), "use-after-free"), -1);
  EXPECT_GE(At(good.gd.Events(), "was revoked by the free callback: no nvidia_p2p_put_pages"), 0);
}

TEST(SimGpuDirect, ACachedPinKeptPastTheCallbackWritesThroughARevokedTable) {
  GpuDirectConfig c = Config("h100");
  c.put_pages_after_callback = true;
  Rig r(c);
  auto va = r.gd.AllocGpu(4 * kMiB, 0);
  ASSERT_TRUE(r.gd.Dma(*va, 4 * kMiB, 0, 1).ok());
  ASSERT_TRUE(r.gd.FreeGpu(*va, false).ok());
  auto s = r.gd.Dma(*va, 4 * kMiB, 0, 1);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->hits, 1u);
  EXPECT_EQ(s->data, "misdirected");
  EXPECT_GE(At(r.gd.Events(), "revoked and freed"), 0);
}

TEST(SimGpuDirect, ACallbackThatDoesNotWaitLetsTheDeviceWriteFreedMemory) {
  GpuDirectConfig c = Config("h100");
  c.callback_waits_for_dma = false;
  Rig r(c);
  auto va = r.gd.AllocGpu(4 * kMiB, 0);
  ASSERT_TRUE(r.gd.Dma(*va, 4 * kMiB, 0, 1).ok());
  ASSERT_TRUE(r.gd.FreeGpu(*va, true).ok());
  EXPECT_GE(At(r.gd.Events(), "use-after-free by DMA"), 0);
}

TEST(SimGpuDirect, IncompatiblePageTableVersionIsRefusedAndPutBack) {
  GpuDirectConfig c = Config("kepler-guide");
  c.built_against_version = 0x00010002;  // built against today's header, run on the 2013 driver
  Rig r(c);
  auto va = r.gd.AllocGpu(4 * kMiB, 0);
  auto pin = r.gd.Pin(*r.gd.QueryTokens(*va), *va, 4 * kMiB);
  ASSERT_FALSE(pin.ok());
  EXPECT_EQ(pin.status().code(), EINVAL);
  EXPECT_NE(pin.status().message().find("incompatible page table version 0x10001"), std::string::npos);
  EXPECT_EQ(r.gd.nvidia()->bar1_mapped(), 0u);
  GpuDirectConfig old = Config("h100");
  old.built_against_version = 0x00010001;  // an old build reads the newer minor fine
  Rig o(old);
  auto vb = o.gd.AllocGpu(4 * kMiB, 0);
  EXPECT_TRUE(o.gd.Pin(*o.gd.QueryTokens(*vb), *vb, 4 * kMiB).ok());
}

// table_version: the GPU driver's tables of another version than the profile's (what the QEMU
// lane's stand-in is set to; scenarios/seed003/page_table_version_mismatch.toml's kmod form).
TEST(SimGpuDirect, TableVersionOverridesTheProfilesAndIsJudgedTheSameWay) {
  GpuDirectConfig c = Config("kepler-guide");
  c.built_against_version = 0x00010001;
  c.table_version = 0x00010000;  // older than the header the driver was built against
  Rig r(c);
  auto va = r.gd.AllocGpu(4 * kMiB, 0);
  auto pin = r.gd.Pin(*r.gd.QueryTokens(*va), *va, 4 * kMiB);
  ASSERT_FALSE(pin.ok());
  EXPECT_EQ(pin.status().code(), EINVAL);
  EXPECT_NE(pin.status().message().find("incompatible page table version 0x10000"), std::string::npos)
      << pin.status().message();
  c.table_version = 0x00010003;  // a newer minor: read
  Rig n(c);
  auto vb = n.gd.AllocGpu(4 * kMiB, 0);
  auto ok = n.gd.Pin(*n.gd.QueryTokens(*vb), *vb, 4 * kMiB);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->version, 0x00010003u);
}

// Masks narrower than 32 bits exist (QEMU's edu has 28): nvidia_p2p_dma_map_pages refuses the
// H100's BAR1 for one as for a 32-bit device; below 24 bits is no DMA mask.
TEST(SimGpuDirect, TwentyEightBitDeviceCannotReachTheGuidesBar1) {
  GpuDirectConfig c = Config("h100");
  c.dma_mask_bits = 28;
  Rig r(c);
  auto va = r.gd.AllocGpu(4 * kMiB, 0);
  auto s = r.gd.Dma(*va, 4 * kMiB, 0, 1);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), EIO);
  EXPECT_NE(s.status().message().find("overflow (mask 0xfffffff)"), std::string::npos) << s.status().message();
  c.dma_mask_bits = 23;
  SimGpuDirect gd(std::make_shared<VirtualClock>(), 1);
  EXPECT_FALSE(gd.Configure(c).ok());
}

TEST(SimGpuDirect, ThirtyTwoBitMaskNeedsBar1Below4GiBOrAnIommu) {
  GpuDirectConfig c = Config("h100");
  c.dma_mask_bits = 32;
  Rig r(c);
  auto va = r.gd.AllocGpu(4 * kMiB, 0);
  auto high = r.gd.Dma(*va, 4 * kMiB, 0, 1);
  ASSERT_FALSE(high.ok());
  EXPECT_EQ(high.status().code(), EIO);
  EXPECT_NE(high.status().message().find("32-bit DMA mask"), std::string::npos);
  EXPECT_EQ(r.gd.nvidia()->bar1_mapped(), 0u);  // the failed pin was put back

  c.iommu = true;
  Rig io(c);
  auto vb = io.gd.AllocGpu(4 * kMiB, 0);
  auto s = io.gd.Dma(*vb, 4 * kMiB, 0, 1);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->route, "through-cpu (IOMMU)");

  GpuDirectConfig low = Config("kepler-guide");
  low.dma_mask_bits = 32;
  Rig k(low);
  auto vk = k.gd.AllocGpu(4 * kMiB, 0);
  auto sk = k.gd.Dma(*vk, 4 * kMiB, 0, 1);
  ASSERT_TRUE(sk.ok());
  EXPECT_EQ(sk->data, "intact");

  low.bar1_base = 16 * kGiB;  // the same BAR moved above 4 GiB: the guide's API hands out physical addresses
  Rig kh(low);
  auto vh = kh.gd.AllocGpu(4 * kMiB, 0);
  auto sh = kh.gd.Dma(*vh, 4 * kMiB, 0, 1);
  ASSERT_TRUE(sh.ok());
  EXPECT_EQ(sh->data, "misdirected");
}

// The writes are posted: the transfer "succeeds", the data is lost, and the IOMMU's fault line
// comes before the driver's account of the write (as the real kernel and driver give them).
TEST(SimGpuDirect, GuideEraDriverBehindAnIommuIsBlocked) {
  GpuDirectConfig c = Config("kepler-guide");
  c.iommu = true;
  Rig r(c);
  auto va = r.gd.AllocGpu(4 * kMiB, 0);
  auto s = r.gd.Dma(*va, 4 * kMiB, 0, 1);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->data, "lost");
  EXPECT_NE(s->note.find("incompatible with IOMMUs"), std::string::npos);
  const auto ev = r.gd.Events();
  size_t fault = ev.size(), driver = ev.size();
  for (size_t i = 0; i < ev.size(); ++i) {
    if (fault == ev.size() && ev[i].find("DMAR: [DMA Write NO_PASID]") != std::string::npos) fault = i;
    if (ev[i].find("the physical address, given as is") != std::string::npos) driver = i;
  }
  ASSERT_LT(fault, ev.size());
  ASSERT_LT(driver, ev.size());
  EXPECT_LT(fault, driver);
}

TEST(SimGpuDirect, CrossSocketFailsAndSameSwitchWorks) {
  GpuDirectConfig c = Config("h100", UnpinPolicy::kAfterEach);
  c.path = PciePath::kCrossSocket;
  Rig x(c);
  auto va = x.gd.AllocGpu(4 * kMiB, 0);
  auto failed = x.gd.Dma(*va, 4 * kMiB, 0, 1);
  EXPECT_EQ(failed.status().code(), EIO);
  EXPECT_NE(failed.status().message().find("transfer 1"), std::string::npos);
  EXPECT_EQ(x.gd.nvidia()->bar1_mapped(), 0u);  // pinned for the transfer, unpinned after it
  c.path = PciePath::kSameSwitch;
  Rig s(c);
  auto vb = s.gd.AllocGpu(4 * kMiB, 0);
  EXPECT_TRUE(s.gd.Dma(*vb, 4 * kMiB, 0, 1).ok());
}

}  // namespace
}  // namespace resmem::sim
