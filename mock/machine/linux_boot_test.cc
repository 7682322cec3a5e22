// Boot() against Linux's own rules, one test per rule, each citing the kernel source it comes
// from (versions read are listed in linux_rules.h), and against real boot logs (excerpts of the
// corpus, each naming its source).
#include <gtest/gtest.h>

#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "mock/machine/cmdline.h"
#include "mock/machine/e820_table.h"
#include "mock/machine/linux_rules.h"
#include "mock/machine/machine.h"

namespace resmem::sim {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;
using Action = MemoryOptionOutcome::Action;

// A small BIOS machine: 640K, reserved, RAM [1M, 3G), hole, reserved, RAM [4G, 8G).
MachineSpec SmallMachine(const std::string& version, const std::string& cmdline) {
  MachineSpec spec;
  spec.name = "custom";
  spec.kernel_version = version;
  spec.cmdline = cmdline;
  spec.firmware_e820 = {{0, 0x9fc00, E820Type::kRam},
                        {0x9fc00, 0xa0000, E820Type::kReserved},
                        {0xf0000, 0x100000, E820Type::kReserved},
                        {0x100000, 3 * kGiB, E820Type::kRam},
                        {0xfffc0000, 4 * kGiB, E820Type::kReserved},
                        {4 * kGiB, 8 * kGiB, E820Type::kRam}};
  return spec;
}

BootedKernel MustBoot(const MachineSpec& spec) {
  auto k = Boot(spec);
  EXPECT_TRUE(k.ok()) << k.status().ToString();
  return k.ok() ? *k : BootedKernel{};
}

bool Has(const std::vector<std::string>& lines, const std::string& line) {
  for (const auto& l : lines)
    if (l == line) return true;
  return false;
}

int Count(const std::vector<std::string>& lines, const std::string& needle) {
  int n = 0;
  for (const auto& l : lines)
    if (l.find(needle) != std::string::npos) ++n;
  return n;
}

std::vector<std::string> UserLines(const BootedKernel& k) {
  std::vector<std::string> out;
  bool on = false;
  for (const auto& l : k.dmesg) {
    if (l.find("user-defined physical RAM map:") != std::string::npos) on = true;
    if (on) out.push_back(l);
  }
  return out;
}

bool HasIssue(const MemoryOptionOutcome& o, OptionProblem kind) {
  for (const auto& i : o.issues)
    if (i.kind == kind) return true;
  return false;
}

uint64_t Bytes(const BootedKernel& k, E820Type t) {
  uint64_t b = 0;
  for (const auto& e : k.e820)
    if (e.type == t) b += e.end - e.start;
  return b;
}

// ---- i386 before 2.6.27: limit_regions, no sanitize, the 2.4 mem= spellings ----

// The firmware table of corpus log 01 (IBM NF 6000R, 2.6.9 i386) without its low entries:
// RAM [1M, 0xe7ff9380), ACPI data above it, reserved islands up to 4G.
MachineSpec I386Machine(const std::string& version, const std::string& cmdline) {
  MachineSpec spec = SmallMachine(version, cmdline);
  spec.arch = "i386";
  spec.firmware_e820 = {{0, 0x9dc00, E820Type::kRam},
                        {0x100000, 0xe7ff9380, E820Type::kRam},
                        {0xe7ff9380, 0xe8000000, E820Type::kAcpi},
                        {0xfec00000, 0xfec01000, E820Type::kReserved},
                        {0xfff80000, 4 * kGiB, E820Type::kReserved}};
  return spec;
}

TEST(LinuxI386, RulesAreKeyedOnVersionAndArch) {
  EXPECT_EQ(LinuxRulesFor("2.6.9", "i386")->mem_limit, MemLimitRule::kI386CutAtEnd);
  EXPECT_EQ(LinuxRulesFor("2.4.20", "i386")->mem_limit, MemLimitRule::kI386CutAtEnd);
  EXPECT_EQ(LinuxRulesFor("2.5.66", "i386")->mem_limit, MemLimitRule::kI386CutAtRamSum);
  EXPECT_EQ(LinuxRulesFor("2.6.20", "i386")->mem_limit, MemLimitRule::kI386CutAtEndSkipPast);
  EXPECT_EQ(LinuxRulesFor("2.6.27", "i386")->mem_limit, MemLimitRule::kRemoveRamAbove);
  EXPECT_EQ(LinuxRulesFor("2.6.9", "x86_64")->mem_limit, MemLimitRule::kRemoveRamAbove);
  EXPECT_EQ(LinuxRulesFor("2.6.9")->mem_limit, MemLimitRule::kRemoveRamAbove);
  EXPECT_TRUE(LinuxRulesFor("2.4.20", "i386")->mem_takes_map_items);
  EXPECT_FALSE(LinuxRulesFor("2.6.9", "i386")->mem_takes_map_items);
  EXPECT_FALSE(LinuxRulesFor("2.6.9", "i386")->sanitizes_user_map);
  EXPECT_TRUE(LinuxRulesFor("2.6.9", "x86_64")->sanitizes_user_map);
  EXPECT_NE(LinuxRulesFor("2.6.9", "arm64").status().message().find("arch 'arm64'"),
            std::string::npos);
}

// Pre-releases come before their release, as the kernel numbers them: Hugh Dickins' limit_regions
// fix went into 2.6.0-test8, so -test7 still cuts at the running sum and -test8 at the end
// address. A distribution's suffix is not a pre-release.
TEST(LinuxI386, TestKernelsAreOrderedBeforeTheirRelease) {
  EXPECT_EQ(LinuxRulesFor("2.6.0-test7", "i386")->mem_limit, MemLimitRule::kI386CutAtRamSum);
  EXPECT_EQ(LinuxRulesFor("2.6.0-test8", "i386")->mem_limit, MemLimitRule::kI386CutAtEnd);
  EXPECT_EQ(LinuxRulesFor("2.6.0-test11", "i386")->mem_limit, MemLimitRule::kI386CutAtEnd);
  EXPECT_EQ(LinuxRulesFor("2.6.0", "i386")->mem_limit, MemLimitRule::kI386CutAtEnd);
  EXPECT_FALSE(LinuxRulesFor("2.6.0-test11")->AtLeast(2, 6, 0));
  EXPECT_TRUE(LinuxRulesFor("2.6.0-test11")->AtLeast(2, 6, 0, 8));
  EXPECT_TRUE(LinuxRulesFor("2.6.0")->AtLeast(2, 6, 0));
  EXPECT_FALSE(LinuxRulesFor("3.5-rc7")->AtLeast(3, 5));
  EXPECT_TRUE(LinuxRulesFor("3.5-rc7")->AtLeast(3, 4, 99));
  EXPECT_TRUE(LinuxRulesFor("6.1.0-13-amd64")->AtLeast(6, 1, 0));
  EXPECT_TRUE(LinuxRulesFor("6.12.117+deb12-amd64")->AtLeast(6, 12, 117));
  EXPECT_TRUE(LinuxRulesFor("2.4.19-pre7")->AtLeast(2, 4, 19, 7));
  EXPECT_FALSE(LinuxRulesFor("2.4.19-pre6")->AtLeast(2, 4, 19, 7));
}

TEST(LinuxI386, AnEntryReachingPast2To64StaysInTheUnsanitizedTable) {
  // i386 before 2.6.27 stores memmap='s start and size as given (add_memory_region) and never
  // sanitizes the table, so an entry whose start + size passes 2^64 stays in it (the kernel's
  // print_memory_map shows addr + size wrapped; the model's exclusive end stops at 2^64 - 1, and
  // at start 2^64 - 1 the entry is empty). x86_64 sanitizes such entries away. Found by the
  // cmdline fuzz target's long run (corpus regress-i386-wrapped-entry): the target's property,
  // not the model, was wrong.
  for (uint64_t start : {0xfffffffffe000000ull, 0xffffffffffffffffull}) {
    const std::string line = "memmap=64M$" + std::to_string(start);
    bool kept = false;
    for (const auto& e : MustBoot(I386Machine("2.6.9", line)).e820)
      if (e.start == start && e.end == 0xffffffffffffffffull) kept = true;
    EXPECT_TRUE(kept) << line;
    auto x = I386Machine("2.6.9", line);
    x.arch = "x86_64";
    for (const auto& e : MustBoot(x).e820) EXPECT_LT(e.start, e.end) << line;
  }
}

TEST(LinuxI386, MemCutsTheTableAfterTheFirstRamEntryReachingTheLimit) {
  // limit_regions (2.6.0-test8 .. 2.6.18): RAM cut at 512M, everything after it dropped
  // (corpus log 01); x86_64 keeps the entries above the limit.
  auto k = MustBoot(I386Machine("2.6.9", "mem=512M"));
  ASSERT_EQ(k.e820.size(), 2u);
  EXPECT_EQ(k.e820[1].start, 0x100000u);
  EXPECT_EQ(k.e820[1].end, 512 * kMiB);
  auto x = I386Machine("2.6.9", "mem=512M");
  x.arch = "x86_64";
  EXPECT_EQ(MustBoot(x).e820.size(), 5u);
}

TEST(LinuxI386, A25KernelComparesTheRunningSumOfRam) {
  // 2.5.x limit_regions: the sum of RAM sizes (0x9dc00 + ...) reaches the limit later than the
  // end address, so mem= at the end of RAM cuts nothing and keeps the entries above.
  auto sum = MustBoot(I386Machine("2.5.66", "mem=0xe7ff9380"));
  EXPECT_EQ(sum.e820.size(), 5u);
  auto end = MustBoot(I386Machine("2.6.9", "mem=0xe7ff9380"));
  EXPECT_EQ(end.e820.size(), 2u);
  // With a smaller limit the sum rule cuts where the sum reaches it: 0x9dc00 + (end - 1M).
  auto cut = MustBoot(I386Machine("2.5.66", "mem=256M"));
  ASSERT_EQ(cut.e820.size(), 2u);
  EXPECT_EQ(cut.e820[1].end, 0x100000u + 256 * kMiB - 0x9dc00u);
}

TEST(LinuxI386, From2619ARamEntryStartingPastTheLimitIsDroppedToo) {
  // 2.6.19-era arch/i386/kernel/e820.c limit_regions: "if (e820.map[i].addr >= size)
  // e820.nr_map = i". mem=0x9e000 lies in the hole after the first RAM entry.
  auto k = MustBoot(I386Machine("2.6.20", "mem=0x9e000"));
  ASSERT_EQ(k.e820.size(), 1u);
  EXPECT_EQ(k.e820[0].end, 0x9dc00u);
}

TEST(LinuxI386, The24MemSpellingsBuildAnExactMapInTheOrderGiven) {
  // 2.4 parse_cmdline_early: mem=exactmap, mem=nn@ss, printed without sanitize (corpus log 14).
  auto k = MustBoot(I386Machine("2.4.20", "mem=exactmap mem=510M@1M mem=640k@0"));
  const auto user = UserLines(k);
  ASSERT_EQ(user.size(), 3u);
  EXPECT_EQ(user[1], " user: 0000000000100000 - 000000001ff00000 (usable)");
  EXPECT_EQ(user[2], " user: 0000000000000000 - 00000000000a0000 (usable)");
  EXPECT_EQ(k.usable_ram, 510 * kMiB + 640 * 1024);
  // A 2.6 i386 kernel reads "exactmap" as a size: no number, limit_regions(0), no Malformed.
  auto later = MustBoot(I386Machine("2.6.9", "mem=exactmap"));
  EXPECT_EQ(Count(later.dmesg, "Malformed"), 0);
  EXPECT_EQ(later.e820.size(), 0u);
}

TEST(LinuxI386, MemmapAddsWithoutSanitizeAndPrintsNoUserMapByItself) {
  // i386 parse_memmap (2.6.18 early_param; parse_cmdline_early before): nn$ss appends the
  // range, unsanitized, and does not set user_defined_memmap; a bare nn is limit_regions and
  // does; nothing prints "Malformed early option".
  auto alone = MustBoot(I386Machine("2.6.20", "memmap=64M$0x10000000"));
  EXPECT_TRUE(UserLines(alone).empty());
  EXPECT_EQ(alone.e820.size(), 6u);  // appended as the sixth entry, overlapping the RAM one
  auto with_limit = MustBoot(I386Machine("2.6.20", "memmap=64M$0x10000000 memmap=1G"));
  const auto user = UserLines(with_limit);
  ASSERT_EQ(user.size(), 3u);  // the table was cut at the RAM entry reaching 1G
  EXPECT_EQ(user[2], " user: 0000000000100000 - 0000000040000000 (usable)");
  auto bad = MustBoot(I386Machine("2.6.9", "memmap=4G!4G"));
  EXPECT_EQ(Count(bad.dmesg, "Malformed"), 0);
  // 2.4 has no memmap= at all.
  auto old = MustBoot(I386Machine("2.4.20", "memmap=exactmap"));
  EXPECT_TRUE(UserLines(old).empty());
  EXPECT_FALSE(old.memory_options.at(0).applied);
}

// ---- lib/cmdline.c, lib/vsprintf.c, kernel/params.c ----

TEST(LinuxCmdline, MemparseSuffixesByVersion) {
  // lib/cmdline.c memparse: K M G in 2.6.32.69 and 3.13.10; T P E added (3.19.8 has them).
  const auto old = LinuxRulesFor("3.13.10").value();
  const auto now = LinuxRulesFor("6.1.0").value();
  EXPECT_EQ(MemParse("1T", 0, now).value, 1ull << 40);
  EXPECT_EQ(MemParse("1T", 0, now).consumed, 2u);
  EXPECT_EQ(MemParse("1T", 0, old).value, 1u);  // 'T' unknown: the number alone, 'T' left
  EXPECT_EQ(MemParse("1T", 0, old).consumed, 1u);
  EXPECT_EQ(MemParse("2e", 0, now).value, 2ull << 60);
  // simple_strtoull: arithmetic modulo 2^64 and shifts that lose bits (no overflow check).
  EXPECT_EQ(MemParse("16E", 0, now).value, 0u);
  EXPECT_EQ(MemParse("0x10000000000000001").value, 1u);
  // simple_guess_base: "0x" needs a hex digit after it, else base 8 reads the "0".
  EXPECT_EQ(MemParse("0xg").value, 0u);
  EXPECT_EQ(MemParse("0xg").consumed, 1u);
  EXPECT_EQ(MemParse("08").consumed, 1u);  // '8' is no octal digit
  EXPECT_EQ(MemParse("-1").consumed, 0u);  // no sign
}

TEST(LinuxCmdline, NextArgQuotesAsTheKernelStripsThem) {
  // lib/cmdline.c next_arg (6.12): a value starting with '"' loses it and a final '"'; quotes
  // elsewhere stay; an unclosed quote runs to the end of the line, spaces included.
  auto o = SplitKernelCmdline("memmap=\"8G$4G\" a=x\"y z\"w \"mem=4G\" =5 b");
  ASSERT_EQ(o.size(), 5u);
  EXPECT_EQ(o[0].value, "8G$4G");
  EXPECT_EQ(o[1].key, "a");
  EXPECT_EQ(o[1].value, "x\"y z\"w");
  EXPECT_EQ(o[2].key, "mem");
  EXPECT_EQ(o[2].value, "4G");
  EXPECT_EQ(o[3].key, "=5");  // an '=' at index 0 does not split (equals == 0 means none)
  EXPECT_FALSE(o[3].has_value);
  o = SplitKernelCmdline("memmap=\"8G$4G quiet splash");
  ASSERT_EQ(o.size(), 1u);
  EXPECT_EQ(o[0].value, "8G$4G quiet splash");
  // lib/ctype.c: 0xa0 (no-break space in Latin-1) is a space to the kernel.
  o = SplitKernelCmdline("quiet\xa0mem=4G");
  ASSERT_EQ(o.size(), 2u);
  EXPECT_EQ(o[1].value, "4G");
}

TEST(LinuxCmdline, DashDashEndsTheKernelsOptions) {
  // kernel/params.c parse_args: "if (!val && strcmp(param, "--") == 0) return ..." (3.19.8,
  // 4.19, 6.12); 3.13.10 has no such stop.
  const std::string line = "quiet -- memmap=1G$4G";
  auto o = SplitKernelCmdline(line);
  ASSERT_EQ(o.size(), 3u);
  EXPECT_FALSE(o[1].after_dashdash);
  EXPECT_TRUE(o[2].after_dashdash);
  auto k = MustBoot(SmallMachine("6.1.0", line));
  EXPECT_TRUE(k.reservations.empty());
  ASSERT_EQ(k.memory_options.size(), 1u);
  EXPECT_FALSE(k.memory_options[0].applied);
  EXPECT_TRUE(HasIssue(k.memory_options[0], OptionProblem::kIgnoredAfterDashDash));
  EXPECT_TRUE(UserLines(k).empty());  // nothing set userdef
  k = MustBoot(SmallMachine("3.13.10", line));
  ASSERT_EQ(k.reservations.size(), 1u);
  EXPECT_EQ(k.reservations[0].start, 4 * kGiB);
}

TEST(LinuxCmdline, ALineLongerThanCommandLineSizeIsCut) {
  // arch/x86/include/asm/setup.h COMMAND_LINE_SIZE 2048; head64.c copy_bootdata copies 2048
  // bytes and init/main.c parse_early_param strscpy()s them into a 2048-byte buffer: the
  // kernel reads 2047 characters.
  std::string line = "quiet " + std::string(2030, 'x') + " memmap=8G$4G mem=4G";
  ASSERT_GT(line.size(), 2047u);
  const size_t memmap_at = line.find("memmap=");
  ASSERT_LT(memmap_at, 2047u);
  auto k = MustBoot(SmallMachine("", line));
  EXPECT_EQ(k.cmdline.size(), 2047u);
  EXPECT_EQ(k.cmdline, line.substr(0, 2047));
  ASSERT_EQ(k.cmdline_issues.size(), 1u);
  EXPECT_EQ(k.cmdline_issues[0].kind, OptionProblem::kLineCut);
  // "memmap=8G$4G" is cut to "memmap=8G$" (2047 - memmap_at characters survive): a $ with no
  // start address reserves from 0; mem=4G is lost.
  ASSERT_EQ(k.memory_options.size(), 2u);
  EXPECT_EQ(k.memory_options[0].item, line.substr(memmap_at + 7, 2047 - memmap_at - 7));
  EXPECT_FALSE(k.memory_options[1].applied);
  EXPECT_TRUE(HasIssue(k.memory_options[1], OptionProblem::kLineCut));
  // A 4096-character line of harmless words boots too.
  std::string long_line;
  while (long_line.size() < 4096) long_line += "quiet ";
  k = MustBoot(SmallMachine("", long_line));
  EXPECT_EQ(k.cmdline.size(), 2047u);
}

// ---- arch/x86/kernel/e820.c parse_memopt ----

TEST(LinuxMem, MemRemovesOnlyRamAboveTheLimit) {
  // parse_memopt: e820__range_remove(mem_size, ULLONG_MAX - mem_size, E820_TYPE_RAM, 1).
  auto k = MustBoot(SmallMachine("6.1.0", "mem=2G"));
  EXPECT_TRUE(Has(k.dmesg, "e820: remove [mem 0x80000000-0xfffffffffffffffe] usable"));
  EXPECT_EQ(Bytes(k, E820Type::kRam), 0x9fc00 + 2 * kGiB - kMiB);
  EXPECT_EQ(E820BytesOfType(k.e820, 0xfffc0000, 4 * kGiB, E820Type::kReserved), 0x40000u);
  EXPECT_TRUE(Has(k.dmesg, "user: [mem 0x0000000000100000-0x000000007fffffff] usable"));
}

TEST(LinuxMem, InvalidMemSetsUserdefButRemovesNothing) {
  // parse_memopt: "userdef = 1; mem_size = memparse(p, &p); if (mem_size == 0) return
  // -EINVAL;" and do_early_param prints "Malformed early option 'mem'" (2.6.32.69 .. 6.12).
  for (const char* version : {"2.6.32", "3.13.10", "4.19.0", "6.1.0", ""}) {
    auto k = MustBoot(SmallMachine(version, "mem=abc"));
    EXPECT_TRUE(Has(k.dmesg, "Malformed early option 'mem'")) << version;
    const auto user = UserLines(k);
    ASSERT_EQ(user.size(), 7u) << version;  // the header and the six firmware entries
    EXPECT_EQ(Bytes(k, E820Type::kRam), 0x9fc00 + 3 * kGiB - kMiB + 4 * kGiB) << version;
    ASSERT_EQ(k.memory_options.size(), 1u);
    EXPECT_TRUE(k.memory_options[0].rejected);
    EXPECT_TRUE(k.memory_options[0].malformed_printed);
  }
  auto k = MustBoot(SmallMachine("", "mem=0"));
  EXPECT_TRUE(HasIssue(k.memory_options[0], OptionProblem::kZeroSize));
  // "mem" without '=': parse_memopt(NULL) -> -EINVAL before userdef: no user map at all.
  k = MustBoot(SmallMachine("", "mem"));
  EXPECT_TRUE(Has(k.dmesg, "Malformed early option 'mem'"));
  EXPECT_TRUE(UserLines(k).empty());
  // "mem=nopentium" on x86_64: a warning, then -EINVAL.
  k = MustBoot(SmallMachine("", "mem=nopentium"));
  EXPECT_TRUE(Has(k.dmesg, "mem=nopentium ignored! (only supported on x86_32)"));
  EXPECT_TRUE(Has(k.dmesg, "Malformed early option 'mem'"));
}

TEST(LinuxMem, TrailingTextAfterTheNumberIsIgnoredSilently) {
  // parse_memopt never looks at what memparse left: mem=4Gb is mem=4G, no message.
  auto k = MustBoot(SmallMachine("", "mem=2Gb"));
  EXPECT_EQ(Count(k.dmesg, "Malformed"), 0);
  EXPECT_EQ(Bytes(k, E820Type::kRam), 0x9fc00 + 2 * kGiB - kMiB);
  EXPECT_TRUE(HasIssue(k.memory_options[0], OptionProblem::kTrailingIgnored));
  EXPECT_EQ(k.memory_options[0].ignored, "b");
}

// ---- arch/x86/kernel/e820.c parse_memmap_one / parse_memmap_opt ----

TEST(LinuxMemmap, DollarWithoutAddressReservesFromZero) {
  // parse_memmap_one: "start_at = memparse(p+1, &p)" reads nothing and returns 0.
  auto k = MustBoot(SmallMachine("", "memmap=8G$"));
  ASSERT_EQ(k.reservations.size(), 1u);
  EXPECT_EQ(k.reservations[0].start, 0u);
  EXPECT_EQ(k.reservations[0].end, 8 * kGiB);
  EXPECT_EQ(Count(k.dmesg, "Malformed"), 0);  // *p == '\0': no error at all
  EXPECT_TRUE(HasIssue(k.memory_options[0], OptionProblem::kNoStartAddress));
  EXPECT_EQ(Bytes(k, E820Type::kRam), 0u);  // reserved (2) beats RAM (1) everywhere below 8G
}

TEST(LinuxMemmap, AnythingButAnOperatorAfterTheSizeActsAsMem) {
  // parse_memmap_one's final else: e820__range_remove(mem_size, ULLONG_MAX - mem_size, RAM, 1),
  // then "return *p == '\0' ? 0 : -EINVAL" - ignored by parse_memmap_opt since 3.15 (3.19.8
  // read), printed as "Malformed early option 'memmap'" before (3.13.10, 2.6.32.69).
  for (const char* item : {"memmap=2GG", "memmap=2G4G", "memmap=2G^4G", "memmap=2G"}) {
    auto k = MustBoot(SmallMachine("6.1.0", item));
    EXPECT_EQ(Bytes(k, E820Type::kRam), 0x9fc00 + 2 * kGiB - kMiB) << item;
    EXPECT_TRUE(k.reservations.empty());
    EXPECT_EQ(Count(k.dmesg, "Malformed"), 0) << item;
    EXPECT_TRUE(HasIssue(k.memory_options[0], OptionProblem::kActsAsMem)) << item;
    EXPECT_EQ(k.memory_options[0].rejected, std::string(item) != "memmap=2G") << item;
    k = MustBoot(SmallMachine("2.6.32", item));
    EXPECT_EQ(Bytes(k, E820Type::kRam), 0x9fc00 + 2 * kGiB - kMiB) << item;
    EXPECT_EQ(Count(k.dmesg, "Malformed early option 'memmap'"),
              std::string(item) != "memmap=2G" ? 1 : 0)
        << item;
  }
}

TEST(LinuxMemmap, BareZeroRemovesAllRam) {
  // memmap= has no "mem_size == 0" guard (parse_memopt has one): memmap=0 removes every RAM
  // byte; memmap=0x reads "0" (base 8) and does the same.
  for (const char* line : {"memmap=0", "memmap=0x"}) {
    auto k = MustBoot(SmallMachine("", line));
    EXPECT_EQ(k.usable_ram, 0u) << line;
    EXPECT_TRUE(HasIssue(k.memory_options[0], OptionProblem::kRemovesAllRam)) << line;
  }
}

TEST(LinuxMemmap, TrailingTextAfterTheAddressKeepsTheRange) {
  // "$" branch adds the range, then "return *p == '\0' ? 0 : -EINVAL".
  auto k = MustBoot(SmallMachine("6.1.0", "memmap=1G$4Gx"));
  ASSERT_EQ(k.reservations.size(), 1u);
  EXPECT_EQ(k.reservations[0].start, 4 * kGiB);
  EXPECT_EQ(Count(k.dmesg, "Malformed"), 0);
  EXPECT_TRUE(HasIssue(k.memory_options[0], OptionProblem::kMalformed));
  EXPECT_EQ(k.memory_options[0].ignored, "x");
  k = MustBoot(SmallMachine("2.6.32", "memmap=1G$4Gx"));
  ASSERT_EQ(k.reservations.size(), 1u);
  EXPECT_TRUE(Has(k.dmesg, "Malformed early option 'memmap'"));
}

TEST(LinuxMemmap, NoSizeChangesNothing) {
  // "if (p == oldp) return -EINVAL;" before userdef is set.
  auto k = MustBoot(SmallMachine("", "memmap=x$4G memmap= memmap"));
  EXPECT_TRUE(k.reservations.empty());
  EXPECT_TRUE(UserLines(k).empty());
  ASSERT_EQ(k.memory_options.size(), 3u);
  for (const auto& o : k.memory_options) EXPECT_TRUE(HasIssue(o, OptionProblem::kNoEffect));
  // 2.6.32: each one's -EINVAL is printed.
  k = MustBoot(SmallMachine("2.6.32", "memmap=x$4G memmap= memmap"));
  EXPECT_EQ(Count(k.dmesg, "Malformed early option 'memmap'"), 3);
}

TEST(LinuxMemmap, ASuffixWithoutDigitsIsASizeOfZero) {
  // lib/cmdline.c memparse switches on *endptr even when simple_strtoull read no digit: "G" is
  // 0 with the 'G' consumed, so parse_memmap_one gets past "p == oldp" and sets userdef.
  // memmap=G$4G adds an empty reserved entry (dropped by the sanitize, the user map printed);
  // memmap=K is "memmap=0": every RAM byte removed. Found by the differential fuzz target
  // (mock/machine/memmap_diff_fuzz.cc, reproducer in its corpus).
  auto k = MustBoot(SmallMachine("6.1.0", "memmap=G$4G"));
  EXPECT_TRUE(k.reservations.empty());
  EXPECT_FALSE(UserLines(k).empty());
  ASSERT_EQ(k.memory_options.size(), 1u);
  EXPECT_TRUE(HasIssue(k.memory_options[0], OptionProblem::kZeroSize));
  EXPECT_FALSE(k.memory_options[0].rejected);
  k = MustBoot(SmallMachine("6.1.0", "memmap=K"));
  EXPECT_EQ(k.usable_ram, 0u);
  EXPECT_TRUE(HasIssue(k.memory_options[0], OptionProblem::kRemovesAllRam));
  // mem= keeps its own guard: memparse's 0 is refused.
  k = MustBoot(SmallMachine("6.1.0", "mem=G"));
  EXPECT_GT(k.usable_ram, 0u);
}

TEST(LinuxMemmap, CommaListsSince315) {
  // parse_memmap_opt splits at ',' (3.19.8); 3.13.10 parses one item: "1G$4G,1G$6G" reserves
  // the first range, stops at ',' and prints Malformed.
  auto k = MustBoot(SmallMachine("6.1.0", "memmap=1G$4G,,1G$6G"));
  EXPECT_EQ(k.reservations.size(), 2u);
  EXPECT_EQ(k.memory_options.size(), 3u);  // the empty item is parsed (and refused) too
  k = MustBoot(SmallMachine("3.13.10", "memmap=1G$4G,1G$6G"));
  ASSERT_EQ(k.reservations.size(), 1u);
  EXPECT_EQ(k.reservations[0].start, 4 * kGiB);
  EXPECT_TRUE(Has(k.dmesg, "Malformed early option 'memmap'"));
}

TEST(LinuxMemmap, ProtectedFormNeedsLinux41) {
  // '!' (E820_PRAM, type 12): 4.4.155 has it, 3.19.8 does not: there it is "size then junk",
  // so memmap=1G!4G acts as mem=1G.
  auto k = MustBoot(SmallMachine("4.4.0", "memmap=1G!4G"));
  EXPECT_EQ(Bytes(k, E820Type::kPram), kGiB);
  EXPECT_TRUE(Has(k.dmesg, "user: [mem 0x0000000100000000-0x000000013fffffff] persistent (type 12)"));
  k = MustBoot(SmallMachine("3.19.8", "memmap=1G!4G"));
  EXPECT_EQ(Bytes(k, E820Type::kPram), 0u);
  EXPECT_EQ(Bytes(k, E820Type::kRam), 0x9fc00 + kGiB - kMiB);
  EXPECT_TRUE(HasIssue(k.memory_options[0], OptionProblem::kUnknownForm));
}

TEST(LinuxMemmap, PercentFormsAddUpdateRemove) {
  // parse_memmap_one '%' (4.19, 6.12): -from +to both -> e820__range_update; only +to ->
  // e820__range_add(to); only -from -> e820__range_remove(from, checked); neither ->
  // e820__range_remove(any type); trailing text -> -EINVAL before any change.
  auto k = MustBoot(SmallMachine("6.1.0", "memmap=1G%4G-1+2"));
  EXPECT_TRUE(Has(k.dmesg, "e820: update [mem 0x100000000-0x13fffffff] usable ==> reserved"));
  EXPECT_EQ(E820BytesOfType(k.e820, 4 * kGiB, 5 * kGiB, E820Type::kReserved), kGiB);
  k = MustBoot(SmallMachine("6.1.0", "memmap=1G%4G+20"));
  EXPECT_TRUE(Has(k.dmesg, "user: [mem 0x0000000100000000-0x000000013fffffff] type 20"));
  k = MustBoot(SmallMachine("6.1.0", "memmap=1G%4G-1"));
  EXPECT_TRUE(Has(k.dmesg, "e820: remove [mem 0x100000000-0x13fffffff] usable"));
  EXPECT_EQ(E820BytesOfType(k.e820, 4 * kGiB, 5 * kGiB, E820Type::kRam), 0u);
  k = MustBoot(SmallMachine("6.1.0", "memmap=256K%0xfffc0000"));
  EXPECT_TRUE(Has(k.dmesg, "e820: remove [mem 0xfffc0000-0xffffffff] "));  // no type printed
  EXPECT_EQ(E820BytesOfType(k.e820, 0xfffc0000, 4 * kGiB, E820Type::kReserved), 0u);
  k = MustBoot(SmallMachine("6.1.0", "memmap=1G%4G-1+2x"));
  EXPECT_EQ(E820BytesOfType(k.e820, 4 * kGiB, 5 * kGiB, E820Type::kRam), kGiB);
  EXPECT_TRUE(k.memory_options[0].rejected);
  EXPECT_FALSE(UserLines(k).empty());  // userdef was set before the check
  // Same old and new type: BUG_ON(old_type == new_type) in __e820__range_update.
  k = MustBoot(SmallMachine("6.1.0", "memmap=1G%4G-1+1 mem=1G"));
  EXPECT_NE(k.panic.find("BUG_ON"), std::string::npos);
  EXPECT_TRUE(HasIssue(k.memory_options[0], OptionProblem::kSameTypes));
  EXPECT_FALSE(k.memory_options[1].applied);
  // Before 4.16 '%' is junk after the size: acts as mem=1G.
  k = MustBoot(SmallMachine("4.4.0", "memmap=1G%4G-1+2"));
  EXPECT_EQ(Bytes(k, E820Type::kRam), 0x9fc00 + kGiB - kMiB);
}

TEST(LinuxMemmap, ExactmapComparesEightCharacters) {
  // strncmp(p, "exactmap", 8); nr_entries = 0.
  auto k = MustBoot(SmallMachine("", "memmap=exactmapfoo,640K@0,1G@1M"));
  EXPECT_EQ(k.usable_ram, 640 * 1024 + kGiB);
  EXPECT_TRUE(HasIssue(k.memory_options[0], OptionProblem::kTrailingIgnored));
}

TEST(LinuxMemmap, ATableOfFewerThanTwoEntriesPanics) {
  // e820__update_table: "if (table->nr_entries < 2) return -1", and
  // e820__finish_early_params: early_panic("Invalid user supplied memory map").
  for (const char* line : {"memmap=exactmap", "memmap=exactmap,1G@0"}) {
    auto k = MustBoot(SmallMachine("", line));
    EXPECT_EQ(k.panic, "Invalid user supplied memory map") << line;
    EXPECT_TRUE(Has(k.dmesg, "Kernel panic - not syncing: Invalid user supplied memory map"));
    EXPECT_TRUE(UserLines(k).empty());
  }
  EXPECT_TRUE(MustBoot(SmallMachine("", "memmap=exactmap,640K@0,1G@1M")).panic.empty());
}

TEST(LinuxMemmap, AnEndPast2To64Panics) {
  // e820__range_add stores addr and size as given; e820__update_table bails out on
  // "entries[i].addr + entries[i].size < entries[i].addr" and finish_early_params panics.
  auto k = MustBoot(SmallMachine("", "memmap=2G$0xffffffffc0000000"));
  EXPECT_EQ(k.panic, "Invalid user supplied memory map");
  EXPECT_TRUE(HasIssue(k.memory_options[0], OptionProblem::kEndWraps));
  EXPECT_EQ(k.memory_options[0].end, UINT64_MAX);
  // mem= and e820__range_remove clamp instead: "if (size > (ULLONG_MAX - start))".
  k = MustBoot(SmallMachine("", "mem=0xffffffffffffffff memmap=1G%0xffffffffc0000000-1"));
  EXPECT_TRUE(k.panic.empty());
}

TEST(LinuxMemmap, ZeroSizeAddsNothing) {
  auto k = MustBoot(SmallMachine("", "memmap=0$4G"));
  EXPECT_TRUE(k.reservations.empty());
  EXPECT_TRUE(HasIssue(k.memory_options[0], OptionProblem::kZeroSize));
  EXPECT_EQ(Bytes(k, E820Type::kRam), 0x9fc00 + 3 * kGiB - kMiB + 4 * kGiB);
}

// ---- e820__update_table: types and merging ----

TEST(LinuxSanitize, LargerTypeWinsComparedUnsigned) {
  // "larger value takes precedence" over u32 types: soft-reserved (0xefffffff) beats RAM.
  MachineSpec spec = SmallMachine("6.1.0", "");
  spec.firmware_e820.push_back({5 * kGiB, 6 * kGiB, E820Type::kSoftReserved});
  auto k = MustBoot(spec);
  EXPECT_TRUE(Has(k.dmesg, "BIOS-e820: [mem 0x0000000140000000-0x000000017fffffff] soft reserved"));
  // Before 5.5 the type has no name: "type 4026531839".
  spec.kernel_version = "4.19.0";
  k = MustBoot(spec);
  EXPECT_TRUE(Has(k.dmesg, "BIOS-e820: [mem 0x0000000140000000-0x000000017fffffff] type 4026531839"));
}

TEST(LinuxSanitize, PersistentRangesAreNeverMerged) {
  // 4.19: "current_type != last_type || current_type == E820_TYPE_PRAM"; 6.12 e820_nomerge().
  auto k = MustBoot(SmallMachine("6.1.0", "memmap=1G!4G memmap=1G!5G"));
  EXPECT_EQ(Count(UserLines(k), "persistent (type 12)"), 2);
  k = MustBoot(SmallMachine("6.1.0", "memmap=1G$4G memmap=1G$5G"));
  // Reserved neighbours merge, with the firmware's [0xfffc0000, 4G) too.
  EXPECT_EQ(Count(UserLines(k), "reserved"), 3);
  EXPECT_TRUE(Has(k.dmesg, "user: [mem 0x00000000fffc0000-0x000000017fffffff] reserved"));
}

TEST(LinuxReservations, OverlapsAndMemBelowAreNamed) {
  auto k = MustBoot(SmallMachine("", "memmap=2G$4G memmap=1G$5G"));
  ASSERT_EQ(k.cmdline_issues.size(), 1u);
  EXPECT_EQ(k.cmdline_issues[0].kind, OptionProblem::kOverlapsReservation);
  k = MustBoot(SmallMachine("", "mem=4G memmap=2G$4G"));
  // RAM [6G, 8G) is above mem= and outside the reservation: lost.
  EXPECT_TRUE(HasIssue(k.memory_options[0], OptionProblem::kMemBelowReservation));
  EXPECT_NE(k.memory_options[0].issues[0].detail.find("2 GiB"), std::string::npos);
  k = MustBoot(SmallMachine("", "memmap=64K$0xfffc0000"));
  EXPECT_TRUE(HasIssue(k.memory_options[0], OptionProblem::kOverNonRam));
}

// ---- setup_arch order: setup_data (E820_TYPE_RESERVED_KERN) ----

MachineSpec WithSetupData(const std::string& version, const std::string& cmdline) {
  MachineSpec spec = SmallMachine(version, cmdline);
  E820Edit e;
  e.start = 0x72043018;
  e.end = 0x72053058;
  e.from = E820Type::kRam;
  e.to = E820Type::kReservedKern;
  spec.early_edits.push_back(e);
  E820Edit late;
  late.start = 0xa0000;
  late.end = 0x100000;
  late.from = E820Type::kRam;
  late.to = E820Type::kHole;
  spec.early_edits.push_back(late);
  return spec;
}

TEST(LinuxSetupData, AfterTheUserEditsFrom314BeforeThemEarlier) {
  // 4.19/6.12 setup.c: parse_early_param ... e820__reserve_setup_data();
  // e820__finish_early_params(); 3.13.10: e820_reserve_setup_data() before parse_early_param.
  auto k = MustBoot(WithSetupData("6.1.0", "mem=1G"));
  // The setup_data range lies above 1G: mem= removed that RAM first, so nothing is retyped.
  EXPECT_EQ(Bytes(k, E820Type::kReservedKern), 0u);
  EXPECT_TRUE(Has(k.dmesg, "e820: update [mem 0x72043018-0x72053057] usable ==> usable"));
  EXPECT_TRUE(Has(k.dmesg, "reserve setup_data: [mem 0x0000000000100000-0x000000003fffffff] usable"));
  k = MustBoot(WithSetupData("3.13.10", "mem=1G"));
  // Already RESERVED_KERN when mem= runs, so it survives above the limit, printed "usable".
  EXPECT_EQ(Bytes(k, E820Type::kReservedKern), 0x10040u);
  EXPECT_TRUE(Has(k.dmesg, "user: [mem 0x0000000072043018-0x0000000072053057] usable"));
  EXPECT_EQ(k.usable_ram, 0x9fc00 + kGiB - kMiB + 0x10040);
  // 2.6.32.69 e820_reserve_setup_data (setup.c): "e820 update range:" (end exclusive) and the
  // old-format extended map; 3.6..3.13 setup.c prints the header without "e820: ".
  k = MustBoot(WithSetupData("2.6.32", ""));
  EXPECT_TRUE(Has(k.dmesg, "e820 update range: 0000000072043018 - 0000000072053058 (usable) ==> (usable)"));
  EXPECT_TRUE(Has(k.dmesg, " reserve setup_data: 0000000072043018 - 0000000072053058 (usable)"));
  k = MustBoot(WithSetupData("3.10.0", ""));
  EXPECT_TRUE(Has(k.dmesg, "e820: BIOS-provided physical RAM map:"));
  EXPECT_TRUE(Has(k.dmesg, "extended physical RAM map:"));
  EXPECT_TRUE(UserLines(k).empty());  // no option set userdef
  // 6.15 dropped the type: no update line, no extended map, one usable range.
  k = MustBoot(WithSetupData("6.15.0", ""));
  EXPECT_EQ(Count(k.dmesg, "usable ==> usable"), 0);
  EXPECT_EQ(Count(k.dmesg, "extended physical RAM map"), 0);
  // The later edit (trim_bios_range's remove) prints after the map and does not change it.
  k = MustBoot(WithSetupData("6.1.0", "mem=2G"));
  EXPECT_EQ(k.dmesg.back(), "e820: remove [mem 0x000a0000-0x000fffff] usable");
}

// ---- real logs (corpus excerpts, lines as printed, timestamps removed) ----

struct LogMachine {
  MachineSpec spec;
  std::vector<std::string> map_lines;  // every map line the log prints up to its user map
};

// Reads the excerpt's BIOS-e820 lines (old and new format) into a machine and keeps the lines
// the test compares: headers, BIOS-e820, e820 remove/update, reserve setup_data, user.
LogMachine FromLog(const std::string& version, const std::string& cmdline, const char* log) {
  LogMachine m;
  m.spec.name = "custom";
  m.spec.kernel_version = version;
  m.spec.cmdline = cmdline;
  std::istringstream in(log);
  std::string line;
  bool user = false;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    m.map_lines.push_back(line);
    unsigned long long a = 0, b = 0;
    char type[32] = {0};
    if (std::sscanf(line.c_str(), " BIOS-e820: %llx - %llx (%31[^)])", &a, &b, type) == 3 ||
        (std::sscanf(line.c_str(), "BIOS-e820: [mem %llx-%llx] %31[^\n]", &a, &b, type) == 3 &&
         ++b)) {
      const std::string t = type;
      E820Type et = t == "usable" ? E820Type::kRam
                    : t == "reserved" ? E820Type::kReserved
                    : t == "ACPI data" ? E820Type::kAcpi
                    : t == "ACPI NVS" ? E820Type::kNvs
                                      : E820Type::kUnusable;
      m.spec.firmware_e820.push_back({a, b, et});
    }
    if (std::sscanf(line.c_str(), "e820: update [mem %llx-%llx] usable ==> usable", &a, &b) ==
            2 &&
        !user && m.spec.early_edits.size() < 1) {
      E820Edit e;
      e.start = a;
      e.end = b + 1;
      e.from = E820Type::kRam;
      e.to = E820Type::kReservedKern;
      e.line = line;
      m.spec.early_edits.push_back(e);
    }
    if (line.find("user-defined") != std::string::npos) user = true;
  }
  return m;
}

