#include "backends/fuse/fuse_region.h"
#include "backends/api/uapi_info.h"

#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "kmod/uapi/resmem_ioctl.h"

namespace resmem {
namespace {

// --- SIGBUS guard -------------------------------------------------------------------------------
// A page the daemon cannot deliver raises SIGBUS in the toucher (FACTS.md "FUSE": EIO from read ->
// SIGBUS). Guarded copies turn it into a Status; a SIGBUS outside a guarded copy goes to whatever
// handler was there before (the default one kills the process, as it should).
// volatile plus signal fences: the stores around the copy must not be merged or dropped by the
// optimiser, which knows memcpy never reads t_guard (a -O2 build lost the guard otherwise).
thread_local sigjmp_buf* volatile t_guard = nullptr;
struct sigaction g_previous_bus;
std::once_flag g_install_once;

void OnSigbus(int signo, siginfo_t* info, void* ctx) {
  if (t_guard) siglongjmp(*t_guard, 1);
  sigaction(SIGBUS, &g_previous_bus, nullptr);  // re-executing the access delivers it there
}

void InstallSigbusGuard() {
  std::call_once(g_install_once, [] {
    struct sigaction sa {};
    sa.sa_sigaction = OnSigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &g_previous_bus);
  });
}

// Copies len bytes; false when a SIGBUS interrupted it.
bool GuardedCopy(void* dst, const void* src, uint64_t len) {
  sigjmp_buf env;
  if (sigsetjmp(env, 1) != 0) {
    t_guard = nullptr;
    return false;
  }
  t_guard = &env;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  std::memcpy(dst, src, len);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  t_guard = nullptr;
  return true;
}

std::string Errstr(int err) {
  const char* n = ErrnoName(err);
  return std::string(n && *n ? n : "errno") + " (" + std::strerror(err) + ")";
}

class FuseMapping : public HostMemory {
 public:
  FuseMapping(std::string path, uint8_t* base, uint64_t length, uint64_t offset,
              const RegionInfo& info, const MapRequest& req)
      : path_(std::move(path)), base_(base), offset_(offset) {
    facts_.length = length;
    facts_.readable = true;
    facts_.writable = req.writable;
    facts_.shared = req.shared;
    // The emulated device's mode, as the kernel module would set it (kmod/resmem.c: pfnmap uses
    // remap_pfn_range -> VM_IO|VM_PFNMAP; pages inserts struct pages -> VM_MIXEDMAP).
    facts_.vm_io = facts_.vm_pfnmap = info.mode == MapMode::kPfnmap;
    facts_.vm_mixedmap = info.mode == MapMode::kPages;
    facts_.backing = info.mode == MapMode::kPfnmap ? Backing::kDevicePfn : Backing::kDevicePages;
    facts_.memory_type = info.cache == CacheType::kWriteBack       ? MemoryType::kWriteBack
                         : info.cache == CacheType::kWriteCombining ? MemoryType::kWriteCombining
                                                                    : MemoryType::kUncached;
    facts_.physically_contiguous = true;
    facts_.phys_addr = info.phys_addr + offset;
    facts_.origin = "fuse-emulated";
  }
  ~FuseMapping() override { munmap(base_, facts_.length); }
  uint64_t size() const override { return facts_.length; }
  const MappingFacts& facts() const override { return facts_; }
  uint64_t address() const override { return reinterpret_cast<uint64_t>(base_); }
  uint8_t* data() override { return base_; }
  Status Read(uint64_t offset, void* out, uint64_t len) override {
    RESMEM_RETURN_IF_ERROR(CheckSpan(*this, offset, len, "read"));
    if (!GuardedCopy(out, base_ + offset, len)) return Bus("reading", offset, len);
    return Status::Ok();
  }
  Status Write(uint64_t offset, const void* in, uint64_t len) override {
    RESMEM_RETURN_IF_ERROR(CheckSpan(*this, offset, len, "write"));
    if (!facts_.writable) {
      return Status::Signal(SIGSEGV, "write through a read-only mapping of " + path_ +
                                         ": map it with writable = true");
    }
    if (!GuardedCopy(base_ + offset, in, len)) return Bus("writing", offset, len);
    return Status::Ok();
  }
  std::string Describe() const override {
    char buf[64];
    std::snprintf(buf, sizeof buf, " mapped at 0x%llx", static_cast<unsigned long long>(address()));
    return path_ + " [+" + std::to_string(offset_) + ", " + FormatSize(facts_.length) + "]" + buf;
  }

 private:
  Status Bus(const char* what, uint64_t offset, uint64_t len) const {
    return Status::Signal(SIGBUS, std::string("SIGBUS ") + what + " [" + std::to_string(offset) +
                                      ", +" + std::to_string(len) + ") of " + path_ +
                                      ": the FUSE daemon failed the page (an eio fault, or the "
                                      "daemon is gone); see the mount's .control");
  }
  std::string path_;
  uint8_t* base_;
  uint64_t offset_;
  MappingFacts facts_;
};

class FuseHandle : public RegionHandle {
 public:
  FuseHandle(std::string path, int fd, bool writable)
      : path_(std::move(path)), fd_(fd), writable_(writable) {}
  ~FuseHandle() override { close(fd_); }

