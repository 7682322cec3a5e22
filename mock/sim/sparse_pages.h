// The simulator's sparse byte store: bytes kept in pages of kPageBytes, a page held only while it
// has a non-zero byte. Simulated process memory (SimAnonymousMemory, 4 KiB pages) and the GPU
// model's device and pinned buffers (mock/gpu/sim_gpu.cc, 64 KiB pages) keep their bytes in it, so
// a span reads as zeros, is written, is cleared and is asked "is anything here?" by one set of
// rules. (The machine's physical RAM, mock/machine/physical_memory.h, is another kind of store: a
// hash of pages with holes in the RAM map and a cache of the pages found last, for the card's
// register traffic.)
//
// Contracts:
//  - Read of bytes no page holds gives zeros; Write of zeros into a page not held stores nothing.
//  - Zero clears the span: a page it covers whole is dropped, a page it covers in part is cleared
//    there and kept (so the store holds no page that was cleared whole).
//  - NoneIn(offset, len) is true when no page holds a byte of the span: it reads as zeros without
//    a look at its bytes. A held page may still be all zero (written with zeros after a non-zero
//    byte, or cleared in part): NoneIn is "certainly zero", not "zero".
//  - Not thread-safe: the owner locks.
#ifndef RESMEM_MOCK_SIM_SPARSE_PAGES_H_
#define RESMEM_MOCK_SIM_SPARSE_PAGES_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>

#include "mock/sim/zero_bytes.h"

namespace resmem::sim {

template <uint64_t kPageBytes>
class SparsePages {
 public:
  void Read(uint64_t offset, uint8_t* out, uint64_t len) const {
    ForEachPiece(offset, len, [&](uint64_t page, uint64_t in_page, uint64_t n, uint64_t done) {
      auto it = pages_.find(page);
      if (it == pages_.end()) std::memset(out + done, 0, n);
      else std::memcpy(out + done, it->second->data() + in_page, n);
    });
  }

  void Write(uint64_t offset, const uint8_t* in, uint64_t len) {
    ForEachPiece(offset, len, [&](uint64_t page, uint64_t in_page, uint64_t n, uint64_t done) {
      auto it = pages_.find(page);
      if (it == pages_.end()) {
        if (AllZero(in + done, n)) return;
        it = pages_.emplace(page, std::make_unique<Page>()).first;
        it->second->fill(0);
      }
      std::memcpy(it->second->data() + in_page, in + done, n);
    });
  }

  void Zero(uint64_t offset, uint64_t len) {
    if (len == 0) return;
    const uint64_t end = offset + len;
    auto it = pages_.lower_bound(offset / kPageBytes);
    while (it != pages_.end() && it->first * kPageBytes < end) {
      const uint64_t start = it->first * kPageBytes;
      const uint64_t from = std::max(offset, start), to = std::min(end, start + kPageBytes);
      if (from == start && to == start + kPageBytes) {
        it = pages_.erase(it);
      } else {
        std::memset(it->second->data() + (from - start), 0, to - from);
        ++it;
      }
    }
  }

  bool NoneIn(uint64_t offset, uint64_t len) const {
    if (len == 0) return true;
    auto it = pages_.lower_bound(offset / kPageBytes);
    return it == pages_.end() || it->first > (offset + len - 1) / kPageBytes;
  }
  uint64_t page_count() const { return pages_.size(); }
  static constexpr uint64_t page_bytes() { return kPageBytes; }

 private:
  using Page = std::array<uint8_t, kPageBytes>;

  // Calls f(page, offset in page, bytes, bytes done before) for each page's piece of the span.
  template <typename F>
  static void ForEachPiece(uint64_t offset, uint64_t len, F&& f) {
    for (uint64_t done = 0; done < len;) {
      const uint64_t pos = offset + done, in_page = pos % kPageBytes;
      const uint64_t n = std::min(len - done, kPageBytes - in_page);
      f(pos / kPageBytes, in_page, n, done);
      done += n;
    }
  }

  std::map<uint64_t, std::unique_ptr<Page>> pages_;  // page number -> its bytes
};

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_SIM_SPARSE_PAGES_H_
