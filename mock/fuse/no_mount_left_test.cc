// Nothing of ours stays mounted: not after the other tests (this one checks /proc/mounts when it
// runs), and not when the process that mounted is killed outright (SIGKILL runs no destructor;
// the daemon's parent-death signal must clean up).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "gtest/gtest.h"
#include "mock/fuse/fuse_device.h"
#include "mock/fuse/memory_region_provider.h"

namespace resmem::fuse_emu {
namespace {

std::string Joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

TEST(NoMountLeft, ProcMountsHasNoResmemFuseMount) {
  auto left = ResmemFuseMounts();
  EXPECT_TRUE(left.empty()) << "left behind (remove with umount -l DIR):\n" << Joined(left);
}

// Mounts in a child, reports the daemon's pid, then the child is SIGKILLed.
void MountThenGetKilled(bool private_namespace) {
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  pid_t child = fork();
  if (child == 0) {
    auto provider = MakeMemoryRegionProvider({MemoryDeviceSpec()});
    MountOptions opts;
    opts.private_namespace = private_namespace;
    auto dev = FuseDevice::Mount(*provider.value(), opts);
    pid_t daemon = dev.ok() ? dev.value()->daemon_pid() : -1;
    (void)!write(pipefd[1], &daemon, sizeof daemon);
    std::string at = dev.ok() ? dev.value()->mounted_at() : "";
    at = at.substr(0, at.rfind('/'));  // the temp root holding mnt/
    (void)!write(pipefd[1], at.c_str(), at.size());
    pause();
    _exit(0);
  }
  close(pipefd[1]);
  pid_t daemon = -1;
  ASSERT_EQ(read(pipefd[0], &daemon, sizeof daemon), static_cast<ssize_t>(sizeof daemon));
  char buf[4096];
  ssize_t n = read(pipefd[0], buf, sizeof buf);
  std::string temp_root(buf, n > 0 ? static_cast<size_t>(n) : 0);
  close(pipefd[0]);
  ASSERT_GT(daemon, 0) << "the child could not mount";
  if (!private_namespace) {
    EXPECT_EQ(ResmemFuseMounts().size(), 1u);
  }
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  // The daemon (our grandchild) gets SIGTERM from PR_SET_PDEATHSIG and unmounts on its way out.
  bool gone = false;
  for (int i = 0; i < 300 && !gone; ++i) {
    gone = kill(daemon, 0) != 0 && ResmemFuseMounts().empty();
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(gone) << "daemon " << daemon << " still there or mounts left:\n"
                    << Joined(ResmemFuseMounts());
  // Nor its private directory.
  EXPECT_EQ(access(("/proc/" + std::to_string(daemon)).c_str(), F_OK), -1);
  if (!temp_root.empty()) {
    EXPECT_NE(access(temp_root.c_str(), F_OK), 0) << temp_root << " left behind";
  }
}

TEST(NoMountLeft, SharedMountIsRemovedWhenTheMountingProcessIsKilled) {
  MountThenGetKilled(false);
}

TEST(NoMountLeft, PrivateMountVanishesWhenTheMountingProcessIsKilled) {
  MountThenGetKilled(true);
}

}  // namespace
}  // namespace resmem::fuse_emu
