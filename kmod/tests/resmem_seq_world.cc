// The module resmem_seq runs against (resmem_seq_world.h).
#include "kmod/tests/resmem_seq_world.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "kmod/tests/resmem_seq_util.h"

namespace resmem::seq {
namespace {

// A memparse number with its K/M/G/T suffix.
bool ParseSize(const std::string& s, uint64_t* v) {
  char* end = nullptr;
  *v = std::strtoull(s.c_str(), &end, 0);
  if (end == s.c_str()) return false;
  switch (*end) {
    case 'K': case 'k': *v <<= 10; ++end; break;
    case 'M': case 'm': *v <<= 20; ++end; break;
    case 'G': case 'g': *v <<= 30; ++end; break;
    case 'T': case 't': *v <<= 40; ++end; break;
    default: break;
  }
  return *end == '\0';
}

// Parses memmap syntax "64M$0x40000000,1G$0x100000000" (kmod/resmem.c parse_one_range, memparse).
bool ParseRanges(const std::string& text, std::vector<Range>* out) {
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    size_t d = item.find('$');
    if (d == std::string::npos) return false;
    Range r;
    if (!ParseSize(item.substr(0, d), &r.size) || !ParseSize(item.substr(d + 1), &r.start)) return false;
    out->push_back(r);
  }
  return true;
}

// The ranges of the legacy parameters phys= and size= (comma-separated lists, pairwise).
void PhysSizeRanges(const std::string& dir, std::vector<Range>* out) {
  std::vector<uint64_t> phys, size;
  for (auto* pair : {&phys, &size}) {
    std::stringstream in(ReadValue(dir + (pair == &phys ? "phys" : "size")));
    std::string item;
    while (std::getline(in, item, ',')) pair->push_back(std::strtoull(item.c_str(), nullptr, 0));
  }
  for (size_t i = 0; i < phys.size() && i < size.size(); ++i)
    if (size[i]) out->push_back({phys[i], size[i]});
}

}  // namespace

std::string ReadModuleSetup(World* w) {
  std::string dir = "/sys/module/" + w->module_name + "/parameters/";
  std::string params;
  for (const char* p : {"ranges", "phys", "size", "mode", "cache", "huge", "probe", "fault", "dma_bits"}) {
    std::string v = ReadValue(dir + p);
    if (v.empty() || v == "(null)") continue;
    if (std::string(p) == "phys" || std::string(p) == "size") {
      if (v == "0" || v.find_first_not_of("0,") == std::string::npos) continue;
    }
    params += (params.empty() ? "" : " ") + std::string(p) + "=" + v;
  }
  w->params = params;
  std::string ranges = ReadValue(dir + "ranges");
  if (!ranges.empty() && ranges != "(null)") {
    if (!ParseRanges(ranges, &w->ranges)) return "cannot parse " + dir + "ranges: '" + ranges + "'";
  } else {
    PhysSizeRanges(dir, &w->ranges);
  }
  if (w->ranges.empty())
    return "module " + w->module_name + " is not loaded or has no ranges (" + dir + "); load it first";
  return "";
}

std::string FindDevices(World* w) {
  w->devices.clear();
  for (int i = 0; i < 8; ++i) {
    std::string path = "/dev/resmem" + std::to_string(i);
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    Device d;
    d.path = path;
    int rc = ioctl(fd, RESMEM_IOC_INFO, &d.info);
    close(fd);
    if (rc != 0) return path + ": RESMEM_IOC_INFO failed: " + strerror(errno);
    w->devices.push_back(d);
  }
  if (w->devices.empty()) return "no /dev/resmemN to open";
  return "";
}

bool InsideRanges(const World& w, uint64_t pa) {
  for (const auto& r : w.ranges)
    if (pa >= r.start && pa - r.start < r.size) return true;
  return false;
}

std::string LoadModule(World* w) {
  long rc = syscall(SYS_init_module, w->image.data(), w->image.size(), w->params.c_str());
  if (rc != 0) return Fmt("init_module(%s, \"%s\") failed: %s", w->module_file.c_str(), w->params.c_str(), strerror(errno));
  return "";
}

std::vector<std::string> IomemLines(const char* needle) {
  std::vector<std::string> out;
  std::stringstream in(ReadText("/proc/iomem"));
  std::string l;
  while (std::getline(in, l))
    if (l.find(needle) != std::string::npos && l.find("resmem_edu") == std::string::npos) out.push_back(l);
  return out;
}

std::string KmemleakScan() {
  const char* path = "/sys/kernel/debug/kmemleak";
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return "-";
  (void)!write(fd, "scan", 4);
  close(fd);
  return ReadText(path);
}

void KmemleakClear() {
  int fd = open("/sys/kernel/debug/kmemleak", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  (void)!write(fd, "clear", 5);
  close(fd);
}

}  // namespace resmem::seq
