// Whether a span of bytes is all zero: the simulator's sparse byte store (sparse_pages.h) keeps no
// page for bytes that read as zero, so every write into an absent page asks this first (and
// sim_world.cc's copies ask it of what they move). A byte loop made it the simulator's hot spot: the doctor's
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

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_SIM_ZERO_BYTES_H_
