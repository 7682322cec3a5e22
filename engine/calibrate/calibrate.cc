#include "engine/calibrate/calibrate.h"

#include <sys/mman.h>

#include <algorithm>
#include <limits>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include "backends/api/median.h"
#include "backends/host/host_region.h"
#include "backends/host/smaps_facts.h"
#include "backends/fault/fault_injector.h"
#include "mock/gpu/sim_gpu.h"
#include "mock/machine/machine.h"

namespace resmem::calibrate {
namespace {

using nlohmann::json;

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string Percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", 100 * fraction);
  return text;
}

// A whole number a profile gives for KEY, as T. nlohmann's value<T>() converts any number with a
// plain cast: a float out of T's range (1.6e68 as uint64_t) is undefined behaviour and a negative
// one wraps (found by the calibration fuzz target's long run, corpus regress-float-size). Here a
// float must be whole and in range, an integer in range; else json::out_of_range, which the public
// functions below turn into InvalidArgument naming the key.
template <typename T>
T WholeNumber(const json& v, const char* key) {
  constexpr int kDigits = std::numeric_limits<T>::digits;
  const double lo = std::numeric_limits<T>::is_signed ? -std::ldexp(1.0, kDigits) : 0.0;
  const double hi = std::ldexp(1.0, kDigits);  // exclusive
  auto refuse = [&](const std::string& value) {
    return json::out_of_range::create(
        406, std::string(key) + " is " + value + ", not a whole number that fits " +
                 (std::numeric_limits<T>::is_signed ? "a signed " : "an unsigned ") +
                 std::to_string(kDigits + (std::numeric_limits<T>::is_signed ? 1 : 0)) + "-bit integer",
        &v);
  };
  if (!v.is_number()) throw json::type_error::create(302, std::string(key) + " must be a number", &v);
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || d < lo || d >= hi) throw refuse(v.dump());
    return static_cast<T>(d);
  }
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<T>::max())) throw refuse(v.dump());
    return static_cast<T>(u);
  }
  const int64_t i = v.get<int64_t>();
  if (i < 0 ? !std::numeric_limits<T>::is_signed || i < static_cast<int64_t>(std::numeric_limits<T>::min())
            : static_cast<uint64_t>(i) > static_cast<uint64_t>(std::numeric_limits<T>::max()))
    throw refuse(v.dump());
  return static_cast<T>(i);
}

// j[KEY] as WholeNumber<T>, or FALLBACK when j is an object without KEY (json::value's contract).
template <typename T>
T WholeOr(const json& j, const char* key, T fallback) {
  if (!j.is_object()) throw json::type_error::create(306, std::string("cannot read ") + key + " from a non-object", &j);
  const auto it = j.find(key);
  return it == j.end() ? fallback : WholeNumber<T>(*it, key);
}

json FactsToJson(const MappingFacts& f) {
  return {{"readable", f.readable}, {"writable", f.writable},   {"shared", f.shared},
          {"vm_io", f.vm_io},       {"vm_pfnmap", f.vm_pfnmap}, {"vm_mixedmap", f.vm_mixedmap},
          {"locked", f.locked},     {"backing", BackingName(f.backing)},
          {"page_size", f.page_size}, {"pinned", f.pinned}, {"origin", f.origin}};
}

MappingFacts FactsFromJson(const json& j, uint64_t length) {
  MappingFacts f;
  f.length = length;
  f.readable = j.value("readable", true);
  f.writable = j.value("writable", true);
  f.shared = j.value("shared", false);
  f.vm_io = j.value("vm_io", false);
  f.vm_pfnmap = j.value("vm_pfnmap", false);
  f.vm_mixedmap = j.value("vm_mixedmap", false);
  f.locked = j.value("locked", false);
  f.backing = ParseBacking(j.value("backing", "unknown")).value_or(Backing::kUnknown);
  f.page_size = WholeOr<uint64_t>(j, "page_size", 4096);
  f.pinned = j.value("pinned", false);
  f.origin = "profile";
  return f;
}

// The code a call returned: 0 for success, the runtime's number for a CUDA error; -1 with the
// message for anything else (the call never reached the driver).
json Outcome(const Status& st, const std::string& profile) {
  if (st.ok()) return {{"code", 0}, {"error", "cudaSuccess"}};
  if (st.space() == ErrorSpace::kCuda)
    return {{"code", st.code()}, {"error", CudaErrorName(profile, st.code())}};
  return {{"code", -1}, {"error", st.ToString()}};
}

struct Kind {
  std::string name;
  host::HostKind host_kind;
  bool writable;
  bool populate;
};

// A span with given facts and no bytes behind it, for replaying cases on the simulator.
class FactsMemory : public HostMemory {
 public:
  explicit FactsMemory(MappingFacts f) : f_(std::move(f)) {}
  uint64_t size() const override { return f_.length; }
  const MappingFacts& facts() const override { return f_; }
  uint64_t address() const override { return 0; }
  Status Read(uint64_t offset, void* out, uint64_t len) override {
    RESMEM_RETURN_IF_ERROR(CheckSpan(*this, offset, len, "read"));
    std::memset(out, 0, len);
    return Status::Ok();
  }
  Status Write(uint64_t offset, const void*, uint64_t len) override {
    return CheckSpan(*this, offset, len, "write");
  }
  std::string Describe() const override { return "profile case (" + f_.Describe() + ")"; }

 private:
  MappingFacts f_;
};

Result<double> MemcpyGbps(int threads, uint64_t bytes, int passes) {
  std::vector<std::vector<uint8_t>> src(threads), dst(threads);
  for (int t = 0; t < threads; ++t) {
    src[t].assign(bytes, static_cast<uint8_t>(t + 1));
    dst[t].assign(bytes, 0);
  }
  std::vector<double> gbps;
  for (int p = 0; p < passes; ++p) {
    double t0 = Now();
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
      ts.emplace_back([&, t] { std::memcpy(dst[t].data(), src[t].data(), bytes); });
    for (auto& t : ts) t.join();
    gbps.push_back(threads * bytes / (Now() - t0) / 1e9);
  }
  return MedianMean(gbps);
}

