// The real Platform.
#include "backends/platform/host_platform.h"

#include <sched.h>
#include <sys/utsname.h>

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "backends/api/clock.h"
#include "backends/platform/module_file.h"
#include "backends/platform/module_policy_parsers.h"
#include "backends/platform/proc_parsers.h"

namespace resmem {
namespace {

// malloc'ed memory of this process: real address and data, anonymous WB facts. malloc leaves
// the pages untouched, so the first write faults them in, as a fresh `new` does (seed 000).
class HeapMemory : public HostMemory {
 public:
  HeapMemory(uint8_t* data, uint64_t size) : data_(data), size_(size) {
    facts_.length = size;
    facts_.shared = false;
    facts_.backing = Backing::kAnonymous;
    facts_.memory_type = MemoryType::kWriteBack;
    facts_.origin = "malloc";
  }
  ~HeapMemory() override { std::free(data_); }
  uint64_t size() const override { return size_; }
  const MappingFacts& facts() const override { return facts_; }
  uint64_t address() const override { return reinterpret_cast<uint64_t>(data_); }
  uint8_t* data() override { return data_; }
  Status Read(uint64_t offset, void* out, uint64_t len) override {
    RESMEM_RETURN_IF_ERROR(CheckSpan(*this, offset, len, "read"));
    std::memcpy(out, data_ + offset, len);
    return Status::Ok();
  }
  Status Write(uint64_t offset, const void* in, uint64_t len) override {
    RESMEM_RETURN_IF_ERROR(CheckSpan(*this, offset, len, "write"));
    std::memcpy(data_ + offset, in, len);
    return Status::Ok();
  }
  std::string Describe() const override {
    char buf[64];
    std::snprintf(buf, sizeof buf, " at 0x%" PRIx64, address());
    return "malloc " + FormatSize(size_) + buf;
  }

