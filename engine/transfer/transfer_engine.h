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
// Inside, each way of copying is a strategy in a file of its own behind one interface
// (copy_strategy.h lists them).
#ifndef RESMEM_ENGINE_TRANSFER_TRANSFER_ENGINE_H_
#define RESMEM_ENGINE_TRANSFER_TRANSFER_ENGINE_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/api/clock.h"
#include "backends/api/gpu.h"
#include "backends/cuda/cuda_gpu.h"
#include "engine/transfer/lane_pool.h"
#include "engine/transfer/segment_plan.h"

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
  // The largest segment of a host-to-device copy or queue in segment mode (0, or more than
  // staging_chunk: staging_chunk). The buffers stay staging_chunk bytes, so device-to-host
  // copies keep their large DMAs while host-to-device ones touch only the first
  // staging_chunk_h2d bytes of each buffer: a smaller ring for the CPU's fill and the copy
  // engine's read to share. H200, ten
  // alternated bench rounds against 8 MiB (docs/hil/2026-11-29-h200-h2d-ring, runs 1-2): host to
  // device 256 MiB 93.5-95.4% of the staged ceiling (79.7 in a disturbed round) against 86.4-93.3%
  // with 8 MiB; 2 MiB 93%; device to host unchanged, as it should be.
  uint64_t staging_chunk_h2d = 4ull << 20;
  // Pinned buffers (per lane in lanes mode), 2..16: one fills while another is in DMA.
  int staging_buffers = 4;
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
  // Segments smaller than this are filled with non-temporal stores (host to device, segment
  // mode); larger ones with ordinary stores. Measured (docs/hil/2026-11-21-h100-staged2/
  // probe*.log): a small segment filled through the cache is read by the DMA engine at about half
  // speed (H100: 2 MiB segment DMAs 85.8 us after a cached fill against 49 us from a cold ring;
  // H200 host: 4 MiB copies 44% -> 69% of pinned, 16 MiB 52% -> 77% with non-temporal fills),
  // while 8 MiB segments did better cached (256 MiB 92% vs 83%, 16 MiB-block queue 54 vs 48
  // GB/s). 0: always cached.
  uint64_t staging_nt_fill_below = 8ull << 20;
  // Also fill a block's last B segments (B = staging buffers) with non-temporal stores, whatever
  // their size: nothing after them evicts the dirty lines a cached fill leaves, and a DMA reading
  // out of the CPU's caches ran at about half speed (H100 timeline: the last 8 MiB segment of a
  // 64 MiB copy 275 us against 157). Off by default: in the bench's A/B it moved 64 MiB by +1.5
  // to +2.5 points and 256 MiB by -0.5 to -3.8, inside the run-order drift of that run
  // (docs/hil/2026-11-23-h100-staged3).
  bool staging_nt_tail = false;
  // Segments of at least this many bytes are filled with ordinary stores and then CLDEMOTEd line
  // by line: the lines move from the filling core's private caches to the shared last-level
  // cache, where the DMA reads them without snooping that core and without a trip to DRAM (which
  // the fill's reads and the DMA otherwise share). Overrides staging_nt_fill_below for those
  // segments. H100 host (a Xeon with CLDEMOTE, 300 MiB L3): 16 MiB H2D 79-81% of pinned against
  // 73-74% with non-temporal fills, 64 MiB 78-82% against 71%, 256 MiB 91-94% against 88-90%;
  // cached stores without the demote 44-48% at 16 MiB (docs/hil/2026-11-23-h100-staged3).
  // 1 MiB copies (256 KiB segments) did better non-temporal (54-56% against 48-51%). On a CPU
  // without CLDEMOTE the instruction is a NOP and the fill is a plain cached one. 0: never.
  uint64_t staging_demote_fill_from = 512 << 10;
  // Device to host: segments of at most this many bytes have the ring's lines CLDEMOTEd after
  // the lanes read them, so the next DMA into that buffer need not invalidate them in the lanes'
  // private caches. H100 host: 4 MiB D2H 40% -> 62-66% of pinned, 16 MiB in 2 MiB segments 55-63%
  // -> 79-80%; with 8 MiB segments (64, 256 MiB) it cost 7-20 points, so larger segments are
  // left alone (docs/hil/2026-11-23-h100-staged3, run11). 0: never, the default since the ring
  // rotates (staging_rotate_ring), which needs no demote: the CLDEMOTE was most of the drain's
  // time (H200, a 256 KiB segment drained in 2.4-3.0 us without it against 5.5-6.9 us with it,
  // a 2 MiB one in 13-15 us against 28-31; docs/hil/2026-11-29-h200-shared-words, run 6).
  // Without the rotating ring set it to 2 MiB, or the device's writes into lines the lanes hold
  // cost more (16 MiB 57-62% of the ceiling without it; docs/hil/2026-11-29-h200-levers); the
  // signalled copies (staging_signals) keep the fixed ring and read it too.
  uint64_t staging_demote_drain_upto = 0;
  // Segments of one Copy: at least this many per copy where each can stay >= staging_min_unit
  // (the first fill and the last DMA do not overlap anything, so they should be short).
  int staging_min_segments = 8;
  // The same for device-to-host copies (0: staging_min_segments). Without the drain's CLDEMOTE
  // (staging_demote_drain_upto 0) 4 did better on the H100 (16 MiB: 58-72% of pinned against 48%
  // in 8); with it, 8 (2 MiB segments, demoted) reached 79-80% (docs/hil/2026-11-23-h100-staged3).
  int staging_min_segments_d2h = 0;
  // The first segment of a copy (and of a queue) is this large, each next one twice the one
  // before, up to the segment size: the first fill is the one part of a copy nothing overlaps,
  // so a small first segment starts the DMA engine sooner. 0: equal segments.
  uint64_t staging_ramp_first = 0;
  // Segment size for CopyQueue, where blocks follow each other and only the queue's first fill
  // and last DMA stand alone: 0 = staging_chunk (fewer, larger DMAs).
  uint64_t staging_queue_segment = 0;
  // Single copies in segment mode through stream signals (CudaGpu::NewSignals): every segment's
  // DMA is queued at once, each behind a wait on the word its lanes set when the segment is
  // filled (host to device) or drained (device to host), and followed by a write the lanes poll.
  // Falls back to the event-polling pipeline where the driver lacks stream memory operations
  // (said in choice().detail). CopyQueue keeps the event pipeline. Off by default: on the H100
  // it was no faster than event polling (docs/hil/2026-11-23-h100-staged3).
  bool staging_signals = false;
  // Signalled copies: queue each DMA behind a stream wait on its lane word at once (the GPU
  // starts it the moment the word is set) instead of queueing it from the host when the word is
  // set. Off by default: on the H100 a wait the GPU reaches unsatisfied is looked at again only
  // ~60 us later (docs/hil/2026-11-23-h100-staged3).
  bool staging_gpu_waits = false;
  // Signalled copies: the segment at the copy's exposed end (the first one host to device, whose
  // fill nothing overlaps; the last one device to host, whose drain nothing overlaps) is this
  // large, each one further in twice the one before, up to the copy's segment size. 0: equal
  // segments.
  uint64_t staging_edge_segment = 256 << 10;
  // Segment DMAs spread round-robin over this many copy streams (CudaGpu::EnsureCopyStreams)
  // instead of the driving lane's one stream, hoping a DMA's set-up would overlap the transfer of
  // the one before. It does not on the H100: DMAs from pinned memory queued at once on 2-4
  // streams took about as long as on one (4 MiB H2D in 8: 120.6 us on one stream, 113.8-121.6
  // on 2-4), and staged copies lost up to 21 points device to host (docs/hil/2026-11-24-h100-
  // staged4, run 1). 1: one stream (the default).
  int staging_dma_streams = 1;
  // Single staged copies moved by the SMs instead of copy-engine DMAs: a kernel launched at the
  // copy's start takes each piece of staging_sm_piece bytes the moment the lanes have filled it
  // (host to device), or writes each piece into the ring for the lanes to drain (device to
  // host), handing pieces over through words in mapped pinned memory (CudaGpu::LaunchPieceCopy).
  // No DMA per segment (~2.5 us each on the H100) and no first segment to fill before anything
  // moves. The ring is staging_buffers x staging_chunk bytes; CopyQueue keeps the DMA pipeline.
  //   staging_sm_copy        every single copy, both ways (device to host the lanes' drain
  //                          limits it: H100 16 MiB 78% of pinned against 86% for the DMAs);
  //   staging_sm_copy_upto   host-to-device single copies up to this many bytes (0: none).
  // H100, eight alternated bench rounds against the DMA pipeline (docs/hil/2026-11-24-h100-
  // staged7): host to device 1 MiB 77% of pinned against 64%, 4 MiB 85% against 73%, 16 MiB 88%
  // against 82%, 64 MiB 89% against 86%; at 128 MiB even; a kernel reads host memory at 92-93%
  // of a DMA, so larger copies are better with the DMAs.
  // The copy needs the SMs, which a program's own kernel may hold. Beside a kernel whose blocks
  // hold every SM for 2 ms, a 4 MiB SM copy took 1.9 ms against 0.1 ms for a DMA (smx-run7); the
  // piece kernel's stream has the greatest priority, which helps only where that kernel's blocks
  // are short (10 us blocks: 108.5 us). So a copy whose kernel has not started within
  // staging_sm_start_us goes by the DMAs instead. On by default up to 64 MiB (host to device);
  // 0 turns it off, for a program that wants every SM to itself. H200 (docs/hil/2026-11-29-
  // h200-h2d-ring, runs 2-3, with 4 MiB host-to-device segments): 64 MiB 88-89% of pinned through
  // the SMs against 75-84% through the segment DMAs in the quiet rounds, which also ends the dip
  // at 64 MiB below 16 MiB; 256 MiB stays with the DMAs (93% against 91%). The limit was 16 MiB,
  // the seed's block, before.
  bool staging_sm_copy = false;
  uint64_t staging_sm_copy_upto = 64ull << 20;
  uint64_t staging_sm_piece = 32 << 10;  // a multiple of 4 KiB
  // The SM copy's kernel: this many blocks of 512 threads, at most one per SM (more are cut to
  // the device's SM count). A program's kernel beside the copy keeps the other SMs. H100
  // (docs/hil/2026-11-24-h100-staged8, smx2-run1), the copy's own speed in % of pinned:
  //   blocks         1 MiB   4 MiB   16 MiB   64 MiB
  //   132 (every SM) 79.5    87.9    91.3     91.3
  //   32             79.5    88.6    91.3     91.8
  //   8              76.0    84.9    90.8     90.2
  // and what a 16 MiB copy took from a ~2 ms kernel of 10 us blocks on another stream: +82 us
  // with 132 blocks, +21 with 32 (4 MiB: +11 against +6). Long blocks (100 us) lose about one
  // block's time either way: the copy's blocks wait for a block to end before they run.
  int staging_sm_blocks = 32;
  // How long an SM copy waits, from its kernel's launch, for the kernel to start (its blocks
  // write a started word). If it has not started by then, a program's kernel holds the SMs: the
  // copy goes by copy-engine DMAs instead, and the kernel, whenever it runs, leaves without
  // touching anything (kernels.h, PieceCopyArgs). 0: wait as long as it takes (the copy then
  // waits for the SMs: beside blocks that hold every SM for 2 ms, 1.9 ms for 4 MiB, smx-run7).
  double staging_sm_start_us = 20;
  // Device to host: a lane claims its piece before the segment's DMA is done and prefetches the
  // piece's destination lines for writing (PREFETCHW) while it waits, so fewer of the drain's
  // stores wait for a read-for-ownership. Why: a drain into lines another thread wrote last ran
  // 1 MiB copies at 44% of pinned against 61% into lines the lanes wrote last (H100, docs/hil/
  // 2026-11-24-h100-staged4, run 14). Gain, two interleaved bench rounds (run 15): D2H 64 KiB
  // 54-57% against 44-45%, 1 MiB to 64 MiB +0.5 to +2 points, 256 MiB 95.9-96.3% against
  // 95.4-95.7%; host to device unchanged.
  bool staging_prefetch_dst = true;
  // Device to host: the copy's last segment is cut into a falling ramp down to about this many
  // bytes (DrainSegmentBounds), so the last drain, which nothing overlaps, is short. 0: equal
  // segments (the default: on the one quiet round measured, 64 MiB D2H 84.1-85.7% of pinned with
  // tails of 512 KiB-2 MiB against 84.5% without; docs/hil/2026-11-24-h100-staged4, run 9).
  uint64_t staging_d2h_tail = 0;
  // Device to host: each copy's segments go into the ring where the last copy's ended (a
  // running cursor over all staging_buffers x staging_chunk bytes, PlaceInRing), instead of
  // segment i into buffer i % S from its start. A ring line is then written by the device again
  // only after the whole ring (32 MiB) has gone by, long after the lanes that drained it have
  // let it go, where each small copy otherwise reuses the first bytes of the same buffers, whose
  // lines those lanes still hold, and needed the drain's CLDEMOTE (staging_demote_drain_upto),
  // which cost most of the drain's time. H200, five alternated bench rounds each, % of the
  // ceiling (docs/hil/2026-11-29-h200-shared-words, runs 6 and 8), medians:
  //                                   D2H 1 MiB   4 MiB   16 MiB   64 MiB   256 MiB
  //   fixed ring, demoted (before)       82-83      79-82    88-89    95-97     99
  //   rotating, not demoted                89          88       94       97      99
  //   rotating, cut by plan from 1 MiB     93          90       97       98     100
  // Host to device is unchanged. false: the fixed ring (then set staging_demote_drain_upto).
  bool staging_rotate_ring = true;
  // Segment copies return once the work is done, not once every lane thread has looked in
  // (LanePool::RunElastic): a lane the OS has not scheduled yet is not waited for.
  bool staging_elastic = true;
  // The smallest piece a filling lane claims of a segment (SegmentPiece's floor). Only segments
  // under 30 x 64 KiB (copies under 16 MiB) are affected. H100, four interleaved bench rounds
  // against the 64 KiB floor (docs/hil/2026-11-24-h100-staged4, runs 2 and 3): 1 MiB H2D
  // 56-60% of pinned against 55% (undisturbed rounds), D2H 54-62% against 50-51%, 4 MiB H2D
  // 67-72% against 66-68%, D2H 69-73% against 66-68%.
  uint64_t staging_min_piece = 16 << 10;
  // Host to device, single segment copies of at most staging_plan_upto bytes, and device to
  // host, those of at least staging_plan_d2h_from bytes, are cut by a plan (segment_plan.h) made
  // from staging_costs; the others into equal segments (host to device) or DrainSegmentBounds
  // (device to host). 0: never. H100 (docs/hil/2026-11-24-h100-staged5), alternated bench
  // rounds against equal segments:
  //   host to device, runs 3, 4 and 6: 1-2 MiB +2 to +13 points (2 MiB 69-72% against 58-59%),
  //   32-64 MiB +1.5 to +3.5 (85-86% against 81-83%), 4-16 MiB within the rounds' spread; the
  //   plan at 256 MiB lost 3 points (run 3);
  //   device to host, run 6 (the plan of the costs measured that call, 8 MiB segments ending in
  //   a falling tail): 64 MiB 94.4-95.5% against 91.6-92.5%, 256 MiB 96.8-97.1% against
  //   96.2-96.8%; below 64 MiB the plans were within the spread (runs 3, 4) or far below it
  //   (4-8 MiB: 52-56% against 75-81%, run 6).
  // Device to host from 1 MiB since the ring rotates without a demote (H200, docs/hil/2026-11-
  // 29-h200-shared-words, run 8, five alternated rounds, % of the ceiling, the rotating ring
  // both): 1 MiB 92-94 against 86-90 (run 6) in equal segments, 4 MiB 84-92 against 85-90,
  // 16 MiB 84-98 (97) against 93-95, 64 MiB 98-99; the drain now runs ahead of the DMAs, so
  // the plan's short last segments pay (with the fixed, demoted ring they lost, 2026-11-29-
  // h200-levers, runs 2-3).
  uint64_t staging_plan_upto = 64ull << 20;
  uint64_t staging_plan_d2h_from = 1ull << 20;
  StagingCosts staging_costs;
  // Host to device: the driving lane fills pieces of the first segment itself until its DMA can
  // be issued (the other lanes take microseconds to enter a copy). H100, three alternated bench
  // rounds against off (docs/hil/2026-11-24-h100-staged5, run 9): 64-256 KiB +2 to +6 points in
  // the two undisturbed rounds, 1 MiB +2 to +2.5, larger copies within the rounds' spread.
  bool staging_driver_fills = true;
  // Host-to-device single copies (not CopyQueue, not the SM copy) with DMAs sized by the fill
  // frontier instead of a plan: the lanes fill units of the pinned ring in order (staging_
  // frontier_unit, smaller for short copies: FrontierShapeOf); the driving lane issues one DMA
  // for every unit filled since its last one whenever fewer than two DMAs are queued and at
  // least staging_frontier_min_dma bytes (or the copy's rest) wait. A fill that runs ahead of the
  // link makes the DMAs grow by themselves, one that does not keeps them small: there is no model
  // of the host to get wrong. Non-temporal fill under staging_nt_fill_below, cached and CLDEMOTEd
  // from there. H100 (docs/hil/2026-11-24-h100-staged8):
  //   the shape stand-alone (dyn-run1 to 3, against pinned cudaMemcpy alternated with it): 16 MiB
  //   85-90% of pinned, 64 MiB 92-95%, 256 MiB 94-98%;
  //   in the engine, staged_probe on quiet moments (runs 10, 13): 16 MiB 89.4-89.6%, 64 MiB
  //   89.4-94.1%, where the segment pipelines read 84-90% (runs 4, 13);
  //   but bench's alternated rounds on the same hosts (runs 8-12; 11 and 12 with this form) do
  //   not separate the two from 16 MiB (16 MiB 76-82% against 80-84%, 64 MiB 74-87% against
  //   71-87%, 256 MiB 80-94% against 69-94%), and it is behind at 64 KiB (44-54% against
  //   61-64%); run 16, three rounds each, medians: 16 MiB 80.6% against 82.7, 64 MiB 83.2
  //   against 85.2, and with the lanes spinning through bench's work (--spin-us 200000) 81.6
  //   against 85.5 and 86.6 against 89.3, so the lanes' wake-up is not why.
  // Why (staged9, runs 3-5): the caches' state. bench's first copy of a cell follows the other
  // path's stamps and copies; with 512 MiB of other memory dirtied before each copy the lanes'
  // fill alone runs at 36-46 GB/s (112-143 warm), under the link, and this pipeline loses more
  // than the segment pipelines (64 MiB 1,742-2,051 us against 1,551-1,702), where warm it is the
  // fastest (16 MiB 361-370 us against 379-410). So it is opt-in (--frontier).
  bool staging_frontier = false;
  uint64_t staging_frontier_unit = 32 << 10;
  uint64_t staging_frontier_min_dma = 256 << 10;
  // By the fill frontier: while a DMA is queued, the next one is issued only once the queued DMAs
  // are projected to end within this many microseconds (their bytes at the link rate the copies
  // have measured so far, first staging_costs.dma_gbps, plus staging_costs.per_dma_us each), so
  // it takes everything the lanes filled meanwhile. A fill ahead of the link then makes each DMA
  // about fill/link times the one before, where issuing at once grows them by about the square
  // root of that: fewer DMAs, each costing the copy engine ~2.5 us beyond its bytes (docs/hil/
  // 2026-11-24-h100-staged4, run 5). The lead covers a submit (2.7-3.5 us warm, 9.8-12.3 cold:
  // staged9 run 5). 0 (the default): issue as soon as fewer than two are queued. H100 (docs/hil/
  // 2026-11-24-h100-staged10): fewer DMAs, no time gained. staged_probe, 16 MiB back to back
  // (runs 1, 6): 7-10 DMAs against 10-14, 354-384 us against 359-363; 64 MiB 1,310-1,338 us
  // against 1,316-1,519. bench's alternated rounds, host to device, medians (runs 5, 6: ten
  // rounds each): 16 MiB 80.5% against 78.3 (the segment pipelines 81.8), 64 MiB 80.4 against
  // 80.6 (segments 85.1); run 9, six rounds, lead 24 us: 16 MiB 79.5 against 80.3, with
  // --warm-cells 87.4 against 86.6. A smaller first DMA with it (--frontier-min-dma 64K/128K)
  // did not start the link earlier (the first DMA still issued at 10-14 us) and lost from
  // 16 MiB. Why (run 7): later DMAs let the lanes fill at 65-71 GB/s instead of about the link's
  // rate, but the first DMA goes later.
  double staging_frontier_lead_us = 0;
  // Debug: keep per-phase timestamps of the last staged segment copy (last_trace()). Costs one
  // steady-clock read per piece and per segment event.
  bool staging_trace = false;
  // Tests: the number the SM copy's piece ring and the stream signals count from. Their words
  // compare cyclically (as CU_STREAM_WAIT_VALUE_GEQ does), so an engine that lives long enough
  // crosses 2^31 (the SM copy after about 64 TiB in 32 KiB pieces: half an hour of 64 MiB copies
  // on an H200); a test starts just below it to cross it at once. Every copy sets its words to
  // "nothing yet" before it starts (piece_copy.cc, signalled_copy.cc), so none is stale then.
  uint32_t staging_first_number = 1;
};