// The dma-buf cases: device allocations of 4 MiB (cudaMalloc gives 2 MiB-aligned pointers,
// FACTS.md), 64 KiB and 1 GiB; offsets and sizes aligned to 4 KiB (the host page, cuda.h's
// rule), 32 KiB, 64 KiB (a GPU page) and 2 MiB, and not aligned; size 0; past the end; host
// memory pinned by cudaMallocHost, registered, and pageable; VMM memory (cuMemCreate) with and
// without gpuDirectRDMACapable.
struct DmaBufCase {
  std::string name, target;  // target: device, vmm, vmm-no-rdma, pinned, registered, pageable
  uint64_t alloc = 0, offset = 0, length = 0;
};
std::vector<DmaBufCase> DmaBufCases() {
  constexpr uint64_t K = 1024, M = 1024 * 1024;
  return {
      {"4M whole", "device", 4 * M, 0, 4 * M},
      {"4M first 4K", "device", 4 * M, 0, 4 * K},
      {"4M +4K 4K", "device", 4 * M, 4 * K, 4 * K},
      {"4M +32K 32K", "device", 4 * M, 32 * K, 32 * K},
      {"4M +64K 64K", "device", 4 * M, 64 * K, 64 * K},
      {"4M +2M 2M", "device", 4 * M, 2 * M, 2 * M},
      {"4M +4K to the end", "device", 4 * M, 4 * K, 4 * M - 4 * K},
      {"4M +100 4K (offset unaligned)", "device", 4 * M, 100, 4 * K},
      {"4M size 100 (unaligned)", "device", 4 * M, 0, 100},
      {"4M size 4K+100 (unaligned)", "device", 4 * M, 0, 4 * K + 100},
      {"4M size 0", "device", 4 * M, 0, 0},
      {"4M +2M 4M (past the end)", "device", 4 * M, 2 * M, 4 * M},
      {"64K whole", "device", 64 * K, 0, 64 * K},
      {"64K +4K 60K", "device", 64 * K, 4 * K, 60 * K},
      {"1G whole", "device", 1024 * M, 0, 1024 * M},
      {"VMM 4M whole", "vmm", 4 * M, 0, 4 * M},
      {"VMM 4M +64K 64K", "vmm", 4 * M, 64 * K, 64 * K},
      {"VMM 4M whole, not RDMA-capable", "vmm-no-rdma", 4 * M, 0, 4 * M},
      {"cudaMallocHost 4M whole", "pinned", 4 * M, 0, 4 * M},
      {"registered anon 4M whole", "registered", 4 * M, 0, 4 * M},
      {"pageable anon 4M whole", "pageable", 4 * M, 0, 4 * M},
  };
}

// The host memory of a host-side dma-buf case.
Result<std::unique_ptr<HostMemory>> DmaBufHost(Gpu& gpu, const DmaBufCase& c) {
  if (c.target == "pinned") return gpu.AllocPinned(c.alloc, 0);
  host::HostMapOptions mo;
  mo.populate = true;
  return host::MapHostMemory(host::HostKind::kAnonymous, c.alloc, mo);
}

}  // namespace