  Result<RegionInfo> Info() override {
    resmem_info raw{};
    if (ioctl(fd_, RESMEM_IOC_INFO, &raw) != 0) {
      int err = errno;
      return Status::Errno(err, "ioctl RESMEM_IOC_INFO on " + path_ + ": " + Errstr(err) +
                                    (err == ENOTCONN || err == ECONNABORTED ? ": the FUSE daemon is gone; remount"
                                                                     : ""));
    }
    return RegionInfoFromUapi(raw, "/dev/" + std::string(raw.name, strnlen(raw.name, sizeof raw.name)));
  }

  Result<std::unique_ptr<HostMemory>> Map(const MapRequest& request) override {
    RESMEM_ASSIGN_OR_RETURN(RegionInfo info, Info());
    if (request.writable && !writable_) {
      return Status::Errno(EACCES, "mmap PROT_WRITE of " + path_ +
                                       " opened read-only: open it with writable = true");
    }
    int prot = PROT_READ | (request.writable ? PROT_WRITE : 0);
    int flags = request.shared ? MAP_SHARED : MAP_PRIVATE;
    void* p = mmap(nullptr, request.length, prot, flags, fd_, static_cast<off_t>(request.offset));
    if (p == MAP_FAILED) {
      int err = errno;
      std::string hint = err == ENODEV ? ": the device refuses mmap (refuse-mmap in .control)"
                         : err == EINVAL ? ": offset must be page aligned and length non-zero"
                                         : "";
      return Status::Errno(err, "mmap " + path_ + " [+" + std::to_string(request.offset) + ", " +
                                    std::to_string(request.length) + "]: " + Errstr(err) + hint);
    }
    InstallSigbusGuard();
    return std::unique_ptr<HostMemory>(new FuseMapping(
        path_, static_cast<uint8_t*>(p), request.length, request.offset, info, request));
  }

  Status Ioctl(unsigned long cmd, void* arg) override {
    if (ioctl(fd_, cmd, arg) != 0) {
      int err = errno;
      return Status::Errno(err, "ioctl " + std::to_string(cmd) + " on " + path_ + ": " +
                                    Errstr(err));
    }
    return Status::Ok();
  }

 private:
  std::string path_;
  int fd_;
  bool writable_;
};

class FuseRegionProvider : public RegionProvider {
 public:
  explicit FuseRegionProvider(std::string dir) : dir_(std::move(dir)) {
    while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
  }
  std::string name() const override { return "fuse"; }

  Result<std::vector<std::string>> List() override {
    RESMEM_RETURN_IF_ERROR(CheckMount());
    DIR* d = opendir(dir_.c_str());
    if (!d) {
      int err = errno;
      return Status::Errno(err, "cannot list " + dir_ + ": " + Errstr(err));
    }
    std::vector<std::string> out;
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      out.push_back(std::string("/dev/") + e->d_name);
    }
    closedir(d);
    std::sort(out.begin(), out.end());
    return out;
  }

  Result<std::unique_ptr<RegionHandle>> Open(const OpenRequest& request) override {
    RESMEM_RETURN_IF_ERROR(CheckMount());
    std::string path;
    if (request.path.empty()) {
      RESMEM_ASSIGN_OR_RETURN(auto names, List());
      if (names.empty()) {
        return Status::Errno(ENOENT, "no device file in " + dir_ + ": is the daemon serving one?");
      }
      path = FilePath(names.front());
    } else {
      path = FilePath(request.path);
    }
    int flags = (request.writable ? O_RDWR : O_RDONLY) | (request.sync ? O_SYNC : 0) | O_CLOEXEC;
    int fd = open(path.c_str(), flags);
    if (fd < 0) {
      int err = errno;
      return Status::Errno(err, "open " + path + ": " + Errstr(err) +
                                    (err == ENOENT ? ": List() shows the devices of this mount"
                                     : err == ENOTCONN ? ": the FUSE daemon is gone; remount"
                                                       : ""));
    }
    return std::unique_ptr<RegionHandle>(new FuseHandle(path, fd, request.writable));
  }

 private:
  // "/dev/resmem0" and "resmem0" name a file of the mount; a path already inside it stays.
  std::string FilePath(const std::string& p) const {
    if (p.rfind(dir_ + "/", 0) == 0) return p;
    return dir_ + "/" + p.substr(p.rfind('/') + 1);
  }
  Status CheckMount() const {
    struct stat st;
    if (stat(dir_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      int err = errno;
      return Status::Unavailable("no FUSE-emulated device mount at '" + dir_ + "' (" +
                                 Errstr(err) +
                                 "): start one with `resmem fuse --machine PRESET --mount DIR`");
    }
    return Status::Ok();
  }
  std::string dir_;
};

}  // namespace

std::unique_ptr<RegionProvider> MakeFuseRegionProvider(std::string mount_dir) {
  return std::unique_ptr<RegionProvider>(new FuseRegionProvider(std::move(mount_dir)));
}

}  // namespace resmem
