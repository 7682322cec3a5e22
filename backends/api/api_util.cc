// Names, parsers and small shared helpers of the backend API.
#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "backends/api/card.h"
#include "backends/api/gpu.h"
#include "backends/api/memory.h"
#include "backends/api/region.h"

namespace resmem {
namespace {

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

struct CudaName {
  int code;
  const char* name;
};

// CUDA 4.1's numbering (driver_types.h of toolkit 4.1, the seed-000 era): cudaErrorUnknown is 30,
// cudaErrorInvalidValue 11; host registration errors were 61/62.
constexpr CudaName kCuda41[] = {
    {0, "cudaSuccess"},
    {1, "cudaErrorMissingConfiguration"},
    {2, "cudaErrorMemoryAllocation"},
    {3, "cudaErrorInitializationError"},
    {4, "cudaErrorLaunchFailure"},
    {11, "cudaErrorInvalidValue"},
    {17, "cudaErrorInvalidDevicePointer"},
    {21, "cudaErrorInvalidMemcpyDirection"},
    {30, "cudaErrorUnknown"},
    {35, "cudaErrorInsufficientDriver"},
    {36, "cudaErrorSetOnActiveProcess"},
    {38, "cudaErrorNoDevice"},
    {49, "cudaErrorIncompatibleDriverContext"},
    {61, "cudaErrorHostMemoryAlreadyRegistered"},
    {62, "cudaErrorHostMemoryNotRegistered"},
};

// CUDA 13.0's numbering (/usr/local/cuda/include/driver_types.h on the build machine).
constexpr CudaName kCuda13[] = {
    {0, "cudaSuccess"},
    {1, "cudaErrorInvalidValue"},
    {2, "cudaErrorMemoryAllocation"},
    {3, "cudaErrorInitializationError"},
    {17, "cudaErrorInvalidDevicePointer"},
    {35, "cudaErrorInsufficientDriver"},
    {36, "cudaErrorSetOnActiveProcess"},
    {46, "cudaErrorDevicesUnavailable"},
    {49, "cudaErrorIncompatibleDriverContext"},
    {100, "cudaErrorNoDevice"},
    {101, "cudaErrorInvalidDevice"},
    {201, "cudaErrorInvalidContext"},
    {211, "cudaErrorNotMapped"},
    {400, "cudaErrorInvalidResourceHandle"},
    {700, "cudaErrorIllegalAddress"},
    {712, "cudaErrorHostMemoryAlreadyRegistered"},
    {713, "cudaErrorHostMemoryNotRegistered"},
    {800, "cudaErrorNotPermitted"},
    {801, "cudaErrorNotSupported"},
    {999, "cudaErrorUnknown"},
};

bool IsLegacyProfile(const std::string& profile) {
  return profile.rfind("cuda-4.", 0) == 0 || profile.rfind("cuda-3.", 0) == 0;
}

}  // namespace

const char* MemoryTypeName(MemoryType t) {
  switch (t) {
    case MemoryType::kWriteBack: return "WB";
    case MemoryType::kWriteCombining: return "WC";
    case MemoryType::kUncached: return "UC";
    case MemoryType::kUncachedMinus: return "UC-";
    case MemoryType::kUnknown: return "?";
  }
  return "?";
}

std::optional<MemoryType> ParseMemoryType(const std::string& s) {
  const std::string l = Lower(s);
  if (l == "wb" || l == "write-back" || l == "writeback") return MemoryType::kWriteBack;
  if (l == "wc" || l == "write-combining" || l == "writecombining") return MemoryType::kWriteCombining;
  if (l == "uc" || l == "uncachable" || l == "uncached") return MemoryType::kUncached;
  if (l == "uc-" || l == "uncached-minus") return MemoryType::kUncachedMinus;
  return std::nullopt;
}

const char* BackingName(Backing b) {
  switch (b) {
    case Backing::kAnonymous: return "anonymous";
    case Backing::kPinnedHost: return "pinned-host";
    case Backing::kShmem: return "shmem";
    case Backing::kHugetlb: return "hugetlb";
    case Backing::kFile: return "file";
    case Backing::kDevicePfn: return "device-pfn";
    case Backing::kDevicePages: return "device-pages";
    case Backing::kFuse: return "fuse";
    case Backing::kUnknown: return "unknown";
  }
  return "unknown";
}

std::optional<Backing> ParseBacking(const std::string& s) {
  for (Backing b : {Backing::kAnonymous, Backing::kPinnedHost, Backing::kShmem, Backing::kHugetlb,
                    Backing::kFile, Backing::kDevicePfn, Backing::kDevicePages, Backing::kFuse,
                    Backing::kUnknown})
    if (Lower(s) == BackingName(b)) return b;
  return std::nullopt;
}

std::string MappingFacts::Describe() const {
  std::string out = shared ? "shared" : "private";
  out += readable ? " r" : " -";
  out += writable ? "w" : "-";
  if (vm_pfnmap) out += " pf";
  if (vm_io) out += " io";
  if (vm_mixedmap) out += " mm";
  if (locked) out += " lo";
  out += std::string(" ") + MemoryTypeName(memory_type);
  out += std::string(" backing=") + BackingName(backing);
  out += " " + FormatSize(length);
  if (phys_addr) {
    char buf[32];
    std::snprintf(buf, sizeof buf, " phys=0x%" PRIx64, *phys_addr);
    out += buf;
  }
  if (pinned) out += " pinned";
  return out;
}

Status CheckSpan(const HostMemory& mem, uint64_t offset, uint64_t len, const char* what) {
  if (offset > mem.size() || len > mem.size() - offset)
    return Status::InvalidArgument(std::string(what) + ": [" + std::to_string(offset) + ", +" +
                                   std::to_string(len) + ") is outside the " +
                                   FormatSize(mem.size()) + " of " + mem.Describe());
  return Status::Ok();
}

Status CheckDeviceSpan(const DeviceBuffer& dev, uint64_t offset, uint64_t len, const char* what) {
  if (offset <= dev.size() && len <= dev.size() - offset) return Status::Ok();
  return Status::InvalidArgument(std::string(what) + ": device range [offset " +
                                 std::to_string(offset) + ", length " + std::to_string(len) +
                                 ") is outside the device buffer of " + std::to_string(dev.size()) +
                                 " bytes (" + FormatSize(dev.size()) + ")");
}

namespace {

// The digits after "0x" of `text`, at most 64 bits.
Result<uint64_t> ParseHexSize(const std::string& digits, const std::string& text) {
  const DigitsRead r = ReadDigits(digits, 16);
  if (!r.digits_only)
    return Status::InvalidArgument("bad hexadecimal size '" + text + "': after 0x only the digits "
                                   "0-9 and a-f, e.g. 0x40000000");
  if (!r.fits) return Status::InvalidArgument("size '" + text + "' does not fit in 64 bits");
  return r.value;
}

// The value of `c` as a digit, `base` or more when it is none of base's digits.
int DigitValue(char c, int base) {
  const unsigned char u = static_cast<unsigned char>(c);
  if (std::isdigit(u)) return c - '0';
  return std::isxdigit(u) ? std::tolower(u) - 'a' + 10 : base;
}

}  // namespace

DigitsRead ReadDigits(const std::string& digits, int base) {
  DigitsRead r;
  r.digits_only = !digits.empty();
  for (char c : digits) r.digits_only = r.digits_only && DigitValue(c, base) < base;
  if (!r.digits_only) return r;
  for (char c : digits) {
    const uint64_t d = static_cast<uint64_t>(DigitValue(c, base));
    if (r.value > (UINT64_MAX - d) / static_cast<uint64_t>(base)) return r;  // fits stays false
    r.value = r.value * static_cast<uint64_t>(base) + d;
  }
  r.fits = true;
  return r;
}

Result<uint64_t> ParseSize(const std::string& text) {
  std::string t;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c)) && c != '_') t += c;
  if (t.empty()) return Status::InvalidArgument("empty size; write e.g. 16M, 188G, 0x1000 or 4096");
  if (t.find_first_of("+-") != std::string::npos)
    return Status::InvalidArgument("bad size '" + text + "': a size has no sign; write e.g. 16M, "
                                   "188G, 0x1000 or 4096");
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) return ParseHexSize(t.substr(2), text);
  // The number: digits, optionally one '.' and more digits; the unit is the rest.
  size_t digits = 0;
  while (digits < t.size() && std::isdigit(static_cast<unsigned char>(t[digits]))) ++digits;
  size_t number_end = digits;
  if (number_end < t.size() && t[number_end] == '.') {
    ++number_end;
    while (number_end < t.size() && std::isdigit(static_cast<unsigned char>(t[number_end])))
      ++number_end;
  }
  if (number_end == 0 || (digits == 0 && number_end == 1))
    return Status::InvalidArgument("bad size '" + text + "'; write e.g. 16M, 188G, 0x1000 or 4096");
  const std::string unit = Lower(t.substr(number_end));
  int shift = 0;
  if (unit == "" || unit == "b") shift = 0;
  else if (unit == "k" || unit == "kb" || unit == "kib") shift = 10;
  else if (unit == "m" || unit == "mb" || unit == "mib") shift = 20;
  else if (unit == "g" || unit == "gb" || unit == "gib") shift = 30;
  else if (unit == "t" || unit == "tb" || unit == "tib") shift = 40;
  else if (unit == "p" || unit == "pb" || unit == "pib") shift = 50;
  else
    return Status::InvalidArgument("bad size unit '" + t.substr(number_end) + "' in '" + text +
                                   "'; use K, M, G, T (binary) or none");
  const Status too_big =
      Status::InvalidArgument("size '" + text + "' does not fit in 64 bits");
  if (number_end == digits || number_end == digits + 1) {
    // A whole number ("4096", "188G", "12."): exact integer arithmetic (a double would round
    // numbers above 2^53 to a neighbour).
    uint64_t v = 0;
    for (size_t i = 0; i < digits; ++i) {
      const uint64_t d = static_cast<uint64_t>(t[i] - '0');
      if (v > (UINT64_MAX - d) / 10) return too_big;
      v = v * 10 + d;
    }
    if (shift && v > (UINT64_MAX >> shift)) return too_big;
    return v << shift;
  }
  // A fraction ("1.5G"): accepted where it is a whole number of bytes, computed exactly. A
  // double holds every integer below 2^53 and "1.5" * 2^30 exactly; above 2^53 its result may
  // be rounded, so such a size must be written as a whole number.
  errno = 0;
  const double bytes = std::ldexp(std::strtod(t.substr(0, number_end).c_str(), nullptr), shift);
  if (errno || bytes >= 9007199254740992.0)  // 2^53
    return Status::InvalidArgument("size '" + text + "' is too large for a fraction; write it "
                                   "as a whole number of bytes (or of a smaller unit)");
  if (bytes != std::floor(bytes))
    return Status::InvalidArgument("size '" + text + "' is not a whole number of bytes");
  return static_cast<uint64_t>(bytes);
}