void ExpectSameLines(const LogMachine& m, int skip_log_lines = 0) {
  auto k = MustBoot(m.spec);
  std::vector<std::string> mine(k.dmesg.begin(), k.dmesg.begin() + std::min(k.dmesg.size(),
                                                                             m.map_lines.size()));
  std::vector<std::string> log(m.map_lines.begin() + skip_log_lines, m.map_lines.end());
  EXPECT_EQ(mine, log);
}

// corpus 22: Ubuntu Forums 2010-07-21, 2.6.32-21-generic x86_64, MSI P55-CD53, mem=8192M (the
// forum's doubled spaces undone). 2.6.32: no remove line, leading spaces, end exclusive.
TEST(RealLogs, Linux2632OldFormatMem) {
  const auto m = FromLog("2.6.32", "BOOT_IMAGE=/boot/vmlinuz-2.6.32-21-generic ro vga=792 mem=8192M",
                         R"(BIOS-provided physical RAM map:
 BIOS-e820: 0000000000000000 - 000000000009e800 (usable)
 BIOS-e820: 000000000009e800 - 00000000000a0000 (reserved)
 BIOS-e820: 00000000000e0000 - 0000000000100000 (reserved)
 BIOS-e820: 0000000000100000 - 00000000cf780000 (usable)
 BIOS-e820: 00000000cf780000 - 00000000cf78e000 (ACPI data)
 BIOS-e820: 00000000cf78e000 - 00000000cf7d0000 (ACPI NVS)
 BIOS-e820: 00000000cf7d0000 - 00000000cf7e0000 (reserved)
 BIOS-e820: 00000000cf7ed000 - 00000000d0000000 (reserved)
 BIOS-e820: 00000000fee00000 - 00000000fee01000 (reserved)
 BIOS-e820: 00000000ffe00000 - 0000000100000000 (reserved)
 BIOS-e820: 0000000100000000 - 0000000130000000 (usable)
user-defined physical RAM map:
 user: 0000000000000000 - 000000000009e800 (usable)
 user: 000000000009e800 - 00000000000a0000 (reserved)
 user: 00000000000e0000 - 0000000000100000 (reserved)
 user: 0000000000100000 - 00000000cf780000 (usable)
 user: 00000000cf780000 - 00000000cf78e000 (ACPI data)
 user: 00000000cf78e000 - 00000000cf7d0000 (ACPI NVS)
 user: 00000000cf7d0000 - 00000000cf7e0000 (reserved)
 user: 00000000cf7ed000 - 00000000d0000000 (reserved)
 user: 00000000fee00000 - 00000000fee01000 (reserved)
 user: 00000000ffe00000 - 0000000100000000 (reserved)
 user: 0000000100000000 - 0000000130000000 (usable)
)");
  ExpectSameLines(m);
}

