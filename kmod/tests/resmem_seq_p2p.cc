// resmem_seq's device mode: the provider's contexts and allocations, the edu device's P2P and
// dma-buf transfers, BAR mappings, and the oracle of each (resmem_seq_p2p.h says what and why).
#include "kmod/tests/resmem_seq_p2p.h"

#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include "backends/fault/rng.h"
#include "kmod/tests/resmem_seq_pins.h"
#include "kmod/tests/resmem_seq_util.h"
#include "kmod/tests/tap_diag.h"
#include "kmod/uapi/nv_p2p_standin_ioctl.h"
#include "kmod/uapi/resmem_edu_ioctl.h"
#include "kmod/uapi/resmem_edu_p2p_ioctl.h"

namespace resmem::seq::p2p {
namespace {

using guest::Diag;

constexpr uint64_t kGpuPage = NV_P2P_STANDIN_GPU_PAGE;
constexpr uint64_t kCpuPage = 4096;
// Allocations are 1 to 4 GPU pages and each thread holds at most kCtxPerThread contexts of
// kAllocsPerCtx allocations and kBufsPerThread dma-bufs: the run never fills the 64 MiB BAR.
constexpr uint64_t kMaxAllocPages = 4;
constexpr size_t kCtxPerThread = 2, kAllocsPerCtx = 4, kEdusPerThread = 2, kMapsPerThread = 4,
                 kBufsPerThread = 2;

enum Kind {
  kCtxOpen, kCtxClose, kAlloc, kFree, kWrite, kFlush, kStats, kEduOpen, kEduClose, kBarMap,
  kBarRead, kBufExport, kBufWrite, kBufClose
};
const char* const kNames[kKinds] = {"ctx-open",  "ctx-close", "alloc",         "free",
                                    "p2p-write", "p2p-flush", "p2p-stats",     "edu-open",
                                    "edu-close", "bar-map",   "bar-read",      "dmabuf-export",
                                    "dmabuf-write", "dmabuf-close"};
// Transfers dominate the time (a 2 KiB piece is two ~100 ms edu commands under TCG); frees come
// often, to meet transfers into what they free.
const int kWeights[kKinds] = {150, 100, 700, 600, 1800, 250, 200, 200, 120, 450, 550, 250, 300, 150};

bool WriteText(const std::string& path, const std::string& value) {
  std::ofstream f(path);
  f << value;
  f.flush();
  return static_cast<bool>(f);
}

// A result the way the messages print it: the return value, or -1 and the errno's name.
std::string Res(long rc, int err) { return rc >= 0 ? std::to_string(rc) : std::string("-1 ") + guest::ErrName(err); }

// The outcomes an op may have: 0 for success, errnos for the failures.
using Want = std::set<int>;

std::string WantStr(const Want& w) {
  std::string s;
  for (int e : w) s += (s.empty() ? "" : "|") + std::string(e ? guest::ErrName(e) : "success");
  return s;
}

// ---- reads that may fault -------------------------------------------------------------------

thread_local sigjmp_buf* tl_jump = nullptr;

// Copies n bytes out of a BAR mapping; false when a read faulted (SIGBUS: no allocation of the
// mapping's context holds that page any more).
bool GuardedCopy(void* to, const uint8_t* from, size_t n) {
  sigjmp_buf jump;
  volatile bool ok = false;
  tl_jump = &jump;
  if (sigsetjmp(jump, 1) == 0) {
    const volatile uint8_t* src = from;
    for (size_t i = 0; i < n; ++i) static_cast<uint8_t*>(to)[i] = src[i];
    ok = true;
  }
  tl_jump = nullptr;
  return ok;
}

// ---- modules ----------------------------------------------------------------------------------

std::string LoadProvider(const Config& cfg, const std::string& params) {
  if (syscall(SYS_init_module, cfg.provider_image.data(), cfg.provider_image.size(), params.c_str()) != 0)
    return Fmt("init_module(%s, \"%s\") failed: %s", cfg.provider_file.c_str(), params.c_str(), strerror(errno));
  return "";
}

std::string ParamPath(const Config& cfg, const char* p) { return "/sys/module/" + cfg.provider_name + "/parameters/" + p; }

// The provider's two revocation delays (nv_p2p_standin.c revoke_delay_ms, release_delay_ms).
void WriteDelays(const Config& cfg, int revoke_ms, int release_ms) {
  WriteText(ParamPath(cfg, "revoke_delay_ms"), std::to_string(revoke_ms));
  WriteText(ParamPath(cfg, "release_delay_ms"), std::to_string(release_ms));
}

// The provider loaded with its own parameters (reloaded if a barrier loaded it with a small
// window; nothing may hold it) and its own revocation delays. "" or why not.
std::string OwnSettings(const Config& cfg) {
  if (ModuleLoaded(cfg.provider_name) && "bar_reserve=" + ReadValue(ParamPath(cfg, "bar_reserve")) != cfg.provider_params &&
      DeleteModule(cfg.provider_name) != 0)
    return "cannot unload " + cfg.provider_name + " to load it with its own parameters: " + strerror(errno);
  if (!ModuleLoaded(cfg.provider_name)) {
    std::string e = LoadProvider(cfg, cfg.provider_params);
    if (!e.empty()) return e;
  }
  WriteDelays(cfg, cfg.revoke_delay_ms, cfg.release_delay_ms);
  return "";
}

// The provider's INFO through a context of its own, closed again. "" or why not.
std::string ProviderInfo(const Config& cfg, nv_p2p_standin_info* info) {
  *info = nv_p2p_standin_info{};
  int fd = open(cfg.provider_dev.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return "open " + cfg.provider_dev + ": " + strerror(errno);
  long rc = ioctl(fd, NV_P2P_STANDIN_IOC_INFO, info);
  int err = errno;
  close(fd);
  return rc ? std::string("INFO: ") + strerror(err) : "";
}

// What is not at rest: "" when nothing is pinned, DMA-mapped, exported or allocated and the
// counters only a driver bug raises (revoked tables the callback did not free, put_pages after a
// revocation) are where they were (base_*).
std::string NotAtRest(const nv_p2p_standin_info& i, uint32_t base_put, uint32_t base_unfreed) {
  if (!i.live_tables && !i.dma_mappings && !i.dmabufs && !i.pinned_bytes && !i.allocated_bytes &&
      i.put_after_revoke == base_put && i.unfreed_tables == base_unfreed)
    return "";
  return Fmt("provider: %u live tables, %u DMA mappings, %u dma-bufs, %" PRIu64 " bytes pinned, %" PRIu64
             " bytes allocated, %u revoked tables not freed (%u before), %u put_pages after a revocation (%u before)",
             i.live_tables, i.dma_mappings, i.dmabufs, static_cast<uint64_t>(i.pinned_bytes),
             static_cast<uint64_t>(i.allocated_bytes), i.unfreed_tables, base_unfreed, i.put_after_revoke, base_put);
}

// ---- shapes of requests -----------------------------------------------------------------------

// Thread th's bytes of GPU memory: those whose offset o from a 64 KiB boundary has
// ((o + 32 KiB) mod 64 KiB) / S == th, S = 64 KiB / threads: the stripe of the middle thread
// straddles each GPU page boundary, so its transfers cross a page table entry. Gives the
// `pick`-th non-empty piece of the stripe inside [0, len) of a range that starts on a GPU page.
bool StripeSpan(uint64_t len, int th, int nth, uint64_t pick, uint64_t* lo, uint64_t* hi) {
  const int64_t s = static_cast<int64_t>((kGpuPage / nth) & ~7ull);
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (uint64_t k = 0; k <= len / kGpuPage; ++k) {
    int64_t a = static_cast<int64_t>(k * kGpuPage) - static_cast<int64_t>(kGpuPage / 2) + th * s;
    int64_t b = std::min<int64_t>(a + s, static_cast<int64_t>(len));
    a = std::max<int64_t>(a, 0);
    if (b >= a + 8) spans.emplace_back(a, b);
  }
  if (spans.empty()) return false;
  std::tie(*lo, *hi) = spans[pick % spans.size()];
  return true;
}

// Bytes of a transfer: 0 (a pin only, P2P_WRITE) in a quarter, else 8 B to 2 KiB (one piece,
// two across a 64 KiB boundary) or, in 4 of 10, up to 6 KiB (two to four pieces), so that a
// revocation can meet a transfer between its pieces.
uint64_t DataLen(uint64_t p, bool may_be_zero) {
  if (p % 20 < 5) return may_be_zero ? 0 : 8;
  return p % 20 < 12 ? 8 + (p / 20) % 2041 : 2049 + (p / 20) % 4096;
}

// Commands of a transfer of n bytes at offset off of a mapped range: two per piece, a piece up
// to RESMEM_EDU_PIECE bytes and never across a 64 KiB page (resmem_edu_p2p.c edu_p2p_transfer).
uint32_t Commands(uint64_t off, uint64_t n) {
  uint32_t k = 0;
  while (n) {
    const uint64_t w = std::min<uint64_t>(std::min<uint64_t>(n, RESMEM_EDU_PIECE), kGpuPage - off % kGpuPage);
    off += w;
    n -= w;
    k += 2;
  }
  return k;
}

std::vector<uint8_t> Pattern(uint64_t seed, uint64_t n) {
  DeterministicRng rng(seed);
  std::vector<uint8_t> b(n);
  for (auto& x : b) x = static_cast<uint8_t>(rng.NextU64());
  return b;
}

// ---- what the run holds ---------------------------------------------------------------------

// The shared registry (guarded by Impl::mu). Records are never removed: a freed allocation
// stays a target (its pins must be refused).
struct CtxRec {
  int owner;
  uint64_t p2p_token;
  uint32_t vas;           // vaSpaceToken
  bool fd_open = true;
  int maps = 0;           // BAR mappings of it: each keeps the file, so the context, alive
  bool alive = true;      // the file is not released: its allocations are its own
  uint64_t version = 0;   // odd while its set of allocations may be changing
};

struct AllocRec {
  uint32_t ctx;
  uint64_t va, len, bar_off;
  bool live = true;       // its context holds it (not freed)
  int dmabufs = 0;        // open dma-bufs of it: they keep its BAR pages
  bool changing = false;  // a FREE, its context's end or a dma-buf's close may be releasing it
  int writers = 0;        // P2P_WRITEs with data under way into it (FREE aims at them)
};

// A thread's own files and mappings.
struct CtxFd {
  int fd;
  uint32_t ctx;
};
struct EduFd {
  int fd;
  uint32_t id, dev;  // dev: which of Config::edu_paths
  bool holds_provider;  // a P2P_WRITE got past the argument checks: symbol_get of the calls
  uint64_t pin_calls;   // such P2P_WRITEs: each pins at most once
};
struct BarMap {
  uint8_t* addr;
  uint64_t len;
  uint32_t ctx;
  uint64_t va;
};
struct BufFd {
  int fd;
  uint32_t alloc, ctx;
  uint64_t va, len, bar_off;  // the dma-buf's range, and where in the BAR it starts
};
struct Mine {
  std::vector<CtxFd> ctxs;
  std::vector<EduFd> edus;
  std::vector<BarMap> maps;
  std::vector<BufFd> bufs;
};

// One P2P_WRITE as built from an op's words.
struct WriteReq {
  resmem_edu_p2p_write w{};
  uint32_t alloc = 0, ctx = 0;  // the target (the tokens are its context's unless changed)
  uint64_t target_va = 0;
  int owner = 0;
  bool early = false;      // refused on its arguments before any pin (uapi's first EINVAL)
  bool tokens_ok = true;   // the tokens are the target context's
  bool bad_data = false;   // data is NULL: EFAULT once the pin is there
  std::vector<uint8_t> data;
};

// What a P2P_WRITE met: its target context's version and coverage before and after, and the
// bound on the P2P window's use by others.
struct WriteSnap {
  uint64_t version0 = 0, version1 = 0;
  int cover = -1;  // the live allocation holding the range at the start, or -1
  AllocRec cover_rec{};
  uint64_t writing = 0;  // counted in cover's writers and pending on the device: its id
  PinClaim pin;          // its use of the bound on the P2P window (resmem_seq_pins.h)
  bool stable() const { return version0 == version1 && version0 % 2 == 0; }
};

}  // namespace

const char* KindName(int k) { return k >= 0 && k < kKinds ? kNames[k] : "?"; }
int Weight(int k) { return k >= 0 && k < kKinds ? kWeights[k] : 0; }

void EscapeGuardedRead() {
  if (!tl_jump) return;
  sigjmp_buf* j = tl_jump;
  tl_jump = nullptr;
  siglongjmp(*j, 1);
}

struct Executor::Impl {
  Impl(const Config& cfg_, Counters* c_, Outcome* out_, int threads)
      : cfg(cfg_), c(c_), out(out_), nthreads(threads), mine(threads), pending(cfg_.edu_paths.size()) {}

