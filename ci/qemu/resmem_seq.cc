// resmem_seq: random syscall sequences against the real module, inside the kmod lane's guest
// (ci/qemu/guest_init.sh case d_random_syscall_sequences; docs/reliability.md "Random syscall
// sequences"). Statically linked: the guest has only busybox.
//
//   resmem_seq [--seed S] [--ops N] [--threads T] [--module-name resmem] [--module-file /resmem.ko]
//              [--keep I,J,K-L] [--no-shrink] [--shrink-seconds S] [--list] [--huge] [--kcov-sites N]
//              [--p2p /dev/resmem_eduN[,...] [--provider-file /nv_p2p_standin.ko]]
//
// The op list is a pure function of (seed, ops, threads, --p2p or not): each op carries a kind, a
// thread and six random words that are interpreted against the state at run time (the k-th open
// fd, the k-th mapping, ...), so any sub-list is still a valid program. That is what makes a
// failure shrinkable: on failure the seed is printed, the list is delta-debugged (each candidate
// run in a fresh child process) and the reproducer printed as a command with --keep.
//
// Operations: open with every flag, close, ioctl (valid, wrong size, random numbers, bad
// pointers), mmap (random offsets, lengths, protections, flags incl. MAP_FIXED in a per-thread
// arena), munmap (whole, part, unaligned), mremap (shrink, grow, move, DONTUNMAP), madvise (every
// advice but HWPOISON/SOFT_OFFLINE), touch (fault pages in, write/read back), read/write/pread/
// pwrite/lseek, fork (the child checks and exits holding mappings), module unload attempts (must
// fail while anything is held) and unload + reload (must succeed when nothing is; /proc/iomem
// must lose every resmem entry). Threads run their own ops concurrently between barriers.
//
// Oracle: each result is compared with what the kernel's mm/vfs code and kmod/resmem.c promise
// (success, or an errno from the set that applies). After every mapping, touch and madvise,
// /proc/self/pagemap is read for the whole mapping: every present page must show the PFN of
// phys + offset of its own device, and every PFN must lie inside the ranges the module was loaded
// with (read back from /sys/module/NAME/parameters): the module must never expose other memory.
// New kernel log lines with BUG/WARNING/KASAN/lockdep/Oops fail the run. At the end the module is
// unloaded (/proc/iomem clean), kmemleak scanned (no unreferenced object), and loaded again.
// On a KCOV kernel the run also says how many of the module's instrumented sites its ops reached
// (--kcov-sites: how many there are, counted in the .ko by the lane).
//
// --p2p (guest case d_random_sequences_edu_p2p): the module is resmem_edu (its /dev/resmemN as
// above) and the lists also drive the edu DMA devices and the GPUDirect RDMA stand-in provider,
// nv_p2p_standin, from every thread: contexts, cudaMalloc/cudaFree, pins and transfers racing the
// frees, BAR mappings that must fault once freed, dma-bufs, unloads of both modules; the provider
// must be at rest once everything is closed (resmem_seq_p2p.h).
//
// Exit: 0 pass, 1 failure (seed and reproducer printed), 2 usage or setup error.
#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <new>
#include <set>
#include <sstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backends/fault/rng.h"
#include "ci/qemu/resmem_seq_op.h"
#include "ci/qemu/resmem_seq_p2p.h"
#include "kmod/uapi/resmem_ioctl.h"

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
#ifndef O_TMPFILE
#define O_TMPFILE (020000000 | O_DIRECTORY)
#endif

#include "ci/qemu/tap_diag.h"

