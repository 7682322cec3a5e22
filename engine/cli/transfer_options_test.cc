// The staging options bench, stream and calibrate share (AddStagingOptions): the segment-plan
// options land in TransferOptions, and a bad --costs is refused naming the field, with exit 2.
#include "engine/cli/transfer_options.h"

#include <gtest/gtest.h>

#include <sstream>

#include "engine/cli/command.h"

namespace resmem::transfer {
namespace {

std::optional<int> Parse(const std::vector<std::string>& args, TransferOptions* o,
                         std::string* err) {
  auto app = cli::MakeApp("test", "test");
  AddStagingOptions(*app, o);
  std::ostringstream out, e;
  auto rc = cli::ParseArgs(*app, args, out, e);
  *err = e.str();
  return rc;
}

TEST(StagingOptions, PlanOptionsLandInTransferOptions) {
  TransferOptions o;
  std::string err;
  EXPECT_EQ(o.staging_plan_upto, 64ull << 20);
  EXPECT_EQ(o.staging_plan_d2h_from, 1ull << 20);
  ASSERT_FALSE(Parse({"--plan-upto", "1M", "--plan-d2h-from", "0", "--costs",
                      "1,90,50,85,45,3,53.5,48,2"},
                     &o, &err))
      << err;
  EXPECT_EQ(o.staging_plan_upto, 1ull << 20);
  EXPECT_EQ(o.staging_plan_d2h_from, 0u);
  EXPECT_DOUBLE_EQ(o.staging_costs.start_us, 1);
  EXPECT_DOUBLE_EQ(o.staging_costs.dma_beside_gbps, 48);
  EXPECT_DOUBLE_EQ(o.staging_costs.per_dma_us, 2);
}

// The device-to-host ring rotates without a demote by default; --no-rotate-ring is the fixed
// ring, which wants the demote back.
TEST(StagingOptions, NoRotateRingGivesTheFixedRing) {
  TransferOptions o;
  std::string err;
  EXPECT_TRUE(o.staging_rotate_ring);
  EXPECT_EQ(o.staging_demote_drain_upto, 0u);
  ASSERT_FALSE(Parse({"--no-rotate-ring", "--demote-drain-upto", "2M"}, &o, &err)) << err;
  EXPECT_FALSE(o.staging_rotate_ring);
  EXPECT_EQ(o.staging_demote_drain_upto, 2ull << 20);
}

TEST(StagingOptions, BadCostsAreRefusedByField) {
  TransferOptions o;
  const double before = o.staging_costs.fill_gbps;
  std::string err;
  auto rc = Parse({"--costs", "1,90,0,85,45,3,53.5,48,2"}, &o, &err);
  ASSERT_TRUE(rc.has_value());
  EXPECT_EQ(*rc, 2);
  EXPECT_NE(err.find("fill_gbps"), std::string::npos) << err;
  EXPECT_DOUBLE_EQ(o.staging_costs.fill_gbps, before) << "a refused value changes nothing";
  rc = Parse({"--costs", "1,2"}, &o, &err);
  ASSERT_TRUE(rc.has_value());
  EXPECT_NE(err.find("2 numbers"), std::string::npos) << err;
}

TEST(StagingOptions, SmBlocksLandAndNoneIsRefused) {
  TransferOptions o;
  std::string err;
  EXPECT_EQ(o.staging_sm_blocks, 32);
  ASSERT_FALSE(Parse({"--sm-copy-upto", "64M", "--sm-blocks", "8"}, &o, &err)) << err;
  EXPECT_EQ(o.staging_sm_blocks, 8);
  auto rc = Parse({"--sm-blocks", "0"}, &o, &err);
  ASSERT_TRUE(rc.has_value());
  EXPECT_EQ(*rc, 2);
  EXPECT_NE(err.find("--sm-blocks"), std::string::npos) << err;
  EXPECT_EQ(o.staging_sm_blocks, 8) << "a refused value changes nothing";
}

TEST(StagingOptions, SmCopyIsOnUpTo64MiBWithAStartWait) {
  TransferOptions o;
  std::string err;
  EXPECT_EQ(o.staging_sm_copy_upto, 64u << 20) << "host-to-device copies up to 64 MiB by the SMs";
  EXPECT_EQ(o.staging_sm_start_us, 20.0);
  ASSERT_FALSE(Parse({"--sm-copy-upto", "0", "--sm-start-us", "0"}, &o, &err)) << err;
  EXPECT_EQ(o.staging_sm_copy_upto, 0u);
  EXPECT_EQ(o.staging_sm_start_us, 0.0) << "0: wait for the kernel as long as it takes";
  auto rc = Parse({"--sm-start-us", "-5"}, &o, &err);
  ASSERT_TRUE(rc.has_value());
  EXPECT_NE(err.find("--sm-start-us"), std::string::npos) << err;
  EXPECT_EQ(o.staging_sm_start_us, 0.0) << "a refused value changes nothing";
}

TEST(StagingOptions, FrontierOptionsLand) {
  TransferOptions o;
  std::string err;
  EXPECT_FALSE(o.staging_frontier) << "opt-in";
  EXPECT_EQ(o.staging_frontier_unit, 32u << 10);
  EXPECT_EQ(o.staging_frontier_min_dma, 256u << 10);
  EXPECT_EQ(o.staging_frontier_lead_us, 0.0) << "issue at once unless asked";
  ASSERT_FALSE(Parse({"--frontier-lead-us", "8.5"}, &o, &err)) << err;
  EXPECT_EQ(o.staging_frontier_lead_us, 8.5);
  {
    auto bad = Parse({"--frontier-lead-us", "-1"}, &o, &err);
    ASSERT_TRUE(bad.has_value());
    EXPECT_NE(err.find("--frontier-lead-us"), std::string::npos) << err;
    EXPECT_EQ(o.staging_frontier_lead_us, 8.5) << "a refused value changes nothing";
  }
  ASSERT_FALSE(Parse({"--frontier-unit", "64K", "--frontier-min-dma", "0"}, &o, &err)) << err;
  EXPECT_EQ(o.staging_frontier_unit, 64u << 10);
  EXPECT_EQ(o.staging_frontier_min_dma, 0u);
  EXPECT_FALSE(o.staging_frontier);
  ASSERT_FALSE(Parse({"--frontier"}, &o, &err)) << err;
  EXPECT_TRUE(o.staging_frontier);
  auto rc = Parse({"--frontier-unit", "1K"}, &o, &err);
  ASSERT_TRUE(rc.has_value());
  EXPECT_EQ(*rc, 2);
  EXPECT_NE(err.find("--frontier-unit"), std::string::npos) << err;
}

// Where the fill switches from non-temporal stores to the cache: a size, 0 for never, and
// --cached-fill as a name for 0.
TEST(StagingOptions, NonTemporalFillLimitLands) {
  TransferOptions o;
  std::string err;
  EXPECT_EQ(o.staging_nt_fill_below, 8u << 20);
  ASSERT_FALSE(Parse({"--nt-fill-below", "1G"}, &o, &err)) << err;
  EXPECT_EQ(o.staging_nt_fill_below, 1u << 30);
  ASSERT_FALSE(Parse({"--nt-fill-below", "0"}, &o, &err)) << err;
  EXPECT_EQ(o.staging_nt_fill_below, 0u);
  o = TransferOptions();
  ASSERT_FALSE(Parse({"--cached-fill"}, &o, &err)) << err;
  EXPECT_EQ(o.staging_nt_fill_below, 0u);
  auto rc = Parse({"--nt-fill-below", "lots"}, &o, &err);
  ASSERT_TRUE(rc.has_value());
  EXPECT_EQ(*rc, 2);
  EXPECT_NE(err.find("--nt-fill-below"), std::string::npos) << err;
}

// --gpu-waits and --edge-segment shape the signalled copies only: without --signals they would do
// nothing, so they are refused, naming the flag and --signals.
TEST(StagingOptions, SignalOnlyOptionsNeedSignals) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--gpu-waits"}, std::vector<std::string>{"--edge-segment", "0"}}) {
    TransferOptions o;
    std::string err;
    auto rc = Parse(args, &o, &err);
    ASSERT_TRUE(rc.has_value()) << args[0] << " was taken without --signals";
    EXPECT_EQ(*rc, 2);
    EXPECT_NE(err.find(args[0]), std::string::npos) << err;
    EXPECT_NE(err.find("--signals"), std::string::npos) << err;
    std::vector<std::string> with = args;
    with.push_back("--signals");
    o = TransferOptions();
    ASSERT_FALSE(Parse(with, &o, &err)) << err;
    EXPECT_TRUE(o.staging_signals);
  }
  TransferOptions o;
  std::string err;
  ASSERT_FALSE(Parse({"--signals", "--gpu-waits", "--edge-segment", "128K"}, &o, &err)) << err;
  EXPECT_TRUE(o.staging_gpu_waits);
  EXPECT_EQ(o.staging_edge_segment, 128u << 10);
}

