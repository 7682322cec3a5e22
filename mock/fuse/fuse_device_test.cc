// Mounts the emulated device over a memory provider and checks what the kernel delivers through
// it: rw MAP_SHARED mmap, the module's ioctls, and each control-file fault (FACTS.md "FUSE").
#include "mock/fuse/fuse_device.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "kmod/uapi/resmem_ioctl.h"
#include "mock/fuse/control.h"
#include "mock/fuse/memory_region_provider.h"

namespace resmem::fuse_emu {
namespace {

constexpr uint64_t kSize0 = 16ull << 20;
constexpr uint64_t kSize1 = 4ull << 20;

// Runs `touch` in a forked child and returns how the child ended: the signal that killed it, or
// 0 when it exited normally.
template <typename F>
int SignalOfChild(F touch) {
  pid_t pid = fork();
  if (pid == 0) {
    touch();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

class FuseDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MemoryDeviceSpec a;
    a.device = "/dev/resmem0";
    a.size = kSize0;
    a.phys_addr = 0x100000000ull;
    MemoryDeviceSpec b;
    b.device = "/dev/resmem1";
    b.size = kSize1;
    b.phys_addr = 0x40000000ull;
    b.mode = MapMode::kPages;
    b.cache = CacheType::kWriteCombining;
    auto p = MakeMemoryRegionProvider({a, b});
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    provider_ = std::move(p).value();
    MountOptions options;
    options.passthrough = passthrough_;
    auto dev = FuseDevice::Mount(*provider_, options);
    ASSERT_TRUE(dev.ok()) << dev.status().ToString();
    dev_ = std::move(dev).value();
  }
  void TearDown() override {
    if (dev_) {
      EXPECT_TRUE(dev_->Unmount().ok());
    }
    dev_.reset();
    // Whatever the test did, no mount of ours is left in this namespace.
    EXPECT_TRUE(ResmemFuseMounts().empty()) << ResmemFuseMounts()[0];
  }
  int Open(const char* name, int flags = O_RDWR) {
    return open(dev_->DevicePath(name).c_str(), flags | O_CLOEXEC);
  }

  // The control file's line that starts with `prefix` ("io resmem0 ", "passthrough:").
  std::string StatusLine(const std::string& prefix) {
    auto status = dev_->ControlStatus();
    if (!status.ok()) return status.status().ToString();
    std::istringstream lines(*status);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind(prefix, 0) == 0) return line;
    }
    return "no line '" + prefix + "' in:\n" + *status;
  }

  // The daemon path (page cache filled by read requests) is what these tests check: faults armed
  // while a mapping exists reach it. FusePassthroughTest below mounts with passthrough.
  bool passthrough_ = false;
  std::unique_ptr<RegionProvider> provider_;
  std::unique_ptr<FuseDevice> dev_;
};

TEST_F(FuseDeviceTest, ServesOneRegularFilePerDeviceAndTheControlFile) {
  ASSERT_EQ(dev_->device_names(), (std::vector<std::string>{"resmem0", "resmem1"}));
  struct stat st;
  ASSERT_EQ(stat(dev_->DevicePath("resmem0").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));  // never S_ISCHR (FACTS.md)
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), kSize0);
  ASSERT_EQ(stat(dev_->DevicePath("/dev/resmem1").c_str(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), kSize1);
  auto status = dev_->ControlStatus();
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_NE(status->find("device resmem0"), std::string::npos) << *status;
  EXPECT_NE(status->find("last_error: none"), std::string::npos) << *status;
}

TEST_F(FuseDeviceTest, PrivateNamespaceKeepsTheMountOutOfProcMounts) {
  if (!dev_->private_namespace()) {
    GTEST_SKIP() << "no private mount namespace here (unshare refused): mounted shared";
  }
  EXPECT_TRUE(ResmemFuseMounts().empty());
  EXPECT_EQ(dev_->mount_dir(),
            "/proc/" + std::to_string(dev_->daemon_pid()) + "/root" + dev_->mounted_at());
}