namespace resmem {
namespace {

constexpr uint64_t kPage = 4096;

using guest::Diag;

std::string Fmt(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string Fmt(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

std::string ReadText(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// ---- the world the run works in -------------------------------------------------------------

struct Range {
  uint64_t start, size;
};

struct Device {
  std::string path;
  resmem_info info;
};

struct World {
  std::string module_name = "resmem";
  std::string module_file = "/resmem.ko";
  std::string params;         // the parameter string the module was loaded with (reload uses it)
  std::vector<Range> ranges;  // the configured ranges (module parameters)
  std::vector<Device> devices;
  std::vector<char> image;    // the module file, for init_module
};

// Parses memmap syntax "64M$0x40000000,1G$0x100000000" (kmod/resmem.c parse_one_range, memparse).
bool ParseRanges(const std::string& text, std::vector<Range>* out) {
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    size_t d = item.find('$');
    if (d == std::string::npos) return false;
    auto parse = [](const std::string& s, uint64_t* v) {
      char* end = nullptr;
      *v = std::strtoull(s.c_str(), &end, 0);
      if (end == s.c_str()) return false;
      switch (*end) {
        case 'K': case 'k': *v <<= 10; ++end; break;
        case 'M': case 'm': *v <<= 20; ++end; break;
        case 'G': case 'g': *v <<= 30; ++end; break;
        case 'T': case 't': *v <<= 40; ++end; break;
        default: break;
      }
      return *end == '\0';
    };
    Range r;
    if (!parse(item.substr(0, d), &r.size) || !parse(item.substr(d + 1), &r.start)) return false;
    out->push_back(r);
  }
  return true;
}

// The module's parameters as a load string, and the ranges they configure.
std::string ReadModuleSetup(World* w) {
  std::string dir = "/sys/module/" + w->module_name + "/parameters/";
  std::string params;
  for (const char* p : {"ranges", "phys", "size", "mode", "cache", "huge", "probe", "fault", "dma_bits"}) {
    std::string v = Trim(ReadText(dir + p));
    if (v.empty() || v == "(null)") continue;
    if (std::string(p) == "phys" || std::string(p) == "size") {
      if (v == "0" || v.find_first_not_of("0,") == std::string::npos) continue;
    }
    params += (params.empty() ? "" : " ") + std::string(p) + "=" + v;
  }
  w->params = params;
  std::string ranges = Trim(ReadText(dir + "ranges"));
  if (!ranges.empty() && ranges != "(null)") {
    if (!ParseRanges(ranges, &w->ranges)) return "cannot parse " + dir + "ranges: '" + ranges + "'";
  } else {
    std::vector<uint64_t> phys, size;
    for (auto* pair : {&phys, &size}) {
      std::stringstream in(Trim(ReadText(dir + (pair == &phys ? "phys" : "size"))));
      std::string item;
      while (std::getline(in, item, ',')) pair->push_back(std::strtoull(item.c_str(), nullptr, 0));
    }
    for (size_t i = 0; i < phys.size() && i < size.size(); ++i)
      if (size[i]) w->ranges.push_back({phys[i], size[i]});
  }
  if (w->ranges.empty())
    return "module " + w->module_name + " is not loaded or has no ranges (" + dir + "); load it first";
  return "";
}

std::string FindDevices(World* w) {
  w->devices.clear();
  for (int i = 0; i < 8; ++i) {
    std::string path = "/dev/resmem" + std::to_string(i);
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    Device d;
    d.path = path;
    int rc = ioctl(fd, RESMEM_IOC_INFO, &d.info);
    close(fd);
    if (rc != 0) return path + ": RESMEM_IOC_INFO failed: " + strerror(errno);
    w->devices.push_back(d);
  }
  if (w->devices.empty()) return "no /dev/resmemN to open";
  return "";
}

bool InsideRanges(const World& w, uint64_t pa) {
  for (const auto& r : w.ranges)
    if (pa >= r.start && pa - r.start < r.size) return true;
  return false;
}

// ---- ops ------------------------------------------------------------------------------------

// The device mode's kinds (resmem_seq_p2p.h) follow the module's own; without --p2p their weight
// is 0, so a seed gives the list it always gave.
enum Kind : uint8_t {
  kOpen, kClose, kIoctl, kMmap, kMunmap, kMremap, kMadvise, kTouch, kRead, kWrite, kPread,
  kPwrite, kLseek, kFork, kUnloadHeld, kUnloadReload, kP2pFirst,
  kNumKinds = kP2pFirst + seq::p2p::kKinds
};
const char* const kKindName[] = {"open",  "close", "ioctl", "mmap",   "munmap", "mremap",
                                 "madvise", "touch", "read", "write", "pread", "pwrite",
                                 "lseek", "fork", "unload-attempt", "unload-reload"};
// Weights per 10,000 ops. Unloads are barriers: every thread stops and the main thread acts.
const int kWeight[] = {900, 500, 1200, 1500, 700, 500, 700, 900, 500, 500, 400, 400, 500, 120, 25, 5};

const char* KindName(int k) { return k < kP2pFirst ? kKindName[k] : seq::p2p::KindName(k - kP2pFirst); }

// With --p2p the device's kinds take about two thirds of a list and the module's own come a third
// as often, but for forks, left out (a child would keep the device files it inherits open past
// their close, and the device oracle counts on close releasing them), and barriers, which unload
// and reload both modules: unload attempts four times, unload + reload six times as often.
int Weight(int k, bool p2p) {
  if (k >= kP2pFirst) return p2p ? seq::p2p::Weight(k - kP2pFirst) : 0;
  if (!p2p) return kWeight[k];
  if (k == kFork) return 0;
  return k == kUnloadHeld ? kWeight[k] * 4 : k == kUnloadReload ? kWeight[k] * 6 : kWeight[k] / 3;
}

using seq::Op;

std::vector<Op> Generate(uint64_t seed, size_t n, int threads, bool p2p) {
  DeterministicRng rng(seed);
  int total = 0;
  for (int k = 0; k < kNumKinds; ++k) total += Weight(k, p2p);
  std::vector<Op> ops(n);
  for (auto& op : ops) {
    int x = static_cast<int>(rng.Below(total)), k = 0;
    while (x >= Weight(k, p2p)) x -= Weight(k++, p2p);
    op.kind = static_cast<Kind>(k);
    op.thread = static_cast<uint8_t>(rng.Below(threads));
    for (auto& v : op.p) v = rng.NextU64();
  }
  return ops;
}

// ---- per-thread state -----------------------------------------------------------------------

struct Fd {
  int fd, dev, flags;
  uint64_t pos;  // the file position as the module's llseek/read/write leave it
};

struct Slot {
  uint8_t* addr;
  uint64_t len;  // page multiple
  int dev;
  uint64_t off;  // device offset of addr
  int prot;
  bool in_arena, dontfork, maybe_split;
};

struct Counters {
  std::atomic<uint64_t> ops{0}, ok{0}, expected_errors{0}, pfn_checked{0}, pages_present{0},
      pfnmap_pages_walked{0}, content_checked{0},
      mappings{0}, forks{0}, unload_refused{0}, reloads{0}, bytes_verified{0}, kinds[kNumKinds],
      kcov_pcs{0}, kcov_outside{0}, kcov_overflows{0};
};

constexpr uint64_t kArenaLen = 160ull << 20;

struct ThreadState {
  int id = 0, nthreads = 1;
  std::vector<Fd> fds;
  std::vector<Slot> slots;
  uint8_t* arena = nullptr;
  std::vector<uint8_t> scratch;
  uint8_t* guard = nullptr;  // a readable page followed by an inaccessible one
};

// Everything a run shares; lives in the child process that executes the run.
struct Run {
  World* w;
  Counters* c;  // shared with the parent (MAP_SHARED)
  std::atomic<bool> stop{false};
  std::atomic<bool> failed{false};
  std::string failure;
  std::atomic<int> fail_guard{0};
  int result_fd = -1;  // pipe to the parent: the failure message
  std::optional<guest::KmsgSince> kmsg;  // opened when the run starts
  seq::p2p::Executor* p2p = nullptr;     // --p2p: the device ops
};

// --huge: the module's 2 MiB entries asked for with huge=1 on a kernel where they are not the
// default; the run then keeps to that opt-in's contract (kmod/resmem.c huge): no MADV_COLD or
// MADV_PAGEOUT.
bool g_huge_optin = false;
// --p2p: what the device ops work with (read before the runs) and their counters (MAP_SHARED).
const seq::p2p::Config* g_p2p = nullptr;
seq::p2p::Counters* g_p2p_counters = nullptr;

thread_local long g_current_op = -1;
thread_local int g_current_kind = -1;
thread_local const ThreadState* g_current_thread = nullptr;
Run* g_run = nullptr;

void Failure(Run* r, long index, const Op* op, const std::string& why) {
  if (r->fail_guard.exchange(1) == 0) {
    r->failure = Fmt("op #%ld (%s, thread %d): ", index, op ? KindName(op->kind) : "-",
                     op ? op->thread : -1) + why;
    r->failed = true;
  }
  r->stop = true;
}

// A signal in an op: the op, the address, what the thread believed it had mapped and what the
// kernel says is mapped there (best effort: the process is going anyway).
void OnSignal(int sig, siginfo_t* si, void*) {
  if (sig == SIGBUS) seq::p2p::EscapeGuardedRead();  // a BAR read the device mode expects may fault
  char buf[4096];
  int n = std::snprintf(buf, sizeof buf, "op #%ld (%s): signal %d (%s) at address %p", g_current_op,
                        g_current_kind >= 0 ? KindName(g_current_kind) : "-", sig,
                        sig == SIGBUS ? "SIGBUS" : sig == SIGSEGV ? "SIGSEGV" : "?", si ? si->si_addr : nullptr);
  if (g_current_thread)
    for (const auto& sl : g_current_thread->slots)
      if (n < 3000)
        n += std::snprintf(buf + n, sizeof buf - n, "; slot %p+0x%lx dev %d off 0x%lx prot %d%s", sl.addr,
                           static_cast<unsigned long>(sl.len), sl.dev, static_cast<unsigned long>(sl.off), sl.prot,
                           sl.in_arena ? " arena" : "");
  int maps = open("/proc/self/maps", O_RDONLY);
  if (maps >= 0 && si) {
    static char m[65536];
    ssize_t got = read(maps, m, sizeof m - 1);
    m[got > 0 ? got : 0] = 0;
    for (char* line = std::strtok(m, "\n"); line; line = std::strtok(nullptr, "\n")) {
      unsigned long lo = std::strtoul(line, nullptr, 16), hi = std::strtoul(std::strchr(line, '-') + 1, nullptr, 16);
      unsigned long a = reinterpret_cast<unsigned long>(si->si_addr);
      if (a + (4ul << 20) >= lo && a < hi + (4ul << 20) && n < 3900)
        n += std::snprintf(buf + n, sizeof buf - n, "; maps: %s", line);
    }
  }
  buf[n++] = '\n';
  if (g_run && g_run->result_fd >= 0) (void)!write(g_run->result_fd, buf, n);
  (void)!write(1, "# ", 2);
  (void)!write(1, buf, n);
  _exit(3);
}

// ---- helpers the ops share ------------------------------------------------------------------

std::string ErrStr(long rc, int err) { return rc >= 0 ? Fmt("%ld", rc) : Fmt("-1 %s", strerrorname_np(err) ? strerrorname_np(err) : "E?"); }

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

int AccMode(int flags) { return flags & O_ACCMODE; }
bool Readable(const Fd& f) { return !(f.flags & O_PATH) && (AccMode(f.flags) == O_RDONLY || AccMode(f.flags) == O_RDWR); }
bool Writable(const Fd& f) { return !(f.flags & O_PATH) && (AccMode(f.flags) == O_WRONLY || AccMode(f.flags) == O_RDWR); }

// The thread's own stripe of a device: the only bytes it writes (others' data is theirs).
void Stripe(const ThreadState& t, uint64_t size, uint64_t* lo, uint64_t* hi) {
  uint64_t pages = size / kPage;
  *lo = pages * t.id / t.nthreads * kPage;
  *hi = pages * (t.id + 1) / t.nthreads * kPage;
}

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

int FindFd(const ThreadState& t, int dev, bool want_read, bool want_write) {
  for (size_t i = 0; i < t.fds.size(); ++i) {
    const Fd& f = t.fds[i];
    if (f.dev == dev && (!want_read || Readable(f)) && (!want_write || Writable(f))) return static_cast<int>(i);
  }
  return -1;
}

// Faults pages of a slot in (reads), writes a pattern where the slot is writable and inside the
// thread's stripe and reads it back with pread, then checks pagemap. `forked`: a child process.
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

// ---- the ops --------------------------------------------------------------------------------

void DoOpen(Run* r, ThreadState& t, long idx, const Op& op) {
  static const int kExtra[] = {O_NONBLOCK, O_SYNC,   O_APPEND,    O_CLOEXEC,    O_NOCTTY,
                               O_DSYNC,    O_DIRECT, O_NOATIME,   O_PATH,       O_TRUNC,
                               O_CREAT,    O_EXCL,   O_DIRECTORY, O_NOFOLLOW,   O_LARGEFILE,
                               O_TMPFILE,  O_ASYNC};
  static const int kAcc[] = {O_RDONLY, O_WRONLY, O_RDWR, O_RDWR, O_RDWR, O_RDWR, 3};
  if (t.fds.size() >= 12) {  // bounded: close the oldest first
    close(t.fds.front().fd);
    t.fds.erase(t.fds.begin());
  }
  int ndev = static_cast<int>(r->w->devices.size());
  bool missing = op.p[0] % 16 == 15;
  int dev = static_cast<int>(op.p[0] % ndev);
  std::string path = missing ? "/dev/resmem7x" : r->w->devices[dev].path;
  int flags = kAcc[op.p[1] % 7];
  // Each extra flag with a chance of 1 in 16 (bits 4i..4i+3 of p[2]).
  for (size_t i = 0; i < sizeof kExtra / sizeof kExtra[0] && i < 16; ++i)
    if (((op.p[2] >> (i * 4)) & 15) == 0) flags |= kExtra[i];
  if (op.p[3] % 32 == 0) flags |= kExtra[16];
  if ((flags & O_TMPFILE) == O_TMPFILE && (op.p[3] % 4)) flags &= ~O_TMPFILE | O_DIRECTORY;  // rarer
  if (missing) flags &= ~O_CREAT;  // never create files in /dev
  // Every error that applies is allowed (their order is the kernel's business); success only
  // when none does.
  std::set<int> allowed;
  if (missing) allowed.insert(ENOENT);
  if (flags & O_PATH) {
    // fs/open.c build_open_how: O_PATH keeps only O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC.
    if (flags & O_DIRECTORY) allowed.insert(ENOTDIR);
  } else {
    if ((flags & O_TMPFILE) == O_TMPFILE) allowed.insert({EINVAL, ENOTDIR, EISDIR, ENOENT, EOPNOTSUPP});
    if ((flags & O_CREAT) && (flags & O_EXCL)) allowed.insert(EEXIST);
    if (flags & O_DIRECTORY) allowed.insert({ENOTDIR, EINVAL, EISDIR});
    if (flags & O_DIRECT) allowed.insert(EINVAL);  // fs/open.c do_dentry_open: no direct_IO
  }
  int fd = open(path.c_str(), flags, 0600);
  int err = errno;
  if (!Expect(r, idx, op, Fmt("open(%s, 0%o)", path.c_str(), flags).c_str(), fd, err, allowed)) {
    if (fd >= 0) close(fd);
    return;
  }
  if (fd < 0) return;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISCHR(st.st_mode)) {
    Failure(r, idx, &op, path + " is not a character device after open");
    close(fd);
    return;
  }
  t.fds.push_back({fd, dev, (flags & O_PATH) ? (O_PATH | O_RDONLY) : flags, 0});
}

void DoClose(Run* r, ThreadState& t, long idx, const Op& op) {
  if (t.fds.empty()) return;
  size_t i = op.p[0] % t.fds.size();
  int rc = close(t.fds[i].fd);
  Expect(r, idx, op, "close", rc, errno, {});
  t.fds.erase(t.fds.begin() + i);
}

// The ioctl types the VFS answers itself (fs/ioctl.c do_vfs_ioctl): left out of random numbers.
bool VfsIoctlType(unsigned type) {
  return type == 0 || type == 'T' || type == 'X' || type == 'f' || type == 0x94 || type == 'x';
}

void DoIoctl(Run* r, ThreadState& t, long idx, const Op& op) {
  int fi = t.fds.empty() ? -1 : static_cast<int>(op.p[0] % t.fds.size());
  int fd = fi < 0 ? 1000 : t.fds[fi].fd;
  const Device* d = fi < 0 ? nullptr : &r->w->devices[t.fds[fi].dev];
  unsigned long cmd;
  switch (op.p[1] % 8) {
    case 0: cmd = RESMEM_IOC_INFO; break;
    case 1: cmd = RESMEM_IOC_LENGTH; break;
    case 2: cmd = RESMEM_IOC_PHYS; break;
    case 3: cmd = RESMEM_IOC_TEST_PIN; break;
    case 4: cmd = _IOC(_IOC_READ, RESMEM_IOC_MAGIC, 1 + op.p[3] % 3, 1 + op.p[4] % 200); break;
    case 5: cmd = _IOC(op.p[3] % 4, RESMEM_IOC_MAGIC, op.p[4] % 256, op.p[5] % 0x4000); break;
    default: {
      unsigned type = 1 + op.p[3] % 255;
      if (VfsIoctlType(type)) type = RESMEM_IOC_MAGIC;
      cmd = (op.p[1] % 8 == 6) ? _IOC(op.p[4] % 4, type, op.p[5] % 256, (op.p[5] >> 8) % 0x4000)
                               : static_cast<uint32_t>(op.p[4]);
      if (VfsIoctlType(_IOC_TYPE(cmd))) cmd = _IOC(_IOC_NONE, RESMEM_IOC_MAGIC, 200, 0);
    }
  }
  bool valid_cmd = cmd == RESMEM_IOC_INFO || cmd == RESMEM_IOC_LENGTH || cmd == RESMEM_IOC_PHYS;
  size_t want = cmd == RESMEM_IOC_INFO ? sizeof(resmem_info) : 8;
  uint64_t valid = 0;
  uint8_t* buf = PickBuffer(t, r, op.p[2], want, &valid, false);
  if (buf == t.scratch.data()) std::memset(buf, 0xa5, want);
  std::set<int> allowed;
  bool test_build = d && (d->info.flags & RESMEM_INFO_FAULT_INJECTION);
  if (fi < 0 || (t.fds[fi].flags & O_PATH)) allowed = {EBADF};
  else if (cmd == RESMEM_IOC_TEST_PIN && test_build) allowed = {EINVAL, EFAULT, ENOMEM, 0};
  else if (!valid_cmd) allowed = {ENOTTY};
  else if (valid < want) allowed = {EFAULT};
  long rc = ioctl(fd, cmd, buf);
  int err = errno;
  if (allowed.count(0)) {  // the test build's pin: any answer but a crash
    r->c->ok++;
    return;
  }
  if (!Expect(r, idx, op, Fmt("ioctl(%s, 0x%lx, %p)", d ? d->path.c_str() : "bad fd", cmd, buf).c_str(), rc, err, allowed) || rc != 0)
    return;
  // The answer must be the device's own.
  resmem_info info;
  uint64_t v;
  std::memcpy(cmd == RESMEM_IOC_INFO ? static_cast<void*>(&info) : &v, buf, want);
  bool right = cmd == RESMEM_IOC_INFO
                   ? info.abi_version == RESMEM_ABI_VERSION && info.phys_addr == d->info.phys_addr &&
                         info.size == d->info.size && std::strcmp(info.name, d->info.name) == 0
                   : v == (cmd == RESMEM_IOC_LENGTH ? d->info.size : d->info.phys_addr);
  if (!right) Failure(r, idx, &op, Fmt("ioctl 0x%lx on %s answered another device's facts", cmd, d->path.c_str()));
}

void DoMmap(Run* r, ThreadState& t, long idx, const Op& op) {
  int fi = t.fds.empty() ? -1 : static_cast<int>(op.p[0] % t.fds.size());
  int dev = fi < 0 ? 0 : t.fds[fi].dev;
  const Device& d = r->w->devices[dev];
  uint64_t size = d.info.size, pages = size / kPage;
  uint64_t len;
  switch (op.p[1] % 16) {
    case 0: len = 0; break;
    case 1: case 2: len = kPage; break;
    case 3: case 4: len = (1 + op.p[1] / 16 % 64) * kPage; break;
    case 5: case 6: len = 2ull << 20; break;
    case 7: len = (1 + op.p[1] / 16 % pages) * kPage; break;
    case 8: case 9: len = 1 + op.p[1] / 16 % (4 * kPage); break;  // unaligned: rounded up
    case 10: len = size; break;
    case 11: len = size + kPage; break;
    case 12: len = 4ull << 20; break;
    default: len = (1 + op.p[1] / 16 % 1024) * kPage; break;
  }
  uint64_t alen = (len + kPage - 1) / kPage * kPage;
  uint64_t off;
  uint64_t q = op.p[2] / 16;
  switch (op.p[2] % 16) {
    case 0: case 1: off = 0; break;
    case 2: off = q % pages * kPage; break;
    case 3: case 4: off = alen <= size ? (q % ((size - alen) / (2ull << 20) + 1)) << 21 : 0; break;
    case 5: off = q % size | 1; break;  // unaligned
    case 6: off = alen <= size ? size - alen : 0; break;
    case 7: off = size; break;
    case 8: off = (1ull << 62) + (q % 16) * kPage; break;
    default: off = (alen <= size ? q % (pages - alen / kPage + 1) : 0) * kPage; break;
  }
  static const int kProt[] = {PROT_READ | PROT_WRITE, PROT_READ, PROT_READ | PROT_WRITE, PROT_WRITE,
                              PROT_NONE, PROT_READ | PROT_EXEC, PROT_READ | PROT_WRITE | PROT_EXEC,
                              PROT_READ | PROT_WRITE};
  int prot = kProt[op.p[3] % 8];
  int type = op.p[4] % 16 < 13 ? MAP_SHARED : op.p[4] % 16 == 13 ? MAP_PRIVATE : MAP_SHARED_VALIDATE;
  int flags = type;
  uint64_t b = op.p[4] / 16;
  if (b % 5 == 0) flags |= MAP_POPULATE;
  if (b / 5 % 7 == 0) flags |= MAP_LOCKED;
  if (b / 35 % 7 == 0) flags |= MAP_NORESERVE;
  uint8_t* at = nullptr;
  bool in_arena = false;
  // MAP_FIXED only where the driver will not refuse: mm/mmap.c mmap_region unmaps what was at the
  // address before the driver's mmap runs, and the hole a refusal leaves could be taken by another
  // thread's mmap (or malloc) before it is given back to the arena.
  bool driver_refuses = type == MAP_PRIVATE || off % kPage || off / kPage >= pages ||
                        alen / kPage > pages - off / kPage;
  if (b / 245 % 4 == 0 && !driver_refuses) {
    at = ArenaHole(t, alen ? alen : kPage, op.p[5]);
    if (at) {
      flags |= (b / 980 % 4 == 0) ? MAP_FIXED_NOREPLACE : MAP_FIXED;
      in_arena = true;
    }
  }
  if (b / 3920 % 40 == 0) flags |= MAP_HUGETLB;
  if (b / 156800 % 20 == 0) flags |= MAP_SYNC;

  // What applies (arch/x86/kernel/sys_x86_64.c, mm/mmap.c ksys_mmap_pgoff/do_mmap, resmem_mmap).
  std::set<int> allowed;
  bool path_fd = fi >= 0 && (t.fds[fi].flags & O_PATH);
  bool rd = fi >= 0 && Readable(t.fds[fi]), wr = fi >= 0 && Writable(t.fds[fi]);
  if (off & (kPage - 1)) allowed.insert(EINVAL);
  else if (fi < 0 || path_fd) allowed.insert(EBADF);
  else if (flags & MAP_HUGETLB) allowed.insert(EINVAL);
  else if (len == 0) allowed.insert(EINVAL);
  else {
    uint64_t pgoff = off / kPage;
    if (pgoff + alen / kPage < pgoff) allowed.insert(EOVERFLOW);
    if (flags & MAP_FIXED_NOREPLACE) allowed.insert(EEXIST);  // the arena is mapped there
    if (type == MAP_SHARED_VALIDATE && (flags & (MAP_SYNC | MAP_FIXED_NOREPLACE))) allowed.insert(EOPNOTSUPP);
    if (type != MAP_PRIVATE && (prot & PROT_WRITE) && !wr) allowed.insert(EACCES);
    if (!rd) allowed.insert(EACCES);
    if (type == MAP_PRIVATE) allowed.insert(EINVAL);  // the module refuses MAP_PRIVATE
    if (pgoff >= pages || alen / kPage > pages - pgoff) allowed.insert(EINVAL);  // past the end
    if ((prot & PROT_EXEC) && !allowed.empty()) allowed.insert(EPERM);  // a noexec /dev
  }
  void* a = mmap(at, len, prot, flags, fi < 0 ? 1000 : t.fds[fi].fd, static_cast<off_t>(off));
  int err = errno;
  long rc = a == MAP_FAILED ? -1 : 0;
  // mm/mmap.c mmap_region unmaps what was at a MAP_FIXED address before the driver's mmap runs,
  // so a failed MAP_FIXED leaves a hole: give it back to the arena before another thread's mmap
  // lands there.
  if (rc < 0 && in_arena) ReleaseRange(at, alen ? alen : kPage, true);
  if (rc < 0 && err == EPERM && (prot & PROT_EXEC)) {
    r->c->expected_errors++;
    return;
  }
  std::string what = Fmt("mmap(%p, 0x%" PRIx64 ", prot %d, flags 0x%x, %s, 0x%" PRIx64 ")", at, len,
                         prot, flags, fi < 0 ? "bad fd" : d.path.c_str(), off);
  if (!Expect(r, idx, op, what.c_str(), rc, err, allowed)) {
    if (rc == 0) munmap(a, alen);
    return;
  }
  if (rc < 0) return;
  r->c->mappings++;
  if (in_arena && a != at) {
    Failure(r, idx, &op, what + Fmt(" returned %p, not the fixed address", a));
    return;
  }
  Slot s{static_cast<uint8_t*>(a), alen, dev, off, prot, in_arena, false, false};
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
  if (g_huge_optin && (advice == 20 || advice == 21)) advice = MADV_NORMAL;
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

// read, write, pread, pwrite: the module's fixed-size-file rules (kmod/resmem.c resmem_read/write).
void DoReadWrite(Run* r, ThreadState& t, long idx, const Op& op) {
  bool is_write = op.kind == kWrite || op.kind == kPwrite;
  bool positional = op.kind == kPread || op.kind == kPwrite;
  int fi = t.fds.empty() ? -1 : static_cast<int>(op.p[0] % t.fds.size());
  if (fi < 0) {
    char c = 0;
    long rc = is_write ? write(1000, &c, 1) : read(1000, &c, 1);
    Expect(r, idx, op, "read/write on a closed fd", rc, errno, {EBADF});
    return;
  }
  Fd& f = t.fds[fi];
  const Device& d = r->w->devices[f.dev];
  uint64_t size = d.info.size, lo, hi;
  Stripe(t, size, &lo, &hi);
  uint64_t count;
  switch (op.p[1] % 5) {
    case 0: count = 0; break;
    case 1: count = 1 + op.p[1] / 5 % 16; break;
    case 2: count = kPage; break;
    default: count = 1 + op.p[1] / 5 % t.scratch.size(); break;
  }
  int64_t pos = positional ? 0 : static_cast<int64_t>(f.pos);
  if (positional) {
    switch (op.p[2] % 6) {
      case 0: pos = -static_cast<int64_t>(1 + op.p[2] / 6 % 4096); break;
      case 1: pos = static_cast<int64_t>(size); break;
      case 2: pos = static_cast<int64_t>(size + op.p[2] / 6 % (1ull << 40)); break;
      default: pos = static_cast<int64_t>(op.p[2] / 6 % size); break;
    }
  }
  // Writes stay in the thread's stripe: a write that would land elsewhere becomes a pwrite there.
  bool append = f.flags & O_APPEND;
  if (is_write && !append && pos >= 0 && static_cast<uint64_t>(pos) < size && Writable(f)) {
    if (static_cast<uint64_t>(pos) < lo || static_cast<uint64_t>(pos) >= hi) {
      positional = true;
      pos = static_cast<int64_t>(lo + op.p[3] % (hi - lo));
    }
    count = std::min<uint64_t>(count, hi - static_cast<uint64_t>(pos));
  }
  uint64_t valid = 0;
  uint8_t* buf = PickBuffer(t, r, op.p[4], count, &valid, is_write);
  uint64_t pattern = op.p[5];
  if (is_write && buf == t.scratch.data())
    for (uint64_t k = 0; k < count; ++k) buf[k] = static_cast<uint8_t>(pattern >> (k % 8 * 8)) ^ static_cast<uint8_t>(k);
  std::set<int> allowed;
  bool range_ok = true;  // a result in [1, valid] is allowed (partial copy before a fault)
  uint64_t expect_n = 0;
  // fs/read_write.c: ksys_pread64 (pos < 0), vfs_read/vfs_write (FMODE, access_ok,
  // rw_verify_area), then the module.
  bool kernel_ptr = reinterpret_cast<uint64_t>(buf) >= 0x800000000000ull;
  if (positional && pos < 0) allowed = {EINVAL};
  else if ((f.flags & O_PATH) || (is_write ? !Writable(f) : !Readable(f))) allowed = {EBADF};
  else if (kernel_ptr) allowed = {EFAULT};
  else if (static_cast<uint64_t>(pos) + count > static_cast<uint64_t>(INT64_MAX)) allowed = {EINVAL};
  else if (count == 0) expect_n = 0;
  else if (is_write && (append || static_cast<uint64_t>(pos) >= size)) allowed = {ENOSPC};
  else if (!is_write && static_cast<uint64_t>(pos) >= size) expect_n = 0;
  else {
    expect_n = std::min<uint64_t>(count, size - static_cast<uint64_t>(pos));
    if (valid < expect_n) {
      allowed = {EFAULT};
      range_ok = valid > 0;
    }
  }
  ssize_t rc = is_write ? (positional ? pwrite(f.fd, buf, count, pos) : write(f.fd, buf, count))
                        : (positional ? pread(f.fd, buf, count, pos) : read(f.fd, buf, count));
  int err = errno;
  std::string what = Fmt("%s(%s, %p, %" PRIu64 ", pos %" PRId64 ")", KindName(op.kind), d.path.c_str(), buf, count, pos);
  if (rc >= 0 && !allowed.empty() && range_ok && allowed.count(EFAULT) && static_cast<uint64_t>(rc) >= 1 &&
      static_cast<uint64_t>(rc) <= valid) {
    r->c->ok++;
  } else if (!Expect(r, idx, op, what.c_str(), rc, err, allowed)) {
    return;
  } else if (rc >= 0 && static_cast<uint64_t>(rc) != expect_n) {
    Failure(r, idx, &op, what + Fmt(" moved %zd bytes, expected %" PRIu64, rc, expect_n));
    return;
  }
  if (rc > 0 && !positional) f.pos = static_cast<uint64_t>(pos) + rc;
  if (rc > 0 && is_write && buf == t.scratch.data()) {  // read it back
    std::vector<uint8_t> back(rc);
    int rfd = FindFd(t, f.dev, true, false);
    if (rfd >= 0) {
      ssize_t got = pread(t.fds[rfd].fd, back.data(), rc, pos);
      if (got != rc || std::memcmp(back.data(), buf, rc) != 0) {
        Failure(r, idx, &op, what + Fmt(": pread of the %zd bytes written returned %zd and %s", rc, got,
                                        got == rc ? "different bytes" : "a short count"));
        return;
      }
      r->c->bytes_verified += rc;
    }
  }
}

void DoLseek(Run* r, ThreadState& t, long idx, const Op& op) {
  if (t.fds.empty()) return;
  Fd& f = t.fds[op.p[0] % t.fds.size()];
  int64_t size = static_cast<int64_t>(r->w->devices[f.dev].info.size);
  static const int kWhence[] = {SEEK_SET, SEEK_CUR, SEEK_END, SEEK_DATA, SEEK_HOLE, 7};
  int whence = kWhence[op.p[1] % 6];
  int64_t off;
  switch (op.p[2] % 7) {
    case 0: off = 0; break;
    case 1: off = static_cast<int64_t>(op.p[2] / 7 % size); break;
    case 2: off = size; break;
    case 3: off = -static_cast<int64_t>(op.p[2] / 7 % (2 * size)); break;
    case 4: off = static_cast<int64_t>(op.p[2] / 7 % (1ull << 50)); break;
    case 5: off = INT64_MAX - static_cast<int64_t>(op.p[2] / 7 % 4096); break;
    default: off = static_cast<int64_t>(op.p[2] / 7 % size) & ~static_cast<int64_t>(kPage - 1); break;
  }
  // fs/read_write.c generic_file_llseek_size with eof = the range's size, maxsize MAX_LFS_FILESIZE.
  std::set<int> allowed;
  int64_t cur = static_cast<int64_t>(f.pos), want = 0;
  if (f.flags & O_PATH) allowed = {EBADF};
  else {
    __int128 np = 0;
    switch (whence) {
      case SEEK_SET: np = off; break;
      case SEEK_CUR: np = off == 0 ? cur : static_cast<__int128>(cur) + off; break;
      case SEEK_END: np = static_cast<__int128>(size) + off; break;
      case SEEK_DATA: if (off < 0 || off >= size) allowed = {ENXIO}; np = off; break;
      case SEEK_HOLE: if (off < 0 || off >= size) allowed = {ENXIO}; np = size; break;
      default: allowed = {EINVAL};
    }
    if (allowed.empty() && (np < 0 || np > INT64_MAX)) allowed = {EINVAL};
    want = static_cast<int64_t>(np);
  }
  off_t rc = lseek(f.fd, off, whence);
  if (!Expect(r, idx, op, Fmt("lseek(%" PRId64 ", %d) from %" PRId64, off, whence, cur).c_str(), rc, errno, allowed) || rc < 0)
    return;
  if (rc != want) {
    Failure(r, idx, &op, Fmt("lseek(%" PRId64 ", %d) from %" PRId64 " returned %" PRId64 ", expected %" PRId64, off, whence,
                             cur, static_cast<int64_t>(rc), want));
    return;
  }
  f.pos = static_cast<uint64_t>(rc);
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
    child_run.result_fd = pfd[1];
    g_run = &child_run;
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

// ---- module unload / reload (barriers) ------------------------------------------------------

long DeleteModule(const std::string& name) { return syscall(SYS_delete_module, name.c_str(), O_NONBLOCK); }

// Lines of /proc/iomem naming needle; not resmem_edu's PCI regions (its edu devices' BARs).
std::vector<std::string> IomemLines(const char* needle) {
  std::vector<std::string> out;
  std::stringstream in(ReadText("/proc/iomem"));
  std::string l;
  while (std::getline(in, l))
    if (l.find(needle) != std::string::npos && l.find("resmem_edu") == std::string::npos) out.push_back(l);
  return out;
}

std::string LoadModule(World* w) {
  long rc = syscall(SYS_init_module, w->image.data(), w->image.size(), w->params.c_str());
  if (rc != 0) return Fmt("init_module(%s, \"%s\") failed: %s", w->module_file.c_str(), w->params.c_str(), strerror(errno));
  return "";
}

bool ModuleLoaded(const World& w) {
  struct stat st;
  return stat(("/sys/module/" + w.module_name + "/initstate").c_str(), &st) == 0;
}

void ReleaseAll(std::vector<ThreadState>& ts) {
  for (auto& t : ts) {
    for (auto& s : t.slots) ReleaseRange(s.addr, s.len, s.in_arena);
    for (auto& f : t.fds) close(f.fd);
    t.slots.clear();
    t.fds.clear();
  }
}

// Unload with nothing held must succeed and leave no trace; then load again with the same
// parameters and find the same devices.
void UnloadReload(Run* r, std::vector<ThreadState>& ts, long idx, const Op* op) {
  ReleaseAll(ts);
  long rc = DeleteModule(r->w->module_name);
  if (rc != 0) {
    Failure(r, idx, op, Fmt("delete_module(%s) with nothing held failed: %s (a leaked reference)",
                            r->w->module_name.c_str(), strerror(errno)));
    return;
  }
  auto left = IomemLines("resmem");
  if (!left.empty()) {
    Failure(r, idx, op, "after unload /proc/iomem still lists: " + left[0]);
    return;
  }
  struct stat st;
  for (const auto& d : r->w->devices)
    if (stat(d.path.c_str(), &st) == 0) {
      Failure(r, idx, op, d.path + " still exists after unload");
      return;
    }
  std::string e = LoadModule(r->w);
  if (!e.empty()) {
    Failure(r, idx, op, "reload: " + e);
    return;
  }
  r->c->reloads++;
  for (const auto& d : r->w->devices) {
    int fd = open(d.path.c_str(), O_RDONLY | O_CLOEXEC);
    resmem_info info{};
    if (fd < 0 || ioctl(fd, RESMEM_IOC_INFO, &info) != 0 || info.phys_addr != d.info.phys_addr ||
        info.size != d.info.size) {
      Failure(r, idx, op, d.path + " after reload is missing or describes another range");
      if (fd >= 0) close(fd);
      return;
    }
    close(fd);
  }
  if (IomemLines("resmem").size() != r->w->devices.size())
    Failure(r, idx, op, Fmt("after reload /proc/iomem lists %zu resmem entries for %zu devices",
                            IomemLines("resmem").size(), r->w->devices.size()));
}

void UnloadHeld(Run* r, std::vector<ThreadState>& ts, long idx, const Op& op) {
  // What pins the module: an open file (fops owner) or a mapping (it holds its file). An O_PATH
  // fd does not: it never calls the driver's open (fs/open.c do_dentry_open). With --p2p an open
  // edu file too (resmem_edu serves it).
  bool held = r->p2p && r->p2p->HoldsEduModule();
  for (auto& t : ts) {
    held |= !t.slots.empty();
    for (const auto& f : t.fds) held |= !(f.flags & O_PATH);
  }
  if (!held) {
    UnloadReload(r, ts, idx, &op);
    return;
  }
  long rc = DeleteModule(r->w->module_name);
  if (Expect(r, idx, op, "delete_module while fds/mappings are held", rc, errno, {EWOULDBLOCK, EBUSY})) r->c->unload_refused++;
  else if (rc == 0) {
    std::string e = LoadModule(r->w);  // keep the run going for the report
    if (!e.empty()) Diag("%s", e.c_str());
  }
}

// ---- kernel log -----------------------------------------------------------------------------

// Lines that mean the kernel found a bug (KASAN, lockdep, DEBUG_VM, WARN, Oops, kmemleak).
const char* BadKernelLine(const std::string& l) {
  static const char* kSigns[] = {"BUG:", "WARNING:", "KASAN", "possible circular locking",
                                 "inconsistent lock state", "possible recursive locking",
                                 "sleeping function called", "suspicious RCU usage",
                                 "general protection", "Oops", "kernel BUG", "Bad page",
                                 "list_add corruption", "list_del corruption", "unreferenced object",
                                 "UBSAN", "Unable to handle", "lock held when returning",
                                 "bad unlock balance", "DEBUG_LOCKS_WARN_ON", "Kernel panic",
                                 // include/linux/pgtable.h pmd_clear_bad & co (mm/pgtable-generic.c)
                                 "bad pmd", "bad pud", "bad pte", "bad p4d", "bad pgd", "Bad pagetable",
                                 "Corrupted page table"};
  for (const char* s : kSigns)
    if (l.find(s) != std::string::npos) return s;
  return nullptr;
}

// New records of /dev/kmsg since the last call: the first bad one, or "".
std::string DrainKmsg(std::optional<guest::KmsgSince>& kmsg) {
  if (!kmsg) return "";
  std::string first;
  for (const std::string& record : kmsg->Lines()) {
    const std::string line = Trim(record);
    if (first.empty() && BadKernelLine(line)) first = line;
  }
  return first;
}

// ---- KCOV: which of the module's instrumented sites the run reached ---------------------------
// On a kernel with KCOV the lane builds the module with KCOV_INSTRUMENT=y (kmod_lane.sh): each of
// its basic blocks calls __sanitizer_cov_trace_pc, which appends the call's return address, less
// the kernel's KASLR offset (kernel/kcov.c canonicalize_ip), to the buffer of the calling task
// when that task has enabled KCOV (Documentation/dev-tools/kcov.rst: KCOV_INIT_TRACE, mmap,
// KCOV_ENABLE). Every worker thread enables it for itself; after each op its PCs become offsets
// into the module's core (/proc/modules: base and size, read per epoch, as a reload moves it)
// and bits of a bitmap shared with the parent. What forked children and the barrier ops do in the
// module is not counted (other tasks; the main thread).
#define RESMEM_KCOV_INIT_TRACE _IOR('c', 1, unsigned long)
#define RESMEM_KCOV_ENABLE _IO('c', 100)
#define RESMEM_KCOV_DISABLE _IO('c', 101)
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

// Reads the module's core (base, size) from /proc/modules into g_kcov; 0,0 when not loaded.
void KcovFindModule(const std::string& name) {
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

// One worker thread's KCOV buffer, enabled for its lifetime.
class KcovThread {
 public:
  KcovThread() {
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
  ~KcovThread() { Close(); }
  // Folds the PCs since the last call into the shared bitmap.
  void Fold(Counters* c) {
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

 private:
  void Close() {
    if (cover_) {
      ioctl(fd_, RESMEM_KCOV_DISABLE, 0);
      munmap(cover_, kKcovWords * sizeof(unsigned long));
      cover_ = nullptr;
    }
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  int fd_ = -1;
  unsigned long* cover_ = nullptr;
};

// ---- running a list -------------------------------------------------------------------------

// The device mode's ops report through the run's counters and Failure.
class RunOutcome : public seq::Outcome {
 public:
  explicit RunOutcome(Run* r) : r_(r) {}
  void Ok() override { r_->c->ok++; }
  void ExpectedError() override { r_->c->expected_errors++; }
  void Fail(long index, const Op* op, const std::string& why) override { Failure(r_, index, op, why); }

 private:
  Run* r_;
};

// A barrier op: the device mode's part first (it may release the edu files that hold the
// module), then the module's unload attempt or unload + reload.
void Barrier(Run* r, std::vector<ThreadState>& ts, long idx, const Op& op) {
  if (r->p2p) r->p2p->Barrier(idx, op, op.kind == kUnloadReload);
  if (r->stop) return;
  if (op.kind == kUnloadHeld) UnloadHeld(r, ts, idx, op);
  else UnloadReload(r, ts, idx, &op);
}

// One op on worker th.
void DoOp(Run* run, ThreadState& t, int th, long idx, const Op& op) {
  switch (op.kind) {
    case kOpen: DoOpen(run, t, idx, op); break;
    case kClose: DoClose(run, t, idx, op); break;
    case kIoctl: DoIoctl(run, t, idx, op); break;
    case kMmap: DoMmap(run, t, idx, op); break;
    case kMunmap: DoMunmap(run, t, idx, op); break;
    case kMremap: DoMremap(run, t, idx, op); break;
    case kMadvise: DoMadvise(run, t, idx, op); break;
    case kTouch: DoTouch(run, t, idx, op); break;
    case kRead: case kWrite: case kPread: case kPwrite: DoReadWrite(run, t, idx, op); break;
    case kLseek: DoLseek(run, t, idx, op); break;
    case kFork: DoFork(run, t, idx, op); break;
    default:
      if (run->p2p && op.kind >= kP2pFirst) run->p2p->Do(th, idx, op, op.kind - kP2pFirst);
      break;
  }
}

// Each worker's arena, scratch buffer and guard page; false when they cannot be mapped.
bool SetupThreads(std::vector<ThreadState>* ts) {
  const int threads = static_cast<int>(ts->size());
  for (int i = 0; i < threads; ++i) {
    ThreadState& t = (*ts)[i];
    t.id = i;
    t.nthreads = threads;
    t.arena = static_cast<uint8_t*>(mmap(nullptr, kArenaLen, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
    t.scratch.assign(96 * 1024, 0);
    t.guard = static_cast<uint8_t*>(mmap(nullptr, 2 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (t.arena == MAP_FAILED || t.guard == MAP_FAILED) return false;
    // PROT_NONE, not unmapped: an unmapped page could be taken by a later mmap.
    mprotect(t.guard + kPage, kPage, PROT_NONE);
  }
  return true;
}

// Runs ops[keep] in this process (the caller forked it). Returns "" or the failure.
std::string Execute(World* w, Counters* c, const std::vector<Op>& ops, const std::vector<long>& keep,
                    int threads, int result_fd) {
  Run run;
  run.w = w;
  run.c = c;
  run.result_fd = result_fd;
  g_run = &run;
  run.kmsg.emplace();
  RunOutcome outcome(&run);
  std::unique_ptr<seq::p2p::Executor> p2p;
  if (g_p2p) {
    p2p.reset(new seq::p2p::Executor(*g_p2p, g_p2p_counters, &outcome, threads));
    std::string e = p2p->Start();
    if (!e.empty()) return "device mode: " + e;
    run.p2p = p2p.get();
  }
  struct sigaction sa {};
  sa.sa_sigaction = OnSignal;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGSEGV, &sa, nullptr);
  sigaction(SIGBUS, &sa, nullptr);
  std::vector<ThreadState> ts(threads);
  if (!SetupThreads(&ts)) return "cannot reserve the thread arenas";
  size_t k = 0;
  while (k < keep.size() && !run.stop) {
    // An epoch: the ops up to the next barrier, each thread its own, concurrently.
    size_t end = k;
    while (end < keep.size() && ops[keep[end]].kind != kUnloadHeld && ops[keep[end]].kind != kUnloadReload) ++end;
    std::vector<std::thread> workers;
    if (g_kcov.on) KcovFindModule(w->module_name);
    for (int th = 0; th < threads; ++th) {
      workers.emplace_back([&, th] {
        ThreadState& t = ts[th];
        KcovThread kcov;
        for (size_t j = k; j < end && !run.stop; ++j) {
          const Op& op = ops[keep[j]];
          if (op.thread != th) continue;
          g_current_op = keep[j];
          g_current_kind = op.kind;
          g_current_thread = &t;
          c->ops++;
          c->kinds[op.kind]++;
          DoOp(&run, t, th, keep[j], op);
          kcov.Fold(c);
        }
      });
    }
    for (auto& wk : workers) wk.join();
    std::string bad = DrainKmsg(run.kmsg);
    if (!bad.empty()) Failure(&run, end ? keep[end - 1] : -1, nullptr, "kernel log: " + bad);
    if (run.p2p && !run.stop) run.p2p->EpochEnd(end ? keep[end - 1] : -1);
    if (run.stop) break;
    if (end < keep.size()) {
      const Op& op = ops[keep[end]];
      g_current_op = keep[end];
      c->ops++;
      c->kinds[op.kind]++;
      Barrier(&run, ts, keep[end], op);
      bad = DrainKmsg(run.kmsg);
      if (!bad.empty()) Failure(&run, keep[end], &op, "kernel log: " + bad);
    }
    k = end + 1;
  }
  ReleaseAll(ts);
  if (run.p2p && !run.stop) run.p2p->Finish();
  std::string bad = DrainKmsg(run.kmsg);
  if (!bad.empty() && !run.failed) Failure(&run, -1, nullptr, "kernel log after the run: " + bad);
  return run.failed ? run.failure : "";
}

// Runs a list in a child process with a time limit: "" or the failure.
std::string RunInChild(World* w, Counters* c, const std::vector<Op>& ops, const std::vector<long>& keep,
                       int threads, double limit_s) {
  if (!ModuleLoaded(*w)) {
    std::string e = LoadModule(w);
    if (!e.empty()) return "the module is not loaded and cannot be: " + e;
  }
  int pfd[2];
  if (pipe(pfd) != 0) return "pipe failed";
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(pfd[0]);
    std::string f = Execute(w, c, ops, keep, threads, pfd[1]);
    if (!f.empty()) {
      (void)!write(pfd[1], f.data(), f.size());
      _exit(1);
    }
    _exit(0);
  }
  close(pfd[1]);
  double t0 = Now();
  int status = 0;
  bool timed_out = false;
  for (;;) {
    pid_t got = waitpid(pid, &status, WNOHANG);
    if (got == pid) break;
    if (Now() - t0 > limit_s) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      timed_out = true;
      break;
    }
    usleep(20000);
  }
  std::string msg;
  char buf[4096];
  ssize_t n;
  while ((n = read(pfd[0], buf, sizeof buf)) > 0) msg.append(buf, n);
  close(pfd[0]);
  if (timed_out) return Fmt("the run did not finish in %.0f s (hang): %s", limit_s, msg.c_str());
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  if (msg.empty()) msg = Fmt("the run ended with status 0x%x", status);
  return msg;
}

// What kind of failure a message reports: "mmap", "kernel log", "signal 7", "pagemap" ...: the
// text after the op's "): " up to the first '(' or ':'. Shrinking keeps it.
std::string Signature(const std::string& msg) {
  size_t a = msg.find("): ");
  std::string s = a == std::string::npos ? msg : msg.substr(a + 3);
  size_t b = s.find_first_of("(:");
  return s.substr(0, std::min<size_t>(b, 40));
}

// ddmin over the kept op indexes: the smallest list that still fails the same way, within the
// time budget.
std::vector<long> Shrink(World* w, Counters* c, const std::vector<Op>& ops, std::vector<long> keep, int threads,
                         double budget_s, const std::string& signature, int* runs) {
  double t0 = Now();
  size_t n = 2;
  while (keep.size() >= 2 && Now() - t0 < budget_s) {
    size_t chunk = (keep.size() + n - 1) / n;
    bool reduced = false;
    for (size_t i = 0; i < n && Now() - t0 < budget_s; ++i) {
      std::vector<long> comp;
      for (size_t j = 0; j < keep.size(); ++j)
        if (j / chunk != i) comp.push_back(keep[j]);
      if (comp.empty() || comp.size() == keep.size()) continue;
      ++*runs;
      std::string f = RunInChild(w, c, ops, comp, threads, 120);
      if (!f.empty() && Signature(f) == signature) {
        keep = comp;
        n = std::max<size_t>(n - 1, 2);
        reduced = true;
        break;
      }
    }
    if (!reduced) {
      if (n >= keep.size()) break;
      n = std::min(keep.size(), n * 2);
    }
  }
  return keep;
}

std::string KeepList(const std::vector<long>& keep) {
  std::string s;
  for (size_t i = 0; i < keep.size();) {
    size_t j = i;
    while (j + 1 < keep.size() && keep[j + 1] == keep[j] + 1) ++j;
    s += (s.empty() ? "" : ",") + (j == i ? Fmt("%ld", keep[i]) : Fmt("%ld-%ld", keep[i], keep[j]));
    i = j + 1;
  }
  return s;
}

bool ParseKeep(const std::string& text, size_t n, std::vector<long>* out) {
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    long a, b;
    if (std::sscanf(item.c_str(), "%ld-%ld", &a, &b) == 2) {
    } else if (std::sscanf(item.c_str(), "%ld", &a) == 1) {
      b = a;
    } else {
      return false;
    }
    if (a < 0 || b < a || static_cast<size_t>(b) >= n) return false;
    for (long i = a; i <= b; ++i) out->push_back(i);
  }
  return true;
}

std::string Describe(const Op& op) {
  return Fmt("%s thread %d p=[%" PRIx64 " %" PRIx64 " %" PRIx64 " %" PRIx64 " %" PRIx64 " %" PRIx64 "]",
             KindName(op.kind), op.thread, op.p[0], op.p[1], op.p[2], op.p[3], op.p[4], op.p[5]);
}

// kmemleak: scans and returns the reports ("" when clean, "-" when kmemleak is not there).
std::string KmemleakScan() {
  const char* path = "/sys/kernel/debug/kmemleak";
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return "-";
  (void)!write(fd, "scan", 4);
  close(fd);
  std::string rep = ReadText(path);
  return rep;
}

void KmemleakClear() {
  int fd = open("/sys/kernel/debug/kmemleak", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  (void)!write(fd, "clear", 5);
  close(fd);
}

// --p2p: what the device ops work with, read into *cfg, and their counters, shared with the runs.
// "" or why not.
std::string SetupDeviceMode(const std::string& list, const std::string& provider_file, seq::p2p::Config* cfg) {
  std::string e = seq::p2p::Setup(list, provider_file, cfg);
  if (!e.empty()) return e;
  void* m = mmap(nullptr, sizeof(seq::p2p::Counters), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return "cannot map the device mode's counters";
  g_p2p_counters = new (m) seq::p2p::Counters();
  g_p2p = cfg;
  return "";
}

// --p2p, after the runs passed: the provider at rest, unloaded and loaded again; false (said) if not.
bool FinishDeviceMode(uint64_t seed) {
  std::string e = seq::p2p::FinalUnloadReload(*g_p2p);
  if (!e.empty()) return Diag("FAIL (seed 0x%" PRIx64 "): %s", seed, e.c_str()), false;
  Diag("final: %s at rest, unloaded and loaded again", g_p2p->provider_name.c_str());
  return true;
}

int Usage(const char* why) {
  std::fprintf(stderr,
               "resmem_seq: %s\nusage: resmem_seq [--seed S] [--ops N] [--threads T] [--module-name resmem] "
               "[--module-file /resmem.ko] [--keep I,J,K-L] [--no-shrink] [--shrink-seconds S] [--list] [--huge] [--kcov-sites N]\n"
               "                  [--p2p /dev/resmem_eduN[,...] [--provider-file /nv_p2p_standin.ko]]\n"
               "  --p2p: the module is resmem_edu (/resmem_edu.ko) unless --module-name/--module-file say otherwise\n",
               why);
  return 2;
}

int Main(int argc, char** argv) {
  uint64_t seed = 0;
  bool seed_given = false, shrink = true, list = false;
  size_t nops = 10000;
  int threads = 4;
  double shrink_s = 300;
  uint64_t kcov_sites = 0;  // the module's instrumented sites (kmod_lane.sh counts them); 0: unknown
  std::string keep_text, p2p_list, provider_file = "/nv_p2p_standin.ko";
  bool module_named = false, module_filed = false;
  World w;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&](const char* what) -> const char* {
      if (i + 1 >= argc) {
        Usage((std::string(what) + " needs a value").c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--seed") seed = std::strtoull(next("--seed"), nullptr, 0), seed_given = true;
    else if (a == "--ops") nops = std::strtoull(next("--ops"), nullptr, 0);
    else if (a == "--threads") threads = std::atoi(next("--threads"));
    else if (a == "--module-name") w.module_name = next("--module-name"), module_named = true;
    else if (a == "--module-file") w.module_file = next("--module-file"), module_filed = true;
    else if (a == "--p2p") p2p_list = next("--p2p");
    else if (a == "--provider-file") provider_file = next("--provider-file");
    else if (a == "--keep") keep_text = next("--keep");
    else if (a == "--no-shrink") shrink = false;
    else if (a == "--shrink-seconds") shrink_s = std::atof(next("--shrink-seconds"));
    else if (a == "--list") list = true;
    else if (a == "--huge") g_huge_optin = true;
    else if (a == "--kcov-sites") kcov_sites = std::strtoull(next("--kcov-sites"), nullptr, 0);
    else return Usage(("unknown argument '" + a + "'").c_str());
  }
  if (threads < 1 || threads > 16) return Usage("--threads must be 1..16");
  if (nops == 0) return Usage("--ops must be at least 1");
  const bool p2p = !p2p_list.empty();
  if (p2p && !module_named) w.module_name = "resmem_edu";
  if (p2p && !module_filed) w.module_file = "/resmem_edu.ko";
  if (!seed_given) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    seed = static_cast<uint64_t>(ts.tv_sec) * 1000003u ^ static_cast<uint64_t>(ts.tv_nsec);
  }
  std::vector<Op> ops = Generate(seed, nops, threads, p2p);
  std::vector<long> keep;
  if (!keep_text.empty()) {
    if (!ParseKeep(keep_text, nops, &keep)) return Usage(("--keep '" + keep_text + "': expected indexes below --ops like 3,17,40-45").c_str());
  } else {
    for (size_t i = 0; i < nops; ++i) keep.push_back(static_cast<long>(i));
  }
  std::string cmd = Fmt("resmem_seq --seed 0x%" PRIx64 " --ops %zu --threads %d --module-name %s --module-file %s%s", seed,
                        nops, threads, w.module_name.c_str(), w.module_file.c_str(), g_huge_optin ? " --huge" : "");
  if (p2p) cmd += " --p2p " + p2p_list + (provider_file != "/nv_p2p_standin.ko" ? " --provider-file " + provider_file : "");
  Diag("seed 0x%" PRIx64 ": replay with: %s%s", seed, cmd.c_str(), keep_text.empty() ? "" : (" --keep " + keep_text).c_str());
  if (list) {
    for (long i : keep) std::printf("%ld %s\n", i, Describe(ops[i]).c_str());
    return 0;
  }
  std::string e = ReadModuleSetup(&w);
  if (e.empty() && g_huge_optin) {
    // Ask for 2 MiB entries now and on every reload.
    int fd = open(("/sys/module/" + w.module_name + "/parameters/huge").c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, "1", 1) != 1) e = "--huge: cannot write /sys/module/" + w.module_name + "/parameters/huge";
    if (fd >= 0) close(fd);
    size_t at = w.params.find("huge=");
    if (at != std::string::npos) w.params.replace(at, 6, "huge=Y");
    else w.params += " huge=Y";
  }
  if (e.empty()) e = FindDevices(&w);
  seq::p2p::Config p2p_cfg;
  if (e.empty() && p2p) e = SetupDeviceMode(p2p_list, provider_file, &p2p_cfg);
  if (!e.empty()) {
    Diag("setup: %s", e.c_str());
    return 2;
  }
  {
    std::ifstream f(w.module_file, std::ios::binary);
    w.image.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    if (w.image.empty()) {
      Diag("setup: cannot read the module file %s (needed to reload after unload; --module-file)", w.module_file.c_str());
      return 2;
    }
  }
  std::string rs;
  for (const auto& r : w.ranges) rs += Fmt(" [0x%" PRIx64 "+0x%" PRIx64 ")", r.start, r.size);
  Diag("module %s (%s): ranges%s; %zu devices", w.module_name.c_str(), w.params.c_str(), rs.c_str(), w.devices.size());
  // kmemleak before: what the kernel already reports is not ours; clear it.
  std::string before = KmemleakScan();
  bool have_kmemleak = before != "-";
  if (have_kmemleak) {
    size_t n = 0;
    for (size_t p = 0; (p = before.find("unreferenced object", p)) != std::string::npos; ++p) ++n;
    Diag("kmemleak: %zu unreferenced objects before the run (not the module's: marked reported)", n);
    KmemleakClear();
  } else {
    Diag("kmemleak: not available on this kernel (/sys/kernel/debug/kmemleak): leak check left to the debug kernel lane");
  }

  void* shm = mmap(nullptr, sizeof(Counters), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  Counters* c = new (shm) Counters();
  if (access("/sys/kernel/debug/kcov", R_OK | W_OK) == 0) {
    void* bm = mmap(nullptr, kKcovSpan / 8, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (bm != MAP_FAILED) {
      g_kcov.bitmap = static_cast<uint8_t*>(bm);
      g_kcov.kaslr = KaslrOffset();
      g_kcov.on = true;
    }
  }
  if (!g_kcov.on) Diag("kcov: not available on this kernel (/sys/kernel/debug/kcov): no coverage figure");
  double t0 = Now();
  std::string failure = RunInChild(&w, c, ops, keep, threads, 3000);
  double dt = Now() - t0;
  std::string kinds;
  for (int k = 0; k < kNumKinds; ++k)
    if (Weight(k, p2p) || c->kinds[k]) kinds += Fmt(" %s=%" PRIu64, KindName(k), c->kinds[k].load());
  Diag("ran %" PRIu64 " ops in %.1f s (%.0f ops/s), %d threads:%s", c->ops.load(), dt, c->ops.load() / std::max(dt, 1e-9),
      threads, kinds.c_str());
  Diag("results: %" PRIu64 " succeeded as expected, %" PRIu64 " failed with an expected errno; %" PRIu64
      " mappings; pagemap: %" PRIu64 " pages of pages-mode mappings read, %" PRIu64 " present, every PFN its own device's and "
      "inside the ranges; %" PRIu64 " pages of pfnmap mappings read (a hole to pagemap: mm/pagewalk.c); %" PRIu64
      " touched pages matched the device's bytes; %" PRIu64 " bytes written and read back; %" PRIu64
      " forks; %" PRIu64 " unloads refused while held; %" PRIu64 " unload+reloads",
      c->ok.load(), c->expected_errors.load(), c->mappings.load(), c->pfn_checked.load(), c->pages_present.load(),
      c->pfnmap_pages_walked.load(), c->content_checked.load(),
      c->bytes_verified.load(), c->forks.load(), c->unload_refused.load(), c->reloads.load());
  if (g_p2p) seq::p2p::Report(*g_p2p_counters);
  if (g_kcov.on) {
    uint64_t sites = 0;
    for (uint64_t i = 0; i < kKcovSpan / 8; ++i) sites += __builtin_popcount(g_kcov.bitmap[i]);
    const std::string of = kcov_sites ? Fmt(" of its %" PRIu64 " = %.1f%%", kcov_sites, 100.0 * sites / kcov_sites) : "";
    Diag("kcov: the workers' ops reached %" PRIu64 " distinct instrumented sites of %s%s (%" PRIu64
         " PCs in the module, %" PRIu64 " elsewhere, %" PRIu64 " buffer overflows; KASLR offset 0x%" PRIx64 ")",
         sites, w.module_name.c_str(), of.c_str(), c->kcov_pcs.load(), c->kcov_outside.load(),
         c->kcov_overflows.load(), g_kcov.kaslr);
  }
  if (!failure.empty()) {
    Diag("FAIL (seed 0x%" PRIx64 "): %s", seed, failure.c_str());
    if (shrink) {
      int runs = 0;
      std::vector<long> small = Shrink(&w, c, ops, keep, threads, shrink_s, Signature(failure), &runs);
      std::string again = RunInChild(&w, c, ops, small, threads, 300);
      Diag("shrunk to %zu ops in %d runs%s; reproducer:", small.size(), runs,
          again.empty() ? " (the shrunk list PASSES when run alone: the failure depends on timing)" : "");
      Diag("  %s --keep %s", cmd.c_str(), KeepList(small).c_str());
      if (!again.empty()) Diag("  which fails with: %s", again.c_str());
      for (size_t i = 0; i < small.size() && i < 40; ++i) Diag("    %ld %s", small[i], Describe(ops[small[i]]).c_str());
    }
    if (g_p2p) seq::p2p::RestoreSettings(*g_p2p);
    return 1;
  }
  // The end: nothing held, unload, nothing left in /proc/iomem, kmemleak clean, load again.
  if (!ModuleLoaded(w)) {
    e = LoadModule(&w);
    if (!e.empty()) return Diag("FAIL: %s", e.c_str()), 1;
  }
  if (DeleteModule(w.module_name) != 0) {
    Diag("FAIL (seed 0x%" PRIx64 "): unload after the run failed: %s (a leaked reference)", seed, strerror(errno));
    return 1;
  }
  auto left = IomemLines("resmem");
  if (!left.empty()) {
    Diag("FAIL (seed 0x%" PRIx64 "): after the final unload /proc/iomem still lists: %s", seed, left[0].c_str());
    return 1;
  }
  Diag("final unload: /proc/iomem has no resmem entry");
  int rc = 0;
  if (have_kmemleak) {
    sleep(6);  // kmemleak reports objects older than 5 s (mm/kmemleak.c jiffies_min_age)
    KmemleakScan();
    std::string rep = KmemleakScan();
    if (rep.find("unreferenced object") != std::string::npos) {
      Diag("FAIL (seed 0x%" PRIx64 "): kmemleak after the run and unload:", seed);
      std::stringstream in(rep);
      std::string l;
      for (int i = 0; i < 60 && std::getline(in, l); ++i) Diag("  %s", l.c_str());
      KmemleakClear();
      rc = 1;
    } else {
      Diag("kmemleak: clean after the run and unload");
    }
  }
  e = LoadModule(&w);
  if (!e.empty()) return Diag("FAIL: %s", e.c_str()), 1;
  if (g_p2p && !FinishDeviceMode(seed)) rc = 1;
  if (rc == 0) Diag("PASS: seed 0x%" PRIx64 ", %" PRIu64 " ops", seed, c->ops.load());
  return rc;
}

}  // namespace
}  // namespace resmem

int main(int argc, char** argv) { return resmem::Main(argc, argv); }
