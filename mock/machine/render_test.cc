// The rendered /proc texts in the kernel's formats. (Parsing them back: backends/platform.)
#include <gtest/gtest.h>

#include "mock/machine/machine.h"

namespace resmem::sim {
namespace {

bool Contains(const std::string& text, const std::string& line) {
  return text.find(line) != std::string::npos;
}

TEST(RenderIomem, Seed000NestsLikeTheKernel) {
  const auto spec = MachinePreset("seed000-workstation").value();
  const auto k = Boot(spec).value();
  const std::string io = RenderIomem(spec, k);
  EXPECT_TRUE(Contains(io, "00000000-0009fbff : System RAM\n")) << io;
  EXPECT_TRUE(Contains(io, "00100000-bfffffff : System RAM\n")) << io;
  EXPECT_TRUE(Contains(io, "c0000000-febfffff : PCI Bus 0000:00\n")) << io;
  EXPECT_TRUE(Contains(io, "fec00000-fec00fff : Reserved\n  fec00000-fec003ff : IOAPIC 0\n"))
      << io;
  EXPECT_TRUE(Contains(io, "000f0000-000fffff : Reserved\n  000f0000-000fffff : System ROM\n"))
      << io;
  // The reservation merged with the adjacent firmware entry at 0xff000000 (sanitize), which
  // holds the BIOS ROM.
  EXPECT_TRUE(Contains(io, "ff000000-2fffffffff : Reserved\n  ff000000-ffffffff : BIOS ROM\n"))
      << io;
  EXPECT_FALSE(Contains(io, "2fffffffff : System RAM")) << "mem=4G dropped RAM above 4G";
}

TEST(RenderIomem, ReservationStraddlingThePciWindowIsExpandedAroundIt) {
  auto spec = MachinePreset("qemu-q35-5g").value();
  spec.cmdline = "memmap=64M$0xbe000000";
  const auto k = Boot(spec).value();
  const std::string io = RenderIomem(spec, k);
  EXPECT_TRUE(Contains(io, "00100000-bdffffff : System RAM\n")) << io;
  EXPECT_TRUE(Contains(io, "be000000-febfffff : Reserved\n  c0000000-febfffff : PCI Bus 0000:00\n"))
      << io;
}

TEST(RenderIomem, ReservationInsideThePciWindowNests) {
  auto spec = MachinePreset("qemu-q35-5g").value();
  spec.cmdline = "memmap=64M$0xc0000000";
  const std::string io = RenderIomem(spec, Boot(spec).value());
  EXPECT_TRUE(Contains(io, "c0000000-febfffff : PCI Bus 0000:00\n  c0000000-c3ffffff : Reserved\n"))
      << io;
}

TEST(RenderMtrr, KernelFormat) {
  const auto spec = MachinePreset("seed000-workstation").value();
  EXPECT_EQ(RenderMtrr(spec),
            "reg00: base=0x000000000 (    0MB), size=131072MB, count=1: write-back\n"
            "reg01: base=0x0c0000000 ( 3072MB), size= 1024MB, count=1: uncachable\n");
  MachineSpec small;
  small.mtrr.variable = {{0xd0000000, 64 << 10, MemoryType::kWriteCombining, ""}};
  EXPECT_EQ(RenderMtrr(small),
            "reg00: base=0x0d0000000 ( 3328MB), size=   64KB, count=1: write-combining\n");
}

TEST(RenderFirmwareMemmap, IsTheMapBeforeMemmapEdits) {
  const auto spec = MachinePreset("seed000-workstation").value();
  const std::string fw = RenderFirmwareMemmap(spec);
  EXPECT_TRUE(Contains(fw, "0x0000000000000000 0x000000000009fbff System RAM\n")) << fw;
  EXPECT_TRUE(Contains(fw, "0x0000000100000000 0x000000303fffffff System RAM\n")) << fw;
}

TEST(RenderMeminfoAndCpuinfo, Formats) {
  const auto spec = MachinePreset("seed000-workstation").value();
  const auto k = Boot(spec).value();
  EXPECT_EQ(RenderMeminfo(k).substr(0, 28), "MemTotal:        3062532 kB\n");
  EXPECT_TRUE(Contains(RenderCpuinfo(spec), "address sizes\t: 40 bits physical, 48 bits virtual\n"));
}

}  // namespace
}  // namespace resmem::sim
