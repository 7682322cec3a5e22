// The real Platform on this machine and on a fake tree of fact files.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>

#include "backends/platform/host_platform.h"
#include "backends/platform/module_signature.h"
#include "backends/platform/proc_parsers.h"

namespace resmem {
namespace {

std::string TempRoot() {
  const char* t = std::getenv("TEST_TMPDIR");
  return std::string(t ? t : "/tmp") + "/fakeroot";
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

TEST(HostPlatform, FirmwareMemmapIsRenderedFromEntryDirectoriesInNumericOrder) {
  const std::string root = TempRoot();
  const std::string dir = root + "/sys/firmware/memmap";
  ASSERT_EQ(std::system(("mkdir -p " + dir).c_str()), 0);
  // Directory 10 sorts before 2 as text; the platform must order numerically.
  const char* entries[][3] = {{"0x0", "0x9fbff", "System RAM"},
                              {"0x9fc00", "0x9ffff", "Reserved"},
                              {"0x100000", "0xbfffffff", "System RAM"}};
  const int names[] = {0, 2, 10};
  for (int i = 0; i < 3; ++i) {
    const std::string d = dir + "/" + std::to_string(names[i]);
    ASSERT_EQ(mkdir(d.c_str(), 0755) == 0 || errno == EEXIST, true);
    WriteFile(d + "/start", std::string(entries[i][0]) + "\n");
    WriteFile(d + "/end", std::string(entries[i][1]) + "\n");
    WriteFile(d + "/type", std::string(entries[i][2]) + "\n");
  }
  auto platform = MakeHostPlatform(root);
  auto text = platform->ReadSource("/sys/firmware/memmap");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text,
            "0x0000000000000000 0x000000000009fbff System RAM\n"
            "0x000000000009fc00 0x000000000009ffff Reserved\n"
            "0x0000000000100000 0x00000000bfffffff System RAM\n");
  auto parsed = ParseFirmwareMemmap(*text);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->back().end, 0xc0000000u);
}

// The IOMMU folders as sysfs lays them out: units are links to the unit's device, each devices/
// entry a link to a PCI device; groups are numbered folders with a type file.
TEST(HostPlatform, IommuFoldersAreRenderedUnitByUnitAndGroupByGroup) {
  const std::string root = TempRoot() + "/iommu";
  const std::string sh =
      "set -e; r=" + root + "; rm -rf $r; mkdir -p $r/sys/devices/pci0000:00/0000:00:02.0 "
      "$r/sys/devices/pci0000:00/0000:00:10.0 $r/sys/devices/virtual/iommu/dmar0/devices "
      "$r/sys/devices/virtual/iommu/dmar1 $r/sys/class/iommu $r/sys/firmware/acpi/tables; "
      "ln -s ../../devices/virtual/iommu/dmar0 $r/sys/class/iommu/dmar0; "
      "ln -s ../../devices/virtual/iommu/dmar1 $r/sys/class/iommu/dmar1; "
      "for d in 0000:00:02.0 0000:00:10.0; do ln -s ../../../../pci0000:00/$d "
      "$r/sys/devices/virtual/iommu/dmar0/devices/$d; done; "
      "for g in 0 2 10; do mkdir -p $r/sys/kernel/iommu_groups/$g/devices; done; "
      "echo DMA-FQ > $r/sys/kernel/iommu_groups/0/type; echo identity > $r/sys/kernel/iommu_groups/10/type; "
      "ln -s ../../../../devices/pci0000:00/0000:00:02.0 $r/sys/kernel/iommu_groups/0/devices/0000:00:02.0; "
      "ln -s ../../../../devices/pci0000:00/0000:00:10.0 $r/sys/kernel/iommu_groups/10/devices/0000:00:10.0; "
      "touch $r/sys/firmware/acpi/tables/DMAR $r/sys/firmware/acpi/tables/APIC; "
      "chmod 0400 $r/sys/firmware/acpi/tables/DMAR";
  ASSERT_EQ(std::system(sh.c_str()), 0);
  auto platform = MakeHostPlatform(root);
  auto units = platform->ReadSource("/sys/class/iommu");
  ASSERT_TRUE(units.ok()) << units.status().ToString();
  EXPECT_EQ(*units, "dmar0: 0000:00:02.0 0000:00:10.0\ndmar1:\n");
  ASSERT_TRUE(ParseIommuUnits(*units).ok());
  // Numeric order (10 after 2); group 2 has no type file (a kernel before 5.11): "unknown".
  auto groups = platform->ReadSource("/sys/kernel/iommu_groups");
  ASSERT_TRUE(groups.ok()) << groups.status().ToString();
  EXPECT_EQ(*groups, "0 DMA-FQ 0000:00:02.0\n2 unknown\n10 identity 0000:00:10.0\n");
  auto parsed = ParseIommuGroups(*groups);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->back().type, IommuDomainType::kIdentity);
  auto tables = platform->ReadSource("/sys/firmware/acpi/tables");
  ASSERT_TRUE(tables.ok());
  EXPECT_EQ(*tables, "APIC\nDMAR\n");
  // No IOMMU support in the kernel: the folder is absent, an errno status that says what that means.
  auto none = MakeHostPlatform(TempRoot() + "/nothing-here")->ReadSource("/sys/class/iommu");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), ENOENT);
  EXPECT_NE(none.status().message().find("CONFIG_IOMMU_API"), std::string::npos);
}

