// The comparison of `resmem doctor --bandwidth` with given facts and figures, and its reference
// figures against the measured profiles they cite.
#include "engine/doctor/bandwidth.h"

#include <fstream>

#include <gtest/gtest.h>

#include "nlohmann/json.hpp"

namespace resmem::engine {
namespace {

BandwidthFacts Normal() {
  BandwidthFacts f;
  f.gpu_bdf = "0000:00:06.0";
  f.link_gen = f.max_link_gen = 5;
  f.link_width = f.max_link_width = 16;
  f.gpu_numa_node = 0;
  f.cpu = 3;
  f.cpu_numa_node = 0;
  f.iommu = MachineFacts::Iommu::State::kOff;
  f.thp = "madvise";
  return f;
}

// The H200's reference figures as measured: what a normal H200 on Gen5 x16 gives.
BandwidthMeasurement H200AsMeasured(double link_scale = 1) {
  BandwidthMeasurement m;
  m.gpu_name = "NVIDIA H200";
  m.pinned_h2d = 54.6 * link_scale;
  m.pinned_d2h = 54.5 * link_scale;
  m.pageable_h2d = std::min(6.0, m.pinned_h2d);
  m.pageable_d2h = std::min(11.7, m.pinned_d2h);
  m.memcpy_one_thread = 8.1;
  m.register_touched_s_per_gib = 0.066;
  m.register_untouched_s_per_gib = 0.48;
  return m;
}

std::vector<std::string> Ids(const std::vector<Finding>& fs) {
  std::vector<std::string> ids;
  for (const auto& f : fs) ids.push_back(f.id);
  return ids;
}

TEST(Bandwidth, AllNormalGivesNoFinding) {
  const BandwidthFacts f = Normal();
  const BandwidthMeasurement m = H200AsMeasured();
  const ExpectedBandwidth e = ExpectedFor(m.gpu_name, f);
  ASSERT_TRUE(e.has_reference);
  EXPECT_NEAR(e.ref.pinned_h2d, 54.62, 0.01);
  EXPECT_TRUE(JudgeBandwidth(f, e, &m).empty());
}

TEST(Bandwidth, Gen3x8IsANamedShortfall) {
  BandwidthFacts f = Normal();
  f.link_gen = 3;
  f.link_width = 8;
  const ExpectedBandwidth e = ExpectedFor("NVIDIA H200", f);
  // 54.62 x raw(Gen3 x8) / raw(Gen5 x16) = 54.62 x 7.877 / 63.015 = 6.83 GB/s.
  EXPECT_NEAR(e.ref.pinned_h2d, 6.83, 0.01);
  EXPECT_NEAR(e.full.pinned_h2d, 54.62, 0.01);
  const BandwidthMeasurement m = H200AsMeasured(6.83 / 54.62);
  const auto fs = JudgeBandwidth(f, e, &m);
  ASSERT_EQ(Ids(fs), std::vector<std::string>{"pcie-link-trained-down"});
  EXPECT_EQ(fs[0].severity, "warning");
  EXPECT_NE(fs[0].title.find("Gen3 x8, not Gen5 x16"), std::string::npos);
  EXPECT_NE(fs[0].evidence.find("current_link_width 8"), std::string::npos);
  EXPECT_NE(fs[0].remedy.find("x16 slot"), std::string::npos);
  // Without a measurement the facts alone name it.
  EXPECT_EQ(Ids(JudgeBandwidth(f, e, nullptr)), std::vector<std::string>{"pcie-link-trained-down"});
}

TEST(Bandwidth, LowSpeedWithFullRateCopiesIsPowerSaving) {
  BandwidthFacts f = Normal();
  f.link_gen = 1;  // an idle GPU reads 2.5 GT/s until it trains up
  const BandwidthMeasurement m = H200AsMeasured();
  const auto fs = JudgeBandwidth(f, ExpectedFor(m.gpu_name, f), &m);
  ASSERT_EQ(Ids(fs), std::vector<std::string>{"pcie-link-idle-speed"});
  EXPECT_EQ(fs[0].severity, "info");
}

TEST(Bandwidth, RemoteNumaIsNamedWithItsWayOut) {
  BandwidthFacts f = Normal();
  f.gpu_numa_node = 1;
  const BandwidthMeasurement m = H200AsMeasured(0.8);
  const auto fs = JudgeBandwidth(f, ExpectedFor(m.gpu_name, f), &m);
  ASSERT_EQ(Ids(fs), (std::vector<std::string>{"gpu-numa-remote", "pinned-bandwidth-short"}));
  EXPECT_NE(fs[0].remedy.find("numactl --cpunodebind=1 --membind=1"), std::string::npos);
  EXPECT_NE(fs[1].title.find("NUMA node 1"), std::string::npos);  // the shortfall's cause
  EXPECT_NE(fs[1].evidence.find("pinned D2H"), std::string::npos);  // both directions, one finding
}

TEST(Bandwidth, UnexplainedShortfallsSayWhatIsLeft) {
  BandwidthFacts f = Normal();
  f.thp = "never";
  f.iommu = MachineFacts::Iommu::State::kTranslating;
  f.gpu_translated = true;
  BandwidthMeasurement m = H200AsMeasured();
  m.register_untouched_s_per_gib = 1.5;  // > 2 x 0.478
  m.memcpy_one_thread = 3;               // < 0.6 x 8.13
  const auto fs = JudgeBandwidth(f, ExpectedFor(m.gpu_name, f), &m);
  ASSERT_EQ(Ids(fs), (std::vector<std::string>{"host-memcpy-short", "registration-slow"}));
  EXPECT_NE(fs[1].title.find("transparent huge pages are off"), std::string::npos);
  EXPECT_NE(fs[1].title.find("IOMMU translates"), std::string::npos);
  EXPECT_NE(fs[1].remedy.find("iommu=pt"), std::string::npos);
  EXPECT_NE(fs[0].title.find("no fact here explains it"), std::string::npos);
}

TEST(Bandwidth, UnknownGpuIsJudgedByItsLinkAlone) {
  const BandwidthFacts f = Normal();
  const ExpectedBandwidth e = ExpectedFor("NVIDIA L40S", f);
  EXPECT_FALSE(e.has_reference);
  EXPECT_NEAR(e.ref.pinned_h2d, 54.62, 0.01);  // Gen5 x16 at the H200's efficiency
  EXPECT_EQ(e.ref.memcpy_one_thread, 0);        // not judged
}

// Each reference figure is the one its profile file holds (the 256 MiB classes, the one-thread
// memcpy, the 256 MiB default registrations x 4).
TEST(Bandwidth, ReferencesAreTheMeasuredProfiles) {
  for (const auto& r : ReferenceProfiles()) {
    const std::string file = r.source.substr(0, r.source.find(' '));
    std::ifstream in(file);
    ASSERT_TRUE(in) << file;
    const auto j = nlohmann::json::parse(in);
    auto gbps = [&](const char* cls, const char* dir) {
      for (const auto& b : j["bandwidth"])
        if (b["class"] == cls && b["direction"] == dir && b["size"] == 268435456) return b["gbps"].get<double>();
      return -1.0;
    };
    auto reg = [&](const char* kind) {
      for (const auto& x : j["registration"])
        if (x["kind"] == kind && x["flags"] == "default" && x["size"] == 268435456)
          return x["seconds"].get<double>() * 4;
      return -1.0;
    };
    EXPECT_DOUBLE_EQ(r.pinned_h2d, gbps("pinned", "H2D")) << file;
    EXPECT_DOUBLE_EQ(r.pinned_d2h, gbps("pinned", "D2H")) << file;
    EXPECT_DOUBLE_EQ(r.pageable_h2d, gbps("pageable", "H2D")) << file;
    EXPECT_DOUBLE_EQ(r.pageable_d2h, gbps("pageable", "D2H")) << file;
    EXPECT_DOUBLE_EQ(r.memcpy_one_thread, j["host_memcpy_gbps"]["1"].get<double>()) << file;
    EXPECT_NEAR(r.register_touched_s_per_gib, reg("anon"), 1e-12) << file;
    EXPECT_NEAR(r.register_untouched_s_per_gib, reg("anon-untouched"), 1e-12) << file;
  }
}

}  // namespace
}  // namespace resmem::engine
