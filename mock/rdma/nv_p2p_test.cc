// Tests of the simulated NVIDIA P2P API: one per rule of nv_p2p.cc, with its cited figures.
#include "mock/rdma/nv_p2p.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <vector>

namespace resmem::sim {
namespace {

constexpr uint64_t kKiB = 1ull << 10;
constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;

P2pGpuProfile Profile(const std::string& name) {
  auto p = P2pGpuProfileByName(name);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return *p;
}

SimNvP2p::FreeCallback Noop() {
  return [] {};
}

bool Contains(const std::vector<std::string>& lines, const std::string& text) {
  for (const auto& l : lines)
    if (l.find(text) != std::string::npos) return true;
  return false;
}

TEST(P2pProfiles, H100FiguresAreFactsAndTheOpenDriver) {
  const P2pGpuProfile h = Profile("h100");
  EXPECT_EQ(h.bar1_bytes, 131072 * kMiB);  // FACTS.md: BAR1 total 131072 MiB
  EXPECT_EQ(h.bar1_reserve, 36 * kMiB);    // RM CLI_THIRD_PARTY_P2P_BAR1_RESERVE
  EXPECT_EQ(h.gpu_page, 64 * kKiB);
  EXPECT_EQ(h.page_table_version, 0x00010002u);
  EXPECT_GE(h.bar1_base, 4 * kGiB);  // a 128 GiB BAR cannot lie below 4 GiB
  SimNvP2p nv(h, 1);
  auto va = nv.Alloc(4 * kMiB, 0);
  ASSERT_TRUE(va.ok());
  auto t = nv.Tokens(*va);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->p2p_token, 0u);  // FACTS.md: p2pToken 0, vaSpaceToken 0xfe00
  EXPECT_EQ(t->va_space_token, 0xfe00u);
}

TEST(P2pProfiles, GuideEraBarIs256MWith32MReserved) {
  const P2pGpuProfile k = Profile("kepler-guide");
  EXPECT_EQ(k.bar1_bytes, 256 * kMiB);
  EXPECT_EQ(k.bar1_reserve, 32 * kMiB);
  EXPECT_EQ(k.page_table_version, 0x00010001u);
  EXPECT_LT(k.bar1_base + k.bar1_bytes, 4 * kGiB);
  EXPECT_FALSE(P2pGpuProfileByName("fermi").ok());
}

TEST(P2pVersions, SameMajorAndAtLeastTheBuiltMinor) {
  EXPECT_TRUE(PageTableVersionCompatible(0x00010002, 0x00010001));
  EXPECT_TRUE(PageTableVersionCompatible(0x00010002, 0x00010002));
  EXPECT_FALSE(PageTableVersionCompatible(0x00010001, 0x00010002));
  EXPECT_FALSE(PageTableVersionCompatible(0x00020000, 0x00010002));
}

TEST(P2pAlloc, TwoMiBAlignedAndAFreedAddressComesBackInAnotherContext) {
  SimNvP2p nv(Profile("kepler-guide"), 7);
  auto a = nv.Alloc(100 * kKiB, 0);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a % (2 * kMiB), 0u);
  auto t0 = nv.Tokens(*a);
  ASSERT_TRUE(nv.Free(*a).ok());
  auto b = nv.Alloc(100 * kKiB, 1);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*a, *b);  // guide 2.4: the VA may be reused, even on another GPU
  auto t1 = nv.Tokens(*b);
  ASSERT_TRUE(t0.ok() && t1.ok());
  EXPECT_NE(t0->p2p_token, t1->p2p_token);
  EXPECT_NE(t0->va_space_token, t1->va_space_token);
  EXPECT_FALSE(nv.Tokens(*b + 8 * kMiB).ok());  // not GPU memory
}

TEST(P2pGetPages, MisalignedAddressOrLengthIsEinvalWithTheDriversLine) {
  SimNvP2p nv(Profile("h100"), 1);
  auto va = nv.Alloc(4 * kMiB, 0);
  ASSERT_TRUE(va.ok());
  auto r = nv.GetPages({}, *va + 4 * kKiB, 64 * kKiB, Noop());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().space(), ErrorSpace::kErrno);
  EXPECT_EQ(r.status().code(), EINVAL);
  EXPECT_NE(r.status().message().find("address or length are not aligned"), std::string::npos);
  EXPECT_TRUE(Contains(nv.events(), "NVRM: Invalid argument in nv_p2p_get_pages"));
  auto l = nv.GetPages({}, *va, 100 * kKiB, Noop());
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), EINVAL);
  EXPECT_TRUE(nv.GetPages({}, *va, 128 * kKiB, Noop()).ok());
}