 private:
  uint8_t* data_;
  uint64_t size_;
  MappingFacts facts_;
};

Result<std::string> ReadWholeFile(const std::string& path) {
  // /proc files report size 0: read until EOF.
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    const int err = errno;
    return Status::Errno(err, "cannot open " + path + ": " + std::strerror(err) +
                                  (err == EACCES ? " (run as root)" : ""));
  }
  std::string text;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  const bool failed = std::ferror(f);
  const int err = errno;
  std::fclose(f);
  if (failed) return Status::Errno(err, "reading " + path + " failed: " + std::strerror(err));
  return text;
}

std::string FirstLine(const std::string& s) {
  const size_t nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

// drivers/firmware/memmap.c: /sys/firmware/memmap/N/{start,end,type}, one entry per directory.
Result<std::string> RenderFirmwareMemmapDir(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (!d) {
    const int err = errno;
    return Status::Errno(err, "cannot open " + dir + ": " + std::strerror(err) +
                                  " (kernel without CONFIG_FIRMWARE_MEMMAP, or a VM/container "
                                  "that hides it)");
  }
  std::vector<long> entries;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const long n = std::strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0') entries.push_back(n);
  }
  closedir(d);
  std::sort(entries.begin(), entries.end());
  std::string out;
  for (long n : entries) {
    const std::string base = dir + "/" + std::to_string(n) + "/";
    RESMEM_ASSIGN_OR_RETURN(std::string start, ReadWholeFile(base + "start"));
    RESMEM_ASSIGN_OR_RETURN(std::string end, ReadWholeFile(base + "end"));
    RESMEM_ASSIGN_OR_RETURN(std::string type, ReadWholeFile(base + "type"));
    const uint64_t s = std::strtoull(FirstLine(start).c_str(), nullptr, 16);
    const uint64_t e = std::strtoull(FirstLine(end).c_str(), nullptr, 16);
    char buf[64];
    std::snprintf(buf, sizeof buf, "0x%016" PRIx64 " 0x%016" PRIx64 " ", s, e);
    out += buf + FirstLine(type) + "\n";
  }
  return out;
}

// The names in a folder, "." and ".." left out, sorted as text.
Result<std::vector<std::string>> FolderNames(const std::string& dir, const std::string& why_absent) {
  DIR* d = opendir(dir.c_str());
  if (!d) {
    const int err = errno;
    return Status::Errno(err, "cannot open " + dir + ": " + std::strerror(err) + why_absent);
  }
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

// Names in `dir`, or none when it does not exist (a unit or group without a devices/ folder).
std::vector<std::string> NamesOrNone(const std::string& dir) {
  auto n = FolderNames(dir, "");
  return n.ok() ? *n : std::vector<std::string>{};
}

constexpr const char* kNoIommuApi =
    " (a kernel without CONFIG_IOMMU_API, or a container that hides /sys)";

// drivers/iommu/iommu-sysfs.c: /sys/class/iommu/UNIT/devices/DEV, one link per device the unit
// translates for. Rendered "UNIT: DEV DEV" a line (proc_parsers.h).
Result<std::string> RenderIommuUnitsDir(const std::string& dir) {
  RESMEM_ASSIGN_OR_RETURN(auto units, FolderNames(dir, kNoIommuApi));
  std::string out;
  for (const auto& u : units) {
    out += u + ":";
    for (const auto& dev : NamesOrNone(dir + "/" + u + "/devices")) out += " " + dev;
    out += "\n";
  }
  return out;
}

// drivers/iommu/iommu.c: /sys/kernel/iommu_groups/N/{type,devices/DEV}. Rendered "N TYPE DEV ..."
// a line, in numeric order; a group whose type cannot be read says "unknown".
Result<std::string> RenderIommuGroupsDir(const std::string& dir) {
  RESMEM_ASSIGN_OR_RETURN(auto names, FolderNames(dir, kNoIommuApi));
  std::vector<long> groups;
  for (const auto& n : names) {
    char* end = nullptr;
    const long v = std::strtol(n.c_str(), &end, 10);
    if (end != n.c_str() && *end == '\0') groups.push_back(v);
  }
  std::sort(groups.begin(), groups.end());
  std::string out;
  for (long g : groups) {
    const std::string base = dir + "/" + std::to_string(g);
    auto type = ReadWholeFile(base + "/type");  // absent before Linux 5.11
    std::string word = type.ok() ? TrimBlanks(FirstLine(*type)) : "";
    out += std::to_string(g) + " " + (word.empty() ? "unknown" : word);
    for (const auto& dev : NamesOrNone(base + "/devices")) out += " " + dev;
    out += "\n";
  }
  return out;
}

class HostPlatform : public Platform {
 public:
  HostPlatform(std::string root, std::string tool_path)
      : root_(std::move(root)), tool_path_(std::move(tool_path)) {}
  std::string name() const override { return "host"; }

  Result<std::string> ReadSource(const std::string& path) override {
    const std::string sig_prefix = kModuleSignatureSource;
    if (path.rfind(sig_prefix, 0) == 0) {
      const std::string what = path.substr(sig_prefix.size());
      if (what.empty() || (what[0] != '/' && what.find('/') != std::string::npos))
        return Status::InvalidArgument("'" + path + "': give a module name (module-signature:resmem) "
                                       "or an absolute path (module-signature:/tmp/resmem.ko)");
      return RenderModuleSignatureSource(what, root_, tool_path_);
    }
    if (path == "uname:machine") {
      // The running kernel's, so only where the tree is the real one.
      if (!root_.empty()) return Status::Errno(ENOENT, "uname:machine: not in a fake tree (" + root_ + ")");
      struct utsname u;
      if (uname(&u) != 0) return Status::Errno(errno, "uname");
      return std::string(u.machine) + "\n";
    }
    if (path == "getcpu") {
      // The calling thread's CPU and NUMA node (getcpu(2)), as backends/platform/pci_link.h reads it.
      if (!root_.empty()) return Status::Errno(ENOENT, "getcpu: not in a fake tree (" + root_ + ")");
      unsigned cpu = 0, node = 0;
      if (getcpu(&cpu, &node) != 0) return Status::Errno(errno, "getcpu");
      return std::to_string(cpu) + " " + std::to_string(node) + "\n";
    }
    if (path.empty() || path[0] != '/')
      return Status::InvalidArgument("source path '" + path +
                                     "' must be absolute, e.g. /proc/iomem");
    if (path == "/sys/firmware/memmap") return RenderFirmwareMemmapDir(root_ + path);
    if (path == "/sys/class/iommu") return RenderIommuUnitsDir(root_ + path);
    if (path == "/sys/kernel/iommu_groups") return RenderIommuGroupsDir(root_ + path);
    if (path == "/sys/bus/pci/devices") {  // the device names, one a line
      RESMEM_ASSIGN_OR_RETURN(auto devs, FolderNames(root_ + path, " (a machine without PCI)"));
      std::string out;
      for (const auto& n : devs) out += n + "\n";
      return out;
    }
    if (path == "/sys/firmware/acpi/tables") {
      RESMEM_ASSIGN_OR_RETURN(auto names, FolderNames(root_ + path, " (a machine without ACPI)"));
      std::string out;
      for (const auto& n : names) out += n + "\n";
      return out;
    }
    return ReadWholeFile(root_ + path);
  }

  Result<std::unique_ptr<HostMemory>> AllocPageable(uint64_t bytes) override {
    if (bytes == 0) return Status::InvalidArgument("AllocPageable of 0 bytes; ask for at least 1");
    auto* p = static_cast<uint8_t*>(std::malloc(bytes));
    if (!p)
      return Status::Errno(ENOMEM, "malloc of " + FormatSize(bytes) +
                                       " failed; ask for less or free memory");
    return std::unique_ptr<HostMemory>(new HeapMemory(p, bytes));
  }

  Result<double> CopyHost(HostMemory& dst, uint64_t dst_offset, HostMemory& src,
                          uint64_t src_offset, uint64_t length) override {
    RESMEM_RETURN_IF_ERROR(CheckSpan(dst, dst_offset, length, "copy destination"));
    RESMEM_RETURN_IF_ERROR(CheckSpan(src, src_offset, length, "copy source"));
    const double t0 = clock_.NowSeconds();
    if (dst.data() && src.data()) {
      std::memmove(dst.data() + dst_offset, src.data() + src_offset, length);
    } else {
      // One side is not addressable here: bounce through a buffer using the spans' own access.
      std::vector<uint8_t> bounce(std::min<uint64_t>(length, 1 << 20));
      for (uint64_t done = 0; done < length;) {
        const uint64_t n = std::min<uint64_t>(bounce.size(), length - done);
        RESMEM_RETURN_IF_ERROR(src.Read(src_offset + done, bounce.data(), n));
        RESMEM_RETURN_IF_ERROR(dst.Write(dst_offset + done, bounce.data(), n));
        done += n;
      }
    }
    return clock_.NowSeconds() - t0;
  }

  Clock& clock() override { return clock_; }

 private:
  std::string root_;
  std::string tool_path_;
  SteadyClock clock_;
};

}  // namespace

std::unique_ptr<Platform> MakeHostPlatform(const std::string& root, const std::string& tool_path) {
  std::string path = tool_path;
  if (path.empty()) {
    const char* env = std::getenv("PATH");
    path = env && *env ? env : "/usr/local/bin:/usr/bin:/bin";
  }
  return std::make_unique<HostPlatform>(root, path);
}

}  // namespace resmem