// Where one staged segment copy's time went (TransferOptions::staging_trace), in microseconds
// from the moment the copy was handed to the lanes. Per segment, as the driving lane saw it:
// filled (all pieces in the pinned buffer; device to host: all drained out of it into the
// mapping), the DMA call entered and returned (submission cost),
// and the DMA's event found complete.
struct StagedTrace {
  uint64_t bytes = 0, segment_bytes = 0;
  int segments = 0, lanes = 0;
  double lane_enter_min_us = 0, lane_enter_max_us = 0;  // fill lanes entering the job (wake-up)
  double first_piece_us = 0;                            // the first memcpy started
  std::vector<double> filled_us, issue_begin_us, issued_us, done_us;
  double returned_us = 0;  // the lane pool returned: the copy is complete
  // Host to device: pieces of the first segment the driving lane filled itself, or by the fill
  // frontier the units it filled while no DMA ran (TransferOptions::staging_driver_fills).
  uint64_t driver_pieces = 0;
  // A copy moved by the SMs (TransferOptions::staging_sm_copy, staging_sm_copy_upto): its pieces
  // (segments stays 0), the moment the kernel's launch returned, and the moment the lanes had
  // moved every piece.
  uint64_t sm_pieces = 0;
  double launched_us = 0, pieces_moved_us = 0;
  int sm_blocks = 0;  // the blocks the kernel ran with (it says so itself, with its done word)
  // When the driving lane saw the kernel's started word (0: it did not), and whether it gave the
  // copy to the DMAs because the kernel had not started within staging_sm_start_us. Then the
  // rest of the trace is the DMAs' copy, timed from its own start, and launched_us is kept from
  // the SM copy, with sm_abandoned_us: when the SM copy's lanes had all returned.
  double sm_started_us = 0;
  bool sm_given_to_dmas = false;
  double sm_abandoned_us = 0;
  // A copy by the fill frontier (TransferOptions::staging_frontier): each DMA's bytes, in order
  // (its segments are its DMAs), and each unit's fill, by unit number: when a lane began it and
  // when its word was set (unit_bytes each, the last one shorter).
  std::vector<uint64_t> dma_bytes;
  uint64_t unit_bytes = 0;
  std::vector<double> unit_begin_us, unit_filled_us;
};

