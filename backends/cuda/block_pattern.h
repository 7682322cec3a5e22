// The test pattern every resmem data check uses (bench, stream, calibrate), identical on the host
// and on the device. A block is a run of 64-bit words; word i of a block is
//   a stamp   when i % 512 == 0 (the first word of each 4 KiB page): the block's sequence number
//             mixed with the page index, so a stale, torn or misplaced page shows;
//   fill      otherwise: a SplitMix64 value of (fill_seed, i), fixed for a slot, so any flipped or
//             missing byte shows.
// A producer fills a slot once and then rewrites only the stamps per block (one word per page).
// That sees a stale page, not a stale part of one: a producer whose transfers are smaller than a
// page (a device's DMA in pieces) gives every block its own fill_seed, or a piece that never
// landed keeps the slot's earlier bytes, equal but for the stamps (ci/qemu/resmem_edu_guest.cc).
#ifndef RESMEM_BACKENDS_CUDA_BLOCK_PATTERN_H_
#define RESMEM_BACKENDS_CUDA_BLOCK_PATTERN_H_

#include <cstdint>

#ifdef __CUDACC__
#define RESMEM_HD __host__ __device__ __forceinline__
#else
#define RESMEM_HD inline
#endif

namespace resmem::pattern {

constexpr uint64_t kWordsPerPage = 512;  // 4 KiB of 8-byte words
constexpr uint64_t kStampMagic = 0x5245534d454d0000ull;  // "RESMEM\0\0"

RESMEM_HD uint64_t Mix(uint64_t z) {  // SplitMix64's finaliser (as backends/fault/rng.h)
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

RESMEM_HD uint64_t Word(uint64_t index, uint64_t seq, uint64_t fill_seed) {
  if (index % kWordsPerPage == 0)
    return kStampMagic ^ (seq * 0x9e3779b97f4a7c15ull) ^ (index / kWordsPerPage);
  return Mix(fill_seed ^ (index * 0xd1b54a32d192ed03ull));
}

// Host helpers (len in bytes, a multiple of 8).
inline void Fill(void* block, uint64_t len, uint64_t seq, uint64_t fill_seed) {
  uint64_t* w = static_cast<uint64_t*>(block);
  for (uint64_t i = 0; i < len / 8; ++i) w[i] = Word(i, seq, fill_seed);
}
inline void Stamp(void* block, uint64_t len, uint64_t seq) {
  uint64_t* w = static_cast<uint64_t*>(block);
  for (uint64_t i = 0; i < len / 8; i += kWordsPerPage) w[i] = Word(i, seq, 0);
}
inline uint64_t CountMismatches(const void* block, uint64_t len, uint64_t seq,
                                uint64_t fill_seed) {
  const uint64_t* w = static_cast<const uint64_t*>(block);
  uint64_t bad = 0;
  for (uint64_t i = 0; i < len / 8; ++i) bad += w[i] != Word(i, seq, fill_seed);
  return bad;
}

}  // namespace resmem::pattern

#endif  // RESMEM_BACKENDS_CUDA_BLOCK_PATTERN_H_