TEST_F(FuseDeviceTest, IoctlsAnswerFromTheRegionInfo) {
  int fd = Open("resmem1");
  ASSERT_GE(fd, 0) << strerror(errno);
  __u64 length = 0, phys = 0;
  ASSERT_EQ(ioctl(fd, RESMEM_IOC_LENGTH, &length), 0) << strerror(errno);
  EXPECT_EQ(length, kSize1);
  ASSERT_EQ(ioctl(fd, RESMEM_IOC_PHYS, &phys), 0) << strerror(errno);
  EXPECT_EQ(phys, 0x40000000ull);
  resmem_info info{};
  ASSERT_EQ(ioctl(fd, RESMEM_IOC_INFO, &info), 0) << strerror(errno);
  EXPECT_EQ(info.abi_version, 1u);
  EXPECT_EQ(info.mode, static_cast<__u32>(RESMEM_MODE_PAGES));
  EXPECT_EQ(info.cache, static_cast<__u32>(RESMEM_CACHE_WC));
  EXPECT_EQ(info.size, kSize1);
  EXPECT_STREQ(info.name, "resmem1");
  __u64 junk = 0;
  EXPECT_EQ(ioctl(fd, _IOR(RESMEM_IOC_MAGIC, 99, __u64), &junk), -1);
  EXPECT_EQ(errno, ENOTTY);
  close(fd);
}

TEST_F(FuseDeviceTest, SharedWritableMappingRoundTripsThroughTheDaemon) {
  int fd = Open("resmem0");
  ASSERT_GE(fd, 0) << strerror(errno);
  void* p = mmap(nullptr, kSize0, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(p, MAP_FAILED) << strerror(errno);
  auto* bytes = static_cast<uint8_t*>(p);
  for (uint64_t i = 0; i < kSize0; i += 4096) bytes[i] = static_cast<uint8_t>(i >> 12);
  ASSERT_EQ(msync(p, kSize0, MS_SYNC), 0) << strerror(errno);
  ASSERT_EQ(munmap(p, kSize0), 0);
  close(fd);
  // The bytes reached the daemon (write requests), not only the page cache.
  auto status = dev_->ControlStatus();
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->find("write_bytes=0 "), std::string::npos) << *status;
  // A later mapping and plain reads see them.
  fd = Open("resmem0", O_RDONLY);
  ASSERT_GE(fd, 0);
  uint8_t b = 0;
  ASSERT_EQ(pread(fd, &b, 1, 4096 * 77), 1);
  EXPECT_EQ(b, 77);
  close(fd);
}

TEST_F(FuseDeviceTest, DeviceSideFillIsSeenByAnExistingMapping) {
  int fd = Open("resmem0");
  ASSERT_GE(fd, 0);
  auto* words = static_cast<uint64_t*>(mmap(nullptr, kSize0, PROT_READ, MAP_SHARED, fd, 0));
  ASSERT_NE(static_cast<void*>(words), MAP_FAILED) << strerror(errno);
  EXPECT_EQ(words[1000], 0u);  // cached now
  ASSERT_TRUE(dev_->Control("fill resmem0 0 1M 42").ok());
  EXPECT_EQ(words[1000], FillPatternWord(42, 1000));
  EXPECT_EQ(words[(1 << 20) / 8 - 1], FillPatternWord(42, (1 << 20) / 8 - 1));
  EXPECT_EQ(words[(1 << 20) / 8], 0u);  // outside the block: untouched
  munmap(words, kSize0);
  close(fd);
}

// The file keeps the module's fixed size (docs/parity.md): O_TRUNC is ignored and a mapping made
// right after it works (with the kernel's atomic O_TRUNC it was SIGBUS: the size read 0 until the
// next getattr), ftruncate is EINVAL, a write across the end is short, O_DIRECT is EINVAL.
TEST_F(FuseDeviceTest, FixedSizeLikeTheModule) {
  int fd = Open("resmem1", O_RDWR | O_TRUNC);
  ASSERT_GE(fd, 0) << strerror(errno);
  void* m = mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd, 0);
  ASSERT_NE(m, MAP_FAILED);
  EXPECT_EQ(SignalOfChild([&] { (void)*static_cast<volatile char*>(m); }), 0);
  munmap(m, 4096);
  struct stat st;
  ASSERT_EQ(fstat(fd, &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), kSize1);
  EXPECT_EQ(ftruncate(fd, 0), -1);
  EXPECT_EQ(errno, EINVAL);
  char buf[4096] = {1};
  EXPECT_EQ(pwrite(fd, buf, sizeof buf, kSize1 - 100), 100);
  EXPECT_EQ(pwrite(fd, buf, sizeof buf, kSize1), -1);
  EXPECT_EQ(errno, ENOSPC);
  ASSERT_EQ(fstat(fd, &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), kSize1);
  close(fd);
  EXPECT_EQ(Open("resmem1", O_RDWR | O_DIRECT), -1);
  EXPECT_EQ(errno, EINVAL);
}

