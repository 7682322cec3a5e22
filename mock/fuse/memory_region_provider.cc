#include "mock/fuse/memory_region_provider.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <set>

#include "kmod/uapi/resmem_ioctl.h"

namespace resmem::fuse_emu {
namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kHugePage = 2ull << 20;  // x86-64's PMD size, tmpfs's huge page

// The machine's shmem huge-page policy: the bracketed word of shmem_enabled ("never" on the build
// machine), or why it cannot be read.
std::string ShmemEnabled() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/shmem_enabled");
  std::string word;
  while (in >> word) {
    if (word.size() > 2 && word.front() == '[') return word.substr(1, word.size() - 2);
  }
  return "unreadable (no transparent huge pages?)";
}

// The size of the pages the kernel gives a shmem file: mm/shmem.c shmem_getattr reports
// HPAGE_PMD_SIZE as st_blksize when the file's huge-page policy (its mount's huge= option, or
// shmem_enabled for a memfd) allows PMD-sized folios without a mapping's MADV_HUGEPAGE, else
// PAGE_SIZE. A probe of what the kernel will do, not of its version.
uint64_t PageSizeOf(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 && st.st_blksize > 0 ? static_cast<uint64_t>(st.st_blksize) : kPage;
}

// An unlinked file of a private tmpfs mounted huge=always and sized to the device (rounded up to
// whole huge pages), through the mount API (fsopen/fsconfig/fsmount, Linux 5.2+): the mount is
// never attached to a directory, so it is in no namespace's mount table, and it goes when the file
// is closed. Needs CAP_SYS_ADMIN (fs/fsopen.c), which FUSE passthrough needs as well
// (FUSE_DEV_IOC_BACKING_OPEN). Returns the descriptor, or -1 and the reason in *why_not.
int OpenHugeTmpfsFile(uint64_t size, std::string* why_not) {
  int fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
  if (fs < 0) {
    int err = errno;
    *why_not = std::string("fsopen(tmpfs) refused: ") + std::strerror(err) +
               (err == EPERM ? " (a private mount needs CAP_SYS_ADMIN: run as root)" : "");
    return -1;
  }
  const std::string limit = std::to_string((size + kHugePage - 1) / kHugePage * kHugePage);
  const char* step = nullptr;
  int mnt = -1, fd = -1, err = 0;
  if (fsconfig(fs, FSCONFIG_SET_STRING, "huge", "always", 0) < 0) {
    step = "fsconfig(huge=always)";
  } else if (fsconfig(fs, FSCONFIG_SET_STRING, "size", limit.c_str(), 0) < 0) {
    step = "fsconfig(size)";
  } else if (fsconfig(fs, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) < 0) {
    step = "fsconfig(create)";
  } else if ((mnt = fsmount(fs, FSMOUNT_CLOEXEC,
                            MOUNT_ATTR_NOEXEC | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)) < 0) {
    step = "fsmount";
  } else if ((fd = openat(mnt, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600)) < 0) {
    step = "open(O_TMPFILE)";
  }
  if (step) err = errno;
  if (mnt >= 0) close(mnt);
  close(fs);
  if (step) {
    *why_not = std::string(step) + " of a private tmpfs failed: " + std::strerror(err);
    return -1;
  }
  return fd;
}

// The device's file and what it is (HostMemory::FileSpan::backing).
struct DeviceFile {
  int fd = -1;
  std::string backing;
  bool advise_huge = false;  // madvise(MADV_HUGEPAGE) the provider's mapping of it
};

Result<DeviceFile> CreateDeviceFile(const MemoryDeviceSpec& spec) {
  std::string why_not = "DevicePages::kMemfd asked for";
  if (spec.pages == DevicePages::kHugeWherePossible) {
    int fd = OpenHugeTmpfsFile(spec.size, &why_not);
    if (fd >= 0) {
      uint64_t page = PageSizeOf(fd);
      if (page >= kHugePage) {
        return DeviceFile{fd, "tmpfs huge=always, " + FormatSize(page) +
                                  " pages (a private mount: the first touch of a new mapping maps "
                                  "a whole page per fault where the mapping is 2 MiB aligned, "
                                  "else 64 KiB of it)"};
      }
      close(fd);
      why_not = "a private tmpfs mounted huge=always still gives " + FormatSize(page) +
                " pages (shmem_enabled is " + ShmemEnabled() + ": deny or force override it)";
    }
  }
  // A memfd rather than anonymous shared memory: the same shmem pages, but with a file the FUSE
  // daemon can hand to the kernel for passthrough (HostMemory::file_span).
  std::string name = spec.device.substr(spec.device.rfind('/') + 1);
  int fd = memfd_create(name.c_str(), MFD_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    return Status::Errno(err, "cannot create the memory of " + spec.device + " (memfd_create): " +
                                  std::strerror(err));
  }
  uint64_t page = PageSizeOf(fd);
  const std::string setting = ShmemEnabled();
  // With shmem_enabled "advise" a memfd's page gets 2 MiB when the mapping that touches it first
  // asked for huge pages (mm/shmem.c shmem_huge_global_enabled: VM_HUGEPAGE): the provider's own
  // mapping does, so what the producer writes through it comes in 2 MiB pages (measured on the
  // build machine with shmem_enabled set to advise; with "never" the advice changes nothing).
  bool advise = spec.pages == DevicePages::kHugeWherePossible && page < kHugePage &&
                setting == "advise";
  return DeviceFile{fd,
                    "memfd, " + FormatSize(page) + " pages" +
                        (advise ? ", 2 MiB where the provider's mapping (MADV_HUGEPAGE) touches "
                                  "first"
                                : "") +
                        " (" + why_not + "; shmem_enabled is " + setting + ")",
                    advise};
}

