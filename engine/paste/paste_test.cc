#include "engine/paste/paste.h"

#include <gtest/gtest.h>

#include <string>

namespace resmem::import {
namespace {

Imported Read(const std::string& text) { return ReadPaste({{"p.txt", text}}); }

// The note about line `n` of p.txt (the first one).
const LineNote* NoteOf(const Imported& im, int n) {
  for (const auto& note : im.notes)
    if (note.file == "p.txt" && note.line == n) return &note;
  return nullptr;
}

bool HasNote(const Imported& im, Verdict v, const std::string& words) {
  for (const auto& n : im.notes)
    if (n.verdict == v && n.what.find(words) != std::string::npos) return true;
  return false;
}

TEST(Paste, CurrentDmesgWithTimestampsAndSyslogPrefixes) {
  auto im = Read(
      "[    0.000000] Linux version 6.1.0-13-amd64 (debian-kernel@lists.debian.org) (gcc-12)\n"
      "Jan 12 10:00:00 host kernel: [    0.000000] Command line: BOOT_IMAGE=/vmlinuz memmap=64M$0x40000000\n"
      "<6>[    0.000000] BIOS-provided physical RAM map:\n"
      "[    0.000000] BIOS-e820: [mem 0x0000000000000000-0x000000000009fbff] usable\n"
      "[    0.000000] BIOS-e820: [mem 0x0000000000100000-0x000000007ffdffff] usable\n"
      "[    0.000000] e820: update [mem 0x00000000-0x00000fff] usable ==> reserved\n"
      "[    0.000000] e820: remove [mem 0x000a0000-0x000fffff] usable\n"
      "[    0.000000] user-defined physical RAM map:\n"
      "[    0.000000] user: [mem 0x0000000000000000-0x000000000009fbff] usable\n"
      "[    0.000000] user: [mem 0x0000000000100000-0x000000003fffffff] usable\n"
      "[    0.000000] user: [mem 0x0000000040000000-0x0000000043ffffff] reserved\n"
      "[    0.000000] user: [mem 0x0000000044000000-0x000000007ffdffff] usable\n"
      "[    0.000012] e820: update [mem 0x00000000-0x00000fff] usable ==> reserved\n");
  EXPECT_TRUE(im.has_firmware_map);
  EXPECT_EQ(im.errors, 0);
  EXPECT_EQ(im.machine.kernel_version, "6.1.0-13-amd64");
  EXPECT_EQ(im.machine.cmdline, "BOOT_IMAGE=/vmlinuz memmap=64M$0x40000000");
  EXPECT_EQ(im.machine.cmdline_source, "kernel");
  ASSERT_EQ(im.machine.firmware_e820.size(), 2u);
  EXPECT_EQ(im.machine.firmware_e820[1].end, 0x7ffe0000u);
  ASSERT_EQ(im.machine.early_edits.size(), 2u);  // the one after the user map is not early
  EXPECT_EQ(NoteOf(im, 13)->verdict, Verdict::kNotUsed);
  ASSERT_EQ(im.user_map.size(), 4u);
  EXPECT_EQ(im.user_map[2], "user: [mem 0x0000000040000000-0x0000000043ffffff] reserved");
  EXPECT_EQ(im.user_map_usable, 0x9fc00u + 0x3ff00000u + 0x3bfe0000u);
  for (int n = 1; n <= 13; ++n) EXPECT_NE(NoteOf(im, n), nullptr) << "line " << n << " has no verdict";
}

TEST(Paste, OldFormIsEndExclusive) {
  auto im = Read(" BIOS-e820: 0000000000000000 - 000000000009fc00 (usable)\n"
                 " BIOS-e820: 00000000000f0000 - 0000000000100000 (reserved)\n"
                 " BIOS-e820: 0000000000100000 - 00000000cfff0000 (usable)\n"
                 " BIOS-e820: 00000000cfff0000 - 00000000cfffe000 (ACPI data)\n"
                 " BIOS-e820: 00000000cfffe000 - 00000000d0000000 (ACPI NVS)\n"
                 " BIOS-e820: 0000000100000000 - 0000000130000000 type 12\n");
  ASSERT_EQ(im.machine.firmware_e820.size(), 6u);
  EXPECT_EQ(im.machine.firmware_e820[0].end, 0x9fc00u);
  EXPECT_EQ(im.machine.firmware_e820[4].type, sim::E820Type::kNvs);
  EXPECT_EQ(im.machine.firmware_e820[5].type, sim::E820Type::kPram);
  EXPECT_EQ(im.errors, 0);
}

TEST(Paste, OverlappingAndUnsortedRangesWarnAndStay) {
  auto im = Read("BIOS-e820: [mem 0x0000000000100000-0x000000007fffffff] usable\n"
                 "BIOS-e820: [mem 0x0000000000000000-0x000000000009ffff] usable\n"
                 "BIOS-e820: [mem 0x000000007ff00000-0x000000007fffffff] reserved\n");
  EXPECT_EQ(im.machine.firmware_e820.size(), 3u);
  EXPECT_EQ(im.warnings, 3);  // the two lines, and no command line pasted
  EXPECT_TRUE(HasNote(im, Verdict::kWarning, "no command line in the paste"));
  EXPECT_EQ(NoteOf(im, 2)->verdict, Verdict::kWarning);
  EXPECT_NE(NoteOf(im, 2)->what.find("out of order"), std::string::npos);
  EXPECT_NE(NoteOf(im, 3)->what.find("overlaps the entry of line 1"), std::string::npos);
}

TEST(Paste, BadLinesGetErrorsNamingTheLine) {
  auto im = Read("BIOS-e820: [mem 0x0000000000000000-0x000000000009fbff] usable\n"
                 "BIOS-e820: [mem 0x0000000000100000-0xffffffffffffffff] reserved\n"
                 "BIOS-e820: [mem 0x0000000000100000-0x10000000000000000] reserved\n"
                 "BIOS-e820: [mem 0x0000000000100000-0x0000000\n"
                 "BIOS-e820: 0000000000100000 - 0000\n"
                 "%%%% garbage \x01\x02\xff line\n"
                 "e820: update [mem 0x00000000-0x00000fff] usable ==>\n");
  EXPECT_TRUE(im.has_firmware_map);
  EXPECT_EQ(im.machine.firmware_e820.size(), 1u);
  EXPECT_EQ(NoteOf(im, 2)->verdict, Verdict::kError);
  EXPECT_NE(NoteOf(im, 2)->what.find("2^64"), std::string::npos);
  EXPECT_NE(NoteOf(im, 3)->what.find("past 2^64"), std::string::npos);
  EXPECT_NE(NoteOf(im, 4)->what.find("truncated"), std::string::npos);
  EXPECT_NE(NoteOf(im, 5)->what.find("truncated"), std::string::npos);
  EXPECT_EQ(NoteOf(im, 6)->verdict, Verdict::kNotUsed);
  EXPECT_EQ(NoteOf(im, 7)->verdict, Verdict::kError);
  EXPECT_EQ(im.errors, 5);
}

TEST(Paste, EmptyPasteAndGarbageHaveNoFirmwareMap) {
  auto empty = Read("");
  EXPECT_FALSE(empty.has_firmware_map);
  EXPECT_TRUE(HasNote(empty, Verdict::kWarning, "empty input"));
  EXPECT_TRUE(HasNote(empty, Verdict::kError, "no firmware memory map found"));
  auto garbage = Read("hello\nworld\n");
  EXPECT_FALSE(garbage.has_firmware_map);
  EXPECT_EQ(NoteOf(garbage, 1)->verdict, Verdict::kNotUsed);
}

TEST(Paste, ALongCommandLineIsKeptWithAWarning) {
  const std::string line(4096 - 14, 'x');
  auto im = Read("Command line: " + line + "\nBIOS-e820: [mem 0x0000000000000000-0x000000000009fbff] usable\n");
  EXPECT_EQ(im.machine.cmdline.size(), line.size());
  EXPECT_EQ(NoteOf(im, 1)->verdict, Verdict::kWarning);
  EXPECT_NE(NoteOf(im, 1)->what.find("COMMAND_LINE_SIZE"), std::string::npos);
}

const char kIomem[] =
    "00000000-00000fff : Reserved\n"
    "00001000-0009fbff : System RAM\n"
    "0009fc00-0009ffff : Reserved\n"
    "000a0000-000bffff : PCI Bus 0000:00\n"
    "000f0000-000fffff : Reserved\n"
    "  000f0000-000fffff : System ROM\n"
    "00100000-7ffdffff : System RAM\n"
    "  1a000000-1ac00000 : Kernel code\n"
    "80000000-febfffff : PCI Bus 0000:00\n"
    "  fd000000-fdffffff : 0000:00:02.0\n"
    "fec00000-fec003ff : IOAPIC 0\n";

TEST(Paste, IomemAsRootGivesWindowsAndAFallbackMap) {
  auto im = Read(kIomem);
  EXPECT_TRUE(im.has_firmware_map);
  EXPECT_EQ(im.firmware_source, "/proc/iomem");
  EXPECT_TRUE(HasNote(im, Verdict::kWarning, "after mem=/memmap= edits"));
  ASSERT_EQ(im.machine.mmio.size(), 4u);
  EXPECT_EQ(im.machine.mmio[1].name, "System ROM");
  EXPECT_EQ(im.machine.mmio[2].name, "PCI Bus 0000:00");  // its device inside is not a window
  EXPECT_EQ(im.machine.mmio[2].end, 0xfec00000u);
}

TEST(Paste, IomemAsAUserSaysWhyItCannotBeUsed) {
  auto im = Read("00000000-00000000 : Reserved\n00000000-00000000 : System RAM\n"
                 "  00000000-00000000 : Kernel code\n");
  EXPECT_FALSE(im.has_firmware_map);
  EXPECT_EQ(NoteOf(im, 1)->verdict, Verdict::kNotUsed);
  EXPECT_TRUE(HasNote(im, Verdict::kWarning, "CAP_SYS_ADMIN"));
  EXPECT_TRUE(HasNote(im, Verdict::kWarning, "sudo cat /proc/iomem"));
}

TEST(Paste, FirmwareMemmapDumpMtrrCpuinfoMeminfo) {
  auto im = Read(
      "0/end:0x9fbff\n0/start:0x0\n0/type:System RAM\n"
      "1/end:0x7ffdffff\n1/start:0x100000\n1/type:System RAM\n"
      "2/end:0xffffffff\n2/start:0xfffc0000\n2/type:Reserved\n"
      "reg00: base=0x000000000 (    0MB), size= 2048MB, count=1: write-back\n"
      "reg01: base=0x0c0000000 ( 3072MB), size=  512MB, count=1: write-protect\n"
      "address sizes\t: 39 bits physical, 48 bits virtual\n"
      "MemTotal:        1990000 kB\n"
      "MemFree:          100000 kB\n");
  ASSERT_TRUE(im.has_firmware_map);
  EXPECT_EQ(im.firmware_source, "/sys/firmware/memmap");
  ASSERT_EQ(im.machine.firmware_e820.size(), 3u);
  EXPECT_EQ(im.machine.firmware_e820[2].type, sim::E820Type::kReserved);
  ASSERT_EQ(im.machine.mtrr.variable.size(), 2u);
  EXPECT_EQ(im.machine.mtrr.variable[1].type_name, "write-protect");
  EXPECT_EQ(im.machine.mtrr.default_type, MemoryType::kUncached);  // WB ranges listed
  EXPECT_EQ(im.machine.phys_addr_bits, 39);
  EXPECT_EQ(im.mem_total, 1990000u * 1024);
  EXPECT_EQ(im.machine.kernel_reserved_bytes, 0x9fc00u + 0x7fee0000u - 1990000u * 1024);
  EXPECT_EQ(NoteOf(im, 14)->verdict, Verdict::kNotUsed);  // MemFree: read, not needed
}

TEST(Paste, ACutMemmapDumpIsAnError) {
  auto im = Read("0/end:0x9fbff\n0/start:0x0\n");
  EXPECT_FALSE(im.has_firmware_map);
  EXPECT_TRUE(HasNote(im, Verdict::kError, "entry 0 lacks its type"));
}

TEST(Paste, GrubLinesWhenNoKernelLine) {
  auto cfg = Read("BIOS-e820: [mem 0x0000000000000000-0x000000000009fbff] usable\n"
                  "\tlinux\t/boot/vmlinuz-6.1.0-13-amd64 root=UUID=abc ro quiet memmap=8G\\$4G\n");
  EXPECT_EQ(cfg.machine.cmdline_source, "grub-cfg");
  EXPECT_EQ(cfg.machine.cmdline, "root=UUID=abc ro quiet memmap=8G\\$4G");
  auto def = Read("BIOS-e820: [mem 0x0000000000000000-0x000000000009fbff] usable\n"
                  "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n"
                  "GRUB_CMDLINE_LINUX=\"memmap=8G\\\\\\$4G\"\n");
  EXPECT_EQ(def.machine.cmdline_source, "etc-default-grub");
  EXPECT_EQ(def.machine.cmdline, "\"memmap=8G\\\\\\$4G\" \"quiet\"");
  auto both = Read("BIOS-e820: [mem 0x0000000000000000-0x000000000009fbff] usable\n"
                   "GRUB_CMDLINE_LINUX=\"memmap=8G$4G\"\n"
                   "Kernel command line: memmap=8G\n");
  EXPECT_EQ(both.machine.cmdline_source, "kernel");
  EXPECT_EQ(both.machine.cmdline, "memmap=8G");
  EXPECT_EQ(NoteOf(both, 2)->verdict, Verdict::kNotUsed);
}

// Shapes seen in real pastes (the project's corpus of boot logs): a quoted log indented as a
// whole, journald prefixes, a Xen dom0's map, a built-in command line, doubled blanks.
TEST(Paste, ShapesOfRealPastes) {
  auto im = Read(
      "    [    0.000000] Xen: [mem 0x0000000000000000-0x0000000000095fff] usable\n"
      "2021-03-16 11:26:49.106 kernel: Command line: BOOT_IMAGE=/isolinux/bzImage loglevel=1\n"
      "BIOS-e820: 00000000cf780000 - 00000000cf78e000 (ACPI  data)\n"
      "[    0.095079] Kernel command line: memmap=0x2000000$0x188000000 loglevel=1\n");
  EXPECT_EQ(im.errors, 0);
  EXPECT_EQ(im.warnings, 1);  // no version line, and a map line in the old print form
  EXPECT_EQ(im.machine.kernel_version, "3.4");
  ASSERT_EQ(im.machine.firmware_e820.size(), 2u);
  EXPECT_EQ(im.machine.firmware_e820[0].end, 0x96000u);
  EXPECT_EQ(im.machine.firmware_e820[1].type, sim::E820Type::kAcpi);
  EXPECT_EQ(im.machine.cmdline, "memmap=0x2000000$0x188000000 loglevel=1");
  EXPECT_EQ(NoteOf(im, 2)->verdict, Verdict::kNotUsed);
  EXPECT_NE(NoteOf(im, 2)->what.find("CONFIG_CMDLINE"), std::string::npos);
}

TEST(Paste, MapsAKernelMadeUpWithoutE820) {
  // A 2.4 kernel on a BIOS without e820 (the project's corpus, a Compaq ProLiant 1500).
  auto im = Read(" BIOS-88: 0000000000000000 - 000000000009f000 (usable)\n"
                 " BIOS-88: 0000000000100000 - 0000000001000000 (usable)\n"
                 "Kernel command line: mem=exactmap mem=640K@0 mem=143M@1M\n");
  EXPECT_TRUE(im.has_firmware_map);
  ASSERT_EQ(im.machine.firmware_e820.size(), 2u);
  EXPECT_EQ(im.machine.firmware_e820[1].end, 0x1000000u);
  EXPECT_NE(NoteOf(im, 1)->what.find("(BIOS-88)"), std::string::npos);
}

TEST(Paste, TheSameMapTwiceIsReadOnce) {
  const std::string map =
      "[    0.000000] BIOS-e820: [mem 0x0000000000000000-0x000000000009fbff] usable\n"
      "[    0.000000] user-defined physical RAM map:\n"
      "[    0.000000] user: [mem 0x0000000000000000-0x000000000009fbff] usable\n";
  auto im = ReadPaste({{"dmesg.txt", map}, {"dmesg-e820.txt", map}});
  EXPECT_EQ(im.machine.firmware_e820.size(), 1u);
  EXPECT_EQ(im.user_map.size(), 1u);
  EXPECT_EQ(im.warnings, 2);  // no mem=/memmap= behind the user map, no command line at all
  EXPECT_TRUE(HasNote(im, Verdict::kWarning, "no pasted command line has the mem=/memmap="));
  EXPECT_TRUE(HasNote(im, Verdict::kNotUsed, "the same map line again"));
}

// Found by the paste fuzz target (engine/paste/paste_fuzz.cc): a /proc/mtrr block that does not
// parse turned its lines into errors without counting them, so `errors` disagreed with the notes.
TEST(Paste, CountsMatchTheNotesWhenABlockFailsTogether) {
  auto im = Read(
      "reg00: base=0x0c0000000 ( 3072MB), size= 1024MB, counm=1: uncachable\n"
      "BIOS-e820: [mem 0x0000000000000000-0x000000000009fbff] usable\n");
  int errors = 0, warnings = 0;
  for (const auto& n : im.notes) {
    errors += n.verdict == Verdict::kError;
    warnings += n.verdict == Verdict::kWarning;
  }
  EXPECT_GE(errors, 1);
  EXPECT_EQ(im.errors, errors);
  EXPECT_EQ(im.warnings, warnings);
  ASSERT_NE(NoteOf(im, 1), nullptr);
  EXPECT_EQ(NoteOf(im, 1)->verdict, Verdict::kError);
}

// Found by the paste fuzz target: a /sys/firmware/memmap line with a bad value made an entry
// with no note, and the later error about it read the note of an empty list.
TEST(Paste, AMemmapDumpLineWithABadValueMakesNoEntry) {
  auto im = Read("0/start:0rnel rodata\n0/type:System RAM\n");
  EXPECT_FALSE(im.has_firmware_map);
  ASSERT_NE(NoteOf(im, 1), nullptr);
  EXPECT_EQ(NoteOf(im, 1)->verdict, Verdict::kError);
  EXPECT_TRUE(HasNote(im, Verdict::kError, "entry 0 lacks its start end"));
}

TEST(Paste, AFileNamedCmdlineIsProcCmdline) {
  auto im = ReadPaste({{"rec/cmdline.txt", "console=ttyS0 memmap=64M$0x40000000\n"},
                       {"memmap", "0/end:0x9fbff\n0/start:0x0\n0/type:System RAM\n"}});
  EXPECT_EQ(im.machine.cmdline, "console=ttyS0 memmap=64M$0x40000000");
  EXPECT_EQ(im.machine.cmdline_source, "kernel");
  auto other = ReadPaste({{"notes.txt", "console=ttyS0 memmap=64M$0x40000000\n"}});
  EXPECT_TRUE(other.machine.cmdline.empty());  // no name, no marker: not guessed
}

TEST(Paste, RenderedDumpReadsBack) {
  const std::string dump = RenderFirmwareMemmapDump({{0, 0x9fc00, "System RAM"}, {0xf0000, 0x100000, "Reserved"}});
  EXPECT_EQ(dump, "0/end:0x9fbff\n0/start:0x0\n0/type:System RAM\n1/end:0xfffff\n1/start:0xf0000\n1/type:Reserved\n");
  auto im = Read(dump);
  ASSERT_EQ(im.machine.firmware_e820.size(), 2u);
  EXPECT_EQ(im.machine.firmware_e820[1].start, 0xf0000u);
}

TEST(Paste, ArchitectureFromTheLogGivenFactsWin) {
  const std::string old_log =
      "Linux version 2.6.9 (root@box) (gcc version 3.3.1) #1 SMP\n"
      "BIOS-provided physical RAM map:\n"
      " BIOS-e820: 0000000000000000 - 000000000009fc00 (usable)\n"
      " BIOS-e820: 0000000000100000 - 0000000040000000 (usable)\n";
  // Nothing shows the architecture of a 2.6.9 kernel: x86_64 assumed, with a warning.
  auto plain = Read(old_log);
  EXPECT_EQ(plain.machine.arch, "");
  EXPECT_TRUE(HasNote(plain, Verdict::kWarning, "give --arch i386"));
  // Only 32-bit kernels print LOWMEM/HIGHMEM.
  auto i386 = Read(old_log + "896MB LOWMEM available.\n");
  EXPECT_EQ(i386.machine.arch, "i386");
  EXPECT_FALSE(HasNote(i386, Verdict::kWarning, "give --arch"));
  // Given facts replace the paste's, and say so.
  GivenFacts given;
  given.has_cmdline = true;
  given.cmdline = "mem=512M";
  given.arch = "x86_64";
  given.kernel_version = "2.6.8";
  auto im = ReadPaste({{"p.txt", old_log + "896MB LOWMEM available.\n"}}, given);
  EXPECT_EQ(im.machine.cmdline, "mem=512M");
  EXPECT_EQ(im.machine.arch, "x86_64");
  EXPECT_EQ(im.machine.kernel_version, "2.6.8");
  EXPECT_TRUE(HasNote(im, Verdict::kUsed, "given with --cmdline"));
  EXPECT_TRUE(HasNote(im, Verdict::kUsed, "the paste suggests i386"));
  EXPECT_TRUE(HasNote(im, Verdict::kUsed, "it replaces the logged 2.6.9"));
}

// Only the kernel's own lines are its command line: prose that mentions one (a note in a forum
// post, a comment) is not, and a paste with none says how to give one.
TEST(Paste, ProseThatMentionsACommandLineIsNotOne) {
  auto im = Read("BIOS-e820: [mem 0x0000000000000000-0x000000000009fbff] usable\n"
                 "I added memmap=64M$0x40000000 so the Kernel command line: now has it\n"
                 "my Command line: was fine before\n");
  EXPECT_EQ(im.machine.cmdline, "");
  EXPECT_EQ(NoteOf(im, 2)->verdict, Verdict::kNotUsed);
  EXPECT_NE(NoteOf(im, 2)->what.find("not a line resmem import reads"), std::string::npos);
  EXPECT_EQ(NoteOf(im, 3)->verdict, Verdict::kNotUsed);
  EXPECT_TRUE(HasNote(im, Verdict::kWarning, "--cmdline"));
  auto real = Read("BIOS-e820: [mem 0x0000000000000000-0x000000000009fbff] usable\n"
                   "[    0.095079] Kernel command line: memmap=64M$0x40000000\n");
  EXPECT_EQ(real.machine.cmdline, "memmap=64M$0x40000000");
  EXPECT_FALSE(HasNote(real, Verdict::kWarning, "no command line in the paste"));
}

// The old print form (end exclusive) is what kernels before 3.5 print: without a version line the
// scenario takes 3.4's rules (the newest such) instead of the newest rules, whose user map would
// print in the new form; a version line or --kernel wins.
TEST(Paste, TheOldPrintFormSaysAKernelBefore35) {
  const std::string map = " BIOS-e820: 0000000000000000 - 000000000009fc00 (usable)\n"
                          " BIOS-e820: 0000000000100000 - 00000000cfff0000 (usable)\n"
                          "Kernel command line: mem=2G\n";
  auto im = Read(map);
  EXPECT_EQ(im.machine.kernel_version, "3.4");
  EXPECT_TRUE(HasNote(im, Verdict::kWarning, "which only kernels before 3.5 print"));
  auto logged = Read("Linux version 2.6.32-5-amd64 (Debian 2.6.32-48)\n" + map);
  EXPECT_EQ(logged.machine.kernel_version, "2.6.32-5-amd64");
  EXPECT_FALSE(HasNote(logged, Verdict::kWarning, "which only kernels before 3.5 print"));
  GivenFacts given;
  given.kernel_version = "3.2.0";
  auto stated = ReadPaste({{"dmesg.txt", map}}, given);
  EXPECT_EQ(stated.machine.kernel_version, "3.2.0");
  auto fresh = Read("BIOS-e820: [mem 0x0000000000000000-0x000000000009fbff] usable\n");
  EXPECT_EQ(fresh.machine.kernel_version, "");
}

}  // namespace
}  // namespace resmem::import
