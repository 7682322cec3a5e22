// `resmem stream`: ring-buffer acquisition, as in seed 000 (16 MB blocks at 10 Hz into a reserved
// region used as a ring). A producer (the FPGA's stand-in) writes numbered blocks into the ring's
// slots at a rate, or flat out; consumers move each block to the GPU through the transfer engine;
// a device-side check (backends/cuda pattern kernel; the device checksum on the simulator)
// verifies every block arrived whole and current. A block due while its slot still waits to be
// consumed is dropped (the FPGA would overwrite it); flat out, the producer waits instead.
// Faults lose nothing silently: a copy that fails or arrives wrong is retried (copy_attempts); a
// block that cannot be had whole is reported lost with its sequence number and the reason
// (StreamResult::lost), as is every dropped block. On the pipelined staged path (real clock) a
// copy error still ends the stream with that error.
#ifndef RESMEM_ENGINE_STREAM_STREAM_H_
#define RESMEM_ENGINE_STREAM_STREAM_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/api/clock.h"
#include "backends/api/gpu.h"
#include "backends/fault/fault_injector.h"
#include "engine/transfer/transfer_engine.h"

namespace resmem::stream {

// Consecutive blocks reported lost for one reason.
struct LostRange {
  uint64_t first = 0, last = 0;
  std::string reason;
};

// What a run keeps for each of its blocks until it ends (the time it was queued, the buffers it
// went through, its latency, and a copy of the latencies for the percentiles): about this many
// bytes a block, on top of the ring. A day at 2,500 blocks a second (10 GB/s of 4 MiB blocks)
// is 216 M blocks, about 8.6 GB: the commands check it against the RAM before they start.
constexpr uint64_t kStreamBytesPerBlock = 40;

struct StreamOptions {
  uint64_t block_bytes = 16ull << 20;  // seed 000: 16 MB blocks
  double rate_hz = 10;                 // seed 000: 10 Hz; 0 = flat out
  uint64_t blocks = 600;
  int slots = 16;                      // ring slots in the region
  // Concurrent consumers. On the staged path each consumer gets its own engine with
  // staging.staging_lanes / consumers lanes, so one block's device check overlaps the next
  // block's copy; staged_consumers sets the count there (0: use `consumers`).
  int consumers = 4;
  int staged_consumers = 2;
  // Staged path on a real clock: one engine with every lane takes the blocks as a queue
  // (TransferEngine::CopyQueue), so block k+1 fills pinned segments while block k's DMAs drain,
  // and a verifier thread checks each block on the device as it arrives (4 device buffers).
  // false: staged_consumers engines, each copying and then checking one block at a time.
  bool staged_pipeline = true;
  transfer::TransferOptions staging;   // staged path tuning (allowed/path come from `path`)
  std::string host_kind = "memfd";     // backends/host kind standing in for the region
  std::string path;                    // force a transfer path; "" = the engine's choice
  uint64_t seed = 1;
  bool progress = true;                // live progress on stderr
  int copy_attempts = 3;               // tries per block of the copy and its device check
  // The stream's own fault point, "stream.block" (the producer's write of a block into the ring,
  // the device's DMA): error = the block never lands, corrupt = a bit of it flips in the ring.
  // Null: none. The Gpu consults its own points (gpu.copy, ...).
  std::shared_ptr<FaultInjector> faults;
  // Who writes the blocks into the ring: "cpu" (the pattern, written by a thread of this process;
  // the default) or "card" (the card's DMA engine, backends/card and engine/stream/card_feed.h:
  // card blocks at rate_hz * block_bytes bytes a second, a descriptor posted per free slot; slots
  // a power of two). With the card the stream.block fault point is not consulted: the card's own
  // fault script, card_faults, is.
  std::string producer = "cpu";
  std::string card_faults;
};

struct StreamResult {
  std::string backend;
  std::string path_choice;
  std::string producer;      // "cpu", or "card (...)" with what the card did
  StreamOptions options;
  uint64_t delivered = 0;  // arrived whole (checked on the device)
  uint64_t dropped = 0;    // overwritten before they could be copied
  uint64_t corrupt = 0;    // arrived wrong on every try
  uint64_t failed = 0;     // copy (or device check) failed on every try
  uint64_t retried = 0;    // tries after the first
  uint64_t card_overruns = 0;  // --producer card: blocks the card lost (no slot posted, a stall, the link down)
  std::vector<LostRange> lost;  // every block not delivered: dropped, corrupt, failed, by number
  double seconds = 0;
  double gbps = 0;
  double pinned_gbps = 0;  // cudaMallocHost baseline for the same block size, this run
  double latency_p50_ms = 0, latency_p99_ms = 0, latency_max_ms = 0;
  std::string ToJson() const;
  std::string Summary() const;
};

Result<StreamResult> RunStream(Gpu& gpu, Clock& clock, const std::string& backend,
                               const StreamOptions& options);

}  // namespace resmem::stream

#endif  // RESMEM_ENGINE_STREAM_STREAM_H_
