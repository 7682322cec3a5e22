// Render (mock/machine) -> parse (backends/platform) gives the model back, for every preset
// and for reservations that collide with the PCI hole.
#include <gtest/gtest.h>

#include "backends/platform/proc_parsers.h"
#include "mock/machine/cmdline.h"
#include "mock/machine/e820_table.h"
#include "mock/machine/machine.h"

namespace resmem {
namespace {

using sim::E820Type;

void CheckRoundTrip(const sim::MachineSpec& spec) {
  SCOPED_TRACE(spec.name + ": " + spec.cmdline);
  auto booted = sim::Boot(spec);
  ASSERT_TRUE(booted.ok()) << booted.status().ToString();
  const auto& k = *booted;

  // /sys/firmware/memmap == the firmware e820.
  auto fw = ParseFirmwareMemmap(sim::RenderFirmwareMemmap(spec));
  ASSERT_TRUE(fw.ok()) << fw.status().ToString();
  const auto firmware = sim::SanitizeE820(spec.firmware_e820);
  ASSERT_EQ(fw->size(), firmware.size());
  for (size_t i = 0; i < firmware.size(); ++i) {
    EXPECT_EQ((*fw)[i].start, firmware[i].start);
    EXPECT_EQ((*fw)[i].end, firmware[i].end);
    EXPECT_EQ((*fw)[i].type, sim::E820TypeName(firmware[i].type));
  }

  // /proc/iomem: the booted RAM entries are exactly the top-level System RAM lines, and every
  // memmap$ reservation lies inside a Reserved line.
  auto io = ParseIomem(sim::RenderIomem(spec, k));
  ASSERT_TRUE(io.ok()) << io.status().ToString();
  std::vector<std::pair<uint64_t, uint64_t>> ram_lines, ram_model;
  for (const auto& e : *io)
    if (e.depth == 0 && e.name == "System RAM") ram_lines.push_back({e.start, e.end});
  for (const auto& e : k.e820)
    if (e.type == E820Type::kRam) ram_model.push_back({e.start, e.end});
  EXPECT_EQ(ram_lines, ram_model);
  for (const auto& r : k.reservations) {
    bool covered = false;
    for (const auto& e : *io)
      covered = covered || (e.name == "Reserved" && e.start <= r.start && r.end <= e.end);
    EXPECT_TRUE(covered) << std::hex << r.start;
  }
  for (const auto& m : spec.mmio) {
    bool found = false;
    for (const auto& e : *io) found = found || (e.name == m.name && e.start == m.start &&
                                                e.end == m.end);
    EXPECT_TRUE(found) << m.name;
  }

  // /proc/mtrr == the variable MTRRs.
  auto mtrr = ParseMtrr(sim::RenderMtrr(spec));
  ASSERT_TRUE(mtrr.ok()) << mtrr.status().ToString();
  ASSERT_EQ(mtrr->size(), spec.mtrr.variable.size());
  for (size_t i = 0; i < mtrr->size(); ++i) {
    EXPECT_EQ((*mtrr)[i].reg, static_cast<int>(i));
    EXPECT_EQ((*mtrr)[i].base, spec.mtrr.variable[i].base);
    EXPECT_EQ((*mtrr)[i].size, spec.mtrr.variable[i].size);
    EXPECT_EQ((*mtrr)[i].type, spec.mtrr.variable[i].type);
  }

  auto total = ParseMeminfoTotal(sim::RenderMeminfo(k));
  ASSERT_TRUE(total.ok());
  EXPECT_EQ(*total, k.mem_total / 1024 * 1024);
  auto bits = ParsePhysAddressBits(sim::RenderCpuinfo(spec));
  ASSERT_TRUE(bits.ok());
  EXPECT_EQ(*bits, spec.phys_addr_bits);

  const auto opts = ParseCmdlineOptions(k.cmdline);
  const auto model = sim::SplitKernelCmdline(k.cmdline);
  ASSERT_EQ(opts.size(), model.size());
  for (size_t i = 0; i < opts.size(); ++i) {
    EXPECT_EQ(opts[i].key, model[i].key);
    EXPECT_EQ(opts[i].value, model[i].value);
  }
}

TEST(RoundTrip, EveryPreset) {
  for (const auto& name : sim::MachinePresetNames()) CheckRoundTrip(sim::MachinePreset(name).value());
}

TEST(RoundTrip, ReservationsOverHolesAndRam) {
  auto spec = sim::MachinePreset("qemu-q35-5g").value();
  for (const char* line : {"memmap=64M$0xc0000000", "memmap=64M$0xbe000000",
                           "memmap=64M$0xfc000000", "memmap=16K$0xfeffc000",
                           "memmap=64M$0x140000000", "mem=4G memmap=64M$0x40000000"}) {
    spec.cmdline = std::string("console=ttyS0 ") + line;
    CheckRoundTrip(spec);
  }
}

}  // namespace
}  // namespace resmem
