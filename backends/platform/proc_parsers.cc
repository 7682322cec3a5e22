// Parsers of /proc/iomem, /proc/mtrr, /sys/firmware/memmap, /proc/meminfo, /proc/cpuinfo,
// /proc/cmdline, and the IOMMU's sysfs folders.
#include "backends/platform/proc_parsers.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <sstream>

namespace resmem {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    out.push_back(line);
  }
  return out;
}

std::string Trim(const std::string& s) { return TrimBlanks(s); }

// Strict unsigned parse of all of `s` in `base` (hex accepts an optional 0x).
bool ParseU64(std::string s, int base, uint64_t* out) {
  if (base == 16 && s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s = s.substr(2);
  if (s.empty() || !std::isxdigit(static_cast<unsigned char>(s[0]))) return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s.c_str(), &end, base);
  if (errno || *end) return false;
  *out = v;
  return true;
}

Status BadLine(const char* file, size_t n, const std::string& line, const char* expected) {
  return Status::InvalidArgument(std::string(file) + " line " + std::to_string(n + 1) + ": '" +
                                 line + "' is not of the form " + expected +
                                 "; pass the file's text unchanged");
}

}  // namespace

std::string TrimBlanks(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

Result<std::vector<IomemEntry>> ParseIomem(const std::string& text) {
  std::vector<IomemEntry> out;
  const auto lines = Lines(text);
  bool any_nonzero = false;
  for (size_t n = 0; n < lines.size(); ++n) {
    const std::string& line = lines[n];
    if (Trim(line).empty()) continue;
    size_t spaces = 0;
    while (spaces < line.size() && line[spaces] == ' ') ++spaces;
    const size_t dash = line.find('-', spaces);
    const size_t colon = line.find(" : ", spaces);
    uint64_t start = 0, last = 0;
    if (spaces % 2 || dash == std::string::npos || colon == std::string::npos || dash > colon ||
        !ParseU64(line.substr(spaces, dash - spaces), 16, &start) ||
        !ParseU64(line.substr(dash + 1, colon - dash - 1), 16, &last) || last < start)
      return BadLine("/proc/iomem", n, line, "'[  ]start-end : name' (hex, end inclusive)");
    IomemEntry e;
    e.depth = static_cast<int>(spaces / 2);
    if (!out.empty() ? e.depth > out.back().depth + 1 : e.depth != 0)
      return BadLine("/proc/iomem", n, line, "a child indented one level (2 spaces) deeper");
    e.start = start;
    e.end = last == UINT64_MAX ? UINT64_MAX : last + 1;
    e.name = line.substr(colon + 3);
    any_nonzero = any_nonzero || start != 0 || last != 0;
    out.push_back(e);
  }
  if (!out.empty() && !any_nonzero)
    return Status::Error(kFailedPrecondition,
                         "/proc/iomem shows every address as 0: the kernel hides them from "
                         "non-root readers; read it as root");
  return out;
}

Result<std::vector<MtrrLine>> ParseMtrr(const std::string& text) {
  constexpr const char* kForm =
      "'regNN: base=0x... (  NNMB), size= NNMB, count=N: type' (arch/x86/kernel/cpu/mtrr/if.c)";
  std::vector<MtrrLine> out;
  const auto lines = Lines(text);
  for (size_t n = 0; n < lines.size(); ++n) {
    const std::string line = Trim(lines[n]);
    if (line.empty()) continue;
    MtrrLine m;
    const size_t colon = line.find(':');
    const size_t base_at = line.find("base=");
    const size_t size_at = line.find("size=");
    const size_t count_at = line.find("count=");
    if (line.rfind("reg", 0) != 0 || colon == std::string::npos || base_at == std::string::npos ||
        size_at == std::string::npos || count_at == std::string::npos)
      return BadLine("/proc/mtrr", n, line, kForm);
    uint64_t reg = 0, base = 0, size = 0, count = 0;
    const size_t base_end = line.find_first_of(" (", base_at + 5);
    size_t size_digits = size_at + 5;
    while (size_digits < line.size() && line[size_digits] == ' ') ++size_digits;
    size_t size_end = size_digits;
    while (size_end < line.size() && std::isdigit(static_cast<unsigned char>(line[size_end])))
      ++size_end;
    const size_t count_end = line.find(':', count_at);
    if (!ParseU64(line.substr(3, colon - 3), 10, &reg) ||
        !ParseU64(line.substr(base_at + 5, base_end - base_at - 5), 16, &base) ||
        !ParseU64(line.substr(size_digits, size_end - size_digits), 10, &size) ||
        count_end == std::string::npos ||
        !ParseU64(line.substr(count_at + 6, count_end - count_at - 6), 10, &count))
      return BadLine("/proc/mtrr", n, line, kForm);
    const std::string unit = line.substr(size_end, 2);
    if (unit == "MB") size <<= 20;
    else if (unit == "KB") size <<= 10;
    else return BadLine("/proc/mtrr", n, line, kForm);
    m.reg = static_cast<int>(reg);
    m.base = base;
    m.size = size;
    m.count = static_cast<int>(count);
    m.type_name = Trim(line.substr(count_end + 1));
    if (m.type_name == "write-back") m.type = MemoryType::kWriteBack;
    else if (m.type_name == "write-combining") m.type = MemoryType::kWriteCombining;
    else if (m.type_name == "uncachable") m.type = MemoryType::kUncached;
    else m.type = MemoryType::kUnknown;  // write-through, write-protect
    out.push_back(m);
  }
  return out;
}

Result<std::vector<FirmwareMemmapEntry>> ParseFirmwareMemmap(const std::string& text) {
  std::vector<FirmwareMemmapEntry> out;
  const auto lines = Lines(text);
  for (size_t n = 0; n < lines.size(); ++n) {
    const std::string line = Trim(lines[n]);
    if (line.empty()) continue;
    const size_t s1 = line.find(' ');
    const size_t s2 = s1 == std::string::npos ? s1 : line.find(' ', s1 + 1);
    uint64_t start = 0, last = 0;
    if (s2 == std::string::npos || !ParseU64(line.substr(0, s1), 16, &start) ||
        !ParseU64(line.substr(s1 + 1, s2 - s1 - 1), 16, &last) || last < start)
      return BadLine("/sys/firmware/memmap", n, line, "'0xSTART 0xEND type' (end inclusive)");
    out.push_back({start, last == UINT64_MAX ? UINT64_MAX : last + 1, Trim(line.substr(s2 + 1))});
  }
  return out;
}

Result<uint64_t> ParseMeminfoTotal(const std::string& text) {
  for (const auto& line : Lines(text)) {
    if (line.rfind("MemTotal:", 0) != 0) continue;
    std::istringstream in(line.substr(9));
    uint64_t kb = 0;
    std::string unit;
    if (!(in >> kb >> unit) || unit != "kB")
      return Status::InvalidArgument("/proc/meminfo: '" + line +
                                     "' is not of the form 'MemTotal:  NNN kB'");
    return kb * 1024;
  }
  return Status::Error(kNotFound, "/proc/meminfo has no MemTotal line; pass the whole file");
}

Result<int> ParsePhysAddressBits(const std::string& text) {
  for (const auto& line : Lines(text)) {
    if (line.rfind("address sizes", 0) != 0) continue;
    const size_t colon = line.find(':');
    int bits = 0;
    std::string word;
    std::istringstream in(colon == std::string::npos ? "" : line.substr(colon + 1));
    if (!(in >> bits >> word) || word != "bits" || bits < 32 || bits > 64)
      return Status::InvalidArgument("/proc/cpuinfo: '" + line +
                                     "' is not 'address sizes : NN bits physical, ...'");
    return bits;
  }
  return Status::Error(kNotFound,
                       "/proc/cpuinfo has no 'address sizes' line (not x86?); pass the whole file");
}

std::vector<CmdlineOption> ParseCmdlineOptions(const std::string& text) {
  std::vector<CmdlineOption> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i >= text.size()) break;
    std::string word;
    bool quoted = false;
    for (; i < text.size(); ++i) {
      const char c = text[i];
      if (c == '"') {
        quoted = !quoted;
        continue;
      }
      if (!quoted && std::isspace(static_cast<unsigned char>(c))) break;
      word += c;
    }
    CmdlineOption opt;
    const size_t eq = word.find('=');
    opt.key = word.substr(0, eq);
    if (eq != std::string::npos) {
      opt.value = word.substr(eq + 1);
      opt.has_value = true;
    }
    out.push_back(opt);
  }
  return out;
}

