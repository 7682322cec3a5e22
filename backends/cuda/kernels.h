// Device-side helpers built by nvcc (kernels.cu, sm_90) and called from cuda_gpu.cc. Plain C++
// signatures: streams are passed as void* (a cudaStream_t). Each returns a cudaError_t as int.
#ifndef RESMEM_BACKENDS_CUDA_KERNELS_H_
#define RESMEM_BACKENDS_CUDA_KERNELS_H_

#include <cstdint>

namespace resmem::cuda {

// Counts the 64-bit words of dev[0, len) that differ from the block pattern (block_pattern.h)
// for (seq, fill_seed); the count lands in *dev_count (device memory, zeroed by the caller).
int LaunchCountPatternMismatches(const void* dev, uint64_t len, uint64_t seq, uint64_t fill_seed,
                                 unsigned long long* dev_count, void* stream);

// Copies len bytes from src to dst with a kernel: the zero-copy path, where one side is host
// memory the device reaches through a mapped (or pageable, with HMM) pointer.
int LaunchKernelCopy(void* dst, const void* src, uint64_t len, void* stream);

// The kernel of a copy/kernel pipeline (seed 001): sums the 64-bit words of src[0, len) into
// *dev_sum (device memory) and holds its SMs until `busy_ns` nanoseconds after it started
// (%globaltimer), so the kernel's length is set, not guessed from arithmetic.
int LaunchReadAndHold(const void* src, uint64_t len, uint64_t busy_ns,
                      unsigned long long* dev_sum, void* stream);

// A program's kernel that fills every SM: two blocks of 1,024 threads per SM, each holding its
// SM until busy_ns after it started. A block of another kernel is placed only as they end.
int LaunchHoldEverySm(uint64_t busy_ns, void* stream);

// A staged copy moved by the SMs instead of copy-engine DMAs (CudaGpu::LaunchPieceCopy). The
// copy is cut into pieces of `piece` bytes numbered base+1 .. base+n; piece p lives in ring slot
// p % slots. Host to device: the kernel waits for cpu_words[slot] to reach the piece's number
// (the CPU filled it), reads it from the ring, and sets gpu_words[slot] (consumed). Device to
// host: it waits for cpu_words[slot] to reach the number of the slot's previous piece (drained),
// writes the piece into the ring, and sets gpu_words[slot] (filled). Numbers compare cyclically.
// The last block sets done_word[2 * kWordStride] to the kernel's block count and then
// done_word[0] = base + n; done_word[kWordStride] == base tells the kernel the CPU abandoned the
// copy (every waiting block then stops). piece and length are multiples of 16.
// Before it touches anything the kernel decides, once, whether it may run the copy at all: its
// first block writes base to started_word, fences, reads intent_word, and gives the verdict
// (base: go; base + 1: the CPU meant to give this copy, or a later one, to the DMAs, so the
// kernel leaves) in verdict_word (host) and verdict[0] (device, for the other blocks). The CPU
// writes intent_word only when the kernel had not started in time, fences, and reads
// started_word; where it finds the kernel started after all it waits for the verdict
// (TransferOptions::staging_sm_start_us). So a kernel that starts late, behind a program's
// kernel, never writes into a buffer its copy no longer owns.
constexpr uint32_t kWordStride = 16;
struct PieceCopyArgs {
  uint8_t* dev = nullptr;   // the device side, at the copy's offset
  uint8_t* ring = nullptr;  // the device's view of the pinned ring (slots * piece bytes)
  uint64_t length = 0, piece = 0;
  uint32_t slots = 0, base = 0;
  bool h2d = true;
  volatile uint32_t* cpu_words = nullptr;  // device views of mapped host words
  volatile uint32_t* gpu_words = nullptr;
  volatile uint32_t* done_word = nullptr;  // [0] done, [kWordStride] abandoned, [2 kWordStride] blocks
  volatile uint32_t* started_word = nullptr;  // host: the kernel runs (base)
  volatile uint32_t* intent_word = nullptr;   // host: the CPU gives copies up to this base away
  volatile uint32_t* verdict_word = nullptr;  // host: base go, base + 1 left to the DMAs
  unsigned int* leader = nullptr;             // device: the base of the last kernel led
  unsigned int* verdict = nullptr;            // device: verdict_word for the other blocks
  unsigned int* blocks_done = nullptr;     // device memory, 0 between launches
  int blocks = 0;  // the kernel's blocks (CudaGpu::PieceRing::blocks: at most one per SM)
};
int LaunchPieceCopy(const PieceCopyArgs& args, void* stream);

}  // namespace resmem::cuda

#endif  // RESMEM_BACKENDS_CUDA_KERNELS_H_
