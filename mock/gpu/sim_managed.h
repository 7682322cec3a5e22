// The model of managed memory and BAR reads (backends/api/managed.h) for seed 004. Residency is
// tracked per 64 KiB chunk of each allocation; every cost lands on the backend's clock. Each rule
// and figure cites its source in ManagedModel's comments; the costs are fitted to `resmem bench
// --managed` on the H100 of 2026-11-23 (docs/hil/2026-11-23-h100-seed004, "H100 2026-11-23" below;
// medians of 7 passes, 1 GiB rows, ping-pong 2 MiB x 100 rounds; docs/seed004.md).
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
  // (kernel-open/nvidia-uvm: UVM_VA_BLOCK_SIZE) from the faulting page. 64 KiB: not measured
  // apart (the bench sees rates, not fault sizes); the fault cost below is fitted with it.
  uint64_t chunk = 64 << 10;
  uint64_t va_block = 2 << 20;
  // uvm_perf_prefetch.c: UVM_PREFETCH_THRESHOLD_DEFAULT 51: when more than 51% of a subregion of
  // the VA block is resident at the faulting processor, the rest of it migrates with the fault.
  // H100 2026-11-23 machine.txt: uvm_perf_prefetch_threshold 51 (prefetch_enable 1, min_faults 1).
  int prefetch_threshold_pct = 51;
  // Cost of servicing one fault group (fault buffer read, VA block lock, map, replay), on top of
  // moving its bytes at the pinned link rate; 6 groups per 2 MiB block for a sequential touch.
  // GPU: H100 2026-11-23 first-touch-gpu-read 8.41 GB/s (7.21-9.84; 15.3% of pinned): 2 MiB in
  // 249 us = 6 x 35 us + 39 us of link (53.8 GB/s) + HBM; the 4 GiB case measured 7.12 GB/s.
  // CPU: H100 2026-11-23 cpu-fault-back-read 2.85 GB/s (2.81-4.19; 5.2% of pinned D2H): 2 MiB in
  // 736 us = 6 x 45 us + 39 us of link + the CPU's read at cpu_read_gbps (428 us).
  double gpu_fault_seconds = 35e-6;
  double cpu_fault_seconds = 45e-6;
  // cudaMemPrefetchAsync moves whole VA blocks with the copy engines: the pinned link rate times
  // an efficiency per direction, plus a fixed cost per call. H100 2026-11-23: prefetch-h2d 49.56
  // GB/s (49.02-50.33; 90.3% of that run's pinned 54.86), 0.92 of the model's 53.8; prefetch-d2h
  // 10.60 GB/s (10.01-16.62; 19.2% of pinned 55.10), 0.197 of the model's 53.9 (the 4 GiB
  // scenario: 13.67 GB/s). Why the host side is 5x slower is not established (the driver
  // populating and mapping system memory is a guess); the model takes the rate as measured.
  double prefetch_h2d_efficiency = 0.92;
  double prefetch_d2h_efficiency = 0.197;
  double prefetch_call_seconds = 10e-6;
  // The GPU reading host memory through a mapping (AccessedBy, a preferred location on the host,
  // a page pinned by the thrashing heuristic): FACTS.md 2026-11-22, zero-copy mapped kernel reads
  // 70-95% of pinned cudaMemcpy on the H100; the model takes 80%.
  double remote_fraction_of_link = 0.8;
  // A kernel touching resident pages: H100 2026-11-23 resident-gpu-read 2643.6 GB/s (2319-2729),
  // 79% of the H100 SXM5 datasheet's 3.35 TB/s.
  double hbm_gbps = 2644;
  // One CPU thread touching resident system memory. Reading (and checking every word, as the
  // touch does): H100 2026-11-23 cpu-resident-read 4.90 GB/s (4.70-5.04). Writing: fitted to the
  // host-mapped ping-pong round, 198.7 us for 2 MiB (20.43-21.37 GB/s both ways): less the GPU's
  // 2 MiB through the mapping (49 us at remote_fraction_of_link) and its launch (below) leaves 140
  // us, 15 GB/s (FACTS.md: one thread's memcpy about 11 GB/s).
  double cpu_read_gbps = 4.9;
  double cpu_write_gbps = 15;
  // Each GPU touch is a kernel launch and a synchronize: H100 2026-11-23, host-mapped ping-pong of
  // 64 KiB 16.5 us a round, of which the bytes take about 6 us (pingpong-sizes.txt there).
  double gpu_launch_seconds = 10e-6;
  // Eviction when GPU memory is full: the driver evicts whole 2 MiB root chunks, least recently
  // used first (uvm_pmm_gpu.c, root chunks; uvm_va_block eviction), writing them back to system
  // memory at the D2H link rate plus this cost per VA block. Not measured apart: the H100's
  // oversubscribed case of 2026-11-23 (6 GiB x 10 passes, 4 GiB free) ran at 7.86 GB/s with it.
  double evict_block_seconds = 30e-6;
  // Thrashing detection (kernel-open/nvidia-uvm/uvm_perf_thrashing.c defaults): a page that
  // migrates 3 times (uvm_perf_thrashing_threshold) with less than 500 us between events
  // (uvm_perf_thrashing_lapse_usec) is thrashing; the processor is throttled for 1 lapse
  // (uvm_perf_thrashing_nap) per event; after 10 throttles (uvm_perf_thrashing_pin_threshold) the
  // page is pinned where it is and the other processor maps it remotely, for 300 lapses
  // (uvm_perf_thrashing_pin); a page stops counting as thrashing after 2000 lapses without
  // events (uvm_perf_thrashing_epoch). H100 2026-11-23 machine.txt: thrashing_threshold 3,
  // lapse_usec 500, nap 1, pin_threshold 10, pin 300, epoch 2000 (enable 1, max_resets 4). The
  // CUDA 13.0 runtime API (cudaMemAdvise): "if the preferred location is set as device memory,
  // then the page will continue to thrash indefinitely": never pinned, but still throttled each
  // time (H100 2026-11-23, pingpong-sizes.txt: 64 KiB x 100 rounds, 1115 us a round preferred on
  // the GPU against 22 us without advice and 16.5 us host-mapped: two naps of a lapse a round).
  // Not like the H100 at 2 MiB: there the driver never pinned (no advice 1343 us a round, preferred
  // on the GPU 1408, 64 KiB pinned), where this model pins after 10 throttles (199 us a round) and
  // naps twice a round preferred on the GPU (1709 us); the open driver also gives no hint to an
  // event more than a lapse after the page's last (uvm_perf_thrashing.c), not modelled.
  // engine/bench:managed_bench_test lists both rows as known disagreements.
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
