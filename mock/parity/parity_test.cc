// One device, three bodies (docs/parity.md): the parity probe's transcript of the FUSE device
// (a real FUSE mount of mock/fuse's daemon), of the simulated driver (mock/region), and of the real
// module (golden/kmod.txt, made by the QEMU lane, which fails when the live module differs from
// it), normalised only by transcript.cc's table, must be equal. The log shows all three, every
// normalisation with its reason, and the diff.
#include <limits.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "mock/fuse/fuse_device.h"
#include "mock/fuse/memory_region_provider.h"
#include "mock/machine/machine.h"
#include "mock/region/sim_driver.h"
#include "mock/sim/sim_world.h"
#include "mock/parity/sim_probe.h"
#include "mock/parity/transcript.h"

namespace resmem::parity {
namespace {

constexpr uint64_t kDeviceSize = 64ull << 20;  // as the lane's and the sim's reservation

std::string Runfile(const std::string& rel) {
  char buf[PATH_MAX];
  if (!realpath(rel.c_str(), buf)) return rel;
  return buf;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs the probe program on `device`; its stdout, or a failure with its output.
Result<std::string> RunProbeProgram(const std::string& device) {
  const std::string program = Runfile("mock/parity/resmem_parity_probe");
  int out[2];
  if (pipe(out) != 0) return Status::Errno(errno, "pipe");
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    close(out[0]);
    execl(program.c_str(), program.c_str(), device.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) text.append(buf, n);
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return Status::Internal(program + " " + device + " ended with status " +
                            std::to_string(status) + ":\n" + text);
  return text;
}

// Mounts the FUSE device over `provider` (the existing daemon, a real FUSE mount), runs the probe
// on its resmem0 and unmounts.
Result<std::string> ProbeOverFuse(RegionProvider& provider) {
  RESMEM_ASSIGN_OR_RETURN(std::unique_ptr<fuse_emu::FuseDevice> dev,
                          fuse_emu::FuseDevice::Mount(provider));
  auto text = RunProbeProgram(dev->DevicePath("resmem0"));
  RESMEM_RETURN_IF_ERROR(dev->Unmount());
  return text;
}

void Print(const Transcript& t) {
  std::printf("---- %s transcript (%zu lines)\n", t.body.c_str(), t.lines.size());
  for (const auto& l : t.lines) std::printf("%s: %s\n", l.name.c_str(), l.result.c_str());
}

TEST(ParityTest, ModuleFuseAndSimAnswerEveryOperationAlike) {
  // The real module, as the QEMU lane recorded it.
  const std::string golden_path = Runfile("mock/parity/golden/kmod.txt");
  auto kmod = ParseTranscript(ReadFile(golden_path), "kmod", golden_path);
  ASSERT_TRUE(kmod.ok()) << kmod.status().ToString();

  // The FUSE device: the existing daemon over a 64 MiB memory device, in a real FUSE mount.
  fuse_emu::MemoryDeviceSpec spec;
  spec.size = kDeviceSize;
  auto provider = fuse_emu::MakeMemoryRegionProvider({spec});
  ASSERT_TRUE(provider.ok()) << provider.status().ToString();
  auto fuse_text = ProbeOverFuse(**provider);
  ASSERT_TRUE(fuse_text.ok()) << fuse_text.status().ToString();
  auto fuse = ParseTranscript(*fuse_text, "fuse", "the probe on the FUSE device");
  ASSERT_TRUE(fuse.ok()) << fuse.status().ToString();

  // The simulated driver.
  auto sim_text = RunSimProbe();
  ASSERT_TRUE(sim_text.ok()) << sim_text.status().ToString();
  auto sim = ParseTranscript(*sim_text, "sim", "the probe on the sim driver");
  ASSERT_TRUE(sim.ok()) << sim.status().ToString();

  Print(*kmod);
  Print(*fuse);
  Print(*sim);
  std::vector<std::string> notes;
  const std::vector<Transcript> normalised = {Normalise(*kmod, &notes), Normalise(*fuse, &notes),
                                              Normalise(*sim, &notes)};
  std::printf("---- normalised (transcript.cc KnownDifferences, %zu):\n", notes.size());
  for (const auto& n : notes) std::printf("  %s\n", n.c_str());
  const std::vector<std::string> diff = DiffTranscripts(normalised);
  std::printf("---- diff kmod / fuse / sim after normalising: %zu lines%s\n", diff.size(),
              diff.empty() ? " (the three bodies agree on every operation)" : "");
  for (const auto& d : diff) std::printf("  %s\n", d.c_str());
  EXPECT_TRUE(diff.empty()) << "the bodies differ; fix the side a user would find wrong "
                               "(docs/parity.md), or, for a difference the kernel makes "
                               "unremovable, add it to transcript.cc KnownDifferences with the "
                               "reason";
  EXPECT_GE(kmod->lines.size(), 80u) << "the golden transcript looks truncated";
}

// `resmem fuse` serves the simulated driver's device through the same daemon: the probe's answers
// are the FUSE device's whatever provider stands behind it.
TEST(ParityTest, FuseOverTheSimDriverAnswersAsOverMemory) {
  auto machine = sim::MachinePreset("qemu-q35-5g");
  ASSERT_TRUE(machine.ok());
  sim::MachineSpec m = machine.value();
  m.cmdline += " memmap=64M$0x140000000";
  auto world = sim::MakeSimWorld(m, 1);
  ASSERT_TRUE(world.ok()) << world.status().ToString();
  auto sim_provider = sim::MakeSimRegionProvider(*world, sim::SimDriverSpec());
  auto a = ProbeOverFuse(*sim_provider);
  ASSERT_TRUE(a.ok()) << a.status().ToString();

  fuse_emu::MemoryDeviceSpec spec;
  spec.size = kDeviceSize;
  auto memory = fuse_emu::MakeMemoryRegionProvider({spec});
  ASSERT_TRUE(memory.ok());
  auto b = ProbeOverFuse(**memory);
  ASSERT_TRUE(b.ok()) << b.status().ToString();

  auto ta = ParseTranscript(*a, "fuse-over-sim", "fuse over the sim driver");
  auto tb = ParseTranscript(*b, "fuse-over-memory", "fuse over memory");
  ASSERT_TRUE(ta.ok() && tb.ok());
  const auto diff = DiffTranscripts({*tb, *ta});
  for (const auto& d : diff) std::printf("  %s\n", d.c_str());
  EXPECT_TRUE(diff.empty());
}

// The sim transcript is a function of the probe and the driver only: two runs are equal.
TEST(ParityTest, SimTranscriptIsDeterministic) {
  auto a = RunSimProbe();
  auto b = RunSimProbe();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
}

}  // namespace
}  // namespace resmem::parity
