// The CUDA model. It decides each return code from the facts of the host memory involved (VM
// flags, backing, protections, size, pinned state) and a driver profile, and costs each copy with
// a bandwidth model on the backend's clock. Because it decides from facts, it judges real mappings
// (the kmod Region in QEMU, read from /proc/self/smaps) as well as simulated ones.
//
// Contracts of the model (rules and their sources: the table at the top of cuda_profile.cc):
// - Return codes are CUDA runtime numbers in the profile's era (Status space kCuda).
// - Registrations are tracked per (context, address range). The range is HostMemory::address() +
//   offset; a span whose address() is 0 (simulated, not addressable) is keyed by its object, so
//   ranges of different simulated spans never overlap.
// - Device buffers are sparse: content exists only where non-zero bytes were written, so a
//   simulated 80 GB device costs nothing. Unwritten bytes read as zero.
// - Copy moves real bytes through HostMemory::Read/Write in chunks of at most 1 MiB, picks the
//   driver's path ("pinned-dma" for registered or pinned memory usable from the current context,
//   "pageable-staged" otherwise), and charges the clock with the modelled time.
// - Fault points: "gpu.register", "gpu.unregister", "gpu.alloc" (AllocPinned, AllocDevice),
//   "gpu.copy", "gpu.checksum". Error and signal effects are returned; delays are charged to the
//   clock; "gpu.copy" corrupt flips one byte of what arrives, short lets only short_length bytes
//   arrive and returns an error that says so; "gpu.checksum" corrupt flips one summed byte.
// - A failed host access (a SIGBUS/SIGKILL Status from HostMemory::Read/Write) is the copy's
//   error; bytes moved before it stay moved.
#ifndef RESMEM_MOCK_GPU_SIM_GPU_H_
#define RESMEM_MOCK_GPU_SIM_GPU_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/api/clock.h"
#include "backends/api/gpu.h"
#include "backends/fault/fault_injector.h"
#include "mock/machine/machine.h"

namespace resmem::sim {

// A staged pageable copy of write-back memory in one direction, fitted to a measurement of the
// real driver (cuda_profile.cc says which). Rates are multiples of the host's one-thread memcpy
// rate (HostPerf::wb_copy_gbps), so the fit follows the machine the model runs on.
struct PageableStagingFit {
  // Staged GB/s over host memcpy GB/s while the driver's staging buffers absorb the copy (the
  // first overlap_bytes); capped at the link. 0: not fitted, the efficiency model applies.
  double overlapped_ratio = 0;
  uint64_t overlap_bytes = UINT64_MAX;
  // Past overlap_bytes each chunk waits for its DMA: seconds per byte are
  // 1/(serial_ratio * host memcpy) + 1/link.
  double serial_ratio = 1;
};

// The spread of one copy class over several calibration runs on the real GPU (`resmem calibrate
// --runs N` / --merge; each run's figure is the median of its passes). The model's own rate for
// the class must lie inside [min_gbps, max_gbps] (sim_gpu_test), and the committed merged
// profile must carry the same figures (engine/calibrate fidelity_test).
struct MeasuredCopyRange {
  std::string copy_class;  // as calibrate names it: "pinned", "registered", "pageable" (WB)
  CopyDirection direction = CopyDirection::kHostToDevice;
  uint64_t bytes = 0;
  double min_gbps = 0, median_gbps = 0, max_gbps = 0;
  int runs = 0;
};

// A driver profile: one era's behaviour. Every field cites its source in cuda_profile.cc.
struct CudaProfile {
  std::string name;                   // "cuda-4.1-r285", "cuda-13.0-r580"
  std::string device_name;            // "Tesla M2090", "NVIDIA H100 80GB HBM3"
  uint64_t device_memory = 0;
  double link_h2d_gbps = 0;           // pinned DMA host->device
  double link_d2h_gbps = 0;
  double pageable_pipeline_efficiency = 0.95;  // staged pageable copy vs the slower of its stages
  int staging_load_bytes = 16;        // width of the driver's loads when staging (UC reads)
  bool has_iomemory_flag = false;     // cudaHostRegisterIoMemory exists
  bool has_readonly_flag = false;
  bool pfnmap_error_is_unknown = true;  // 2012: 30 cudaErrorUnknown; r580: 1 InvalidValue
  uint64_t max_single_registration = 0; // 0 = none; r580: 512 GiB (FACTS.md)
  bool non_portable_slow_in_other_context = false;  // 2012: 20-200x slower (seed 000)
  double other_context_slowdown = 1;
  int async_engine_count = 1;
  int pageable_memory_access = 0;
  int read_only_host_register_supported = 0;
  double register_fixed_seconds = 0;  // per call
  int measured_link_gen = 0;          // the PCIe link the copy rates were measured on; 0: unknown
  int measured_link_width = 0;
  HostPerf default_host;              // host model when no simulated machine is given