std::string HexAddress(uint64_t value) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, value);
  return buf;
}

std::string FormatSize(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  double v = static_cast<double>(bytes);
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  char buf[48];
  if (u == 0 || v == std::floor(v))
    std::snprintf(buf, sizeof buf, "%.0f %s", v, kUnits[u]);
  else
    std::snprintf(buf, sizeof buf, "%.2f %s", v, kUnits[u]);
  return buf;
}

const char* MapModeName(MapMode m) { return m == MapMode::kPages ? "pages" : "pfnmap"; }
std::optional<MapMode> ParseMapMode(const std::string& s) {
  const std::string l = Lower(s);
  if (l == "pfnmap") return MapMode::kPfnmap;
  if (l == "pages") return MapMode::kPages;
  return std::nullopt;
}

const char* CacheTypeName(CacheType c) {
  switch (c) {
    case CacheType::kWriteBack: return "wb";
    case CacheType::kWriteCombining: return "wc";
    case CacheType::kUncached: return "uc";
  }
  return "?";
}
std::optional<CacheType> ParseCacheType(const std::string& s) {
  const std::string l = Lower(s);
  if (l == "wb") return CacheType::kWriteBack;
  if (l == "wc") return CacheType::kWriteCombining;
  if (l == "uc") return CacheType::kUncached;
  return std::nullopt;
}

