// resmem_seq's ops on the module's mappings and their oracles (resmem_seq_run.h): mmap (random
// offsets, lengths, protections, flags incl. MAP_FIXED in a per-thread arena), munmap (whole,
// part, unaligned), mremap (shrink, grow, move, DONTUNMAP), madvise (every advice but
// HWPOISON/SOFT_OFFLINE), touch (fault pages in, write/read back) and fork (the child checks and
// exits holding mappings); after each, the mapping's pages are checked (TouchSlot).
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstring>

#include "kmod/tests/resmem_seq_run.h"
#include "kmod/tests/resmem_seq_util.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#ifndef MAP_SHARED_VALIDATE
#define MAP_SHARED_VALIDATE 0x03
#endif
#ifndef MAP_SYNC
#define MAP_SYNC 0x80000
#endif
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif

namespace resmem::seq {

namespace {

// What an mmap op asks for: its words read against the thread's state.
struct MmapRequest {
  int fi, dev;               // the thread's fd (-1: none, a bad fd) and its device
  uint64_t len, alen, off;   // alen: len rounded up to pages
  int prot, type, flags;
  uint8_t* at = nullptr;     // MAP_FIXED(_NOREPLACE) into the thread's arena, or null
  bool in_arena = false;
};

// The length: none, pages, 2 or 4 MiB, the whole device and a page past it, or unaligned.
uint64_t MmapLength(uint64_t p, uint64_t size) {
  const uint64_t pages = size / kPage;
  switch (p % 16) {
    case 0: return 0;
    case 1: case 2: return kPage;
    case 3: case 4: return (1 + p / 16 % 64) * kPage;
    case 5: case 6: return 2ull << 20;
    case 7: return (1 + p / 16 % pages) * kPage;
    case 8: case 9: return 1 + p / 16 % (4 * kPage);  // unaligned: rounded up
    case 10: return size;
    case 11: return size + kPage;
    case 12: return 4ull << 20;
    default: return (1 + p / 16 % 1024) * kPage;
  }
}

// The device offset of a mapping of alen bytes: 0, a page, 2 MiB aligned, unaligned, the last
// bytes, the end, far past the end, or anywhere it fits.
uint64_t MmapOffset(uint64_t p, uint64_t size, uint64_t alen) {
  const uint64_t pages = size / kPage, q = p / 16;
  switch (p % 16) {
    case 0: case 1: return 0;
    case 2: return q % pages * kPage;
    case 3: case 4: return alen <= size ? (q % ((size - alen) / (2ull << 20) + 1)) << 21 : 0;
    case 5: return q % size | 1;  // unaligned
    case 6: return alen <= size ? size - alen : 0;
    case 7: return size;
    case 8: return (1ull << 62) + (q % 16) * kPage;
    default: return (alen <= size ? q % (pages - alen / kPage + 1) : 0) * kPage;
  }
}

MmapRequest PlanMmap(const ThreadState& t, const Run* r, const Op& op) {
  MmapRequest q;
  q.fi = t.fds.empty() ? -1 : static_cast<int>(op.p[0] % t.fds.size());
  q.dev = q.fi < 0 ? 0 : t.fds[q.fi].dev;
  const uint64_t size = r->w->devices[q.dev].info.size, pages = size / kPage;
  q.len = MmapLength(op.p[1], size);
  q.alen = (q.len + kPage - 1) / kPage * kPage;
  q.off = MmapOffset(op.p[2], size, q.alen);
  static const int kProt[] = {PROT_READ | PROT_WRITE, PROT_READ, PROT_READ | PROT_WRITE, PROT_WRITE,
                              PROT_NONE, PROT_READ | PROT_EXEC, PROT_READ | PROT_WRITE | PROT_EXEC,
                              PROT_READ | PROT_WRITE};
  q.prot = kProt[op.p[3] % 8];
  q.type = op.p[4] % 16 < 13 ? MAP_SHARED : op.p[4] % 16 == 13 ? MAP_PRIVATE : MAP_SHARED_VALIDATE;
  q.flags = q.type;
  uint64_t b = op.p[4] / 16;
  if (b % 5 == 0) q.flags |= MAP_POPULATE;
  if (b / 5 % 7 == 0) q.flags |= MAP_LOCKED;
  if (b / 35 % 7 == 0) q.flags |= MAP_NORESERVE;
  // MAP_FIXED only where the driver will not refuse: mm/mmap.c mmap_region unmaps what was at the
  // address before the driver's mmap runs, and the hole a refusal leaves could be taken by another
  // thread's mmap (or malloc) before it is given back to the arena.
  bool driver_refuses = q.type == MAP_PRIVATE || q.off % kPage || q.off / kPage >= pages ||
                        q.alen / kPage > pages - q.off / kPage;
  if (b / 245 % 4 == 0 && !driver_refuses) {
    q.at = ArenaHole(t, q.alen ? q.alen : kPage, op.p[5]);
    if (q.at) {
      q.flags |= (b / 980 % 4 == 0) ? MAP_FIXED_NOREPLACE : MAP_FIXED;
      q.in_arena = true;
    }
  }
  if (b / 3920 % 40 == 0) q.flags |= MAP_HUGETLB;
  if (b / 156800 % 20 == 0) q.flags |= MAP_SYNC;
  return q;
}

// What applies (arch/x86/kernel/sys_x86_64.c, mm/mmap.c ksys_mmap_pgoff/do_mmap, resmem_mmap).
std::set<int> MmapAllowed(const MmapRequest& q, const ThreadState& t, uint64_t pages) {
  std::set<int> allowed;
  bool path_fd = q.fi >= 0 && (t.fds[q.fi].flags & O_PATH);
  bool rd = q.fi >= 0 && Readable(t.fds[q.fi]), wr = q.fi >= 0 && Writable(t.fds[q.fi]);
  if (q.off & (kPage - 1)) allowed.insert(EINVAL);
  else if (q.fi < 0 || path_fd) allowed.insert(EBADF);
  else if (q.flags & MAP_HUGETLB) allowed.insert(EINVAL);
  else if (q.len == 0) allowed.insert(EINVAL);
  else {
    uint64_t pgoff = q.off / kPage;
    if (pgoff + q.alen / kPage < pgoff) allowed.insert(EOVERFLOW);
    if (q.flags & MAP_FIXED_NOREPLACE) allowed.insert(EEXIST);  // the arena is mapped there
    if (q.type == MAP_SHARED_VALIDATE && (q.flags & (MAP_SYNC | MAP_FIXED_NOREPLACE))) allowed.insert(EOPNOTSUPP);
    if (q.type != MAP_PRIVATE && (q.prot & PROT_WRITE) && !wr) allowed.insert(EACCES);
    if (!rd) allowed.insert(EACCES);
    if (q.type == MAP_PRIVATE) allowed.insert(EINVAL);  // the module refuses MAP_PRIVATE
    if (pgoff >= pages || q.alen / kPage > pages - pgoff) allowed.insert(EINVAL);  // past the end
    if ((q.prot & PROT_EXEC) && !allowed.empty()) allowed.insert(EPERM);  // a noexec /dev
  }
  return allowed;
}

}  // namespace

void DoMmap(Run* r, ThreadState& t, long idx, const Op& op) {
  const MmapRequest q = PlanMmap(t, r, op);
  const Device& d = r->w->devices[q.dev];
  std::set<int> allowed = MmapAllowed(q, t, d.info.size / kPage);
  void* a = mmap(q.at, q.len, q.prot, q.flags, q.fi < 0 ? 1000 : t.fds[q.fi].fd, static_cast<off_t>(q.off));
  int err = errno;
  long rc = a == MAP_FAILED ? -1 : 0;
  // mm/mmap.c mmap_region unmaps what was at a MAP_FIXED address before the driver's mmap runs,
  // so a failed MAP_FIXED leaves a hole: give it back to the arena before another thread's mmap
  // lands there.
  if (rc < 0 && q.in_arena) ReleaseRange(q.at, q.alen ? q.alen : kPage, true);
  if (rc < 0 && err == EPERM && (q.prot & PROT_EXEC)) {
    r->c->expected_errors++;
    return;
  }
  std::string what = Fmt("mmap(%p, 0x%" PRIx64 ", prot %d, flags 0x%x, %s, 0x%" PRIx64 ")", q.at, q.len,
                         q.prot, q.flags, q.fi < 0 ? "bad fd" : d.path.c_str(), q.off);
  if (!Expect(r, idx, op, what.c_str(), rc, err, allowed)) {
    if (rc == 0) munmap(a, q.alen);
    return;
  }
  if (rc < 0) return;
  r->c->mappings++;
  if (q.in_arena && a != q.at) {
    Failure(r, idx, &op, what + Fmt(" returned %p, not the fixed address", a));
    return;
  }
  Slot s{static_cast<uint8_t*>(a), q.alen, q.dev, q.off, q.prot, q.in_arena, false, false};
  t.slots.push_back(s);
  TouchSlot(r, t, idx, &op, s, op.p[5]);
  if (t.slots.size() > 10) {  // bounded: release the oldest
    ReleaseRange(t.slots.front().addr, t.slots.front().len, t.slots.front().in_arena);
    t.slots.erase(t.slots.begin());
  }
}

void DoMunmap(Run* r, ThreadState& t, long idx, const Op& op) {
  if (t.slots.empty()) return;
  size_t i = op.p[0] % t.slots.size();
  Slot s = t.slots[i];
  uint64_t n = s.len / kPage;
  switch (op.p[1] % 4) {
    case 2: {  // a part: the rest stays mapped, split in up to two
      uint64_t a = op.p[2] % n, l = 1 + op.p[3] % (n - a);
      if (!ReleaseRange(s.addr + a * kPage, l * kPage, s.in_arena)) {
        Failure(r, idx, &op, Fmt("munmap of pages %" PRIu64 "+%" PRIu64 " of %p failed: %s", a, l, s.addr, strerror(errno)));
        return;
      }
      r->c->ok++;
      t.slots.erase(t.slots.begin() + i);
      if (a > 0) t.slots.push_back({s.addr, a * kPage, s.dev, s.off, s.prot, s.in_arena, s.dontfork, s.maybe_split});
      if (a + l < n)
        t.slots.push_back({s.addr + (a + l) * kPage, (n - a - l) * kPage, s.dev, s.off + (a + l) * kPage, s.prot,
                           s.in_arena, s.dontfork, s.maybe_split});
      for (size_t k = t.slots.size() - (a > 0) - (a + l < n); k < t.slots.size(); ++k)
        if (!TouchSlot(r, t, idx, &op, t.slots[k], op.p[4] + k)) return;
      return;
    }
    case 3: {  // unaligned address: EINVAL, nothing changes
      int rc = munmap(s.addr + 1 + op.p[2] % (kPage - 1), kPage);
      Expect(r, idx, op, "munmap(unaligned)", rc, errno, {EINVAL});
      return;
    }
    default: {
      bool ok = ReleaseRange(s.addr, s.len, s.in_arena);
      Expect(r, idx, op, "munmap", ok ? 0 : -1, errno, {});
      t.slots.erase(t.slots.begin() + i);
    }
  }
}

void DoMremap(Run* r, ThreadState& t, long idx, const Op& op) {
  if (t.slots.empty()) return;
  size_t i = op.p[0] % t.slots.size();
  Slot s = t.slots[i];
  uint64_t n = s.len / kPage;
  switch (op.p[1] % 5) {
    case 0: {  // shrink in place (not in the arena: the freed tail would be a hole for a moment)
      if (n < 2 || s.in_arena) return;
      uint64_t keep = 1 + op.p[2] % (n - 1);
      void* a = mremap(s.addr, s.len, keep * kPage, 0);
      if (!Expect(r, idx, op, "mremap(shrink)", a == MAP_FAILED ? -1 : 0, errno, {})) return;
      t.slots[i].len = keep * kPage;
      TouchSlot(r, t, idx, &op, t.slots[i], op.p[3]);
      return;
    }
    case 1:
    case 2: {  // grow: VM_DONTEXPAND (mm/mremap.c vma_to_resize) says EFAULT, moving or not
      int fl = op.p[1] % 5 == 2 ? MREMAP_MAYMOVE : 0;
      void* a = mremap(s.addr, s.len, s.len + (1 + op.p[2] % 16) * kPage, fl);
      if (a != MAP_FAILED) munmap(a, s.len);  // (a failure is reported below)
      Expect(r, idx, op, "mremap(grow)", a == MAP_FAILED ? -1 : 0, errno, {EFAULT});
      if (a != MAP_FAILED) t.slots.erase(t.slots.begin() + i);
      return;
    }
    case 3: {  // move to a hole in the arena
      // Not after a madvise may have split it: mremap_to unmaps the target before it finds that
      // it can move only one VMA (EFAULT), and that hole could be taken meanwhile. Not from the
      // arena either: the old range is a hole until it is given back.
      if (s.maybe_split || s.in_arena) return;
      uint8_t* to = ArenaHole(t, s.len, op.p[2]);
      if (!to || (to < s.addr + s.len && s.addr < to + s.len)) return;
      void* a = mremap(s.addr, s.len, s.len, MREMAP_MAYMOVE | MREMAP_FIXED, to);
      std::set<int> allowed;
      int err = errno;
      if (a == MAP_FAILED) ReleaseRange(to, s.len, true);  // mremap_to unmapped the target first
      if (!Expect(r, idx, op, Fmt("mremap(%p -> %p, 0x%" PRIx64 ")", s.addr, to, s.len).c_str(),
                  a == MAP_FAILED ? -1 : 0, err, allowed) || a == MAP_FAILED)
        return;
      t.slots[i].addr = to;
      t.slots[i].in_arena = true;
      TouchSlot(r, t, idx, &op, t.slots[i], op.p[3]);
      return;
    }
    default: {  // MREMAP_DONTUNMAP: private anonymous memory only
      void* a = mremap(s.addr, s.len, s.len, MREMAP_MAYMOVE | MREMAP_DONTUNMAP);
      if (a != MAP_FAILED) munmap(a, s.len);
      Expect(r, idx, op, "mremap(DONTUNMAP)", a == MAP_FAILED ? -1 : 0, errno, {EINVAL});
    }
  }
}

void DoMadvise(Run* r, ThreadState& t, long idx, const Op& op) {
  if (t.slots.empty()) return;
  size_t i = op.p[0] % t.slots.size();
  Slot& s = t.slots[i];
  // Every advice but MADV_HWPOISON (100) and MADV_SOFT_OFFLINE (101), which poison memory.
  static const int kAdvice[] = {MADV_NORMAL,   MADV_RANDOM,     MADV_SEQUENTIAL, MADV_WILLNEED,
                                MADV_DONTNEED, MADV_FREE,       MADV_REMOVE,     MADV_DONTFORK,
                                MADV_DOFORK,   MADV_MERGEABLE,  MADV_UNMERGEABLE, MADV_HUGEPAGE,
                                MADV_NOHUGEPAGE, MADV_DONTDUMP, MADV_DODUMP,     MADV_WIPEONFORK,
                                MADV_KEEPONFORK, 20 /* COLD */, 21 /* PAGEOUT */, 22 /* POPULATE_READ */,
                                23 /* POPULATE_WRITE */, 24 /* COLLAPSE */, 77 /* unknown */};
  int advice = kAdvice[op.p[1] % (sizeof kAdvice / sizeof kAdvice[0])];
  if (r->huge_optin && (advice == 20 || advice == 21)) advice = MADV_NORMAL;
  bool whole = advice == MADV_DONTFORK || advice == MADV_DOFORK || op.p[2] % 2;
  uint64_t n = s.len / kPage, a = whole ? 0 : op.p[3] % n, l = whole ? n : 1 + op.p[4] % (n - a);
  int rc = madvise(s.addr + a * kPage, l * kPage, advice);
  int err = errno;
  // Advice the module's VMAs (VM_IO|VM_PFNMAP or VM_MIXEDMAP, shared) may refuse; never ENOMEM
  // (the range is mapped) and never a crash or a wrong page afterwards.
  if (rc != 0 && !(err == EINVAL || err == EPERM || err == EOPNOTSUPP || err == EFAULT || err == EAGAIN ||
                   err == EBADF || err == EACCES || err == ENODEV || err == ESPIPE)) {
    Failure(r, idx, &op, Fmt("madvise(%p, 0x%" PRIx64 ", %d) failed with %s", s.addr + a * kPage, l * kPage, advice,
                             strerrorname_np(err)));
    return;
  }
  rc == 0 ? r->c->ok++ : r->c->expected_errors++;
  if (rc == 0 && advice == MADV_DONTFORK) s.dontfork = true;
  if (rc == 0 && advice == MADV_DOFORK) s.dontfork = false;
  if (rc == 0 && !whole) s.maybe_split = true;
  TouchSlot(r, t, idx, &op, s, op.p[5]);
}

void DoTouch(Run* r, ThreadState& t, long idx, const Op& op) {
  if (t.slots.empty()) return;
  TouchSlot(r, t, idx, &op, t.slots[op.p[0] % t.slots.size()], op.p[1]);
  r->c->ok++;
}

// fork: the child checks what it inherited (same PFNs, same bytes), drops some of it and exits
// holding the rest; the parent waits and must see exit 0.
void DoFork(Run* r, ThreadState& t, long idx, const Op& op) {
  int pfd[2];
  if (pipe(pfd) != 0) return;
  pid_t pid = fork();
  if (pid < 0) {
    Failure(r, idx, &op, Fmt("fork failed: %s", strerror(errno)));
    return;
  }
  if (pid == 0) {
    close(pfd[0]);
    Run child_run;
    child_run.w = r->w;
    child_run.c = r->c;
    child_run.huge_optin = r->huge_optin;
    child_run.result_fd = pfd[1];
    ReportSignalsTo(&child_run);
    for (size_t k = 0; k < t.slots.size(); ++k) {
      const Slot& s = t.slots[k];
      if (s.dontfork) continue;
      if (!TouchSlot(&child_run, t, idx, &op, s, op.p[1] + k)) break;
      if ((op.p[2] >> k) & 1) munmap(s.addr, s.len);
    }
    if (op.p[3] % 3 == 0)
      for (const auto& f : t.fds) close(f.fd);
    if (child_run.failed) {
      std::string m = "in the forked child: " + child_run.failure;
      (void)!write(pfd[1], m.data(), m.size());
      _exit(1);
    }
    _exit(0);  // with mappings (and maybe fds) held
  }
  close(pfd[1]);
  r->c->forks++;
  char msg[1024];
  ssize_t n = read(pfd[0], msg, sizeof msg - 1);
  close(pfd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string m = n > 0 ? std::string(msg, n) : "";
    Failure(r, idx, &op, Fmt("forked child ended with status 0x%x: %s", status, m.c_str()));
  }
}

}  // namespace resmem::seq
