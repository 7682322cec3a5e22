// Throwaway probe: the lanes' fill (source -> 16 MiB ring, CLDEMOTEd) from a cold or warm source,
// by copy flavour: what 15 threads reach when the source is out of the caches.
#include <immintrin.h>
#include <sys/mman.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>
using Clock = std::chrono::steady_clock;
static uint8_t* Map(uint64_t n) {
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  madvise(p, n, MADV_NOHUGEPAGE);
  memset(p, 1, n);
  return static_cast<uint8_t*>(p);
}
template <int HINT>
static void Pf(const uint8_t* p, uint64_t n) {
  for (uint64_t a = 0; a < n; a += 64) _mm_prefetch(reinterpret_cast<const char*>(p + a), static_cast<_mm_hint>(HINT));
}
static void Demote(const uint8_t* p, uint64_t n) {
  for (uint64_t a = 0; a < n; a += 64) asm volatile(".byte 0x0f, 0x1c, 0x07" : : "D"(p + a) : "memory");
}
struct Variant { const char* name; int hint; uint64_t ahead; bool demote; bool movsb; uint64_t step = 0; };
static void CopyPiece(const Variant& v, uint8_t* d, const uint8_t* s, uint64_t n) {
  if (v.step) {  // copy and CLDEMOTE in steps of v.step bytes
    for (uint64_t at = 0; at < n; at += v.step) {
      uint64_t m = std::min(v.step, n - at);
      memcpy(d + at, s + at, m);
      Demote(d + at, m);
    }
    return;
  }
  if (v.ahead == 0) {
    if (v.movsb) { asm volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory"); }
    else memcpy(d, s, n);
    return;
  }
  for (uint64_t at = 0; at < n; at += 4096) {
    uint64_t step = std::min<uint64_t>(4096, n - at);
    if (at + v.ahead < n) {
      uint64_t m = std::min(step, n - at - v.ahead);
      if (v.hint == 0) Pf<_MM_HINT_T0>(s + at + v.ahead, m);
      else if (v.hint == 2) Pf<_MM_HINT_T2>(s + at + v.ahead, m);
      else Pf<_MM_HINT_NTA>(s + at + v.ahead, m);
    }
    memcpy(d + at, s + at, step);
  }
}
int main() {
  const uint64_t kSrc = 256ull << 20, kCopy = 64ull << 20, kRing = 16ull << 20, kPiece = 140ull << 10;
  const uint64_t kEvict = 1024ull << 20;
  uint8_t* src = Map(kSrc); uint8_t* ring = Map(kRing); uint8_t* other = Map(kEvict);
  const int lanes = std::min<int>(15, std::thread::hardware_concurrency() - 1);
  Variant vs[] = {{"memcpy", 0, 0, true, false}, {"memcpy, no demote", 0, 0, false, false},
                  {"demote per 4K", 0, 0, false, false, 4096}, {"demote per 16K", 0, 0, false, false, 16384},
                  {"demote per 32K", 0, 0, false, false, 32768}};
  for (int cold = 1; cold >= 0; --cold) {
    for (const Variant& v : vs) {
      std::vector<double> g;
      for (int t = 0; t < 7; ++t) {
        uint64_t base = (t % 3) * kCopy;  // a different 64 MiB of the source each trial
        if (cold) for (uint64_t a = 0; a < kEvict; a += 64) other[a] += 1;  // dirty 1 GiB
        else memcpy(ring, src + base, std::min(kRing, kCopy)), (void)0;
        if (!cold) for (uint64_t a = 0; a < kCopy; a += 64) (void)*(volatile uint8_t*)(src + base + a);
        std::atomic<uint64_t> next{0};
        std::atomic<int> ready{0};
        std::atomic<bool> go{false};
        std::vector<std::thread> th;
        for (int l = 0; l < lanes; ++l)
          th.emplace_back([&] {
            ready.fetch_add(1);
            while (!go.load(std::memory_order_acquire)) _mm_pause();
            for (uint64_t k; (k = next.fetch_add(1)) * kPiece < kCopy;) {
              uint64_t at = k * kPiece, n = std::min(kPiece, kCopy - at);
              uint8_t* d = ring + at % kRing;
              CopyPiece(v, d, src + base + at, n);
              if (v.demote) Demote(d, n);
            }
          });
        while (ready.load() < lanes) _mm_pause();
        auto t0 = Clock::now();
        go.store(true, std::memory_order_release);
        for (auto& x : th) x.join();
        g.push_back(kCopy / std::chrono::duration<double>(Clock::now() - t0).count() / 1e9);
      }
      std::sort(g.begin(), g.end());
      printf("%s source, %2d threads, %-18s %6.1f GB/s (min %.1f, max %.1f)\n", cold ? "cold" : "warm",
             lanes, v.name, g[g.size() / 2], g.front(), g.back());
    }
  }
  return 0;
}
