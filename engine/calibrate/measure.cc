// RunCalibration: the measurements on a GPU, in the order the profile lists them (calibrate.h).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <thread>

#include "backends/api/facts_memory.h"
#include "backends/api/median.h"
#include "backends/host/host_region.h"
#include "backends/host/modelled_memory.h"
#include "backends/host/smaps_facts.h"
#include "engine/calibrate/calibrate.h"
#include "engine/calibrate/profile_json.h"

namespace resmem::calibrate {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The code a call returned: 0 for success, the runtime's number for a CUDA error; -1 with the
// message for anything else (the call never reached the driver).
json Outcome(const Status& st, const std::string& profile) {
  if (st.ok()) return {{"code", 0}, {"error", "cudaSuccess"}};
  if (st.space() == ErrorSpace::kCuda)
    return {{"code", st.code()}, {"error", CudaErrorName(profile, st.code())}};
  return {{"code", -1}, {"error", st.ToString()}};
}

// What the profile says before any case: when, which GPU and driver era, the device's
// attributes, the host's RAM. On a virtual clock (the CUDA model) the host is the model's, not
// the machine running it: host_mem_total 0, which the replay reads as the profile's default
// host (mock/gpu/sim_gpu.h SimGpuOptions::host_mem_total), the host the run itself used.
Result<json> ProfileHeader(Gpu& gpu, bool simulated) {
  json profile;
  profile["format"] = 1;
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  profile["date"] = date;  // UTC, when the run began
  profile["gpu"] = gpu.name();
  profile["driver_profile"] = gpu.profile();
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
  profile["host_mem_total"] = simulated ? 0 : host::MemTotalBytes();
  return profile;
}

// A mapping of one of the matrix's kinds as the simulator has it: its facts only (FactsMemory over
// host::ModelledFacts, the facts smaps shows for that kind). The simulator's calibration so needs
// no hugetlb pool, /var/tmp, [vvar] or RAM of the machine that runs it (docs/build.md, "Hermetic
// tests").
Result<std::unique_ptr<HostMemory>> ModelledKind(host::HostKind kind, uint64_t size,
                                                 const host::HostMapOptions& o) {
  return std::unique_ptr<HostMemory>(std::make_unique<FactsMemory>(host::ModelledFacts(kind, size, o)));
}

// The kernel's [vvar] page as smaps shows it (VmFlags "rd mr pf io de dd", Rss 0): read-only,
// private, VM_IO|VM_PFNMAP, one 4 KiB page.
std::unique_ptr<HostMemory> ModelledVvar() {
  MappingFacts f;
  f.length = 4096;
  f.writable = false;
  f.vm_io = f.vm_pfnmap = true;
  f.backing = Backing::kDevicePfn;
  f.origin = "modelled";
  return std::make_unique<FactsMemory>(f);
}

// 2 MiB pages reserved for the hugetlb kind while alive (FACTS.md: nr_hugepages is writable
// there), the old count restored after.
class HugePagesReserved {
 public:
  HugePagesReserved(bool reserve, uint64_t largest_case) {
    if (!reserve) return;
    std::ifstream in("/proc/sys/vm/nr_hugepages");
    in >> saved_;
    const uint64_t need = largest_case / (2 << 20) + 8;
    std::ofstream out("/proc/sys/vm/nr_hugepages");
    if (out) out << std::max<uint64_t>(need, std::strtoull(saved_.c_str(), nullptr, 10));
  }
  ~HugePagesReserved() {
    if (saved_.empty()) return;
    std::ofstream out("/proc/sys/vm/nr_hugepages");
    if (out) out << saved_;
  }

 private:
  std::string saved_;
};

// The registration matrix: each case registers, is timed, unregisters and is recorded.
class RegistrationMatrix {
 public:
  RegistrationMatrix(Gpu& gpu, const CalibrateOptions& o, json& profile, bool simulated)
      : gpu_(gpu), o_(o), profile_(profile), simulated_(simulated) {}

