// The checks resmem_seq's ops share (resmem_seq_run.h): the run's failure, an outcome against the
// errnos that apply, and what a mapping shows (pagemap, the device's bytes through the mapping
// and through the file).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstring>

#include "backends/fault/rng.h"
#include "kmod/tests/resmem_seq_run.h"
#include "kmod/tests/resmem_seq_util.h"

namespace resmem::seq {
namespace {

std::string ErrStr(long rc, int err) { return rc >= 0 ? Fmt("%ld", rc) : Fmt("-1 %s", strerrorname_np(err) ? strerrorname_np(err) : "E?"); }

// Reads /proc/self/pagemap for a slot: every present page must carry the PFN of its own device
// byte, inside the configured ranges. `must_present` lists pages (indexes) that were touched.
bool CheckPagemap(Run* r, long idx, const Op* op, const Slot& s, const std::vector<uint64_t>& must_present) {
  // Per thread (closed when the thread ends: threads live one epoch) and per process: a forked
  // child must read its own pagemap, not the parent's.
  struct PagemapFd {
    int fd = -1;
    pid_t pid = 0;
    ~PagemapFd() {
      if (fd >= 0) close(fd);
    }
  };
  static thread_local PagemapFd pmf;
  if (pmf.fd < 0 || pmf.pid != getpid()) {
    if (pmf.fd >= 0) close(pmf.fd);
    pmf.fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    pmf.pid = getpid();
  }
  int pm = pmf.fd;
  if (pm < 0) {
    Failure(r, idx, op, Fmt("cannot open /proc/self/pagemap: %s", strerror(errno)));
    return false;
  }
  uint64_t n = s.len / kPage;
  std::vector<uint64_t> e(n);
  uint64_t first = reinterpret_cast<uint64_t>(s.addr) / kPage;
  ssize_t got = pread(pm, e.data(), n * 8, static_cast<off_t>(first * 8));
  if (got != static_cast<ssize_t>(n * 8)) {
    Failure(r, idx, op, Fmt("pagemap read of %" PRIu64 " entries at %p returned %zd", n, s.addr, got));
    return false;
  }
  const Device& d = r->w->devices[s.dev];
  // mm/pagewalk.c walk_page_test: the page walk behind pagemap skips VM_PFNMAP VMAs (a hole), so
  // a pfnmap device shows no PFN at all; its pages are checked by content instead (TouchSlot).
  bool pfnmap = d.info.mode == RESMEM_MODE_PFNMAP;
  uint64_t present = 0;
  for (uint64_t i = 0; i < n; ++i) {
    if (!(e[i] >> 63)) continue;  // bit 63: present
    ++present;
    uint64_t pfn = e[i] & ((1ull << 55) - 1);
    uint64_t want = (d.info.phys_addr + s.off) / kPage + i;
    if (pfn == 0) {
      Failure(r, idx, op, "pagemap shows PFN 0 for a present page: not running as root (CAP_SYS_ADMIN)?");
      return false;
    }
    if (!InsideRanges(*r->w, pfn * kPage)) {
      Failure(r, idx, op, Fmt("%s mapping at %p page %" PRIu64 ": PFN 0x%" PRIx64 " (phys 0x%" PRIx64
                              ") lies OUTSIDE the configured ranges: the module exposes other memory",
                              d.path.c_str(), s.addr, i, pfn, pfn * kPage));
      return false;
    }
    if (pfn != want) {
      Failure(r, idx, op, Fmt("%s mapping at %p (device offset 0x%" PRIx64 ") page %" PRIu64
                              ": PFN 0x%" PRIx64 ", expected 0x%" PRIx64, d.path.c_str(), s.addr,
                              s.off, i, pfn, want));
      return false;
    }
  }
  for (uint64_t i : must_present)
    if (!pfnmap && i < n && !(e[i] >> 63)) {
      Failure(r, idx, op, Fmt("%s mapping at %p page %" PRIu64 " was touched but pagemap shows it absent",
                              d.path.c_str(), s.addr, i));
      return false;
    }
  (pfnmap ? r->c->pfnmap_pages_walked : r->c->pfn_checked) += n;
  r->c->pages_present += present;
  return true;
}

}  // namespace

void Failure(Run* r, long index, const Op* op, const std::string& why) {
  if (r->fail_guard.exchange(1) == 0) {
    r->failure = Fmt("op #%ld (%s, thread %d): ", index, op ? KindName(op->kind) : "-",
                     op ? op->thread : -1) + why;
    r->failed = true;
  }
  r->stop = true;
}

// Checks one outcome against the set that applies: success only when `allowed` is empty.
bool Expect(Run* r, long idx, const Op& op, const char* what, long rc, int err,
            const std::set<int>& allowed) {
  if (rc >= 0 && allowed.empty()) {
    r->c->ok++;
    return true;
  }
  if (rc < 0 && allowed.count(err)) {
    r->c->expected_errors++;
    return true;
  }
  std::string want;
  if (allowed.empty()) want = "success";
  for (int e : allowed) want += (want.empty() ? "" : "|") + std::string(strerrorname_np(e) ? strerrorname_np(e) : "E?");
  Failure(r, idx, &op, Fmt("%s returned %s, expected %s", what, ErrStr(rc, err).c_str(), want.c_str()));
  return false;
}

// The thread's own stripe of a device: the only bytes it writes (others' data is theirs).
void Stripe(const ThreadState& t, uint64_t size, uint64_t* lo, uint64_t* hi) {
  uint64_t pages = size / kPage;
  *lo = pages * t.id / t.nthreads * kPage;
  *hi = pages * (t.id + 1) / t.nthreads * kPage;
}

int FindFd(const ThreadState& t, int dev, bool want_read, bool want_write) {
  for (size_t i = 0; i < t.fds.size(); ++i) {
    const Fd& f = t.fds[i];
    if (f.dev == dev && (!want_read || Readable(f)) && (!want_write || Writable(f))) return static_cast<int>(i);
  }
  return -1;
}

// Faults pages of a slot in (reads), writes a pattern where the slot is writable and inside the
// thread's stripe and reads it back with pread, then checks pagemap (in a forked child too).
bool TouchSlot(Run* r, ThreadState& t, long idx, const Op* op, const Slot& s, uint64_t salt) {
  std::vector<uint64_t> touched;
  uint64_t n = s.len / kPage;
  if (s.prot & (PROT_READ | PROT_WRITE | PROT_EXEC)) {
    DeterministicRng rng(salt);
    std::vector<uint64_t> pick = {0, n - 1, rng.Below(n), rng.Below(n), rng.Below(n)};
    const Device& d = r->w->devices[s.dev];
    uint64_t lo, hi;
    Stripe(t, d.info.size, &lo, &hi);
    int fr = FindFd(t, s.dev, true, false);
    for (uint64_t i : pick) {
      volatile uint8_t* p = s.addr + i * kPage;
      (void)p[rng.Below(kPage)];
      touched.push_back(i);
      uint64_t devoff = s.off + i * kPage;
      if (fr >= 0) {
        // The page must show the device's bytes at its offset (the PFN check that pagemap cannot
        // make for pfnmap). Another thread may be writing its stripe: three tries.
        uint64_t at = rng.Below(kPage / 8) * 8, via_map = 0, via_file = 0;
        bool same = false;
        for (int tries = 0; tries < 3 && !same; ++tries) {
          via_map = *reinterpret_cast<volatile uint64_t*>(s.addr + i * kPage + at);
          same = pread(t.fds[fr].fd, &via_file, 8, static_cast<off_t>(devoff + at)) == 8 && via_file == via_map;
        }
        if (!same) {
          Failure(r, idx, op, Fmt("%s mapping at %p page %" PRIu64 " shows 0x%" PRIx64 " at device offset 0x%" PRIx64
                                  ", the device holds 0x%" PRIx64 ": the page maps other memory",
                                  d.path.c_str(), s.addr, i, via_map, devoff + at, via_file));
          return false;
        }
        r->c->content_checked++;
      }
      if ((s.prot & PROT_WRITE) && devoff >= lo && devoff + kPage <= hi) {
        // Write through the mapping, read back through the file (and the other way round).
        int fi = FindFd(t, s.dev, true, false);
        uint64_t pattern = rng.NextU64() | 1;
        uint64_t at = (rng.Below(kPage / 8)) * 8;
        *reinterpret_cast<volatile uint64_t*>(s.addr + i * kPage + at) = pattern;
        if (fi >= 0) {
          uint64_t back = 0;
          ssize_t got = pread(t.fds[fi].fd, &back, 8, static_cast<off_t>(devoff + at));
          if (got != 8 || back != pattern) {
            Failure(r, idx, op, Fmt("%s: wrote 0x%" PRIx64 " through the mapping at device offset 0x%" PRIx64
                                    ", pread returned %zd / 0x%" PRIx64, d.path.c_str(), pattern, devoff + at, got, back));
            return false;
          }
          r->c->bytes_verified += 8;
        }
        int fw = FindFd(t, s.dev, false, true);
        if (fw >= 0 && !(t.fds[fw].flags & O_APPEND)) {
          uint64_t v = rng.NextU64();
          ssize_t put = pwrite(t.fds[fw].fd, &v, 8, static_cast<off_t>(devoff + at));
          uint64_t seen = *reinterpret_cast<volatile uint64_t*>(s.addr + i * kPage + at);
          if (put != 8 || seen != v) {
            Failure(r, idx, op, Fmt("%s: pwrite of 0x%" PRIx64 " at device offset 0x%" PRIx64
                                    " returned %zd, the mapping shows 0x%" PRIx64, d.path.c_str(), v, devoff + at, put, seen));
            return false;
          }
          r->c->bytes_verified += 8;
        }
      }
    }
  }
  return CheckPagemap(r, idx, op, s, touched);
}

// Returns a slot's address range to the thread (the arena is restored over arena slots).
bool ReleaseRange(uint8_t* addr, uint64_t len, bool in_arena) {
  if (in_arena)
    return mmap(addr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) == addr;
  return munmap(addr, len) == 0;
}

// A place in the thread's arena not covered by one of its slots.
uint8_t* ArenaHole(const ThreadState& t, uint64_t len, uint64_t salt) {
  if (len > kArenaLen) return nullptr;
  uint64_t slots = (kArenaLen - len) / kPage + 1;
  for (int attempt = 0; attempt < 8; ++attempt) {
    uint64_t start = ((salt + attempt * 0x9e3779b97f4a7c15ull) % slots) * kPage;
    // 2 MiB aligned when it fits, so that huge mappings get their chance.
    if ((salt >> 7) & 1) start &= ~((2ull << 20) - 1);
    uint8_t* a = t.arena + start;
    bool free = true;
    for (const auto& s : t.slots)
      if (s.in_arena && a < s.addr + s.len && s.addr < a + len) free = false;
    if (free) return a;
  }
  return nullptr;
}

// A user pointer of the kind p selects: valid scratch, NULL, kernel, unmapped, the tail of the
// guard page (`valid` = bytes that can be copied), or a writable device mapping in the stripe.
uint8_t* PickBuffer(ThreadState& t, Run* r, uint64_t p, uint64_t len, uint64_t* valid, bool for_device_write) {
  switch (p % 10) {
    case 6: *valid = 0; return nullptr;
    case 7: *valid = 0; return reinterpret_cast<uint8_t*>(0xffff888000000000ull + (p >> 20) % (1ull << 30));
    case 8: *valid = 0; return t.guard + kPage + (p >> 8) % kPage;
    case 9: {
      uint64_t tail = 1 + (p >> 8) % 64;
      *valid = tail;
      return t.guard + kPage - tail;
    }
    case 5:
      if (!for_device_write) {
        // A device mapping as the user buffer of a read(): the read writes the device, so only a
        // writable mapping that lies entirely in the thread's stripe qualifies.
        for (const auto& s : t.slots) {
          uint64_t lo, hi;
          Stripe(t, r->w->devices[s.dev].info.size, &lo, &hi);
          if ((s.prot & PROT_WRITE) && s.off >= lo && s.off + s.len <= hi && s.len >= len) {
            *valid = len;
            return s.addr;
          }
        }
      } else {
        for (const auto& s : t.slots)
          if ((s.prot & PROT_READ) && s.len >= len) {
            *valid = len;
            return s.addr;
          }
      }
      break;
    default: break;
  }
  *valid = len;
  return t.scratch.data();
}

}  // namespace resmem::seq
