#include "engine/doctor/bandwidth.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <sstream>

#include "backends/api/median.h"
#include "backends/platform/pci_link.h"
#include "nlohmann/json.hpp"

namespace resmem::engine {
namespace {

// Below these fractions of the expectation a figure is short. Pinned: the H200 nightly's medians
// of 20 passes lay within 6% of its profile (51.1-54.8 GB/s, docs/hil/2026-11-28-h200-nightly)
// while FACTS.md warns any one pass can drop 10-50%: 0.85. Pageable: FACTS.md "varies by more
// than 30% between runs" (H100 6.57 vs 9.4 GB/s a day apart): 0.5. One thread's memcpy moved
// 7.8-8.2 on the H200 and 11-11.7 on the H100 hosts: 0.6. Registration: slow past 2x the
// reference's seconds per GiB (the H100's runs spread 0.33-0.56 s/GiB untouched,
// docs/hil/2026-11-23-h100-perf).
constexpr double kPinnedNormal = 0.85;
constexpr double kPageableNormal = 0.5;
constexpr double kMemcpyNormal = 0.6;
constexpr double kRegisterSlow = 2.0;
// Pinned copies per byte of raw link rate on the H200 (54.62 GB/s of Gen5 x16's 63.0): the
// protocol efficiency a GPU without a reference is expected to reach.
constexpr double kLinkEfficiency = 54.620423142532054 / 63.01538;

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
std::string Gb(double v) { return Fmt("%.2f GB/s", v); }

Result<std::string> Read(Platform& p, const std::string& path, BandwidthFacts& f) {
  auto r = p.ReadSource(path);
  if (!r.ok()) f.unreadable.push_back(path + ": " + r.status().message());
  return r;
}

// The first NVIDIA (vendor 0x10de) VGA or 3D controller (class 0x0300xx, 0x0302xx).
std::string FindGpu(Platform& p, BandwidthFacts& f) {
  auto list = Read(p, "/sys/bus/pci/devices", f);
  if (!list.ok()) return "";
  std::istringstream in(*list);
  for (std::string bdf; std::getline(in, bdf);) {
    auto vendor = p.ReadSource("/sys/bus/pci/devices/" + bdf + "/vendor");
    auto cls = p.ReadSource("/sys/bus/pci/devices/" + bdf + "/class");
    if (!vendor.ok() || !cls.ok() || vendor->rfind("0x10de", 0) != 0) continue;
    if (cls->rfind("0x0300", 0) == 0 || cls->rfind("0x0302", 0) == 0) return bdf;
  }
  f.unreadable.push_back("/sys/bus/pci/devices: no NVIDIA display or 3D controller listed");
  return "";
}

void ReadLink(Platform& p, BandwidthFacts& f) {
  const std::string dir = "/sys/bus/pci/devices/" + f.gpu_bdf + "/";
  auto speed = [&](const char* a, int* out) {
    if (auto t = Read(p, dir + a, f); t.ok()) {
      if (auto g = ParsePcieSpeed(*t); g.ok()) *out = *g;
      else f.unreadable.push_back(dir + a + ": " + g.status().message());
    }
  };
  auto width = [&](const char* a, int* out) {
    if (auto t = Read(p, dir + a, f); t.ok()) {
      if (auto w = ParsePcieWidth(*t); w.ok()) *out = *w;
      else f.unreadable.push_back(dir + a + ": " + w.status().message());
    }
  };
  speed("current_link_speed", &f.link_gen);
  width("current_link_width", &f.link_width);
  speed("max_link_speed", &f.max_link_gen);
  width("max_link_width", &f.max_link_width);
  if (auto t = Read(p, dir + "numa_node", f); t.ok()) f.gpu_numa_node = std::atoi(t->c_str());
}

// The IOMMU state, and whether the GPU's own group translates.
void ReadIommu(const MachineFacts::Iommu& io, BandwidthFacts& f) {
  f.iommu = io.state;
  for (const auto& g : io.groups)
    if (std::find(g.devices.begin(), g.devices.end(), f.gpu_bdf) != g.devices.end())
      f.gpu_translated = IommuDomainTranslates(g.type);
  if (io.groups.empty() && io.state == MachineFacts::Iommu::State::kTranslating)
    f.gpu_translated = true;  // the rules' default domain: every device translated
}

}  // namespace

BandwidthFacts CollectBandwidthFacts(Platform& platform, const MachineFacts::Iommu& iommu) {
  BandwidthFacts f;
  f.gpu_bdf = FindGpu(platform, f);
  if (!f.gpu_bdf.empty()) ReadLink(platform, f);
  if (auto t = Read(platform, "getcpu", f); t.ok()) {
    if (auto c = ParseGetcpu(*t); c.ok()) {
      f.cpu = c->cpu;
      f.cpu_numa_node = c->node;
    }
  }
  if (auto t = Read(platform, "/sys/kernel/mm/transparent_hugepage/enabled", f); t.ok())
    if (auto m = ParseThpMode(*t); m.ok()) f.thp = *m;
  ReadIommu(iommu, f);
  return f;
}

const std::vector<ReferenceFigures>& ReferenceProfiles() {
  // Pinned and pageable: the 256 MiB classes' "gbps" (the median of the runs); memcpy: the
  // one-thread rate ("host_memcpy_gbps" "1"); registration: the 256 MiB default-flag anon and
  // anon-untouched "seconds" x 4. Both measured on PCIe Gen5 x16 (FACTS.md).
  static const std::vector<ReferenceFigures> kRefs = {
      {"H200", "mock/gpu/profiles/h200.json (H200, 3 runs, 2026-11-28)", 5, 16,
       54.620423142532054, 54.54845494238432, 6.004821879325007, 11.741095452596413,
       8.129561061080864, 0.06630922800002281, 0.478146908000042},
      {"H100", "mock/gpu/profiles/h100.json (H100 80GB HBM3, 2026-11-21)", 5, 16,
       55.21374007019316, 55.05868000098157, 9.575163451849203, 15.517539035272854,
       11.706631829354112, 0.04357181999999682, 0.3715425000000039},
  };
  return kRefs;
}

namespace {

// The reference's copy rates on a link of gen x width: x min(1, raw rate / the reference link's).
// Pageable rates are capped at the pinned rate (they end in the same DMA); memcpy and
// registration do not cross the link and stay.
ReferenceFigures OnLink(const ReferenceFigures& r, int gen, int width) {
  ReferenceFigures s = r;
  const double ref = PcieLinkGBps(r.link_gen, r.link_width), now = PcieLinkGBps(gen, width);
  const double scale = ref > 0 && now > 0 ? std::min(1.0, now / ref) : 1.0;
  s.pinned_h2d *= scale;
  s.pinned_d2h *= scale;
  s.pageable_h2d = std::min(s.pageable_h2d, s.pinned_h2d);
  s.pageable_d2h = std::min(s.pageable_d2h, s.pinned_d2h);
  if (gen > 0 && width > 0) {
    s.link_gen = gen;
    s.link_width = width;
  }
  return s;
}

// A GPU without a reference: pinned from the link's raw rate at the H200's efficiency.
ReferenceFigures FromLinkOnly(int gen, int width) {
  ReferenceFigures s;
  s.gpu = "(no reference)";
  s.source = "PCIe " + PcieLinkName(gen, width) + " raw rate x the H200's measured efficiency";
  s.link_gen = gen;
  s.link_width = width;
  s.pinned_h2d = s.pinned_d2h = PcieLinkGBps(gen, width) * kLinkEfficiency;
  return s;
}

}  // namespace

ExpectedBandwidth ExpectedFor(const std::string& gpu_name, const BandwidthFacts& facts) {
  ExpectedBandwidth e;
  const int gen = facts.link_known() ? facts.link_gen : 0, width = facts.link_known() ? facts.link_width : 0;
  const int max_gen = facts.link_known() ? facts.max_link_gen : 0;
  const int max_width = facts.link_known() ? facts.max_link_width : 0;
  for (const auto& r : ReferenceProfiles()) {
    if (gpu_name.find(r.gpu) == std::string::npos) continue;
    e.has_reference = true;
    e.ref = OnLink(r, gen, width);
    e.full = OnLink(r, max_gen, max_width);
    e.basis = r.source + ", measured on " + PcieLinkName(r.link_gen, r.link_width) +
              (facts.link_known() ? "; copy rates scaled by PCIe per-lane rates to " +
                                        PcieLinkName(gen, width) + " (now) and " +
                                        PcieLinkName(max_gen, max_width) + " (maximum)"
                                  : "; the link is unknown, so unscaled");
    return e;
  }
  if (facts.link_known()) {
    e.ref = FromLinkOnly(gen, width);
    e.full = FromLinkOnly(max_gen, max_width);
    e.basis = "no measured profile for '" + gpu_name + "': pinned rates from the link alone (" +
              e.ref.source + "); pageable, memcpy and registration not judged";
  } else {
    e.basis = "no measured profile for '" + gpu_name + "' and the link is unknown: nothing judged";
  }
  return e;
}

namespace {

// Median GB/s of `passes` copies of `bytes` one way.
double TimeCopies(Gpu& gpu, CopyDirection dir, HostMemory& host, DeviceBuffer& dev, uint64_t bytes,
                  int passes, std::vector<std::string>& notes, const char* what) {
  std::vector<double> rates;
  for (int i = 0; i < passes; ++i) {
    auto s = gpu.Copy(dir, host, 0, dev, 0, bytes);
    if (!s.ok()) {
      notes.push_back(std::string(what) + ": " + s.status().message());
      return 0;
    }
    rates.push_back(s->GBps());
  }
  return rates.empty() ? 0 : MedianMean(rates);
}

// Pinned (cudaMallocHost) and pageable (malloc) copies both ways.
void MeasureCopies(Platform& platform, Gpu& gpu, const BandwidthOptions& o, BandwidthMeasurement& m) {
  auto dev = gpu.AllocDevice(o.copy_bytes);
  if (!dev.ok()) {
    m.notes.push_back("cudaMalloc: " + dev.status().message());
    return;
  }
  if (auto pinned = gpu.AllocPinned(o.copy_bytes, 0); pinned.ok()) {
    TimeCopies(gpu, CopyDirection::kHostToDevice, **pinned, **dev, o.copy_bytes, 2, m.notes, "warm-up");
    m.pinned_h2d = TimeCopies(gpu, CopyDirection::kHostToDevice, **pinned, **dev, o.copy_bytes,
                              o.pinned_passes, m.notes, "pinned H2D");
    m.pinned_d2h = TimeCopies(gpu, CopyDirection::kDeviceToHost, **pinned, **dev, o.copy_bytes,
                              o.pinned_passes, m.notes, "pinned D2H");
  } else {
    m.notes.push_back("cudaMallocHost: " + pinned.status().message());
  }
  if (auto pageable = platform.AllocPageable(o.copy_bytes); pageable.ok()) {
    m.pageable_h2d = TimeCopies(gpu, CopyDirection::kHostToDevice, **pageable, **dev, o.copy_bytes,
                                o.pageable_passes, m.notes, "pageable H2D");
    m.pageable_d2h = TimeCopies(gpu, CopyDirection::kDeviceToHost, **pageable, **dev, o.copy_bytes,
                                o.pageable_passes, m.notes, "pageable D2H");
  } else {
    m.notes.push_back("malloc: " + pageable.status().message());
  }
}

// One thread's memcpy between two malloc buffers (the first pass faults the pages in).
void MeasureMemcpy(Platform& platform, const BandwidthOptions& o, BandwidthMeasurement& m) {
  auto a = platform.AllocPageable(o.copy_bytes), b = platform.AllocPageable(o.copy_bytes);
  if (!a.ok() || !b.ok()) {
    m.notes.push_back("memcpy: " + (a.ok() ? b.status() : a.status()).message());
    return;
  }
  std::vector<double> rates;
  for (int i = 0; i <= o.memcpy_passes; ++i) {
    auto s = platform.CopyHost(**b, 0, **a, 0, o.copy_bytes);
    if (!s.ok()) {
      m.notes.push_back("memcpy: " + s.status().message());
      return;
    }
    if (i > 0 && *s > 0) rates.push_back(o.copy_bytes / *s / 1e9);
  }
  if (!rates.empty()) m.memcpy_one_thread = MedianMean(rates);
}

// Seconds per GiB of cudaHostRegister of fresh malloc memory, touched (every page written
// first) or not; the median of the passes.
double TimeRegister(Platform& platform, Gpu& gpu, const BandwidthOptions& o, bool touch,
                    std::vector<std::string>& notes) {
  std::vector<double> secs;
  for (int i = 0; i < o.register_passes; ++i) {
    auto mem = platform.AllocPageable(o.register_bytes);
    if (!mem.ok()) {
      notes.push_back("register: " + mem.status().message());
      return 0;
    }
    const uint8_t zero = 0;
    for (uint64_t off = 0; touch && off < o.register_bytes; off += 4096) (*mem)->Write(off, &zero, 1);
    Clock& clock = platform.clock();
    const double t0 = clock.NowSeconds();
    Status st = gpu.Register(**mem, 0, o.register_bytes, kRegisterDefault);
    const double t = clock.NowSeconds() - t0;
    if (!st.ok()) {
      notes.push_back(std::string("cudaHostRegister ") + (touch ? "touched: " : "untouched: ") + st.message());
      return 0;
    }
    secs.push_back(t / (static_cast<double>(o.register_bytes) / (1ull << 30)));
    (void)gpu.Unregister(**mem, 0);
  }
  return MedianMean(secs);
}

}  // namespace

Result<BandwidthMeasurement> MeasureBandwidth(Platform& platform, Gpu& gpu,
                                              const BandwidthOptions& options) {
  BandwidthMeasurement m;
  auto attrs = gpu.Attributes(0);
  if (!attrs.ok()) return attrs.status();
  m.gpu_name = attrs->name;
  const double t0 = platform.clock().NowSeconds();
  MeasureCopies(platform, gpu, options, m);
  MeasureMemcpy(platform, options, m);
  m.register_touched_s_per_gib = TimeRegister(platform, gpu, options, true, m.notes);
  m.register_untouched_s_per_gib = TimeRegister(platform, gpu, options, false, m.notes);
  m.seconds = platform.clock().NowSeconds() - t0;
  return m;
}

namespace {

using Add = std::function<void(Finding)>;

const char* IommuWord(MachineFacts::Iommu::State s) {
  static const char* const kWords[] = {"unknown", "off", "translating", "passthrough", "on, groups unmanaged"};
  return kWords[static_cast<int>(s)];
}

std::string LinkEvidence(const BandwidthFacts& f) {
  const std::string dir = "/sys/bus/pci/devices/" + f.gpu_bdf + "/";
  return dir + "current_link_speed " + PcieSpeedText(f.link_gen) + ", current_link_width " +
         std::to_string(f.link_width) + "; max_link_speed " + PcieSpeedText(f.max_link_gen) +
         ", max_link_width " + std::to_string(f.max_link_width) + " (" +
         PcieLinkName(f.link_gen, f.link_width) + " of " + PcieLinkName(f.max_link_gen, f.max_link_width) + ")";
}

// The facts that would explain a figure short of the link's expectation, as one phrase.
std::string Causes(const BandwidthFacts& f, bool dma, bool registration) {
  std::vector<std::string> c;
  if (f.numa_remote())
    c.push_back("the GPU is on NUMA node " + std::to_string(f.gpu_numa_node) + ", this CPU on " +
                std::to_string(f.cpu_numa_node));
  if ((dma || registration) && f.gpu_translated)
    c.push_back("the IOMMU translates the GPU's DMA (every page mapped, IOTLB misses)");
  if (registration && f.thp == "never") c.push_back("transparent huge pages are off (never)");
  if (c.empty())
    return "no fact here explains it: another process on the link, CPU or GPU, power "
           "management, or one bad run (run it again; cross-check with nvbandwidth)";
  std::string out;
  for (const auto& s : c) out += (out.empty() ? "" : "; ") + s;
  return out;
}

std::string Remedies(const BandwidthFacts& f, bool registration) {
  std::string r;
  if (f.numa_remote())
    r += "run on the GPU's node: numactl --cpunodebind=" + std::to_string(f.gpu_numa_node) +
         " --membind=" + std::to_string(f.gpu_numa_node) + " (its CPUs: /sys/bus/pci/devices/" +
         f.gpu_bdf + "/local_cpulist); ";
  if (f.gpu_translated) r += "iommu=pt (or intel_iommu=off / amd_iommu=off) on the kernel command line; ";
  if (registration && f.thp == "never")
    r += "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled, or register hugetlbfs memory; ";
  return r + "measure again with no other load";
}

// A link below its maximum costs bandwidth when its width is short (widths do not change at
// run time), or its speed is short and the copies show it (GPUs drop the speed while idle and
// train up under load: a low speed read with copies at full rate is power saving).
void AddLinkFinding(const BandwidthFacts& f, const ExpectedBandwidth& e, const BandwidthMeasurement* m,
                    const Add& add) {
  if (!f.link_known()) return;
  const bool narrow = f.link_width < f.max_link_width, slow = f.link_gen < f.max_link_gen;
  if (!narrow && !slow) return;
  const double pinned = m ? std::min(m->pinned_h2d, m->pinned_d2h) : 0;
  const bool copies_short = !m || pinned <= 0 || pinned < kPinnedNormal * e.full.pinned_h2d;
  Finding x;
  x.evidence = LinkEvidence(f) + (m && pinned > 0 ? "; pinned copies " + Gb(pinned) : "") +
               "; expected pinned " + Gb(e.ref.pinned_h2d) + " on this link, " + Gb(e.full.pinned_h2d) +
               " on " + PcieLinkName(f.max_link_gen, f.max_link_width) + " (" + e.basis + ")";
  if (!narrow && !copies_short) {
    x.id = "pcie-link-idle-speed";
    x.severity = "info";
    x.title = "the link reads below its maximum speed, but the copies run at the full link's rate: power saving";
    x.remedy = "nothing to do; the GPU trains the link up under load (nvidia-smi -q -d PCIE while copying)";
  } else {
    x.id = "pcie-link-trained-down";
    x.severity = "warning";
    x.title = "the GPU's PCIe link trained at " + PcieLinkName(f.link_gen, f.link_width) + ", not " +
              PcieLinkName(f.max_link_gen, f.max_link_width) + ": host<->GPU copies get " +
              Fmt("%.0f%%", 100 * e.ref.pinned_h2d / std::max(1e-9, e.full.pinned_h2d)) + " of the rate";
    x.remedy = std::string(narrow ? "a narrow link: the card in a slot (or riser) with fewer lanes, or a lane "
                                    "that failed training: reseat it, use a full x16 slot; "
                                  : "") +
               "set the slot's PCIe speed to Auto/Gen" + std::to_string(f.max_link_gen) +
               " in the firmware setup; check `lspci -vv -s " + f.gpu_bdf +
               "` LnkSta (\"downgraded\") and nvidia-smi -q -d PCIE under load; in a VM, the host's slot";
  }
  add(x);
}

void AddNumaFinding(const BandwidthFacts& f, const BandwidthMeasurement* m, const Add& add) {
  if (!f.numa_remote()) return;
  Finding x;
  x.id = "gpu-numa-remote";
  x.severity = "warning";
  x.title = "the GPU is attached to another NUMA node than the CPU this program runs on: every "
            "copy and this thread's memory cross the inter-socket link";
  x.evidence = "/sys/bus/pci/devices/" + f.gpu_bdf + "/numa_node " + std::to_string(f.gpu_numa_node) +
               "; getcpu: CPU " + std::to_string(f.cpu) + " on node " + std::to_string(f.cpu_numa_node) +
               (m && m->pinned_h2d > 0 ? "; pinned H2D " + Gb(m->pinned_h2d) + ", D2H " + Gb(m->pinned_d2h) : "");
  x.remedy = "run on the GPU's node: numactl --cpunodebind=" + std::to_string(f.gpu_numa_node) +
             " --membind=" + std::to_string(f.gpu_numa_node) + " (or taskset with /sys/bus/pci/devices/" +
             f.gpu_bdf + "/local_cpulist); a DAQ's ring belongs on that node too";
  add(x);
}

// One measured figure against its expectation: a finding when short (`higher_is_better`) or
// slow (seconds: lower is better) past `limit`.
struct Judged {
  const char* id;
  const char* what;
  double measured, expected, limit;
  bool seconds;  // s/GiB: short when measured > expected x limit
};

bool Short(const Judged& j) {
  if (j.measured <= 0 || j.expected <= 0) return false;
  return j.seconds ? j.measured > j.expected * j.limit : j.measured < j.expected * j.limit;
}

std::string Shown(const Judged& j) {
  return j.seconds ? Fmt("%.3f s/GiB", j.measured) + " against " + Fmt("%.3f s/GiB", j.expected)
                   : Gb(j.measured) + " against " + Gb(j.expected) + " (" +
                         Fmt("%.0f%%", 100 * j.measured / j.expected) + ")";
}

void AddShortfalls(const BandwidthFacts& f, const ExpectedBandwidth& e, const BandwidthMeasurement& m,
                   const Add& add) {
  const ReferenceFigures& r = e.ref;
  const std::vector<std::pair<Judged, int>> all = {  // second: 0 DMA, 1 host, 2 registration
      {{"pinned-bandwidth-short", "pinned H2D", m.pinned_h2d, r.pinned_h2d, kPinnedNormal, false}, 0},
      {{"pinned-bandwidth-short", "pinned D2H", m.pinned_d2h, r.pinned_d2h, kPinnedNormal, false}, 0},
      {{"pageable-bandwidth-short", "pageable H2D", m.pageable_h2d, r.pageable_h2d, kPageableNormal, false}, 1},
      {{"pageable-bandwidth-short", "pageable D2H", m.pageable_d2h, r.pageable_d2h, kPageableNormal, false}, 1},
      {{"host-memcpy-short", "one-thread memcpy", m.memcpy_one_thread, r.memcpy_one_thread, kMemcpyNormal, false}, 1},
      {{"registration-slow", "cudaHostRegister touched", m.register_touched_s_per_gib, r.register_touched_s_per_gib, kRegisterSlow, true}, 2},
      {{"registration-slow", "cudaHostRegister untouched", m.register_untouched_s_per_gib, r.register_untouched_s_per_gib, kRegisterSlow, true}, 2},
  };
  std::vector<Finding> out;
  for (const auto& [j, kind] : all) {
    if (!Short(j)) continue;
    auto same = std::find_if(out.begin(), out.end(), [&](const Finding& x) { return x.id == j.id; });
    if (same != out.end()) {
      same->evidence += "; " + std::string(j.what) + " " + Shown(j);
      continue;
    }
    Finding x;
    x.id = j.id;
    x.severity = kind == 0 ? "warning" : "info";
    x.title = std::string(j.what) + " is below what this GPU gives on this link; likely cause: " +
              Causes(f, kind == 0, kind == 2);
    x.evidence = std::string(j.what) + " " + Shown(j) + "; expected from " + e.basis;
    x.remedy = (kind == 1 ? std::string("stream from pinned or registered memory (resmem's registered "
                                        "path), which does not depend on the CPU's copy; ")
                          : std::string()) + Remedies(f, kind == 2);
    out.push_back(x);
  }
  for (auto& x : out) add(std::move(x));
}

}  // namespace

std::vector<Finding> JudgeBandwidth(const BandwidthFacts& facts, const ExpectedBandwidth& expected,
                                    const BandwidthMeasurement* measured) {
  std::vector<Finding> out;
  const Add add = [&](Finding x) { out.push_back(std::move(x)); };
  AddLinkFinding(facts, expected, measured, add);
  AddNumaFinding(facts, measured, add);
  if (measured) AddShortfalls(facts, expected, *measured, add);
  return out;
}

BandwidthReport DiagnoseBandwidth(Platform& platform, Gpu* gpu, const MachineFacts& machine,
                                  const BandwidthOptions& options) {
  BandwidthReport rep;
  std::string name;
  if (gpu) {
    auto m = MeasureBandwidth(platform, *gpu, options);
    if (m.ok()) {
      rep.measured = *m;
      name = m->gpu_name;
    } else {
      rep.measure_error = m.status().message();
    }
  } else {
    rep.measure_error = "no GPU part";
  }
  // Read after the copies: a GPU idle a moment ago may still have its link at a low speed.
  rep.facts = CollectBandwidthFacts(platform, machine.iommu);
  rep.expected = ExpectedFor(name, rep.facts);
  rep.findings = JudgeBandwidth(rep.facts, rep.expected, rep.measured ? &*rep.measured : nullptr);
  return rep;
}

namespace {

void RenderFacts(const BandwidthFacts& f, std::ostream& out) {
  out << "  GPU:        " << (f.gpu_bdf.empty() ? std::string("(no NVIDIA function in sysfs)") : f.gpu_bdf);
  if (f.link_known())
    out << ", link " << PcieLinkName(f.link_gen, f.link_width) << " (" << PcieSpeedText(f.link_gen)
        << ") of max " << PcieLinkName(f.max_link_gen, f.max_link_width) << "; raw "
        << Gb(PcieLinkGBps(f.link_gen, f.link_width)) << " of " << Gb(PcieLinkGBps(f.max_link_gen, f.max_link_width));
  out << "\n  NUMA:       GPU node " << f.gpu_numa_node << (f.gpu_numa_node < 0 ? " (none given: one node)" : "")
      << ", this CPU " << f.cpu << " on node " << f.cpu_numa_node
      << (f.numa_remote() ? " (REMOTE)" : "") << "\n";
  out << "  IOMMU:      " << IommuWord(f.iommu) << (f.gpu_translated ? ", the GPU's DMA translated" : "")
      << "\n  THP:        " << (f.thp.empty() ? std::string("(unreadable)") : f.thp) << "\n";
}

void Row(std::ostream& out, const char* what, double measured, double expected, const char* unit) {
  char buf[160];
  if (expected > 0 && measured > 0)
    std::snprintf(buf, sizeof buf, "  %-28s %9.3f %-6s expected %9.3f  (%3.0f%%)\n", what, measured, unit,
                  expected, 100 * measured / expected);
  else
    std::snprintf(buf, sizeof buf, "  %-28s %9.3f %-6s expected %s\n", what, measured, unit,
                  expected > 0 ? Fmt("%9.3f", expected).c_str() : "        -");
  out << buf;
}

}  // namespace

void RenderBandwidth(const BandwidthReport& rep, std::ostream& out) {
  out << "bandwidth (doctor --bandwidth)\n";
  RenderFacts(rep.facts, out);
  out << "  expected:   " << rep.expected.basis << "\n";
  if (!rep.measured) {
    out << "  measured:   nothing (" << rep.measure_error << ")\n";
  } else {
    const BandwidthMeasurement& m = *rep.measured;
    const ReferenceFigures& r = rep.expected.ref;
    out << "  measured on " << m.gpu_name << " in " << Fmt("%.1f s", m.seconds) << ":\n";
    Row(out, "pinned H2D 256 MiB", m.pinned_h2d, r.pinned_h2d, "GB/s");
    Row(out, "pinned D2H 256 MiB", m.pinned_d2h, r.pinned_d2h, "GB/s");
    Row(out, "pageable H2D 256 MiB", m.pageable_h2d, r.pageable_h2d, "GB/s");
    Row(out, "pageable D2H 256 MiB", m.pageable_d2h, r.pageable_d2h, "GB/s");
    Row(out, "memcpy, one thread", m.memcpy_one_thread, r.memcpy_one_thread, "GB/s");
    Row(out, "register 1 GiB touched", m.register_touched_s_per_gib, r.register_touched_s_per_gib, "s/GiB");
    Row(out, "register 1 GiB untouched", m.register_untouched_s_per_gib, r.register_untouched_s_per_gib, "s/GiB");
    for (const auto& n : m.notes) out << "  note: " << n << "\n";
  }
  for (const auto& u : rep.facts.unreadable) out << "  unreadable: " << u << "\n";
}

std::string BandwidthJson(const BandwidthReport& rep) {
  nlohmann::ordered_json j;
  const BandwidthFacts& f = rep.facts;
  j["facts"] = {{"gpu_bdf", f.gpu_bdf}, {"link_gen", f.link_gen}, {"link_width", f.link_width},
                {"max_link_gen", f.max_link_gen}, {"max_link_width", f.max_link_width},
                {"gpu_numa_node", f.gpu_numa_node}, {"cpu", f.cpu}, {"cpu_numa_node", f.cpu_numa_node},
                {"iommu", IommuWord(f.iommu)}, {"gpu_translated", f.gpu_translated}, {"thp", f.thp},
                {"unreadable", f.unreadable}};
  auto figures = [](double a, double b, double c, double d, double e, double g, double h) {
    return nlohmann::ordered_json{{"pinned_h2d_gbps", a}, {"pinned_d2h_gbps", b}, {"pageable_h2d_gbps", c},
                                  {"pageable_d2h_gbps", d}, {"memcpy_one_thread_gbps", e},
                                  {"register_touched_s_per_gib", g}, {"register_untouched_s_per_gib", h}};
  };
  const ReferenceFigures& r = rep.expected.ref;
  j["expected"] = figures(r.pinned_h2d, r.pinned_d2h, r.pageable_h2d, r.pageable_d2h, r.memcpy_one_thread,
                          r.register_touched_s_per_gib, r.register_untouched_s_per_gib);
  j["expected"]["basis"] = rep.expected.basis;
  if (rep.measured) {
    const BandwidthMeasurement& m = *rep.measured;
    j["measured"] = figures(m.pinned_h2d, m.pinned_d2h, m.pageable_h2d, m.pageable_d2h, m.memcpy_one_thread,
                            m.register_touched_s_per_gib, m.register_untouched_s_per_gib);
    j["measured"]["gpu"] = m.gpu_name;
    j["measured"]["seconds"] = m.seconds;
    j["measured"]["notes"] = m.notes;
  } else {
    j["measure_error"] = rep.measure_error;
  }
  return j.dump(2) + "\n";
}

}  // namespace resmem::engine
