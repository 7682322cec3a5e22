// Device code for the CUDA backend: the pattern check and the zero-copy kernel copy.
#include <cuda_runtime.h>

#include "backends/cuda/block_pattern.h"
#include "backends/cuda/kernels.h"

namespace resmem::cuda {
namespace {

__global__ void CountMismatchesKernel(const uint64_t* w, uint64_t words, uint64_t seq,
                                      uint64_t fill_seed, unsigned long long* count) {
  unsigned long long bad = 0;
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < words;
       i += (uint64_t)gridDim.x * blockDim.x)
    bad += w[i] != pattern::Word(i, seq, fill_seed);
  if (bad) atomicAdd(count, bad);
}

__global__ void CopyKernel(uint4* dst, const uint4* src, uint64_t n16, unsigned char* dst_tail,
                           const unsigned char* src_tail, uint64_t tail) {
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n16;
       i += (uint64_t)gridDim.x * blockDim.x)
    dst[i] = src[i];
  if (blockIdx.x == 0 && threadIdx.x < tail) dst_tail[threadIdx.x] = src_tail[threadIdx.x];
}

__device__ uint64_t GlobalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// One block per SM (resident together): each reads its share, then waits out busy_ns from its
// own start.
__global__ void ReadAndHoldKernel(const uint64_t* w, uint64_t words, uint64_t busy_ns,
                                  unsigned long long* sum) {
  const uint64_t start = GlobalTimerNs();
  unsigned long long s = 0;
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < words;
       i += (uint64_t)gridDim.x * blockDim.x)
    s += w[i];
  if (s) atomicAdd(sum, s);
  while (GlobalTimerNs() - start < busy_ns) {
  }
}

// Two blocks of 1,024 threads per SM (every thread an SM can hold), each waiting out busy_ns
// from its own start: no other block is placed until they end.
__global__ void __launch_bounds__(1024) HoldKernel(uint64_t busy_ns) {
  const uint64_t start = GlobalTimerNs();
  while (GlobalTimerNs() - start < busy_ns) {
  }
}

// Staged copies moved by the SMs (LaunchPieceCopy): pieces numbered base+1.., piece p in ring
// slot p % slots. Each block takes pieces blockIdx.x, +gridDim.x, ...; thread 0 waits for the
// piece's hand-over word, the block copies it, and thread 0 writes the kernel's word for the slot.
// The hand-over word is read with a system-scope acquire load: the piece's bytes, which the CPU
// wrote before the word, are read after it without a full system fence per piece. H100 (docs/hil/
// 2026-11-24-h100-staged7): one block of 512 threads per SM, 32 KiB pieces in one round of four
// 16-byte loads per thread, polls 1 us apart: 4 MiB at 87% of a pinned cudaMemcpy (staged_probe,
// run 8). The kernel before (two blocks per SM, and per poll a volatile load, a second word read
// and a system fence) gave 38-39% in bench (docs/hil/2026-11-24-h100-staged4, run 7).
__device__ __forceinline__ uint32_t LoadWord(const volatile uint32_t* w) {
  return __ldcv(const_cast<const uint32_t*>(w));
}
__device__ __forceinline__ uint32_t LoadAcquire(const volatile uint32_t* w) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(w) : "memory");
  return v;
}
__device__ __forceinline__ bool Reached(uint32_t word, uint32_t value) {
  return static_cast<int32_t>(word - value) >= 0;
}
constexpr unsigned kPieceThreads = 512;               // the threads that copy
constexpr unsigned kBlockThreads = kPieceThreads + 32;  // and one warp that decides the start
constexpr int kPieceLoads = 4;  // 16-byte loads in flight per thread: 32 KiB per block round
constexpr unsigned kPollNs = 1000;
constexpr unsigned kPollsPerAbandonCheck = 16;
constexpr unsigned kVerdictPollNs = 100;

// The copying threads' barrier (named barrier 1): the deciding warp keeps out of it.
__device__ __forceinline__ void SyncCopiers() {
  asm volatile("bar.sync 1, %0;" ::"n"(kPieceThreads) : "memory");
}

