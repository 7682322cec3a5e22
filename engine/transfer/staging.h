// What the staged path's strategies share (engine-internal): the ring of pinned buffers with a
// copy ticket each, the persistent lane threads, the trace of the last copy and the plan cache
// (struct Staging); the CPU side of every staged pipeline (the copy into or out of a pinned
// buffer, the cache hints); the trace's clock and bookkeeping.
#ifndef RESMEM_ENGINE_TRANSFER_STAGING_H_
#define RESMEM_ENGINE_TRANSFER_STAGING_H_

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "backends/api/gpu.h"
#include "backends/cuda/cuda_gpu.h"
#include "engine/transfer/copy_strategy.h"
#include "engine/transfer/lane_pool.h"
#include "engine/transfer/transfer_engine.h"

namespace resmem::transfer {

// A CPU copy of the staged path (pinned buffer -> host mapping, or host mapping -> pinned
// segment; TransferOptions::staging_nt_fill_below says when the latter streams). With
// `streaming`, 16-byte non-temporal stores (SSE2, every x86-64 has them) write the destination
// around the cache, so the copy does not first read each destination line (no read-for-
// ownership) and leaves no dirty lines behind for a DMA to fetch out of the CPU caches; an
// sfence makes the stores visible before return.
inline void CpuCopy(uint8_t* dst, const uint8_t* src, uint64_t n, bool streaming) {
#if defined(__x86_64__)
  if (streaming && n >= 4096) {
    uint64_t head = (16 - (reinterpret_cast<uintptr_t>(dst) & 15)) & 15;
    std::memcpy(dst, src, head);
    dst += head, src += head, n -= head;
    for (; n >= 64; dst += 64, src += 64, n -= 64) {
      __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
      __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16));
      __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 32));
      __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 48));
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst), a);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 16), b);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 32), c);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 48), d);
    }
    std::memcpy(dst, src, n);
    _mm_sfence();
    return;
  }
#endif
  (void)streaming;
  std::memcpy(dst, src, n);
}

// CLDEMOTE every cache line of [p, p+n): a hint that moves the lines a fill just wrote from the
// filling core's private caches to the shared last-level cache, where a device's read finds them
// without snooping that core. Encoded in the NOP space: a CPU without it does nothing.
inline void DemoteLines(const uint8_t* p, uint64_t n) {
#if defined(__x86_64__)
  for (uint64_t at = 0; at < n; at += 64)
    asm volatile(".byte 0x0f, 0x1c, 0x07" : : "D"(p + at) : "memory");  // cldemote (%rdi)
#else
  (void)p, (void)n;
#endif
}

// PREFETCHW every cache line of [p, p+n): the lines come into this core's cache ready to be
// written (the read-for-ownership done ahead of the stores). Encoded in the NOP space on CPUs
// without it.
inline void PrefetchForWrite(const uint8_t* p, uint64_t n) {
#if defined(__x86_64__)
  for (uint64_t at = 0; at < n; at += 64) asm volatile("prefetchw (%0)" : : "r"(p + at));
#else
  (void)p, (void)n;
#endif
}

// Host to device: n bytes from the mapping into a pinned segment, stored as `fill` says (the
// step every host-to-device pipeline's lanes take per piece).
inline void FillAs(SegmentFill fill, uint8_t* dst, const uint8_t* src, uint64_t n) {
  CpuCopy(dst, src, n, fill == SegmentFill::kNonTemporal);
  if (fill == SegmentFill::kCachedDemoted) DemoteLines(dst, n);
}

// Words of stream signals and piece rings compare cyclically, as the driver's
// CU_STREAM_WAIT_VALUE_GEQ does.
inline bool Reached(const volatile uint32_t* word, uint32_t value) {
  return static_cast<int32_t>(*word - value) >= 0;
}

