// `resmem fuse` as the CLI runs it: bad input is exit 2 with the reason; a preset's simulated
// device is served at --mount until SIGTERM, then unmounted (exit 0).
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
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
  bool up = false;
  for (int i = 0; i < 500 && !up; ++i) {
    up = stat(file.c_str(), &st) == 0;
    if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(up) << file << " never appeared";
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

}  // namespace
}  // namespace resmem::fuse_emu
