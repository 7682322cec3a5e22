// The managed bench on the simulator (the CUDA model): its rows, their order of speed and the JSON.
#include "engine/bench/managed_bench.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "engine/transfer/gpu_backend.h"

namespace resmem::bench {
namespace {

TEST(ManagedBench, OnTheModelFaultsLoseToPrefetchAndAdviceBeatsPingPong) {
  auto b = transfer::MakeGpuBackend("sim");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  auto mm = MakeBenchManaged("sim", b->clock);
  ASSERT_TRUE(mm.ok());
  ManagedBenchOptions o;
  o.size = 64ull << 20;
  o.passes = 3;
  o.pingpong_rounds = 20;
  auto r = RunManagedBench(*b->gpu, **mm, b->name, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::map<std::string, ManagedRow> rows;
  for (const auto& row : r->rows) rows[row.name] = row;
  ASSERT_EQ(rows.size(), 11u) << r->ToTable();
  EXPECT_LT(rows["first-touch-gpu-read"].ratio, 0.5);
  EXPECT_GT(rows["prefetch-h2d"].ratio, 0.9);
  EXPECT_GT(rows["prefetch-d2h"].ratio, rows["cpu-fault-back-read"].ratio);
  EXPECT_GT(rows["resident-gpu-read"].ratio, 10);  // HBM, not the link
  EXPECT_LT(rows["pingpong-host-mapped"].round_us, rows["pingpong-preferred-gpu"].round_us);
  EXPECT_FALSE(r->DataMismatch());
  const std::string table = r->ToTable();
  EXPECT_NE(table.find("pingpong-no-advice"), std::string::npos);
  auto j = nlohmann::json::parse(r->ToJson());
  EXPECT_EQ(j["rows"].size(), 11u);
  EXPECT_EQ(j["rows"][2]["baseline"], "pinned-h2d");
}

TEST(ManagedBench, RefusesSizesItCannotMeasure) {
  auto b = transfer::MakeGpuBackend("sim");
  auto mm = MakeBenchManaged("sim", b->clock);
  ManagedBenchOptions o;
  o.size = 4096;
  auto r = RunManagedBench(*b->gpu, **mm, b->name, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--managed-size"), std::string::npos);
  EXPECT_FALSE(MakeBenchManaged("nope", b->clock).ok());
}

}  // namespace
}  // namespace resmem::bench