// The piece the filling lanes (all but the driving lane 0) claim of a staged segment of `seg`
// bytes: about two per filling lane, at least `min_piece` (rounded up to 4 KiB), a multiple of
// 4 KiB. lanes >= 2.
uint64_t SegmentPiece(uint64_t seg, int lanes, uint64_t min_piece);

// How the lanes fill a host-to-device segment of `n` bytes into its pinned buffer (segment
// pipelines): cached stores then CLDEMOTE from staging_demote_fill_from (0: never), whatever else
// holds; else non-temporal stores below staging_nt_fill_below, or when `in_tail` (the segment is
// among its copy's last staging_buffers) and staging_nt_tail; else cached stores. Decided by the
// segment's own size, not the copy's segment limit.
enum class SegmentFill { kCached, kNonTemporal, kCachedDemoted };
SegmentFill HostToDeviceFill(const TransferOptions& o, uint64_t n, bool in_tail);

// The next DMA of a host-to-device copy by the fill frontier (TransferOptions::staging_frontier):
// its length, or 0 for none yet. Copy bytes [issued, frontier) are filled and in no DMA,
// `in_flight` DMAs are queued (at most `depth`), and the ring's buffers are `chunk` bytes each, a
// DMA staying inside one (issued % chunk is its offset there). A DMA takes every waiting byte
// once at least min_dma wait, or the copy's rest is filled. `hold`: the DMAs queued are projected
// to keep the link busy for longer than the lead (TransferOptions::staging_frontier_lead_us), so
// while one is queued the next waits and grows, unless it already reaches its buffer's end or the
// copy's end (it could grow no further).
uint64_t NextFrontierDma(uint64_t issued, uint64_t frontier, uint64_t length, int in_flight,
                         int depth, uint64_t min_dma, uint64_t chunk, bool hold = false);
