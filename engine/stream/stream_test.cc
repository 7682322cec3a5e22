// The stream on the CUDA model (virtual time): at a rate the link can carry, nothing drops and
// every block verifies; at a rate it cannot, blocks drop and are counted.
#include "engine/stream/stream.h"

#include <gtest/gtest.h>

#include "engine/transfer/gpu_backend.h"

namespace resmem::stream {
namespace {

StreamOptions Small() {
  StreamOptions o;
  o.block_bytes = 256 << 10;
  o.blocks = 40;
  o.slots = 4;
  o.progress = false;
  return o;
}

TEST(Stream, TenHertzOnTheSimDeliversEveryBlockWhole) {
  auto b = transfer::MakeGpuBackend("sim");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  auto r = RunStream(*b->gpu, *b->clock, b->name, Small());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->delivered, 40u);
  EXPECT_EQ(r->dropped, 0u);
  EXPECT_EQ(r->corrupt, 0u);
  EXPECT_NE(r->path_choice.find("registered-direct"), std::string::npos) << r->path_choice;
  EXPECT_GT(r->latency_p50_ms, 0);
  EXPECT_LE(r->latency_p50_ms, r->latency_max_ms);
  EXPECT_NE(r->Summary().find("dropped 0"), std::string::npos);
}

TEST(Stream, ARateFasterThanTheLinkDropsBlocks) {
  auto b = transfer::MakeGpuBackend("sim");
  ASSERT_TRUE(b.ok());
  StreamOptions o = Small();
  o.host_kind = "file";  // staged: the model charges the link for each block
  o.rate_hz = 1e7;       // 10 million blocks a second: far beyond any link
  auto r = RunStream(*b->gpu, *b->clock, b->name, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GT(r->dropped, 0u);
  EXPECT_EQ(r->delivered + r->dropped, 40u);
  EXPECT_EQ(r->corrupt, 0u);
  EXPECT_NE(r->path_choice.find("took staged"), std::string::npos) << r->path_choice;
}

TEST(Stream, FlatOutNeverDrops) {
  auto b = transfer::MakeGpuBackend("sim");
  ASSERT_TRUE(b.ok());
  StreamOptions o = Small();
  o.rate_hz = 0;
  auto r = RunStream(*b->gpu, *b->clock, b->name, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->dropped, 0u);
  EXPECT_EQ(r->delivered, 40u);
  EXPECT_GT(r->gbps, 0);
  EXPECT_GT(r->pinned_gbps, 0);
}

TEST(Stream, BadInputNamesTheOption) {
  auto b = transfer::MakeGpuBackend("sim");
  ASSERT_TRUE(b.ok());
  StreamOptions o = Small();
  o.block_bytes = 1000;
  auto r = RunStream(*b->gpu, *b->clock, b->name, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--block"), std::string::npos);
}

}  // namespace
}  // namespace resmem::stream
