// Boot(): Linux's command-line rules over the firmware map, and the presets.
#include <gtest/gtest.h>

#include "mock/machine/cmdline.h"
#include "mock/machine/e820_table.h"
#include "mock/machine/machine.h"

namespace resmem::sim {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;

MachineSpec Preset(const std::string& name) {
  auto r = MachinePreset(name);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.value();
}

bool HasMessage(const BootedKernel& k, const std::string& needle) {
  for (const auto& m : k.messages)
    if (m.find(needle) != std::string::npos) return true;
  return false;
}

TEST(MemParse, SuffixesBasesAndStops) {
  EXPECT_EQ(MemParse("188G").value, 188 * kGiB);
  EXPECT_EQ(MemParse("4g").value, 4 * kGiB);
  EXPECT_EQ(MemParse("64M").value, 64 * kMiB);
  EXPECT_EQ(MemParse("1T").value, 1ull << 40);
  EXPECT_EQ(MemParse("16k").value, 16 * 1024u);
  EXPECT_EQ(MemParse("0x40000000").value, 0x40000000u);
  EXPECT_EQ(MemParse("0x1e").value, 0x1eu);  // 'e' is a hex digit here, not exa
  EXPECT_EQ(MemParse("010").value, 8u);      // base 0: leading zero is octal
  const auto p = MemParse("8G$4G");
  EXPECT_EQ(p.value, 8 * kGiB);
  EXPECT_EQ(p.consumed, 2u);
  // lib/cmdline.c memparse: the suffix switch runs even when no digit was read, so "G" is 0
  // with the 'G' consumed (found by the differential fuzz target; Linux 6.1 lib/cmdline.c).
  EXPECT_EQ(MemParse("G").consumed, 1u);
  EXPECT_EQ(MemParse("G").value, 0u);
  EXPECT_EQ(MemParse("x").consumed, 0u);
  EXPECT_EQ(MemParse("").consumed, 0u);
}

TEST(SplitKernelCmdline, SpacesAndQuotes) {
  auto opts = SplitKernelCmdline("  root=/dev/sda1 quiet memmap=64M$0x40000000 a=\"x y\"  ");
  ASSERT_EQ(opts.size(), 4u);
  EXPECT_EQ(opts[1].key, "quiet");
  EXPECT_FALSE(opts[1].has_value);
  EXPECT_EQ(opts[2].key, "memmap");
  EXPECT_EQ(opts[2].value, "64M$0x40000000");
  EXPECT_EQ(opts[3].value, "x y");
}

TEST(Boot, Seed000ReservesFrom4GAndLeaves3GB) {
  auto k = Boot(Preset("seed000-workstation"));
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  ASSERT_EQ(k->reservations.size(), 1u);
  EXPECT_EQ(k->reservations[0].start, 4 * kGiB);
  EXPECT_EQ(k->reservations[0].end, 192 * kGiB);
  EXPECT_TRUE(k->reservations[0].over_ram);
  EXPECT_FALSE(k->reservations[0].over_hole);
  // mem=4G: RAM [0, 0x9fc00) + [1M, 3G); the last firmware GB [192G,193G) is dropped.
  EXPECT_EQ(k->usable_ram, 0x9fc00 + 3 * kGiB - kMiB);
  EXPECT_EQ(E820BytesOfType(k->e820, 4 * kGiB, UINT64_MAX, E820Type::kRam), 0u);
  EXPECT_EQ(k->mem_total / 1024, 3062532u);
  // e820__update_table merges the reservation with the adjacent firmware BIOS entry.
  EXPECT_TRUE(HasMessage(*k, "user: [mem 0x00000000ff000000-0x0000002fffffffff] reserved"));
  EXPECT_TRUE(HasMessage(*k, "BIOS-e820: [mem 0x0000000000000000-0x000000000009fbff] usable"));
}

TEST(Boot, Seed002FreeReportsAbout3GB) {
  auto k = Boot(Preset("seed002-workstation"));
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  ASSERT_EQ(k->reservations.size(), 1u);
  EXPECT_EQ(k->reservations[0].end - k->reservations[0].start, 8 * kGiB);
  EXPECT_GT(k->mem_total, 2.8 * kGiB);
  EXPECT_LT(k->mem_total, 3.0 * kGiB);
}

TEST(Boot, GrubEatsTheDollarAndMemmapActsAsMem) {
  // The rules themselves are in grub_test.cc; here Boot() takes the kernel's line from them.
  // ("memmap=8G$4G" itself reaches the kernel as "memmap=8GG": grub_test.cc.)
  auto spec = Preset("seed002-workstation");
  spec.cmdline_source = "grub-cfg";
  spec.cmdline = "mem=4G memmap=8G${x}";
  auto k = Boot(spec);
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(k->cmdline, "mem=4G memmap=8G");
  EXPECT_TRUE(k->reservations.empty());
  EXPECT_TRUE(HasMessage(*k, "resmem: written (grub-cfg): mem=4G memmap=8G${x}"));
  EXPECT_TRUE(HasMessage(*k, "'${x}' is an unset GRUB variable"));
  // mem=4G already dropped everything above 4G; memmap=8G removes nothing more.
  EXPECT_EQ(k->usable_ram, 0xa0000 + 3 * kGiB - kMiB);

  spec.cmdline = "memmap=8G\\$4G";  // the escaped form survives GRUB
  k = Boot(spec);
  ASSERT_TRUE(k.ok());
  ASSERT_EQ(k->reservations.size(), 1u);
  EXPECT_EQ(k->reservations[0].start, 4 * kGiB);
  EXPECT_FALSE(HasMessage(*k, "written (grub-cfg)"));  // nothing changed: no stage lines

  spec.cmdline_source = "etc-default-grub";
  spec.cmdline = "GRUB_CMDLINE_LINUX=\"memmap=8G\\\\\\$4G\"";
  k = Boot(spec);
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(k->cmdline, "memmap=8G$4G");
  ASSERT_EQ(k->reservations.size(), 1u);
}

TEST(Boot, MemmapAloneWithoutMemKeepsRamBelowTheLimit) {
  auto spec = Preset("seed002-workstation");
  spec.cmdline = "memmap=8G";  // == mem=8G: RAM [4G, 8G) stays
  auto k = Boot(spec);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(E820BytesOfType(k->e820, 4 * kGiB, UINT64_MAX, E820Type::kRam), 4 * kGiB);
}

TEST(Boot, OtherMemmapFormsAndCommaLists) {
  auto spec = Preset("qemu-q35-5g");
  spec.cmdline = "memmap=64M!0x140000000,16M#0x150000000 memmap=exactmap,640K@0,1G@1M";
  auto k = Boot(spec);
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  // exactmap came later and cleared everything before it.
  ASSERT_EQ(k->e820.size(), 2u);
  EXPECT_EQ(k->usable_ram, 640 * 1024 + kGiB);

  spec.cmdline = "memmap=64M!0x140000000,16M#0x150000000";
  k = Boot(spec);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(E820BytesOfType(k->e820, 0, UINT64_MAX, E820Type::kPram), 64 * kMiB);
  EXPECT_EQ(E820BytesOfType(k->e820, 0, UINT64_MAX, E820Type::kAcpi), 16 * kMiB);
  EXPECT_TRUE(k->reservations.empty());  // only $ makes a driver reservation

  spec.cmdline = "memmap=64M%0x140000000-1+2";
  k = Boot(spec);
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ(E820BytesOfType(k->e820, 0, UINT64_MAX, E820Type::kReserved) -
                E820BytesOfType(SanitizeE820(spec.firmware_e820), 0, UINT64_MAX,
                                E820Type::kReserved),
            64 * kMiB);
}

TEST(Boot, OrderOfEarlyOptionsMatters) {
  auto spec = Preset("qemu-q35-5g");
  spec.cmdline = "memmap=1G@0x200000000 mem=4G";  // mem= later drops the added RAM
  auto k = Boot(spec);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(E820BytesOfType(k->e820, 4 * kGiB, UINT64_MAX, E820Type::kRam), 0u);
  spec.cmdline = "mem=4G memmap=1G@0x200000000";
  k = Boot(spec);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(E820BytesOfType(k->e820, 4 * kGiB, UINT64_MAX, E820Type::kRam), kGiB);
}

TEST(Boot, ReservationOverThePciHoleIsAcceptedAndFlagged) {
  // FACTS.md, QEMU -m 5G: memmap= at 0xc0000000 (PCI hole), 0xbe000000 (half RAM, half hole)
  // are accepted as reserved.
  auto spec = Preset("qemu-q35-5g");
  spec.cmdline = "console=ttyS0 memmap=64M$0xc0000000 memmap=64M$0xbe000000 "
                 "memmap=64M$0x140000000";
  auto k = Boot(spec);
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  ASSERT_EQ(k->reservations.size(), 3u);
  EXPECT_TRUE(k->reservations[0].over_hole);
  EXPECT_FALSE(k->reservations[0].over_ram);
  EXPECT_EQ(k->reservations[0].conflict, "PCI Bus 0000:00");
  EXPECT_TRUE(k->reservations[1].over_hole);
  EXPECT_EQ(k->reservations[1].conflict, "PCI Bus 0000:00");
  EXPECT_TRUE(k->reservations[2].over_ram);
  EXPECT_FALSE(k->reservations[2].over_hole);
  EXPECT_TRUE(HasMessage(*k, "Expanded resource Reserved due to conflict with PCI Bus 0000:00"));
}

TEST(Boot, ReservationOverAFirmwareReservedRangeNamesIt) {
  auto spec = Preset("qemu-q35-2g");
  spec.cmdline = "memmap=16K$0xfeffc000";
  auto k = Boot(spec);
  ASSERT_TRUE(k.ok());
  ASSERT_EQ(k->reservations.size(), 1u);
  EXPECT_TRUE(k->reservations[0].over_hole);
  EXPECT_NE(k->reservations[0].conflict.find("firmware Reserved"), std::string::npos)
      << k->reservations[0].conflict;
}

TEST(Boot, OnlyTheScenariosOwnMistakesAreErrors) {
  auto spec = Preset("seed000-workstation");
  spec.cmdline_source = "lilo";
  spec.cmdline = "quiet";
  EXPECT_FALSE(Boot(spec).ok());
  spec.cmdline_source = "kernel";
  spec.kernel_version = "jammy";
  auto k = Boot(spec);
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.status().message().find("kernel_version 'jammy'"), std::string::npos);
}

