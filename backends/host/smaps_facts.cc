#include "backends/host/smaps_facts.h"

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace resmem::host {
namespace {

Result<std::string> ReadFile(const char* path) {
  std::ifstream in(path);
  if (!in) return Status::Errno(errno, std::string("open ") + path + ": cannot read it");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A VMA header line: "7f12a000-7f12b000 rw-s 00000000 00:05 1234   /memfd:resmem (deleted)".
bool ParseHeader(const std::string& line, uint64_t* start, uint64_t* end, std::string* perms,
                 std::string* path) {
  unsigned long long s = 0, e = 0;
  char p[8] = {0};
  int consumed = 0;
  if (std::sscanf(line.c_str(), "%llx-%llx %7s %*s %*s %*s%n", &s, &e, p, &consumed) < 3)
    return false;
  *start = s;
  *end = e;
  *perms = p;
  std::string rest = consumed > 0 && consumed <= static_cast<int>(line.size())
                         ? line.substr(consumed) : "";
  size_t first = rest.find_first_not_of(' ');
  *path = first == std::string::npos ? "" : rest.substr(first);
  return true;
}

Backing BackingFromPath(const std::string& path, bool hugetlb) {
  // hugetlb first: a hugetlbfs file and MAP_HUGETLB both show "ht" in VmFlags (proc.rst).
  if (hugetlb) return Backing::kHugetlb;
  if (path.rfind("/memfd:", 0) == 0 || path.rfind("/dev/shm/", 0) == 0 ||
      path.rfind("/SYSV", 0) == 0)
    return Backing::kShmem;
  if (path.empty() || path[0] == '[') return Backing::kAnonymous;
  return Backing::kFile;
}

}  // namespace

Result<MappingFacts> ParseSmapsFacts(const std::string& text, uint64_t address) {
  std::istringstream in(text);
  std::string line;
  bool inside = false;
  MappingFacts facts;
  std::string path;
  bool hugetlb = false;
  bool found = false;
  while (std::getline(in, line)) {
    uint64_t s, e;
    std::string perms, p;
    if (!line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) &&
        line.find('-') != std::string::npos && ParseHeader(line, &s, &e, &perms, &p) &&
        line.find(':') > line.find(' ')) {
      if (found) break;  // the VMA we wanted ended
      inside = address >= s && address < e;
      if (inside) {
        found = true;
        facts = MappingFacts();
        facts.length = e - s;
        facts.readable = perms.size() > 0 && perms[0] == 'r';
        facts.writable = perms.size() > 1 && perms[1] == 'w';
        facts.shared = perms.size() > 3 && perms[3] == 's';
        path = p;
      }
      continue;
    }
    if (!inside) continue;
    unsigned long long kb = 0;
    if (std::sscanf(line.c_str(), "KernelPageSize: %llu kB", &kb) == 1) {
      facts.page_size = kb * 1024;
    } else if (std::sscanf(line.c_str(), "Rss: %llu kB", &kb) == 1) {
      facts.resident = facts.length > 0 && kb * 1024 >= facts.length;
    } else if (line.rfind("VmFlags:", 0) == 0) {
      std::istringstream flags(line.substr(8));
      std::string f;
      while (flags >> f) {
        if (f == "io") facts.vm_io = true;
        if (f == "pf") facts.vm_pfnmap = true;
        if (f == "mm") facts.vm_mixedmap = true;
        if (f == "lo") facts.locked = true;
        if (f == "ht") hugetlb = true;
        if (f == "hg") facts.transparent_huge = true;
        if (f == "sh") facts.shared = true;
      }
    }
  }
  if (!found) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "0x%" PRIx64, address);
    return Status::Error(kNotFound, std::string("no mapping in smaps contains address ") + buf +
                                        ": map the memory before reading its facts");
  }
  facts.backing = facts.vm_pfnmap ? Backing::kDevicePfn : BackingFromPath(path, hugetlb);
  facts.memory_type = MemoryType::kWriteBack;  // ordinary RAM mappings are WB (PAT default)
  facts.origin = "smaps";
  return facts;
}

Result<MappingFacts> ReadSmapsFacts(uint64_t address) {
  RESMEM_ASSIGN_OR_RETURN(std::string text, ReadFile("/proc/self/smaps"));
  return ParseSmapsFacts(text, address);
}

Result<VmaSpan> FindNamedVma(const std::string& name) {
  RESMEM_ASSIGN_OR_RETURN(std::string text, ReadFile("/proc/self/maps"));
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    uint64_t s, e;
    std::string perms, p;
    if (ParseHeader(line, &s, &e, &perms, &p) && p == name) return VmaSpan{s, e - s};
  }
  return Status::Error(kNotFound, "no " + name + " mapping in /proc/self/maps on this kernel");
}

}  // namespace resmem::host