TEST(HostPlatform, MissingSourceIsAnErrnoStatus) {
  auto platform = MakeHostPlatform(TempRoot() + "/nothing-here");
  auto r = platform->ReadSource("/proc/mtrr");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().space(), ErrorSpace::kErrno);
  EXPECT_EQ(r.status().code(), ENOENT);
  EXPECT_FALSE(platform->ReadSource("proc/iomem").ok());  // relative path
}

TEST(HostPlatform, ReadsThisMachinesProcFiles) {
  auto platform = MakeHostPlatform();
  auto meminfo = platform->ReadSource("/proc/meminfo");
  ASSERT_TRUE(meminfo.ok()) << meminfo.status().ToString();  // /proc exists on any Linux
  auto total = ParseMeminfoTotal(*meminfo);
  ASSERT_TRUE(total.ok()) << total.status().ToString();
  EXPECT_GT(*total, 64ull << 20);
  auto cmdline = platform->ReadSource("/proc/cmdline");
  ASSERT_TRUE(cmdline.ok());
  auto cpuinfo = platform->ReadSource("/proc/cpuinfo");
  ASSERT_TRUE(cpuinfo.ok());
  auto bits = ParsePhysAddressBits(*cpuinfo);
  if (!bits.ok()) {
    GTEST_SKIP() << "this CPU's /proc/cpuinfo has no 'address sizes' line: "
                 << bits.status().ToString();
  }
  EXPECT_GE(*bits, 36);
}

// The parsers must accept this machine's own files wherever it has them.
TEST(HostPlatform, ParsersAcceptThisMachinesRealFiles) {
  auto platform = MakeHostPlatform();
  int parsed = 0;
  if (auto io = platform->ReadSource("/proc/iomem"); io.ok()) {
    auto r = ParseIomem(*io);
    EXPECT_TRUE(r.ok() || r.status().code() == kFailedPrecondition) << r.status().ToString();
    ++parsed;
  }
  if (auto mtrr = platform->ReadSource("/proc/mtrr"); mtrr.ok()) {
    auto r = ParseMtrr(*mtrr);
    EXPECT_TRUE(r.ok()) << r.status().ToString() << "\n" << *mtrr;
    ++parsed;
  }
  if (auto fw = platform->ReadSource("/sys/firmware/memmap"); fw.ok()) {
    auto r = ParseFirmwareMemmap(*fw);
    EXPECT_TRUE(r.ok()) << r.status().ToString() << "\n" << *fw;
    ++parsed;
  }
  if (parsed == 0) GTEST_SKIP() << "none of /proc/iomem, /proc/mtrr, /sys/firmware/memmap here";
}

// A fake /lib/modules tree as dkms leaves it: the module under updates/dkms/ (compressed as the
// kernel's own modules are on 6.12) and an older copy elsewhere.
std::string ModuleTree(const std::string& name, const std::string& dkms_file) {
  const std::string root = TempRoot() + "/" + name;
  const std::string fx = "backends/platform/testdata/";
  const std::string sh = "set -e; r=" + root + "; rm -rf $r; mkdir -p $r/proc/sys/kernel "
                         "$r/lib/modules/6.1.0-test/updates/dkms $r/lib/modules/6.1.0-test/extra; "
                         "echo 6.1.0-test > $r/proc/sys/kernel/osrelease; "
                         "cp " + fx + dkms_file + " $r/lib/modules/6.1.0-test/updates/dkms/resmem." +
                         dkms_file.substr(dkms_file.find(".ko") + 1) + "; "
                         "cp " + fx + "module_body.ko $r/lib/modules/6.1.0-test/extra/resmem.ko; "
                         "ln -s /usr $r/lib/modules/6.1.0-test/build";
  EXPECT_EQ(std::system(sh.c_str()), 0) << sh;
  return root;
}

TEST(HostPlatform, ModuleSignatureOfTheInstalledModuleInEachCompression) {
  for (const char* fixture : {"signed_issuer.ko", "signed_issuer.ko.xz", "signed_issuer.ko.zst",
                              "signed_issuer.ko.gz"}) {
    const std::string root = ModuleTree("modules", fixture);
    auto text = MakeHostPlatform(root)->ReadSource("module-signature:resmem");
    ASSERT_TRUE(text.ok()) << fixture << ": " << text.status().ToString();
    auto facts = ParseModuleSignatureFacts(*text);
    ASSERT_TRUE(facts.ok()) << facts.status().message() << "\n" << *text;
    const std::string suffix = std::string(fixture).substr(std::string(fixture).find(".ko"));
    EXPECT_EQ(facts->file, "/lib/modules/6.1.0-test/updates/dkms/resmem" + suffix);
    EXPECT_EQ(facts->compression, suffix == ".ko" ? "none" : suffix == ".ko.xz" ? "xz"
                                  : suffix == ".ko.zst" ? "zstd" : "gzip");
    EXPECT_EQ(facts->state, "yes") << *text;
    EXPECT_EQ(facts->signature.signer, "DKMS module signing key");
    EXPECT_EQ(facts->signature.hash, "sha256");
    // updates/ first (depmod's search order); the other copy is named too.
    EXPECT_EQ(facts->also, std::vector<std::string>{"/lib/modules/6.1.0-test/extra/resmem.ko"});
  }
}