TEST_F(FuseDeviceTest, EioRangeBecomesSigbusThroughTheMapping) {
  int fd = Open("resmem0");
  ASSERT_GE(fd, 0);
  auto* bytes = static_cast<volatile uint8_t*>(
      mmap(nullptr, kSize0, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  ASSERT_NE((void*)bytes, MAP_FAILED);
  (void)bytes[1 << 20];  // cached before the fault: the fault must drop it
  ASSERT_TRUE(dev_->Control("eio resmem0 1M 64K").ok());
  EXPECT_EQ(SignalOfChild([&] { (void)bytes[(1 << 20) + 100]; }), SIGBUS);
  EXPECT_EQ(SignalOfChild([&] { (void)bytes[(2 << 20)]; }), 0);  // outside the range
  char buf[16];
  EXPECT_EQ(pread(fd, buf, sizeof buf, 1 << 20), -1);
  EXPECT_EQ(errno, EIO);
  ASSERT_TRUE(dev_->Control("clear resmem0").ok());
  EXPECT_EQ(SignalOfChild([&] { (void)bytes[(1 << 20) + 100]; }), 0);
  munmap((void*)bytes, kSize0);
  close(fd);
}

TEST_F(FuseDeviceTest, RefusedMmapIsEnodevButReadsStillWork) {
  ASSERT_TRUE(dev_->Control("refuse-mmap resmem0").ok());
  int fd = Open("resmem0");
  ASSERT_GE(fd, 0);
  void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  EXPECT_EQ(p, MAP_FAILED);
  EXPECT_EQ(errno, ENODEV);
  char buf[8];
  EXPECT_EQ(pread(fd, buf, sizeof buf, 0), 8);
  close(fd);
  // The other device is unaffected.
  fd = Open("resmem1");
  p = mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd, 0);
  EXPECT_NE(p, MAP_FAILED) << strerror(errno);
  if (p != MAP_FAILED) munmap(p, 4096);
  close(fd);
}

TEST_F(FuseDeviceTest, RefusedOpenGivesTheChosenErrno) {
  ASSERT_TRUE(dev_->Control("refuse-open resmem0 EBUSY").ok());
  EXPECT_EQ(Open("resmem0"), -1);
  EXPECT_EQ(errno, EBUSY);
  ASSERT_TRUE(dev_->Control("clear").ok());
  int fd = Open("resmem0");
  EXPECT_GE(fd, 0) << strerror(errno);
  close(fd);
}

TEST_F(FuseDeviceTest, SlowPagesDelayTheFirstTouch) {
  int fd = Open("resmem0");
  ASSERT_GE(fd, 0);
  auto* bytes = static_cast<volatile uint8_t*>(mmap(nullptr, kSize0, PROT_READ, MAP_SHARED, fd, 0));
  ASSERT_NE((void*)bytes, MAP_FAILED);
  ASSERT_TRUE(dev_->Control("delay resmem0 8M 4096 30000").ok());
  auto t0 = std::chrono::steady_clock::now();
  (void)bytes[8 << 20];
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // A lower bound only: the daemon sleeps at least this long before answering.
  EXPECT_GE(waited, 0.030);
  auto status = dev_->ControlStatus();
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->find("delayed_reads=0\n"), std::string::npos) << *status;
  munmap((void*)bytes, kSize0);
  close(fd);
}