  const Config& cfg;
  Counters* c;
  Outcome* out;
  const int nthreads;
  std::vector<Mine> mine;  // by thread

  std::mutex mu;  // the registry:
  std::vector<CtxRec> ctxs;
  std::vector<AllocRec> allocs;
  PinLedger pins;  // the bound on the P2P window's use
  // P2P_WRITEs with data under way, per device, oldest first: (pin record id or 0, allocation).
  // The device runs one at a time, in about this order: the oldest is likely the one it runs.
  std::vector<std::vector<std::pair<uint64_t, int>>> pending;
  uint64_t next_write = 1;
  uint32_t next_edu = 0;
  std::atomic<int> revoking{0};          // FREEs and context ends under way
  std::atomic<uint64_t> revocations{0};  // ... begun
  // The provider as loaded now (set by Start and by reloads, while no worker runs).
  uint64_t window = 0;
  uint32_t table_version = 0, base_put = 0, base_unfreed = 0;

  // -- reporting
  bool Expect(long idx, const Op& op, const std::string& what, long rc, int err, const Want& want) {
    if (rc >= 0 ? want.count(0) > 0 : want.count(err) > 0) {
      rc >= 0 ? out->Ok() : out->ExpectedError();
      return true;
    }
    out->Fail(idx, &op, what + " returned " + Res(rc, err) + ", expected " + WantStr(want));
    return false;
  }
  void Wrong(long idx, const Op& op, const std::string& why) { out->Fail(idx, &op, why); }

  // -- the registry (callers hold mu)
  // The live allocation of ctx holding [va, va+len) whole, or -1 (nv_p2p_standin.c sp_find_alloc).
  int CoverLocked(uint32_t ctx, uint64_t va, uint64_t len) const {
    for (size_t i = 0; i < allocs.size(); ++i) {
      const AllocRec& a = allocs[i];
      if (a.ctx == ctx && a.live && va >= a.va && len <= a.len && va - a.va <= a.len - len) return static_cast<int>(i);
    }
    return -1;
  }
  // Whether a FREE or a context end may be revoking the pin's allocation now.
  bool RevokingLocked(const PinRec& p) const {
    for (const auto& a : allocs)
      if (a.ctx == p.ctx && a.live && a.changing && p.va >= a.va && p.va - a.va < a.len) return true;
    return false;
  }
  // RevokingLocked as the ledger asks it.
  PinLedger::Revoking RevokingPins() const {
    return [this](const PinRec& p) { return RevokingLocked(p); };
  }
  // The pins a device file lets go of (its close, a P2P_FLUSH): PinLedger::Release.
  void ReleasePinsLocked(const PinLedger::Match& match) { pins.Release(match, RevokingPins()); }
  // A context's end begins: its allocations may go from now on.
  void BeginEndLocked(uint32_t ctx) {
    ctxs[ctx].version++;
    for (auto& a : allocs)
      if (a.ctx == ctx && a.live) a.changing = true;
    revoking++;
    revocations++;
  }
  // ... and is over: the file was released, its allocations freed, their pins revoked.
  void EndEndLocked(uint32_t ctx) {
    for (auto& a : allocs)
      if (a.ctx == ctx && a.live) a.live = false, a.changing = false;
    ctxs[ctx].alive = false;
    ctxs[ctx].version++;
    pins.DropRevoked([&](const PinRec& p) { return p.ctx == ctx; });
    revoking--;
  }
  // Whether the BAR could have no free run of len bytes: each hole that a refused request leaves
  // unused is shorter than the longest allocation, one per allocation at most, and allocations
  // under way in other threads are not registered yet.
  bool BarMayBeFullLocked(uint64_t len) const {
    uint64_t held = 0, n = 0;
    for (const auto& a : allocs)
      if (a.live || a.dmabufs) held += a.len, ++n;
    return held + (n + 1 + nthreads) * kMaxAllocPages * kGpuPage + len > cfg.bar_size;
  }
  // Picks an allocation of ctx: a live one, or (one time in five) any, freed ones too.
  bool PickOwnAlloc(uint32_t ctx, uint64_t p, AllocRec* out_rec) {
    std::lock_guard<std::mutex> l(mu);
    std::vector<size_t> ids;
    for (size_t i = 0; i < allocs.size(); ++i)
      if (allocs[i].ctx == ctx && (allocs[i].live || p % 5 == 0)) ids.push_back(i);
    if (ids.empty()) return false;
    *out_rec = allocs[ids[(p / 5) % ids.size()]];
    return true;
  }
  int OwnCtxFd(const Mine& t, uint32_t ctx) const {
    for (const auto& x : t.ctxs)
      if (x.ctx == ctx) return x.fd;
    return -1;
  }

