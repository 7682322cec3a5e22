#include "engine/runner/patterns.h"

#include <algorithm>
#include <cstring>

namespace resmem::engine {
namespace {

// One 64-bit word per 8-byte slot: counter = the slot index xor a constant (never all zero, so
// a hole that reads zeros always mismatches); seeded = a SplitMix64 hash of (seed, slot).
uint64_t Word(const Pattern& p, uint64_t slot) {
  switch (p.kind) {
    case Pattern::Kind::kZero: return 0;
    case Pattern::Kind::kCounter: return slot ^ 0xa5a5a5a5a5a5a5a5ull;
    case Pattern::Kind::kSeeded: {
      uint64_t z = p.seed + (slot + 1) * 0x9e3779b97f4a7c15ull;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      return z ^ (z >> 31);
    }
  }
  return 0;
}

}  // namespace

void FillPattern(const Pattern& p, uint64_t offset, uint8_t* out, uint64_t len) {
  uint64_t i = 0;
  while (i < len) {
    const uint64_t abs = offset + i;
    const uint64_t slot = abs / 8;
    const uint64_t w = Word(p, slot);
    uint8_t bytes[8];
    std::memcpy(bytes, &w, 8);
    const uint64_t from = abs % 8;
    const uint64_t n = std::min<uint64_t>(8 - from, len - i);
    std::memcpy(out + i, bytes + from, n);
    i += n;
  }
}

}  // namespace resmem::engine
