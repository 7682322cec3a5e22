// The stream under injected faults, counted (issue 10 item 6): an acquisition that loses nothing
// silently. A producer (the FPGA's stand-in) writes numbered blocks into a ring of slots; the
// consumer copies each slot into a pinned staging buffer (host memcpy), checks it, copies it to
// the device and checks it there; a copy that fails or arrives wrong is retried, and a block that
// cannot be had whole is reported lost with its sequence number and the reason. Every block ends
// in exactly one of: delivered (once, intact) or reported lost.
//
// An independent checker (SoakChecker) judges that claim from outside the stream: it keeps the
// producer's own record (sequence number and FNV-1a of the bytes the producer meant to write,
// taken before any fault touches them), reads the device's checksum of every block the stream
// says it delivered, and at the end counts the blocks the stream neither delivered nor reported
// (silently lost), delivered twice (duplicated) and delivered with other bytes than the producer
// wrote (silently corrupted). The stream's own checks compare against what the ring holds; the
// checker compares against the producer's record, so a stream check that misses something shows
// up in the checker's counts (soak_test proves this with the stream's checks switched off).
//
// Block layout (block_bytes, a multiple of 8, at least 32): word 0 the sequence number, words
// 1..n-2 payload derived from (seed, sequence), the last word FNV-1a 64 of the bytes before it.
//
// Fault points (FaultInjector::KnownPoints), all seeded:
//   stream.block  the producer's write of a block into the ring (the device's DMA): error = the
//                 block never lands (the slot keeps its old block), corrupt = one bit flips after
//                 it lands, short = only the first part lands, delay = charged to the clock;
//   host.memcpy   the consumer's copy of a slot into the staging buffer: error, short (the rest of
//                 the staging buffer keeps the previous block), corrupt, delay;
//   gpu.copy      the staging buffer to the device (the Gpu's own fault point): error, short,
//                 corrupt, delay.
// A ring that cannot be read or written any more (SIGBUS or ENOTCONN from a FUSE mapping whose
// daemon died) ends the stream: that block and every later one are reported lost, and the result
// carries the error.
#ifndef RESMEM_ENGINE_STREAM_SOAK_H_
#define RESMEM_ENGINE_STREAM_SOAK_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backends/api/clock.h"
#include "backends/api/gpu.h"
#include "backends/api/memory.h"
#include "backends/fault/fault_injector.h"
#include "engine/stream/stream.h"

namespace resmem::stream {

struct SoakOptions {
  uint64_t blocks = 1000000;
  uint64_t block_bytes = 4096;
  uint64_t seed = 1;
  int copy_attempts = 3;  // tries of the staging and device copies per block before it is lost
  // The stream's own checks (staging buffer against the block's sequence number and trailer,
  // device checksum against the staging buffer). false only to prove the checker catches what
  // they would have caught: every copy is then trusted.
  bool verify = true;
  // Called before block `seq` is produced (a test kills the FUSE daemon here, say).
  std::function<void(uint64_t seq)> before_block;
  uint64_t progress_every = 0;  // print a progress line on stderr every N blocks (0: never)
};

// The checker's judgement of one run.
struct SoakVerdict {
  uint64_t produced = 0;            // blocks the producer meant to write
  uint64_t delivered_intact = 0;    // delivered once, device bytes == the producer's
  uint64_t reported_lost = 0;       // reported lost by the stream, never delivered
  uint64_t silently_lost = 0;       // neither delivered nor reported
  uint64_t silently_corrupted = 0;  // delivered with other bytes than the producer's
  uint64_t duplicated = 0;          // delivered more than once, or delivered and reported lost
  std::vector<uint64_t> examples;   // first sequence numbers of silent losses / corruptions
  bool Clean() const { return !silently_lost && !silently_corrupted && !duplicated; }
};

// The independent checker. Knows the block layout and nothing of the stream's internals.
class SoakChecker {
 public:
  explicit SoakChecker(uint64_t blocks) : record_(blocks, 0), state_(blocks, 0) {}
  // The producer's record: the FNV-1a of the block it meant to write.
  void Produced(uint64_t seq, uint64_t fnv);
  // The stream says block seq arrived; device_fnv is the device's checksum of what is there.
  void Delivered(uint64_t seq, uint64_t device_fnv);
  void ReportedLost(uint64_t seq);
  SoakVerdict Finish() const;

 private:
  std::vector<uint64_t> record_;
  // Per block: bit 0 produced, bit 1 delivered intact, bit 2 delivered wrong, bit 3 reported
  // lost, bit 4 delivered or reported more than once.
  std::vector<uint8_t> state_;
};

struct SoakResult {
  uint64_t blocks = 0;
  // What the stream reported.
  uint64_t delivered = 0;
  uint64_t reported_lost = 0;
  std::vector<LostRange> lost;  // every reported loss, consecutive ones merged
  uint64_t retried_copies = 0;  // copies retried after an error or a failed check
  std::string ended;            // why the stream stopped early ("" when it ran to the end)
  // What the checker found, and the faults that fired per point.
  SoakVerdict verdict;
  std::vector<std::pair<std::string, uint64_t>> faults_fired;
  double wall_seconds = 0;
  std::string Summary(const std::string& title) const;
};

// Runs the stream over `ring` (at least 2 blocks; its slots are ring.size() / block_bytes),
// copying to a device buffer of `gpu`. `faults` is the injector the Gpu consults too (gpu.copy).
Result<SoakResult> RunSoak(Gpu& gpu, FaultInjector& faults, HostMemory& ring,
                           const SoakOptions& options);

// FaultRules for a fault mix: each of the points above with each effect at probability p.
std::vector<FaultRule> SoakFaultMix(double p, double delay_seconds);

// The two soaks, set up whole (soak_test and the stream_soak benchmark share them):
struct SoakSetup {
  SoakOptions stream;
  uint64_t ring_slots = 64;
  double fault_probability = 0.001;  // per point and effect (SoakFaultMix)
  double fault_delay_seconds = 20e-6;
};
// On the simulator: the CUDA model (cuda-13.0-r580, h100-host) on a virtual clock, the ring a
// memfd mapping (the region's host stand-in), the fault mix at every point.
Result<SoakResult> RunSimSoak(const SoakSetup& setup);

// Through a real FUSE mount (mock/fuse, needs root and /dev/fuse): the ring is a device file of
// the emulated /dev/resmem, opened with direct I/O (the control file's refuse-mmap), so every
// producer write and consumer read is a request to the daemon. On top of the fault mix, the
// control file makes the daemon slow (`delay`) on one slot and fail (`eio`) another for a stretch
// of blocks, and kills the daemon (`die`) before block die_at (0: never). Unavailable when FUSE
// cannot mount here.
struct FuseSoakSetup {
  SoakSetup soak;
  uint64_t die_at = 0;
  uint64_t eio_from = 0, eio_blocks = 0;  // the eio stretch (eio_blocks 0: none)
  uint64_t delay_us = 200;                // the slow slot's delay per read (0: none)
};
Result<SoakResult> RunFuseSoak(const FuseSoakSetup& setup);

}  // namespace resmem::stream

#endif  // RESMEM_ENGINE_STREAM_SOAK_H_