// The first unit u in [from, to) of a fill-frontier copy whose ring word, word(u), no longer
// reads the unit's own number base + u, or `to` when every one does. The driver checks a DMA's
// units when the DMA is done, before their ring space is freed: a unit refilled earlier (by a
// later lap of the ring) was overwritten while the DMA could still read it, and the copy fails.
uint64_t FirstRefilledUnit(const std::function<uint64_t(uint64_t)>& word, uint64_t base,
                           uint64_t from, uint64_t to);
// A fill-frontier copy's fill, from its trace's unit times (StagedTrace::unit_filled_us): the
// moment the frontier (every unit before it filled) first covered `bytes` of the copy; past the
// copy's end, the moment all of it was; 0 for 0 bytes; -1 when the trace has no unit times.
double FrontierReachedUs(const StagedTrace& t, uint64_t bytes);
// One line on a fill-frontier copy's fill (staged_probe --dump): when the first unit began, when
// the frontier reached 256 KiB, 1 MiB, a quarter, half and all of the copy, and a unit's fill
// time, median and longest (with its unit). Empty when the trace has no unit times.
std::string DescribeUnitFills(const StagedTrace& t);
// A copy's unit and smallest DMA by the fill frontier: `unit` halved (down to 4 KiB, while it
// stays a multiple of 4 KiB) until the copy has 64 units, and the smallest DMA an eighth of the
// copy, between that unit and `min_dma`. A short copy then has enough units for every lane and
// its first DMA goes early (H100, staged8 run 9: 1 MiB with 16 KiB units and 128 KiB DMAs 44.5 us
// against 53.2 with 32 KiB and 256 KiB).
struct FrontierShape {
  uint64_t unit = 0, min_dma = 0;
};
FrontierShape FrontierShapeOf(uint64_t length, uint64_t unit, uint64_t min_dma);

