// The managed bench on the simulator (the CUDA model): its rows, their order of speed and the JSON.
#include "engine/bench/managed_bench.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

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

// The model against the H100 (mock/gpu/profiles/h100-managed.json, `resmem bench --managed
// --passes 7` of 2026-11-23, docs/hil/2026-11-23-h100-seed004): the bench on the simulator with
// the same sizes and rounds, each row's rate inside the measured min..max widened by 10%. Rows the
// model is known to get wrong are listed with the reason; a listed row that agrees fails too, so
// the list only shrinks.
TEST(ManagedBench, TheModelLiesInsideTheH100sMeasuredSpread) {
  std::ifstream in("mock/gpu/profiles/h100-managed.json");
  std::stringstream text;
  text << in.rdbuf();
  auto h100 = nlohmann::json::parse(text.str(), nullptr, false);
  ASSERT_FALSE(h100.is_discarded()) << "mock/gpu/profiles/h100-managed.json missing or not JSON";
  ASSERT_EQ(h100.value("backend", ""), "cuda") << "the committed figures must come from the GPU";
  const std::map<std::string, std::string> known = {
      {"pingpong-no-advice",
       "the model's thrashing heuristic pins the 2 MiB after 10 throttles (then 199 us a round); the "
       "H100 keeps migrating it (1343 us a round) though it pins 64 KiB (22 us, pingpong-sizes.txt)"},
      {"pingpong-preferred-gpu",
       "the model naps a lapse on both sides of every round on top of 709 us of migration (1709 us a "
       "round); the H100 took 1408 us"},
  };
  auto b = transfer::MakeGpuBackend("sim");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  auto mm = MakeBenchManaged("sim", b->clock);
  ASSERT_TRUE(mm.ok());
  ManagedBenchOptions o;
  o.size = h100.value("size", uint64_t{0});
  o.passes = 1;  // the model is deterministic
  o.pingpong_size = h100.value("pingpong_size", uint64_t{0});
  o.pingpong_rounds = h100.value("pingpong_rounds", 0);
  auto r = RunManagedBench(*b->gpu, **mm, b->name, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::map<std::string, ManagedRow> model;
  for (const auto& row : r->rows) model[row.name] = row;
  std::set<std::string> disagree;
  int compared = 0;
  for (const auto& m : h100["rows"]) {
    const std::string name = m.value("name", "");
    ASSERT_TRUE(model.count(name)) << name << " measured on the H100 but not by the model";
    const double lo = 0.9 * m.value("min_gbps", 0.0), hi = 1.1 * m.value("max_gbps", 0.0);
    const double got = model[name].median_gbps;
    ++compared;
    std::printf("%-24s model %9.2f GB/s  H100 %9.2f (%.2f-%.2f)%s\n", name.c_str(), got,
                m.value("median_gbps", 0.0), m.value("min_gbps", 0.0), m.value("max_gbps", 0.0),
                known.count(name) ? "  known disagreement" : "");
    if (got >= lo && got <= hi) continue;
    disagree.insert(name);
    EXPECT_TRUE(known.count(name)) << name << ": model " << got << " GB/s outside the H100's " << lo
                                   << "-" << hi << " (min-max widened by 10%)";
  }
  EXPECT_EQ(compared, 11);
  for (const auto& [name, why] : known)
    EXPECT_TRUE(disagree.count(name)) << name << " agrees now: delete it from the known list (" << why << ")";
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