std::string RegionInfo::Describe() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s phys=0x%" PRIx64 " size=%s mode=%s cache=%s abi=%u",
                device.c_str(), phys_addr, FormatSize(size).c_str(), MapModeName(mode),
                CacheTypeName(cache), abi_version);
  return buf;
}

std::string RegisterFlagsName(uint32_t flags) {
  if (flags == 0) return "default";
  std::string out;
  auto add = [&](uint32_t bit, const char* n) {
    if (flags & bit) out += (out.empty() ? "" : "|") + std::string(n);
  };
  add(kRegisterPortable, "portable");
  add(kRegisterMapped, "mapped");
  add(kRegisterIoMemory, "iomemory");
  add(kRegisterReadOnly, "readonly");
  add(kAllocWriteCombined, "writecombined");
  const uint32_t unknown = flags & ~(0xfu | kAllocWriteCombined);
  if (unknown) out += (out.empty() ? "" : "|") + std::string("0x") + [&] {
    char b[16];
    std::snprintf(b, sizeof b, "%x", unknown);
    return std::string(b);
  }();
  return out;
}

Result<uint32_t> ParseRegisterFlag(const std::string& name) {
  const std::string l = Lower(name);
  if (l == "default") return static_cast<uint32_t>(kRegisterDefault);
  if (l == "portable") return static_cast<uint32_t>(kRegisterPortable);
  if (l == "mapped") return static_cast<uint32_t>(kRegisterMapped);
  if (l == "iomemory" || l == "io_memory" || l == "io-memory") return static_cast<uint32_t>(kRegisterIoMemory);
  if (l == "readonly" || l == "read_only" || l == "read-only") return static_cast<uint32_t>(kRegisterReadOnly);
  if (l == "writecombined" || l == "write_combined" || l == "write-combined")
    return static_cast<uint32_t>(kAllocWriteCombined);
  if (l.rfind("0x", 0) == 0) return static_cast<uint32_t>(std::strtoul(l.c_str() + 2, nullptr, 16));
  return Status::InvalidArgument("unknown registration flag '" + name +
                                 "'; use default, portable, mapped, iomemory, readonly, "
                                 "writecombined (cudaHostAlloc only) or 0x<bits>");
}