  void Record(const std::string& kind, HostMemory& mem, uint64_t size, uint32_t f) {
    const double t0 = Now();
    Status st = gpu_.Register(mem, 0, size, f);
    const double secs = Now() - t0;
    if (st.ok()) gpu_.Unregister(mem, 0);
    json c = Outcome(st, gpu_.profile());
    c["kind"] = kind;
    c["flags"] = RegisterFlagsName(f);
    c["flag_bits"] = f;
    c["size"] = size;
    c["seconds"] = secs;
    c["facts"] = FactsToJson(mem.facts());
    if (o_.verbose)
      std::fprintf(stderr, "register %-15s %-9s %10s -> %d %s (%.4f s)\n", kind.c_str(),
                   RegisterFlagsName(f).c_str(), FormatSize(size).c_str(), c["code"].get<int>(),
                   c["error"].get<std::string>().c_str(), secs);
    profile_["registration"].push_back(c);
  }

  // Memory kinds (backends/host stand-ins) x sizes x flags, a fresh mapping per case: an
  // untouched mapping stays untouched.
  void Kinds() {
    struct Kind {
      std::string name;
      host::HostKind host_kind;
      bool writable, populate;
    };
    const Kind kinds[] = {
        {"anon", host::HostKind::kAnonymous, true, true},
        {"anon-untouched", host::HostKind::kAnonymous, true, false},
        {"anon-readonly", host::HostKind::kAnonymous, false, false},
        {"memfd", host::HostKind::kMemfd, true, true},
        {"shm", host::HostKind::kShm, true, true},
        {"hugetlb", host::HostKind::kHugetlb, true, true},
        {"file", host::HostKind::kFile, true, true},
        {"file-private", host::HostKind::kFilePrivate, true, true},
    };
    for (const Kind& k : kinds) {
      for (uint64_t size : o_.sizes) {
        for (uint32_t f : kFlags) {
          host::HostMapOptions mo;
          mo.writable = k.writable;
          mo.populate = k.populate;
          auto mem = simulated_ ? ModelledKind(k.host_kind, size, mo)
                                : host::MapHostMemory(k.host_kind, size, mo);
          if (!mem.ok()) {
            Skip(k.name + " " + FormatSize(size) + ": " + mem.status().ToString());
            break;
          }
          Record(k.name, **mem, size, f);
        }
      }
    }
  }

  // The kernel's [vvar] page: a VM_IO|VM_PFNMAP mapping like remap_pfn_range makes.
  void Pfnmap() {
    if (simulated_) {
      auto mem = ModelledVvar();
      for (uint32_t f : kFlags) Record("pfnmap-vvar", *mem, 4096, f);
      return;
    }
    auto vvar = host::FindNamedVma("[vvar]");
    if (!vvar.ok()) return Skip("pfnmap-vvar: " + vvar.status().ToString());
    auto mem = host::WrapForeignMapping(vvar->start, 4096, "[vvar] (VM_IO|VM_PFNMAP)");
    if (mem.ok())
      for (uint32_t f : kFlags) Record("pfnmap-vvar", **mem, 4096, f);
  }

  // Huge MAP_NORESERVE sizes, one call each, only above MemTotal (so nothing is pinned in full).
  // On the simulator every size is tried, as modelled facts: nothing is mapped, and the model's
  // host (the profile's default, 126 GiB for r580) is below each default size.
  void Huge() {
    const uint64_t mem_total = simulated_ ? 0 : host::MemTotalBytes();
    for (uint64_t size : o_.huge_sizes) {
      if (mem_total && size <= mem_total) {
        Skip("huge " + FormatSize(size) + ": not above MemTotal, it would pin that much for real");
        continue;
      }
      host::HostMapOptions mo;
      mo.noreserve = true;
      auto mem = simulated_ ? ModelledKind(host::HostKind::kAnonymous, size, mo)
                            : host::MapHostMemory(host::HostKind::kAnonymous, size, mo);
      if (!mem.ok()) {
        Skip("huge " + FormatSize(size) + ": " + mem.status().ToString());
        continue;
      }
      Record("anon-noreserve", **mem, size, kRegisterDefault);
    }
  }

 private:
  static constexpr uint32_t kFlags[] = {kRegisterDefault, kRegisterPortable, kRegisterMapped,
                                        kRegisterIoMemory, kRegisterReadOnly};
  void Skip(const std::string& why) { profile_["skipped"].push_back(why); }