  // -- files
  int OpenCtx(Mine& t, int th, long idx, const Op& op);
  void CloseCtx(Mine& t, long idx, const Op& op, size_t i, bool keep_maps);
  int OpenEdu(Mine& t, long idx, const Op& op, uint64_t pick);
  int OwnEdu(Mine& t, long idx, const Op& op, uint64_t pick, bool open_one);
  void CloseEdu(Mine& t, long idx, const Op& op, size_t i);
  void UnmapBar(Mine& t, long idx, const Op& op, size_t m);
  void CloseBuf(Mine& t, long idx, const Op& op, size_t i);
  // -- ops
  void DoCtxOpen(Mine& t, int th, long idx, const Op& op);
  void DoCtxClose(Mine& t, long idx, const Op& op);
  int SomeCtx(Mine& t, int th, long idx, const Op& op, uint64_t p);
  bool SomeAlloc(Mine& t, long idx, const Op& op, size_t ci, uint64_t p, AllocRec* a);
  void DoAlloc(Mine& t, int th, long idx, const Op& op);
  bool AllocIn(Mine& t, long idx, const Op& op, size_t ci, uint64_t length, bool reserved, AllocRec* made);
  std::string CheckNewAllocLocked(uint32_t ctx, const nv_p2p_standin_alloc& a, uint64_t asked) const;
  void DoFree(Mine& t, long idx, const Op& op);
  bool PickBusyAlloc(const Mine& t, size_t* ci, AllocRec* a);
  void FreeAt(Mine& t, long idx, const Op& op, size_t ci, uint64_t va, bool reserved);
  void CheckGoneAfterFree(Mine& t, long idx, const Op& op, uint32_t ctx, uint64_t va, uint64_t len);
  void DoWrite(Mine& t, int th, long idx, const Op& op);
  bool BuildWrite(int th, const Op& op, WriteReq* r);
  void VaryWrite(uint64_t p, WriteReq* r) const;
  WriteSnap BeginWrite(const WriteReq& r, const EduFd& e);
  bool EndWrite(const WriteReq& r, long rc, int err, WriteSnap* s);
  Want WriteWant(const WriteReq& r, const WriteSnap& s, bool may_enomem) const;
  std::string DescribeWrite(const WriteReq& r, const WriteSnap& s) const;
  void CheckWriteOut(long idx, const Op& op, const WriteReq& r, const WriteSnap& s, long rc);
  void VerifyBytes(Mine& t, long idx, const Op& op, uint32_t ctx, uint64_t va, const std::vector<uint8_t>& data,
                   const char* how);
  void DoFlush(Mine& t, long idx, const Op& op);
  void DoStats(Mine& t, long idx, const Op& op);
  void CheckStats(long idx, const Op& op, const EduFd& e, const resmem_edu_p2p_stats& s, bool quiet);
  void DoBarMap(Mine& t, int th, long idx, const Op& op);
  bool ReadBar(Mine& t, long idx, const Op& op, size_t m, uint64_t page, uint64_t salt);
  void DoBarRead(Mine& t, int th, long idx, const Op& op);
  void DoBufExport(Mine& t, int th, long idx, const Op& op);
  void DoBufWrite(Mine& t, int th, long idx, const Op& op);
  // -- barriers
  void ReleaseAll();
  bool ProviderHeld() const;
  std::string AtRest();
  void SetRevokeDelay(uint64_t p);
  void ReloadProvider(long idx, const Op& op);
  std::string TakeProviderFacts();
};

// ---- files ----------------------------------------------------------------------------------

// Opens a context and registers it; its index in t.ctxs, or -1 (reported).
int Executor::Impl::OpenCtx(Mine& t, int th, long idx, const Op& op) {
  if (t.ctxs.size() >= kCtxPerThread) CloseCtx(t, idx, op, 0, false);
  int fd = open(cfg.provider_dev.c_str(), O_RDWR | O_CLOEXEC);
  if (!Expect(idx, op, "open(" + cfg.provider_dev + ")", fd, errno, {0})) return -1;
  nv_p2p_standin_info i{};
  long rc = ioctl(fd, NV_P2P_STANDIN_IOC_INFO, &i);
  if (!Expect(idx, op, "INFO of a new context", rc, errno, {0})) {
    close(fd);
    return -1;
  }
  std::lock_guard<std::mutex> l(mu);
  std::string bad;
  if (i.va_space_token < 1 || i.va_space_token > 255 || i.gpu_page_size != kGpuPage || i.p2p_window != window ||
      i.table_version != table_version)
    bad = Fmt("INFO of a new context: vaSpaceToken 0x%x, GPU page %u, window %" PRIu64 ", table version 0x%x "
              "(want 1..255, 65536, %" PRIu64 ", 0x%x)", i.va_space_token, i.gpu_page_size,
              static_cast<uint64_t>(i.p2p_window), i.table_version, window, table_version);
  for (size_t k = 0; k < ctxs.size() && bad.empty(); ++k)
    if (ctxs[k].alive && ctxs[k].version % 2 == 0 && ctxs[k].vas == i.va_space_token)
      bad = Fmt("a new context got vaSpaceToken 0x%x, which a live context (of thread %d) holds", i.va_space_token,
                ctxs[k].owner);
  if (!bad.empty()) {
    Wrong(idx, op, bad);
    close(fd);
    return -1;
  }
  CtxRec x{};
  x.owner = th;
  x.p2p_token = i.p2p_token;
  x.vas = i.va_space_token;
  ctxs.push_back(x);
  t.ctxs.push_back({fd, static_cast<uint32_t>(ctxs.size() - 1)});
  c->contexts++;
  return static_cast<int>(t.ctxs.size() - 1);
}

// Closes context i of the thread: its BAR mappings first unless keep_maps, in which case the
// context (and every allocation of it) lives on until its last mapping goes.
void Executor::Impl::CloseCtx(Mine& t, long idx, const Op& op, size_t i, bool keep_maps) {
  const CtxFd cf = t.ctxs[i];
  t.ctxs.erase(t.ctxs.begin() + i);
  if (!keep_maps)
    for (size_t m = t.maps.size(); m-- > 0;)
      if (t.maps[m].ctx == cf.ctx) UnmapBar(t, idx, op, m);
  bool dies;
  {
    std::lock_guard<std::mutex> l(mu);
    ctxs[cf.ctx].fd_open = false;
    dies = ctxs[cf.ctx].maps == 0;
    if (dies) BeginEndLocked(cf.ctx);
  }
  int rc = close(cf.fd);
  int err = errno;
  if (dies) {
    std::lock_guard<std::mutex> l(mu);
    EndEndLocked(cf.ctx);
  }
  Expect(idx, op, dies ? "close(context)" : "close(context with BAR mappings left)", rc, err, {0});
}

int Executor::Impl::OpenEdu(Mine& t, long idx, const Op& op, uint64_t pick) {
  if (t.edus.size() >= kEdusPerThread) CloseEdu(t, idx, op, 0);
  const std::string& path = cfg.edu_paths[pick % cfg.edu_paths.size()];
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (!Expect(idx, op, "open(" + path + ")", fd, errno, {0})) return -1;
  std::lock_guard<std::mutex> l(mu);
  t.edus.push_back({fd, next_edu++, static_cast<uint32_t>(pick % cfg.edu_paths.size()), false, 0});
  return static_cast<int>(t.edus.size() - 1);
}

// One of the thread's device files (opened when it has none and open_one), or -1.
int Executor::Impl::OwnEdu(Mine& t, long idx, const Op& op, uint64_t pick, bool open_one) {
  if (!t.edus.empty()) return static_cast<int>(pick % t.edus.size());
  return open_one ? OpenEdu(t, idx, op, pick) : -1;
}

// Closes a device file: the driver unpins what the file cached (racing any FREE under way).
void Executor::Impl::CloseEdu(Mine& t, long idx, const Op& op, size_t i) {
  const EduFd e = t.edus[i];
  t.edus.erase(t.edus.begin() + i);
  int rc = close(e.fd);
  int err = errno;
  {
    std::lock_guard<std::mutex> l(mu);
    ReleasePinsLocked([&](const PinRec& p) { return p.edu == e.id; });
  }
  Expect(idx, op, "close(edu file)", rc, err, {0});
}

// Unmaps BAR mapping m; the last mapping of a closed context ends the context.
void Executor::Impl::UnmapBar(Mine& t, long idx, const Op& op, size_t m) {
  const BarMap b = t.maps[m];
  t.maps.erase(t.maps.begin() + m);
  bool dies;
  {
    std::lock_guard<std::mutex> l(mu);
    CtxRec& x = ctxs[b.ctx];
    dies = --x.maps == 0 && !x.fd_open;
    if (dies) BeginEndLocked(b.ctx);
  }
  int rc = munmap(b.addr, b.len);
  int err = errno;
  if (dies) {
    std::lock_guard<std::mutex> l(mu);
    EndEndLocked(b.ctx);
  }
  Expect(idx, op, dies ? "munmap(last BAR mapping of a closed context)" : "munmap(BAR mapping)", rc, err, {0});
}

// Closes a dma-buf; the last one of a freed allocation gives its BAR pages back.
void Executor::Impl::CloseBuf(Mine& t, long idx, const Op& op, size_t i) {
  const BufFd b = t.bufs[i];
  t.bufs.erase(t.bufs.begin() + i);
  {
    std::lock_guard<std::mutex> l(mu);
    AllocRec& a = allocs[b.alloc];
    a.changing = !a.live && a.dmabufs == 1;
  }
  int rc = close(b.fd);
  int err = errno;
  {
    std::lock_guard<std::mutex> l(mu);
    allocs[b.alloc].dmabufs--;
    allocs[b.alloc].changing = false;
  }
  Expect(idx, op, "close(dma-buf)", rc, err, {0});
}

// ---- contexts and allocations ------------------------------------------------------------------

void Executor::Impl::DoCtxOpen(Mine& t, int th, long idx, const Op& op) { OpenCtx(t, th, idx, op); }

void Executor::Impl::DoCtxClose(Mine& t, long idx, const Op& op) {
  if (t.ctxs.empty()) return;
  CloseCtx(t, idx, op, op.p[0] % t.ctxs.size(), op.p[1] % 3 == 0);
}

// One of the thread's contexts (p picks it), opened when it has none; -1 on failure (reported).
int Executor::Impl::SomeCtx(Mine& t, int th, long idx, const Op& op, uint64_t p) {
  return t.ctxs.empty() ? OpenCtx(t, th, idx, op) : static_cast<int>(p % t.ctxs.size());
}

// An allocation of the thread's context ci (PickOwnAlloc), or a new one of 1 to 4 GPU pages when
// it has none; false on failure (reported).
bool Executor::Impl::SomeAlloc(Mine& t, long idx, const Op& op, size_t ci, uint64_t p, AllocRec* a) {
  return PickOwnAlloc(t.ctxs[ci].ctx, p, a) || AllocIn(t, idx, op, ci, (1 + p % kMaxAllocPages) * kGpuPage, false, a);
}

// ALLOC of a length the op picks: 0, above 4 GiB, one byte to a GPU page, or 1 to 4 GPU pages
// give or take part of one; reserved != 0 a time in 32.
void Executor::Impl::DoAlloc(Mine& t, int th, long idx, const Op& op) {
  const int ci = SomeCtx(t, th, idx, op, op.p[0]);
  if (ci < 0) return;
  const uint64_t q = op.p[1] / 16, pages = 1 + q % kMaxAllocPages, part = (q >> 8) % 2;
  const uint64_t length = op.p[1] % 16 == 0 ? 0 : op.p[1] % 16 == 1 ? (1ull << 32) + kGpuPage
                        : op.p[1] % 16 < 5 ? 1 + q % kGpuPage : (pages - part) * kGpuPage + part * (1 + (q >> 9) % kGpuPage);
  AllocRec made;
  AllocIn(t, idx, op, ci, length, op.p[2] % 32 == 0, &made);
}

// ALLOC (cudaMalloc) in the thread's context ci, which holds at most kAllocsPerCtx allocations
// (its first is freed instead when it is full): 0 or a length above 4 GiB, or reserved != 0:
// EINVAL; else success (the BAR cannot be full: BarMayBeFullLocked), and the answer names a run
// of the BAR no other held allocation has, 64 KiB aligned, in the context's VA space, with its
// tokens. True when it made one (*made).
bool Executor::Impl::AllocIn(Mine& t, long idx, const Op& op, size_t ci, uint64_t length, bool reserved, AllocRec* made) {
  const CtxFd cf = t.ctxs[ci];
  std::vector<uint64_t> live;
  Want want = !length || length > (1ull << 32) || reserved ? Want{EINVAL} : Want{0};
  {
    std::lock_guard<std::mutex> l(mu);
    for (const auto& a : allocs)
      if (a.ctx == cf.ctx && a.live) live.push_back(a.va);
    if (want.count(0) && BarMayBeFullLocked(length)) want.insert(ENOMEM);
    if (live.size() < kAllocsPerCtx) ctxs[cf.ctx].version++;
  }
  if (live.size() >= kAllocsPerCtx) return FreeAt(t, idx, op, ci, live[0], false), false;
  nv_p2p_standin_alloc a{};
  a.length = length;
  a.reserved = reserved;
  long rc = ioctl(cf.fd, NV_P2P_STANDIN_IOC_ALLOC, &a);
  int err = errno;
  std::lock_guard<std::mutex> l(mu);
  ctxs[cf.ctx].version++;
  if (!Expect(idx, op, Fmt("ALLOC(%" PRIu64 " bytes%s)", length, reserved ? ", reserved 1" : ""), rc, err, want) || rc)
    return false;
  std::string why = CheckNewAllocLocked(cf.ctx, a, length);
  if (!why.empty())
    return Wrong(idx, op, Fmt("ALLOC(%" PRIu64 ") -> va 0x%" PRIx64 ", BAR offset 0x%" PRIx64 ": ", length,
                              static_cast<uint64_t>(a.va), static_cast<uint64_t>(a.bar_offset)) + why), false;
  made->ctx = cf.ctx;
  made->va = a.va;
  made->len = (length + kGpuPage - 1) / kGpuPage * kGpuPage;
  made->bar_off = a.bar_offset;
  made->live = true;
  made->dmabufs = 0;
  made->changing = false;
  allocs.push_back(*made);
  c->allocs++;
  return true;
}

std::string Executor::Impl::CheckNewAllocLocked(uint32_t ctx, const nv_p2p_standin_alloc& a, uint64_t asked) const {
  const CtxRec& x = ctxs[ctx];
  const uint64_t len = (asked + kGpuPage - 1) / kGpuPage * kGpuPage;
  if (a.va % kGpuPage || a.bar_offset % kGpuPage) return "not 64 KiB aligned";
  if (a.p2p_token != x.p2p_token || a.va_space_token != x.vas)
    return Fmt("tokens 0x%" PRIx64 "/0x%x are not the context's 0x%" PRIx64 "/0x%x", static_cast<uint64_t>(a.p2p_token),
               a.va_space_token, x.p2p_token, x.vas);
  if (a.va != (static_cast<uint64_t>(x.vas) << 32) + a.bar_offset) return "va is not vaSpaceToken * 4 GiB + the BAR offset";
  if (a.bar_offset + len > cfg.bar_size) return Fmt("runs past the %" PRIu64 "-byte BAR", cfg.bar_size);
  for (const auto& o : allocs)
    if ((o.live || o.dmabufs) && !o.changing && a.bar_offset < o.bar_off + o.len && o.bar_off < a.bar_offset + len)
      return Fmt("overlaps BAR [0x%" PRIx64 ", +0x%" PRIx64 ") of an allocation still held (va 0x%" PRIx64 ", %s)",
                 o.bar_off, o.len, o.va, o.live ? "live" : "freed, a dma-buf of it open");
  return "";
}

// FREE (cudaFree) of a live allocation of one of the thread's contexts (half the time one that
// another thread is writing into, if any, after up to 250 ms), or of a freed one's address, or
// one GPU page into it: success exactly when an allocation of the context starts
// there and no dma-buf of it is open (then EBUSY); EINVAL otherwise. Afterwards no page of the
// allocation may be read through a BAR mapping (SIGBUS).
void Executor::Impl::DoFree(Mine& t, long idx, const Op& op) {
  if (t.ctxs.empty()) return;
  size_t ci = op.p[0] % t.ctxs.size();
  AllocRec a;
  const bool busy = op.p[3] % 2 == 0 && PickBusyAlloc(t, &ci, &a);
  if (!busy && !PickOwnAlloc(t.ctxs[ci].ctx, op.p[1], &a)) return;
  if (busy) usleep(op.p[4] % 250 * 1000);  // into the transfer: a piece takes two ~100 ms commands
  FreeAt(t, idx, op, ci, a.va + (op.p[2] % 8 == 0 ? kGpuPage : 0), op.p[2] % 8 == 1);
}

// A live allocation of the thread's that another thread is writing into now (the oldest write
// on a device if one is the thread's, which the device is likely running), and its context.
bool Executor::Impl::PickBusyAlloc(const Mine& t, size_t* ci, AllocRec* a) {
  std::lock_guard<std::mutex> l(mu);
  std::vector<int> busy;
  for (const auto& q : pending)
    if (!q.empty()) busy.push_back(q.front().second);
  for (size_t i = 0; i < allocs.size(); ++i)
    if (allocs[i].writers) busy.push_back(static_cast<int>(i));
  for (int i : busy)
    for (size_t k = 0; k < t.ctxs.size(); ++k)
      if (allocs[i].ctx == t.ctxs[k].ctx && allocs[i].live) {
        *ci = k;
        *a = allocs[i];
        return true;
      }
  return false;
}

void Executor::Impl::FreeAt(Mine& t, long idx, const Op& op, size_t ci, uint64_t va, bool reserved) {
  const CtxFd cf = t.ctxs[ci];
  int target = -1;
  Want want;
  {
    std::lock_guard<std::mutex> l(mu);
    for (size_t i = 0; i < allocs.size(); ++i)
      if (allocs[i].ctx == cf.ctx && allocs[i].live && allocs[i].va == va) target = static_cast<int>(i);
    want = reserved || target < 0 ? Want{EINVAL} : allocs[target].dmabufs ? Want{EBUSY} : Want{0};
    ctxs[cf.ctx].version++;
    if (target >= 0 && !reserved) allocs[target].changing = true;
    revoking++;
    revocations++;
  }
  nv_p2p_standin_free f{};
  f.va = va;
  f.reserved = reserved;
  long rc = ioctl(cf.fd, NV_P2P_STANDIN_IOC_FREE, &f);
  int err = errno;
  AllocRec gone{};
  {
    std::lock_guard<std::mutex> l(mu);
    if (target >= 0) {  // the revocation, if any, is over: what it held is back in the window
      const AllocRec& t = allocs[target];
      pins.DropRevoked([&](const PinRec& p) {
        return p.ctx == cf.ctx && p.va >= t.va && p.va < t.va + t.len && (rc == 0 || p.released);
      });
    }
    if (rc == 0 && target >= 0) {
      gone = allocs[target];
      allocs[target].live = false;
    }
    if (target >= 0) allocs[target].changing = false;
    ctxs[cf.ctx].version++;
    revoking--;
  }
  if (rc < 0 && err == EBUSY) c->free_busy++;
  if (!Expect(idx, op, Fmt("FREE(va 0x%" PRIx64 "%s)", va, reserved ? ", reserved 1" : ""), rc, err, want) || rc) return;
  c->frees++;
  c->revoked += f.revoked;
  CheckGoneAfterFree(t, idx, op, cf.ctx, gone.va, gone.len);
}

// Every page of the thread's mappings of a freed allocation must fault now (nv_p2p_standin.c
// sp_free_alloc zaps them; sp_fault refuses the allocation once it is dying).
void Executor::Impl::CheckGoneAfterFree(Mine& t, long idx, const Op& op, uint32_t ctx, uint64_t va, uint64_t len) {
  for (const auto& b : t.maps) {
    if (b.ctx != ctx || b.va >= va + len || va >= b.va + b.len) continue;
    for (uint64_t off = 0; off < b.len; off += kCpuPage) {
      if (b.va + off < va || b.va + off >= va + len) continue;
      uint64_t v;
      if (GuardedCopy(&v, b.addr + off, sizeof v))
        return Wrong(idx, op, Fmt("after FREE(va 0x%" PRIx64 ") returned, a read through the BAR mapping at %p (va 0x%"
                                  PRIx64 ") still returned 0x%" PRIx64 ": the mapping outlived cudaFree", va, b.addr + off,
                                  b.va + off, v));
      c->faults_after_free++;
      out->Ok();
    }
  }
}

// ---- P2P_WRITE ----------------------------------------------------------------------------------

// The target (any thread's allocation: live ones mostly, freed ones a time in four), the thread's
// stripe bytes in it, and a pinned range around them; then a variation.
bool Executor::Impl::BuildWrite(int th, const Op& op, WriteReq* r) {
  AllocRec a;
  CtxRec x;
  {
    std::lock_guard<std::mutex> l(mu);
    std::vector<size_t> ids;
    for (size_t i = 0; i < allocs.size(); ++i)
      if (allocs[i].live || op.p[1] % 4 == 0) ids.push_back(i);
    if (ids.empty()) return false;
    r->alloc = static_cast<uint32_t>(ids[(op.p[1] / 4) % ids.size()]);
    a = allocs[r->alloc];
    x = ctxs[a.ctx];
  }
  r->ctx = a.ctx;
  r->target_va = a.va;
  r->owner = x.owner;
  uint64_t lo = 0, hi = 0, n = DataLen(op.p[3], true);
  if (!StripeSpan(a.len, th, nthreads, op.p[4], &lo, &hi)) n = 0;
  n = std::min(n, hi - lo);
  const uint64_t at = lo + (hi > lo + n ? (op.p[4] >> 20) % (hi - lo - n + 1) : 0);
  const uint64_t pages = a.len / kGpuPage, fp = at / kGpuPage, lp = n ? (at + n - 1) / kGpuPage : std::min(fp, pages - 1);
  const uint64_t first = std::min(fp, pages - 1) - op.p[5] % (std::min(fp, pages - 1) + 1);
  const uint64_t end = lp + 1 + (op.p[5] >> 8) % (pages - lp);
  r->data = Pattern(op.p[5] ^ op.p[3], n);
  resmem_edu_p2p_write& w = r->w;
  w.p2p_token = x.p2p_token;
  w.va_space_token = x.vas;
  w.va = a.va + first * kGpuPage;
  w.length = (end - first) * kGpuPage;
  w.offset = at - first * kGpuPage;
  w.data = reinterpret_cast<uintptr_t>(r->data.data());
  w.data_len = n;
  VaryWrite(op.p[2], r);
  r->early = (w.flags & ~(RESMEM_EDU_P2P_NO_CACHE | RESMEM_EDU_P2P_PHYS_ADDR)) || w.data_len > RESMEM_EDU_MAX_WRITE ||
             !w.length || w.offset > w.length || w.data_len > w.length - w.offset;
  return true;
}

// Variations, each a time in 32: misaligned address or length, wrong tokens, unknown flag, offset
// past the range, length 0, too many bytes, a range a GPU page past the target, NO_CACHE (twice),
// the guide's physical addresses (without an IOMMU only: behind one the write faults), NULL data.
void Executor::Impl::VaryWrite(uint64_t p, WriteReq* r) const {
  resmem_edu_p2p_write& w = r->w;
  switch (p % 32) {
    case 0: w.va += kCpuPage; break;
    case 1: w.p2p_token ^= 1, r->tokens_ok = false; break;
    case 2: w.va_space_token ^= 0x80, r->tokens_ok = false; break;
    case 3: w.length += kCpuPage; break;
    case 4: w.flags |= 1u << 7; break;
    case 5: w.offset = w.length + 8; break;
    case 6: w.length = 0; break;
    case 7: w.data_len = RESMEM_EDU_MAX_WRITE + 1; break;
    case 8: w.length += kGpuPage; break;
    case 9: case 10: w.flags |= RESMEM_EDU_P2P_NO_CACHE; break;
    case 11: if (!cfg.translated) w.flags |= RESMEM_EDU_P2P_PHYS_ADDR; break;
    case 12: if (w.data_len) w.data = 0, r->bad_data = true; break;
    default: break;
  }
}

// Before the call: the target context's version and the allocation holding the range, and the
// write's claim on the bound on the P2P window (PinLedger::Begin: none when refused on its
// arguments).
WriteSnap Executor::Impl::BeginWrite(const WriteReq& r, const EduFd& e) {
  WriteSnap s;
  std::lock_guard<std::mutex> l(mu);
  s.version0 = ctxs[r.ctx].version;
  s.cover = ctxs[r.ctx].alive && r.tokens_ok && r.w.va % kGpuPage == 0 && r.w.length && r.w.length % kGpuPage == 0
                ? CoverLocked(r.ctx, r.w.va, r.w.length) : -1;
  if (s.cover >= 0) s.cover_rec = allocs[s.cover];
  const bool cached = !(r.w.flags & RESMEM_EDU_P2P_NO_CACHE);
  s.pin = pins.Begin(e.id, r.ctx, r.w.va, r.w.length, cached, !r.early);
  if (r.early) return s;
  if (s.cover >= 0 && r.w.data_len) {
    s.writing = next_write++;
    allocs[s.cover].writers++;
    pending[e.dev].emplace_back(s.writing, s.cover);
  }
  return s;
}

// After the call: the version again, whether the P2P window could have been full (the pins
// registered at the start and since, by others, plus this one exceed it), and what becomes of
// this pin's record (PinLedger::End): it stays while the file caches the pin, and after a
// revocation cancelled the write (ECANCELED) until that revocation is over.
bool Executor::Impl::EndWrite(const WriteReq& r, long rc, int err, WriteSnap* s) {
  std::lock_guard<std::mutex> l(mu);
  s->version1 = ctxs[r.ctx].version;
  if (s->writing) {
    allocs[s->cover].writers--;
    for (auto& q : pending)
      q.erase(std::remove_if(q.begin(), q.end(), [&](const std::pair<uint64_t, int>& w) { return w.first == s->writing; }),
              q.end());
  }
  const bool cached = !(r.w.flags & RESMEM_EDU_P2P_NO_CACHE);
  const PinAfterWrite after = cached && (rc == 0 || (rc < 0 && err == EFAULT)) ? PinAfterWrite::kCached
                              : rc < 0 && err == ECANCELED                    ? PinAfterWrite::kCancelled
                                                                              : PinAfterWrite::kLetGo;
  const bool covered = ctxs[r.ctx].alive && r.w.length && CoverLocked(r.ctx, r.w.va, r.w.length) >= 0;
  const PinLedger::Orphan o = pins.End(s->pin, after, RevokingPins(), covered);
  if (o != PinLedger::Orphan::kNo) (o == PinLedger::Orphan::kKept ? c->orphans_kept : c->orphans_gone)++;
  return pins.MayBeFull(s->pin, r.w.length, window);
}

// EINVAL for what the driver or get_pages refuse on the arguments and for a range no live
// allocation of the tokens' context holds; success (EFAULT for NULL data) when one holds it
// throughout; while the context's allocations change, any of those or ECANCELED (revoked
// mid-way); ENOMEM only when the window may be full.
Want Executor::Impl::WriteWant(const WriteReq& r, const WriteSnap& s, bool may_enomem) const {
  if (r.early || !r.tokens_ok || r.w.va % kGpuPage || r.w.length % kGpuPage) return {EINVAL};
  const int done = r.bad_data ? EFAULT : 0;
  Want want;
  if (!s.stable()) want = {done, EINVAL, ECANCELED};
  else want = s.cover >= 0 ? Want{done} : Want{EINVAL};
  if (may_enomem && (s.cover >= 0 || !s.stable())) want.insert(ENOMEM);
  return want;
}

std::string Executor::Impl::DescribeWrite(const WriteReq& r, const WriteSnap& s) const {
  const resmem_edu_p2p_write& w = r.w;
  return Fmt("P2P_WRITE(tokens 0x%" PRIx64 "/0x%x, va 0x%" PRIx64 ", length 0x%" PRIx64 ", offset 0x%" PRIx64
             ", %" PRIu64 " bytes, flags 0x%x) into thread %d's allocation va 0x%" PRIx64 " (%s; context version %"
             PRIu64 " -> %" PRIu64 ")", static_cast<uint64_t>(w.p2p_token), w.va_space_token, static_cast<uint64_t>(w.va),
             static_cast<uint64_t>(w.length), static_cast<uint64_t>(w.offset), static_cast<uint64_t>(w.data_len), w.flags,
             r.owner, r.target_va, s.cover >= 0 ? "held by a live allocation" : "no live allocation holds it",
             s.version0, s.version1);
}

void Executor::Impl::DoWrite(Mine& t, int th, long idx, const Op& op) {
  const int ei = OwnEdu(t, idx, op, op.p[0], true);
  if (ei < 0) return;
  WriteReq r;
  if (!BuildWrite(th, op, &r)) {  // no allocation anywhere yet: one of the thread's own
    const int ci = SomeCtx(t, th, idx, op, op.p[0]);
    AllocRec a;
    if (ci < 0 || !AllocIn(t, idx, op, ci, (1 + op.p[1] % kMaxAllocPages) * kGpuPage, false, &a) || !BuildWrite(th, op, &r))
      return;
  }
  EduFd& e = t.edus[ei];
  WriteSnap s = BeginWrite(r, e);
  long rc = ioctl(e.fd, RESMEM_EDU_IOC_P2P_WRITE, &r.w);
  int err = errno;
  const bool may_enomem = EndWrite(r, rc, err, &s);
  if (!r.early) e.holds_provider = true, e.pin_calls++;
  c->writes++;
  if (!r.early && r.tokens_ok && !s.stable()) c->writes_raced++;
  if (rc == 0) c->writes_ok++, c->bytes_dma += r.w.data_len, c->hits += r.w.hit;
  if (rc < 0)
    (err == ECANCELED ? c->cancelled : err == EFAULT ? c->write_efault : err == ENOMEM ? c->write_enomem : c->write_einval)++;
  std::string what = DescribeWrite(r, s);
  if (rc < 0 && err == ENOMEM && !may_enomem) {  // to set beside the provider's "N of W bytes mapped by P pins"
    std::lock_guard<std::mutex> l(mu);
    what += Fmt(" [the bound: %" PRIu64 " bytes of records at the start, the window %" PRIu64 " bytes; records now: %s]",
                s.pin.bound, window, pins.Describe().c_str());
  }
  if (!Expect(idx, op, what, rc, err, WriteWant(r, s, may_enomem))) return;
  CheckWriteOut(idx, op, r, s, rc < 0 ? -err : rc);
  // The owner's own allocation, held throughout: only this thread wrote these bytes.
  if (rc == 0 && s.stable() && s.cover >= 0 && r.owner == th && r.w.data_len && !r.bad_data)
    VerifyBytes(t, idx, op, r.ctx, r.w.va + r.w.offset, r.data, "P2P_WRITE");
}

// What a P2P_WRITE answers (ECANCELED and success only): the table of the range, where the
// device wrote (physical = bus without an IOMMU), how much, in how many commands.
void Executor::Impl::CheckWriteOut(long idx, const Op& op, const WriteReq& r, const WriteSnap& s, long rc) {
  const resmem_edu_p2p_write& w = r.w;
  std::string why;
  if (rc == -ECANCELED && w.data_len && w.written >= w.data_len) why = "ECANCELED with every byte written";
  if (rc != 0 || !s.stable() || s.cover < 0) {
    if (!why.empty()) Wrong(idx, op, DescribeWrite(r, s) + ": " + why);
    return;
  }
  const uint64_t page = std::min<uint64_t>(w.offset, w.length - 1) >> 16;
  const uint64_t phys = cfg.bar_phys + s.cover_rec.bar_off + (w.va - s.cover_rec.va) + (page << 16) + (w.offset & 0xffff);
  if (w.entries != w.length / kGpuPage || w.page_size != 1 || w.table_version != table_version)
    why = Fmt("table of %u entries, page size code %u, version 0x%x", w.entries, w.page_size, w.table_version);
  else if (w.written != w.data_len || w.commands != Commands(w.offset, w.data_len))
    why = Fmt("%" PRIu64 " bytes written in %u commands (want %" PRIu64 " in %u)", static_cast<uint64_t>(w.written),
              w.commands, static_cast<uint64_t>(w.data_len), Commands(w.offset, w.data_len));
  else if (w.phys_addr != phys || (!cfg.translated && w.bus_addr != phys))
    why = Fmt("physical address 0x%" PRIx64 ", bus address 0x%" PRIx64 " (want 0x%" PRIx64 ", the allocation's BAR page)",
              static_cast<uint64_t>(w.phys_addr), static_cast<uint64_t>(w.bus_addr), phys);
  else if (w.hit && w.pin_ns)
    why = "a cache hit that spent time pinning";
  if (!why.empty()) Wrong(idx, op, DescribeWrite(r, s) + ": " + why);
}

// The owner reads back through a new mapping what it had the device write at va of its context.
void Executor::Impl::VerifyBytes(Mine& t, long idx, const Op& op, uint32_t ctx, uint64_t va,
                                 const std::vector<uint8_t>& data, const char* how) {
  const int fd = OwnCtxFd(t, ctx);
  if (fd < 0) return;  // the context's file is closed (kept by mappings): no new mapping
  const uint64_t start = va & ~(kCpuPage - 1), len = (va + data.size() - start + kCpuPage - 1) & ~(kCpuPage - 1);
  void* m = mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(start));
  if (m == MAP_FAILED)
    return Wrong(idx, op, Fmt("after %s, mmap of the allocation's BAR pages at va 0x%" PRIx64 ": %s", how, start,
                              strerror(errno)));
  std::vector<uint8_t> back(data.size());
  const bool read = GuardedCopy(back.data(), static_cast<uint8_t*>(m) + (va - start), back.size());
  munmap(m, len);
  size_t first = 0;
  while (read && first < data.size() && back[first] == data[first]) ++first;
  if (!read || first < data.size())
    return Wrong(idx, op, read ? Fmt("after %s of %zu bytes at va 0x%" PRIx64 ", the BAR holds other bytes from byte %zu on "
                                     "(0x%02x, want 0x%02x)", how, data.size(), va, first, back[first], data[first])
                               : Fmt("after %s, reading va 0x%" PRIx64 " of a live allocation faulted", how, va));
  c->bytes_verified += data.size();
}

// ---- the pin cache ------------------------------------------------------------------------------

// P2P_FLUSH: the number of pins it dropped (never an error); the file caches nothing afterwards.
void Executor::Impl::DoFlush(Mine& t, long idx, const Op& op) {
  const int ei = OwnEdu(t, idx, op, op.p[0], false);
  if (ei < 0) return;
  const EduFd& e = t.edus[ei];
  long rc = ioctl(e.fd, RESMEM_EDU_IOC_P2P_FLUSH);
  int err = errno;
  {
    std::lock_guard<std::mutex> l(mu);
    ReleasePinsLocked([&](const PinRec& p) { return p.edu == e.id; });
  }
  if (!Expect(idx, op, "P2P_FLUSH", rc, err, {0})) return;
  const long flushed = rc;
  c->flushes++;
  c->flushed += flushed;
  resmem_edu_p2p_stats s{};
  rc = ioctl(e.fd, RESMEM_EDU_IOC_P2P_STATS, &s);
  if (!Expect(idx, op, "P2P_STATS after P2P_FLUSH", rc, errno, {0})) return;
  if (s.cached || s.cached_bytes)
    Wrong(idx, op, Fmt("after P2P_FLUSH (%ld pins) the file still caches %u pins, %" PRIu64 " bytes", flushed, s.cached,
                       static_cast<uint64_t>(s.cached_bytes)));
}

// P2P_STATS of one of the thread's files, and the counters' invariants.
void Executor::Impl::DoStats(Mine& t, long idx, const Op& op) {
  const int ei = OwnEdu(t, idx, op, op.p[0], false);
  if (ei < 0) return;
  const uint64_t r0 = revocations;
  const bool idle0 = revoking == 0;
  resmem_edu_p2p_stats s{};
  long rc = ioctl(t.edus[ei].fd, RESMEM_EDU_IOC_P2P_STATS, &s);
  int err = errno;
  const bool quiet = idle0 && revoking == 0 && revocations == r0;
  if (!Expect(idx, op, "P2P_STATS", rc, err, {0})) return;
  CheckStats(idx, op, t.edus[ei], s, quiet);
}

// Each pin came from one P2P_WRITE that got past its arguments, a hit too; a pin is unpinned or
// revoked at most once each; cached pins are 1 to 4 GPU pages. With no revocation under way (a
// callback marks the pin before it counts it) every pin is cached, unpinned or revoked.
void Executor::Impl::CheckStats(long idx, const Op& op, const EduFd& e, const resmem_edu_p2p_stats& s, bool quiet) {
  std::string why;
  if (s.pins > e.pin_calls || s.hits > e.pin_calls) why = "more pins or hits than pinning calls";
  else if (s.cached > s.pins || s.unpins > s.pins || s.revoked > s.pins) why = "more cached, unpinned or revoked than pinned";
  else if (s.cached_bytes < s.cached * kGpuPage || s.cached_bytes > s.cached * kMaxAllocPages * kGpuPage)
    why = "cached bytes do not fit the cached pins";
  else if (quiet && s.pins > s.cached + s.unpins + s.revoked) why = "pins neither cached nor unpinned nor revoked";
  c->stats_checked++;
  if (!why.empty())
    Wrong(idx, op, Fmt("P2P_STATS: %s: %" PRIu64 " calls; pins %" PRIu64 ", hits %" PRIu64 ", evictions %" PRIu64 ", unpins %"
                       PRIu64 ", revoked %" PRIu64 ", cached %u (%" PRIu64 " bytes)", why.c_str(), e.pin_calls,
                       static_cast<uint64_t>(s.pins), static_cast<uint64_t>(s.hits), static_cast<uint64_t>(s.evictions),
                       static_cast<uint64_t>(s.unpins), static_cast<uint64_t>(s.revoked), s.cached,
                       static_cast<uint64_t>(s.cached_bytes)));
}

// ---- BAR mappings -------------------------------------------------------------------------------

// mmap of pages of an allocation of one of the thread's contexts: MAP_PRIVATE and ranges not
// inside one live allocation of the context are refused (EINVAL); a mapping's first page reads.
void Executor::Impl::DoBarMap(Mine& t, int th, long idx, const Op& op) {
  const int ci = SomeCtx(t, th, idx, op, op.p[0]);
  AllocRec a;
  if (ci < 0 || !SomeAlloc(t, idx, op, ci, op.p[1], &a)) return;
  const CtxFd cf = t.ctxs[ci];
  const uint64_t n4 = a.len / kCpuPage, k = op.p[2] % n4;
  uint64_t len = (1 + (op.p[2] >> 16) % std::min<uint64_t>(16, n4 - k)) * kCpuPage;
  const uint64_t va = a.va + k * kCpuPage;
  const bool priv = op.p[3] % 10 == 0;
  if (op.p[3] % 10 == 1) len = a.len - k * kCpuPage + kCpuPage;  // a page past the allocation
  const int prot = (op.p[3] / 10) % 3 ? PROT_READ | PROT_WRITE : PROT_READ;
  bool covered;
  {
    std::lock_guard<std::mutex> l(mu);
    covered = CoverLocked(cf.ctx, va, len) >= 0;
  }
  void* m = mmap(nullptr, len, prot, priv ? MAP_PRIVATE : MAP_SHARED, cf.fd, static_cast<off_t>(va));
  const long rc = m == MAP_FAILED ? -1 : 0;
  if (!Expect(idx, op, Fmt("mmap(%s, 0x%" PRIx64 " bytes at va 0x%" PRIx64 ")", priv ? "MAP_PRIVATE" : "MAP_SHARED", len, va),
              rc, errno, priv || !covered ? Want{EINVAL} : Want{0})) {
    if (rc == 0) munmap(m, len);
    return;
  }
  if (rc) return;
  {
    std::lock_guard<std::mutex> l(mu);
    ctxs[cf.ctx].maps++;
  }
  t.maps.push_back({static_cast<uint8_t*>(m), len, cf.ctx, va});
  c->maps++;
  ReadBar(t, idx, op, t.maps.size() - 1, 0, op.p[4]);
  if (t.maps.size() > kMapsPerThread) UnmapBar(t, idx, op, 0);
}

// A read of a page of BAR mapping m: it must return exactly while a live allocation of the
// mapping's context holds the page (only this thread allocates and frees in its contexts), and
// fault (SIGBUS) otherwise.
bool Executor::Impl::ReadBar(Mine& t, long idx, const Op& op, size_t m, uint64_t page, uint64_t salt) {
  const BarMap b = t.maps[m];
  const uint64_t va = b.va + page * kCpuPage;
  bool want;
  {
    std::lock_guard<std::mutex> l(mu);
    want = CoverLocked(b.ctx, va, kCpuPage) >= 0;
  }
  uint64_t v = 0;
  const bool got = GuardedCopy(&v, b.addr + page * kCpuPage + salt % (kCpuPage / 8) * 8, sizeof v);
  got ? c->reads++ : c->faults++;
  if (got == want) {
    out->Ok();
    return true;
  }
  Wrong(idx, op, got ? Fmt("a read through the BAR mapping at %p (va 0x%" PRIx64 ") returned 0x%" PRIx64 ", but no live "
                           "allocation of its context holds that page", b.addr + page * kCpuPage, va, v)
                     : Fmt("a read through the BAR mapping at %p (va 0x%" PRIx64 ") faulted, but a live allocation of its "
                           "context holds that page", b.addr + page * kCpuPage, va));
  return false;
}

// A read of a page of one of the thread's mappings (one is made when it has none); a time in four
// the mapping goes afterwards.
void Executor::Impl::DoBarRead(Mine& t, int th, long idx, const Op& op) {
  if (t.maps.empty()) DoBarMap(t, th, idx, op);
  if (t.maps.empty()) return;
  const size_t m = op.p[0] % t.maps.size();
  if (ReadBar(t, idx, op, m, op.p[1] % (t.maps[m].len / kCpuPage), op.p[2]) && op.p[3] % 4 == 0) UnmapBar(t, idx, op, m);
}

// ---- dma-bufs -----------------------------------------------------------------------------------

// EXPORT_DMABUF of whole GPU pages of an allocation of one of the thread's contexts: EINVAL when
// misaligned, empty, reserved != 0 or not inside one live allocation; its size is the range's.
void Executor::Impl::DoBufExport(Mine& t, int th, long idx, const Op& op) {
  const int ci = SomeCtx(t, th, idx, op, op.p[0]);
  AllocRec a;
  if (ci < 0 || !SomeAlloc(t, idx, op, ci, op.p[1], &a)) return;
  const CtxFd cf = t.ctxs[ci];
  const uint64_t pages = a.len / kGpuPage, k = op.p[2] % pages;
  nv_p2p_standin_export x{};
  x.va = a.va + k * kGpuPage;
  x.length = (1 + (op.p[2] >> 8) % (pages - k)) * kGpuPage;
  switch (op.p[3] % 10) {
    case 0: x.va += kCpuPage; break;
    case 1: x.length = 0; break;
    case 2: x.reserved = 1; break;
    case 3: x.length += kGpuPage; break;
    default: break;
  }
  int cover = -1;
  {
    std::lock_guard<std::mutex> l(mu);
    if (!x.reserved && x.length && !((x.va | x.length) % kGpuPage)) cover = CoverLocked(cf.ctx, x.va, x.length);
  }
  const uint64_t va = x.va, len = x.length;
  long rc = ioctl(cf.fd, NV_P2P_STANDIN_IOC_EXPORT_DMABUF, &x);
  if (!Expect(idx, op, Fmt("EXPORT_DMABUF(va 0x%" PRIx64 ", 0x%" PRIx64 " bytes)", va, len), rc, errno,
              cover >= 0 ? Want{0} : Want{EINVAL})) {
    if (rc == 0) close(x.fd);
    return;
  }
  if (rc) return;
  AllocRec holder;
  {
    std::lock_guard<std::mutex> l(mu);
    allocs[cover].dmabufs++;
    holder = allocs[cover];
  }
  t.bufs.push_back({x.fd, static_cast<uint32_t>(cover), cf.ctx, va, len, holder.bar_off + (va - holder.va)});
  c->dmabufs++;
  const off_t size = lseek(x.fd, 0, SEEK_END);
  if (size != static_cast<off_t>(len))
    Wrong(idx, op, Fmt("the dma-buf's size is %lld, its range's %" PRIu64, static_cast<long long>(size), len));
  if (t.bufs.size() > kBufsPerThread) CloseBuf(t, idx, op, 0);
}

// DMABUF_WRITE of a few KiB of the thread's stripe into one of its dma-bufs: success while the
// dma-buf is open (it keeps its BAR pages, freed or not); EINVAL past its end, for 0 bytes or
// reserved != 0; EBADF for an fd that is no dma-buf; EFAULT for NULL data. The owner reads the
// bytes back while the allocation is live.
void Executor::Impl::DoBufWrite(Mine& t, int th, long idx, const Op& op) {
  if (t.bufs.empty()) DoBufExport(t, th, idx, op);
  if (t.bufs.empty()) return;
  const int ei = OwnEdu(t, idx, op, op.p[0] >> 8, true);
  if (ei < 0) return;
  const BufFd b = t.bufs[op.p[0] % t.bufs.size()];
  uint64_t lo, hi;
  if (!StripeSpan(b.len, th, nthreads, op.p[1], &lo, &hi)) return;
  const uint64_t n = std::min(DataLen(op.p[2], false), hi - lo), at = lo + (op.p[1] >> 20) % (hi - lo - n + 1);
  const std::vector<uint8_t> data = Pattern(op.p[2] ^ op.p[4], n);
  resmem_edu_dmabuf_write w{};
  w.fd = b.fd;
  w.offset = at;
  w.data = reinterpret_cast<uintptr_t>(data.data());
  w.data_len = n;
  Want want{0};
  switch (op.p[3] % 10) {
    case 0: w.offset = b.len - 8, w.data_len = 16, want = {EINVAL}; break;
    case 1: w.data_len = 0, want = {EINVAL}; break;
    case 2: w.fd = t.edus[ei].fd, want = {EBADF}; break;
    case 3: w.reserved = 1, want = {EINVAL}; break;
    case 4: w.data = 0, want = {EFAULT}; break;
    default: break;
  }
  long rc = ioctl(t.edus[ei].fd, RESMEM_EDU_IOC_DMABUF_WRITE, &w);
  const std::string what = Fmt("DMABUF_WRITE(%" PRIu64 " bytes at 0x%" PRIx64 " of a dma-buf of va 0x%" PRIx64 ", 0x%" PRIx64
                               ")", static_cast<uint64_t>(w.data_len), static_cast<uint64_t>(w.offset), b.va, b.len);
  if (!Expect(idx, op, what, rc, errno, want) || rc) return;
  c->dmabuf_writes++;
  c->bytes_dma += n;
  const uint64_t bus = cfg.bar_phys + b.bar_off + at;
  if (w.size != b.len || w.sg_entries != b.len / kGpuPage || w.commands != Commands(at, n) ||
      (!cfg.translated && w.bus_addr != bus))
    return Wrong(idx, op, Fmt("DMABUF_WRITE answered size %" PRIu64 ", %u sg entries, %u commands, bus 0x%" PRIx64 " (want %"
                              PRIu64 ", %" PRIu64 ", %u, 0x%" PRIx64 ")", static_cast<uint64_t>(w.size), w.sg_entries, w.commands,
                              static_cast<uint64_t>(w.bus_addr), b.len, b.len / kGpuPage, Commands(at, n), bus));
  bool live;
  {
    std::lock_guard<std::mutex> l(mu);
    live = allocs[b.alloc].live;
  }
  if (live) VerifyBytes(t, idx, op, b.ctx, b.va + at, data, "DMABUF_WRITE");
}

// ---- barriers -----------------------------------------------------------------------------------

// Closes everything every thread holds (no worker runs).
void Executor::Impl::ReleaseAll() {
  for (auto& t : mine) {
    for (const auto& b : t.bufs) close(b.fd);
    for (const auto& m : t.maps) munmap(m.addr, m.len);
    for (const auto& e : t.edus) close(e.fd);
    for (const auto& x : t.ctxs) close(x.fd);
    t = Mine();
  }
  std::lock_guard<std::mutex> l(mu);
  for (auto& x : ctxs) {
    if (x.alive) x.version += 2;
    x.alive = x.fd_open = false;
    x.maps = 0;
  }
  for (auto& a : allocs) a.live = a.changing = false, a.dmabufs = 0;
  pins.Clear();
}

// Whether anything holds nv_p2p_standin: a context's file (a mapping keeps one), a dma-buf (its
// exporter), a device file that resolved the nvidia_p2p_* calls (symbol_get until it closes).
bool Executor::Impl::ProviderHeld() const {
  for (const auto& t : mine) {
    if (!t.ctxs.empty() || !t.maps.empty() || !t.bufs.empty()) return true;
    for (const auto& e : t.edus)
      if (e.holds_provider) return true;
  }
  return false;
}

std::string Executor::Impl::AtRest() {
  nv_p2p_standin_info i;
  std::string e = ProviderInfo(cfg, &i);
  return e.empty() ? NotAtRest(i, base_put, base_unfreed) : e;
}

// The provider's revocations slowed, for the epoch that follows, by 0 to 20 ms between marking
// the pins and calling their callbacks (nv_p2p_standin.c revoke_delay_ms), and by 0 to 20 ms
// between the callbacks' return and the window's share coming back (release_delay_ms).
void Executor::Impl::SetRevokeDelay(uint64_t p) {
  static const int kDelayMs[] = {0, 0, 0, 0, 5, 20};
  const int revoke_ms = kDelayMs[p % 6], release_ms = kDelayMs[p / 6 % 6];
  WriteDelays(cfg, revoke_ms, release_ms);
  if (revoke_ms) c->delayed_revoke_epochs++;
  if (release_ms) c->delayed_release_epochs++;
}

// The provider's facts after a (re)load: the window, the table version, the bug counters' base.
std::string Executor::Impl::TakeProviderFacts() {
  nv_p2p_standin_info i;
  std::string e = ProviderInfo(cfg, &i);
  if (!e.empty()) return e;
  window = i.p2p_window;
  table_version = i.table_version;
  base_put = i.put_after_revoke;
  base_unfreed = i.unfreed_tables;
  return "";
}

// Nothing holds the provider: at rest, it unloads (its node goes), and loads again, a time in
// two with a P2P window of 256 or 512 KiB (bar_reserve=) so that pins fill it.
void Executor::Impl::ReloadProvider(long idx, const Op& op) {
  std::string e = AtRest();
  if (!e.empty()) return Wrong(idx, op, "before unloading " + cfg.provider_name + " with nothing held: " + e);
  long rc = DeleteModule(cfg.provider_name);
  if (!Expect(idx, op, "delete_module(" + cfg.provider_name + ") with nothing held", rc, errno, {0})) return;
  struct stat st;
  if (stat(cfg.provider_dev.c_str(), &st) == 0) return Wrong(idx, op, cfg.provider_dev + " is still there after the unload");
  std::string params = cfg.provider_params;
  if (op.p[4] % 4 >= 2) {
    params = Fmt("bar_reserve=%" PRIu64, cfg.bar_size - (op.p[4] % 4 == 2 ? 512 : 256) * uint64_t{1024});
    c->small_window_loads++;
  }
  e = LoadProvider(cfg, params);
  if (e.empty()) e = TakeProviderFacts();
  if (!e.empty()) return Wrong(idx, op, "reload of " + cfg.provider_name + ": " + e);
  c->reloads++;
}

// ---- Executor -------------------------------------------------------------------------------

Executor::Executor(const Config& cfg, Counters* c, Outcome* out, int threads)
    : impl_(new Impl(cfg, c, out, threads)) {}
Executor::~Executor() = default;

std::string Executor::Start() {
  std::string e = OwnSettings(impl_->cfg);
  if (e.empty()) e = impl_->TakeProviderFacts();
  if (e.empty()) e = impl_->AtRest();
  return e.empty() ? "" : "before the run: " + e;
}

void Executor::Do(int thread, long index, const Op& op, int kind) {
  Impl& s = *impl_;
  Mine& t = s.mine[thread];
  switch (kind) {
    case kCtxOpen: s.DoCtxOpen(t, thread, index, op); break;
    case kCtxClose: s.DoCtxClose(t, index, op); break;
    case kAlloc: s.DoAlloc(t, thread, index, op); break;
    case kFree: s.DoFree(t, index, op); break;
    case kWrite: s.DoWrite(t, thread, index, op); break;
    case kFlush: s.DoFlush(t, index, op); break;
    case kStats: s.DoStats(t, index, op); break;
    case kEduOpen: s.OpenEdu(t, index, op, op.p[0]); break;
    case kEduClose: if (!t.edus.empty()) s.CloseEdu(t, index, op, op.p[0] % t.edus.size()); break;
    case kBarMap: s.DoBarMap(t, thread, index, op); break;
    case kBarRead: s.DoBarRead(t, thread, index, op); break;
    case kBufExport: s.DoBufExport(t, thread, index, op); break;
    case kBufWrite: s.DoBufWrite(t, thread, index, op); break;
    case kBufClose: if (!t.bufs.empty()) s.CloseBuf(t, index, op, op.p[0] % t.bufs.size()); break;
    default: break;
  }
}

void Executor::Barrier(long index, const Op& op, bool release_all) {
  Impl& s = *impl_;
  if (release_all) s.ReleaseAll();
  if (!s.ProviderHeld()) {
    s.ReloadProvider(index, op);
  } else {
    long rc = DeleteModule(s.cfg.provider_name);
    if (s.Expect(index, op, "delete_module(" + s.cfg.provider_name + ") while a context, mapping, dma-buf or P2P user holds it",
                 rc, errno, {EWOULDBLOCK, EBUSY}))
      s.c->unload_refused++;
    else if (rc == 0)
      LoadProvider(s.cfg, s.cfg.provider_params);  // keep going for the report
  }
  s.SetRevokeDelay(op.p[5]);
}

bool Executor::HoldsEduModule() const {
  for (const auto& t : impl_->mine)
    if (!t.edus.empty()) return true;
  return false;
}

void Executor::EpochEnd(long index) {
  Impl& s = *impl_;
  nv_p2p_standin_info i;
  std::string e = ProviderInfo(s.cfg, &i);
  if (e.empty() && (i.put_after_revoke != s.base_put || i.unfreed_tables != s.base_unfreed))
    e = Fmt("%u put_pages after a revocation (%u before), %u revoked tables the free callback did not free (%u before)",
            i.put_after_revoke, s.base_put, i.unfreed_tables, s.base_unfreed);
  if (!e.empty()) s.out->Fail(index, nullptr, "provider after the epoch: " + e);
}

void Executor::Finish() {
  Impl& s = *impl_;
  s.ReleaseAll();
  std::string e = s.AtRest();
  if (!e.empty()) s.out->Fail(-1, nullptr, "provider not at rest with everything closed: " + e);
  WriteDelays(s.cfg, s.cfg.revoke_delay_ms, s.cfg.release_delay_ms);
}

// ---- the parent's part --------------------------------------------------------------------------

std::string Setup(const std::string& edu_list, const std::string& provider_file, Config* cfg) {
  std::stringstream in(edu_list);
  std::string path;
  while (std::getline(in, path, ','))
    if (!path.empty()) cfg->edu_paths.push_back(path);
  if (cfg->edu_paths.empty()) return "--p2p needs /dev/resmem_eduN";
  for (const auto& p : cfg->edu_paths) {
    int fd = open(p.c_str(), O_RDWR | O_CLOEXEC);
    resmem_edu_info ei{};
    if (fd < 0 || ioctl(fd, RESMEM_EDU_IOC_INFO, &ei) != 0) {
      std::string why = p + ": " + strerror(errno);
      if (fd >= 0) close(fd);
      return why;
    }
    close(fd);
    cfg->translated |= (ei.flags & RESMEM_EDU_TRANSLATED) != 0;
  }
  cfg->provider_file = provider_file;
  if (!ModuleLoaded(cfg->provider_name)) return cfg->provider_name + " is not loaded; load it first";
  cfg->provider_params = "bar_reserve=" + ReadValue(ParamPath(*cfg, "bar_reserve"));
  cfg->revoke_delay_ms = std::atoi(ReadValue(ParamPath(*cfg, "revoke_delay_ms")).c_str());
  cfg->release_delay_ms = std::atoi(ReadValue(ParamPath(*cfg, "release_delay_ms")).c_str());
  std::ifstream f(cfg->provider_file, std::ios::binary);
  cfg->provider_image.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  if (cfg->provider_image.empty()) return "cannot read " + cfg->provider_file + " (needed to reload the provider)";
  nv_p2p_standin_info i;
  std::string e = ProviderInfo(*cfg, &i);
  if (e.empty()) e = NotAtRest(i, i.put_after_revoke, i.unfreed_tables);
  if (!e.empty()) return "before the run: " + e;
  cfg->bar_phys = i.bar_phys;
  cfg->bar_size = i.bar_size;
  Diag("p2p: %s, provider %s (%s): BAR [0x%" PRIx64 ", +%" PRIu64 " MiB), P2P window %" PRIu64 " MiB, %s DMA", edu_list.c_str(),
       cfg->provider_name.c_str(), cfg->provider_params.c_str(), cfg->bar_phys, cfg->bar_size >> 20,
       static_cast<uint64_t>(i.p2p_window) >> 20, cfg->translated ? "IOMMU-translated" : "direct");
  return "";
}

void Report(const Counters& c) {
  Diag("p2p: %" PRIu64 " contexts, %" PRIu64 " allocations, %" PRIu64 " frees (%" PRIu64 " refused while a dma-buf was open; %"
       PRIu64 " pins revoked by them); %" PRIu64 " BAR mappings, %" PRIu64 " reads, %" PRIu64 " faults (%" PRIu64
       " checked right after a free)", c.contexts.load(), c.allocs.load(), c.frees.load(), c.free_busy.load(), c.revoked.load(),
       c.maps.load(), c.reads.load(), c.faults.load(), c.faults_after_free.load());
  Diag("p2p: %" PRIu64 " P2P_WRITEs (%" PRIu64 " met an ALLOC, FREE or end of their context; %" PRIu64 " outlived a FREE "
       "or context end of their range, %" PRIu64 " of them cached a pin while an allocation held the range again): %" PRIu64
       " succeeded (%" PRIu64 " cache hits), %" PRIu64 " ECANCELED, %" PRIu64
       " EINVAL, %" PRIu64 " EFAULT, %" PRIu64 " ENOMEM; %" PRIu64 " DMABUF_WRITEs of %" PRIu64 " dma-bufs; %" PRIu64
       " bytes by DMA, %" PRIu64 " read back through the BAR", c.writes.load(), c.writes_raced.load(),
       c.orphans_kept.load() + c.orphans_gone.load(), c.orphans_kept.load(), c.writes_ok.load(), c.hits.load(), c.cancelled.load(), c.write_einval.load(), c.write_efault.load(), c.write_enomem.load(), c.dmabuf_writes.load(),
       c.dmabufs.load(), c.bytes_dma.load(), c.bytes_verified.load());
  Diag("p2p: %" PRIu64 " flushes (%" PRIu64 " pins), %" PRIu64 " stats checked; provider: %" PRIu64 " unloads refused, %" PRIu64
       " unload+reloads (%" PRIu64 " with a small P2P window), %" PRIu64 " epochs with a revoke delay, %" PRIu64
       " with a release delay", c.flushes.load(), c.flushed.load(), c.stats_checked.load(), c.unload_refused.load(),
       c.reloads.load(), c.small_window_loads.load(), c.delayed_revoke_epochs.load(), c.delayed_release_epochs.load());
}

std::string FinalUnloadReload(const Config& cfg) {
  nv_p2p_standin_info i;
  std::string e = ProviderInfo(cfg, &i);
  if (e.empty()) e = NotAtRest(i, i.put_after_revoke, i.unfreed_tables);
  if (!e.empty()) return "after the run: " + e;
  if (DeleteModule(cfg.provider_name) != 0)
    return "unload of " + cfg.provider_name + " after the run failed: " + strerror(errno) + " (a leaked reference)";
  e = LoadProvider(cfg, cfg.provider_params);
  if (!e.empty()) return e;
  WriteDelays(cfg, cfg.revoke_delay_ms, cfg.release_delay_ms);
  return ProviderInfo(cfg, &i);
}

void RestoreSettings(const Config& cfg) { OwnSettings(cfg); }

}  // namespace resmem::seq::p2p