namespace {

std::vector<std::string> Words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

// Device names of one line; a name that is not a PCI device's is kept (platform devices such as
// ACPI companions can sit in a group too) unless it holds a character sysfs never prints.
Status CheckDevices(const std::vector<std::string>& words, size_t from, const std::string& where,
                    const std::string& line, std::vector<std::string>* out) {
  for (size_t i = from; i < words.size(); ++i) {
    for (char c : words[i])
      if (!std::isprint(static_cast<unsigned char>(c)) || c == '/')
        return Status::InvalidArgument(where + ": '" + line + "': '" + words[i] +
                                       "' is not a device name");
    out->push_back(words[i]);
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<IommuUnit>> ParseIommuUnits(const std::string& text) {
  std::vector<IommuUnit> out;
  for (const auto& line : Lines(text)) {
    if (Trim(line).empty()) continue;
    const size_t colon = line.find(':');
    // The unit's name ends at the first ':' followed by a blank or the end (a device name has
    // colons of its own, never followed by a blank).
    size_t cut = std::string::npos;
    for (size_t i = colon; i != std::string::npos && i < line.size(); i = line.find(':', i + 1))
      if (i + 1 == line.size() || line[i + 1] == ' ' || line[i + 1] == '\t') {
        cut = i;
        break;
      }
    IommuUnit u;
    u.name = cut == std::string::npos ? "" : Trim(line.substr(0, cut));
    // A sysfs name: printable, no blank, no '/' (fs/sysfs; the fuzz target found a tab).
    bool printable = !u.name.empty();
    for (char c : u.name)
      printable = printable && std::isgraph(static_cast<unsigned char>(c)) && c != '/';
    if (!printable)
      return Status::InvalidArgument("/sys/class/iommu: '" + line +
                                     "' is not 'UNIT: DEVICE ...' (e.g. 'dmar0: 0000:00:02.0')");
    RESMEM_RETURN_IF_ERROR(CheckDevices(Words(line.substr(cut + 1)), 0, "/sys/class/iommu", line,
                                        &u.devices));
    out.push_back(u);
  }
  return out;
}

const char* IommuDomainTypeName(IommuDomainType t) {
  switch (t) {
    case IommuDomainType::kBlocked: return "blocked";
    case IommuDomainType::kIdentity: return "identity";
    case IommuDomainType::kUnmanaged: return "unmanaged";
    case IommuDomainType::kDma: return "DMA";
    case IommuDomainType::kDmaFq: return "DMA-FQ";
    case IommuDomainType::kUnknown: return "unknown";
  }
  return "unknown";
}

bool IommuDomainTranslates(IommuDomainType t) {
  return t == IommuDomainType::kDma || t == IommuDomainType::kDmaFq;
}

Result<std::vector<IommuGroup>> ParseIommuGroups(const std::string& text) {
  std::vector<IommuGroup> out;
  for (const auto& line : Lines(text)) {
    if (Trim(line).empty()) continue;
    const auto w = Words(line);
    uint64_t id = 0;
    if (w.size() < 2 || !ParseU64(w[0], 10, &id) || id > 1000000)
      return Status::InvalidArgument("/sys/kernel/iommu_groups: '" + line +
                                     "' is not 'N TYPE DEVICE ...' (e.g. '3 DMA-FQ 0000:00:02.0')");
    IommuGroup g;
    g.id = static_cast<int>(id);
    g.type_word = w[1];
    g.type = IommuDomainType::kUnknown;
    for (auto t : {IommuDomainType::kBlocked, IommuDomainType::kIdentity,
                   IommuDomainType::kUnmanaged, IommuDomainType::kDma, IommuDomainType::kDmaFq})
      if (w[1] == IommuDomainTypeName(t)) g.type = t;
    RESMEM_RETURN_IF_ERROR(CheckDevices(w, 2, "/sys/kernel/iommu_groups", line, &g.devices));
    out.push_back(g);
  }
  return out;
}

std::vector<std::string> ParseAcpiTableNames(const std::string& text) {
  std::vector<std::string> out;
  for (const auto& line : Lines(text))
    if (std::string t = Trim(line); !t.empty()) out.push_back(t);
  return out;
}

std::string ParseCpuVendor(const std::string& text) {
  for (const auto& line : Lines(text)) {
    if (line.rfind("vendor_id", 0) != 0) continue;
    const size_t colon = line.find(':');
    return colon == std::string::npos ? "" : Trim(line.substr(colon + 1));
  }
  return "";
}

}  // namespace resmem