// Segment boundaries of a device-to-host copy of `length` bytes in segments of `seg`: offsets
// from 0 to length. With `tail` (0 < tail < seg) and at least two segments' worth, the copy's
// last `seg` bytes are cut into a falling ramp seg/2, seg/4, ..., ~tail, ~tail, so the drain
// that nothing overlaps (the last segment's) is short (TransferOptions::staging_d2h_tail).
std::vector<uint64_t> DrainSegmentBounds(uint64_t length, uint64_t seg, uint64_t tail);

// Where a device-to-host copy's segments (of `lengths` bytes, each at most `chunk`) go in a ring
// of `buffers` pinned buffers of `chunk` bytes (TransferOptions::staging_rotate_ring): from
// `cursor` on (bytes from the first buffer's start), each where the one before ended, a segment
// that would cross a buffer's end at the next buffer's start instead, and round the ring. A
// segment's DMA overwrites the bytes of the copy's segments a lap (or more) before it: `wait`
// is how many of the copy's first segments must be drained before it may be queued. Earlier
// copies are all drained by then. Returns the cursor after the last segment (in [0, ring)).
struct RingPlace {
  int buffer = 0;
  uint64_t offset = 0;
  uint64_t wait = 0;
  bool operator==(const RingPlace& o) const {
    return buffer == o.buffer && offset == o.offset && wait == o.wait;
  }
};
uint64_t PlaceInRing(const std::vector<uint64_t>& lengths, int buffers, uint64_t chunk,
                     uint64_t cursor, std::vector<RingPlace>* places);

