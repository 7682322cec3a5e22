// The model of managed memory and BAR reads (backends/api/managed.h) for seed 004. Residency is
// tracked per 64 KiB chunk of each allocation; every cost lands on the backend's clock. Each rule
// and figure cites its source in ManagedModel's comments; figures not measured yet say "to be
// measured on the H100" (`resmem bench --managed` measures them: docs/seed004.md).
#ifndef RESMEM_MOCK_GPU_SIM_MANAGED_H_
#define RESMEM_MOCK_GPU_SIM_MANAGED_H_

#include <cstdint>
#include <memory>

#include "backends/api/clock.h"
#include "backends/api/managed.h"
#include "mock/gpu/sim_gpu.h"

namespace resmem::sim {

struct ManagedModel {
  // Managed memory exists: CUDA 6 (2014) brought cudaMallocManaged, Pascal (2016) GPU page faults
  // and on-demand migration (CUDA C++ Programming Guide, "Unified Memory"). The seeds' 2012 driver
  // (cuda-4.1-r285) has neither.
  bool supported = true;
  // The unit the model tracks and the first fault moves. NVIDIA documents pages "of 4 KB or
  // 64 KB"; the open driver's prefetcher grows a migration inside a 2 MiB VA block
  // (kernel-open/nvidia-uvm: UVM_VA_BLOCK_SIZE) from the faulting page. 64 KiB for the GPU's
  // faults: to be measured on the H100 (bench --managed, first-touch rate).
  uint64_t chunk = 64 << 10;
  uint64_t va_block = 2 << 20;
  // uvm_perf_prefetch.c: UVM_PREFETCH_THRESHOLD_DEFAULT 51: when more than 51% of a subregion of
  // the VA block is resident at the faulting processor, the rest of it migrates with the fault.
  int prefetch_threshold_pct = 51;
  // Cost of servicing one fault group (fault buffer read, VA block lock, map, replay), on top of
  // moving its bytes at the pinned link rate. To be measured on the H100.
  double gpu_fault_seconds = 20e-6;
  double cpu_fault_seconds = 10e-6;
  // cudaMemPrefetchAsync moves whole VA blocks with the copy engines: the pinned link rate times
  // this efficiency, plus a fixed cost per call. To be measured on the H100.
  double prefetch_efficiency = 0.95;
  double prefetch_call_seconds = 10e-6;
  // The GPU reading host memory through a mapping (AccessedBy, a preferred location on the host,
  // a page pinned by the thrashing heuristic): FACTS.md 2026-11-22, zero-copy mapped kernel reads
  // 70-95% of pinned cudaMemcpy on the H100; the model takes 80%.
  double remote_fraction_of_link = 0.8;
  // H100 SXM5 80 GB HBM3: 3.35 TB/s (NVIDIA H100 datasheet); a touch of resident pages costs this.
  double hbm_gbps = 3350;
  // The CPU touching resident system memory: one thread's memcpy, about 11 GB/s (FACTS.md).
  double cpu_gbps = 11;
  // Eviction when GPU memory is full: the driver evicts whole 2 MiB root chunks, least recently
  // used first (uvm_pmm_gpu.c, root chunks; uvm_va_block eviction), writing them back to system
  // memory at the D2H link rate plus this cost per VA block. To be measured on the H100.
  double evict_block_seconds = 30e-6;
  // Thrashing detection (kernel-open/nvidia-uvm/uvm_perf_thrashing.c defaults): a page that
  // migrates 3 times (uvm_perf_thrashing_threshold) with less than 500 us between events
  // (uvm_perf_thrashing_lapse_usec) is thrashing; the processor is throttled for 1 lapse
  // (uvm_perf_thrashing_nap) per event; after 10 throttles (uvm_perf_thrashing_pin_threshold) the
  // page is pinned where it is and the other processor maps it remotely, for 300 lapses
  // (uvm_perf_thrashing_pin); a page stops counting as thrashing after 2000 lapses without
  // events (uvm_perf_thrashing_epoch). The CUDA 13.0 runtime API (cudaMemAdvise): "if the preferred
  // location is set as device memory, then the page will continue to thrash indefinitely".
  int thrashing_threshold = 3;
  double thrashing_lapse_seconds = 500e-6;
  int thrashing_nap_lapses = 1;
  int thrashing_pin_threshold = 10;
  int thrashing_pin_lapses = 300;
  int thrashing_epoch_lapses = 2000;
  // The CPU reading GPU memory through a BAR mapping: uncached, no burst reads ("the GPU BAR,
  // which backs the mappings, can't be prefetched and so burst reads transactions are not
  // generated through PCIE": gdrcopy README, NVIDIA/gdrcopy issue #269); NVIDIA/gdrcopy PR #42
  // measured 21.4 MB/s reading a BAR with plain loads. Not measurable on the H100 here (no
  // gdrdrv: the machine loads no module); the model takes 21.4 MB/s.
  double bar_read_mbps = 21.4;
};

// The model for a CUDA profile: cuda-13.0-r580 as above, cuda-4.1-r285 unsupported.
ManagedModel ManagedModelFor(const CudaProfile& profile);

std::unique_ptr<ManagedMemory> MakeSimManaged(const CudaProfile& profile, const ManagedModel& model,
                                              std::shared_ptr<Clock> clock);

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_GPU_SIM_MANAGED_H_
