// Driver profiles of the CUDA model. Each rule the model applies, and where it comes from:
//
// | rule                                                    | 4.1-r285 | 13.0-r580 | source                |
// |---------------------------------------------------------|----------|-----------|-----------------------|
// | register VM_PFNMAP|VM_IO mapping, flags 0               | 30       | 1         | seed 000; FACTS "A VM_PFNMAP|VM_IO mapping ... flags 0 -> 1" |
// | register pfnmap|io, IoMemory, physically contiguous     | 11 (flag unknown) | 0 | FACTS "IoMemory -> 0"; os-mlock.c line of FACTS |
// | IoMemory checked before the read-only rule              | -        | yes       | h100.json (2026-11-21): pfnmap-vvar, a read-only VM_IO|VM_PFNMAP page: iomemory 0, default/portable/mapped/readonly 1 |
// | a span inside one page counts as physically contiguous  | -        | yes       | h100.json: pfnmap-vvar 4 KiB iomemory 0 (smaps cannot tell contiguity); open driver os-mlock.c get_io_ptes() compares each page with the one before it |
// | IoMemory on ordinary memory                             | 11       | 1         | FACTS "IoMemory on ordinary anonymous memory -> 1" |
// | one call larger than MemTotal                           | 2        | 2         | seed 000 (188 GB -> 2 with mem=4G); FACTS "256 GiB / 126 GiB ... 2" |
// | one call >= 512 GiB                                     | -        | 2         | FACTS "Reported elsewhere for r580 ... 512 GiB" |
// | size check before the pfnmap check                      | yes      | yes       | seed 000: 2 for 188 GB, 30 for 16 MB of one mapping |
// | malloc/anon/shmem/memfd/hugetlb/THP                     | 0        | 0         | FACTS "malloc, anonymous, MAP_SHARED of /dev/shm ... 0" |
// | writable MAP_SHARED disk file (and FUSE file)           | 0        | 1         | FACTS "MAP_SHARED writable mapping of an ext4 file: 1"; Linux mm/gup.c writable_file_mapping_allowed() |
// | the same with the ReadOnly flag (no write pin)          | 11 (flag unknown) | 0 | h100.json (2026-11-21): file 64 KiB/16 MiB/256 MiB readonly 0; mm/gup.c check_vma_flags() asks writable_file_mapping_allowed() only for FOLL_WRITE |
// | MAP_PRIVATE file                                        | 0        | 0         | FACTS "MAP_PRIVATE of the same file: 0" |
// | read-only mapping without / with ReadOnly flag          | 0 / 11   | 1 / 0     | FACTS "PROT_READ mapping: 1 without ... 0 with it" |
// | pages-mode device memory (struct pages), flags 0        | 0        | 0         | FACTS os-mlock.c: pin_user_pages needs struct pages (it has them) |
// | same range twice / sub-range / overlap                  | 61       | 712       | FACTS "same range twice, a sub-range, an overlap: 712" |
// | unregister unknown pointer                              | 62       | 713       | FACTS "unregister of unknown pointer: 713" |
// | unregister interior pointer; size 0; unknown flag       | 11       | 1         | FACTS "interior pointer or nullptr, size 0, unknown flag: 1" |
// | unaligned pointer                                       | 0        | 0         | FACTS "unaligned pointer (ptr+1, ptr+100): 0" |
// | IoMemory / ReadOnly flags exist                         | no       | yes       | CUDA 4.1 had Portable and Mapped only (seed 000 era); FACTS |
// | pinned H2D GB/s                                         | 5.69     | 53.8      | seed 000 case C 5720/5689/5694/5685 MB/s; h100-range.json (12 runs): inside every pinned/registered H2D range |
// | pinned D2H GB/s                                         | 5.69 (assumed = H2D) | 53.9 | no seed figure; h100-range.json (12 runs): inside every pinned/registered D2H range |
// | the link the pinned rates were measured on              | Gen2 x16 | Gen5 x16  | M2090 product specification (PCIe 2.0 x16); FACTS "PCIe Gen5 x16" |
// | a link trained below it: rates x raw(link)/raw(measured) | yes     | yes       | the PCIe per-lane rates (backends/platform/pci_link.h) with the measured efficiency kept: docs/hil/2026-11-28-h200-doctor-bandwidth |
// | GPU on another NUMA node than the caller: link x 0.8    | yes      | yes       | assumption: no remote-node run measured (the GPU machine has one node); the inter-socket hop of each DMA |
// | pageable: staged through the driver's pinned buffer     | min(host,link)*0.95 | see next rows | seed 000 case B 3733-3839 MB/s (WB), 150 (UC) |
// | pageable WB H2D: 1.208 x host memcpy, DMA serial past 16 MiB (CPU stage 0.831 x) | - | yes | h100-range.json medians of 12 runs: H2D 16 MiB 13.29 (11.69-14.75), 256 MiB 8.02 (5.77-9.58) |
// | pageable WB D2H: 1.275 x host memcpy, no slowdown with size | -    | yes       | h100-range.json medians of 12 runs: D2H 16 MiB 13.77 (11.66-15.08), 256 MiB 14.27 (11.42-15.52) |
// | measured copy ranges (min/median/max over runs)         | none     | 12 classes | mock/gpu/profiles/h100-range.json (2026-11-21 x2, 2026-11-23 x10) |
// | pageable UC/WC memory: min(host,link)*0.95             | yes      | yes       | seed 000 case B (UC); nothing measured on r580 |
// | registration pins untouched pages at HostPerf pin_gbps  | 3.2      | 3.2       | FACTS "pins at about 3.2 GB/s (8 GiB took 2.65 s)" |
// | resident (locked) pages pin faster                      | =        | 22 GB/s   | FACTS "64 MiB ... touched: 2-4 ms" |
// | non-portable pinned memory used from another context    | x20 slower, staged | no slowdown | seed 000 last posts "20-200x slower"; FACTS "49-51 GB/s" |
// | attributes                                              | M2090    | H100      | seed 000; FACTS "Device attributes" |
// | --- seed 001: write-combined, mapped, streams ---        |          |           |                       |
// | WC pinned H2D gain over default pinned                  | 1.0      | 1.0 (measured: 0.967-1.018) | seed 001: "up to 40%" on FSB systems; the M2090's 5.69 GB/s is already near PCIe 2.0 x16's practical rate, no room for 40% (assumption); cuda_runtime_api.h cudaHostAllocWriteCombined: "more quickly on some system configurations"; docs/hil/2026-11-23-h100-seed001 bench pinned-wc H2D 96.7-101.8% of pinned at 16/64/256 MiB |
// | CPU reads of WC pinned memory: HostPerf wc_read_gbps (UC-class rate where the machine has none) | UC-class | h100-host 1.14 GB/s | seed 001 "从主机端读取写结合存储器极其慢"; cuda_runtime_api.h "cannot be read efficiently by most CPUs"; docs/hil/2026-11-23-h100-seed001 wc_readback_slow: memcpy out of WC 1067 MB/s (mock/machine/presets/h100-host.toml) |
// | CPU writes into WC pinned memory: HostPerf wc_write_gbps | assumption | h100-host 10 GB/s | docs/hil/2026-11-24-h100-staged6 run 10, wc_write_only as the median of 5 passes: 9641-10723 MB/s; staged7 runs 5, 10, 12, 14: 5605-10360 (the first write after allocation, one pass, read 2064-4445: not modelled) |
// | pinned memory mapped without cudaDeviceMapHost          | no (the flag first; after the context is active: 36) | yes in runtime contexts | seed 001 "必须在调用任何CUDA运行时函数前调用cudaSetDeviceFlags()"; cuda_runtime_api.h cudaSetDeviceFlags: "implicit for the runtime but may be absent if a context is created using the driver API" |
// | driver-API context (cuCtxCreate) without CU_CTX_MAP_HOST | no map  | maps anyway | 4.1: cuda.h cuCtxCreate CU_CTX_MAP_HOST "must be set in order to allocate pinned host memory that is accessible to the GPU", cuda_runtime_api.h cudaDeviceMapHost (above); r580: docs/hil/2026-11-23-h100-seed001 mapped_driver_context_no_maphost, zero-copy 29.1 GB/s in such a context (unified addressing maps pinned memory whatever the context flags) |
// | cudaHostGetDevicePointer where nothing is mapped        | 11       | 1         | cuda_runtime_api.h: "will always return a failure code" (4.1: which one is an assumption); r580: docs/hil/2026-11-23-h100-seed001 zero_copy_pageable -> 1 cudaErrorInvalidValue |
// | mapped without the Mapped flag                          | no       | yes, not WC (plain: measured) | cuda_runtime_api.h "Automatic Mapping of Host Allocated Host Memory ... regardless of ... cudaHostAllocMapped"; WC and registered memory: "Exceptions, Disjoint Addressing"; docs/hil/2026-11-23-h100-seed001 mapped_runtime_r580: pinned memory without the flag zero-copies at 45.1 GB/s (WC without Mapped: not measured) |
// | zero-copy kernel: fraction of pinned DMA                | 0.92 / 0.94 (assumed = r580) | 0.92 H2D / 0.94 D2H | docs/README-cuda.md zero-copy mapped 256 MiB 92.4% / 94.5% of pinned (H100 2026-11-21); docs/hil/2026-11-23-h100-seed001 bench: H2D 93.0-94.2%, D2H 94.0-98.2% at 16/64/256 MiB; FACTS "zero-copy mapped 70-95%" |
// | copy of block i+1 overlaps kernel of block i (2 streams, pinned) | yes (2 engines) | yes (3 engines) | seed 001 "数据传输和内核并行" (asyncEngineCount > 0, page-locked memory); FACTS AsyncEngineCount 3; docs/hil/2026-11-23-h100-seed001 bench 16 x 16 MiB, 369 us kernel: 1 stream 0.98 of serial, 2 streams 0.53 |
// | cudaMemcpyAsync from pageable memory is synchronous      | yes      | yes       | seed 001 "当使用的主机内存不是页锁定的时候，异步拷贝将会被同步"; docs/hil/2026-11-23-h100-seed001 bench: pageable 2 streams 1.10 of serial (scenario 0.95) |
// | device memory bandwidth (a kernel reading its block)    | 177 GB/s | 3350 GB/s | product specifications (M2090, H100 SXM5 80GB HBM3): assumption, not measured |
// | --- dma-buf (cuMemGetHandleForAddressRange) ---         |          |           |                       |
// | the call exists                                         | no (CUDA 11.7+) | yes | cuda.h 13.0; FACTS "DMA_BUF_SUPPORTED 1" |
// | device memory, offset and size multiples of 4 KiB       | -        | 0, fd size = length | cuda.h "dptr and size aligned to the host page size"; FACTS "4 KiB to 1 GiB: success, lseek(SEEK_END) is the size; at +4 KiB offset: success" |
// | offset or size not a multiple of 4 KiB; size 0; past the allocation | - | 1 | cuda.h (alignment); docs/hil/2026-11-23-h100-seed001 calib-seed001.json: +100 offset, size 100, 4K+100, size 0, +2M 4M -> 1 |
// | cuMemCreate (VMM) memory with / without gpuDirectRDMACapable | -   | 0 / 0     | docs/hil/2026-11-23-h100-seed001 calib-seed001.json: 'VMM 4M whole' and 'VMM 4M whole, not RDMA-capable' both 0 (the model said 1 for the second before), fd size 4 MiB |
// | cudaMallocHost / registered / pageable host memory      | -        | 1         | FACTS "on cudaMallocHost memory: 1"; cuda.h: host allocations need CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED |
#include <algorithm>
#include <cstdint>