__global__ void __launch_bounds__(kBlockThreads) PieceCopyKernel(PieceCopyArgs a) {
  const uint64_t pieces = (a.length + a.piece - 1) / a.piece;
  __shared__ int abort_seen;
  // The start (TransferOptions::staging_sm_start_us), decided by the block's last warp while
  // the others wait for their first piece and load it: nothing is stored before the verdict.
  // The first block to run leads: it writes the started word, fences, reads the CPU's intent
  // word, and gives the verdict for the whole kernel: go, unless the CPU meant to give this copy
  // (or a later one) to the DMAs. The CPU writes its intent, fences, then reads the started
  // word, so at least one side sees the other (Dekker); where both did, the CPU waits for the
  // verdict. The other blocks read the verdict from device memory. A kernel the CPU gave up on
  // stores nothing: no piece word, no ring byte, no device byte. (Every block waiting at its
  // start for a word the CPU wrote after the launch returned cost 1 MiB copies 20 points of
  // pinned: docs/hil/2026-11-25-h100-staged12, runs 6-7.)
  __shared__ volatile int go;  // -1 not yet decided, 0 leave, 1 go
  if (threadIdx.x == kPieceThreads) go = -1;
  __syncthreads();
  if (threadIdx.x >= kPieceThreads) {
    if (threadIdx.x == kPieceThreads) {
      uint32_t v;
      if (atomicExch(a.leader, a.base) != a.base) {
        *a.started_word = a.base;
        __threadfence_system();
        v = Reached(LoadAcquire(a.intent_word), a.base) ? a.base + 1 : a.base;
        *a.verdict_word = v;
        atomicExch(a.verdict, v);
      } else {
        while (!Reached(v = atomicAdd(a.verdict, 0u), a.base)) __nanosleep(kVerdictPollNs);
      }
      go = v == a.base ? 1 : 0;
    }
    __syncwarp();
    if (go != 1) return;
  } else {
    bool decided = false;
    for (uint64_t p = blockIdx.x; p < pieces; p += gridDim.x) {
      const uint32_t slot = static_cast<uint32_t>(p % a.slots);
      const uint32_t t = a.base + static_cast<uint32_t>(p) + 1;
      if (threadIdx.x == 0) {
        // Host to device: the CPU filled the slot with piece p. Device to host: the CPU drained
        // the slot's previous piece (p - slots), so it may be overwritten.
        const bool must_wait = a.h2d || p >= a.slots;
        const uint32_t want = a.h2d ? t : t - a.slots;
        abort_seen = 0;
        for (unsigned polls = 1;
             must_wait && !Reached(LoadAcquire(a.cpu_words + slot * kWordStride), want); ++polls) {
          // The CPU gave up on this copy: after an error (the abandoned word), or it went by the
          // DMAs (the verdict: its lanes stopped, so this piece may never come).
          if (polls % kPollsPerAbandonCheck == 0 &&
              (go == 0 || LoadWord(a.done_word + kWordStride) == a.base)) {
            abort_seen = 1;
            break;
          }
          __nanosleep(kPollNs);
        }
      }
      SyncCopiers();
      if (abort_seen) break;
      const uint64_t at = p * a.piece;
      const uint64_t n = a.length - at < a.piece ? a.length - at : a.piece;
      const uint64_t n16 = n / 16;
      uint4* ring = reinterpret_cast<uint4*>(a.ring + static_cast<uint64_t>(slot) * a.piece);
      uint4* dev = reinterpret_cast<uint4*>(a.dev + at);
      // All loads of a round in flight before their stores (the host side's latency is ~1-2 us).
      // Rounds are the same for every thread, so each meets the verdict before its first store.
      for (uint64_t r0 = 0; r0 < n16; r0 += kPieceLoads * static_cast<uint64_t>(kPieceThreads)) {
        uint4 v[kPieceLoads];
#pragma unroll
        for (int k = 0; k < kPieceLoads; ++k) {
          const uint64_t i = r0 + threadIdx.x + k * static_cast<uint64_t>(kPieceThreads);
          // Host to device: cache-volatile loads, the slot held another piece before.
          if (i < n16) v[k] = a.h2d ? __ldcv(ring + i) : dev[i];
        }
        if (!decided) {
          int g;
          while ((g = go) < 0) {
          }
          if (g == 0) return;  // every copying thread sees the same verdict and leaves
          decided = true;
        }
#pragma unroll
        for (int k = 0; k < kPieceLoads; ++k) {
          const uint64_t i = r0 + threadIdx.x + k * static_cast<uint64_t>(kPieceThreads);
          if (i < n16) {
            if (a.h2d) dev[i] = v[k];
            else __stcs(ring + i, v[k]);
          }
        }
      }
      if (!a.h2d) __threadfence_system();  // this thread's stores reach the host before the word
      SyncCopiers();
      if (threadIdx.x == 0) {
        if (!a.h2d) __threadfence_system();
        *(a.gpu_words + slot * kWordStride) = t;  // consumed (host to device) or filled (device to host)
      }
    }
    // A block that stopped before its first store (an abandoned copy's error path) still waits
    // for the verdict, so the deciding warp and it leave or count together.
    if (!decided) {
      int g;
      while ((g = go) < 0) {
      }
      if (g == 0) return;
    }
  }
  // The last block to finish says the copy is done, after every block's device writes.
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(a.blocks_done, 1u) == gridDim.x - 1) {
      *a.blocks_done = 0;
      a.done_word[2 * kWordStride] = gridDim.x;
      __threadfence_system();
      *a.done_word = a.base + static_cast<uint32_t>(pieces);
    }
  }
}

