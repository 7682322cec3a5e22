// The parsers on samples in the real files' formats, and on bad input.
#include <gtest/gtest.h>

#include "backends/platform/proc_parsers.h"

namespace resmem {
namespace {

// /proc/iomem as a QEMU guest (default pc machine, -m 5G, memmap=64M$0x140000000) prints it
// (the layout FACTS.md describes), including kernel-internal children.
constexpr const char* kQemuIomem =
    "00000000-00000fff : Reserved\n"
    "00001000-0009fbff : System RAM\n"
    "0009fc00-0009ffff : Reserved\n"
    "000a0000-000bffff : PCI Bus 0000:00\n"
    "000c0000-000c99ff : Video ROM\n"
    "000f0000-000fffff : Reserved\n"
    "  000f0000-000fffff : System ROM\n"
    "00100000-bffdffff : System RAM\n"
    "  5a000000-5ae00fff : Kernel code\n"
    "bffe0000-bfffffff : Reserved\n"
    "c0000000-febfffff : PCI Bus 0000:00\n"
    "  fd000000-fdffffff : 0000:00:02.0\n"
    "fec00000-fec003ff : IOAPIC 0\n"
    "fed00000-fed003ff : HPET 0\n"
    "  fed00000-fed003ff : PNP0103:00\n"
    "fee00000-fee00fff : Local APIC\n"
    "fffc0000-ffffffff : Reserved\n"
    "100000000-13fffffff : System RAM\n"
    "140000000-143ffffff : Reserved\n"
    "144000000-1bfffffff : System RAM\n";

TEST(ParseIomem, RealLayoutWithNesting) {
  auto r = ParseIomem(kQemuIomem);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 20u);
  EXPECT_EQ((*r)[6].depth, 1);
  EXPECT_EQ((*r)[6].name, "System ROM");
  EXPECT_EQ((*r)[7].start, 0x100000u);
  EXPECT_EQ((*r)[7].end, 0xbffe0000u);  // exclusive
  EXPECT_EQ((*r)[18].name, "Reserved");
  EXPECT_EQ((*r)[18].start, 0x140000000u);
  EXPECT_EQ((*r)[18].end, 0x144000000u);
  EXPECT_EQ((*r)[18].depth, 0);
}

TEST(ParseIomem, HiddenAddressesAskForRoot) {
  auto r = ParseIomem("00000000-00000000 : Reserved\n00000000-00000000 : System RAM\n"
                      "  00000000-00000000 : Kernel code\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), kFailedPrecondition);
  EXPECT_NE(r.status().message().find("root"), std::string::npos);
}

TEST(ParseIomem, BadLinesAreNamed) {
  for (const char* bad : {"00100000 : System RAM\n", "zz-ff : x\n", "00000000-0000ffff System\n",
                          "    00000000-00000fff : too deep\n", "00002000-00001000 : backwards\n",
                          " 00000000-00000fff : odd indent\n"}) {
    auto r = ParseIomem(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("line 1"), std::string::npos) << r.status().message();
  }
}

TEST(ParseMtrr, AllTypesAndUnits) {
  auto r = ParseMtrr(
      "reg00: base=0x000000000 (    0MB), size=131072MB, count=1: write-back\n"
      "reg01: base=0x0c0000000 ( 3072MB), size= 1024MB, count=1: uncachable\n"
      "reg02: base=0x0d0000000 ( 3328MB), size=   64KB, count=2: write-combining\n"
      "reg03: base=0x0e0000000 ( 3584MB), size=  128MB, count=1: write-through\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ((*r)[0].size, 128ull << 30);
  EXPECT_EQ((*r)[0].type, MemoryType::kWriteBack);
  EXPECT_EQ((*r)[1].base, 0xc0000000u);
  EXPECT_EQ((*r)[1].type, MemoryType::kUncached);
  EXPECT_EQ((*r)[2].size, 64u << 10);
  EXPECT_EQ((*r)[2].count, 2);
  EXPECT_EQ((*r)[2].type, MemoryType::kWriteCombining);
  EXPECT_EQ((*r)[3].type, MemoryType::kUnknown);
  EXPECT_EQ((*r)[3].type_name, "write-through");
  EXPECT_FALSE(ParseMtrr("reg00: base=0xZZ (0MB), size=1MB, count=1: write-back\n").ok());
  EXPECT_FALSE(ParseMtrr("reg00: base=0x0 (0MB), size=1GB, count=1: write-back\n").ok());
}

TEST(ParseFirmwareMemmap, LinesAndErrors) {
  auto r = ParseFirmwareMemmap(
      "0x0000000000000000 0x000000000009fbff System RAM\n"
      "0x00000000feffc000 0x00000000feffffff Reserved\n"
      "0x100000000 0x13fffffff System RAM\n");  // unpadded, as the sysfs files hold them
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].end, 0x9fc00u);
  EXPECT_EQ((*r)[1].type, "Reserved");
  EXPECT_EQ((*r)[2].start, 0x100000000u);
  EXPECT_FALSE(ParseFirmwareMemmap("0x0 System RAM\n").ok());
  EXPECT_FALSE(ParseFirmwareMemmap("0x10 0x0 Reserved\n").ok());
}

TEST(ParseMeminfoTotal, BytesOrNamedError) {
  auto r = ParseMeminfoTotal("MemTotal:        3062532 kB\nMemFree:  100 kB\n");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 3062532ull * 1024);
  EXPECT_EQ(ParseMeminfoTotal("MemFree: 1 kB\n").status().code(), kNotFound);
  EXPECT_EQ(ParseMeminfoTotal("MemTotal: lots\n").status().code(), kInvalidArgument);
}