TEST(HostPlatform, ModuleSignatureOfAnExplicitFileAndOfAnUnsignedOne) {
  const std::string root = ModuleTree("explicit", "signed_keyid.ko");
  auto p = MakeHostPlatform(root);
  auto unsigned_text = p->ReadSource("module-signature:/lib/modules/6.1.0-test/extra/resmem.ko");
  ASSERT_TRUE(unsigned_text.ok()) << unsigned_text.status().ToString();
  EXPECT_EQ(*unsigned_text, "file: /lib/modules/6.1.0-test/extra/resmem.ko\ncompression: none\nsigned: no\n");
  auto keyid = ParseModuleSignatureFacts(*p->ReadSource("module-signature:resmem"));
  ASSERT_TRUE(keyid.ok());
  EXPECT_EQ(keyid->signature.signer, "");
  EXPECT_EQ(keyid->signature.key_id_hex.size(), 40u);
  // A damaged signature is a fact about the file, not a failure to read it.
  ASSERT_EQ(std::system(("printf 'body12345678901234567890\\000\\000\\002\\000\\000\\000\\000\\000\\000\\000\\000\\010"
                         "~Module signature appended~\\n' > " + root + "/bad.ko").c_str()), 0);
  auto bad = ParseModuleSignatureFacts(*p->ReadSource("module-signature:/bad.ko"));
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->state, "malformed");
  EXPECT_NE(bad->error.find("-EBADMSG"), std::string::npos) << bad->error;
  EXPECT_FALSE(p->ReadSource("module-signature:sub/dir").ok());
  EXPECT_FALSE(p->ReadSource("module-signature:").ok());
}

TEST(HostPlatform, ModuleSignatureSaysWhatIsMissing) {
  const std::string root = ModuleTree("missing", "signed_issuer.ko.xz");
  // No xz where the platform looks: the tool and its package are named.
  auto no_tool = MakeHostPlatform(root, "/nonexistent")->ReadSource("module-signature:resmem");
  ASSERT_FALSE(no_tool.ok());
  EXPECT_EQ(no_tool.status().code(), kUnavailable);
  EXPECT_NE(no_tool.status().message().find("`xz` is not installed"), std::string::npos)
      << no_tool.status().message();
  EXPECT_NE(no_tool.status().message().find("apt-get install xz-utils"), std::string::npos);
  // Not installed for this kernel.
  auto none = MakeHostPlatform(root)->ReadSource("module-signature:nvidia");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), ENOENT);
  EXPECT_NE(none.status().message().find("nvidia.ko is not installed for kernel 6.1.0-test"),
            std::string::npos) << none.status().message();
  // A file that is not what its suffix says: the tool's failure, not garbage.
  ASSERT_EQ(std::system(("echo garbage > " + root + "/x.ko.xz").c_str()), 0);
  auto damaged = MakeHostPlatform(root)->ReadSource("module-signature:/x.ko.xz");
  ASSERT_FALSE(damaged.ok());
  EXPECT_NE(damaged.status().message().find("xz -dc"), std::string::npos) << damaged.status().message();
  EXPECT_NE(damaged.status().message().find("exit status"), std::string::npos);
}

TEST(HostPlatform, PageableMemoryAndCopy) {
  auto platform = MakeHostPlatform();
  EXPECT_FALSE(platform->clock().is_virtual());
  EXPECT_FALSE(platform->AllocPageable(0).ok());
  auto a = platform->AllocPageable(1 << 20);
  auto b = platform->AllocPageable(1 << 20);
  ASSERT_TRUE(a.ok() && b.ok());
  const auto& facts = (*a)->facts();
  EXPECT_EQ(facts.backing, Backing::kAnonymous);
  EXPECT_EQ(facts.memory_type, MemoryType::kWriteBack);
  EXPECT_EQ(facts.length, 1u << 20);
  EXPECT_NE((*a)->address(), 0u);
  for (uint32_t i = 0; i < (1 << 20) / 4; ++i)
    ASSERT_TRUE((*a)->Write(i * 4, &i, 4).ok());
  auto secs = platform->CopyHost(**b, 4096, **a, 0, (1 << 20) - 4096);
  ASSERT_TRUE(secs.ok()) << secs.status().ToString();
  EXPECT_GE(*secs, 0.0);
  uint32_t v = 0;
  ASSERT_TRUE((*b)->Read(4096 + 4 * 1000, &v, 4).ok());
  EXPECT_EQ(v, 1000u);
  EXPECT_FALSE(platform->CopyHost(**b, 1, **a, 0, 1 << 20).ok());  // past the end
  EXPECT_FALSE((*a)->Read((1 << 20) - 2, &v, 4).ok());
}

}  // namespace
}  // namespace resmem