// corpus 23: Ubuntu Forums 2012, 3.0.0-16-generic x86_64, Dell Inspiron N4050, mem=4096M
// (BIOS lines shortened to the first five and the last: the user map is taken from the same).
TEST(RealLogs, Linux30OldFormatRemoveLine) {
  const auto m = FromLog("3.0.0", "root=/dev/mapper/gr1-root mem=4096M ro quiet splash",
                         R"(BIOS-provided physical RAM map:
 BIOS-e820: 0000000000000000 - 000000000009d400 (usable)
 BIOS-e820: 000000000009d400 - 00000000000a0000 (reserved)
 BIOS-e820: 00000000000e0000 - 0000000000100000 (reserved)
 BIOS-e820: 0000000000100000 - 0000000020000000 (usable)
 BIOS-e820: 00000000ff000000 - 0000000100000000 (reserved)
 BIOS-e820: 0000000100000000 - 000000011fe00000 (usable)
e820 remove range: 0000000100000000 - ffffffffffffffff (usable)
user-defined physical RAM map:
 user: 0000000000000000 - 000000000009d400 (usable)
 user: 000000000009d400 - 00000000000a0000 (reserved)
 user: 00000000000e0000 - 0000000000100000 (reserved)
 user: 0000000000100000 - 0000000020000000 (usable)
 user: 00000000ff000000 - 0000000100000000 (reserved)
)");
  ExpectSameLines(m);
}

