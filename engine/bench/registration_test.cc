// The registration bench on the CUDA model: each backing and state gets the model's rate (the
// rates calibrated on the H100, docs/hil/2026-11-23-h100-perf), pieces add calls, not time, and
// bad options are refused. Sizes are large: on the simulator nothing is touched for real.
#include "engine/bench/registration.h"

#include <gtest/gtest.h>

#include "engine/transfer/gpu_backend.h"

namespace resmem::bench {
namespace {

const RegistrationRow* Find(const RegistrationResult& r, const std::string& backing, bool touched,
                            uint64_t chunk = 0) {
  for (const auto& row : r.rows)
    if (row.backing == backing && row.touched == touched && row.chunk == chunk) return &row;
  return nullptr;
}

TEST(RegistrationBench, ModelsEachBackingAndState) {
  auto backend = transfer::MakeGpuBackend("sim");
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  RegistrationOptions o;
  o.sizes = {64ull << 30};
  auto r = RunRegistrationBench(*backend->gpu, *backend->clock, backend->name, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (const char* b : {"anon", "anon-thp", "memfd", "hugetlb-2m", "hugetlb-1g"})
    for (bool touched : {false, true}) {
      const RegistrationRow* row = Find(*r, b, touched);
      ASSERT_NE(row, nullptr) << b;
      EXPECT_EQ(row->skipped, "") << b;
      EXPECT_EQ(row->error, "") << b;
      EXPECT_EQ(row->calls, 1) << b;
    }
  // 4 KiB pages: untouched at the host's pin rate (3.2 GB/s), touched at 22 GB/s.
  EXPECT_NEAR(Find(*r, "anon", false)->RegisterSecondsPerGiB(), (1ull << 30) / 3.2e9, 1e-3);
  EXPECT_NEAR(Find(*r, "memfd", true)->RegisterSecondsPerGiB(), (1ull << 30) / 22e9, 1e-3);
  // Huge pages, transparent or hugetlb, untouched at 6 GB/s and touched at 36 GB/s.
  for (const char* b : {"anon-thp", "hugetlb-2m", "hugetlb-1g"}) {
    EXPECT_NEAR(Find(*r, b, false)->RegisterSecondsPerGiB(), (1ull << 30) / 6e9, 1e-3) << b;
    EXPECT_NEAR(Find(*r, b, true)->RegisterSecondsPerGiB(), (1ull << 30) / 36e9, 1e-3) << b;
  }
  EXPECT_NE(r->ToTable().find("hugetlb-1g"), std::string::npos);
  EXPECT_NE(r->ToJson().find("register_seconds_per_gib"), std::string::npos);
}

TEST(RegistrationBench, PiecesAddCallsNotModelledTime) {
  auto backend = transfer::MakeGpuBackend("sim");
  ASSERT_TRUE(backend.ok());
  RegistrationOptions o;
  o.sizes = {16ull << 30};
  o.backings = {"anon"};
  o.touched = {false};
  o.chunks = {0, 1ull << 30};
  auto r = RunRegistrationBench(*backend->gpu, *backend->clock, backend->name, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const RegistrationRow* whole = Find(*r, "anon", false, 0);
  const RegistrationRow* pieces = Find(*r, "anon", false, 1ull << 30);
  ASSERT_NE(whole, nullptr);
  ASSERT_NE(pieces, nullptr);
  EXPECT_EQ(pieces->calls, 16);
  EXPECT_NEAR(pieces->register_seconds, whole->register_seconds, 1e-6);
}

TEST(RegistrationBench, RefusesBadOptionsByName) {
  auto backend = transfer::MakeGpuBackend("sim");
  ASSERT_TRUE(backend.ok());
  RegistrationOptions o;
  o.sizes = {1000};
  auto r = RunRegistrationBench(*backend->gpu, *backend->clock, backend->name, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("multiple of 2 MiB"), std::string::npos);
  o.sizes = {1ull << 30};
  o.backings = {"tmpfs"};
  r = RunRegistrationBench(*backend->gpu, *backend->clock, backend->name, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("choose from: anon anon-thp memfd hugetlb-2m hugetlb-1g"),
            std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace resmem::bench