Result<json> RunCalibration(Gpu& gpu, Clock& clock, const CalibrateOptions& o) {
  json profile;
  const std::string era = gpu.profile();
  profile["format"] = 1;
  {
    char date[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    profile["date"] = date;  // UTC, when the run began
  }
  profile["gpu"] = gpu.name();
  profile["driver_profile"] = era;
  RESMEM_ASSIGN_OR_RETURN(DeviceAttributes a, gpu.Attributes(0));
  profile["device"] = {{"name", a.name},
                       {"total_memory", a.total_memory},
                       {"host_register_supported", a.host_register_supported},
                       {"read_only_host_register_supported", a.read_only_host_register_supported},
                       {"pageable_memory_access", a.pageable_memory_access},
                       {"pageable_memory_access_uses_host_page_tables",
                        a.pageable_memory_access_uses_host_page_tables},
                       {"async_engine_count", a.async_engine_count},
                       {"can_map_host_memory", a.can_map_host_memory}};
  profile["host_mem_total"] = host::MemTotalBytes();

  // Reserve 2 MiB pages for the hugetlb kind (FACTS.md: nr_hugepages is writable there).
  std::string saved_hugepages;
  if (o.reserve_hugepages) {
    std::ifstream in("/proc/sys/vm/nr_hugepages");
    in >> saved_hugepages;
    uint64_t need = *std::max_element(o.sizes.begin(), o.sizes.end()) / (2 << 20) + 8;
    std::ofstream out("/proc/sys/vm/nr_hugepages");
    if (out) out << std::max<uint64_t>(need, std::strtoull(saved_hugepages.c_str(), nullptr, 10));
  }
  const std::vector<Kind> kinds = {
      {"anon", host::HostKind::kAnonymous, true, true},
      {"anon-untouched", host::HostKind::kAnonymous, true, false},
      {"anon-readonly", host::HostKind::kAnonymous, false, false},
      {"memfd", host::HostKind::kMemfd, true, true},
      {"shm", host::HostKind::kShm, true, true},
      {"hugetlb", host::HostKind::kHugetlb, true, true},
      {"file", host::HostKind::kFile, true, true},
      {"file-private", host::HostKind::kFilePrivate, true, true},
  };
  const std::vector<uint32_t> flags = {kRegisterDefault, kRegisterPortable, kRegisterMapped,
                                       kRegisterIoMemory, kRegisterReadOnly};
  auto record = [&](const std::string& kind, HostMemory& mem, uint64_t size, uint32_t f) {
    double t0 = Now();
    Status st = gpu.Register(mem, 0, size, f);
    double secs = Now() - t0;
    if (st.ok()) gpu.Unregister(mem, 0);
    json c = Outcome(st, era);
    c["kind"] = kind;
    c["flags"] = RegisterFlagsName(f);
    c["flag_bits"] = f;
    c["size"] = size;
    c["seconds"] = secs;
    c["facts"] = FactsToJson(mem.facts());
    if (o.verbose)
      std::fprintf(stderr, "register %-15s %-9s %10s -> %d %s (%.4f s)\n", kind.c_str(),
                   RegisterFlagsName(f).c_str(), FormatSize(size).c_str(), c["code"].get<int>(),
                   c["error"].get<std::string>().c_str(), secs);
    profile["registration"].push_back(c);
  };
  for (const Kind& k : kinds) {
    for (uint64_t size : o.sizes) {
      for (uint32_t f : flags) {
        host::HostMapOptions mo;
        mo.writable = k.writable;
        mo.populate = k.populate;
        // A fresh mapping per case: an untouched mapping stays untouched.
        auto mem = host::MapHostMemory(k.host_kind, size, mo);
        if (!mem.ok()) {
          profile["skipped"].push_back(k.name + " " + FormatSize(size) + ": " +
                                       mem.status().ToString());
          break;
        }
        record(k.name, **mem, size, f);
      }
    }
  }
  if (auto vvar = host::FindNamedVma("[vvar]"); vvar.ok()) {
    auto mem = host::WrapForeignMapping(vvar->start, 4096, "[vvar] (VM_IO|VM_PFNMAP)");
    if (mem.ok())
      for (uint32_t f : flags) record("pfnmap-vvar", **mem, 4096, f);
  } else {
    profile["skipped"].push_back("pfnmap-vvar: " + vvar.status().ToString());
  }
  const uint64_t mem_total = host::MemTotalBytes();
  for (uint64_t size : o.huge_sizes) {
    if (mem_total && size <= mem_total) {
      profile["skipped"].push_back("huge " + FormatSize(size) +
                                   ": not above MemTotal, it would pin that much for real");
      continue;
    }
    host::HostMapOptions mo;
    mo.noreserve = true;
    auto mem = host::MapHostMemory(host::HostKind::kAnonymous, size, mo);
    if (!mem.ok()) {
      profile["skipped"].push_back("huge " + FormatSize(size) + ": " + mem.status().ToString());
      continue;
    }
    record("anon-noreserve", **mem, size, kRegisterDefault);
  }
  if (!saved_hugepages.empty()) {
    std::ofstream out("/proc/sys/vm/nr_hugepages");
    if (out) out << saved_hugepages;
  }

  // Sequences (FACTS.md: "same range twice, a sub-range, an overlap: 712; unregister of unknown
  // pointer: 713; unregister of an interior pointer or nullptr, size 0, unknown flag: 1;
  // unaligned pointer (ptr+1, ptr+100): 0").
  struct Op {
    bool reg;
    uint64_t offset, length;
    uint32_t flags;
  };
  const uint64_t L = 16 << 20;
  const std::vector<std::pair<std::string, std::vector<Op>>> sequences = {
      {"same range twice", {{true, 0, L, 0}, {true, 0, L, 0}, {false, 0, 0, 0}}},
      {"sub-range", {{true, 0, L, 0}, {true, 4096, 8192, 0}, {false, 0, 0, 0}}},
      {"overlap", {{true, 0, L / 2, 0}, {true, L / 4, L / 2, 0}, {false, 0, 0, 0}}},
      {"unregister unknown", {{false, 0, 0, 0}}},
      {"unregister interior", {{true, 0, L, 0}, {false, 4096, 0, 0}, {false, 0, 0, 0}}},
      {"size 0", {{true, 0, 0, 0}}},
      {"unknown flag 0x10", {{true, 0, L, 0x10}, {false, 0, 0, 0}}},
      {"unaligned pointer +1", {{true, 1, L - 1, 0}, {false, 1, 0, 0}}},
      {"unaligned pointer +100", {{true, 100, L - 100, 0}, {false, 100, 0, 0}}},
  };
  for (const auto& [name, ops] : sequences) {
    host::HostMapOptions mo;
    mo.populate = true;
    RESMEM_ASSIGN_OR_RETURN(auto mem, host::MapHostMemory(host::HostKind::kAnonymous, L, mo));
    json seq = {{"name", name}, {"kind", "anon"}, {"size", L},
                {"facts", FactsToJson(mem->facts())}};
    for (const Op& op : ops) {
      Status st = op.reg ? gpu.Register(*mem, op.offset, op.length, op.flags)
                         : gpu.Unregister(*mem, op.offset);
      json j = Outcome(st, era);
      j["op"] = op.reg ? "register" : "unregister";
      j["offset"] = op.offset;
      j["length"] = op.length;
      j["flag_bits"] = op.flags;
      seq["ops"].push_back(j);
    }
    profile["sequences"].push_back(seq);
  }

  // dma-buf export (issue 9 item 4): cuMemGetHandleForAddressRange(DMA_BUF_FD) per size and
  // offset of device allocations, and on host memory. What each returns, and the fd's size.
  for (const DmaBufCase& c : DmaBufCases()) {
    Result<DmaBufExport> e = Status::Internal("not run");
    std::unique_ptr<DeviceBuffer> dev;
    std::unique_ptr<HostMemory> host;
    if (c.target == "device" || c.target == "vmm" || c.target == "vmm-no-rdma") {
      auto d = c.target == "device" ? gpu.AllocDevice(c.alloc)
                                    : gpu.AllocDeviceVmm(c.alloc, c.target == "vmm");
      if (!d.ok()) {
        profile["skipped"].push_back("dmabuf " + c.name + ": " + d.status().ToString());
        continue;
      }
      dev = std::move(d).value();
      e = gpu.ExportDmaBuf(*dev, c.offset, c.length);
    } else {
      auto h = DmaBufHost(gpu, c);
      if (!h.ok()) {
        profile["skipped"].push_back("dmabuf " + c.name + ": " + h.status().ToString());
        continue;
      }
      host = std::move(h).value();
      if (c.target == "registered") {
        if (Status st = gpu.Register(*host, 0, c.alloc, 0); !st.ok()) {
          profile["skipped"].push_back("dmabuf " + c.name + ": cudaHostRegister: " + st.ToString());
          continue;
        }
      }
      e = gpu.ExportDmaBufHost(*host, c.offset, c.length);
      if (c.target == "registered") gpu.Unregister(*host, 0);
    }
    json j = Outcome(e.status(), era);
    j["name"] = c.name;
    j["target"] = c.target;
    j["alloc"] = c.alloc;
    j["offset"] = c.offset;
    j["length"] = c.length;
    if (e.ok()) j["fd_size"] = e->size;
    if (host) j["facts"] = FactsToJson(host->facts());
    if (o.verbose)
      std::fprintf(stderr, "dmabuf %-28s -> %d %s\n", c.name.c_str(), j["code"].get<int>(),
                   j["error"].get<std::string>().c_str());
    profile["dmabuf"].push_back(j);
  }

  // Bandwidth classes (medians of passes).
  const uint64_t max_bw = *std::max_element(o.bandwidth_sizes.begin(), o.bandwidth_sizes.end());
  RESMEM_ASSIGN_OR_RETURN(auto dev, gpu.AllocDevice(max_bw));
  RESMEM_ASSIGN_OR_RETURN(auto pinned, gpu.AllocPinned(max_bw, 0));
  host::HostMapOptions mo;
  mo.populate = true;
  RESMEM_ASSIGN_OR_RETURN(auto memfd, host::MapHostMemory(host::HostKind::kMemfd, max_bw, mo));
  RESMEM_ASSIGN_OR_RETURN(auto anon, host::MapHostMemory(host::HostKind::kAnonymous, max_bw, mo));
  RESMEM_RETURN_IF_ERROR(gpu.Register(*memfd, 0, max_bw, 0));
  struct Class {
    const char* name;
    HostMemory* mem;
  };
  for (Class c : {Class{"pinned", pinned.get()}, Class{"registered", memfd.get()},
                  Class{"pageable", anon.get()}}) {
    for (CopyDirection dir : {CopyDirection::kHostToDevice, CopyDirection::kDeviceToHost}) {
      for (uint64_t size : o.bandwidth_sizes) {
        std::vector<double> gbps;
        // Two warm-up copies (the first copy of a buffer pays one-time costs), then passes of
        // at least 64 MiB each.
        for (int w = 0; w < 2; ++w) RESMEM_RETURN_IF_ERROR(gpu.Copy(dir, *c.mem, 0, *dev, 0, size).status());
        const uint64_t reps = std::max<uint64_t>(1, (64ull << 20) / size);
        for (int p = 0; p < o.passes; ++p) {
          double secs = 0;
          for (uint64_t i = 0; i < reps; ++i) {
            RESMEM_ASSIGN_OR_RETURN(CopyStats s, gpu.Copy(dir, *c.mem, 0, *dev, 0, size));
            secs += s.seconds;
          }
          gbps.push_back(secs > 0 ? reps * size / secs / 1e9 : 0);
        }
        json b = {{"class", c.name},
                  {"direction", dir == CopyDirection::kHostToDevice ? "H2D" : "D2H"},
                  {"size", size},
                  {"gbps", MedianMean(gbps)},
                  {"pass_gbps", gbps},
                  {"facts", FactsToJson(c.mem->facts())}};
        if (o.verbose)
          std::fprintf(stderr, "bandwidth %-10s %s %10s %.2f GB/s\n", c.name,
                       b["direction"].get<std::string>().c_str(), FormatSize(size).c_str(),
                       MedianMean(gbps));
        profile["bandwidth"].push_back(b);
      }
    }
  }
  gpu.Unregister(*memfd, 0);
  for (int t : o.memcpy_threads) {
    RESMEM_ASSIGN_OR_RETURN(double g, MemcpyGbps(t, o.memcpy_bytes, 3));
    profile["host_memcpy_gbps"][std::to_string(t)] = g;
  }
  (void)clock;
  return profile;
}

namespace {

// j[key] for a const j that may be no object or may lack the key: then null (iterates as empty;
// .value() and .get() on it throw json::type_error, which the public functions below turn into
// InvalidArgument). nlohmann's const operator[] only asserts that the key exists: undefined
// behaviour in a release build on a profile written by hand (found by the calibration fuzz
// target, engine/fuzz/calibration_fuzz.cc).
const json& Field(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  const auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

// The codes a case or sequence call returned in each run ("code_runs"), or its one "code".
std::vector<int> CodesOf(const json& entry) {
  std::vector<int> codes;
  if (entry.contains("code_runs"))
    for (const auto& c : Field(entry, "code_runs")) codes.push_back(WholeNumber<int>(c, "code_runs"));
  else
    codes.push_back(WholeOr<int>(entry, "code", -1));
  return codes;
}

std::vector<double> RunGbpsOf(const json& entry) {
  std::vector<double> v;
  if (entry.contains("run_gbps"))
    for (const auto& g : Field(entry, "run_gbps")) v.push_back(g.get<double>());
  else if (entry.contains("gbps"))
    v.push_back(Field(entry, "gbps").get<double>());
  return v;
}

std::string BandwidthKey(const json& b) {
  return b.value("class", std::string()) + " " + b.value("direction", std::string()) + " " +
         FormatSize(WholeOr<uint64_t>(b, "size", 0));
}

// Entries of one array of several profiles, merged by key in first-seen order.
class Keyed {
 public:
  json* Find(const std::string& key) {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second];
  }
  json& Add(const std::string& key, json item) {
    index_[key] = items_.size();
    items_.push_back(std::move(item));
    return items_.back();
  }
  json ToArray() const {
    json a = json::array();
    for (const auto& i : items_) a.push_back(i);
    return a;
  }

 private:
  std::map<std::string, size_t> index_;
  std::vector<json> items_;
};

void AppendCodes(json& merged, const json& entry) {
  for (int c : CodesOf(entry)) merged["code_runs"].push_back(c);
}

}  // namespace

namespace {
Result<BandwidthRange> BandwidthRangeOfUnchecked(const json& entry) {
  BandwidthRange r;
  r.run_gbps = RunGbpsOf(entry);
  if (r.run_gbps.empty() || *std::min_element(r.run_gbps.begin(), r.run_gbps.end()) <= 0)
    return Status::InvalidArgument("bandwidth entry '" + BandwidthKey(entry) +
                                   "' has no measured rate (\"run_gbps\" or \"gbps\" > 0)");
  r.min_gbps = *std::min_element(r.run_gbps.begin(), r.run_gbps.end());
  r.max_gbps = *std::max_element(r.run_gbps.begin(), r.run_gbps.end());
  r.median_gbps = MedianMean(r.run_gbps);
  return r;
}
}  // namespace

namespace {
Result<json> MergeProfilesUnchecked(const std::vector<json>& profiles,
                                    const std::vector<std::string>& sources) {
  if (profiles.empty()) return Status::InvalidArgument("no profiles to merge");
  if (sources.size() != profiles.size())
    return Status::InvalidArgument("MergeProfiles: one source name per profile");
  for (size_t i = 0; i < profiles.size(); ++i)
    if (!profiles[i].is_object() || !profiles[i].contains("registration"))
      return Status::InvalidArgument(sources[i] + " is not a calibration profile (no "
                                     "\"registration\"): make one with resmem calibrate --out FILE");
  const json& first = profiles[0];
  for (size_t i = 1; i < profiles.size(); ++i) {
    for (const char* key : {"driver_profile", "device"}) {
      if (profiles[i].value(key, json()) != first.value(key, json()))
        return Status::InvalidArgument(
            sources[i] + " and " + sources[0] + " differ in \"" + key + "\" (" +
            profiles[i].value(key, json()).dump() + " vs " + first.value(key, json()).dump() +
            "): merge only runs of one GPU model and driver");
    }
  }
  json out = json::object();
  out["format"] = 2;
  for (const char* key : {"backend", "gpu", "driver_profile", "device", "host_mem_total"})
    if (first.contains(key)) out[key] = first[key];
  out["runs"] = json::array();
  Keyed registration, sequences, bandwidth, dmabuf;
  std::map<std::string, std::vector<double>> memcpy_runs;
  std::set<std::string> skipped_seen;
  for (size_t i = 0; i < profiles.size(); ++i) {
    const json& p = profiles[i];
    if (p.contains("runs")) {  // a merge: its runs, named inside this source
      for (json r : Field(p, "runs")) {
        r["source"] = sources[i] + ": " + r.value("source", std::string("?"));
        out["runs"].push_back(r);
      }
    } else {
      json run = {{"source", sources[i]},
                  {"backend", p.value("backend", std::string())},
                  {"host_mem_total", WholeOr<uint64_t>(p, "host_mem_total", 0)}};
      if (p.contains("date")) run["date"] = p["date"];
      out["runs"].push_back(run);
    }
    if (WholeOr<uint64_t>(p, "host_mem_total", 0) != WholeOr<uint64_t>(first, "host_mem_total", 0))
      out["notes"].push_back(sources[i] + ": host_mem_total " +
                             std::to_string(WholeOr<uint64_t>(p, "host_mem_total", 0)) + " (" +
                             sources[0] + ": " +
                             std::to_string(WholeOr<uint64_t>(first, "host_mem_total", 0)) + ")");
    for (const auto& c : Field(p, "registration")) {
      const std::string key = c.value("kind", std::string()) + " " +
                              std::to_string(WholeOr<uint64_t>(c, "size", 0)) + " " +
                              std::to_string(WholeOr<uint32_t>(c, "flag_bits", 0u));
      json* m = registration.Find(key);
      if (!m) {
        json fresh = c;
        fresh["code_runs"] = json::array();
        m = &registration.Add(key, fresh);
      }
      AppendCodes(*m, c);
    }
    for (const auto& c : p.value("dmabuf", json::array())) {
      const std::string key = c.value("name", std::string());
      json* m = dmabuf.Find(key);
      if (!m) {
        json fresh = c;
        fresh["code_runs"] = json::array();
        m = &dmabuf.Add(key, fresh);
      }
      AppendCodes(*m, c);
    }
    for (const auto& s : p.value("sequences", json::array())) {
      const std::string key = s.value("name", std::string());
      json* m = sequences.Find(key);
      if (!m) {
        json fresh = s;
        for (auto& op : fresh["ops"]) op["code_runs"] = json::array();
        m = &sequences.Add(key, fresh);
      }
      if ((*m)["ops"].size() != Field(s, "ops").size())
        return Status::InvalidArgument(sources[i] + ": sequence '" + key + "' has " +
                                       std::to_string(Field(s, "ops").size()) + " calls, an earlier run " +
                                       std::to_string((*m)["ops"].size()));
      for (size_t k = 0; k < Field(s, "ops").size(); ++k)
        AppendCodes((*m)["ops"][k], Field(s, "ops")[k]);
    }
    for (const auto& b : p.value("bandwidth", json::array())) {
      RESMEM_ASSIGN_OR_RETURN(BandwidthRange r, BandwidthRangeOf(b));
      const std::string key = BandwidthKey(b);
      json* m = bandwidth.Find(key);
      if (!m) {
        json fresh = b;
        fresh["run_gbps"] = json::array();
        fresh["pass_gbps"] = json::array();
        m = &bandwidth.Add(key, fresh);
      }
      for (double g : r.run_gbps) (*m)["run_gbps"].push_back(g);
      for (const auto& g : b.value("pass_gbps", json::array())) (*m)["pass_gbps"].push_back(g);
    }
    if (p.contains("host_memcpy_runs")) {
      for (const auto& [t, v] : Field(p, "host_memcpy_runs").items())
        for (const auto& g : v) memcpy_runs[t].push_back(g.get<double>());
    } else {
      const json memcpy = p.value("host_memcpy_gbps", json::object());
      for (const auto& [t, g] : memcpy.items()) memcpy_runs[t].push_back(g.get<double>());
    }
    for (const auto& s : p.value("skipped", json::array()))
      if (skipped_seen.insert(s.get<std::string>()).second) out["skipped"].push_back(s);
  }
  out["registration"] = registration.ToArray();
  out["sequences"] = sequences.ToArray();
  if (!dmabuf.ToArray().empty()) out["dmabuf"] = dmabuf.ToArray();
  out["bandwidth"] = bandwidth.ToArray();
  for (auto& b : out["bandwidth"]) {
    RESMEM_ASSIGN_OR_RETURN(BandwidthRange r, BandwidthRangeOf(b));
    b["gbps"] = r.median_gbps;
    b["range"] = {{"min", r.min_gbps}, {"median", r.median_gbps}, {"max", r.max_gbps},
                  {"runs", r.runs()}};
  }
  for (const auto& [t, v] : memcpy_runs) {
    out["host_memcpy_gbps"][t] = MedianMean(v);
    out["host_memcpy_runs"][t] = v;
  }
  return out;
}

// "8.13 GB/s"
std::string GbpsText(double gbps) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GB/s", gbps);
  return text;
}

// The host the simulator replays a profile on: the "h100-host" preset, with the memcpy rates a
// calibration on real hardware ("gpu": "cuda") measured on its own host (host_memcpy_gbps: GB/s
// with 1, 2, 4, 8, 16 threads) where the profile has them. The r580 model's pageable copies are
// multiples of the host's one-thread memcpy (mock/gpu/cuda_profile.cc), so a host that copies
// slower stages slower: the H200 host of docs/hil/2026-11-28-h200-nightly copied 7.8-8.2 GB/s on
// one thread against the preset's 11, and its pageable copies ran 15-30% under the preset's
// model, at the model's ratios to its own memcpy (over the sixteen runs of both hosts each
// pageable class follows the one-thread rate, correlation 0.65-0.84). One run's ratio still
// spreads: 1.14-1.64 over the H100's runs (docs/hil/2026-11-28-h200-staged13, section 9).
// Returns what the report says of the host.
std::string UseMeasuredHost(const json& profile, sim::HostPerf& perf) {
  // A simulator's profile was made on the preset's host model: the memcpy it timed beside is the
  // machine that ran the simulator, not the host it simulated.
  if (profile.value("gpu", std::string()) != "cuda")
    return "the h100-host preset (a simulator's profile): one memcpy thread " +
           GbpsText(perf.wb_copy_gbps);
  const json memcpy = profile.value("host_memcpy_gbps", json::object());
  auto rate = [&](const char* threads) {
    auto it = memcpy.find(threads);
    return it != memcpy.end() && it->is_number() && it->get<double>() > 0 ? it->get<double>() : 0.0;
  };
  const double one = rate("1");
  if (one <= 0)
    return "the h100-host preset (the profile measured no host memcpy): one memcpy thread " +
           GbpsText(perf.wb_copy_gbps);
  perf.wb_copy_gbps = one;
  std::vector<double> threads;
  for (const char* t : {"1", "2", "4", "8", "16"}) {
    const double g = rate(t);
    if (g <= 0) break;
    threads.push_back(g);
  }
  perf.memcpy_threads_gbps = threads;
  std::string text = "the h100-host preset with the memcpy rates measured beside the profile: ";
  const char* names[] = {"1 thread", "2", "4", "8", "16 threads"};
  for (size_t i = 0; i < threads.size(); ++i)
    text += (i ? ", " : "") + std::string(names[i]) + " " + GbpsText(threads[i]);
  return text;
}

Result<FidelityReport> CompareWithSimUnchecked(const json& profile,
                                               const std::string& sim_profile, double margin) {
  if (!profile.contains("registration"))
    return Status::InvalidArgument("not a calibration profile (no \"registration\"): make one "
                                   "with resmem calibrate --out FILE");
  if (!(margin >= 0 && margin < 1))
    return Status::InvalidArgument("bandwidth margin must be in [0, 1), got " +
                                   std::to_string(margin));
  RESMEM_ASSIGN_OR_RETURN(sim::CudaProfile cp, sim::CudaProfileByName(sim_profile));
  RESMEM_ASSIGN_OR_RETURN(sim::MachineSpec machine, sim::MachinePreset("h100-host"));
  FidelityReport r;
  r.host = UseMeasuredHost(profile, machine.perf);
  auto clock = std::make_shared<VirtualClock>();
  sim::SimGpuOptions so;
  so.host_mem_total = WholeOr<uint64_t>(profile, "host_mem_total", 0);
  auto gpu = sim::MakeSimGpu(cp, machine.perf, clock, std::make_shared<FaultInjector>(1), so);
  r.sim_profile = sim_profile;
  r.margin = margin;
  auto code_of = [&](const Status& st) { return st.ok() ? 0 : st.code(); };
  auto named = [&](int code) { return std::to_string(code) + " " + CudaErrorName(sim_profile, code); };
  // Agreement: every run returned what the simulator returns.
  auto compare_codes = [&](const std::string& what, const std::vector<int>& measured,
                           int simulated) {
    ++r.code_cases;
    std::map<int, int> runs_of;
    for (int c : measured) ++runs_of[c];
    std::string m;
    if (runs_of.size() == 1) {
      m = named(measured[0]);
    } else {
      for (const auto& [code, n] : runs_of)
        m += (m.empty() ? "" : ", ") + named(code) + " in " + std::to_string(n) + " of " +
             std::to_string(measured.size()) + " runs";
    }
    std::string line = what + ": measured " + m + ", sim " + named(simulated);
    bool agree = runs_of.size() == 1 && measured[0] == simulated;
    (agree ? r.agreements : r.disagreements).push_back(line);
  };
  // Device attributes.
  RESMEM_ASSIGN_OR_RETURN(DeviceAttributes a, gpu->Attributes(0));
  const json& d = Field(profile, "device");
  auto attr = [&](const char* key, int sim_value) {
    ++r.code_cases;
    int m = d.value(key, -1);
    std::string line = std::string("attribute ") + key + ": measured " + std::to_string(m) +
                       ", sim " + std::to_string(sim_value);
    (m == sim_value ? r.agreements : r.disagreements).push_back(line);
  };
  attr("host_register_supported", a.host_register_supported);
  attr("read_only_host_register_supported", a.read_only_host_register_supported);
  attr("pageable_memory_access", a.pageable_memory_access);
  attr("async_engine_count", a.async_engine_count);
  // Registration matrix.
  for (const auto& c : Field(profile, "registration")) {
    std::vector<int> measured = CodesOf(c);
    if (measured.empty() || *std::min_element(measured.begin(), measured.end()) < 0)
      continue;  // never reached the driver
    uint64_t size = WholeOr<uint64_t>(c, "size", 0);
    FactsMemory mem(FactsFromJson(Field(c, "facts"), size));
    uint32_t flags = WholeOr<uint32_t>(c, "flag_bits", 0u);
    Status st = gpu->Register(mem, 0, size, flags);
    if (st.ok()) gpu->Unregister(mem, 0);
    compare_codes("register " + c.value("kind", std::string("?")) + " " + FormatSize(size) + " " +
                      c.value("flags", std::string("?")),
                  measured, code_of(st));
  }
  for (const auto& s : profile.value("sequences", json::array())) {
    FactsMemory mem(FactsFromJson(Field(s, "facts"), WholeOr<uint64_t>(s, "size", 0)));
    int i = 0;
    for (const auto& op : Field(s, "ops")) {
      ++i;
      std::vector<int> measured = CodesOf(op);
      Status st = op.value("op", std::string()) == "register"
                      ? gpu->Register(mem, WholeOr<uint64_t>(op, "offset", 0),
                                      WholeOr<uint64_t>(op, "length", 0), WholeOr<uint32_t>(op, "flag_bits", 0u))
                      : gpu->Unregister(mem, WholeOr<uint64_t>(op, "offset", 0));
      if (measured.empty() || *std::min_element(measured.begin(), measured.end()) < 0) continue;
      compare_codes("sequence '" + s.value("name", std::string()) + "' call " +
                        std::to_string(i) + " (" + op.value("op", std::string()) + ")",
                    measured, code_of(st));
    }
  }
  // dma-buf export cases: the code, and for a success the fd's size.
  for (const auto& c : profile.value("dmabuf", json::array())) {
    std::vector<int> measured = CodesOf(c);
    if (measured.empty() || *std::min_element(measured.begin(), measured.end()) < 0) continue;
    const std::string target = c.value("target", std::string());
    const uint64_t alloc = WholeOr<uint64_t>(c, "alloc", 0), offset = WholeOr<uint64_t>(c, "offset", 0),
                   length = WholeOr<uint64_t>(c, "length", 0);
    Result<DmaBufExport> e = Status::Internal("no such target");
    if (target == "device" || target == "vmm" || target == "vmm-no-rdma") {
      RESMEM_ASSIGN_OR_RETURN(auto dev, target == "device" ? gpu->AllocDevice(alloc)
                                                           : gpu->AllocDeviceVmm(alloc, target == "vmm"));
      e = gpu->ExportDmaBuf(*dev, offset, length);
    } else if (target == "pinned") {
      RESMEM_ASSIGN_OR_RETURN(auto pinned, gpu->AllocPinned(alloc, 0));
      e = gpu->ExportDmaBufHost(*pinned, offset, length);
    } else {
      FactsMemory mem(FactsFromJson(Field(c, "facts"), alloc));
      const bool reg = target == "registered" && gpu->Register(mem, 0, alloc, 0).ok();
      e = gpu->ExportDmaBufHost(mem, offset, length);
      if (reg) gpu->Unregister(mem, 0);
    }
    const std::string what = "dmabuf " + target + " '" + c.value("name", std::string()) + "'";
    compare_codes(what, measured, e.ok() ? 0 : (e.status().space() == ErrorSpace::kCuda ? e.status().code() : -1));
    if (e.ok() && c.contains("fd_size")) {
      ++r.code_cases;
      const uint64_t fd_size = WholeOr<uint64_t>(c, "fd_size", 0);
      const std::string line = what + " fd size: measured " + std::to_string(fd_size) + ", sim " +
                               std::to_string(e->size);
      (fd_size == e->size ? r.agreements : r.disagreements).push_back(line);
    }
  }
  // Bandwidth classes: the simulator's rate against the measured spread, widened by the margin.
  uint64_t max_bw = 0;
  for (const auto& b : profile.value("bandwidth", json::array()))
    max_bw = std::max(max_bw, WholeOr<uint64_t>(b, "size", 0));
  if (max_bw) {
    RESMEM_ASSIGN_OR_RETURN(auto dev, gpu->AllocDevice(max_bw));
    RESMEM_ASSIGN_OR_RETURN(auto pinned, gpu->AllocPinned(max_bw, 0));
    for (const auto& b : Field(profile, "bandwidth")) {
      FidelityReport::Bandwidth row;
      row.cls = b.value("class", std::string());
      row.direction = b.value("direction", std::string());
      row.size = WholeOr<uint64_t>(b, "size", 0);
      RESMEM_ASSIGN_OR_RETURN(row.measured, BandwidthRangeOf(b));
      CopyDirection dir = row.direction == "H2D" ? CopyDirection::kHostToDevice
                                                 : CopyDirection::kDeviceToHost;
      FactsMemory mem(FactsFromJson(Field(b, "facts"), max_bw));
      HostMemory* host = row.cls == "pinned" ? pinned.get() : &mem;
      if (row.cls == "registered") RESMEM_RETURN_IF_ERROR(gpu->Register(mem, 0, max_bw, 0));
      auto s = gpu->Copy(dir, *host, 0, *dev, 0, row.size);
      if (row.cls == "registered") gpu->Unregister(mem, 0);
      if (!s.ok()) return s.status().WithContext("sim copy for " + row.cls);
      row.sim_gbps = s->GBps();
      const BandwidthRange& m = row.measured;
      const double lo = m.min_gbps * (1 - margin), hi = m.max_gbps * (1 + margin);
      row.inside = row.sim_gbps >= lo && row.sim_gbps <= hi;
      ++r.bandwidth_cases;
      r.runs = std::max(r.runs, m.runs());
      char line[320];
      const std::string what = "bandwidth " + row.cls + " " + row.direction + " " +
                               FormatSize(row.size);
      if (m.runs() == 1) {
        std::snprintf(line, sizeof line, "%s: measured %.2f GB/s, sim %.2f GB/s (%+.1f%%)",
                      what.c_str(), m.median_gbps, row.sim_gbps,
                      100 * (row.sim_gbps / m.median_gbps - 1));
      } else {
        std::string where =
            row.sim_gbps < m.min_gbps ? "below the min by " + Percent(1 - row.sim_gbps / m.min_gbps)
            : row.sim_gbps > m.max_gbps ? "above the max by " + Percent(row.sim_gbps / m.max_gbps - 1)
                                        : std::string("inside the spread");
        std::snprintf(line, sizeof line,
                      "%s: measured %.2f-%.2f GB/s (median %.2f, %d runs), sim %.2f GB/s (%s)",
                      what.c_str(), m.min_gbps, m.max_gbps, m.median_gbps, m.runs(),
                      row.sim_gbps, where.c_str());
      }
      (row.inside ? r.agreements : r.disagreements).push_back(line);
      r.bandwidth.push_back(std::move(row));
    }
  }
  return r;
}

// A profile of the wrong shape (a string where a number belongs, an entry that is no object)
// makes nlohmann::json throw; it must not escape the module (errors are values).
Status NotAProfile(const std::string& what, const json::exception& e) {
  return Status::InvalidArgument(what + " is not a calibration profile of the expected shape (" +
                                 e.what() + "): make one with resmem calibrate --out FILE");
}

}  // namespace