std::string CudaErrorName(const std::string& profile, int code) {
  if (IsLegacyProfile(profile)) {
    for (const auto& n : kCuda41)
      if (n.code == code) return n.name;
  } else {
    for (const auto& n : kCuda13)
      if (n.code == code) return n.name;
  }
  return "";
}

int CudaErrorFromName(const std::string& profile, const std::string& name) {
  if (IsLegacyProfile(profile)) {
    for (const auto& n : kCuda41)
      if (name == n.name) return n.code;
  } else {
    for (const auto& n : kCuda13)
      if (name == n.name) return n.code;
  }
  return -1;
}

uint64_t Fnv1a64(const void* data, uint64_t len, uint64_t seed) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t h = seed;
  for (uint64_t i = 0; i < len; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}


// Defaults for backends that do not offer seed 001's calls or dma-buf (gpu.h).
namespace {
Status NotOffered(const Gpu& gpu, const char* what) {
  return Status::Unsupported(std::string(what) + " is not offered by the " + gpu.name() +
                             " GPU backend; run with --backend sim or cuda");
}
}  // namespace

Status Gpu::SetDeviceFlags(uint32_t) { return NotOffered(*this, "cudaSetDeviceFlags"); }
Result<int> Gpu::CreateContextWithFlags(int device, uint32_t flags) {
  if (flags == 0) return CreateContext(device);
  return NotOffered(*this, "a context with CU_CTX flags");
}
Result<CopyStats> Gpu::CopyMapped(CopyDirection, HostMemory&, uint64_t, DeviceBuffer&, uint64_t,
                                  uint64_t) {
  return NotOffered(*this, "zero-copy (a kernel on mapped host memory)");
}
Result<PipelineStats> Gpu::CopyKernelPipeline(HostMemory&, DeviceBuffer&, const PipelineSpec&) {
  return NotOffered(*this, "copy/kernel overlap on streams");
}
Result<DmaBufExport> Gpu::ExportDmaBuf(DeviceBuffer&, uint64_t, uint64_t) {
  return NotOffered(*this, "cuMemGetHandleForAddressRange (dma-buf)");
}
Result<std::unique_ptr<DeviceBuffer>> Gpu::AllocDeviceVmm(uint64_t, bool) {
  return NotOffered(*this, "cuMemCreate (VMM device memory)");
}
Result<DmaBufExport> Gpu::ExportDmaBufHost(HostMemory&, uint64_t, uint64_t) {
  return NotOffered(*this, "cuMemGetHandleForAddressRange (dma-buf)");
}

}  // namespace resmem

namespace resmem {

uint64_t CardReport::SilentLosses() const {
  auto missing = [](uint64_t happened, uint64_t seen) { return happened > seen ? happened - seen : 0; };
  return missing(card_overruns, dropped) + missing(card_torn, torn) + missing(card_timeouts, timeouts);
}

}  // namespace resmem