TEST(ParsePhysAddressBits, FirstCpu) {
  auto r = ParsePhysAddressBits(
      "processor\t: 0\nflags\t\t: fpu\naddress sizes\t: 46 bits physical, 57 bits virtual\n\n"
      "processor\t: 1\naddress sizes\t: 46 bits physical, 57 bits virtual\n");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 46);
  EXPECT_EQ(ParsePhysAddressBits("processor\t: 0\n").status().code(), kNotFound);
  EXPECT_FALSE(ParsePhysAddressBits("address sizes\t: many\n").ok());
}

TEST(ParseCmdlineOptions, KernelSplitting) {
  auto opts = ParseCmdlineOptions(
      "BOOT_IMAGE=/vmlinuz ro quiet mem=4G memmap=188G$4G dyndbg=\"file x.c +p\"\n");
  ASSERT_EQ(opts.size(), 6u);
  EXPECT_EQ(opts[1].key, "ro");
  EXPECT_FALSE(opts[1].has_value);
  EXPECT_EQ(opts[4].key, "memmap");
  EXPECT_EQ(opts[4].value, "188G$4G");
  EXPECT_EQ(opts[5].value, "file x.c +p");
  EXPECT_TRUE(ParseCmdlineOptions("  \n").empty());
}

TEST(IommuParsers, UnitsWithTheirDevices) {
  auto u = ParseIommuUnits("dmar0: 0000:00:02.0 0000:00:10.0\ndmar1:\n");
  ASSERT_TRUE(u.ok()) << u.status().message();
  ASSERT_EQ(u->size(), 2u);
  EXPECT_EQ((*u)[0].name, "dmar0");
  EXPECT_EQ((*u)[0].devices, (std::vector<std::string>{"0000:00:02.0", "0000:00:10.0"}));
  EXPECT_EQ((*u)[1].name, "dmar1");
  EXPECT_TRUE((*u)[1].devices.empty());
  // An empty folder: IOMMU support, no unit on.
  EXPECT_TRUE(ParseIommuUnits("").ok());
  EXPECT_TRUE(ParseIommuUnits("")->empty());
  // A device name alone is no unit line.
  auto bad = ParseIommuUnits("0000:00:02.0\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'0000:00:02.0'"), std::string::npos);
  EXPECT_FALSE(ParseIommuUnits("dmar 0: x\n").ok());
  EXPECT_FALSE(ParseIommuUnits("dm\tar0: x\n").ok());  // the fuzz target's finding
  EXPECT_FALSE(ParseIommuUnits(std::string("dmar\x01: x\n")).ok());
}

TEST(IommuParsers, GroupsTypesAndDevices) {
  auto g = ParseIommuGroups("0 DMA-FQ 0000:00:00.0\n1 identity 0000:00:02.0 0000:00:02.1\n"
                            "7 DMA 0000:00:10.0\n8 blocked\n9 unmanaged 0000:01:00.0\n"
                            "10 something-new 0000:02:00.0\n");
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->size(), 6u);
  EXPECT_EQ((*g)[0].type, IommuDomainType::kDmaFq);
  EXPECT_EQ((*g)[1].type, IommuDomainType::kIdentity);
  EXPECT_EQ((*g)[1].devices.size(), 2u);
  EXPECT_EQ((*g)[2].id, 7);
  EXPECT_EQ((*g)[2].type, IommuDomainType::kDma);
  EXPECT_EQ((*g)[3].type, IommuDomainType::kBlocked);
  EXPECT_TRUE((*g)[3].devices.empty());
  EXPECT_EQ((*g)[4].type, IommuDomainType::kUnmanaged);
  EXPECT_EQ((*g)[5].type, IommuDomainType::kUnknown);
  EXPECT_EQ((*g)[5].type_word, "something-new");
  EXPECT_TRUE(IommuDomainTranslates((*g)[0].type));
  EXPECT_TRUE(IommuDomainTranslates((*g)[2].type));
  EXPECT_FALSE(IommuDomainTranslates((*g)[1].type));
  EXPECT_FALSE(IommuDomainTranslates((*g)[4].type));
  EXPECT_FALSE(ParseIommuGroups("x DMA 0000:00:00.0\n").ok());
  EXPECT_FALSE(ParseIommuGroups("3\n").ok());
  EXPECT_FALSE(ParseIommuGroups("-1 DMA\n").ok());
}

TEST(IommuParsers, AcpiTablesAndCpuVendor) {
  EXPECT_EQ(ParseAcpiTableNames("APIC\nDMAR\n\nDSDT\n"),
            (std::vector<std::string>{"APIC", "DMAR", "DSDT"}));
  EXPECT_EQ(ParseCpuVendor("processor\t: 0\nvendor_id\t: AuthenticAMD\nvendor_id\t: x\n"),
            "AuthenticAMD");
  EXPECT_EQ(ParseCpuVendor("processor\t: 0\n"), "");
}

}  // namespace
}  // namespace resmem