unsigned Blocks(uint64_t items) {
  uint64_t b = (items + 255) / 256;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 1056 ? 1056 : b));  // 8 per SM on 132 SMs
}

}  // namespace

int LaunchCountPatternMismatches(const void* dev, uint64_t len, uint64_t seq, uint64_t fill_seed,
                                 unsigned long long* dev_count, void* stream) {
  uint64_t words = len / 8;
  CountMismatchesKernel<<<Blocks(words), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const uint64_t*>(dev), words, seq, fill_seed, dev_count);
  return static_cast<int>(cudaGetLastError());
}

int LaunchPieceCopy(const PieceCopyArgs& args, void* stream) {
  if (args.piece == 0 || args.piece % 16 || args.length % 16 || args.slots == 0 || args.blocks <= 0)
    return static_cast<int>(cudaErrorInvalidValue);
  const uint64_t pieces = (args.length + args.piece - 1) / args.piece;
  // At most one block per SM (the caller's limit; on an idle device every block is then
  // resident, so a waiting block never keeps a later one from running), never more blocks than
  // pieces.
  uint64_t grid = static_cast<uint64_t>(args.blocks);
  if (grid > pieces) grid = pieces;
  if (grid < 1) grid = 1;
  PieceCopyKernel<<<static_cast<unsigned>(grid), kBlockThreads, 0, static_cast<cudaStream_t>(stream)>>>(args);
  return static_cast<int>(cudaGetLastError());
}

int LaunchReadAndHold(const void* src, uint64_t len, uint64_t busy_ns,
                      unsigned long long* dev_sum, void* stream) {
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  ReadAndHoldKernel<<<sms > 0 ? sms : 1, 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const uint64_t*>(src), len / 8, busy_ns, dev_sum);
  return static_cast<int>(cudaGetLastError());
}

int LaunchHoldEverySm(uint64_t busy_ns, void* stream) {
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  HoldKernel<<<2 * (sms > 0 ? sms : 1), 1024, 0, static_cast<cudaStream_t>(stream)>>>(busy_ns);
  return static_cast<int>(cudaGetLastError());
}

int LaunchKernelCopy(void* dst, const void* src, uint64_t len, void* stream) {
  // Vector loads need 16-byte alignment of both sides; otherwise copy bytes through the tail path
  // in pieces of at most 256 bytes (slow, but correct).
  bool aligned = (reinterpret_cast<uintptr_t>(dst) % 16 == 0) &&
                 (reinterpret_cast<uintptr_t>(src) % 16 == 0);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (aligned) {
    uint64_t n16 = len / 16, tail = len % 16;
    CopyKernel<<<Blocks(n16), 256, 0, s>>>(
        static_cast<uint4*>(dst), static_cast<const uint4*>(src), n16,
        static_cast<unsigned char*>(dst) + n16 * 16,
        static_cast<const unsigned char*>(src) + n16 * 16, tail);
  } else {
    for (uint64_t off = 0; off < len; off += 256) {
      uint64_t piece = len - off < 256 ? len - off : 256;
      CopyKernel<<<1, 256, 0, s>>>(nullptr, nullptr, 0, static_cast<unsigned char*>(dst) + off,
                                   static_cast<const unsigned char*>(src) + off, piece);
    }
  }
  return static_cast<int>(cudaGetLastError());
}

}  // namespace resmem::cuda
