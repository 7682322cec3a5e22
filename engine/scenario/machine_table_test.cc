// [machine] in a scenario: a preset, a file beside the scenario (machine file or a paste), or
// the machine inline; keys written in the scenario override.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "engine/scenario/scenario.h"
#include "mock/machine/machine_file.h"

namespace resmem::scenario {
namespace {

namespace fs = std::filesystem;

std::string Dir() {
  const char* t = std::getenv("TEST_TMPDIR");
  const fs::path d = fs::path(t ? t : "/tmp") / "machine_table_test";
  fs::create_directories(d);
  return d.string();
}

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

const char kHead[] = "[scenario]\nname = \"t\"\n[[step]]\ndo = \"boot\"\n";

Result<Scenario> Load(const std::string& machine, const std::string& name = "s.toml") {
  const std::string path = Dir() + "/" + name;
  Write(path, std::string(kHead) + "[machine]\n" + machine);
  auto r = LoadScenarioFile(path);
  if (!r.ok()) return r.status();
  return (*r)[0];
}

// `resmem plan --machine scenarios/x.toml`: a scenario file names a machine as a machine file
// does (LoadMachineArgument), the one it boots: its preset with its keys applied. A [sweep]
// whose cases boot different machines is refused naming where they differ.
TEST(MachineTable, AScenarioFileIsAMachineArgument) {
  const std::string path = Dir() + "/plan_me.toml";
  Write(path, std::string(kHead) +
                  "[machine]\npreset = \"qemu-q35-2g\"\ncmdline = \"memmap=64M$0x40000000\"\n");
  auto m = LoadMachineArgument(path);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->cmdline, "memmap=64M$0x40000000");
  EXPECT_FALSE(m->firmware_e820.empty());
  const std::string sweep = Dir() + "/sweep.toml";
  Write(sweep, std::string(kHead) +
                   "[sweep]\nsize = [\"64M\", \"128M\"]\n"
                   "[machine]\npreset = \"qemu-q35-2g\"\ncmdline = \"memmap=${size}$0x40000000\"\n");
  auto both = LoadMachineArgument(sweep);
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("boot different machines"), std::string::npos)
      << both.status().message();
}

TEST(MachineTable, PresetWithOverrides) {
  auto s = Load("preset = \"qemu-q35-2g\"\ncmdline = \"memmap=1M$0x1000000\"\nkernel = \"4.19.0\"\n"
                "mtrr = [{ base = 0, size = \"2G\", type = \"wb\" }]\n");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->machine.name, "qemu-q35-2g");
  EXPECT_EQ(s->machine.cmdline, "memmap=1M$0x1000000");
  EXPECT_EQ(s->machine.kernel_version, "4.19.0");
  ASSERT_EQ(s->machine.mtrr.variable.size(), 1u);
  EXPECT_EQ(s->machine.firmware_e820.size(), sim::MachinePreset("qemu-q35-2g")->firmware_e820.size());
}

TEST(MachineTable, FromAMachineFileBesideTheScenario) {
  Write(Dir() + "/box.toml", sim::WriteMachineToml(*sim::MachinePreset("seed002-workstation")));
  auto s = Load("from = \"box.toml\"\ncmdline = \"mem=4G\"\n");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->machine.name, "seed002-workstation");
  EXPECT_EQ(s->machine.cmdline, "mem=4G");
  std::string diff;
  sim::MachineSpec want = *sim::MachinePreset("seed002-workstation");
  want.cmdline = "mem=4G";
  EXPECT_TRUE(sim::SameMachine(s->machine, want, &diff)) << diff;
}

TEST(MachineTable, FromAPastedDmesg) {
  Write(Dir() + "/dmesg.txt",
        "[    0.000000] Linux version 5.10.0-8-amd64 (debian-kernel@lists.debian.org)\n"
        "[    0.000000] Command line: BOOT_IMAGE=/vmlinuz root=/dev/sda1 memmap=64M$0x40000000\n"
        "[    0.000000] BIOS-provided physical RAM map:\n"
        "[    0.000000] BIOS-e820: [mem 0x0000000000000000-0x000000000009fbff] usable\n"
        "[    0.000000] BIOS-e820: [mem 0x0000000000100000-0x000000007fffffff] usable\n");
  auto s = Load("from = \"dmesg.txt\"\n");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->machine.name, "dmesg");
  EXPECT_EQ(s->machine.kernel_version, "5.10.0-8-amd64");
  EXPECT_EQ(s->machine.cmdline, "BOOT_IMAGE=/vmlinuz root=/dev/sda1 memmap=64M$0x40000000");
  ASSERT_EQ(s->machine.firmware_e820.size(), 2u);
  EXPECT_EQ(s->machine.firmware_e820[1].end, 0x80000000u);
}