  // --- added with the model (mock/gpu owns this header) ---
  // Bytes of a pageable copy the driver stages ahead of its DMA (its staging buffers fill);
  // past them, each chunk's DMA is on the critical path: time per byte 1/(eff*host) + 1/link
  // instead of 1/(eff*min(host, link)). UINT64_MAX: always overlapped.
  uint64_t pageable_overlap_bytes = UINT64_MAX;
  // Write-back pageable copies measured on the real driver, per direction. Where fitted
  // (overlapped_ratio > 0) they replace the efficiency model above for write-back host memory;
  // uncached and write-combining memory keep the efficiency model.
  PageableStagingFit pageable_wb_h2d;
  PageableStagingFit pageable_wb_d2h;
  // The driver refuses writable MAP_SHARED mappings of files that need dirty tracking (disk and
  // FUSE files) because it pins them FOLL_LONGTERM for writing. With the ReadOnly flag it pins
  // without write access, which such mappings allow.
  bool refuses_writable_shared_file = false;
  // Read-only mappings need the ReadOnly flag.
  bool readonly_mapping_needs_flag = false;
  // Pin rate for pages already resident (VM_LOCKED, every page present, or a driver's own pages);
  // untouched pages pin at HostPerf::pin_gbps (the kernel allocates and zeroes each page first).
  double pin_resident_gbps = 0;       // 0: same as HostPerf::pin_gbps
  // The same two rates for mappings of 2 MiB or 1 GiB pages (hugetlb, or transparent huge pages
  // asked for with MADV_HUGEPAGE): one fault and one pin per huge page. 0: the 4 KiB rates.
  double pin_untouched_huge_gbps = 0;
  double pin_resident_huge_gbps = 0;
  // /proc/meminfo MemTotal of the host this profile was measured on (a registration larger than
  // MemTotal fails with cudaErrorMemoryAllocation), when SimGpuOptions gives none.
  uint64_t default_host_mem_total = 0;
  // Error numbers of this era (backends/api/gpu.h CudaErrorName tables).
  int error_invalid_value = 1;
  int error_memory_allocation = 2;
  int error_unknown = 999;
  int error_already_registered = 712;
  int error_not_registered = 713;
  int error_invalid_device = 101;
  int error_invalid_context = 201;
  int can_map_host_memory = 1;
  // Copy rates measured on this era's real GPU, as ranges over runs (empty: none measured).
  std::vector<MeasuredCopyRange> measured_copies;