// The device's memory, shared by every handle and mapping of it.
struct DeviceMemory {
  MemoryDeviceSpec spec;
  uint8_t* base = nullptr;
  int fd = -1;  // the shmem file whose mapping base is
  std::string backing;  // what that file is (CreateDeviceFile)
  ~DeviceMemory() {
    if (base) munmap(base, spec.size);
    if (fd >= 0) close(fd);
  }
};

class MemoryView : public HostMemory {
 public:
  MemoryView(std::shared_ptr<DeviceMemory> dev, uint64_t offset, uint64_t length, bool writable,
             bool shared)
      : dev_(std::move(dev)), offset_(offset) {
    facts_.length = length;
    facts_.writable = writable;
    facts_.shared = shared;
    // The memory stands for the driver's mapping, so it carries the driver's mode (region.h).
    facts_.vm_io = facts_.vm_pfnmap = dev_->spec.mode == MapMode::kPfnmap;
    facts_.backing =
        dev_->spec.mode == MapMode::kPfnmap ? Backing::kDevicePfn : Backing::kDevicePages;
    facts_.physically_contiguous = true;
    facts_.phys_addr = dev_->spec.phys_addr + offset;
    facts_.origin = "memory-provider";
  }
  uint64_t size() const override { return facts_.length; }
  const MappingFacts& facts() const override { return facts_; }
  uint64_t address() const override { return reinterpret_cast<uint64_t>(dev_->base + offset_); }
  uint8_t* data() override { return dev_->base + offset_; }
  std::optional<FileSpan> file_span() const override {
    return FileSpan{dev_->fd, offset_, dev_->backing};
  }
  Status Read(uint64_t offset, void* out, uint64_t len) override {
    RESMEM_RETURN_IF_ERROR(CheckSpan(*this, offset, len, "read"));
    std::memcpy(out, dev_->base + offset_ + offset, len);
    return Status::Ok();
  }
  Status Write(uint64_t offset, const void* in, uint64_t len) override {
    RESMEM_RETURN_IF_ERROR(CheckSpan(*this, offset, len, "write"));
    if (!facts_.writable) {
      return Status::Signal(SIGSEGV, "write to a read-only mapping of " + dev_->spec.device +
                                         ": map it with writable = true");
    }
    std::memcpy(dev_->base + offset_ + offset, in, len);
    return Status::Ok();
  }
  std::string Describe() const override {
    return dev_->spec.device + " (memory) [+" + std::to_string(offset_) + ", " +
           FormatSize(facts_.length) + "]";
  }

 private:
  std::shared_ptr<DeviceMemory> dev_;
  uint64_t offset_;
  MappingFacts facts_;
};

