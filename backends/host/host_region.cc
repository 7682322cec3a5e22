#include "backends/host/host_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "backends/host/smaps_facts.h"
#include "backends/api/memory.h"

namespace resmem::host {
namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kHugePage = 2ull << 20;

class MappedMemory : public HostMemory {
 public:
  MappedMemory(uint8_t* base, uint64_t size, uint64_t map_len, MappingFacts facts,
               std::string describe, bool owned)
      : base_(base), size_(size), map_len_(map_len), facts_(std::move(facts)),
        describe_(std::move(describe)), owned_(owned) {}
  ~MappedMemory() override {
    if (owned_) munmap(base_, map_len_);
  }
  uint64_t size() const override { return size_; }
  const MappingFacts& facts() const override { return facts_; }
  uint64_t address() const override { return reinterpret_cast<uint64_t>(base_); }
  uint8_t* data() override { return base_; }
  Status Read(uint64_t offset, void* out, uint64_t len) override {
    RESMEM_RETURN_IF_ERROR(CheckSpan(*this, offset, len, "read"));
    if (!facts_.readable) return Status::Errno(EACCES, "read of a mapping without PROT_READ");
    std::memcpy(out, base_ + offset, len);
    return Status::Ok();
  }
  Status Write(uint64_t offset, const void* in, uint64_t len) override {
    RESMEM_RETURN_IF_ERROR(CheckSpan(*this, offset, len, "write"));
    if (!facts_.writable)
      return Status::Errno(EACCES, "write to a read-only mapping: map it with writable = true");
    std::memcpy(base_ + offset, in, len);
    return Status::Ok();
  }
  std::string Describe() const override { return describe_; }

 private:
  uint8_t* base_;
  uint64_t size_;
  uint64_t map_len_;
  MappingFacts facts_;
  std::string describe_;
  bool owned_;
};

Result<int> MakeBackingFd(HostKind kind, uint64_t bytes, const HostMapOptions& o,
                          std::string* label) {
  int fd = -1;
  if (kind == HostKind::kMemfd) {
    fd = memfd_create("resmem-standin", MFD_CLOEXEC);
    *label = "memfd";
    if (fd < 0) return Status::Errno(errno, "memfd_create: " + std::string(std::strerror(errno)));
  } else {
    std::string dir = kind == HostKind::kShm ? "/dev/shm" : o.file_dir.empty() ? DefaultFileDir() : o.file_dir;
    std::string path = dir + "/resmem-standin-XXXXXX";
    std::vector<char> buf(path.begin(), path.end());
    buf.push_back('\0');
    fd = mkstemp(buf.data());
    if (fd < 0)
      return Status::Errno(errno, "mkstemp in " + dir + ": " + std::strerror(errno) +
                                      " (pick a writable directory with file_dir)");
    *label = buf.data();
    unlink(buf.data());
  }
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int e = errno;
    close(fd);
    return Status::Errno(e, "ftruncate " + *label + " to " + FormatSize(bytes) + ": " +
                                std::strerror(e));
  }
  return fd;
}

}  // namespace

std::string DefaultFileDir() {
  const char* test_tmpdir = std::getenv("TEST_TMPDIR");
  return test_tmpdir && *test_tmpdir ? test_tmpdir : "/var/tmp";
}

const char* HostKindName(HostKind k) {
  switch (k) {
    case HostKind::kMemfd: return "memfd";
    case HostKind::kHugetlb: return "hugetlb";
    case HostKind::kShm: return "shm";
    case HostKind::kFile: return "file";
    case HostKind::kFilePrivate: return "file-private";
    case HostKind::kAnonymous: return "anon";
  }
  return "?";
}

std::vector<HostKind> AllHostKinds() {
  return {HostKind::kMemfd, HostKind::kHugetlb, HostKind::kShm,
          HostKind::kFile, HostKind::kFilePrivate, HostKind::kAnonymous};
}

Result<HostKind> ParseHostKind(const std::string& name) {
  std::string all;
  for (HostKind k : AllHostKinds()) {
    if (name == HostKindName(k)) return k;
    all += std::string(all.empty() ? "" : ", ") + HostKindName(k);
  }
  return Status::InvalidArgument("unknown host memory kind '" + name + "': use one of " + all);
}

