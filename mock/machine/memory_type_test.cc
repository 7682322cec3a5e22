// MTRR precedence, the WB-only-if-uniform rule, and the host speed model.
#include <gtest/gtest.h>

#include "mock/machine/machine.h"

namespace resmem::sim {
namespace {

constexpr uint64_t kGiB = 1ull << 30;

MachineSpec Seed000() { return MachinePreset("seed000-workstation").value(); }

TEST(MtrrTypeAt, VariableRangesDefaultAndFixedRange) {
  const auto m = Seed000().mtrr;
  EXPECT_EQ(MtrrTypeAt(m, 0x1000), MemoryType::kWriteBack);      // fixed range, RAM
  EXPECT_EQ(MtrrTypeAt(m, 0xb8000), MemoryType::kUncached);      // fixed range, VGA
  EXPECT_EQ(MtrrTypeAt(m, 2 * kGiB), MemoryType::kWriteBack);    // var0
  EXPECT_EQ(MtrrTypeAt(m, 3 * kGiB + 5), MemoryType::kUncached); // var0 and var1: UC wins
  EXPECT_EQ(MtrrTypeAt(m, 100 * kGiB), MemoryType::kWriteBack);
  EXPECT_EQ(MtrrTypeAt(m, 128 * kGiB), MemoryType::kUncached);   // past var0: default
  MtrrConfig off = m;
  off.enabled = false;
  EXPECT_EQ(MtrrTypeAt(off, 2 * kGiB), MemoryType::kUncached);
  // Precedence does not depend on register order: UC listed first still wins over WB.
  MtrrConfig reversed = m;
  std::swap(reversed.variable[0], reversed.variable[1]);
  EXPECT_EQ(MtrrTypeAt(reversed, 3 * kGiB + 5), MemoryType::kUncached);
  EXPECT_EQ(MtrrTypeAt(reversed, 2 * kGiB), MemoryType::kWriteBack);
  MtrrConfig mixed;  // WC and WB both matching: undefined by the SDM, modelled as UC
  mixed.variable = {{0, 4 * kGiB, MemoryType::kWriteCombining, ""},
                    {0, 2 * kGiB, MemoryType::kWriteBack, ""}};
  EXPECT_EQ(MtrrTypeAt(mixed, 1 * kGiB), MemoryType::kUncached);
  MtrrConfig overlap;
  overlap.default_type = MemoryType::kWriteBack;
  overlap.variable = {{0, 4 * kGiB, MemoryType::kWriteCombining, ""},
                      {0, 2 * kGiB, MemoryType::kWriteCombining, ""}};
  EXPECT_EQ(MtrrTypeAt(overlap, 1 * kGiB), MemoryType::kWriteCombining);  // equal types stay
}

TEST(EffectiveMemoryType, Seed000CliffBetween64And128GB) {
  const auto spec = Seed000();
  const uint64_t base = 4 * kGiB;
  for (uint64_t gb : {1, 4, 16, 64})
    EXPECT_EQ(EffectiveMemoryType(spec, base, base + gb * kGiB, MemoryType::kWriteBack),
              MemoryType::kWriteBack)
        << gb << " GB";
  for (uint64_t gb : {128, 188})
    EXPECT_EQ(EffectiveMemoryType(spec, base, base + gb * kGiB, MemoryType::kWriteBack),
              MemoryType::kUncachedMinus)
        << gb << " GB";
  // The first range that is not uniformly WB: WB coverage ends at 128G.
  EXPECT_EQ(EffectiveMemoryType(spec, base, 128 * kGiB, MemoryType::kWriteBack),
            MemoryType::kWriteBack);
  EXPECT_EQ(EffectiveMemoryType(spec, base, 128 * kGiB + 4096, MemoryType::kWriteBack),
            MemoryType::kUncachedMinus);
}

TEST(EffectiveMemoryType, AMachineWhoseMtrrsCover80GBHasItsCliffAt80GB) {
  auto spec = Seed000();
  // 80 GB = 64 GB + 16 GB: two aligned power-of-two ranges.
  spec.mtrr.variable = {{0, 64 * kGiB, MemoryType::kWriteBack, ""},
                        {64 * kGiB, 16 * kGiB, MemoryType::kWriteBack, ""},
                        {3 * kGiB, 1 * kGiB, MemoryType::kUncached, ""}};
  const uint64_t base = 4 * kGiB;
  EXPECT_EQ(EffectiveMemoryType(spec, base, 80 * kGiB, MemoryType::kWriteBack),
            MemoryType::kWriteBack);
  EXPECT_EQ(EffectiveMemoryType(spec, base, 80 * kGiB + 4096, MemoryType::kWriteBack),
            MemoryType::kUncachedMinus);
  // A 64 GB reservation that used to be fast is still fast; 100 GB is not.
  EXPECT_EQ(EffectiveMemoryType(spec, base, base + 64 * kGiB, MemoryType::kWriteBack),
            MemoryType::kWriteBack);
  EXPECT_EQ(EffectiveMemoryType(spec, base, base + 100 * kGiB, MemoryType::kWriteBack),
            MemoryType::kUncachedMinus);
}

TEST(EffectiveMemoryType, RangeOverTheHoleIsNotWB) {
  const auto spec = Seed000();
  EXPECT_EQ(EffectiveMemoryType(spec, 2 * kGiB, 5 * kGiB, MemoryType::kWriteBack),
            MemoryType::kUncachedMinus);
}

TEST(EffectiveMemoryType, OtherRequestsAndNoPat) {
  auto spec = Seed000();
  EXPECT_EQ(EffectiveMemoryType(spec, 4 * kGiB, 200 * kGiB, MemoryType::kWriteCombining),
            MemoryType::kWriteCombining);
  EXPECT_EQ(EffectiveMemoryType(spec, 4 * kGiB, 8 * kGiB, MemoryType::kUncached),
            MemoryType::kUncached);
  spec.pat_enabled = false;
  EXPECT_EQ(EffectiveMemoryType(spec, 4 * kGiB, 8 * kGiB, MemoryType::kWriteBack),
            MemoryType::kWriteBack);
  EXPECT_EQ(EffectiveMemoryType(spec, 200 * kGiB, 201 * kGiB, MemoryType::kWriteBack),
            MemoryType::kUncached);  // the MTRR type itself, not UC-
  EXPECT_EQ(EffectiveMemoryType(spec, 4 * kGiB, 8 * kGiB, MemoryType::kWriteCombining),
            MemoryType::kUncachedMinus);
}

TEST(HostPerf, Seed000FitsItsTable) {
  const auto perf = Seed000().perf;
  // WB: 3942/3948/3941/3903 MB/s in the seed (second run).
  EXPECT_NEAR(perf.ReadBytesPerSecond(MemoryType::kWriteBack, 8) / 1e6, 3930, 60);
  // UC-: 80.55 / 83.62 MB/s at 128 / 188 GB reserved.
  const double uc = perf.ReadBytesPerSecond(MemoryType::kUncachedMinus, 0) / 1e6;
  EXPECT_GT(uc, 78);
  EXPECT_LT(uc, 86);
  EXPECT_DOUBLE_EQ(perf.ReadBytesPerSecond(MemoryType::kUncached, 16),
                   2 * perf.ReadBytesPerSecond(MemoryType::kUncached, 8));
  EXPECT_DOUBLE_EQ(perf.ReadBytesPerSecond(MemoryType::kWriteCombining, 8),
                   perf.ReadBytesPerSecond(MemoryType::kUncached, 8));
  // First touch of a new 16 MiB buffer: 4096 faults ~ 6 ms (seed: run A first pass 5-7 ms
  // slower than the second).
  EXPECT_NEAR(4096 * perf.page_fault_us * 1e-3, 6.06, 0.1);
}

TEST(HostPerf, Writes) {
  HostPerf p;
  p.wb_copy_gbps = 10;
  p.wc_write_gbps = 7;
  p.uc_load_latency_ns = 100;
  EXPECT_DOUBLE_EQ(p.WriteBytesPerSecond(MemoryType::kWriteBack), 10e9);
  EXPECT_DOUBLE_EQ(p.WriteBytesPerSecond(MemoryType::kWriteCombining), 7e9);
  EXPECT_DOUBLE_EQ(p.WriteBytesPerSecond(MemoryType::kUncached), 80e6);
  EXPECT_DOUBLE_EQ(p.MemcpyBytesPerSecond(4), 10e9);  // nothing measured: one-thread rate
}

TEST(HostPerf, WriteCombinedReadsTakeTheMeasuredRateWhereThereIsOne) {
  HostPerf p;
  p.uc_load_latency_ns = 100;
  EXPECT_DOUBLE_EQ(p.ReadBytesPerSecond(MemoryType::kWriteCombining, 8), 80e6);  // UC-class
  p.wc_read_gbps = 1.14;  // h100-host, docs/hil/2026-11-23-h100-seed001
  EXPECT_DOUBLE_EQ(p.ReadBytesPerSecond(MemoryType::kWriteCombining, 8), 1.14e9);
  EXPECT_DOUBLE_EQ(p.ReadBytesPerSecond(MemoryType::kUncached, 8), 80e6);  // UC unchanged
}

// The one reading of the MTRRs over a range (the simulator's memory types, the plan and the
// doctor): write-back only where every part is, and the detail names what stops it.
TEST(MtrrWriteBackOver, NamesWhatStopsARange) {
  MtrrConfig seed000;  // write-back MTRRs over the first 128 GiB, default UC (seed 000's BIOS)
  seed000.variable = {{0, 64ull << 30, MemoryType::kWriteBack, ""},
                      {64ull << 30, 64ull << 30, MemoryType::kWriteBack, ""}};
  EXPECT_TRUE(MtrrWriteBackOver(seed000, 4ull << 30, 64ull << 30).write_back);
  const auto past = MtrrWriteBackOver(seed000, 100ull << 30, 130ull << 30);
  EXPECT_FALSE(past.write_back);
  EXPECT_NE(past.detail.find("no write-back MTRR covers [mem 0x2000000000-0x207fffffff] and the default type is UC"),
            std::string::npos) << past.detail;
  MtrrConfig qemu;  // one UC range over the PCI hole, default WB (SeaBIOS)
  qemu.default_type = MemoryType::kWriteBack;
  qemu.variable = {{0xc0000000, 1ull << 30, MemoryType::kUncached, ""}};
  EXPECT_TRUE(MtrrWriteBackOver(qemu, 1ull << 30, 2ull << 30).write_back);
  const auto hole = MtrrWriteBackOver(qemu, 0xbe000000, 0xc4000000);
  EXPECT_FALSE(hole.write_back);
  EXPECT_NE(hole.detail.find("variable MTRR reg0 (base 0xc0000000, size 1 GiB) makes [mem 0xc0000000-0xc3ffffff] UC"),
            std::string::npos) << hole.detail;
  qemu.enabled = false;
  EXPECT_NE(MtrrWriteBackOver(qemu, 0, 1 << 20).detail.find("disabled"), std::string::npos);
}

TEST(MtrrFromProcMtrr, InfersTheDefaultTypeAndSaysWhatItLeftOut) {
  auto line = [](uint64_t base, uint64_t size, MemoryType t) {
    MtrrLine m;
    m.base = base;
    m.size = size;
    m.type = t;
    return m;
  };
  std::vector<MtrrLine> wb = {line(0, 1ull << 30, MemoryType::kWriteBack)};
  EXPECT_EQ(MtrrFromProcMtrr(wb).default_type, MemoryType::kUncached);
  std::vector<MtrrLine> holes = {line(0xc0000000, 1ull << 30, MemoryType::kUncached),
                                 line(0x1000, 0x3000, MemoryType::kUncached)};
  std::vector<std::string> left_out;
  const MtrrConfig c = MtrrFromProcMtrr(holes, &left_out);
  EXPECT_EQ(c.default_type, MemoryType::kWriteBack);
  ASSERT_EQ(c.variable.size(), 1u);
  ASSERT_EQ(left_out.size(), 2u);
  EXPECT_EQ(left_out[0], "");
  EXPECT_NE(left_out[1].find("not a power of two"), std::string::npos);
}

}  // namespace
}  // namespace resmem::sim