TEST_F(FuseDeviceTest, DaemonDeathGivesEnotconnAndSigbus) {
  int fd = Open("resmem0");
  ASSERT_GE(fd, 0);
  auto* bytes = static_cast<volatile uint8_t*>(mmap(nullptr, kSize0, PROT_READ, MAP_SHARED, fd, 0));
  ASSERT_NE((void*)bytes, MAP_FAILED);
  (void)bytes[0];
  ASSERT_TRUE(dev_->Control("die").ok());
  for (int i = 0; i < 300 && dev_->DaemonAlive(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(dev_->DaemonAlive());
  __u64 length = 0;
  EXPECT_EQ(ioctl(fd, RESMEM_IOC_LENGTH, &length), -1);
  EXPECT_EQ(errno, ENOTCONN);
  char buf[8];
  EXPECT_EQ(pread(fd, buf, sizeof buf, 12 << 20), -1);
  EXPECT_EQ(errno, ENOTCONN);
  EXPECT_EQ(SignalOfChild([&] { (void)bytes[12 << 20]; }), SIGBUS);
  munmap((void*)bytes, kSize0);
  close(fd);
}

TEST_F(FuseDeviceTest, BadControlCommandIsRefusedWithTheReason) {
  Status st = dev_->Control("eio resmem9 0 4096");
  EXPECT_EQ(st.code(), kInvalidArgument);
  EXPECT_NE(st.message().find("no device 'resmem9'"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("devices: resmem0, resmem1"), std::string::npos) << st.ToString();
  st = dev_->Control("eio resmem1 4M 4096");
  EXPECT_NE(st.message().find("outside resmem1"), std::string::npos) << st.ToString();
}

// Mounted with passthrough (docs/fuse.md "Memory speed"): where the kernel grants it, a device
// opened with no fault armed is mapped straight from its file, read(2)/write(2) still reach the
// daemon, and a fault armed beforehand sends later opens down the daemon path.
class FusePassthroughTest : public FuseDeviceTest {
 protected:
  void SetUp() override {
    passthrough_ = true;
    FuseDeviceTest::SetUp();
    if (HasFatalFailure()) return;
    granted_ = StatusLine("passthrough:").find("requested in the INIT reply") != std::string::npos;
  }
  // Waits until the daemon has seen the releases of closed files (they come after close(2)
  // returns) and `io resmem0 ...` reads `want`.
  bool WaitForIo(const std::string& want) {
    for (int i = 0; i < 400; ++i) {
      if (StatusLine("io resmem0 ").find(want) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }
  bool granted_ = false;
};

#define SKIP_WITHOUT_PASSTHROUGH()                                                        \
  if (!granted_) {                                                                        \
    GTEST_SKIP() << "this kernel does not offer FUSE passthrough (Linux 6.9+ with "      \
                    "CONFIG_FUSE_PASSTHROUGH): " << StatusLine("passthrough:");           \
  }

TEST_F(FusePassthroughTest, MapsTheDevicesMemoryAndEveryPathSeesTheSameBytes) {
  SKIP_WITHOUT_PASSTHROUGH();
  int fd = Open("resmem0");
  ASSERT_GE(fd, 0) << strerror(errno);
  EXPECT_NE(StatusLine("io resmem0 ").find("passthrough_files=1 daemon_files=0"), std::string::npos)
      << StatusLine("io resmem0 ");
  EXPECT_NE(StatusLine("passthrough:").find("granted"), std::string::npos)
      << StatusLine("passthrough:");
  auto* words = static_cast<uint64_t*>(
      mmap(nullptr, kSize0, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  ASSERT_NE(static_cast<void*>(words), MAP_FAILED) << strerror(errno);
  // A store through the mapping is in the device's memory at once (no msync): read(2), which the
  // daemon answers from that memory, sees it.
  words[4096 / 8 * 5] = 0x1122334455667788ull;
  uint64_t back = 0;
  ASSERT_EQ(pread(fd, &back, sizeof back, 4096 * 5), static_cast<ssize_t>(sizeof back));
  EXPECT_EQ(back, 0x1122334455667788ull);
  // write(2) reaches the daemon, and the mapping sees it.
  const uint64_t word = 0xa5a5a5a5deadbeefull;
  ASSERT_EQ(pwrite(fd, &word, sizeof word, 4096 * 9), static_cast<ssize_t>(sizeof word));
  EXPECT_EQ(words[4096 / 8 * 9], word);
  // The producer's fill is seen by the mapping.
  ASSERT_TRUE(dev_->Control("fill resmem0 1M 64K 7").ok());
  EXPECT_EQ(words[(1 << 20) / 8 + 3], FillPatternWord(7, (1 << 20) / 8 + 3));
  // A second program's mapping is the same memory.
  int fd2 = Open("resmem0", O_RDONLY);
  ASSERT_GE(fd2, 0);
  auto* other = static_cast<uint64_t*>(mmap(nullptr, kSize0, PROT_READ, MAP_SHARED, fd2, 0));
  ASSERT_NE(static_cast<void*>(other), MAP_FAILED);
  EXPECT_EQ(other[4096 / 8 * 5], 0x1122334455667788ull);
  munmap(other, kSize0);
  close(fd2);
  munmap(words, kSize0);
  close(fd);
}

TEST_F(FusePassthroughTest, ReadAndWriteKeepTheModulesAnswers) {
  SKIP_WITHOUT_PASSTHROUGH();
  int fd = Open("resmem0");
  ASSERT_GE(fd, 0);
  char buf[4096] = {1};
  EXPECT_EQ(pwrite(fd, buf, sizeof buf, kSize0 - 100), 100);
  EXPECT_EQ(pwrite(fd, buf, sizeof buf, kSize0), -1);
  EXPECT_EQ(errno, ENOSPC);
  EXPECT_EQ(ftruncate(fd, 0), -1);
  EXPECT_EQ(errno, EINVAL);
  struct stat st;
  ASSERT_EQ(fstat(fd, &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), kSize0);
  EXPECT_EQ(pread(fd, buf, sizeof buf, kSize0), 0);
  close(fd);
}

TEST_F(FusePassthroughTest, FaultArmedBeforeTheOpenTakesTheDaemonPath) {
  SKIP_WITHOUT_PASSTHROUGH();
  ASSERT_TRUE(dev_->Control("eio resmem0 1M 64K").ok());
  int fd = Open("resmem0");
  ASSERT_GE(fd, 0);
  EXPECT_NE(StatusLine("io resmem0 ").find("passthrough_files=0 daemon_files=1"), std::string::npos)
      << StatusLine("io resmem0 ");
  auto* bytes = static_cast<volatile uint8_t*>(
      mmap(nullptr, kSize0, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  ASSERT_NE((void*)bytes, MAP_FAILED);
  EXPECT_EQ(SignalOfChild([&] { (void)bytes[(1 << 20) + 100]; }), SIGBUS);
  EXPECT_EQ(SignalOfChild([&] { (void)bytes[(2 << 20)]; }), 0);
  // Cleared, and the daemon-path file closed: the next open is passthrough again.
  ASSERT_TRUE(dev_->Control("clear resmem0").ok());
  munmap((void*)bytes, kSize0);
  close(fd);
  ASSERT_TRUE(WaitForIo("daemon_files=0")) << StatusLine("io resmem0 ");
  fd = Open("resmem0");
  ASSERT_GE(fd, 0);
  EXPECT_NE(StatusLine("io resmem0 ").find("passthrough_files=1 daemon_files=0"), std::string::npos)
      << StatusLine("io resmem0 ");
  close(fd);
}

TEST_F(FusePassthroughTest, FaultIsRefusedWhileAPassthroughFileIsOpen) {
  SKIP_WITHOUT_PASSTHROUGH();
  int fd = Open("resmem0");
  ASSERT_GE(fd, 0);
  Status st = dev_->Control("eio resmem0 1M 64K");
  EXPECT_EQ(st.code(), kInvalidArgument);
  EXPECT_NE(st.message().find("open for passthrough"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("passthrough = false"), std::string::npos) << st.ToString();
  // The other device is free to take faults.
  EXPECT_TRUE(dev_->Control("delay resmem1 0 4096 10").ok());
  close(fd);
  EXPECT_TRUE(dev_->Control("eio resmem0 1M 64K").ok());  // once the file is closed
}

// The kB that /proc/self/smaps gives `field` ("ShmemPmdMapped") for the mapping starting at
// `addr`, or -1 when there is no such mapping or field.
long SmapsKb(const void* addr, const std::string& field) {
  std::ifstream in("/proc/self/smaps");
  char start[32];
  std::snprintf(start, sizeof start, "%lx-", reinterpret_cast<unsigned long>(addr));
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.find('-') != std::string::npos && std::isxdigit(static_cast<unsigned char>(line[0])) &&
        line.find(' ') > line.find('-')) {
      inside = line.rfind(start, 0) == 0;
    } else if (inside && line.rfind(field + ":", 0) == 0) {
      return std::strtol(line.c_str() + field.size() + 1, nullptr, 10);
    }
  }
  return -1;
}

// Whether this process may mount a private tmpfs (what the memory provider needs for 2 MiB pages),
// and the errno when it may not.
int PrivateMountErrno() {
  int fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
  if (fs < 0) return errno;
  close(fs);
  return 0;
}

// Where the process may mount, the device's memory comes in 2 MiB pages (a private huge tmpfs), so
// the first read through a new mapping maps it a 2 MiB page per fault: a PMD mapping where the
// mapping is 2 MiB aligned, instead of a fault per 64 KiB (docs/fuse.md "Cold read").
// Reads one word per 4 KiB of `words` into `out`, without the sanitizers' instrumentation: their
// shadow memory faults in pages of its own and would blur the count of the mapping's faults
// (ASan: 72 minor faults for what is 8 without it).
__attribute__((noinline, no_sanitize("address,thread,undefined"))) void ReadOneWordPer4K(
    const uint64_t* words, uint64_t count, uint64_t* out) {
  for (uint64_t k = 0; k < count; k += 512) out[k / 512] = words[k];
}

TEST_F(FusePassthroughTest, ColdReadMapsTheDeviceTwoMibAtATime) {
  SKIP_WITHOUT_PASSTHROUGH();
  if (int err = PrivateMountErrno()) {
    GTEST_SKIP() << "this process may not mount a private tmpfs (fsopen: " << strerror(err)
                 << "), so the device has 4 KiB pages: " << StatusLine("backing resmem0 ");
  }
  ASSERT_NE(StatusLine("backing resmem0 ").find("tmpfs huge=always, 2 MiB pages"),
            std::string::npos)
      << StatusLine("backing resmem0 ");
  // The producer's data, written on the device side.
  ASSERT_TRUE(dev_->Control("fill resmem0 0 16M 11").ok());
  int fd = Open("resmem0", O_RDONLY);
  ASSERT_GE(fd, 0) << strerror(errno);
  ASSERT_NE(StatusLine("io resmem0 ").find("passthrough_files=1"), std::string::npos)
      << StatusLine("io resmem0 ");
  // A 2 MiB-aligned address: where a PMD can map a 2 MiB page.
  const uint64_t kHuge = 2ull << 20;
  void* hole = mmap(nullptr, kSize0 + kHuge, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(hole, MAP_FAILED);
  auto aligned = (reinterpret_cast<uintptr_t>(hole) + kHuge - 1) & ~(kHuge - 1);
  munmap(hole, kSize0 + kHuge);
  auto* words = static_cast<const uint64_t*>(mmap(reinterpret_cast<void*>(aligned), kSize0,
                                                  PROT_READ, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0));
  ASSERT_EQ(reinterpret_cast<uintptr_t>(words), aligned) << strerror(errno);
  std::vector<uint64_t> seen(kSize0 / 4096, 0);  // touched before the count starts
  struct rusage before, after;
  getrusage(RUSAGE_SELF, &before);
  ReadOneWordPer4K(words, kSize0 / 8, seen.data());
  getrusage(RUSAGE_SELF, &after);
  uint64_t mismatches = 0;
  for (uint64_t k = 0; k < kSize0 / 8; k += 512) mismatches += seen[k / 512] != FillPatternWord(11, k);
  EXPECT_EQ(mismatches, 0u);
  // 16 MiB: 8 faults of 2 MiB (4 KiB pages would take 256, fault-around mapping 64 KiB each).
  EXPECT_LE(after.ru_minflt - before.ru_minflt, 32) << "minor faults for a 16 MiB cold read";
  EXPECT_EQ(SmapsKb(words, "ShmemPmdMapped"), static_cast<long>(kSize0 >> 10));
  munmap(const_cast<uint64_t*>(words), kSize0);
  close(fd);
}

// The backing a provider of one device made with `spec` reports for it (FileSpan::backing).
Result<std::string> BackingOf(const MemoryDeviceSpec& spec) {
  RESMEM_ASSIGN_OR_RETURN(auto provider, MakeMemoryRegionProvider({spec}));
  RESMEM_ASSIGN_OR_RETURN(auto handle, provider->Open(OpenRequest{}));
  MapRequest whole;
  whole.length = spec.size;
  RESMEM_ASSIGN_OR_RETURN(auto mem, handle->Map(whole));
  if (!mem->file_span()) return Status::Internal("the memory provider offers no file");
  return mem->file_span()->backing;
}

// Without the right to mount (a user's CI machine that runs tests as a user), the device is a
// memfd, and the backing says so and why.
TEST(MemoryRegionProviderPages, WithoutTheRightToMountItIsAMemfdSayingWhy) {
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  pid_t pid = fork();
  if (pid == 0) {
    // As an unprivileged user (nobody): no CAP_SYS_ADMIN.
    if (geteuid() == 0 && (setgroups(0, nullptr) != 0 || setresgid(65534, 65534, 65534) != 0 ||
                           setresuid(65534, 65534, 65534) != 0)) {
      _exit(3);
    }
    auto backing = BackingOf(MemoryDeviceSpec());
    std::string text = backing.ok() ? *backing : "error: " + backing.status().ToString();
    (void)!write(out[1], text.data(), text.size());
    _exit(0);
  }
  close(out[1]);
  std::string backing;
  char buf[512];
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) backing.append(buf, n);
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  EXPECT_EQ(backing.rfind("memfd, ", 0), 0u) << backing;
  EXPECT_NE(backing.find("fsopen(tmpfs) refused: Operation not permitted (a private mount needs "
                         "CAP_SYS_ADMIN: run as root)"),
            std::string::npos)
      << backing;
  EXPECT_NE(backing.find("shmem_enabled is "), std::string::npos) << backing;
}

TEST(MemoryRegionProviderPages, MemfdWhenAskedFor) {
  MemoryDeviceSpec spec;
  spec.pages = DevicePages::kMemfd;
  auto backing = BackingOf(spec);
  ASSERT_TRUE(backing.ok()) << backing.status().ToString();
  EXPECT_EQ(backing->rfind("memfd, ", 0), 0u) << *backing;
  EXPECT_NE(backing->find("DevicePages::kMemfd asked for"), std::string::npos) << *backing;
}

TEST(FuseDeviceMount, SharedNamespaceMountIsRemovedOnUnmountEvenAfterDeath) {
  auto provider = MakeMemoryRegionProvider({MemoryDeviceSpec()});
  ASSERT_TRUE(provider.ok());
  MountOptions opts;
  opts.private_namespace = false;
  auto dev = FuseDevice::Mount(*provider.value(), opts);
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  EXPECT_FALSE(dev.value()->private_namespace());
  EXPECT_EQ(ResmemFuseMounts().size(), 1u);
  ASSERT_TRUE(dev.value()->Control("die").ok());
  for (int i = 0; i < 300 && dev.value()->DaemonAlive(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(ResmemFuseMounts().size(), 1u);  // a dead daemon's mount stays until removed
  EXPECT_TRUE(dev.value()->Unmount().ok());
  EXPECT_TRUE(ResmemFuseMounts().empty());
}

TEST(FuseDeviceMount, SharedNamespaceMountIsRemovedWhenTheDaemonIsTerminated) {
  auto provider = MakeMemoryRegionProvider({MemoryDeviceSpec()});
  ASSERT_TRUE(provider.ok());
  MountOptions opts;
  opts.private_namespace = false;
  auto dev = FuseDevice::Mount(*provider.value(), opts);
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  // SIGTERM (what the parent-death signal sends, and what Ctrl-C's SIGINT does alike) makes the
  // daemon unmount by itself.
  kill(dev.value()->daemon_pid(), SIGTERM);
  for (int i = 0; i < 300 && dev.value()->DaemonAlive(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(dev.value()->DaemonAlive());
  EXPECT_TRUE(ResmemFuseMounts().empty());
}

TEST(FuseDeviceMount, MissingFuseDeviceIsAClearUnavailableError) {
  auto provider = MakeMemoryRegionProvider({MemoryDeviceSpec()});
  ASSERT_TRUE(provider.ok());
  MountOptions opts;
  opts.fuse_device = "/nonexistent/fuse";
  auto dev = FuseDevice::Mount(*provider.value(), opts);
  ASSERT_FALSE(dev.ok());
  EXPECT_EQ(dev.status().code(), kUnavailable);
  EXPECT_NE(dev.status().message().find("this machine has no FUSE"), std::string::npos)
      << dev.status().ToString();
}

TEST(FuseDeviceMount, MissingMountDirectoryIsBadInput) {
  auto provider = MakeMemoryRegionProvider({MemoryDeviceSpec()});
  ASSERT_TRUE(provider.ok());
  MountOptions opts;
  opts.mount_dir = "/nonexistent/dir";
  auto dev = FuseDevice::Mount(*provider.value(), opts);
  ASSERT_FALSE(dev.ok());
  EXPECT_EQ(dev.status().code(), kInvalidArgument);
  EXPECT_NE(dev.status().message().find("create it first"), std::string::npos);
}

}  // namespace
}  // namespace resmem::fuse_emu
