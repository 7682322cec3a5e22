// `resmem doctor --bandwidth`: is this machine's host<->GPU bandwidth normal? A short measurement
// (pinned and pageable copies of 256 MiB both ways, one thread's memcpy, cudaHostRegister of
// 1 GiB touched and untouched) set against what this GPU gave where it was measured
// (mock/gpu/profiles), scaled to the PCIe link it trained at; and the facts that explain a
// shortfall: the link's generation and width against its maximum, the GPU's NUMA node against
// the calling CPU's, the IOMMU, transparent huge pages. Each shortfall is a Finding with its
// likely cause and the way out. The same code reads a real machine and a simulated one (the
// machine key gpu_pci), so each finding has a scenario (scenarios/bandwidth).
#ifndef RESMEM_ENGINE_DOCTOR_BANDWIDTH_H_
#define RESMEM_ENGINE_DOCTOR_BANDWIDTH_H_

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "backends/api/gpu.h"
#include "backends/api/platform.h"
#include "engine/doctor/doctor.h"

namespace resmem::engine {

// What sysfs, getcpu and the IOMMU say about the path to the GPU. Zero/-1/"": not known.
struct BandwidthFacts {
  std::string gpu_bdf;  // the first NVIDIA display/3D function of /sys/bus/pci/devices
  int link_gen = 0, link_width = 0;          // current_link_speed / current_link_width
  int max_link_gen = 0, max_link_width = 0;  // max_link_speed / max_link_width
  int gpu_numa_node = -1;                    // numa_node (-1: the firmware gives none)
  int cpu = -1, cpu_numa_node = -1;          // getcpu of the calling thread
  MachineFacts::Iommu::State iommu = MachineFacts::Iommu::State::kUnknown;
  bool gpu_translated = false;  // the GPU sits in a group whose domain translates (DMA, DMA-FQ)
  std::string thp;              // transparent_hugepage/enabled's mode
  std::vector<std::string> unreadable;  // "path: why"
  bool link_known() const { return link_gen > 0 && link_width > 0 && max_link_gen > 0 && max_link_width > 0; }
  bool numa_remote() const { return gpu_numa_node >= 0 && cpu_numa_node >= 0 && gpu_numa_node != cpu_numa_node; }
};

// Reads the facts through the platform; what is missing is noted in `unreadable`, never fatal.
// `iommu` is the doctor's reading of the IOMMU (CollectMachineFacts).
BandwidthFacts CollectBandwidthFacts(Platform& platform, const MachineFacts::Iommu& iommu);

// The measured figures, GB/s (1e9 B/s) as medians of passes, registration in seconds per GiB.
// 0: not measured (`notes` says why).
struct BandwidthMeasurement {
  std::string gpu_name;
  double pinned_h2d = 0, pinned_d2h = 0, pageable_h2d = 0, pageable_d2h = 0;
  double memcpy_one_thread = 0;
  double register_touched_s_per_gib = 0, register_untouched_s_per_gib = 0;
  double seconds = 0;  // the whole measurement, on the platform's clock
  std::vector<std::string> notes;
};

struct BandwidthOptions {
  uint64_t copy_bytes = 256ull << 20;
  int pinned_passes = 20, pageable_passes = 10, memcpy_passes = 10;
  uint64_t register_bytes = 1ull << 30;
  int register_passes = 3;
};

// Runs the measurement on device 0 of `gpu`. Fails only when the GPU answers nothing at all
// (no device); a part that fails is a note and a 0.
Result<BandwidthMeasurement> MeasureBandwidth(Platform& platform, Gpu& gpu,
                                              const BandwidthOptions& options = {});

// One GPU's figures as measured on the GPU machine, from its profile (mock/gpu/profiles; the
// test bandwidth_test checks each figure against the JSON file it cites).
struct ReferenceFigures {
  std::string gpu;     // what the device name contains: "H200", "H100"
  std::string source;  // the profile file and the date
  int link_gen = 0, link_width = 0;  // the link it was measured on
  double pinned_h2d = 0, pinned_d2h = 0, pageable_h2d = 0, pageable_d2h = 0;
  double memcpy_one_thread = 0;
  double register_touched_s_per_gib = 0, register_untouched_s_per_gib = 0;
};
const std::vector<ReferenceFigures>& ReferenceProfiles();

// What this GPU should give on the link it trained at (`now`) and on its maximum link (`full`):
// the reference's copy rates x min(1, PcieLinkGBps(link) / PcieLinkGBps(reference link)) (the
// per-lane rates of backends/platform/pci_link.h; the measured protocol efficiency is kept).
// Pageable rates are capped at the pinned rate of the same link. A GPU with no reference gets
// pinned rates from the link alone (raw rate x the H200's measured efficiency) and no others.
struct ExpectedBandwidth {
  bool has_reference = false;
  ReferenceFigures ref;       // the reference (scaled: `now`)
  ReferenceFigures full;      // the same on the GPU's maximum link
  std::string basis;          // one sentence: where the figures come from
};
ExpectedBandwidth ExpectedFor(const std::string& gpu_name, const BandwidthFacts& facts);

// The findings: each fact that costs bandwidth (a link trained down, a remote NUMA node) and
// each measured figure short of its expectation with the facts that explain it. `measured` may
// be null (facts only). Thresholds: bandwidth.cc.
std::vector<Finding> JudgeBandwidth(const BandwidthFacts& facts, const ExpectedBandwidth& expected,
                                    const BandwidthMeasurement* measured);

struct BandwidthReport {
  BandwidthFacts facts;
  std::optional<BandwidthMeasurement> measured;
  std::string measure_error;  // why there is no measurement
  ExpectedBandwidth expected;
  std::vector<Finding> findings;
};
// Facts, measurement (when `gpu` is given), expectation and findings together.
BandwidthReport DiagnoseBandwidth(Platform& platform, Gpu* gpu, const MachineFacts& machine,
                                  const BandwidthOptions& options = {});

// The section `resmem doctor --bandwidth` prints before the findings, and its JSON.
void RenderBandwidth(const BandwidthReport& report, std::ostream& out);
std::string BandwidthJson(const BandwidthReport& report);

}  // namespace resmem::engine

#endif  // RESMEM_ENGINE_DOCTOR_BANDWIDTH_H_
