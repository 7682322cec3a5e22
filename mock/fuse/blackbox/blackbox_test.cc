// Runs the forum-style program (resmem_blackbox.c), unmodified and unaware of resmem, against the
// FUSE-emulated device through the LD_PRELOAD shim, once per fault, and checks the result each
// case should give (FACTS.md "FUSE": SIGBUS on an EIO range, ENODEV on a refused mmap, the chosen
// errno on a refused open, ENOTCONN after the daemon dies).
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "mock/fuse/fuse_device.h"
#include "mock/fuse/memory_region_provider.h"

namespace resmem::fuse_emu {
namespace {

constexpr uint64_t kDeviceSize = 32ull << 20;

std::string Runfile(const std::string& rel) {
  char buf[PATH_MAX];
  if (!realpath(rel.c_str(), buf)) return rel;
  return buf;
}

struct ProgramRun {
  int exit_code = -1;  // when it exited
  int signal = 0;      // when a signal killed it
  std::string output;  // stdout and stderr
};

// Runs the black-box program with the shim preloaded, pointed at `mount_dir`.
ProgramRun RunBlackbox(const std::string& mount_dir, std::vector<std::string> args) {
  std::string program = Runfile("mock/fuse/blackbox/resmem_blackbox");
  std::string shim = Runfile("backends/fuse/libresmem_fuse_preload.so");
  int out[2];
  EXPECT_EQ(pipe(out), 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(out[1], 2);
    close(out[0]);
    setenv("LD_PRELOAD", shim.c_str(), 1);
    setenv("RESMEM_FUSE_DIR", mount_dir.c_str(), 1);
    setenv("RESMEM_FUSE_VERBOSE", "1", 1);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(program.c_str()));
    for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(program.c_str(), argv.data());
    _exit(127);
  }
  close(out[1]);
  ProgramRun r;
  char buf[4096];
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) r.output.append(buf, n);
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

class BlackboxTest : public ::testing::Test {
 protected:
  void MountWith(bool private_namespace) {
    MemoryDeviceSpec spec;
    spec.size = kDeviceSize;
    auto p = MakeMemoryRegionProvider({spec});
    ASSERT_TRUE(p.ok());
    provider_ = std::move(p).value();
    MountOptions opts;
    opts.private_namespace = private_namespace;
    auto dev = FuseDevice::Mount(*provider_, opts);
    ASSERT_TRUE(dev.ok()) << dev.status().ToString();
    dev_ = std::move(dev).value();
  }
  void SetUp() override { MountWith(true); }
  void TearDown() override {
    dev_.reset();
    EXPECT_TRUE(ResmemFuseMounts().empty());
  }
  std::unique_ptr<RegionProvider> provider_;
  std::unique_ptr<FuseDevice> dev_;
};

TEST_F(BlackboxTest, CopiesTheBlockAndChecksTheProducersData) {
  ASSERT_TRUE(dev_->Control("fill resmem0 0 16M 5").ok());
  ProgramRun r = RunBlackbox(dev_->mount_dir(), {"--expect-fill", "5"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("resmem-preload: /dev/resmem0 -> "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("length 33554432 bytes"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("data ok: 16777216 bytes match fill seed 5"), std::string::npos)
      << r.output;
  // No GPU on the build machine: the program must say it skipped the copy, not pretend.
  EXPECT_NE(r.output.find("cudaMemcpy"), std::string::npos) << r.output;
  std::printf("%s", r.output.c_str());
}

TEST_F(BlackboxTest, DetectsDataThatIsNotTheProducers) {
  ASSERT_TRUE(dev_->Control("fill resmem0 0 16M 5").ok());
  ProgramRun r = RunBlackbox(dev_->mount_dir(), {"--expect-fill", "6"});
  EXPECT_EQ(r.exit_code, 13) << r.output;
  EXPECT_NE(r.output.find("data mismatch at byte 0"), std::string::npos) << r.output;
}

TEST_F(BlackboxTest, WritesThroughTheMappingReachTheDevice) {
  ProgramRun r = RunBlackbox(dev_->mount_dir(), {"--write-check", "--offset", "8388608"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("write check ok"), std::string::npos) << r.output;
}

TEST_F(BlackboxTest, EioRangeKillsItWithSigbus) {
  ASSERT_TRUE(dev_->Control("eio resmem0 4M 4096").ok());
  ProgramRun r = RunBlackbox(dev_->mount_dir(), {});
  EXPECT_EQ(r.signal, SIGBUS) << "exit " << r.exit_code << "\n" << r.output;
  EXPECT_NE(r.output.find("mapped"), std::string::npos) << r.output;
  // A block that avoids the range is fine.
  ProgramRun ok = RunBlackbox(dev_->mount_dir(), {"--offset", "8388608", "--block", "4194304"});
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
}

TEST_F(BlackboxTest, RefusedMmapIsEnodev) {
  ASSERT_TRUE(dev_->Control("refuse-mmap resmem0").ok());
  ProgramRun r = RunBlackbox(dev_->mount_dir(), {});
  EXPECT_EQ(r.exit_code, 12) << r.output;
  EXPECT_NE(r.output.find("mmap failed: errno 19"), std::string::npos) << r.output;
}

TEST_F(BlackboxTest, RefusedOpenGivesTheChosenErrno) {
  ASSERT_TRUE(dev_->Control("refuse-open resmem0 EACCES").ok());
  ProgramRun r = RunBlackbox(dev_->mount_dir(), {});
  EXPECT_EQ(r.exit_code, 10) << r.output;
  EXPECT_NE(r.output.find("errno 13"), std::string::npos) << r.output;
}

TEST_F(BlackboxTest, SlowPagesStillDeliverTheData) {
  ASSERT_TRUE(dev_->Control("fill resmem0 0 16M 3\ndelay resmem0 0 1M 2000").ok());
  ProgramRun r = RunBlackbox(dev_->mount_dir(), {"--expect-fill", "3"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  auto status = dev_->ControlStatus();
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->find("delayed_reads=0\n"), std::string::npos) << *status;
}

TEST_F(BlackboxTest, DeadDaemonIsEnotconn) {
  // A dead daemon's mount stays visible only in a shared namespace; that is where a program
  // finds ENOTCONN on open (in the private one the path goes away with the daemon).
  dev_.reset();
  MountWith(false);
  ASSERT_TRUE(dev_->Control("die").ok());
  for (int i = 0; i < 300 && dev_->DaemonAlive(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ProgramRun r = RunBlackbox(dev_->mount_dir(), {});
  EXPECT_EQ(r.exit_code, 10) << r.output;
  EXPECT_NE(r.output.find("errno 107"), std::string::npos) << r.output;
}

TEST_F(BlackboxTest, WithoutTheShimTheHardCodedPathIsNotRedirected) {
  // The redirection is the shim's doing: without RESMEM_FUSE_DIR the program opens the real path,
  // which does not exist on this machine.
  if (access("/dev/resmem0", F_OK) == 0) GTEST_SKIP() << "a real /dev/resmem0 exists here";
  ProgramRun r = RunBlackbox("", {});
  EXPECT_EQ(r.exit_code, 10) << r.output;
  EXPECT_NE(r.output.find("errno 2"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace resmem::fuse_emu