TEST(P2pGetPages, NullCallbackIsEinval) {
  SimNvP2p nv(Profile("h100"), 1);
  auto va = nv.Alloc(2 * kMiB, 0);
  auto r = nv.GetPages({}, *va, 64 * kKiB, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), EINVAL);
}

TEST(P2pGetPages, PageTableHasVersionPageSizeAndBar1Addresses) {
  SimNvP2p nv(Profile("h100"), 1);
  auto va = nv.Alloc(2 * kMiB, 0);
  auto t = nv.GetPages({0, 0}, *va, 256 * kKiB, Noop());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->version, 0x00010002u);
  EXPECT_EQ(t->page_size, 64 * kKiB);
  ASSERT_EQ(t->physical_addresses.size(), 4u);
  for (uint64_t a : t->physical_addresses) {
    EXPECT_GE(a, 128 * kGiB);
    EXPECT_LT(a, 256 * kGiB);
  }
  EXPECT_EQ(nv.bar1_mapped(), 256 * kKiB);
}

TEST(P2pTokens, H100LooksUpAZeroTokenByAddressButRefusesAWrongVaSpace) {
  SimNvP2p nv(Profile("h100"), 1);
  auto va = nv.Alloc(2 * kMiB, 0);
  EXPECT_TRUE(nv.GetPages({0, 0}, *va, 64 * kKiB, Noop()).ok());
  auto bad = nv.GetPages({0, 0x1234}, *va, 64 * kKiB, Noop());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), EINVAL);
  EXPECT_NE(bad.status().message().find("invalid token"), std::string::npos);
}

TEST(P2pTokens, GuideEraNeedsTheTokensAndRefusesStaleOnes) {
  SimNvP2p nv(Profile("kepler-guide"), 3);
  auto a = nv.Alloc(2 * kMiB, 0);
  auto stale = nv.Tokens(*a);
  ASSERT_TRUE(stale.ok());
  auto zero = nv.GetPages({0, 0}, *a, 64 * kKiB, Noop());
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().code(), EINVAL);
  ASSERT_TRUE(nv.Free(*a).ok());
  auto b = nv.Alloc(2 * kMiB, 1);
  ASSERT_EQ(*a, *b);
  auto r = nv.GetPages(*stale, *b, 64 * kKiB, Noop());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), EINVAL);
  EXPECT_NE(r.status().message().find("cuPointerGetAttribute"), std::string::npos);
  EXPECT_TRUE(nv.GetPages(*nv.Tokens(*b), *b, 64 * kKiB, Noop()).ok());
}

TEST(P2pBar1, GuideEraFillsAfter224MiBWithEnomemAndAPutMakesRoom) {
  SimNvP2p nv(Profile("kepler-guide"), 1);
  auto va = nv.Alloc(256 * kMiB, 0);
  ASSERT_TRUE(va.ok());
  const P2pTokens tok = *nv.Tokens(*va);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 7; ++i) {
    auto t = nv.GetPages(tok, *va + i * 32 * kMiB, 32 * kMiB, Noop());
    ASSERT_TRUE(t.ok()) << i << ": " << t.status().ToString();
    ids.push_back(t->id);
  }
  EXPECT_EQ(nv.bar1_mapped(), 224 * kMiB);
  auto full = nv.GetPages(tok, *va + 224 * kMiB, 32 * kMiB, Noop());
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.status().code(), ENOMEM);
  EXPECT_NE(full.status().message().find("BAR1 is full"), std::string::npos);
  EXPECT_TRUE(Contains(nv.events(), "NVRM: no space for BAR1 mappings"));
  ASSERT_TRUE(nv.PutPages(tok, *va, ids[0]).ok());
  EXPECT_TRUE(nv.GetPages(tok, *va + 224 * kMiB, 32 * kMiB, Noop()).ok());
}

