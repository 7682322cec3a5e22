// `resmem fuse` as the CLI runs it: bad input is exit 2 with the reason; a preset's simulated
// device is served at --mount until SIGTERM, then unmounted (exit 0). Access control (issue 10
// item 5): a directory of another user is refused (exit 2, named); the mount has no allow_other,
// so another uid gets EACCES on everything under it.
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <iostream>
#include <thread>

#include "engine/cli/command.h"
#include "gtest/gtest.h"
#include "kmod/uapi/resmem_ioctl.h"
#include "mock/fuse/fuse_device.h"

namespace resmem::fuse_emu {
namespace {

const cli::Program kProgram{"resmem", "resmem under test", "resmem test"};

// `resmem fuse ARGS...` as the command line runs it.
int Fuse(std::vector<std::string> args) {
  args.insert(args.begin(), "fuse");
  return cli::RunProgram(kProgram, args, std::cout, std::cerr);
}

// Waits up to 5 s for the served file to appear (the command mounts in the background).
bool WaitForFile(const std::string& file, struct stat* st) {
  for (int i = 0; i < 500; ++i) {
    if (stat(file.c_str(), st) == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(FuseCommand, IsRegistered) {
  auto help = cli::CommandHelp(kProgram, "fuse");
  ASSERT_TRUE(help.has_value());
  EXPECT_NE(help->find("--machine PRESET"), std::string::npos) << *help;
  EXPECT_NE(help->find("--mount DIR"), std::string::npos) << *help;
  EXPECT_NE(help->find("DIR/.control"), std::string::npos) << *help;  // the fault commands
}

TEST(FuseCommand, BadInputIsExitTwo) {
  EXPECT_EQ(Fuse({}), cli::kExitBadInput);
  EXPECT_EQ(Fuse({"--machine", "no-such-machine", "--mount", "/tmp"}), cli::kExitBadInput);
  EXPECT_EQ(Fuse({"--machine", "seed000-workstation", "--mount", "/tmp", "--mode", "x"}),
            cli::kExitBadInput);
  EXPECT_EQ(Fuse({"--bogus"}), cli::kExitBadInput);
}

TEST(FuseCommand, ServesTheSeed000ReservationUntilSigterm) {
  const char* tmp = getenv("TEST_TMPDIR");
  std::string dir = std::string(tmp ? tmp : "/tmp") + "/fuse_command_mnt";
  mkdir(dir.c_str(), 0755);
  pid_t pid = fork();
  if (pid == 0) {
    _exit(Fuse({"--machine", "seed000-workstation", "--mount", dir, "--seed", "7"}));
  }
  std::string file = dir + "/resmem0";
  struct stat st;
  ASSERT_TRUE(WaitForFile(file, &st)) << file << " never appeared";
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), 188ull << 30);  // memmap=188G$4G
  int fd = open(file.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  resmem_info info{};
  ASSERT_EQ(ioctl(fd, RESMEM_IOC_INFO, &info), 0) << strerror(errno);
  EXPECT_EQ(info.phys_addr, 4ull << 30);
  EXPECT_EQ(info.mode, static_cast<__u32>(RESMEM_MODE_PFNMAP));
  // A block far into the 188 GiB reservation round-trips through the sparse simulated memory.
  uint64_t off = 100ull << 30;
  auto* p = static_cast<volatile uint64_t*>(
      mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(off)));
  ASSERT_NE((void*)p, MAP_FAILED) << strerror(errno);
  p[5] = 0xfeedfacecafebeefull;
  ASSERT_EQ(msync((void*)p, 1 << 20, MS_SYNC), 0);
  uint64_t back = 0;
  ASSERT_EQ(pread(fd, &back, 8, static_cast<off_t>(off + 40)), 8);
  EXPECT_EQ(back, 0xfeedfacecafebeefull);
  munmap((void*)p, 1 << 20);
  close(fd);

  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), cli::kExitOk);
  EXPECT_TRUE(ResmemFuseMounts().empty());
  rmdir(dir.c_str());
}

std::string TestDir(const std::string& name) {
  const char* tmp = getenv("TEST_TMPDIR");
  std::string dir = std::string(tmp ? tmp : "/tmp") + "/" + name;
  mkdir(dir.c_str(), 0755);
  return dir;
}

TEST(FuseCommand, RefusesADirectoryOfAnotherUser) {
  std::string dir = TestDir("fuse_command_not_mine");
  ASSERT_EQ(chown(dir.c_str(), 65534, 65534), 0) << strerror(errno);  // nobody's
  testing::internal::CaptureStderr();
  const int rc = Fuse({"--machine", "seed000-workstation", "--mount", dir});
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(rc, cli::kExitBadInput);
  EXPECT_NE(err.find("--mount: " + dir + " is owned by uid 65534, not by you (uid " +
                     std::to_string(geteuid()) + ")"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("a directory you own"), std::string::npos) << err;
  EXPECT_TRUE(ResmemFuseMounts().empty());
  testing::internal::CaptureStderr();
  EXPECT_EQ(Fuse({"--machine", "seed000-workstation", "--mount", dir + "/missing"}),
            cli::kExitBadInput);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("is not a directory"), std::string::npos);
  rmdir(dir.c_str());
}

// What a process of uid/gid 65534 (nobody, in no group of the owner) gets from `op` on path: 0 on
// success, else the errno.
int AsNobody(const std::function<int()>& op) {
  pid_t pid = fork();
  if (pid == 0) {
    if (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0) _exit(255);
    _exit(op() == 0 ? 0 : errno);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 254;
}

TEST(FuseCommand, TheMountIsNotReachableByOtherUsers) {
  // Under /tmp, not TEST_TMPDIR (below /root, 0700, which nobody could not traverse anyway).
  char tmpl[] = "/tmp/resmem_fuse_private.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr) << strerror(errno);
  const std::string dir = tmpl;
  ASSERT_EQ(chmod(dir.c_str(), 0755), 0);
  // Before the mount nobody can look at the directory, so an EACCES below comes from the mount.
  ASSERT_EQ(AsNobody([&] {
              struct stat s;
              return stat(dir.c_str(), &s);
            }),
            0);
  pid_t pid = fork();
  if (pid == 0) _exit(Fuse({"--machine", "seed000-workstation", "--mount", dir}));
  const std::string file = dir + "/resmem0", control = dir + "/.control";
  struct stat st;
  ASSERT_TRUE(WaitForFile(file, &st)) << file << " never appeared";
  // The mount's options: no allow_other, the owner's uid/gid, modes checked by the kernel.
  std::string line, mount_line;
  std::ifstream mounts("/proc/mounts");
  while (std::getline(mounts, line))
    if (line.find(" " + dir + " ") != std::string::npos) mount_line = line;
  EXPECT_NE(mount_line, "") << "no /proc/mounts line for " << dir;
  EXPECT_EQ(mount_line.find("allow_other"), std::string::npos) << mount_line;
  EXPECT_NE(mount_line.find("user_id=" + std::to_string(geteuid()) + ","), std::string::npos)
      << mount_line;
  EXPECT_NE(mount_line.find("default_permissions"), std::string::npos) << mount_line;
  // The files are the owner's: devices 0660 (as kmod/99-resmem.rules), the control file 0600.
  EXPECT_EQ(st.st_uid, geteuid());
  EXPECT_EQ(st.st_mode & 07777, 0660u);
  ASSERT_EQ(stat(control.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  // The owner opens it; nobody gets EACCES, for the device, the control file and the directory.
  const int fd = open(file.c_str(), O_RDWR);
  EXPECT_GE(fd, 0) << strerror(errno);
  if (fd >= 0) close(fd);
  EXPECT_EQ(AsNobody([&] { return open(file.c_str(), O_RDONLY); }), EACCES);
  EXPECT_EQ(AsNobody([&] { return open(file.c_str(), O_RDWR); }), EACCES);
  EXPECT_EQ(AsNobody([&] { return open(control.c_str(), O_WRONLY); }), EACCES);
  EXPECT_EQ(AsNobody([&] {
              struct stat s;
              return stat(file.c_str(), &s);
            }),
            EACCES);
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == cli::kExitOk);
  EXPECT_TRUE(ResmemFuseMounts().empty());
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace resmem::fuse_emu