class MemoryHandle : public RegionHandle {
 public:
  explicit MemoryHandle(std::shared_ptr<DeviceMemory> dev) : dev_(std::move(dev)) {}
  Result<RegionInfo> Info() override {
    RegionInfo info;
    info.device = dev_->spec.device;
    info.phys_addr = dev_->spec.phys_addr;
    info.size = dev_->spec.size;
    info.mode = dev_->spec.mode;
    info.cache = dev_->spec.cache;
    info.abi_version = dev_->spec.abi_version;
    return info;
  }
  Result<std::unique_ptr<HostMemory>> Map(const MapRequest& r) override {
    // The bounds a driver's mmap checks (kmod/resmem.c honours vm_pgoff and bounds).
    if (r.offset % kPage != 0) {
      return Status::Errno(EINVAL, "mmap offset " + std::to_string(r.offset) +
                                       " is not page aligned: pass a multiple of 4096");
    }
    if (r.length == 0 || r.offset > dev_->spec.size || r.length > dev_->spec.size - r.offset) {
      return Status::Errno(EINVAL, "mmap [" + std::to_string(r.offset) + ", +" +
                                       std::to_string(r.length) + ") is outside " +
                                       dev_->spec.device + " (" + FormatSize(dev_->spec.size) +
                                       "): ask for at most the size INFO reports");
    }
    return std::unique_ptr<HostMemory>(
        new MemoryView(dev_, r.offset, r.length, r.writable, r.shared));
  }
  Status Ioctl(unsigned long cmd, void* arg) override {
    if (!arg) return Status::Errno(EFAULT, "ioctl argument is null: pass a buffer");
    switch (cmd) {
      case RESMEM_IOC_INFO: {
        resmem_info info{};
        info.abi_version = dev_->spec.abi_version;
        info.mode = dev_->spec.mode == MapMode::kPfnmap ? RESMEM_MODE_PFNMAP : RESMEM_MODE_PAGES;
        info.cache = static_cast<__u32>(dev_->spec.cache);
        info.phys_addr = dev_->spec.phys_addr;
        info.size = dev_->spec.size;
        std::string base = dev_->spec.device.substr(dev_->spec.device.rfind('/') + 1);
        std::strncpy(info.name, base.c_str(), sizeof info.name - 1);
        std::memcpy(arg, &info, sizeof info);
        return Status::Ok();
      }
      case RESMEM_IOC_LENGTH: {
        __u64 v = dev_->spec.size;
        std::memcpy(arg, &v, sizeof v);
        return Status::Ok();
      }
      case RESMEM_IOC_PHYS: {
        __u64 v = dev_->spec.phys_addr;
        std::memcpy(arg, &v, sizeof v);
        return Status::Ok();
      }
      default:
        return Status::Errno(ENOTTY, "unknown ioctl " + std::to_string(cmd) +
                                         " for " + dev_->spec.device +
                                         ": use RESMEM_IOC_* from kmod/uapi/resmem_ioctl.h");
    }
  }

 private:
  std::shared_ptr<DeviceMemory> dev_;
};

class MemoryRegionProvider : public RegionProvider {
 public:
  explicit MemoryRegionProvider(std::vector<std::shared_ptr<DeviceMemory>> devs)
      : devs_(std::move(devs)) {}
  std::string name() const override { return "memory"; }
  Result<std::vector<std::string>> List() override {
    std::vector<std::string> out;
    for (const auto& d : devs_) out.push_back(d->spec.device);
    return out;
  }
  Result<std::unique_ptr<RegionHandle>> Open(const OpenRequest& request) override {
    for (const auto& d : devs_) {
      if (request.path.empty() || request.path == d->spec.device) {
        return std::unique_ptr<RegionHandle>(new MemoryHandle(d));
      }
    }
    std::string names;
    for (const auto& d : devs_) names += (names.empty() ? "" : ", ") + d->spec.device;
    return Status::Errno(ENOENT, "no device " + request.path + "; this provider has: " + names);
  }

 private:
  std::vector<std::shared_ptr<DeviceMemory>> devs_;
};

}  // namespace

Result<std::unique_ptr<RegionProvider>> MakeMemoryRegionProvider(
    std::vector<MemoryDeviceSpec> devices) {
  if (devices.empty()) {
    return Status::InvalidArgument("memory region provider needs at least one device spec");
  }
  std::set<std::string> seen;
  std::vector<std::shared_ptr<DeviceMemory>> devs;
  for (auto& spec : devices) {
    if (spec.size == 0 || spec.size % kPage != 0) {
      return Status::InvalidArgument("device " + spec.device + ": size " +
                                     std::to_string(spec.size) +
                                     " must be a non-zero multiple of 4096");
    }
    if (!seen.insert(spec.device).second) {
      return Status::InvalidArgument("device " + spec.device + " is listed twice: name each once");
    }
    RESMEM_ASSIGN_OR_RETURN(DeviceFile file, CreateDeviceFile(spec));
    void* p = MAP_FAILED;
    if (ftruncate(file.fd, static_cast<off_t>(spec.size)) == 0) {
      p = mmap(nullptr, spec.size, PROT_READ | PROT_WRITE, MAP_SHARED, file.fd, 0);
    }
    if (p != MAP_FAILED && file.advise_huge) madvise(p, spec.size, MADV_HUGEPAGE);
    if (p == MAP_FAILED) {
      int err = errno;
      close(file.fd);
      return Status::Errno(err, "cannot allocate " + FormatSize(spec.size) + " for " +
                                    spec.device + " (ftruncate/mmap of its " + file.backing +
                                    "): " + std::strerror(err));
    }
    auto d = std::make_shared<DeviceMemory>();
    d->spec = spec;
    d->base = static_cast<uint8_t*>(p);
    d->fd = file.fd;
    d->backing = std::move(file.backing);
    devs.push_back(std::move(d));
  }
  return std::unique_ptr<RegionProvider>(new MemoryRegionProvider(std::move(devs)));
}

}  // namespace resmem::fuse_emu