// corpus 04: linux-mm, Michal Hocko, July 2013, 3.9.0 x86_64, AMD A8440/WARTHOG, mem=1G: the
// "e820: " header prefix of 3.x and the new format's remove line.
TEST(RealLogs, Linux39PrefixedHeaders) {
  const auto m = FromLog("3.9.0", "root=/dev/sda2 console=tty0 crashkernel= showopts vga=6 mem=1G",
                         R"(e820: BIOS-provided physical RAM map:
BIOS-e820: [mem 0x0000000000000000-0x000000000009d7ff] usable
BIOS-e820: [mem 0x000000000009d800-0x000000000009ffff] reserved
BIOS-e820: [mem 0x00000000000d2000-0x00000000000fffff] reserved
BIOS-e820: [mem 0x0000000000100000-0x000000007ff1ffff] usable
BIOS-e820: [mem 0x000000007ff20000-0x000000007ff23fff] ACPI data
BIOS-e820: [mem 0x000000007ff24000-0x000000007ff7ffff] ACPI NVS
BIOS-e820: [mem 0x000000007ff80000-0x000000007fffffff] reserved
BIOS-e820: [mem 0x00000000fec00000-0x00000000fec0ffff] reserved
BIOS-e820: [mem 0x00000000fff80000-0x00000000ffffffff] reserved
e820: remove [mem 0x40000000-0xfffffffffffffffe] usable
e820: user-defined physical RAM map:
user: [mem 0x0000000000000000-0x000000000009d7ff] usable
user: [mem 0x000000000009d800-0x000000000009ffff] reserved
user: [mem 0x00000000000d2000-0x00000000000fffff] reserved
user: [mem 0x0000000000100000-0x000000003fffffff] usable
user: [mem 0x000000007ff20000-0x000000007ff23fff] ACPI data
user: [mem 0x000000007ff24000-0x000000007ff7ffff] ACPI NVS
user: [mem 0x000000007ff80000-0x000000007fffffff] reserved
user: [mem 0x00000000fec00000-0x00000000fec0ffff] reserved
user: [mem 0x00000000fff80000-0x00000000ffffffff] reserved
)");
  ExpectSameLines(m);
}

