#include "backends/kmod/kmod_region.h"
#include "backends/api/uapi_info.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <utility>
#include <vector>

#include "backends/kmod/smaps.h"
#include "kmod/uapi/resmem_ioctl.h"

namespace resmem {
namespace {

Status ErrnoStatus(int err, const std::string& what) {
  return Status::Errno(err, what + ": " + std::strerror(err));
}

MemoryType MemoryTypeOfCache(CacheType c) {
  switch (c) {
    case CacheType::kWriteCombining: return MemoryType::kWriteCombining;
    case CacheType::kUncached: return MemoryType::kUncached;
    default: return MemoryType::kWriteBack;
  }
}

// One mmap of a /dev/resmemN. Unmapped when destroyed.
class KmodMapping : public HostMemory {
 public:
  KmodMapping(uint8_t* base, uint64_t length, MappingFacts facts, std::string description)
      : base_(base), length_(length), facts_(std::move(facts)), description_(std::move(description)) {}
  ~KmodMapping() override { munmap(base_, length_); }

  uint64_t size() const override { return length_; }
  const MappingFacts& facts() const override { return facts_; }
  uint64_t address() const override { return reinterpret_cast<uint64_t>(base_); }
  uint8_t* data() override { return base_; }
  Status Read(uint64_t offset, void* out, uint64_t len) override {
    RESMEM_RETURN_IF_ERROR(CheckSpan(*this, offset, len, "read"));
    std::memcpy(out, base_ + offset, len);
    return Status::Ok();
  }
  Status Write(uint64_t offset, const void* in, uint64_t len) override {
    RESMEM_RETURN_IF_ERROR(CheckSpan(*this, offset, len, "write"));
    if (!facts_.writable) return Status::Errno(EACCES, "write to a read-only mapping of " + description_);
    std::memcpy(base_ + offset, in, len);
    return Status::Ok();
  }
  std::string Describe() const override { return description_; }

 private:
  uint8_t* base_;
  uint64_t length_;
  MappingFacts facts_;
  std::string description_;
};

class KmodHandle : public RegionHandle {
 public:
  KmodHandle(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~KmodHandle() override { close(fd_); }

  Result<RegionInfo> Info() override {
    struct resmem_info raw;
    std::memset(&raw, 0, sizeof(raw));
    if (ioctl(fd_, RESMEM_IOC_INFO, &raw) != 0) {
      int err = errno;
      return ErrnoStatus(err, "RESMEM_IOC_INFO on " + path_ +
                                  (err == ENOTTY ? " (not a resmem device, or a module older than the info ioctl)" : ""));
    }
    return RegionInfoFromUapi(raw, path_);
  }

  Result<std::unique_ptr<HostMemory>> Map(const MapRequest& request) override {
    RESMEM_ASSIGN_OR_RETURN(RegionInfo info, Info());
    int prot = PROT_READ | (request.writable ? PROT_WRITE : 0);
    int flags = request.shared ? MAP_SHARED : MAP_PRIVATE;
    void* p = mmap(nullptr, request.length, prot, flags, fd_, static_cast<off_t>(request.offset));
    if (p == MAP_FAILED) {
      int err = errno;
      char what[160];
      std::snprintf(what, sizeof(what), "mmap %s offset 0x%" PRIx64 " length 0x%" PRIx64
                    " (device size 0x%" PRIx64 ")", path_.c_str(), request.offset, request.length,
                    info.size);
      return ErrnoStatus(err, what);
    }
    uint64_t addr = reinterpret_cast<uint64_t>(p);
    Result<MappingFacts> facts = ReadMappingFacts(addr);
    if (!facts.ok()) {
      munmap(p, request.length);
      return facts.status().WithContext("facts of the mapping of " + path_);
    }
    MappingFacts f = facts.value();
    f.length = request.length;  // smaps may merge nothing here, but the span is what we mapped
    f.phys_addr = info.phys_addr + request.offset;
    f.physically_contiguous = true;
    f.memory_type = MemoryTypeOfCache(info.cache);
    f.origin += " + RESMEM_IOC_INFO";
    char desc[200];
    std::snprintf(desc, sizeof(desc), "%s [0x%" PRIx64 "+%s] mapped at 0x%" PRIx64, path_.c_str(),
                  info.phys_addr + request.offset, FormatSize(request.length).c_str(), addr);
    return std::unique_ptr<HostMemory>(new KmodMapping(static_cast<uint8_t*>(p), request.length, f, desc));
  }

  Status Ioctl(unsigned long cmd, void* arg) override {
    if (ioctl(fd_, cmd, arg) != 0) {
      int err = errno;
      char what[96];
      std::snprintf(what, sizeof(what), "ioctl 0x%lx on %s", cmd, path_.c_str());
      return ErrnoStatus(err, what);
    }
    return Status::Ok();
  }

 private:
  int fd_;
  std::string path_;
};

class KmodProvider : public RegionProvider {
 public:
  explicit KmodProvider(std::string dev_glob) : glob_(std::move(dev_glob)) {}
  std::string name() const override { return "kmod"; }

