#include "backends/kmod/smaps.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace resmem {
namespace {

bool StartsWith(const std::string& s, const char* prefix) {
  return s.compare(0, std::strlen(prefix), prefix) == 0;
}

// A VMA header: "7f3e37000000-7f3e3b000000 rw-s 00000000 00:05 97    /dev/resmem0".
bool ParseHeader(const std::string& line, SmapsVma* vma) {
  unsigned long long start = 0, end = 0, offset = 0;
  char perms[8] = {0};
  int name_at = 0;
  if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %*s %*s%n", &start, &end, perms, &offset,
                  &name_at) < 4) {
    return false;
  }
  vma->start = start;
  vma->end = end;
  vma->perms = perms;
  vma->file_offset = offset;
  std::string rest = name_at > 0 && static_cast<size_t>(name_at) <= line.size()
                         ? line.substr(name_at) : "";
  size_t first = rest.find_first_not_of(" \t");
  vma->path = first == std::string::npos ? "" : rest.substr(first);
  return true;
}

bool IsHeader(const std::string& line) {
  // Headers start with a hex range "a-b"; field lines with "Name:".
  size_t dash = line.find('-');
  size_t colon = line.find(':');
  size_t space = line.find(' ');
  return dash != std::string::npos && dash > 0 && space != std::string::npos && dash < space &&
         (colon == std::string::npos || colon > space);
}

uint64_t KbField(const std::string& line) {
  unsigned long long kb = 0;
  const char* colon = std::strchr(line.c_str(), ':');
  if (colon) std::sscanf(colon + 1, "%llu", &kb);
  return kb * 1024;
}

}  // namespace

bool SmapsVma::HasFlag(const std::string& mnemonic) const {
  for (const auto& f : vm_flags)
    if (f == mnemonic) return true;
  return false;
}

Result<SmapsVma> FindSmapsVma(const std::string& smaps_text, uint64_t addr) {
  std::istringstream in(smaps_text);
  std::string line;
  int line_no = 0;
  bool in_target = false;
  SmapsVma vma;
  while (std::getline(in, line)) {
    ++line_no;
    if (IsHeader(line)) {
      if (in_target) return vma;  // the next VMA begins: ours is complete
      SmapsVma candidate;
      if (!ParseHeader(line, &candidate)) {
        return Status::InvalidArgument("smaps line " + std::to_string(line_no) +
                                       ": cannot parse VMA header '" + line + "'");
      }
      if (addr >= candidate.start && addr < candidate.end) {
        vma = candidate;
        in_target = true;
      }
      continue;
    }
    if (!in_target) continue;
    if (StartsWith(line, "KernelPageSize:")) {
      vma.kernel_page_size = KbField(line);
    } else if (StartsWith(line, "MMUPageSize:")) {
      vma.mmu_page_size = KbField(line);
    } else if (StartsWith(line, "Rss:")) {
      vma.rss = KbField(line);
    } else if (StartsWith(line, "VmFlags:")) {
      std::istringstream flags(line.substr(std::strlen("VmFlags:")));
      std::string f;
      while (flags >> f) vma.vm_flags.push_back(f);
    }
  }
  if (in_target) return vma;
  char hex[32];
  std::snprintf(hex, sizeof(hex), "0x%" PRIx64, addr);
  return Status::Error(kNotFound, std::string("no mapping of this process contains ") + hex +
                                      " (is it mapped? was it unmapped already?)");
}

Result<SmapsVma> ReadSmapsVma(uint64_t addr, const std::string& smaps_path) {
  std::ifstream f(smaps_path);
  if (!f) {
    int err = errno;
    return Status::Errno(err, "cannot read " + smaps_path + ": " + std::strerror(err) +
                                  " (is /proc mounted?)");
  }
  std::stringstream buf;
  buf << f.rdbuf();
  Result<SmapsVma> vma = FindSmapsVma(buf.str(), addr);
  if (!vma.ok()) return vma.status().WithContext(smaps_path);
  return vma;
}

MappingFacts FactsFromSmaps(const SmapsVma& vma) {
  MappingFacts facts;
  facts.length = vma.end - vma.start;
  // VmFlags mnemonics: fs/proc/task_mmu.c show_smap_vma_flags.
  facts.readable = vma.HasFlag("rd");
  facts.writable = vma.HasFlag("wr");
  facts.shared = vma.HasFlag("sh");
  facts.vm_io = vma.HasFlag("io");
  facts.vm_pfnmap = vma.HasFlag("pf");
  facts.vm_mixedmap = vma.HasFlag("mm");
  facts.locked = vma.HasFlag("lo");
  facts.page_size = vma.kernel_page_size;
  const std::string& p = vma.path;
  if (facts.vm_pfnmap) {
    facts.backing = Backing::kDevicePfn;
  } else if (facts.vm_mixedmap || StartsWith(p, "/dev/resmem")) {
    facts.backing = Backing::kDevicePages;
  } else if (vma.HasFlag("ht")) {
    facts.backing = Backing::kHugetlb;
  } else if (StartsWith(p, "/memfd:") || StartsWith(p, "/dev/shm/") || StartsWith(p, "/SYSV")) {
    facts.backing = Backing::kShmem;
  } else if (p.empty() || p == "[heap]" || StartsWith(p, "[stack") || StartsWith(p, "[anon")) {
    facts.backing = Backing::kAnonymous;
  } else if (p[0] == '/') {
    facts.backing = Backing::kFile;
  } else {
    facts.backing = Backing::kUnknown;
  }
  facts.origin = "smaps " + (p.empty() ? std::string("[anon]") : p);
  return facts;
}

Result<MappingFacts> ReadMappingFacts(uint64_t addr) {
  RESMEM_ASSIGN_OR_RETURN(SmapsVma vma, ReadSmapsVma(addr));
  return FactsFromSmaps(vma);
}

}  // namespace resmem
