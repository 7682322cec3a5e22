// The bench on the CUDA model: every path runs, data verifies, ratios are against the same run's
// pinned baseline, and the JSON reads back. Numbers come from the model; nothing is timed here.
#include "engine/bench/bench.h"

#include <gtest/gtest.h>

#include "engine/transfer/gpu_backend.h"

namespace resmem::bench {
namespace {

TEST(Bench, RunsEveryPathOnTheSimAndVerifies) {
  auto backend = transfer::MakeGpuBackend("sim");
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  BenchOptions o;
  o.sizes = {64 << 10, 1 << 20};
  o.passes = 3;
  o.bytes_per_sample = 1 << 20;
  auto r = RunBench(*backend->gpu, *backend->clock, backend->name, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // The model launches no kernels, so the zero-copy path is refused, and says so; the hugetlb
  // row needs reserved 2 MiB pages, and where there are none its note says how to get them.
  bool zero_copy_refused = false;
  for (const auto& n : r->notes) {
    if (n.find("zero-copy-mapped refused") != std::string::npos) zero_copy_refused = true;
    else if (n.rfind("registered-hugetlb", 0) == 0)
      EXPECT_NE(n.find("nr_hugepages"), std::string::npos) << n;
    else ADD_FAILURE() << "path did not run: " << n;
  }
  EXPECT_TRUE(zero_copy_refused);
  int pinned_cells = 0, chunked_cells = 0;
  for (const auto& c : r->cells) {
    EXPECT_EQ(c.verify_failures, 0u) << c.path << " " << c.direction << " " << c.size;
    EXPECT_EQ(c.pass_gbps.size(), 3u);
    EXPECT_GT(c.median_gbps, 0) << c.path;
    if (c.path == "pinned") {
      ++pinned_cells;
      EXPECT_DOUBLE_EQ(c.ratio_to_pinned, 1.0);
    }
    if (c.path == "registered-chunked") {
      ++chunked_cells;
      EXPECT_NE(c.choice.find("4 pieces"), std::string::npos) << c.choice;
    }
    if (c.path == "staged") {
      EXPECT_NE(c.choice.find("registered-direct refused"), std::string::npos) << c.choice;
    }
  }
  EXPECT_EQ(pinned_cells, 4);
  EXPECT_EQ(chunked_cells, 4);
  auto back = BenchResultFromJson(r->ToJson());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->cells.size(), r->cells.size());
  EXPECT_NE(r->ToTable().find("registered-direct"), std::string::npos);
}

TEST(Bench, RefusesSizesThatAreNotWholePages) {
  auto backend = transfer::MakeGpuBackend("sim");
  ASSERT_TRUE(backend.ok());
  BenchOptions o;
  o.sizes = {1000};
  auto r = RunBench(*backend->gpu, *backend->clock, backend->name, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("4 KiB"), std::string::npos);
  EXPECT_FALSE(transfer::MakeGpuBackend("opencl").ok());
}

}  // namespace
}  // namespace resmem::bench
