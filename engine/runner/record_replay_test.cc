// Round trip of `resmem doctor --record`: a simulated machine is recorded through the Platform
// interface (the same texts the doctor reads on a real machine), the recording is loaded as a
// scenario, and the doctor on the replayed machine finds the same things with the same evidence.
#include "engine/doctor/record.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "engine/runner/runner.h"
#include "engine/scenario/scenario.h"
#include "mock/machine/machine_file.h"
#include "mock/sim/sim_world.h"

namespace resmem::engine {
namespace {

namespace fs = std::filesystem;

struct Case {
  std::string preset;
  std::string cmdline;  // "" keeps the preset's
  std::string iommu;    // "" undescribed; "intel", "amd", "none"; "intel-default-off"
  std::string policy;   // "" undescribed; "sb-unenrolled", "sb-enrolled", "disabled-unsigned"
};

// The module policies of the cases: Secure Boot with dkms's key not enrolled / enrolled, and a
// legacy boot with modules disabled and an unsigned module.
sim::ModulePolicySpec PolicyOf(const std::string& tag) {
  sim::ModulePolicySpec p;
  p.described = true;
  p.efi = p.secure_boot = tag.rfind("sb-", 0) == 0;
  p.trusted_keys = {"Debian Secure Boot CA"};
  if (tag == "sb-enrolled") p.trusted_keys.push_back("DKMS module signing key");
  p.modules_disabled = tag == "disabled-unsigned";
  if (tag == "disabled-unsigned") p.resmem_ko.state = sim::ModuleFileSpec::State::kUnsigned;
  return p;
}

class RecordRoundTrip : public ::testing::TestWithParam<Case> {};

DoctorReport DiagnoseSim(const sim::MachineSpec& spec, std::unique_ptr<Platform>* keep) {
  auto world = sim::MakeSimWorld(spec, 1);
  EXPECT_TRUE(world.ok()) << world.status().message();
  *keep = sim::MakeSimPlatform(*world);
  auto report = Diagnose(**keep, nullptr);
  EXPECT_TRUE(report.ok()) << report.status().message();
  return *report;
}

TEST_P(RecordRoundTrip, ReplayFindsTheSameWithTheSameEvidence) {
  sim::MachineSpec spec = *sim::MachinePreset(GetParam().preset);
  if (!GetParam().cmdline.empty()) spec.cmdline = GetParam().cmdline;
  if (const std::string& io = GetParam().iommu; !io.empty()) {
    spec.iommu.described = true;
    spec.iommu.vendor = io.rfind("intel", 0) == 0 ? sim::IommuVendor::kIntel
                        : io == "amd"             ? sim::IommuVendor::kAmd
                                                  : sim::IommuVendor::kNone;
    spec.iommu.intel_default_on = io != "intel-default-off";
    spec.iommu.units = 2;
    spec.iommu.devices = {"0000:00:00.0", "0000:00:02.0", "0000:00:10.0"};
  }
  if (!GetParam().policy.empty()) spec.module_policy = PolicyOf(GetParam().policy);
  // The QEMU machines run the lane's Debian 6.1 kernel: their recording carries /proc/version and
  // the replay reads options with 6.1's rules; the others name no version (newest rules), and
  // nothing is invented for them.
  if (GetParam().preset.rfind("qemu", 0) == 0) spec.kernel_version = "6.1.0";
  std::unique_ptr<Platform> platform;
  const DoctorReport original = DiagnoseSim(spec, &platform);
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = (fs::path(tmp ? tmp : "/tmp") / ("record-" + GetParam().preset +
                                                           std::to_string(GetParam().cmdline.size()) + GetParam().policy)).string();
  auto rec = RecordMachine(*platform, original, dir);
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  for (const char* f : {"iomem.txt", "firmware_memmap.txt", "mtrr.txt", "cmdline.txt", "cpuinfo.txt",
                        "meminfo.txt", "machine.toml", "scenario.toml"})
    EXPECT_TRUE(fs::exists(fs::path(dir) / f)) << f;
  EXPECT_EQ(fs::exists(fs::path(dir) / "version.txt"), !spec.kernel_version.empty());
  // `resmem plan` reads this machine without writing files: the same machine, the same notes
  // (less the folder each file name carries).
  std::vector<std::string> notes;
  auto read = ReadMachine(*platform, original, &notes);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(sim::WriteMachineToml(*read), sim::WriteMachineToml(rec->machine));
  ASSERT_EQ(notes.size(), rec->notes.size());
  for (size_t i = 0; i < notes.size(); ++i) {
    std::string recorded = rec->notes[i];
    if (const size_t at = recorded.find(dir + "/"); at != std::string::npos) recorded.erase(at, dir.size() + 1);
    EXPECT_EQ(notes[i], recorded);
  }

  auto loaded = scenario::LoadScenarioFile(dir + "/scenario.toml");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  std::unique_ptr<Platform> replay_platform;
  const DoctorReport replay = DiagnoseSim((*loaded)[0].machine, &replay_platform);
  ASSERT_EQ(replay.findings.size(), original.findings.size());
  for (size_t i = 0; i < original.findings.size(); ++i) {
    EXPECT_EQ(replay.findings[i].id, original.findings[i].id);
    EXPECT_EQ(replay.findings[i].severity, original.findings[i].severity);
    EXPECT_EQ(replay.findings[i].evidence, original.findings[i].evidence) << original.findings[i].id;
  }
  EXPECT_FALSE(original.findings.empty() && GetParam().preset == "seed000-workstation");
  // The scenario itself passes: usable RAM exact, the findings exactly these.
  auto result = RunScenario((*loaded)[0], RunOptions{});
  EXPECT_EQ(result.verdict, ScenarioVerdict::kPassed) << result.reason;
}

INSTANTIATE_TEST_SUITE_P(
    Presets, RecordRoundTrip,
    ::testing::Values(Case{"seed000-workstation", "", "", ""}, Case{"seed002-workstation", "", "", ""},
                      Case{"seed002-workstation", "mem=4G memmap=8G", "", ""},
                      Case{"qemu-q35-5g", "console=ttyS0 memmap=64M$0xbe000000 memmap=64M$0x40000000", "", ""},
                      Case{"qemu-q35-2g", "", "", ""}, Case{"h100-host", "", "", ""},
                      // The IOMMU: translating, identity, off by the kernel's default, by the
                      // firmware, options the kernel does not take.
                      Case{"qemu-q35-5g", "console=ttyS0 intel_iommu=on memmap=64M$0x40000000", "intel", ""},
                      Case{"qemu-q35-5g", "console=ttyS0 iommu=pt memmap=64M$0x140000000", "intel", ""},
                      Case{"qemu-q35-2g", "console=ttyS0 iommu=on", "intel-default-off", ""},
                      Case{"qemu-q35-2g", "console=ttyS0 intel_iommu=on", "none", ""},
                      Case{"h100-host", "amd_iommu=on iommu.passthrough=enable", "amd", ""},
                      // The module policy: refused by key, loaded, modules disabled under lockdown=.
                      Case{"qemu-q35-5g", "console=ttyS0 memmap=64M$0x40000000", "", "sb-unenrolled"},
                      Case{"qemu-q35-5g", "console=ttyS0 memmap=64M$0x40000000", "", "sb-enrolled"},
                      Case{"qemu-q35-2g", "lockdown=integrity", "", "disabled-unsigned"}),
    [](const ::testing::TestParamInfo<Case>& info) { return "case" + std::to_string(info.index); });

}  // namespace
}  // namespace resmem::engine