  Gpu& gpu_;
  const CalibrateOptions& o_;
  json& profile_;
  bool simulated_;  // a virtual clock: the kinds are modelled facts, nothing is mapped
};

// Sequences (FACTS.md: "same range twice, a sub-range, an overlap: 712; unregister of unknown
// pointer: 713; unregister of an interior pointer or nullptr, size 0, unknown flag: 1;
// unaligned pointer (ptr+1, ptr+100): 0").
Status MeasureSequences(Gpu& gpu, json& profile) {
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
    json seq = {{"name", name}, {"kind", "anon"}, {"size", L}, {"facts", FactsToJson(mem->facts())}};
    for (const Op& op : ops) {
      Status st = op.reg ? gpu.Register(*mem, op.offset, op.length, op.flags) : gpu.Unregister(*mem, op.offset);
      json j = Outcome(st, gpu.profile());
      j["op"] = op.reg ? "register" : "unregister";
      j["offset"] = op.offset;
      j["length"] = op.length;
      j["flag_bits"] = op.flags;
      seq["ops"].push_back(j);
    }
    profile["sequences"].push_back(seq);
  }
  return Status::Ok();
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

// One dma-buf case's export: what it returned, with the host memory it exported from (none for
// device memory), or why the case could not be set up (`skipped`).
// Members are destroyed host, device, export: in the order the measurement always released them.
struct DmaBufOutcome {
  Result<DmaBufExport> exported = Status::Internal("not run");
  std::unique_ptr<DeviceBuffer> dev;
  std::unique_ptr<HostMemory> host;
  std::string skipped;
};

// The host memory of a host-side dma-buf case.
Result<std::unique_ptr<HostMemory>> DmaBufHost(Gpu& gpu, const DmaBufCase& c) {
  if (c.target == "pinned") return gpu.AllocPinned(c.alloc, 0);
  host::HostMapOptions mo;
  mo.populate = true;
  return host::MapHostMemory(host::HostKind::kAnonymous, c.alloc, mo);
}

DmaBufOutcome ExportDmaBufCase(Gpu& gpu, const DmaBufCase& c) {
  DmaBufOutcome out;
  if (c.target == "device" || c.target == "vmm" || c.target == "vmm-no-rdma") {
    auto d = c.target == "device" ? gpu.AllocDevice(c.alloc) : gpu.AllocDeviceVmm(c.alloc, c.target == "vmm");
    if (!d.ok()) {
      out.skipped = d.status().ToString();
      return out;
    }
    out.dev = std::move(d).value();
    out.exported = gpu.ExportDmaBuf(*out.dev, c.offset, c.length);
    return out;
  }
  auto h = DmaBufHost(gpu, c);
  if (!h.ok()) {
    out.skipped = h.status().ToString();
    return out;
  }
  out.host = std::move(h).value();
  if (c.target == "registered") {
    if (Status st = gpu.Register(*out.host, 0, c.alloc, 0); !st.ok()) {
      out.skipped = "cudaHostRegister: " + st.ToString();
      return out;
    }
  }
  out.exported = gpu.ExportDmaBufHost(*out.host, c.offset, c.length);
  if (c.target == "registered") gpu.Unregister(*out.host, 0);
  return out;
}

// dma-buf export (issue 9 item 4): cuMemGetHandleForAddressRange(DMA_BUF_FD) per size and
// offset of device allocations, and on host memory. What each returns, and the fd's size.
void MeasureDmaBuf(Gpu& gpu, const CalibrateOptions& o, json& profile) {
  for (const DmaBufCase& c : DmaBufCases()) {
    DmaBufOutcome e = ExportDmaBufCase(gpu, c);
    if (!e.skipped.empty()) {
      profile["skipped"].push_back("dmabuf " + c.name + ": " + e.skipped);
      continue;
    }
    json j = Outcome(e.exported.status(), gpu.profile());
    j["name"] = c.name;
    j["target"] = c.target;
    j["alloc"] = c.alloc;
    j["offset"] = c.offset;
    j["length"] = c.length;
    if (e.exported.ok()) j["fd_size"] = e.exported->size;
    if (e.host) j["facts"] = FactsToJson(e.host->facts());
    if (o.verbose)
      std::fprintf(stderr, "dmabuf %-28s -> %d %s\n", c.name.c_str(), j["code"].get<int>(),
                   j["error"].get<std::string>().c_str());
    profile["dmabuf"].push_back(j);
  }
}

// One bandwidth figure per pass: two warm-up copies (the first copy of a buffer pays one-time
// costs), then passes of at least 64 MiB each.
Result<std::vector<double>> PassRates(Gpu& gpu, CopyDirection dir, HostMemory& mem, DeviceBuffer& dev,
                                      uint64_t size, int passes) {
  for (int w = 0; w < 2; ++w) RESMEM_RETURN_IF_ERROR(gpu.Copy(dir, mem, 0, dev, 0, size).status());
  const uint64_t reps = std::max<uint64_t>(1, (64ull << 20) / size);
  std::vector<double> gbps;
  for (int p = 0; p < passes; ++p) {
    double secs = 0;
    for (uint64_t i = 0; i < reps; ++i) {
      RESMEM_ASSIGN_OR_RETURN(CopyStats s, gpu.Copy(dir, mem, 0, dev, 0, size));
      secs += s.seconds;
    }
    gbps.push_back(secs > 0 ? reps * size / secs / 1e9 : 0);
  }
  return gbps;
}

// Bandwidth classes (medians of passes): pinned, registered (a memfd mapping), pageable; H2D and
// D2H; each size.
Status MeasureBandwidth(Gpu& gpu, const CalibrateOptions& o, json& profile) {
  const uint64_t max_bw = *std::max_element(o.bandwidth_sizes.begin(), o.bandwidth_sizes.end());
  RESMEM_ASSIGN_OR_RETURN(auto dev, gpu.AllocDevice(max_bw));
  RESMEM_ASSIGN_OR_RETURN(auto pinned, gpu.AllocPinned(max_bw, 0));
  host::HostMapOptions mo;
  mo.populate = true;
  RESMEM_ASSIGN_OR_RETURN(auto memfd, host::MapHostMemory(host::HostKind::kMemfd, max_bw, mo));
  RESMEM_ASSIGN_OR_RETURN(auto anon, host::MapHostMemory(host::HostKind::kAnonymous, max_bw, mo));
  RESMEM_RETURN_IF_ERROR(gpu.Register(*memfd, 0, max_bw, 0));
  const std::pair<const char*, HostMemory*> classes[] = {
      {"pinned", pinned.get()}, {"registered", memfd.get()}, {"pageable", anon.get()}};
  for (const auto& [name, mem] : classes) {
    for (CopyDirection dir : {CopyDirection::kHostToDevice, CopyDirection::kDeviceToHost}) {
      for (uint64_t size : o.bandwidth_sizes) {
        RESMEM_ASSIGN_OR_RETURN(std::vector<double> gbps, PassRates(gpu, dir, *mem, *dev, size, o.passes));
        json b = {{"class", name},
                  {"direction", dir == CopyDirection::kHostToDevice ? "H2D" : "D2H"},
                  {"size", size},
                  {"gbps", MedianMean(gbps)},
                  {"pass_gbps", gbps},
                  {"facts", FactsToJson(mem->facts())}};
        if (o.verbose)
          std::fprintf(stderr, "bandwidth %-10s %s %10s %.2f GB/s\n", name,
                       b["direction"].get<std::string>().c_str(), FormatSize(size).c_str(), MedianMean(gbps));
        profile["bandwidth"].push_back(b);
      }
    }
  }
  gpu.Unregister(*memfd, 0);
  return Status::Ok();
}

// The host's memcpy rate with `threads` threads copying `bytes` each: the median of `passes`.
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

}  // namespace

Result<json> RunCalibration(Gpu& gpu, Clock& clock, const CalibrateOptions& o) {
  // The simulator (a virtual clock) neither reads nor changes the machine's hugetlb pool.
  const bool simulated = clock.is_virtual();
  RESMEM_ASSIGN_OR_RETURN(json profile, ProfileHeader(gpu, simulated));
  {
    HugePagesReserved hugepages(o.reserve_hugepages && !simulated,
                                *std::max_element(o.sizes.begin(), o.sizes.end()));
    RegistrationMatrix matrix(gpu, o, profile, simulated);
    matrix.Kinds();
    matrix.Pfnmap();
    matrix.Huge();
  }
  RESMEM_RETURN_IF_ERROR(MeasureSequences(gpu, profile));
  MeasureDmaBuf(gpu, o, profile);
  RESMEM_RETURN_IF_ERROR(MeasureBandwidth(gpu, o, profile));
  for (int t : o.memcpy_threads) {
    RESMEM_ASSIGN_OR_RETURN(double g, MemcpyGbps(t, o.memcpy_bytes, 3));
    profile["host_memcpy_gbps"][std::to_string(t)] = g;
  }
  return profile;
}

}  // namespace resmem::calibrate