Result<std::unique_ptr<HostMemory>> MapHostMemory(HostKind kind, uint64_t bytes,
                                                  const HostMapOptions& o) {
  if (bytes == 0) return Status::InvalidArgument("host memory of 0 bytes: give a size > 0");
  int prot = PROT_READ | (o.writable ? PROT_WRITE : 0);
  int flags = o.noreserve ? MAP_NORESERVE : 0;
  uint64_t map_len = (bytes + kPage - 1) / kPage * kPage;
  void* p = MAP_FAILED;
  std::string label;
  if (kind == HostKind::kAnonymous || kind == HostKind::kHugetlb) {
    flags |= MAP_ANONYMOUS | MAP_PRIVATE;
    const bool gigantic = kind == HostKind::kHugetlb && o.huge_page_size == (1ull << 30);
    if (kind == HostKind::kHugetlb && o.huge_page_size && o.huge_page_size != kHugePage &&
        !gigantic)
      return Status::InvalidArgument("huge page size " + FormatSize(o.huge_page_size) +
                                     ": x86-64 hugetlb pages are 2 MiB or 1 GiB");
    if (kind == HostKind::kHugetlb) {
      const uint64_t hp = gigantic ? (1ull << 30) : kHugePage;
      flags |= MAP_HUGETLB | (gigantic ? (30 << MAP_HUGE_SHIFT) : 0);
      map_len = (bytes + hp - 1) / hp * hp;
    }
    p = mmap(nullptr, map_len, prot, flags, -1, 0);
    label = kind == HostKind::kHugetlb ? (gigantic ? "MAP_HUGETLB|MAP_HUGE_1GB" : "MAP_HUGETLB")
                                       : "anonymous";
    if (p == MAP_FAILED) {
      int e = errno;
      std::string way =
          kind != HostKind::kHugetlb ? ""
          : gigantic ? " (reserve 1 GiB pages first: echo N > "
                       "/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages)"
                     : " (reserve 2 MiB pages first: echo N > /proc/sys/vm/nr_hugepages)";
      return Status::Errno(e, "mmap " + label + " " + FormatSize(map_len) + ": " +
                                  std::strerror(e) + way);
    }
  } else {
    RESMEM_ASSIGN_OR_RETURN(int fd, MakeBackingFd(kind, map_len, o, &label));
    flags |= kind == HostKind::kFilePrivate ? MAP_PRIVATE : MAP_SHARED;
    p = mmap(nullptr, map_len, prot, flags, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED)
      return Status::Errno(e, "mmap " + label + " " + FormatSize(map_len) + ": " + std::strerror(e));
  }
  uint8_t* base = static_cast<uint8_t*>(p);
  if (kind == HostKind::kAnonymous && o.transparent_huge >= 0 &&
      madvise(base, map_len, o.transparent_huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) != 0) {
    int e = errno;
    munmap(base, map_len);
    return Status::Errno(e, std::string("madvise ") +
                                (o.transparent_huge ? "MADV_HUGEPAGE" : "MADV_NOHUGEPAGE") + ": " +
                                std::strerror(e));
  }
  if (o.populate && o.writable)
    for (uint64_t off = 0; off < map_len; off += kPage) base[off] = 0;
  auto facts = ReadSmapsFacts(reinterpret_cast<uint64_t>(base));
  if (!facts.ok()) {
    munmap(base, map_len);
    return facts.status();
  }
  MappingFacts f = facts.value();
  f.length = bytes;
  std::string describe = std::string("host:") + HostKindName(kind) + " [" + label + " " +
                         FormatSize(bytes) + "] mapped at " + HexAddress(reinterpret_cast<uint64_t>(base));
  return std::unique_ptr<HostMemory>(
      new MappedMemory(base, bytes, map_len, f, std::move(describe), true));
}

Result<std::unique_ptr<HostMemory>> WrapForeignMapping(uint64_t address, uint64_t length,
                                                       const std::string& describe) {
  RESMEM_ASSIGN_OR_RETURN(MappingFacts f, ReadSmapsFacts(address));
  f.length = length;
  return std::unique_ptr<HostMemory>(new MappedMemory(reinterpret_cast<uint8_t*>(address), length,
                                                      length, f, describe, false));
}

namespace {

class HostHandle : public RegionHandle {
 public:
  HostHandle(std::string device, HostKind kind, uint64_t size, HostMapOptions o, bool writable)
      : device_(std::move(device)), kind_(kind), size_(size), o_(std::move(o)),
        writable_(writable) {}
  Result<RegionInfo> Info() override {
    RegionInfo info;
    info.device = device_;
    info.phys_addr = 0;  // a stand-in has no fixed physical range
    info.size = size_;
    info.mode = MapMode::kPages;  // ordinary pages with struct pages
    info.cache = CacheType::kWriteBack;
    return info;
  }
  Result<std::unique_ptr<HostMemory>> Map(const MapRequest& r) override {
    if (r.offset % kPage != 0)
      return Status::Errno(EINVAL, "mmap offset " + HexAddress(r.offset) + " is not page aligned");
    if (r.length == 0) return Status::Errno(EINVAL, "mmap length 0: give a length");
    if (r.offset > size_ || r.length > size_ - r.offset)
      return Status::Errno(EINVAL, "mmap [" + HexAddress(r.offset) + "+" + FormatSize(r.length) +
                                       ") runs past the end of " + device_ + " (" +
                                       FormatSize(size_) + ")");
    if (r.writable && !writable_)
      return Status::Errno(EACCES, "writable mapping of " + device_ + " opened read-only");
    HostMapOptions o = o_;
    o.writable = r.writable;
    HostKind kind = kind_;
    if (!r.shared && (kind == HostKind::kFile)) kind = HostKind::kFilePrivate;
    // Each mapping gets its own backing object: the stand-in models the device's memory, and
    // callers of one stand-in map it once.
    return MapHostMemory(kind, r.length, o);
  }
  Status Ioctl(unsigned long cmd, void*) override {
    return Status::Errno(ENOTTY, device_ + " is a host stand-in: it answers no ioctl (" +
                                     HexAddress(cmd) + ")");
  }