TEST(MachineTable, FromSeveralFilesOrAFolderOfThem) {
  const std::string dir = Dir() + "/sources";
  fs::create_directories(dir);
  Write(dir + "/dmesg.txt", "BIOS-e820: [mem 0x0000000000000000-0x000000000009fbff] usable\n"
                            "BIOS-e820: [mem 0x0000000000100000-0x000000007fffffff] usable\n");
  Write(dir + "/mtrr.txt", "reg00: base=0x080000000 ( 2048MB), size= 2048MB, count=1: uncachable\n");
  Write(dir + "/cmdline.txt", "quiet memmap=64M$0x40000000\n");
  auto list = Load("from = [\"sources/dmesg.txt\", \"sources/mtrr.txt\"]\n", "list.toml");
  ASSERT_TRUE(list.ok()) << list.status().message();
  EXPECT_EQ(list->machine.mtrr.variable.size(), 1u);
  EXPECT_TRUE(list->machine.cmdline.empty());
  auto folder = Load("from = \"sources\"\n", "folder.toml");
  ASSERT_TRUE(folder.ok()) << folder.status().message();
  EXPECT_EQ(folder->machine.firmware_e820.size(), 2u);
  EXPECT_EQ(folder->machine.cmdline, "quiet memmap=64M$0x40000000");
  auto bad = Load("from = [\"sources/dmesg.txt\", 3]\n", "badlist.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("key 'machine.from': expected a file name, or a list"), std::string::npos)
      << bad.status().message();
}

TEST(MachineTable, ErrorsNameTheScenarioFileLineAndKey) {
  auto missing = Load("from = \"nothing-here.txt\"\n", "missing.toml");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("missing.toml:6: key 'machine.from': cannot read"), std::string::npos)
      << missing.status().message();
  auto both = Load("preset = \"h100-host\"\nfrom = \"box.toml\"\n", "both.toml");
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("give preset or from, not both"), std::string::npos);
  auto none = Load("cmdline = \"quiet\"\n", "none.toml");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("none.toml:5: key 'machine.preset': missing"), std::string::npos)
      << none.status().message();
  auto bad = Load("preset = \"h100-host\"\ne820 = [{ start = 0, end = 0x1000, type = \"usable\" }]\n", "bad.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.toml:7: key 'machine.e820[0].end': 'end' is ambiguous"),
            std::string::npos) << bad.status().message();
  Write(Dir() + "/garbage.txt", "hello\nworld\n");
  auto garbage = Load("from = \"garbage.txt\"\n", "garbage.toml");
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.status().message().find("no firmware memory map found"), std::string::npos)
      << garbage.status().message();
}

// A scenario whose [machine] from = names itself, or two that name each other, recursed until the
// stack ran out (SIGSEGV in `resmem run`, `doctor --machine`, `plan --machine`). The chain of
// files being loaded is carried and compared as canonical paths; a loop is a load error naming it.
TEST(MachineTable, AFromLoopIsRefusedNamingTheChain) {
  const std::string dir = Dir() + "/loop";
  fs::create_directories(dir);
  auto scenario = [](const std::string& from) {
    return std::string(kHead) + "[machine]\nfrom = \"" + from + "\"\n";
  };
  Write(dir + "/self.toml", scenario("./self.toml"));
  Write(dir + "/a.toml", scenario("b.toml"));
  Write(dir + "/b.toml", scenario("a.toml"));
  auto self = LoadScenarioFile(dir + "/self.toml");
  ASSERT_FALSE(self.ok());
  EXPECT_NE(self.status().message().find(dir + "/self.toml:6: key 'machine.from': '" + dir +
                                         "/./self.toml' is already being loaded (" + dir +
                                         "/self.toml -> " + dir + "/./self.toml)"),
            std::string::npos)
      << self.status().message();
  auto pair = LoadScenarioFile(dir + "/a.toml");
  ASSERT_FALSE(pair.ok());
  EXPECT_NE(pair.status().message().find("(" + dir + "/a.toml -> " + dir + "/b.toml -> " + dir +
                                         "/a.toml): a machine cannot come from a scenario that "
                                         "comes from it; name a machine file or a preset"),
            std::string::npos)
      << pair.status().message();
  // `doctor --machine` and `plan --machine` load the same way.
  auto arg = LoadMachineArgument(dir + "/b.toml");
  ASSERT_FALSE(arg.ok());
  EXPECT_NE(arg.status().message().find(dir + "/b.toml -> " + dir + "/a.toml -> " + dir + "/b.toml"),
            std::string::npos)
      << arg.status().message();
  // A chain without a loop still loads: a scenario's machine from another scenario.
  Write(dir + "/inner.toml", std::string(kHead) + "[machine]\npreset = \"qemu-q35-2g\"\n");
  Write(dir + "/outer.toml", scenario("inner.toml"));
  auto outer = LoadScenarioFile(dir + "/outer.toml");
  ASSERT_TRUE(outer.ok()) << outer.status().message();
  EXPECT_EQ((*outer)[0].machine.name, "qemu-q35-2g");
}

TEST(MachineTable, OldCmdlineSourceNameStillLoads) {
  auto s = Load("preset = \"seed002-workstation\"\ncmdline_source = \"grub\"\n");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->machine.cmdline_source, "grub");
}

}  // namespace
}  // namespace resmem::scenario
