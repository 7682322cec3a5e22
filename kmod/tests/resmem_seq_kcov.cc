// KCOV in resmem_seq (resmem_seq_kcov.h).
#include "kmod/tests/resmem_seq_kcov.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "kmod/tests/resmem_seq_executor.h"
#include "kmod/tests/resmem_seq_util.h"
#include "kmod/tests/tap_diag.h"

#define RESMEM_KCOV_INIT_TRACE _IOR('c', 1, unsigned long)
#define RESMEM_KCOV_ENABLE _IO('c', 100)
#define RESMEM_KCOV_DISABLE _IO('c', 101)

namespace resmem::seq::kcov {
namespace {

constexpr unsigned long kKcovWords = 1ul << 16;  // per thread, per op at most
constexpr uint64_t kKcovSpan = 8ull << 20;       // module core bytes the bitmap covers

struct Kcov {
  bool on = false;
  uint64_t kaslr = 0;         // added back to each PC
  uint8_t* bitmap = nullptr;  // kKcovSpan bits, MAP_SHARED
  std::atomic<uint64_t> base{0}, size{0};  // the module's core in this epoch; 0: not loaded
};
Kcov g_kcov;

// The kernel's KASLR offset: _text in /proc/kallsyms less its link address (x86-64
// __START_KERNEL = __START_KERNEL_map + CONFIG_PHYSICAL_START, 0xffffffff81000000 with the default
// 16 MiB start; the lane's kernels keep it). 0 when kallsyms hides addresses.
uint64_t KaslrOffset() {
  std::ifstream f("/proc/kallsyms");
  std::string addr, type, name;
  while (f >> addr >> type >> name)
    if (name == "_text") {
      uint64_t a = std::strtoull(addr.c_str(), nullptr, 16);
      return a ? a - 0xffffffff81000000ull : 0;
    }
  return 0;
}

}  // namespace

bool Start() {
  if (access("/sys/kernel/debug/kcov", R_OK | W_OK) == 0) {
    void* bm = mmap(nullptr, kKcovSpan / 8, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (bm != MAP_FAILED) {
      g_kcov.bitmap = static_cast<uint8_t*>(bm);
      g_kcov.kaslr = KaslrOffset();
      g_kcov.on = true;
    }
  }
  return g_kcov.on;
}

bool On() { return g_kcov.on; }

void FindModule(const std::string& name) {
  std::ifstream f("/proc/modules");
  std::string line;
  uint64_t base = 0, size = 0;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string n, sz, refs, deps, state, addr;
    if (in >> n >> sz >> refs >> deps >> state >> addr && n == name) {
      base = std::strtoull(addr.c_str(), nullptr, 16);
      size = std::strtoull(sz.c_str(), nullptr, 10);
    }
  }
  g_kcov.base = base;
  g_kcov.size = size;
}

void Report(const Counters& c, const std::string& module_name, uint64_t sites_total) {
  if (!g_kcov.on) return;
  uint64_t sites = 0;
  for (uint64_t i = 0; i < kKcovSpan / 8; ++i) sites += __builtin_popcount(g_kcov.bitmap[i]);
  const std::string of =
      sites_total ? Fmt(" of its %" PRIu64 " = %.1f%%", sites_total, 100.0 * sites / sites_total) : "";
  guest::Diag("kcov: the workers' ops reached %" PRIu64 " distinct instrumented sites of %s%s (%" PRIu64
              " PCs in the module, %" PRIu64 " elsewhere, %" PRIu64 " buffer overflows; KASLR offset 0x%" PRIx64 ")",
              sites, module_name.c_str(), of.c_str(), c.kcov_pcs.load(), c.kcov_outside.load(),
              c.kcov_overflows.load(), g_kcov.kaslr);
}

Thread::Thread() {
  if (!g_kcov.on) return;
  fd_ = open("/sys/kernel/debug/kcov", O_RDWR | O_CLOEXEC);
  if (fd_ < 0) return;
  if (ioctl(fd_, RESMEM_KCOV_INIT_TRACE, kKcovWords) == 0) {
    void* m = mmap(nullptr, kKcovWords * sizeof(unsigned long), PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (m != MAP_FAILED) cover_ = static_cast<unsigned long*>(m);
  }
  if (!cover_ || ioctl(fd_, RESMEM_KCOV_ENABLE, 0 /* KCOV_TRACE_PC */) != 0) Close();
  else __atomic_store_n(&cover_[0], 0, __ATOMIC_RELAXED);
}

Thread::~Thread() { Close(); }

void Thread::Fold(Counters* c) {
  if (!cover_) return;
  unsigned long n = __atomic_load_n(&cover_[0], __ATOMIC_RELAXED);
  if (n >= kKcovWords - 1) c->kcov_overflows++, n = kKcovWords - 1;
  const uint64_t base = g_kcov.base, size = std::min<uint64_t>(g_kcov.size, kKcovSpan);
  uint64_t inside = 0;  // counted here and added once: the shared counters are atomics
  for (unsigned long i = 1; i <= n; ++i) {
    const uint64_t pc = cover_[i] + g_kcov.kaslr;
    if (!base || pc < base || pc - base >= size) continue;
    const uint64_t off = pc - base;
    __atomic_fetch_or(&g_kcov.bitmap[off / 8], static_cast<uint8_t>(1u << (off % 8)), __ATOMIC_RELAXED);
    ++inside;
  }
  c->kcov_pcs += inside;
  c->kcov_outside += n - inside;
  __atomic_store_n(&cover_[0], 0, __ATOMIC_RELAXED);
}

void Thread::Close() {
  if (cover_) {
    ioctl(fd_, RESMEM_KCOV_DISABLE, 0);
    munmap(cover_, kKcovWords * sizeof(unsigned long));
    cover_ = nullptr;
  }
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

}  // namespace resmem::seq::kcov