 private:
  std::string device_;
  HostKind kind_;
  uint64_t size_;
  HostMapOptions o_;
  bool writable_;
};

}  // namespace

Result<std::vector<std::string>> HostRegionProvider::List() {
  std::vector<std::string> out;
  for (HostKind k : AllHostKinds()) out.push_back(std::string("host:") + HostKindName(k));
  return out;
}

Result<std::unique_ptr<RegionHandle>> HostRegionProvider::Open(const OpenRequest& request) {
  std::string path = request.path.empty() ? "host:memfd" : request.path;
  std::string kind_name = path.rfind("host:", 0) == 0 ? path.substr(5) : path;
  auto kind = ParseHostKind(kind_name);
  if (!kind.ok())
    return Status::Errno(ENOENT, "no device " + path + ": " + kind.status().message() +
                                     " (as host:<kind>)");
  return std::unique_ptr<RegionHandle>(
      new HostHandle(path, kind.value(), size_, options_, request.writable));
}

namespace {

// /proc/meminfo's line `field` ("MemTotal:"), in bytes; 0 when it cannot be read.
uint64_t MeminfoBytes(const std::string& field) {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  while (in >> key >> kb) {
    if (key == field) return kb * 1024;
    in.ignore(1 << 10, '\n');
  }
  return 0;
}

}  // namespace

uint64_t MemTotalBytes() { return MeminfoBytes("MemTotal:"); }

uint64_t MemAvailableBytes() { return MeminfoBytes("MemAvailable:"); }

namespace {

class StandinHandle : public RegionHandle {
 public:
  StandinHandle(std::unique_ptr<RegionHandle> device, RegionInfo info, bool writable)
      : device_(std::move(device)), info_(std::move(info)), writable_(writable) {}
  Result<RegionInfo> Info() override { return info_; }
  Result<std::unique_ptr<HostMemory>> Map(const MapRequest& r) override {
    if (info_.mode == MapMode::kPfnmap) {
      auto vvar = FindNamedVma("[vvar]");
      if (vvar.ok() && r.offset % kPage == 0 && r.length > 0 && r.length <= vvar->length) {
        if (r.writable)
          return Status::Errno(EACCES, "the pfnmap stand-in of " + info_.device +
                                           " is the kernel's read-only [vvar] mapping (" +
                                           FormatSize(vvar->length) +
                                           "): map it with writable = false");
        return WrapForeignMapping(vvar->start, r.length,
                                  "stand-in of " + info_.device + ": [vvar] at " +
                                      HexAddress(vvar->start) + " (VM_IO|VM_PFNMAP, read-only)");
      }
    }
    const uint64_t mem_total = MemTotalBytes();
    HostMapOptions o;
    o.noreserve = mem_total != 0 && r.length > mem_total;
    HostRegionProvider memory(info_.size, o);
    OpenRequest open;
    open.path = o.noreserve ? "host:anon" : "host:memfd";
    open.writable = writable_;
    RESMEM_ASSIGN_OR_RETURN(auto handle, memory.Open(open));
    return handle->Map(r);
  }
  Status Ioctl(unsigned long cmd, void*) override {
    return Status::Errno(ENOTTY, "the stand-in of " + info_.device + " answers no ioctl (" +
                                     HexAddress(cmd) + "): no module runs here");
  }

 private:
  std::unique_ptr<RegionHandle> device_;  // the described device, held open as the module's
  RegionInfo info_;
  bool writable_;
};

class StandinProvider : public RegionProvider {
 public:
  explicit StandinProvider(std::shared_ptr<RegionProvider> devices) : devices_(std::move(devices)) {}
  std::string name() const override { return "standin"; }
  Result<std::vector<std::string>> List() override { return devices_->List(); }
  Result<std::unique_ptr<RegionHandle>> Open(const OpenRequest& request) override {
    RESMEM_ASSIGN_OR_RETURN(auto device, devices_->Open(request));
    RESMEM_ASSIGN_OR_RETURN(RegionInfo info, device->Info());
    return std::unique_ptr<RegionHandle>(
        new StandinHandle(std::move(device), std::move(info), request.writable));
  }

 private:
  std::shared_ptr<RegionProvider> devices_;
};

}  // namespace

Result<std::unique_ptr<RegionProvider>> MakeStandinRegionProvider(
    std::shared_ptr<RegionProvider> devices) {
  if (!devices) return Status::InvalidArgument("the stand-in region needs a device description");
  return std::unique_ptr<RegionProvider>(new StandinProvider(std::move(devices)));
}

}  // namespace resmem::host