  Result<std::vector<std::string>> List() override {
    glob_t g;
    std::memset(&g, 0, sizeof(g));
    int rc = glob(glob_.c_str(), 0, nullptr, &g);
    std::vector<std::string> out;
    if (rc == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
    }
    globfree(&g);
    if (rc != 0 && rc != GLOB_NOMATCH) {
      return Status::Internal("glob " + glob_ + " failed (" + std::to_string(rc) + ")");
    }
    return out;
  }

  Result<std::unique_ptr<RegionHandle>> Open(const OpenRequest& request) override {
    std::string path = request.path;
    if (path.empty()) {
      RESMEM_ASSIGN_OR_RETURN(std::vector<std::string> devices, List());
      if (devices.empty()) {
        return Status::Unavailable("no device matches " + glob_ +
                                   ": the resmem module is not loaded (boot with memmap=SIZE$PHYS, "
                                   "then modprobe resmem ranges=SIZE$PHYS; see docs/kmod.md)");
      }
      path = devices.front();
    }
    int flags = (request.writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | (request.sync ? O_SYNC : 0);
    int fd = open(path.c_str(), flags);
    if (fd < 0) {
      int err = errno;
      std::string hint = err == ENOENT   ? " (module not loaded, or no such range; see docs/kmod.md)"
                         : err == EACCES ? " (add the user to the resmem group: kmod/99-resmem.rules)"
                                         : "";
      return ErrnoStatus(err, "open " + path + hint);
    }
    return std::unique_ptr<RegionHandle>(new KmodHandle(fd, path));
  }

 private:
  std::string glob_;
};

}  // namespace

std::unique_ptr<RegionProvider> MakeKmodRegionProvider(std::string dev_glob) {
  return std::unique_ptr<RegionProvider>(new KmodProvider(std::move(dev_glob)));
}

uint32_t KmodLibraryAbiVersion() { return RESMEM_ABI_VERSION; }

AbiSkew CompareAbi(const std::string& device, uint32_t module_abi, uint32_t library_abi) {
  AbiSkew s;
  s.device = device;
  s.module_abi = module_abi;
  s.library_abi = library_abi;
  s.skewed = module_abi != library_abi;
  if (!s.skewed) {
    s.message = device + ": module and library agree on ioctl ABI " + std::to_string(module_abi);
  } else if (module_abi < library_abi) {
    s.message = device + ": ABI skew: module speaks ABI " + std::to_string(module_abi) +
                ", library " + std::to_string(library_abi) +
                ": the loaded module is older; rebuild and reload it (dkms install, rmmod resmem, modprobe resmem)";
  } else {
    s.message = device + ": ABI skew: module speaks ABI " + std::to_string(module_abi) +
                ", library " + std::to_string(library_abi) +
                ": the library is older than the module; rebuild resmem against kmod/uapi/resmem_ioctl.h";
  }
  return s;
}

Result<AbiSkew> CheckKmodAbi(const std::string& device) {
  auto provider = MakeKmodRegionProvider(device);
  OpenRequest req;
  req.path = device;
  req.writable = false;
  RESMEM_ASSIGN_OR_RETURN(std::unique_ptr<RegionHandle> handle, provider->Open(req));
  RESMEM_ASSIGN_OR_RETURN(RegionInfo info, handle->Info());
  return CompareAbi(device, info.abi_version, KmodLibraryAbiVersion());
}

}  // namespace resmem