#include "backends/platform/pci_link.h"
#include "mock/gpu/sim_gpu.h"

namespace resmem::sim {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;

CudaProfile Cuda41R285() {
  CudaProfile p;
  p.name = "cuda-4.1-r285";
  // Seed 000: "Tesla M2090", driver 285.05.33, toolkit 4.1.28. 6 GB: the M2090's product
  // specification (the seed does not state it).
  p.device_name = "Tesla M2090";
  p.device_memory = 6 * kGiB;
  p.measured_link_gen = 2;  // the M2090's PCIe 2.0 x16 (product specification)
  p.measured_link_width = 16;
  // Seed 000 case C (cudaMallocHost -> device, 16 MB): 5720, 5689, 5694, 5685 MB/s -> 5.69 GB/s.
  p.link_h2d_gbps = 5.69;
  // ASSUMPTION: the seed timed host->device only; device->host is taken equal.
  p.link_d2h_gbps = 5.69;
  // Seed 000 case B (pageable mapping -> device) 3733-3839 MB/s against case A's host reads of
  // 3903-3948 MB/s: the staged copy keeps ~0.95 of the slower stage; at 128/188 GB reserved (UC)
  // 150 MB/s against 16 B / 98 ns = 163 MB/s.
  p.pageable_pipeline_efficiency = 0.95;
  p.staging_load_bytes = 16;
  // The 2012 driver pipelined its staging for every size (case B tracks case A at 16 MB).
  p.pageable_overlap_bytes = UINT64_MAX;
  // CUDA 4.1 cudaHostRegister took Portable and Mapped only; IoMemory (CUDA 7.5) and ReadOnly
  // (CUDA 11.1) came later, so they are unknown flags here -> 11 cudaErrorInvalidValue.
  p.has_iomemory_flag = false;
  p.has_readonly_flag = false;
  // Seed 000: cudaHostRegister of 16 MB of the remap_pfn_range mapping -> (30) unknown error.
  p.pfnmap_error_is_unknown = true;
  p.max_single_registration = 0;
  // Seed 000, last posts: memory pinned without Portable, used from another context, was
  // "20-200x slower" than from the allocating context: the model takes the low end, 20.
  p.non_portable_slow_in_other_context = true;
  p.other_context_slowdown = 20;
  // Fermi Tesla (M2090): two copy engines (product specification).
  p.async_engine_count = 2;
  p.pageable_memory_access = 0;
  p.read_only_host_register_supported = 0;
  p.register_fixed_seconds = 0;
  p.refuses_writable_shared_file = false;   // no report either way in the seeds: allowed
  p.readonly_mapping_needs_flag = false;    // the flag did not exist
  p.pin_resident_gbps = 0;
  // Seed 000 booted with mem=4G: DESIGN.md "mem=4G leaves 3 GB usable"; 188 GB in one call ->
  // (2) out of memory, 16 MB passes the size check.
  p.default_host_mem_total = 3 * kGiB;
  // Seed 000's workstation: WB host reads 3.93 GB/s (case A second run 3903-3948 MB/s); UC
  // reads one 8-byte load per 98 ns (case A at 128/188 GB: 80.55/83.62 MB/s; 8 B / 98 ns = 81.6).
  p.default_host.wb_copy_gbps = 3.93;
  p.default_host.uc_load_latency_ns = 98;
  p.default_host.memcpy_load_bytes = 8;
  // ASSUMPTION: no 2012 pin rate is known; FACTS.md's 3.2 GB/s is used.
  p.default_host.pin_gbps = 3.2;
  // CUDA 4.1 driver_types.h numbering (backends/api/api_util.cc kCuda41).
  p.error_invalid_value = 11;
  p.error_memory_allocation = 2;
  p.error_unknown = 30;
  p.error_already_registered = 61;
  p.error_not_registered = 62;
  p.error_invalid_device = 10;   // cudaErrorInvalidDevice in 4.1's driver_types.h
  p.error_invalid_context = 11;  // the 4.1 runtime had no context error of its own
  p.can_map_host_memory = 1;
  // Seed 001 (the rule table above): cudaDeviceMapHost before the context exists, Mapped on the
  // allocation; WC no faster (assumption: the link is saturated already).
  p.wc_h2d_gain = 1.0;
  p.runtime_implies_map_host = false;
  p.maps_without_mapped_flag = false;
  // cuCtxCreate without CU_CTX_MAP_HOST maps nothing: 4.1 cuda.h, cuCtxCreate's CU_CTX_MAP_HOST
  // "must be set in order to allocate pinned host memory that is accessible to the GPU".
  p.driver_context_maps_without_flag = false;
  p.zero_copy_h2d_efficiency = 0.92;  // ASSUMPTION: the H100's ratios; no 2012 figure
  p.zero_copy_d2h_efficiency = 0.94;
  p.device_memory_gbps = 177;  // Tesla M2090 product specification
  p.pageable_async_is_synchronous = true;
  p.has_dmabuf_export = false;  // cuMemGetHandleForAddressRange came with CUDA 11.7
  p.error_set_on_active_process = 36;  // 4.1 driver_types.h
  p.error_not_supported = 30;          // 4.1 had no cudaErrorNotSupported: unknown error
  return p;
}

CudaProfile Cuda130R580() {
  CudaProfile p;
  p.name = "cuda-13.0-r580";
  // FACTS.md "The GPU machine": H100 80GB HBM3, driver 580.159.04, CUDA 13.0.
  p.device_name = "NVIDIA H100 80GB HBM3";
  p.device_memory = 80ull * 1000 * 1000 * 1000;
  // Copy rates are fitted to the spread of twelve calibration runs on the GPU machine, merged in
  // mock/gpu/profiles/h100-range.json (`resmem calibrate --merge`): 2026-11-21 h100.json and
  // docs/hil/2026-11-21-h100-staged2/profile.json; 2026-11-23 docs/hil/2026-11-23-h100-calib-range
  // run1-4.json, runs3.json (3 runs) and nightly/profile.json (3 runs); each run's figure the
  // median of 7 passes after 2 warm-ups. One run of the same host moved pageable copies by up
  // to 36% from the next (FACTS.md: "pageable bandwidth there varies by more than 30% between
  // runs"), so every figure below is chosen inside the measured range of each class it serves,
  // near its median; measured_copies at the end carries the ranges themselves.
  // Pinned DMA. Ranges over 12 runs (GB/s): pinned H2D 16 MiB 49.43-53.89, 256 MiB 51.41-55.21;
  // registered H2D 16 MiB 45.24-53.94, 256 MiB 49.30-55.28. One rate serves all four: 53.8
  // (medians 53.39, 54.79, 53.12, 54.78; FACTS.md's 54.5-54.9 came from an earlier session).
  p.link_h2d_gbps = 53.8;
  p.measured_link_gen = 5;  // FACTS.md "PCIe Gen5 x16"
  p.measured_link_width = 16;
  // Pinned D2H 16 MiB 52.41-54.02, 256 MiB 52.56-55.12; registered D2H 16 MiB 48.30-54.05,
  // 256 MiB 33.66-55.11 (the 33.66 is one run of 2026-11-21, passes 31-48): 53.9 lies in all
  // (medians 53.89, 55.00, 53.82, 55.01).
  p.link_d2h_gbps = 53.9;
  // FACTS.md: pageable 16 MiB 11.5-13.4, 256 MiB 7.8-8.2; host memcpy one thread about 11;
  // single-thread staging through a pinned buffer 7.4-10.0. The driver stages with one thread:
  // while its staging buffers fill (16 MiB, the largest size FACTS saw at memcpy speed) the DMA
  // runs behind the memcpy; past that each chunk waits for its DMA (serial: 1/(1/h + 1/link)).
  // This efficiency model still applies to uncached and write-combining memory (nothing was
  // measured there on this driver).
  p.pageable_pipeline_efficiency = 0.95;
  p.staging_load_bytes = 16;
  p.pageable_overlap_bytes = 16 * kMiB;
  // Write-back pageable memory, fitted to the medians of the twelve runs. Rates are multiples
  // of the host model's one-thread memcpy, 11 GB/s (FACTS.md, the "h100-host" preset and
  // default_host below), so that the model on that host reproduces the measured medians. (The
  // runs' own one-thread memcpy: 8.9-11.7 GB/s, median 10.1.) The ratios hold on another host:
  // each run's pageable rate over that run's own one-thread memcpy, H100 host (12 runs) against
  // H200 host (3 runs, docs/hil/2026-11-28-h200-nightly, memcpy 7.8-8.2): H2D 16 MiB 1.14-1.59
  // against 1.26-1.55, 256 MiB 0.65-0.93 against 0.72-0.75, D2H 16 MiB 1.18-1.61 against
  // 1.23-1.34, 256 MiB 1.20-1.64 against 1.26-1.48. So calibrate's fidelity replays a profile
  // on the memcpy rates measured beside it (calibrate.h, CompareWithSim).
  // H2D 16 MiB: median 13.29 (11.69-14.75): 13.29 / 11 = 1.208 while the staging buffers absorb
  // the copy. 256 MiB: median 8.02 (5.77-9.58): past the first 16 MiB each chunk's CPU stage,
  // at 0.831 x one memcpy thread, runs serial with its DMA: 1/(1/(0.831 x 11) + 1/53.8) = 7.81
  // GB/s for 240 MiB, 8.02 over the whole 256 MiB.
  p.pageable_wb_h2d.overlapped_ratio = 1.208;
  p.pageable_wb_h2d.overlap_bytes = 16 * kMiB;
  p.pageable_wb_h2d.serial_ratio = 0.831;
  // D2H does not slow with size: medians 16 MiB 13.77 (11.66-15.08), 256 MiB 14.27
  // (11.42-15.52); always overlapped at their mean, 14.02 / 11 = 1.275 (model 14.03).
  p.pageable_wb_d2h.overlapped_ratio = 1.275;
  p.pageable_wb_d2h.overlap_bytes = UINT64_MAX;
  p.pageable_wb_d2h.serial_ratio = 1.0;
  // FACTS.md: IoMemory and ReadOnly flags accepted.
  p.has_iomemory_flag = true;
  p.has_readonly_flag = true;
  // FACTS.md: "VM_PFNMAP|VM_IO mapping ... flags 0 -> 1 (cudaErrorInvalidValue ...)".
  p.pfnmap_error_is_unknown = false;
  // FACTS.md: "one call of 512 GiB or more fails with 2; chunks work".
  p.max_single_registration = 512 * kGiB;
  // FACTS.md: "Registered in one context, copied in another: 49-51 GB/s (no slowdown)".
  p.non_portable_slow_in_other_context = false;
  p.other_context_slowdown = 1;
  // FACTS.md "Device attributes": AsyncEngineCount 3, PageableMemoryAccess 0,
  // ReadOnlyHostRegisterSupported 1.
  p.async_engine_count = 3;
  p.pageable_memory_access = 0;
  p.read_only_host_register_supported = 1;
  // FACTS.md: untouched 64 MiB 33 ms, 8 GiB 2.65 s: the per-byte rate explains the large call;
  // no fixed cost is added because touched 64 MiB takes only 2-4 ms.
  p.register_fixed_seconds = 0;
  // FACTS.md: "MAP_SHARED writable mapping of an ext4 file: 1 ... MAP_PRIVATE of the same file:
  // 0". Linux mm/gup.c, check_vma_flags()/writable_file_mapping_allowed(): FOLL_LONGTERM pins of
  // writable shared file mappings that need dirty tracking are refused; shmem needs none.
  p.refuses_writable_shared_file = true;
  // FACTS.md: "PROT_READ mapping: 1 without cudaHostRegisterReadOnly, 0 with it".
  p.readonly_mapping_needs_flag = true;
  // FACTS.md: "touched: 2-4 ms" for 64 MiB: 67.1 MB / 3 ms = 22 GB/s; the registration table of
  // docs/hil/2026-11-23-h100-perf (1-100 GiB): resident 4 KiB pages 0.033-0.055 s/GiB (19.5-32.5
  // GB/s; 22 is inside), 2 MiB and 1 GiB pages 0.022-0.036 s/GiB (29.8-48.8 GB/s: 36), untouched
  // 2 MiB / 1 GiB / THP pages 0.148-0.203 s/GiB (5.3-7.3 GB/s: 6).
  p.pin_resident_gbps = 22;
  p.pin_untouched_huge_gbps = 6;
  p.pin_resident_huge_gbps = 36;
  // MemTotal of the GPU machine, measured with mock/gpu/tools/measure_copies.cu: 131981020 kB
  // (125.9 GiB), which FACTS.md brackets: 126 GiB fails with 2, 125 GiB passes.
  p.default_host_mem_total = 131981020ull * 1024;
  // FACTS.md: host memcpy one thread about 11 GB/s (measured here 8.9-11.7); pin 3.2 GB/s.
  p.default_host.wb_copy_gbps = 11;
  p.default_host.memcpy_load_bytes = 8;
  // Untouched 4 KiB pages, docs/hil/2026-11-23-h100-perf: 0.325-0.564 s/GiB over 1-100 GiB
  // (1.9-3.3 GB/s); FACTS.md's 3.2 GB/s (8 GiB in 2.65 s) is the fast end: kept.
  p.default_host.pin_gbps = 3.2;
  p.default_host.memcpy_threads_gbps = {};  // FACTS has no 2-thread point; machine presets own it
  // CUDA 13.0 driver_types.h numbering (backends/api/api_util.cc kCuda13).
  p.error_invalid_value = 1;
  p.error_memory_allocation = 2;
  p.error_unknown = 999;
  p.error_already_registered = 712;
  p.error_not_registered = 713;
  p.error_invalid_device = 101;
  p.error_invalid_context = 201;
  p.can_map_host_memory = 1;
  // The measured spread, min/median/max of the runs' medians in GB/s (12 runs), copied from
  // mock/gpu/profiles/h100-range.json; fidelity_test checks that the two agree.
  const CopyDirection h2d = CopyDirection::kHostToDevice, d2h = CopyDirection::kDeviceToHost;
  p.measured_copies = {
      {"pinned", h2d, 16 * kMiB, 49.43, 53.39, 53.89, 12},
      {"pinned", h2d, 256 * kMiB, 51.41, 54.79, 55.21, 12},
      {"pinned", d2h, 16 * kMiB, 52.41, 53.89, 54.02, 12},
      {"pinned", d2h, 256 * kMiB, 52.56, 55.00, 55.12, 12},
      {"registered", h2d, 16 * kMiB, 45.24, 53.12, 53.94, 12},
      {"registered", h2d, 256 * kMiB, 49.30, 54.78, 55.28, 12},
      {"registered", d2h, 16 * kMiB, 48.30, 53.82, 54.05, 12},
      {"registered", d2h, 256 * kMiB, 33.66, 55.01, 55.11, 12},
      {"pageable", h2d, 16 * kMiB, 11.69, 13.29, 14.75, 12},
      {"pageable", h2d, 256 * kMiB, 5.77, 8.02, 9.58, 12},
      {"pageable", d2h, 16 * kMiB, 11.66, 13.77, 15.08, 12},
      {"pageable", d2h, 256 * kMiB, 11.42, 14.27, 15.52, 12},
  };
  // Seed 001 and dma-buf (the rule table above), measured on the H100 2026-11-23
  // (docs/hil/2026-11-23-h100-seed001). WC: bench's pinned-wc H2D 96.7-101.8% of pinned at
  // 16/64/256 MiB, no gain.
  p.wc_h2d_gain = 1.0;
  p.runtime_implies_map_host = true;
  p.maps_without_mapped_flag = true;
  // A cuCtxCreate context without CU_CTX_MAP_HOST zero-copied 16 MiB at 29.1 GB/s
  // (scenarios-cuda.log, the scenario now mapped_driver_context_no_maphost_r580): with unified addressing the driver
  // maps pinned memory whatever the context's flags, despite cuda_runtime_api.h's "will always
  // return a failure code".
  p.driver_context_maps_without_flag = true;
  // docs/README-cuda.md: zero-copy mapped (kernel over PCIe), 256 MiB: 92.4% H2D, 94.5% D2H;
  // docs/hil/2026-11-23-h100-seed001 bench: H2D 93.0-94.2%, D2H 94.0-98.2% over 16-256 MiB.
  p.zero_copy_h2d_efficiency = 0.92;
  p.zero_copy_d2h_efficiency = 0.94;
  p.device_memory_gbps = 3350;  // H100 SXM5 80GB HBM3 product specification (assumption)
  p.pageable_async_is_synchronous = true;
  p.has_dmabuf_export = true;
  p.dmabuf_alignment = 4096;
  p.dmabuf_host_alloc_supported = false;  // FACTS and calib-seed001.json: cudaMallocHost memory -> 1
  p.error_set_on_active_process = 36;
  p.error_not_supported = 801;
  return p;
}

}  // namespace