Result<BandwidthRange> BandwidthRangeOf(const json& bandwidth_entry) {
  try {
    return BandwidthRangeOfUnchecked(bandwidth_entry);
  } catch (const json::exception& e) {
    return NotAProfile("a bandwidth entry", e);
  }
}

Result<json> MergeProfiles(const std::vector<json>& profiles,
                           const std::vector<std::string>& sources) {
  try {
    return MergeProfilesUnchecked(profiles, sources);
  } catch (const json::exception& e) {
    return NotAProfile("an input", e);
  }
}

Result<FidelityReport> CompareWithSim(const json& profile, const std::string& sim_profile,
                                      double margin) {
  try {
    return CompareWithSimUnchecked(profile, sim_profile, margin);
  } catch (const json::exception& e) {
    return NotAProfile("the profile", e);
  }
}

std::string FidelityReport::ToMarkdown() const {
  std::ostringstream out;
  char margin_text[64];
  std::snprintf(margin_text, sizeof margin_text, "%.0f%%", 100 * margin);
  out << "# Fidelity: measured profile vs simulator profile `" << sim_profile << "`\n\n"
      << "Return-code and attribute cases: " << code_cases << " (every run must agree); "
      << "bandwidth classes: " << bandwidth_cases << ", measured in " << runs
      << (runs == 1 ? " run" : " runs") << ". A class agrees when the simulator's rate lies "
      << "inside the measured spread widened by a margin of " << margin_text
      << " (min x (1 - margin) <= sim <= max x (1 + margin)).\n\n";
  if (!host.empty()) out << "The simulator's host: " << host << ".\n\n";
  if (!bandwidth.empty()) {
    out << "| class | dir | size | min GB/s | median | max | spread | runs | sim GB/s | verdict |\n"
        << "|---|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& b : bandwidth) {
      char row[320];
      const BandwidthRange& m = b.measured;
      std::snprintf(row, sizeof row, "| %s | %s | %s | %.2f | %.2f | %.2f | %.0f%% | %d | %.2f | %s |\n",
                    b.cls.c_str(), b.direction.c_str(), FormatSize(b.size).c_str(), m.min_gbps,
                    m.median_gbps, m.max_gbps, 100 * (m.max_gbps - m.min_gbps) / m.median_gbps,
                    m.runs(), b.sim_gbps, b.inside ? "agrees" : "DISAGREES");
      out << row;
    }
    out << "\n";
  }
  out << "## Disagreements (" << disagreements.size() << ")\n\n";
  if (disagreements.empty()) out << "None.\n";
  for (const auto& d : disagreements) out << "- " << d << "\n";
  out << "\n## Agreements (" << agreements.size() << ")\n\n";
  for (const auto& a : agreements) out << "- " << a << "\n";
  return out.str();
}

json FidelityReport::ToJson() const {
  json bw = json::array();
  for (const auto& b : bandwidth)
    bw.push_back({{"class", b.cls}, {"direction", b.direction}, {"size", b.size},
                  {"min_gbps", b.measured.min_gbps}, {"median_gbps", b.measured.median_gbps},
                  {"max_gbps", b.measured.max_gbps}, {"runs", b.measured.runs()},
                  {"sim_gbps", b.sim_gbps}, {"inside", b.inside}});
  return {{"sim_profile", sim_profile}, {"host", host}, {"margin", margin}, {"runs", runs},
          {"code_cases", code_cases}, {"bandwidth_cases", bandwidth_cases}, {"bandwidth", bw},
          {"disagreements", disagreements}, {"agreements", agreements}};
}

}  // namespace resmem::calibrate