  // --- seed 001: write-combined and mapped pinned memory, streams; dma-buf (cuda_profile.cc) ---
  // H2D from cudaHostAllocWriteCombined memory over H2D from default pinned memory (the seed:
  // "up to 40%" on front-side-bus systems). CPU reads of it cost HostPerf's WC rate.
  double wc_h2d_gain = 1.0;
  // The runtime's own contexts map pinned memory without cudaSetDeviceFlags(cudaDeviceMapHost)
  // (CUDA 13: "implicit for the runtime"); false: the seed's rule, the flag must come first.
  bool runtime_implies_map_host = true;
  // Under unified addressing every cudaHostAlloc and cudaHostRegister buffer is mapped whatever
  // its flags (except write-combined allocations without Mapped); false: only with Mapped.
  bool maps_without_mapped_flag = true;
  // A driver-API context (cuCtxCreate) created without CU_CTX_MAP_HOST maps pinned memory all
  // the same (r580, measured); false: it maps nothing, cudaHostGetDevicePointer fails there.
  bool driver_context_maps_without_flag = true;
  // A kernel reading (H2D) / writing (D2H) host memory through its mapped pointer, as a fraction
  // of the pinned DMA rate.
  double zero_copy_h2d_efficiency = 0.92;
  double zero_copy_d2h_efficiency = 0.94;
  // Device memory bandwidth a kernel reads its block at (GB/s).
  double device_memory_gbps = 0;
  // cudaMemcpyAsync from pageable memory returns only once the copy is done: it cannot overlap a
  // kernel of another stream.
  bool pageable_async_is_synchronous = true;
  // cuMemGetHandleForAddressRange(DMA_BUF_FD) exists; offsets and sizes must be multiples of
  // this (the host page size); cudaHostAlloc memory can be exported too.
  bool has_dmabuf_export = false;
  uint64_t dmabuf_alignment = 4096;
  bool dmabuf_host_alloc_supported = false;
  int error_set_on_active_process = 36;
  int error_not_supported = 801;
};

// The model's rate for a measured copy class: pinned and registered copies take the pinned DMA
// path, pageable ones the staged path on write-back memory of `host`.
double ModelledGbps(const CudaProfile& profile, const HostPerf& host,
                    const MeasuredCopyRange& copy_class);

// The profile on a machine whose GPU link and NUMA placement gpu_pci describes (nothing changes
// where it describes none): pinned DMA rates (and with them the staged paths, which end in the
// same DMA) x PcieLinkGBps(link)/PcieLinkGBps(the link the profile was measured on), never above
// 1, and x kRemoteNumaLinkFactor when the GPU's node is known and is not the caller's. Rules and
// sources: the table of cuda_profile.cc.
constexpr double kRemoteNumaLinkFactor = 0.8;  // assumption: no remote-node measurement
CudaProfile ProfileOnMachine(const CudaProfile& profile, const GpuPciSpec& gpu);

// "cuda-4.1-r285" or "cuda-13.0-r580"; an unknown name is refused with the list of known ones.
Result<CudaProfile> CudaProfileByName(const std::string& name);
std::vector<std::string> CudaProfileNames();

struct SimGpuOptions {
  int device_count = 1;
  // The host's /proc/meminfo MemTotal in bytes (BootedKernel::mem_total of a simulated machine).
  // 0: the profile's default_host_mem_total.
  uint64_t host_mem_total = 0;
};

// `host` is the machine the GPU sits in (its memory speeds); the clock and faults are shared with
// the rest of the backend. `faults` may be null (no fault points fire); `clock` must not be null.
std::unique_ptr<Gpu> MakeSimGpu(const CudaProfile& profile, const HostPerf& host,
                                std::shared_ptr<Clock> clock, std::shared_ptr<FaultInjector> faults,
                                const SimGpuOptions& options = {});

// The modelled seconds one copy of `bytes` takes on each path; the rates Copy() charges.
// Exposed so benchmarks and the transfer engine can print or plan with the same model.
// `type` is the host memory's type (the staged path reads or writes it through the CPU).
double PinnedCopySeconds(const CudaProfile& profile, CopyDirection dir, uint64_t bytes);
// The same from write-combined pinned memory (H2D gains wc_h2d_gain; D2H is the pinned rate).
double WriteCombinedCopySeconds(const CudaProfile& profile, CopyDirection dir, uint64_t bytes);
// A kernel moving `bytes` through mapped host memory (zero-copy).
double ZeroCopySeconds(const CudaProfile& profile, CopyDirection dir, uint64_t bytes);
// The total of a copy/kernel pipeline of `blocks` blocks, each copy taking `copy` seconds and
// each kernel `kernel`: serial n(c+k), overlapped c + (n-1)max(c,k) + k.
double PipelineSeconds(int blocks, double copy, double kernel, bool overlapped);
double StagedCopySeconds(const CudaProfile& profile, const HostPerf& host, CopyDirection dir,
                         MemoryType type, uint64_t bytes);
// Seconds cudaHostRegister spends pinning `bytes` of memory with these facts and flags.
double RegisterSeconds(const CudaProfile& profile, const HostPerf& host, const MappingFacts& facts,
                       uint64_t bytes, uint32_t flags);

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_GPU_SIM_GPU_H_