// One pinned buffer cannot fill while another is in DMA: --buffers takes 2..16.
TEST(StagingOptions, OneBufferIsRefused) {
  TransferOptions o;
  std::string err;
  auto rc = Parse({"--buffers", "1"}, &o, &err);
  ASSERT_TRUE(rc.has_value()) << "--buffers 1 was taken";
  EXPECT_EQ(*rc, 2);
  EXPECT_NE(err.find("--buffers"), std::string::npos) << err;
  EXPECT_EQ(o.staging_buffers, 4) << "a refused value changes nothing";
  ASSERT_FALSE(Parse({"--buffers", "2"}, &o, &err)) << err;
  EXPECT_EQ(o.staging_buffers, 2);
}

// The piece the lanes and the SM copy's kernel hand over is whole pages: another size is refused,
// not rounded down.
TEST(StagingOptions, SmPieceIsWholePages) {
  TransferOptions o;
  std::string err;
  ASSERT_FALSE(Parse({"--sm-piece", "48K"}, &o, &err)) << err;
  EXPECT_EQ(o.staging_sm_piece, 48u << 10);
  auto rc = Parse({"--sm-piece", "5000"}, &o, &err);
  ASSERT_TRUE(rc.has_value()) << "--sm-piece 5000 was taken";
  EXPECT_EQ(*rc, 2);
  EXPECT_NE(err.find("--sm-piece"), std::string::npos) << err;
  EXPECT_NE(err.find("4 KiB"), std::string::npos) << err;
  EXPECT_EQ(o.staging_sm_piece, 48u << 10) << "a refused value changes nothing";
}

}  // namespace
}  // namespace resmem::transfer