// corpus 25: linux-usb, Torsten Hilbrich, 2023-06-06, 6.1.31+, ThinkPad T14 Gen 1, UEFI with
// setup_data, built-in memmap=0x2000000$0x188000000. The memmap= range is already in the
// "reserve setup_data" map; RESERVED_KERN splits a usable range in three "usable" lines. (The
// log prints the update twice, for e820_table and e820_table_kexec; one edit is imported here,
// so the test skips the second line of the log.)
TEST(RealLogs, Linux61SetupDataAndMemmap) {
  auto m = FromLog("6.1.31", "memmap=0x2000000$0x188000000 ramoops.mem_address=0x188000000",
                   R"(BIOS-provided physical RAM map:
BIOS-e820: [mem 0x0000000000000000-0x000000000009efff] usable
BIOS-e820: [mem 0x000000000009f000-0x00000000000fffff] reserved
BIOS-e820: [mem 0x0000000000100000-0x000000002f5fffff] usable
BIOS-e820: [mem 0x000000002f600000-0x000000003fdfffff] unusable
BIOS-e820: [mem 0x000000003fe00000-0x00000000710c8fff] usable
BIOS-e820: [mem 0x00000000710c9000-0x0000000071bfefff] unusable
BIOS-e820: [mem 0x0000000071bff000-0x0000000072053fff] usable
BIOS-e820: [mem 0x0000000072054000-0x0000000072082fff] unusable
BIOS-e820: [mem 0x0000000072083000-0x00000000735b3fff] usable
BIOS-e820: [mem 0x00000000735b4000-0x00000000735b5fff] unusable
BIOS-e820: [mem 0x00000000735b6000-0x00000000944b6fff] usable
BIOS-e820: [mem 0x00000000944b7000-0x0000000098694fff] reserved
BIOS-e820: [mem 0x0000000098695000-0x0000000099a1efff] ACPI NVS
BIOS-e820: [mem 0x0000000099a1f000-0x0000000099b4efff] ACPI data
BIOS-e820: [mem 0x0000000099b4f000-0x0000000099b4ffff] usable
BIOS-e820: [mem 0x0000000099b50000-0x000000009f7fffff] reserved
BIOS-e820: [mem 0x0000000100000000-0x000000010bffffff] unusable
BIOS-e820: [mem 0x000000010c000000-0x000000085e7fffff] usable
e820: update [mem 0x72043018-0x72053057] usable ==> usable
reserve setup_data: [mem 0x0000000000000000-0x000000000009efff] usable
)");
  m.map_lines.pop_back();  // only the first line of the extended map was quoted above
  auto k = MustBoot(m.spec);
  ASSERT_GE(k.dmesg.size(), m.map_lines.size());
  for (size_t i = 0; i < m.map_lines.size(); ++i) EXPECT_EQ(k.dmesg[i], m.map_lines[i]);
  const std::vector<std::string> user = {
      "user-defined physical RAM map:",
      "user: [mem 0x0000000000000000-0x000000000009efff] usable",
      "user: [mem 0x000000000009f000-0x00000000000fffff] reserved",
      "user: [mem 0x0000000000100000-0x000000002f5fffff] usable",
      "user: [mem 0x000000002f600000-0x000000003fdfffff] unusable",
      "user: [mem 0x000000003fe00000-0x00000000710c8fff] usable",
      "user: [mem 0x00000000710c9000-0x0000000071bfefff] unusable",
      "user: [mem 0x0000000071bff000-0x0000000072043017] usable",
      "user: [mem 0x0000000072043018-0x0000000072053057] usable",
      "user: [mem 0x0000000072053058-0x0000000072053fff] usable",
      "user: [mem 0x0000000072054000-0x0000000072082fff] unusable",
      "user: [mem 0x0000000072083000-0x00000000735b3fff] usable",
      "user: [mem 0x00000000735b4000-0x00000000735b5fff] unusable",
      "user: [mem 0x00000000735b6000-0x00000000944b6fff] usable",
      "user: [mem 0x00000000944b7000-0x0000000098694fff] reserved",
      "user: [mem 0x0000000098695000-0x0000000099a1efff] ACPI NVS",
      "user: [mem 0x0000000099a1f000-0x0000000099b4efff] ACPI data",
      "user: [mem 0x0000000099b4f000-0x0000000099b4ffff] usable",
      "user: [mem 0x0000000099b50000-0x000000009f7fffff] reserved",
      "user: [mem 0x0000000100000000-0x000000010bffffff] unusable",
      "user: [mem 0x000000010c000000-0x0000000187ffffff] usable",
      "user: [mem 0x0000000188000000-0x0000000189ffffff] reserved",
      "user: [mem 0x000000018a000000-0x000000085e7fffff] usable",
  };
  EXPECT_EQ(UserLines(k), user);
  ASSERT_EQ(k.reservations.size(), 1u);
  EXPECT_EQ(k.reservations[0].start, 0x188000000u);
}