std::vector<std::string> CudaProfileNames() { return {"cuda-4.1-r285", "cuda-13.0-r580"}; }

CudaProfile ProfileOnMachine(const CudaProfile& profile, const GpuPciSpec& gpu) {
  CudaProfile p = profile;
  if (!gpu.described) return p;
  const double measured = PcieLinkGBps(p.measured_link_gen, p.measured_link_width);
  const double now = PcieLinkGBps(gpu.link_gen, gpu.link_width);
  double scale = measured > 0 && now > 0 ? std::min(1.0, now / measured) : 1.0;
  if (gpu.numa_node >= 0 && gpu.numa_node != gpu.cpu_numa_node) scale *= kRemoteNumaLinkFactor;
  p.link_h2d_gbps *= scale;
  p.link_d2h_gbps *= scale;
  return p;
}

Result<CudaProfile> CudaProfileByName(const std::string& name) {
  if (name == "cuda-4.1-r285") return Cuda41R285();
  if (name == "cuda-13.0-r580") return Cuda130R580();
  std::string known;
  for (const auto& n : CudaProfileNames()) known += (known.empty() ? "" : ", ") + n;
  return Status::InvalidArgument("unknown CUDA profile '" + name + "'; known profiles: " + known +
                                 " (set [gpu] profile in the scenario to one of them)");
}

}  // namespace resmem::sim
