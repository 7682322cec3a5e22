// The transfer engine: the ways a real application moves bytes between a host mapping (the
// reserved region, or a stand-in) and GPU memory, tried fastest first:
//   registered-direct   one cudaHostRegister of the whole span, then DMA from it
//   registered-chunked  the span registered in pieces (one call of 512 GiB or more fails with 2
//                       on r580 drivers; FACTS.md), copies split at piece boundaries
//   staged              a ring of pinned buffers, one per lane; each lane is a thread with its own
//                       stream that memcpys a chunk in and DMAs it out, so copy-in of one lane
//                       overlaps the DMA of others (FACTS.md: one memcpy thread ~11 GB/s, sixteen
//                       50-55 GB/s; seed 000: single-thread staging gave 52 MB/s from UC memory)
//   zero-copy-mapped    registered with Mapped; a kernel reads/writes host memory over PCIe
//   pageable-access     a kernel reads the host pointer directly (devices reporting
//                       PageableMemoryAccess, as HMM gives; the H100 here reports 0)
//   pageable            cudaMemcpy from unregistered memory: the driver stages it itself
// Open() keeps the first path that works and records why each faster one was refused.
#ifndef RESMEM_ENGINE_TRANSFER_TRANSFER_ENGINE_H_
#define RESMEM_ENGINE_TRANSFER_TRANSFER_ENGINE_H_

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backends/api/clock.h"
#include "backends/api/gpu.h"

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
  int staging_lanes = 16;                 // lanes (threads, pinned buffers, streams) of staged
  uint64_t staging_chunk = 4ull << 20;    // bytes one lane moves at a time
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
  void RunOnLanes(int lanes, const std::function<void(int)>& job);
  void StopLanes();

  Gpu& gpu_;
  HostMemory& mem_;
  Clock& clock_;
  TransferOptions o_;
  PathChoice choice_;
  std::vector<uint64_t> registered_;  // offsets of registrations to undo
  std::vector<std::unique_ptr<HostMemory>> staging_;  // lanes x buffers_per_lane_
  bool async_ = false;
  int buffers_per_lane_ = 1;
  // Lane workers (lane 0 is the calling thread).
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void(int)> job_;
  uint64_t generation_ = 0;
  int job_lanes_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

}  // namespace resmem::transfer

#endif  // RESMEM_ENGINE_TRANSFER_TRANSFER_ENGINE_H_