// The QEMU lane's real kernel (Debian 6.1.0-56-amd64, -M pc -m 5G), booted with malformed and
// unusual memory options: testdata/linux-6.1-qemu/NAME.log hold the lines it printed (recorded
// with testdata/record_linux_options.sh). Boot() must print the same lines, in order.
TEST(RealLogs, Debian61UnderQemuBootsEveryOptionAsRecorded) {
  const std::string dir = "mock/machine/testdata/linux-6.1-qemu";
  DIR* d = opendir(dir.c_str());
  ASSERT_NE(d, nullptr) << dir << " is missing: the test's data did not reach the runfiles";
  std::vector<std::string> files;
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n.size() > 4 && n.substr(n.size() - 4) == ".log") files.push_back(n);
  }
  closedir(d);
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 20u);
  for (const auto& name : files) {
    std::ifstream in(dir + "/" + name);
    MachineSpec spec;
    spec.name = "qemu-pc-5g";
    std::vector<std::string> real;
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("# cmdline: ", 0) == 0) spec.cmdline = line.substr(11);
      if (line.rfind("# kernel: ", 0) == 0) spec.kernel_version = line.substr(10, line.find(' ', 10) - 10);
      if (line.empty() || line[0] == '#') continue;
      real.push_back(line);
      unsigned long long a = 0, b = 0;
      char type[32] = {0};
      if (std::sscanf(line.c_str(), "BIOS-e820: [mem %llx-%llx] %31s", &a, &b, type) == 3)
        spec.firmware_e820.push_back(
            {a, b + 1, std::string(type) == "usable" ? E820Type::kRam : E820Type::kReserved});
    }
    auto k = MustBoot(spec);
    std::vector<std::string> mine(k.dmesg.begin(),
                                  k.dmesg.begin() + std::min(k.dmesg.size(), real.size()));
    EXPECT_EQ(mine, real) << name << ": " << spec.cmdline;
    EXPECT_EQ(k.dmesg.size(), real.size()) << name;  // no early_edits: nothing after the map
  }
}

}  // namespace
}  // namespace resmem::sim