TEST(Presets, AllBootAndUnknownNamesFail) {
  for (const auto& name : MachinePresetNames()) {
    auto spec = MachinePreset(name);
    ASSERT_TRUE(spec.ok()) << name;
    EXPECT_EQ(spec->name, name);
    auto k = Boot(*spec);
    ASSERT_TRUE(k.ok()) << name << ": " << k.status().ToString();
    EXPECT_GT(k->mem_total, 0u) << name;
    for (const auto& r : spec->mtrr.variable) {
      EXPECT_EQ(r.size & (r.size - 1), 0u) << name << ": MTRR size not a power of two";
      EXPECT_EQ(r.base % r.size, 0u) << name << ": MTRR base not aligned to its size";
    }
  }
  auto bad = MachinePreset("seed999");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("seed000-workstation"), std::string::npos);
}

TEST(Presets, H100HostHas128GiBAndMeasuredSpeeds) {
  auto spec = Preset("h100-host");
  uint64_t ram = 0;
  for (const auto& e : spec.firmware_e820)
    if (e.type == E820Type::kRam) ram += e.end - e.start;
  EXPECT_NEAR(static_cast<double>(ram), 128.0 * kGiB, 1.0 * kMiB);
  EXPECT_DOUBLE_EQ(spec.perf.MemcpyBytesPerSecond(1), 11e9);
  EXPECT_DOUBLE_EQ(spec.perf.MemcpyBytesPerSecond(2), 17.5e9);
  EXPECT_DOUBLE_EQ(spec.perf.MemcpyBytesPerSecond(6), 32e9);
  EXPECT_DOUBLE_EQ(spec.perf.MemcpyBytesPerSecond(64), 52e9);
}

}  // namespace
}  // namespace resmem::sim
