// The transfer engine: the ways a real application moves bytes between a host mapping (the
// reserved region, or a stand-in) and GPU memory, tried fastest first:
//   registered-direct   one cudaHostRegister of the whole span, then DMA from it
//   registered-chunked  the span registered in pieces (one call of 512 GiB or more fails with 2
//                       on r580 drivers; FACTS.md), copies split at piece boundaries
//   staged              a ring of pinned buffers, 2-3 per lane; each lane is a persistent thread
//                       with its own stream that memcpys a unit into one buffer while the DMA of
//                       its other buffer runs, and lanes overlap each other (FACTS.md: one
//                       memcpy thread ~11 GB/s, sixteen 50-55 GB/s; seed 000: single-thread
//                       staging gave 52 MB/s from UC memory)
//   zero-copy-mapped    registered with Mapped; a kernel reads/writes host memory over PCIe
//   pageable-access     a kernel reads the host pointer directly (devices reporting
//                       PageableMemoryAccess, as HMM gives; the H100 here reports 0)
//   pageable            cudaMemcpy from unregistered memory: the driver stages it itself
// Open() keeps the first path that works and records why each faster one was refused.
#ifndef RESMEM_ENGINE_TRANSFER_TRANSFER_ENGINE_H_
#define RESMEM_ENGINE_TRANSFER_TRANSFER_ENGINE_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/api/clock.h"
#include "backends/api/gpu.h"
#include "backends/cuda/cuda_gpu.h"
#include "engine/transfer/lane_pool.h"

namespace resmem::transfer {

enum class Path {
  kRegisteredDirect,
  kRegisteredChunked,
  kStaged,
  kZeroCopyMapped,
  kPageableAccess,
  kPageable,
};
const char* PathName(Path p);  // "registered-direct", ...
Result<Path> ParsePath(const std::string& name);  // the error lists the names
std::vector<Path> PathsFastestFirst();

struct TransferOptions {
  std::vector<Path> allowed;              // tried in this order; empty: PathsFastestFirst()
  uint64_t register_chunk = 64ull << 30;  // piece size of registered-chunked
  // Staged path. Defaults from the H100 sweeps (docs/hil/2026-11-21-h100-staged/
  // staging-sweep.log): 16 lanes filling 4 segments of 8 MiB gave 90-92% (H2D) and 93-97% (D2H)
  // of pinned at 256 MiB; 3 buffers 76%/84%, 16 MiB segments 87%/95%.
  int staging_lanes = 16;                 // lanes (threads, pinned buffers, streams) of staged
  uint64_t staging_chunk = 8ull << 20;    // bytes of each pinned buffer: the largest segment/unit
  int staging_buffers = 4;                // pinned buffers (per lane in lanes mode)
  uint64_t staging_min_unit = 256 << 10;  // smallest unit a copy is cut into (smaller DMAs lose)
  int staging_units_per_lane = 2;         // a copy is cut into >= lanes x this many units
  int staging_spin_us = 1000;             // idle lanes poll this long before they sleep
  bool staging_pin_threads = false;       // pin lane threads to CPUs (lane_pool.h)
  // How the staged path splits work (CUDA backend; a simulator or test double always uses lanes):
  //   segments   the copy is cut into segments of up to staging_chunk bytes; every lane memcpys
  //              pieces of the same segment into one of staging_buffers pinned buffers, and lane
  //              0 issues one DMA per segment on one stream while the lanes fill the next. Few,
  //              large DMAs: the H100 sweep showed ~8 us lost per DMA (256 KiB units reached only
  //              21 GB/s, as one synchronous 256 KiB pinned copy does).
  //   lanes      each lane owns staging_buffers buffers and moves whole units itself (a DMA per
  //              unit, per-lane streams): the first design, kept for comparison.
  bool staging_segments = true;
  // Non-temporal (streaming) stores for the CPU copy into the host mapping (device to host):
  // the destination is not read again soon, so it need not pass through the cache.
  bool staging_stream_to_host = false;
};

struct PathChoice {
  Path path = Path::kPageable;
  uint32_t register_flags = 0;
  std::vector<std::string> refusals;  // "registered-direct refused: cudaHostRegister(...) -> ..."
  std::string detail;                 // "16 lanes x 4 MiB", "4 pieces of 64 GiB", ...
  std::string Describe() const;       // "took staged (16 lanes x 4 MiB); registered-direct refused: ..."
};

class TransferEngine {
 public:
  // Chooses a path for `mem`. Fails only when no allowed path works (every refusal listed).
  static Result<std::unique_ptr<TransferEngine>> Open(Gpu& gpu, HostMemory& mem, Clock& clock,
                                                      const TransferOptions& options = {});
  ~TransferEngine();  // unregisters what it registered; stops lanes; frees staging buffers
  TransferEngine(const TransferEngine&) = delete;
  TransferEngine& operator=(const TransferEngine&) = delete;

  const PathChoice& choice() const { return choice_; }
  // Moves [host_offset, +length) of the mapping to or from [dev_offset, +length) of `dev`.
  // Stats: bytes, seconds (steady clock for real backends, the modelled copy time for a virtual
  // clock), path = PathName(choice().path). Not for concurrent calls on one engine when staged.
  Result<CopyStats> Copy(CopyDirection dir, uint64_t host_offset, DeviceBuffer& dev,
                         uint64_t dev_offset, uint64_t length);

 private:
  TransferEngine(Gpu& gpu, HostMemory& mem, Clock& clock, TransferOptions o)
      : gpu_(gpu), mem_(mem), clock_(clock), o_(std::move(o)) {}
  Status TryPath(Path p);
  Result<CopyStats> CopyStaged(CopyDirection dir, uint64_t host_offset, DeviceBuffer& dev,
                               uint64_t dev_offset, uint64_t length);
  Status StageOne(int lane, CopyDirection dir, uint64_t host_offset, DeviceBuffer& dev,
                  uint64_t dev_offset, uint64_t length, double* copy_seconds);
  Status LaneAsync(int lane, CopyDirection dir, uint64_t host_offset, DeviceBuffer& dev,
                   uint64_t dev_offset, uint64_t length, uint64_t unit, uint64_t units,
                   std::atomic<uint64_t>& next);

  Status CopySegments(CopyDirection dir, uint64_t host_offset, DeviceBuffer& dev,
                      uint64_t dev_offset, uint64_t length);

  Gpu& gpu_;
  HostMemory& mem_;
  Clock& clock_;
  TransferOptions o_;
  PathChoice choice_;
  std::vector<uint64_t> registered_;  // offsets of registrations to undo
  // Staged: lanes x buffers_per_lane_ pinned buffers (lane-major), one reusable copy ticket
  // (CUDA event) per buffer on the CUDA backend, and the persistent lane threads.
  std::vector<std::unique_ptr<HostMemory>> staging_;
  std::vector<cuda::CudaGpu::CopyTicket> tickets_;
  bool async_ = false;
  int buffers_per_lane_ = 1;
  bool segments_ = false;  // staging_segments in effect (CUDA, real clock, >= 2 lanes)
  std::unique_ptr<LanePool> lanes_;
};

}  // namespace resmem::transfer

#endif  // RESMEM_ENGINE_TRANSFER_TRANSFER_ENGINE_H_