// Raises *word to `value` unless it has reached it already, in the same cyclic order: a word a
// stream waits on only goes up. (A lane that finished a segment after lane 0 had released every
// wait with a later token, on an error, lowered the word again by a plain store: a wait queued
// behind it was then never met and the stream's synchronize never returned.)
inline void RaiseToken(volatile uint32_t* word, uint32_t value) {
  uint32_t seen = *word;
  while (static_cast<int32_t>(seen - value) < 0 &&
         !__atomic_compare_exchange_n(const_cast<uint32_t*>(word), &seen, value, false,
                                      __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
  }
}

// Microseconds since it was made: the time origin of a staged copy's trace.
class MicrosSince {
 public:
  double operator()() const {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0_).count();
  }

 private:
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

// A traced copy's lane times (TransferOptions::staging_trace; empty otherwise): when each lane
// entered the job, and when it started its first piece (-1: none).
struct LaneTimes {
  LaneTimes(bool tracing, int lanes)
      : enter(tracing ? lanes : 0, 0), first(tracing ? lanes : 0, -1) {}
  std::vector<double> enter, first;
};

// A fresh trace of a copy of `bytes` in segments (or units, or pieces) of `segment_bytes`.
void StartTrace(StagedTrace* t, uint64_t bytes, uint64_t segment_bytes, int lanes);
// Every per-segment time of `t` (filled, issue begun, issued, done) sized to `segments`, at 0.
void SizeSegmentTimes(StagedTrace* t, uint64_t segments);
// The lane-side fields of a trace: when the filling lanes (1..) entered the job and the first of
// them started a piece; `returned_us` when the lane pool returned.
void FinishTrace(StagedTrace* t, double returned_us, const LaneTimes& lanes);

// The largest segment of a copy in direction `dir` (TransferOptions::staging_chunk_h2d for host
// to device where set and smaller, else staging_chunk).
uint64_t SegmentCap(const TransferOptions& o, CopyDirection dir);

// The segment size of a copy where no plan cuts it: at least staging_min_segments (device to
// host: staging_min_segments_d2h where set) per copy where they can be >= staging_min_unit (so
// the first fill and the last DMA, which do not overlap, stay short), at most SegmentCap.
uint64_t SegmentSize(const TransferOptions& o, CopyDirection dir, uint64_t length);

// The staged path's shared state. Made by OpenStagedPath (staged_path.h), used by one copy at a
// time (TransferEngine::Copy's contract); the strategies keep a reference.
struct Staging {
  Staging(Gpu& gpu, HostMemory& mem, const TransferOptions& o);
  ~Staging();  // joins the lanes, releases the tickets; the pinned buffers go last
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;

  // The buffers, and on CUDA with real time their tickets and copy streams, for `lanes` lanes
  // (TransferEngine::TryPath for the staged path). A failed call is refused through `refuse`,
  // its status returned; what was made is freed by the destructor.
  Status Allocate(int lanes, bool virtual_clock, const Refuse& refuse);
  // Starts the lane threads (after the strategies are set up, as before the split).
  void StartLanes(int lanes);
  // Joins the lane threads: the engine's destructor, before anything they use goes.
  void StopLanes() { lanes.reset(); }

  // A job on the lanes whose lane 0 returns only once the work is done: elastic (LanePool::
  // RunElastic) unless TransferOptions::staging_elastic is off.
  void RunLanes(int lane_count, const std::function<void(int)>& job);
  // Waits for the DMA last queued with each ticket. A copy that fails with DMAs still queued
  // calls it before it returns (once it told its lanes to stop): those DMAs still read or write
  // the ring and the device, which the next copy's lanes and DMAs would share with them (a
  // strategy's Copy returns with none of its DMAs running, failed or not). Their own errors are
  // not reported: the copy returns the one that failed it. Nothing to wait for without tickets.
  void WaitForDmas();
  // The copy stream of segment i's DMA (TransferOptions::staging_dma_streams; -1: the calling
  // thread's stream).
  int DmaStream(uint64_t i) const {
    return o.staging_dma_streams > 1 ? static_cast<int>(i % o.staging_dma_streams) : -1;
  }
  // The plan (segment_plan.h) that cuts single copy `c`: host to device up to
  // staging_plan_upto bytes, device to host from staging_plan_d2h_from (0: never); null for the
  // others, which go in equal segments. With c.cached_plans_only, only a plan made before.
  const std::vector<uint64_t>* PlanFor(const CopyRequest& c);

  Gpu& gpu;
  cuda::CudaGpu* const cuda;  // the CUDA backend, or null (a simulator or test double)
  HostMemory& mem;
  const TransferOptions& o;
  bool async = false;         // copies can be asynchronous (CUDA on real time)
  int buffers_per_lane = 1;   // staging_buffers where async: one fills while another is in DMA
  bool segments = false;      // staging_segments in effect (CUDA, real clock, >= 2 lanes)
  // Segments: one ring of buffers shared by all lanes; lanes: buffers per lane (lane-major).
  // One reusable copy ticket (CUDA event) per buffer where async.
  std::vector<std::unique_ptr<HostMemory>> buffers;
  std::vector<cuda::CudaGpu::CopyTicket> tickets;
  // Device to host with staging_rotate_ring: where the next copy's first segment goes in the
  // ring (bytes from the first buffer's start; SegmentDrain's).
  uint64_t drain_cursor = 0;
  std::unique_ptr<LanePool> lanes;
  StagedTrace trace;          // the last copy's (TransferOptions::staging_trace)
  uint64_t sm_given_to_dmas = 0;  // SM copies the DMAs moved instead (SegmentChain)

 private:
  // The plan of a single staged copy, made once per direction and length (the last 64 lengths
  // are kept).
  const std::vector<uint64_t>& PlanOf(CopyDirection dir, uint64_t length);
  std::map<std::pair<int, uint64_t>, std::vector<uint64_t>> plans_;  // PlanOf's
};

}  // namespace resmem::transfer

#endif  // RESMEM_ENGINE_TRANSFER_STAGING_H_
