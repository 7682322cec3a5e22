// Whether a span of bytes is all zero: the sparse byte stores of the simulator (sim_memory.cc,
// sim_world.cc, mock/gpu/sim_gpu.cc) keep no page for bytes that read as zero, so every write
// into an absent page asks this first. A byte loop made it the simulator's hot spot: the doctor's
// bandwidth measurement moves 62 copies of 256 MiB of zeros (scenarios/bandwidth, 2.9 s of its
// 3.3 s per file before, 2026-11-29).
#ifndef RESMEM_MOCK_SIM_ZERO_BYTES_H_
#define RESMEM_MOCK_SIM_ZERO_BYTES_H_

#include <cstdint>
#include <cstring>

namespace resmem::sim {

// True when the `len` bytes at `p` are all zero (and for len 0). p[0] is zero and every byte
// equals its successor: libc's vectorised memcmp does the scan, stopping at the first difference.
inline bool AllZero(const uint8_t* p, uint64_t len) {
  return len == 0 || (p[0] == 0 && std::memcmp(p, p + 1, len - 1) == 0);
}

// True when a sparse store's `pages` (an ordered map from page number, pages of `page_bytes`)
// holds no page of [offset, offset+len): those bytes read as zero without a look at them.
template <typename PageMap>
bool NoPageIn(const PageMap& pages, uint64_t page_bytes, uint64_t offset, uint64_t len) {
  if (len == 0) return true;
  auto it = pages.lower_bound(offset / page_bytes);
  return it == pages.end() || it->first > (offset + len - 1) / page_bytes;
}

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_SIM_ZERO_BYTES_H_