TEST(P2pBar1, OverlappingPinsMapAPageOnce) {
  SimNvP2p nv(Profile("h100"), 1);
  auto va = nv.Alloc(2 * kMiB, 0);
  auto a = nv.GetPages({}, *va, 256 * kKiB, Noop());
  auto b = nv.GetPages({}, *va + 128 * kKiB, 256 * kKiB, Noop());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(nv.bar1_mapped(), 384 * kKiB);
  EXPECT_EQ(a->physical_addresses[2], b->physical_addresses[0]);
  ASSERT_TRUE(nv.PutPages({}, *va, a->id).ok());
  EXPECT_EQ(nv.bar1_mapped(), 256 * kKiB);
}

TEST(P2pFree, CallbackRunsFirstThenTheNvidiaDriverFreesTheTable) {
  SimNvP2p nv(Profile("h100"), 1);
  auto va = nv.Alloc(2 * kMiB, 0);
  int calls = 0;
  bool table_live_in_callback = false;
  uint64_t id = 0;
  auto t = nv.GetPages({}, *va, 64 * kKiB, [&] {
    ++calls;
    table_live_in_callback = nv.live(id);
    nv.Log("test: callback");
  });
  ASSERT_TRUE(t.ok());
  id = t->id;
  ASSERT_TRUE(nv.Free(*va).ok());
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(table_live_in_callback);
  EXPECT_TRUE(nv.revoked(id));
  EXPECT_EQ(nv.bar1_mapped(), 0u);
  const auto& ev = nv.events();
  auto at = [&](const std::string& s) {
    for (size_t i = 0; i < ev.size(); ++i)
      if (ev[i].find(s) != std::string::npos) return static_cast<int>(i);
    return -1;
  };
  ASSERT_GE(at("calls free_callback"), 0);
  EXPECT_LT(at("calls free_callback"), at("test: callback"));
  EXPECT_LT(at("test: callback"), at("frees page table"));
  EXPECT_LT(at("frees page table"), at("GPU memory at"));
}

TEST(P2pPutPages, AfterTheCallbackReturnsZeroButIsAUseAfterFree) {
  SimNvP2p nv(Profile("h100"), 1);
  auto va = nv.Alloc(2 * kMiB, 0);
  auto t = nv.GetPages({}, *va, 64 * kKiB, Noop());
  ASSERT_TRUE(nv.Free(*va).ok());
  EXPECT_TRUE(nv.PutPages({}, *va, t->id).ok());  // nv-p2p.c: OBJECT_NOT_FOUND -> 0
  EXPECT_TRUE(Contains(nv.events(), "use-after-free"));
}

TEST(P2pPutPages, TwiceOrUnknownIsEinval) {
  SimNvP2p nv(Profile("h100"), 1);
  auto va = nv.Alloc(2 * kMiB, 0);
  auto t = nv.GetPages({}, *va, 64 * kKiB, Noop());
  ASSERT_TRUE(nv.PutPages({}, *va, t->id).ok());
  EXPECT_EQ(nv.PutPages({}, *va, t->id).code(), EINVAL);
  EXPECT_EQ(nv.PutPages({}, *va, 999).code(), EINVAL);
  EXPECT_FALSE(nv.live(t->id));
}

TEST(P2pDmaMap, OpenDriverMapsThroughTheKernelAndAMappingErrorIsEio) {
  SimNvP2p nv(Profile("h100"), 1);
  auto va = nv.Alloc(2 * kMiB, 0);
  auto t = nv.GetPages({}, *va, 128 * kKiB, Noop());
  auto ok = nv.DmaMapPages(t->id, [](uint64_t phys, uint64_t) -> Result<uint64_t> { return phys + 1; });
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ((*ok)[1], t->physical_addresses[1] + 1);
  auto bad = nv.DmaMapPages(t->id, [](uint64_t, uint64_t) -> Result<uint64_t> {
    return Status::Errno(EIO, "overflow");
  });
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), EIO);
  SimNvP2p old(Profile("kepler-guide"), 1);
  auto ova = old.Alloc(2 * kMiB, 0);
  auto ot = old.GetPages(*old.Tokens(*ova), *ova, 64 * kKiB, Noop());
  ASSERT_TRUE(ot.ok());
  EXPECT_EQ(old.DmaMapPages(ot->id, [](uint64_t p, uint64_t) -> Result<uint64_t> { return p; }).status().code(), 524);
}

}  // namespace
}  // namespace resmem::sim