// One block of a CopyQueue: host [host_offset, +length) to dev [dev_offset, +length).
struct QueuedBlock {
  uint64_t host_offset = 0;
  DeviceBuffer* dev = nullptr;
  uint64_t dev_offset = 0;
  uint64_t length = 0;
  uint64_t tag = 0;  // the caller's (e.g. the stream's sequence number)
};
enum class QueuePoll { kBlock, kWait, kEnd };

struct PathChoice {
  Path path = Path::kPageable;
  uint32_t register_flags = 0;
  std::vector<std::string> refusals;  // "registered-direct refused: cudaHostRegister(...) -> ..."
  std::string detail;                 // "16 lanes x 4 MiB", "4 pieces of 64 GiB", ...
  std::string Describe() const;       // "took staged (16 lanes x 4 MiB); registered-direct refused: ..."
};

// Engine-internal (copy_strategy.h): the one interface each path's copy strategy implements,
// and the staged path's shared state.
class CopyStrategy;
class SegmentPump;
struct Staging;

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
  // Either range outside its memory is refused (InvalidArgument) before anything moves; a copy
  // that fails returns with none of its DMAs still running.
  Result<CopyStats> Copy(CopyDirection dir, uint64_t host_offset, DeviceBuffer& dev,
                         uint64_t dev_offset, uint64_t length);
  // Host-to-device copies of a sequence of blocks with the segments flowing continuously: block
  // k+1 is filled into free pinned segments while block k's DMAs drain, so a stream of blocks
  // runs at the rate of one long copy instead of paying each copy's first fill and last DMA.
  // `next` is polled on the driving lane (it must not block: kWait when no block is ready yet,
  // kEnd when the sequence is over); `arrived` is called on the driving lane once a block's last
  // DMA finished (its bytes are in device memory), in order, and should not block either (hand
  // the check to another thread). An error from either callback, or a failed DMA, ends the queue
  // with that status. Only on the staged path in segment mode (CUDA); elsewhere it runs the
  // blocks one Copy after another (same callbacks). Not for concurrent calls on one engine.
  Status CopyQueue(const std::function<Result<QueuePoll>(QueuedBlock*)>& next,
                   const std::function<Status(const QueuedBlock&)>& arrived);
  // The last staged segment copy's phases (empty unless TransferOptions::staging_trace).
  const StagedTrace& last_trace() const;
  // SM copies given to the DMAs because their kernel had not started in time
  // (TransferOptions::staging_sm_start_us), since Open.
  uint64_t sm_copies_given_to_dmas() const;
  // The staged path's idle lanes stop spinning and sleep until the next copy (LanePool::Park):
  // for a program whose other work needs the CPUs now, a second engine's copy above all. The
  // next copy pays their wake-up. Nothing on the other paths. Any thread, between copies.
  void ParkLanes();
  // Times the staged path's lanes went to sleep since Open (LanePool::sleeps); 0 on other paths.
  uint64_t lane_sleeps() const;

 private:
  TransferEngine(Gpu& gpu, HostMemory& mem, Clock& clock, TransferOptions o);
  // Sets path p up (DirectCopy::Open, or OpenStagedPath for Path::kStaged), keeping its strategy;
  // records every refusal in choice_.
  Status TryPath(Path p);

  Gpu& gpu_;
  HostMemory& mem_;
  Clock& clock_;
  TransferOptions o_;
  PathChoice choice_;
  // The staged path's pinned ring, lane threads, trace and plans (staging.h); null on the other
  // paths.
  std::unique_ptr<Staging> staging_;
  // The chosen path's copy strategy (copy_strategy.h): Copy hands it every copy.
  std::unique_ptr<CopyStrategy> strategy_;
  // The staged path in segment mode: CopyQueue's pipeline (owned by strategy_); null elsewhere.
  SegmentPump* queue_ = nullptr;
};

}  // namespace resmem::transfer

#endif  // RESMEM_ENGINE_TRANSFER_TRANSFER_ENGINE_H_
