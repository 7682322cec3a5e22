// The GPUDirect RDMA cases of the kmod lane's guest (ci/qemu/guest_init.sh; docs/rdma.md
// "GPUDirect RDMA in the guest"): QEMU's edu device, driven by resmem_edu.ko's P2P part, writes
// into "GPU memory", the BAR of QEMU's ivshmem-plain served by the stand-in provider
// nv_p2p_standin.ko, pinned with the guide's nvidia_p2p_* calls; the data is checked through a
// mapping of the BAR. Statically linked.
//
//   resmem_p2p_guest CASE [ARGS...]   exit 0 = pass, 1 = fail, 2 = usage; "# " lines are
//                                     diagnostics the lane keeps with the case.
//
// /dev/nv_p2p_standin is the "CUDA" side (an open file is a context: ALLOC = cudaMalloc + the
// tokens, FREE = cudaFree, mmap = a BAR view of an allocation); /dev/resmem_eduN is the device's
// driver. Blocks are backends/cuda/block_pattern.h's; the BAR is poisoned first, so bytes the
// device did not write cannot pass.
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backends/cuda/block_pattern.h"
#include "kmod/uapi/nv_p2p_standin_ioctl.h"
#include "kmod/uapi/resmem_edu_ioctl.h"
#include "kmod/uapi/resmem_edu_p2p_ioctl.h"

#include "kmod/tests/tap_diag.h"

namespace resmem {
namespace {

using guest::Diag;
using guest::ErrName;
using guest::Fail;
using guest::KmsgSince;

constexpr const char* kProvider = "/dev/nv_p2p_standin";
constexpr uint64_t kGpuPage = NV_P2P_STANDIN_GPU_PAGE;
constexpr uint8_t kPoison = 0xa5;
constexpr uint64_t kSeed = 0x703270ull;  // "p2p": the blocks' fill seeds derive from it

std::string Err(int e) { return e ? ErrName(e) : "0"; }

// A CUDA context of the stand-in: an open /dev/nv_p2p_standin.
struct Context {
  int fd = -1;
  ~Context() {
    if (fd >= 0) close(fd);
  }
  bool Open() {
    fd = open(kProvider, O_RDWR | O_CLOEXEC);
    if (fd < 0) Fail(std::string("open ") + kProvider + ": " + std::strerror(errno));
    return fd >= 0;
  }
  int Info(nv_p2p_standin_info* i) const {
    *i = nv_p2p_standin_info{};
    return ioctl(fd, NV_P2P_STANDIN_IOC_INFO, i) ? errno : 0;
  }
  int Alloc(uint64_t len, nv_p2p_standin_alloc* a) const {
    *a = nv_p2p_standin_alloc{};
    a->length = len;
    return ioctl(fd, NV_P2P_STANDIN_IOC_ALLOC, a) ? errno : 0;
  }
  int Free(uint64_t va, nv_p2p_standin_free* f = nullptr) const {
    nv_p2p_standin_free local{};
    if (!f) f = &local;
    *f = nv_p2p_standin_free{};
    f->va = va;
    return ioctl(fd, NV_P2P_STANDIN_IOC_FREE, f) ? errno : 0;
  }
  // The BAR pages of [va, va+len), poisoned when asked.
  uint8_t* Map(uint64_t va, uint64_t len, bool poison) const {
    void* m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(va));
    if (m == MAP_FAILED) {
      Fail(std::string("mmap of the allocation's BAR pages: ") + std::strerror(errno));
      return nullptr;
    }
    if (poison) std::memset(m, kPoison, len);
    return static_cast<uint8_t*>(m);
  }
};

int OpenEdu(const std::string& path) {
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) Fail("open " + path + ": " + std::strerror(errno));
  return fd;
}

// The device writes data_len bytes at offset of the pinned range [a.va, a.va+len).
int P2pWrite(int edu, const nv_p2p_standin_alloc& a, uint64_t len, uint64_t offset,
             const void* data, uint64_t data_len, uint32_t flags, resmem_edu_p2p_write* w) {
  *w = resmem_edu_p2p_write{};
  w->p2p_token = a.p2p_token;
  w->va_space_token = a.va_space_token;
  w->va = a.va;
  w->length = len;
  w->offset = offset;
  w->data = reinterpret_cast<uintptr_t>(data);
  w->data_len = data_len;
  w->flags = flags;
  return ioctl(edu, RESMEM_EDU_IOC_P2P_WRITE, w) ? errno : 0;
}

int Stats(int edu, resmem_edu_p2p_stats* s) {
  *s = resmem_edu_p2p_stats{};
  return ioctl(edu, RESMEM_EDU_IOC_P2P_STATS, s) ? errno : 0;
}

// Counts kernel lines since `log` holding every one of `parts`; prints them all.
bool Said(KmsgSince& log, std::vector<std::string>* seen, std::initializer_list<const char*> parts) {
  for (auto& l : log.Lines()) {
    Diag("console: %s", l.c_str());
    seen->push_back(l);
  }
  for (const auto& l : *seen) {
    bool all = true;
    for (const char* p : parts) all &= l.find(p) != std::string::npos;
    if (all) return true;
  }
  return false;
}

std::vector<uint64_t> Block(uint64_t len, uint64_t seq) {
  std::vector<uint64_t> b(len / 8);
  pattern::Fill(b.data(), len, seq, pattern::Mix(kSeed + seq));
  return b;
}

// Bytes [at, at+len) of m hold block seq, and the bytes just around it the poison.
std::string Check(const uint8_t* m, uint64_t map_len, uint64_t at, uint64_t len, uint64_t seq) {
  const uint64_t bad = pattern::CountMismatches(m + at, len, seq, pattern::Mix(kSeed + seq));
  std::string why;
  if (bad) why = std::to_string(bad) + " of " + std::to_string(len / 8) + " words wrong";
  if (at > 0 && m[at - 1] != kPoison) why += " the byte before it changed;";
  if (at + len < map_len && m[at + len] != kPoison) why += " the byte after it changed;";
  return why;
}

// Provider counters that must be back to zero when nothing is pinned or exported.
std::string Leftovers(const Context& ctx) {
  nv_p2p_standin_info i;
  if (int e = ctx.Info(&i)) return "INFO -> " + Err(e);
  char b[300];
  std::snprintf(b, sizeof b,
                "provider: %u live tables, %u revoked tables not freed, %u DMA mappings, %u dma-bufs, "
                "%" PRIu64 " bytes pinned, %u put_pages after a revocation, %u revocations so far",
                i.live_tables, i.unfreed_tables, i.dma_mappings, i.dmabufs,
                static_cast<uint64_t>(i.pinned_bytes), i.put_after_revoke, i.revocations);
  Diag("%s", b);
  if (i.live_tables || i.unfreed_tables || i.dma_mappings || i.dmabufs || i.pinned_bytes ||
      i.put_after_revoke)
    return b;
  return "";
}

// A case's checks: each wrong one is a "WRONG:" line; the case fails if any was wrong.
struct Checks {
  int failures = 0;
  void Want(bool ok, const std::string& what) {
    if (!ok) Diag("WRONG: %s", what.c_str());
    failures += !ok;
  }
  void NothingLeaked(const Context& ctx) {
    Want(Leftovers(ctx).empty(), "nothing left pinned, mapped or exported");
  }
  int Result() const { return failures ? Fail(std::to_string(failures) + " checks wrong") : 0; }
};

// What most cases start from: a context with one allocation of `len` bytes (its BAR pages mapped
// and poisoned when asked) and an open edu device. Closes and unmaps what is left at the end; the
// context's exit then frees the allocation.
struct Rig {
  Context ctx;
  nv_p2p_standin_info info{};
  nv_p2p_standin_alloc a{};
  uint8_t* m = nullptr;
  uint64_t len = 0;
  int edu = -1;
  ~Rig() {
    CloseEdu();
    if (m) munmap(m, len);
  }
  bool Setup(const std::string& edu_path, uint64_t length, bool map) {
    len = length;
    if (!ctx.Open()) return false;
    if (int e = ctx.Info(&info)) return !Fail("INFO -> " + Err(e));
    if (int e = ctx.Alloc(len, &a)) return !Fail("ALLOC -> " + Err(e));
    if (map && !(m = ctx.Map(a.va, len, true))) return false;
    edu = OpenEdu(edu_path);
    return edu >= 0;
  }
  void CloseEdu() {  // unpins what the file holds
    if (edu >= 0) close(edu);
    edu = -1;
  }
};

// ---- cases ----------------------------------------------------------------------------------

// absent EDU: no provider loaded: ENOPKG and the line saying what to load.
int CaseAbsent(const std::string& edu_path) {
  int edu = OpenEdu(edu_path);
  if (edu < 0) return 1;
  KmsgSince log;
  nv_p2p_standin_alloc a{};
  a.va = 0x100000000ull;
  a.va_space_token = 1;
  resmem_edu_p2p_write w;
  const int e = P2pWrite(edu, a, kGpuPage, 0, nullptr, 0, 0, &w);
  close(edu);
  Diag("P2P_WRITE without a provider -> %s", Err(e).c_str());
  std::vector<std::string> seen;
  if (e != ENOPKG) return Fail("expected ENOPKG");
  if (!Said(log, &seen, {"GPUDirect RDMA unavailable", "nv_p2p_standin.ko", "-ENOPKG"}))
    return Fail("no dmesg line naming the missing nvidia_p2p_* provider");
  return 0;
}

// pin EDU: the page table as the guide describes it, the bus address, the cache hit, and the
// provider's counters before and after FLUSH.
int CasePin(const std::string& edu_path, bool iommu) {
  Rig r;
  if (!r.Setup(edu_path, 16 * kGpuPage, false)) return 1;
  const auto& info = r.info;
  const auto& a = r.a;
  const int edu = r.edu;
  Diag("GPU: %s BAR [0x%llx-0x%llx], P2P window %llu MiB; cudaMalloc(1 MiB) -> va 0x%llx, "
       "p2pToken 0x%llx, vaSpaceToken 0x%x, BAR offset 0x%llx",
       info.pci_name, (unsigned long long)info.bar_phys,
       (unsigned long long)(info.bar_phys + info.bar_size - 1),
       (unsigned long long)info.p2p_window >> 20, (unsigned long long)a.va,
       (unsigned long long)a.p2p_token, a.va_space_token, (unsigned long long)a.bar_offset);
  Checks ck;
  auto want = [&](bool ok, const char* what) { ck.Want(ok, what); };
  resmem_edu_p2p_write w;
  int e = P2pWrite(edu, a, 16 * kGpuPage, 3 * kGpuPage + 100, nullptr, 0, 0, &w);
  Diag("pin [0x%llx, +1 MiB) -> %s: version 0x%08x, page_size code %u, %u entries; byte 3*64K+100 at "
       "phys 0x%llx, bus 0x%llx; pin %.1f us",
       (unsigned long long)a.va, Err(e).c_str(), w.table_version, w.page_size, w.entries,
       (unsigned long long)w.phys_addr, (unsigned long long)w.bus_addr, w.pin_ns / 1e3);
  if (e) return Fail("P2P pin -> " + Err(e));
  const uint64_t phys = info.bar_phys + a.bar_offset + 3 * kGpuPage + 100;
  want(w.table_version == 0x00010001, "table version is the guide's 0x00010001");
  want(w.page_size == 1, "page_size code 1 (64 KiB)");
  want(w.entries == 16, "16 entries of 64 KiB for 1 MiB");
  want(w.phys_addr == phys, "physical address = the BAR's + the allocation's offset");
  want(iommu ? w.bus_addr != phys : w.bus_addr == phys,
       iommu ? "behind the IOMMU the bus address is an IOVA" : "without an IOMMU bus = physical");
  want(!w.hit, "first pin is a miss");
  nv_p2p_standin_info after;
  r.ctx.Info(&after);
  want(after.live_tables == info.live_tables + 1 && after.dma_mappings == info.dma_mappings + 1 &&
           after.pinned_bytes == info.pinned_bytes + 16 * kGpuPage,
       "provider: one more live table, one more DMA mapping, 1 MiB more pinned");
  e = P2pWrite(edu, a, 16 * kGpuPage, 0, nullptr, 0, 0, &w);
  Diag("the same range again -> %s, hit %u, pin %.1f us", Err(e).c_str(), w.hit, w.pin_ns / 1e3);
  want(!e && w.hit && w.pin_ns == 0, "second pin of the same range comes from the cache");
  const int flushed = ioctl(edu, RESMEM_EDU_IOC_P2P_FLUSH);
  Diag("FLUSH -> %d pins unpinned", flushed);
  want(flushed == 1, "FLUSH unpins the one pin");
  r.CloseEdu();
  ck.NothingLeaked(r.ctx);
  return ck.Result();
}

// dma EDU: blocks written by the device into GPU memory peer to peer, read through the BAR.
int CaseDma(const std::string& edu_path, uint64_t block, int blocks) {
  const uint64_t len = 4 * kGpuPage;
  Rig r;
  if (!r.Setup(edu_path, len, true)) return 1;
  Checks ck;
  double device_s = 0;
  for (int seq = 0; seq < blocks; ++seq) {
    // Each block straddles a 64 KiB GPU page boundary: two entries of the page table.
    const uint64_t at = (seq + 1) * kGpuPage - block / 2;
    auto b = Block(block, seq);
    resmem_edu_p2p_write w;
    const int e = P2pWrite(r.edu, r.a, len, at, b.data(), block, 0, &w);
    device_s += w.device_ns / 1e9;
    std::string why = e ? "P2P_WRITE -> " + Err(e) : Check(r.m, len, at, block, seq);
    Diag("block %d: %" PRIu64 " B at offset 0x%" PRIx64 " (bus 0x%llx, phys 0x%llx), %u commands, "
         "%s, %.0f ms: %s", seq, block, at, (unsigned long long)w.bus_addr,
         (unsigned long long)w.phys_addr, w.commands, w.hit ? "cached pin" : "new pin",
         w.device_ns / 1e6, why.empty() ? "intact in the BAR" : why.c_str());
    ck.Want(why.empty(), "the block arrives whole");
  }
  resmem_edu_p2p_stats s;
  Stats(r.edu, &s);
  Diag("%d blocks, device %.4f MB/s; pins %llu, hits %llu", blocks,
       blocks * block / device_s / 1e6, (unsigned long long)s.pins, (unsigned long long)s.hits);
  ck.Want(s.pins == 1 && s.hits == static_cast<uint64_t>(blocks - 1),
          "one pin, the other blocks from the cache");
  return ck.Result();
}

// revoke EDU: cudaFree while the device is writing: the callback stops and waits, nothing more
// lands, put_pages is never called, nothing leaks, the driver keeps working.
int CaseRevoke(const std::string& edu_path) {
  const uint64_t len = 2 * kGpuPage, data_len = kGpuPage;
  Rig r;
  if (!r.Setup(edu_path, len, true)) return 1;  // poisons the BAR pages
  Context& ctx = r.ctx;
  const auto& a = r.a;
  const int edu = r.edu;
  munmap(r.m, len);  // FREE would take these pages away from under the mapping
  r.m = nullptr;
  KmsgSince log;
  auto b = Block(data_len, 7);
  resmem_edu_p2p_write w;
  int we = -1;
  std::thread writer([&] { we = P2pWrite(edu, a, len, 0, b.data(), data_len, 0, &w); });
  std::this_thread::sleep_for(std::chrono::milliseconds(900));
  nv_p2p_standin_free f;
  const auto t0 = std::chrono::steady_clock::now();
  const int fe = ctx.Free(a.va, &f);
  const double free_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  writer.join();
  Diag("cudaFree during the transfer -> %s after %.0f ms: %u page table revoked, %.0f ms in the "
       "free callback", Err(fe).c_str(), free_ms, f.revoked, f.callback_ns / 1e6);
  Diag("the transfer -> %s: %llu of %llu bytes written, %u commands", Err(we).c_str(),
       (unsigned long long)w.written, (unsigned long long)data_len, w.commands);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // anything late would land now
  Checks ck;
  auto want = [&](bool ok, const std::string& what) { ck.Want(ok, what); };
  want(fe == 0 && f.revoked == 1, "FREE revokes the one pin");
  want(we == ECANCELED, "the transfer ends with ECANCELED");
  want(w.written > 0 && w.written < data_len, "the transfer was cut short mid-way");
  // cudaMalloc hands the same BAR pages out again (first fit, not cleared): what is there now is
  // what the device wrote before it stopped, and poison after.
  nv_p2p_standin_alloc again;
  if (int e = ctx.Alloc(len, &again)) return Fail("ALLOC again -> " + Err(e));
  want(again.bar_offset == a.bar_offset, "the allocation comes back at the same BAR offset");
  uint8_t* m = r.m = ctx.Map(again.va, len, false);
  if (!m) return 1;
  const uint64_t bad = pattern::CountMismatches(m, w.written, 7, pattern::Mix(kSeed + 7));
  uint64_t late = 0;
  for (uint64_t i = w.written; i < len; ++i) late += m[i] != kPoison;
  Diag("in the BAR: the %llu bytes written before the stop: %llu words wrong; after them: %llu "
       "bytes not poison", (unsigned long long)w.written, (unsigned long long)bad,
       (unsigned long long)late);
  want(bad == 0, "what was written before the stop is intact");
  want(late == 0, "nothing landed after the stop");
  std::vector<std::string> seen;
  want(Said(log, &seen, {"revoking", "calling its free callback"}), "provider's revoking line");
  // The callback almost always finds a piece in flight (a piece is two 100 ms commands, the gap
  // between pieces microseconds); either way the transfer must stop, which the checks above see.
  want(Said(log, &seen, {"free callback for GPU range", "put_pages will not be called"}),
       "driver's free callback line: no put_pages");
  Diag("the callback %s", Said(log, &seen, {"free callback for GPU range", "was in flight"})
                              ? "waited for the DMA command in flight"
                              : "found no DMA command in flight (it came between two pieces)");
  want(Said(log, &seen, {"stopped after", "revoked", "-ECANCELED"}), "driver's stop line");
  resmem_edu_p2p_stats s;
  Stats(edu, &s);
  Diag("driver: pins %llu, unpins %llu, revoked %llu, cached %u",
       (unsigned long long)s.pins, (unsigned long long)s.unpins,
       (unsigned long long)s.revoked, s.cached);
  want(s.revoked == 1 && s.unpins == 0 && s.cached == 0, "revoked 1, no put_pages, cache empty");
  // The driver still works: the device writes the new allocation.
  auto b2 = Block(4096, 8);
  std::memset(m, kPoison, len);
  const int e2 = P2pWrite(edu, again, len, 4096, b2.data(), 4096, 0, &w);
  std::string why = e2 ? "P2P_WRITE -> " + Err(e2) : Check(m, len, 4096, 4096, 8);
  Diag("a transfer into the new allocation afterwards: %s", why.empty() ? "intact" : why.c_str());
  want(why.empty(), "the driver keeps working after a revocation");
  r.CloseEdu();
  ck.NothingLeaked(ctx);
  return ck.Result();
}

// errors EDU WHICH: each refusal with its errno and its dmesg line.
int CaseErrors(const std::string& edu_path, const std::string& which) {
  Context ctx, other;
  if (!ctx.Open() || !other.Open()) return 1;
  nv_p2p_standin_alloc a, b;
  if (int e = ctx.Alloc(4 * kGpuPage, &a)) return Fail("ALLOC -> " + Err(e));
  if (int e = other.Alloc(kGpuPage, &b)) return Fail("ALLOC -> " + Err(e));
  int edu = OpenEdu(edu_path);
  if (edu < 0) return 1;
  Checks ck;
  KmsgSince log;
  std::vector<std::string> seen;
  auto expect = [&](const std::string& what, int got, int want,
                    std::initializer_list<const char*> line) {
    const bool said = line.size() == 0 || Said(log, &seen, line);
    Diag("%s -> %s%s", what.c_str(), Err(got).c_str(),
         got != want ? "  <- WRONG errno" : said ? "" : "  <- no dmesg line with the reason");
    ck.failures += got != want || !said;
    seen.clear();
  };
  resmem_edu_p2p_write w;
  if (which == "misaligned") {
    nv_p2p_standin_alloc x = a;
    x.va = a.va + 4096;
    expect("pin at va + 4 KiB", P2pWrite(edu, x, kGpuPage, 0, nullptr, 0, 0, &w), EINVAL,
           {"not aligned to the 64 KiB GPU page", "-EINVAL"});
    expect("pin of 64 KiB + 4 KiB", P2pWrite(edu, a, kGpuPage + 4096, 0, nullptr, 0, 0, &w),
           EINVAL, {"not aligned to the 64 KiB GPU page", "-EINVAL"});
    expect("pin of 2 GPU pages at the aligned address", P2pWrite(edu, a, 2 * kGpuPage, 0, nullptr, 0, 0, &w),
           0, {});
  } else if (which == "bad_token") {
    nv_p2p_standin_alloc x = a;
    x.p2p_token ^= 1;
    expect("p2pToken off by one bit", P2pWrite(edu, x, kGpuPage, 0, nullptr, 0, 0, &w), EINVAL,
           {"is not the token of VA space", "-EINVAL"});
    x = a;
    x.va_space_token = 0xdead;
    expect("vaSpaceToken 0xdead", P2pWrite(edu, x, kGpuPage, 0, nullptr, 0, 0, &w), EINVAL,
           {"names no live VA space", "-EINVAL"});
    x = a;
    x.va = b.va;  // another context's pointer with this context's tokens
    expect("another context's address with this context's tokens",
           P2pWrite(edu, x, kGpuPage, 0, nullptr, 0, 0, &w), EINVAL,
           {"is not inside one allocation", "-EINVAL"});
    nv_p2p_standin_alloc stale = b;
    other.Free(b.va);
    expect("tokens and address of a freed allocation",
           P2pWrite(edu, stale, kGpuPage, 0, nullptr, 0, 0, &w), EINVAL,
           {"is not inside one allocation", "-EINVAL"});
    expect("the right tokens", P2pWrite(edu, a, kGpuPage, 0, nullptr, 0, 0, &w), 0, {});
  } else if (which == "bad_version") {
    const char* param = "/sys/module/nv_p2p_standin/parameters/table_version";
    auto set = [&](const char* v) {
      FILE* f = std::fopen(param, "w");
      const bool ok = f && std::fputs(v, f) >= 0 && std::fclose(f) == 0;
      if (!ok) Diag("cannot write %s to %s", v, param);
      return ok;
    };
    const struct {
      const char* version;
      int want;
    } cases[] = {{"0x00020001", EINVAL}, {"0x00010000", EINVAL}, {"0x00010002", 0}};
    for (const auto& c : cases) {
      if (!set(c.version)) return Fail("cannot set the provider's table_version");
      ioctl(edu, RESMEM_EDU_IOC_P2P_FLUSH);
      if (c.want)
        expect(std::string("a page table of version ") + c.version,
               P2pWrite(edu, a, kGpuPage, 0, nullptr, 0, 0, &w), c.want,
               {"refusing the page table", c.version + 2, "built against 0x00010001", "-EINVAL"});
      else
        expect(std::string("a page table of version ") + c.version + " (newer minor: compatible)",
               P2pWrite(edu, a, kGpuPage, 0, nullptr, 0, 0, &w), 0, {});
    }
    set("0x00010001");
  } else {
    return Fail("unknown error case " + which);
  }
  close(edu);  // unpins what the good requests pinned
  ctx.Free(a.va);
  ck.NothingLeaked(ctx);
  return ck.Result();
}

// bar_full EDU: pins of one file fill the P2P window; another file's pin gets ENOMEM and the
// reason; cudaMalloc beyond the BAR gets ENOMEM too.
int CaseBarFull(const std::string& edu_path) {
  Context ctx;
  if (!ctx.Open()) return 1;
  nv_p2p_standin_info info;
  ctx.Info(&info);
  // Three pins of a third of the window fill it; a fourth allocation, of what the BAR has left,
  // does not fit the window any more.
  const uint64_t piece = (info.p2p_window / 3 / kGpuPage) * kGpuPage;
  const uint64_t fourth = std::min<uint64_t>(piece, (info.bar_size - 3 * piece) / kGpuPage * kGpuPage);
  if (!fourth || 3 * piece + fourth <= info.p2p_window)
    return Fail("this BAR and window leave no allocation that overfills the window");
  std::vector<nv_p2p_standin_alloc> al(4);
  for (int i = 0; i < 4; ++i)
    if (int e = ctx.Alloc(i < 3 ? piece : fourth, &al[i])) return Fail("ALLOC -> " + Err(e));
  Diag("BAR %llu MiB, P2P window %llu MiB; allocations of 3 x %llu KiB and %llu KiB",
       (unsigned long long)info.bar_size >> 20, (unsigned long long)info.p2p_window >> 20,
       (unsigned long long)piece >> 10, (unsigned long long)fourth >> 10);
  int holder = OpenEdu(edu_path), asker = OpenEdu(edu_path);
  if (holder < 0 || asker < 0) return 1;
  Checks ck;
  resmem_edu_p2p_write w;
  for (int i = 0; i < 3; ++i) {
    const int e = P2pWrite(holder, al[i], piece, 0, nullptr, 0, 0, &w);
    Diag("file 1 pins allocation %d -> %s", i, Err(e).c_str());
    ck.failures += e != 0;
  }
  KmsgSince log;
  std::vector<std::string> seen;
  int e = P2pWrite(asker, al[3], fourth, 0, nullptr, 0, 0, &w);
  const bool said = Said(log, &seen, {"no BAR space for P2P mappings", "-ENOMEM"});
  Diag("file 2 pins allocation 3 (its cache is empty: nothing to evict) -> %s%s", Err(e).c_str(),
       said ? "" : "  <- no dmesg line with the reason");
  ck.failures += e != ENOMEM || !said;
  nv_p2p_standin_alloc big;
  e = ctx.Alloc(info.bar_size, &big);
  const bool said2 = Said(log, &seen, {"cudaMalloc", "no free run", "-ENOMEM"});
  Diag("cudaMalloc of the whole BAR while it is allocated -> %s%s", Err(e).c_str(),
       said2 ? "" : "  <- no dmesg line with the reason");
  ck.failures += e != ENOMEM || !said2;
  close(holder);
  e = P2pWrite(asker, al[3], fourth, 0, nullptr, 0, 0, &w);
  Diag("after file 1 closed (its pins put back) file 2's pin -> %s", Err(e).c_str());
  ck.failures += e != 0;
  close(asker);
  for (auto& x : al) ctx.Free(x.va);
  ck.NothingLeaked(ctx);
  return ck.Result();
}

// An LRU cache of pins as the guide's 2.1 describes it, to predict the driver's counts.
struct LruModel {
  explicit LruModel(size_t c) : capacity(c) {}
  size_t capacity;
  std::list<int> order;  // most recent first
  uint64_t pins = 0, hits = 0, evictions = 0;
  void Use(int r) {
    auto it = std::find(order.begin(), order.end(), r);
    if (it != order.end()) {
      ++hits;
      order.erase(it);
    } else {
      ++pins;
      if (order.size() == capacity) {
        order.pop_back();
        ++evictions;
      }
    }
    order.push_front(r);
  }
};

// lazy_unpin EDU: transfers over three ranges of which two fit the window; the driver's pins,
// hits and evictions equal an LRU model's; the data lands; then the same without the cache.
int CaseLazyUnpin(const std::string& edu_path) {
  Context ctx;
  if (!ctx.Open()) return 1;
  nv_p2p_standin_info info;
  ctx.Info(&info);
  // Three ranges the BAR holds, of which two fit the P2P window and three do not.
  const uint64_t len = std::min<uint64_t>(info.p2p_window / 2, info.bar_size / 3) / kGpuPage * kGpuPage;
  if (3 * len <= info.p2p_window) return Fail("this BAR and window fit all three ranges");
  std::vector<nv_p2p_standin_alloc> r(3);
  std::vector<uint8_t*> maps;
  for (auto& x : r) {
    if (int e = ctx.Alloc(len, &x)) return Fail("ALLOC -> " + Err(e));
    maps.push_back(ctx.Map(x.va, kGpuPage, true));
    if (!maps.back()) return 1;
  }
  // Warm-up: under TCG the first run of a kernel path pays for translating its code (measured: the
  // mode timed first cost 1.5-3x per pin whichever it was), so each range is pinned and unpinned
  // once, from a file of its own, before either mode is timed.
  {
    int warm = OpenEdu(edu_path);
    if (warm < 0) return 1;
    for (auto& x : r) {
      resmem_edu_p2p_write w;
      if (int e = P2pWrite(warm, x, len, 0, nullptr, 0, RESMEM_EDU_P2P_NO_CACHE, &w))
        return Fail("warm-up pin -> " + Err(e));
    }
    close(warm);
  }
  const int seq[] = {0, 1, 0, 2, 0, 1, 2, 2, 0, 1};
  const int n = sizeof seq / sizeof seq[0];
  Checks ck;
  const char* mode_name[2] = {"lazy (cached)", "pin and unpin each transfer"};
  double per_transfer_us[2] = {0, 0};
  for (int mode = 0; mode < 2; ++mode) {
    int edu = OpenEdu(edu_path);
    if (edu < 0) return 1;
    LruModel model(2);
    std::string trace;
    for (int i = 0; i < n; ++i) {
      const int k = seq[i];
      model.Use(k);
      auto b = Block(2048, 100 * mode + i);
      std::memset(maps[k], kPoison, kGpuPage);
      resmem_edu_p2p_write w;
      const int e = P2pWrite(edu, r[k], len, 2048 * (i % 8), b.data(), 2048,
                             mode ? RESMEM_EDU_P2P_NO_CACHE : 0, &w);
      std::string why = e ? "P2P_WRITE -> " + Err(e) : Check(maps[k], kGpuPage, 2048 * (i % 8), 2048, 100 * mode + i);
      if (!why.empty()) {
        Diag("transfer %d into range %c: %s", i, 'A' + k, why.c_str());
        ++ck.failures;
      }
      char step[64];
      std::snprintf(step, sizeof step, "%c(%s %.0f+%.0f us) ", 'A' + k,
                    w.hit ? "hit" : w.evicted ? "evict+pin" : "pin", w.pin_ns / 1e3, w.unpin_ns / 1e3);
      trace += step;
    }
    resmem_edu_p2p_stats s;
    Stats(edu, &s);
    per_transfer_us[mode] = (s.pin_ns + s.unpin_ns) / 1e3 / n;
    Diag("%s: %s", mode_name[mode], trace.c_str());
    Diag("%s: %d transfers, pins %llu, hits %llu, evictions %llu, unpins %llu; per transfer: "
         "pin %.1f us + unpin %.1f us = %.1f us (ranges of %llu KiB, %llu GPU pages each)",
         mode_name[mode], n, (unsigned long long)s.pins, (unsigned long long)s.hits,
         (unsigned long long)s.evictions, (unsigned long long)s.unpins, s.pin_ns / 1e3 / n,
         s.unpin_ns / 1e3 / n, per_transfer_us[mode], (unsigned long long)len >> 10,
         (unsigned long long)len / kGpuPage);
    if (mode == 0 && (s.pins != model.pins || s.hits != model.hits || s.evictions != model.evictions)) {
      Diag("WRONG: an LRU of two predicts pins %llu, hits %llu, evictions %llu",
           (unsigned long long)model.pins, (unsigned long long)model.hits,
           (unsigned long long)model.evictions);
      ++ck.failures;
    }
    if (mode == 1 && (s.pins != static_cast<uint64_t>(n) || s.hits || s.unpins != static_cast<uint64_t>(n))) {
      Diag("WRONG: without the cache every transfer pins and unpins");
      ++ck.failures;
    }
    close(edu);
  }
  Diag("pin cost per transfer: %.1f us with the cache, %.1f us without (%.1fx)", per_transfer_us[0],
       per_transfer_us[1], per_transfer_us[0] > 0 ? per_transfer_us[1] / per_transfer_us[0] : 0.0);
  for (size_t i = 0; i < r.size(); ++i) {
    munmap(maps[i], kGpuPage);
    ctx.Free(r[i].va);
  }
  ck.NothingLeaked(ctx);
  return ck.Result();
}

// bench EDU SIZES PINS: device DMA into the BAR, MB/s per block size; pin cost per transfer with
// and without the cache over PINS pin-only transfers of a 1 MiB range.
int CaseBench(const std::string& edu_path, const std::string& sizes, int pins) {
  const uint64_t len = 16 * kGpuPage;
  Rig r;
  if (!r.Setup(edu_path, len, true)) return 1;
  Checks ck;
  int seq = 0;
  for (const char* s = sizes.c_str(); *s;) {
    char* end;
    const uint64_t block = std::strtoull(s, &end, 0);
    s = *end == ',' ? end + 1 : end;
    if (!block || block % 8 || block > len) return Fail("bad block size in " + sizes);
    auto b = Block(block, seq);
    resmem_edu_p2p_write w;
    const int e = P2pWrite(r.edu, r.a, len, 0, b.data(), block, 0, &w);
    std::string why = e ? "P2P_WRITE -> " + Err(e) : Check(r.m, len, 0, block, seq);
    ck.Want(why.empty(), "the block arrives whole");
    // The CPU writing the same block into the BAR through the mapping, for about 0.2 s.
    int reps = 0;
    double cpu_s = 0;
    const auto c0 = std::chrono::steady_clock::now();
    do {
      std::memcpy(r.m, b.data(), block);
      ++reps;
      cpu_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
    } while (cpu_s < 0.2);
    Diag("block %6" PRIu64 " B: device DMA into the BAR %.4f MB/s (%.0f ms, %u commands, %s)%s; "
         "CPU memcpy into the BAR mapping %.0f MB/s",
         block, block / (w.device_ns / 1e9) / 1e6, w.device_ns / 1e6, w.commands,
         w.hit ? "cached pin" : "pinned first", why.empty() ? "" : (" " + why).c_str(),
         reps * block / cpu_s / 1e6);
    std::memset(r.m, kPoison, len);
    ++seq;
  }
  // Pin cost: PINS pin-only transfers (data_len 0) of the same 1 MiB range.
  for (int mode = 0; mode < 2; ++mode) {
    ioctl(r.edu, RESMEM_EDU_IOC_P2P_FLUSH);
    resmem_edu_p2p_stats s0, s1;
    Stats(r.edu, &s0);
    for (int i = 0; i < pins; ++i) {
      resmem_edu_p2p_write w;
      if (int e = P2pWrite(r.edu, r.a, len, 0, nullptr, 0, mode ? RESMEM_EDU_P2P_NO_CACHE : 0, &w))
        return Fail("pin -> " + Err(e));
    }
    Stats(r.edu, &s1);
    Diag("pin cost %s: %d transfers of a 1 MiB range (16 GPU pages): %llu pins, %llu hits, "
         "get_pages+dma_map_pages %.1f us and dma_unmap_pages+put_pages %.1f us per transfer",
         mode ? "without the cache" : "with the cache", pins,
         (unsigned long long)(s1.pins - s0.pins), (unsigned long long)(s1.hits - s0.hits),
         (s1.pin_ns - s0.pin_ns) / 1e3 / pins, (s1.unpin_ns - s0.unpin_ns) / 1e3 / pins);
  }
  r.CloseEdu();
  ck.NothingLeaked(r.ctx);
  return ck.Result();
}

// dmabuf EDU: the provider exports a range as a dma-buf; the driver imports the fd, maps the
// attachment for the device, and the device writes through the sg list's bus addresses.
int CaseDmabuf(const std::string& edu_path) {
  const uint64_t len = 4 * kGpuPage;
  Rig r;
  if (!r.Setup(edu_path, len, true)) return 1;
  Checks ck;
  auto want = [&](bool ok, const std::string& what) { ck.Want(ok, what); };
  nv_p2p_standin_export x{};
  x.va = r.a.va + kGpuPage;
  x.length = 2 * kGpuPage;
  int e = ioctl(r.ctx.fd, NV_P2P_STANDIN_IOC_EXPORT_DMABUF, &x) ? errno : 0;
  const off_t size = e ? -1 : lseek(x.fd, 0, SEEK_END);
  Diag("EXPORT_DMABUF [va+64K, +128K) -> %s, fd %d, lseek(SEEK_END) %lld", Err(e).c_str(), x.fd,
       (long long)size);
  if (e) return Fail("EXPORT_DMABUF -> " + Err(e));
  want(size == static_cast<off_t>(x.length), "the dma-buf's size is the range's");
  const uint64_t at = kGpuPage - 4096;  // straddles the buffer's two 64 KiB entries
  auto b = Block(8192, 21);
  resmem_edu_dmabuf_write w{};
  w.fd = x.fd;
  w.offset = at;
  w.data = reinterpret_cast<uintptr_t>(b.data());
  w.data_len = 8192;
  e = ioctl(r.edu, RESMEM_EDU_IOC_DMABUF_WRITE, &w) ? errno : 0;
  std::string why = e ? "DMABUF_WRITE -> " + Err(e) : Check(r.m, len, kGpuPage + at, 8192, 21);
  Diag("the device wrote 8 KiB at offset 0x%llx of the dma-buf -> %s: %u sg entries, bus 0x%llx, "
       "%u commands, %.0f ms: %s", (unsigned long long)at, Err(e).c_str(), w.sg_entries,
       (unsigned long long)w.bus_addr, w.commands, w.device_ns / 1e6,
       why.empty() ? "intact in the BAR" : why.c_str());
  want(why.empty(), "the DMA lands in the exported range");
  want(w.sg_entries == 2, "two sg entries of 64 KiB");
  nv_p2p_standin_free f;
  e = r.ctx.Free(r.a.va, &f);
  Diag("cudaFree while the dma-buf is open -> %s", Err(e).c_str());
  want(e == EBUSY, "the allocation stays while its dma-buf is open");
  resmem_edu_dmabuf_write bad = w;
  bad.offset = x.length - 8;
  bad.data_len = 16;
  e = ioctl(r.edu, RESMEM_EDU_IOC_DMABUF_WRITE, &bad) ? errno : 0;
  Diag("DMABUF_WRITE past the buffer's end -> %s", Err(e).c_str());
  want(e == EINVAL, "past the end: EINVAL");
  bad = w;
  bad.fd = r.ctx.fd;  // an fd, but not a dma-buf
  e = ioctl(r.edu, RESMEM_EDU_IOC_DMABUF_WRITE, &bad) ? errno : 0;
  Diag("DMABUF_WRITE of a non-dma-buf fd -> %s", Err(e).c_str());
  want(e == EBADF, "not a dma-buf: EBADF");
  nv_p2p_standin_export mis{};
  mis.va = r.a.va + 4096;
  mis.length = kGpuPage;
  e = ioctl(r.ctx.fd, NV_P2P_STANDIN_IOC_EXPORT_DMABUF, &mis) ? errno : 0;
  Diag("EXPORT_DMABUF at va + 4 KiB -> %s", Err(e).c_str());
  want(e == EINVAL, "misaligned export: EINVAL");
  close(x.fd);
  e = r.ctx.Free(r.a.va);
  Diag("cudaFree after the dma-buf's fd closed -> %s", Err(e).c_str());
  want(e == 0, "freed once the dma-buf is gone");
  r.CloseEdu();
  ck.NothingLeaked(r.ctx);
  return ck.Result();
}

// phys-addr EDU [iommu]: the 2013 guide's way, the device given the page table's physical
// addresses (RESMEM_EDU_P2P_PHYS_ADDR). Without an IOMMU that is the bus address and the data
// lands; behind one the write faults (the DMAR line names the device and the address) and nothing
// lands, while the same transfer through nvidia_p2p_dma_map_pages' addresses does.
int CasePhysAddr(const std::string& edu_path, bool iommu) {
  Rig r;
  if (!r.Setup(edu_path, kGpuPage, true)) return 1;
  const auto& a = r.a;
  const int edu = r.edu;
  uint8_t* const m = r.m;
  const auto& info = r.info;
  Checks ck;
  auto want = [&](bool ok, const std::string& what) { ck.Want(ok, what); };
  KmsgSince log;
  auto b = Block(2048, 31);
  resmem_edu_p2p_write w;
  int e = P2pWrite(edu, a, kGpuPage, 0, b.data(), 2048, RESMEM_EDU_P2P_PHYS_ADDR, &w);
  const uint64_t phys = info.bar_phys + a.bar_offset;
  std::string why = Check(m, kGpuPage, 0, 2048, 31);
  Diag("physical addresses: P2P_WRITE -> %s, the device wrote to 0x%llx (the BAR page's physical "
       "address 0x%llx): %s", Err(e).c_str(), (unsigned long long)w.bus_addr,
       (unsigned long long)phys, why.empty() ? "the data landed" : "the data did not land");
  want(e == 0 && w.bus_addr == phys, "the device was given the physical address");
  if (!iommu) {
    want(why.empty(), "without an IOMMU the physical address reaches the BAR");
  } else {
    bool intact = true;
    for (uint64_t i = 0; i < 2048; ++i) intact &= m[i] == kPoison;
    want(intact, "behind the IOMMU nothing may land");
    char addr[40];
    std::snprintf(addr, sizeof addr, "fault addr 0x%llx", (unsigned long long)phys);
    bool dmar = false;
    std::vector<std::string> seen;
    for (int i = 0; i < 20 && !dmar; ++i) {
      dmar = Said(log, &seen, {"DMAR: [DMA Write", addr});
      if (!dmar) usleep(100000);
    }
    want(dmar, std::string("a DMAR fault line with ") + addr);
    std::memset(m, kPoison, kGpuPage);
    e = P2pWrite(edu, a, kGpuPage, 0, b.data(), 2048, 0, &w);
    why = e ? "P2P_WRITE -> " + Err(e) : Check(m, kGpuPage, 0, 2048, 31);
    Diag("through nvidia_p2p_dma_map_pages: bus 0x%llx (an IOVA): %s",
         (unsigned long long)w.bus_addr, why.empty() ? "the data landed" : why.c_str());
    want(why.empty() && w.bus_addr != phys, "the mapped IOVA reaches the BAR");
  }
  return ck.Result();
}

// mask-refused EDU: a device whose DMA mask ends below the BAR, no IOMMU: the provider refuses to
// map the BAR for it (EIO and the reason) for a pin and for a dma-buf, instead of the kernel's
// WARN; nothing stays pinned.
int CaseMaskRefused(const std::string& edu_path) {
  Rig r;
  if (!r.Setup(edu_path, kGpuPage, false)) return 1;
  Context& ctx = r.ctx;
  const auto& a = r.a;
  const int edu = r.edu;
  resmem_edu_info ei{};
  ioctl(edu, RESMEM_EDU_IOC_INFO, &ei);
  char mask[40];
  std::snprintf(mask, sizeof mask, "DMA mask 0x%llx", (unsigned long long)ei.dma_mask);
  Checks ck;
  KmsgSince log;
  std::vector<std::string> seen;
  resmem_edu_p2p_write w;
  int e = P2pWrite(edu, a, kGpuPage, 0, nullptr, 0, 0, &w);
  bool said = Said(log, &seen, {"dma_map_pages refused", mask, "-EIO"});
  Diag("%s (%u-bit mask) pins a range of the BAR -> %s%s", ei.name, ei.dma_bits, Err(e).c_str(),
       said ? "" : "  <- no dmesg line naming the mask");
  ck.Want(e == EIO && said, "the pin refused with EIO and the reason");
  nv_p2p_standin_export x{};
  x.va = a.va;
  x.length = kGpuPage;
  if (ioctl(ctx.fd, NV_P2P_STANDIN_IOC_EXPORT_DMABUF, &x)) return Fail("EXPORT_DMABUF failed");
  uint64_t word = 1;
  resmem_edu_dmabuf_write d{};
  d.fd = x.fd;
  d.data = reinterpret_cast<uintptr_t>(&word);
  d.data_len = 8;
  e = ioctl(edu, RESMEM_EDU_IOC_DMABUF_WRITE, &d) ? errno : 0;
  seen.clear();
  said = Said(log, &seen, {"dma-buf map refused", mask, "-EIO"});
  Diag("the same device imports a dma-buf of it -> %s%s", Err(e).c_str(),
       said ? "" : "  <- no dmesg line naming the mask");
  ck.Want(e == EIO && said, "the dma-buf map refused with EIO and the reason");
  close(x.fd);
  r.CloseEdu();
  ck.NothingLeaked(ctx);
  return ck.Result();
}

// held EDU: while a file of the driver holds the nvidia_p2p_* calls (symbol_get), the provider
// cannot unload; when the file closes it can. Unloads the provider.
int CaseHeld(const std::string& edu_path) {
  int edu = OpenEdu(edu_path);
  if (edu < 0) return 1;
  {
    Context ctx;
    if (!ctx.Open()) return 1;
    nv_p2p_standin_alloc a;
    if (int e = ctx.Alloc(kGpuPage, &a)) return Fail("ALLOC -> " + Err(e));
    resmem_edu_p2p_write w;
    if (int e = P2pWrite(edu, a, kGpuPage, 0, nullptr, 0, 0, &w)) return Fail("pin -> " + Err(e));
  }  // the context exits: its pin is revoked; only the driver's file holds the provider now
  const int e1 = syscall(SYS_delete_module, "nv_p2p_standin", O_NONBLOCK) ? errno : 0;
  Diag("unload of nv_p2p_standin while /dev/resmem_edu0 holds its calls -> %s", Err(e1).c_str());
  close(edu);
  const int e2 = syscall(SYS_delete_module, "nv_p2p_standin", O_NONBLOCK) ? errno : 0;
  Diag("after the file closed (symbol_put) -> %s", Err(e2).c_str());
  if (e1 != EWOULDBLOCK && e1 != EBUSY) return Fail("expected the unload refused while held");
  if (e2) return Fail("expected the unload to succeed once the file closed");
  return 0;
}

bool WriteSysfs(const std::string& path, const std::string& value) {
  FILE* f = std::fopen(path.c_str(), "w");
  const bool ok = f && std::fputs(value.c_str(), f) >= 0;
  const bool closed = f && std::fclose(f) == 0;
  if (!ok || !closed) Diag("cannot write %s to %s: %s", value.c_str(), path.c_str(), std::strerror(errno));
  return ok && closed;
}

// unbind EDU: the GPU goes (its PCI device unbound from the provider) while a driver file holds a
// pin and a dma-buf of the memory is open: the pin is revoked through the free callback, the
// context's calls and the driver's new pins are refused, the dma-buf maps nothing; the GPU bound
// again works.
int CaseUnbind(const std::string& edu_path) {
  Rig r;
  if (!r.Setup(edu_path, 2 * kGpuPage, false)) return 1;
  Checks ck;
  const std::string pci = r.info.pci_name, drv = "/sys/bus/pci/drivers/nv_p2p_standin/";
  resmem_edu_p2p_write w;
  if (int e = P2pWrite(r.edu, r.a, 2 * kGpuPage, 0, nullptr, 0, 0, &w)) return Fail("pin -> " + Err(e));
  nv_p2p_standin_export x{};
  x.va = r.a.va;
  x.length = kGpuPage;
  if (ioctl(r.ctx.fd, NV_P2P_STANDIN_IOC_EXPORT_DMABUF, &x)) return Fail("EXPORT_DMABUF failed");
  KmsgSince log;
  std::vector<std::string> seen;
  ck.Want(WriteSysfs(drv + "unbind", pci), "unbind " + pci);
  ck.Want(Said(log, &seen, {"revoking", "calling its free callback"}), "the provider revokes the pin");
  ck.Want(Said(log, &seen, {"free callback for GPU range", "put_pages will not be called"}),
          "the driver's free callback ran");
  resmem_edu_p2p_stats st;
  Stats(r.edu, &st);
  Diag("after the unbind: driver revoked %llu, cached %u", (unsigned long long)st.revoked, st.cached);
  ck.Want(st.revoked == 1 && st.cached == 0, "the pin was revoked, nothing cached");
  nv_p2p_standin_alloc more;
  int e = r.ctx.Alloc(kGpuPage, &more);
  Diag("cudaMalloc with the GPU gone -> %s", Err(e).c_str());
  ck.Want(e == ENODEV, "ALLOC: ENODEV");
  e = P2pWrite(r.edu, r.a, 2 * kGpuPage, 0, nullptr, 0, 0, &w);
  Diag("a new pin with the GPU gone -> %s", Err(e).c_str());
  ck.Want(e == EIO, "get_pages: EIO (no GPU)");
  uint64_t word = 1;
  resmem_edu_dmabuf_write d{};
  d.fd = x.fd;
  d.data = reinterpret_cast<uintptr_t>(&word);
  d.data_len = 8;
  e = ioctl(r.edu, RESMEM_EDU_IOC_DMABUF_WRITE, &d) ? errno : 0;
  Diag("a write into the dma-buf with the GPU gone -> %s", Err(e).c_str());
  ck.Want(e == ENODEV, "the dma-buf maps nothing: ENODEV");
  close(x.fd);
  r.CloseEdu();
  ck.Want(WriteSysfs(drv + "bind", pci), "bind " + pci + " again");
  ck.Want(Said(log, &seen, {"GPU memory and BAR"}), "the provider's probe line again");
  Rig again;
  if (!again.Setup(edu_path, kGpuPage, true)) return Fail("the GPU bound again does not work");
  auto b = Block(2048, 41);
  e = P2pWrite(again.edu, again.a, kGpuPage, 0, b.data(), 2048, 0, &w);
  std::string why = e ? "P2P_WRITE -> " + Err(e) : Check(again.m, kGpuPage, 0, 2048, 41);
  Diag("a transfer into the GPU bound again: %s", why.empty() ? "intact" : why.c_str());
  ck.Want(why.empty(), "the GPU bound again works");
  again.CloseEdu();
  ck.NothingLeaked(again.ctx);
  return ck.Result();
}

// unpin-during-revoke EDU: the driver unpins a cached pin (P2P_FLUSH) while a cudaFree revokes it,
// the provider slowed between marking the pin and calling its callback (revoke_delay_ms). The pin
// must outlive its callback: FLUSH returns only once the callback has run (the driver's revoked
// count is 1 by then), no put_pages comes after it, nothing leaks. Before the fix FLUSH freed the
// pin at once (revoked 0 when it returned) and the callback ran on freed memory.
int CaseUnpinDuringRevoke(const std::string& edu_path) {
  const uint64_t len = 2 * kGpuPage;
  const char* delay = "/sys/module/nv_p2p_standin/parameters/revoke_delay_ms";
  Rig r;
  if (!r.Setup(edu_path, len, false)) return 1;
  auto b = Block(4096, 9);
  resmem_edu_p2p_write w;
  if (int e = P2pWrite(r.edu, r.a, len, 0, b.data(), 4096, 0, &w)) return Fail("P2P_WRITE -> " + Err(e));
  if (!WriteSysfs(delay, "300")) return Fail(std::string("cannot write ") + delay);
  KmsgSince log;
  nv_p2p_standin_free f{};
  int fe = -1;
  std::thread freer([&] { fe = r.ctx.Free(r.a.va, &f); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // FREE has marked the pin by now
  const auto t0 = std::chrono::steady_clock::now();
  const int fl = ioctl(r.edu, RESMEM_EDU_IOC_P2P_FLUSH) ? errno : 0;
  const double flush_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  resmem_edu_p2p_stats st;
  Stats(r.edu, &st);
  freer.join();
  WriteSysfs(delay, "0");
  Diag("P2P_FLUSH during the revocation -> %s after %.0f ms; the driver had then seen %llu "
       "revocation(s), %u pins cached", Err(fl).c_str(), flush_ms,
       (unsigned long long)st.revoked, st.cached);
  Checks ck;
  ck.Want(fe == 0 && f.revoked == 1, "FREE revokes the one pin");
  ck.Want(fl == 0 && st.cached == 0, "FLUSH succeeds and empties the cache");
  ck.Want(st.revoked == 1, "FLUSH returned after the pin's free callback had run");
  std::vector<std::string> seen;
  ck.Want(Said(log, &seen, {"met its revocation in progress", "waiting for its free callback"}),
          "the unpin's put_pages met the revocation and waited for the callback");
  ck.NothingLeaked(r.ctx);
  return ck.Result();
}

// window-after-revoke EDU: a pin's share of the P2P window comes back when the revocation is
// over, not when the driver lets go of the pin. File 1 pins an allocation as large as the window;
// a cudaFree revokes it with the provider slowed after the callbacks (release_delay_ms, as NVIDIA's
// driver tears its side down after the callback returns); file 1 closes meanwhile, at once (its
// callback has run: no put_pages); file 2's pin of another allocation then finds the window still
// full (ENOMEM), and succeeds once the cudaFree has returned. The random sequences' bound on the
// window (kmod/tests/resmem_seq_pins.h PinLedger::Release) rests on this order.
int CaseWindowAfterRevoke(const std::string& edu_path) {
  const char* delay = "/sys/module/nv_p2p_standin/parameters/release_delay_ms";
  Context ctx;
  if (!ctx.Open()) return 1;
  nv_p2p_standin_info info;
  if (int e = ctx.Info(&info)) return Fail("INFO -> " + Err(e));
  const uint64_t whole = info.p2p_window / kGpuPage * kGpuPage;
  if (whole + kGpuPage > info.bar_size) return Fail("the BAR has no page beside a window-sized allocation");
  nv_p2p_standin_alloc big, small;
  if (int e = ctx.Alloc(whole, &big)) return Fail("ALLOC of the window's size -> " + Err(e));
  if (int e = ctx.Alloc(kGpuPage, &small)) return Fail("ALLOC of one page -> " + Err(e));
  int holder = OpenEdu(edu_path), asker = OpenEdu(edu_path);
  if (holder < 0 || asker < 0) return 1;
  Checks ck;
  resmem_edu_p2p_write w;
  int e = P2pWrite(holder, big, whole, 0, nullptr, 0, 0, &w);
  Diag("file 1 pins %llu MiB, the whole window -> %s", (unsigned long long)whole >> 20, Err(e).c_str());
  if (e) return Fail("the window-sized pin failed");
  if (!WriteSysfs(delay, "500")) return Fail(std::string("cannot write ") + delay);
  nv_p2p_standin_free f{};
  std::atomic<bool> freed{false};
  int fe = -1;
  std::thread freer([&] { fe = ctx.Free(big.va, &f); freed = true; });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the callback has run by now
  resmem_edu_p2p_stats st;
  Stats(holder, &st);
  close(holder);
  const bool closed_first = !freed;
  const int during = P2pWrite(asker, small, kGpuPage, 0, nullptr, 0, 0, &w);
  const bool during_first = !freed;
  freer.join();
  WriteSysfs(delay, "0");
  const int after = P2pWrite(asker, small, kGpuPage, 0, nullptr, 0, 0, &w);
  Diag("file 1 revoked %llu before its close; closed while the cudaFree ran: %s; file 2's pin then "
       "-> %s (cudaFree still running: %s), after the cudaFree returned -> %s",
       (unsigned long long)st.revoked, closed_first ? "yes" : "no", Err(during).c_str(),
       during_first ? "yes" : "no", Err(after).c_str());
  ck.Want(fe == 0 && f.revoked == 1, "FREE revokes the one pin");
  ck.Want(st.revoked == 1, "file 1's callback ran within 100 ms");
  ck.Want(closed_first, "file 1's close returned before the cudaFree (no put_pages to wait on)");
  ck.Want(!during_first || during == ENOMEM, "the window stays full until the cudaFree returns");
  ck.Want(during_first, "file 2 pinned while the cudaFree ran (the guest was too slow to tell)");
  ck.Want(after == 0, "the window is free once the cudaFree returned");
  close(asker);
  ctx.Free(small.va);
  ck.NothingLeaked(ctx);
  return ck.Result();
}

// write-waits-out-free EDU: a P2P_WRITE that waits for the device while its allocation is freed
// and the next ALLOC takes the freed address pins the new allocation, caches the pin, and the
// provider counts it. File 1's uncached transfer holds the device (two ~100 ms commands a 2 KiB
// piece); file 2's cached write into allocation A waits behind it; meanwhile cudaFree(A) revokes
// nothing (file 2 has not pinned) and cudaMalloc of A's size gets A's address (the BAR is first
// fit; va = vaSpaceToken * 4 GiB + the BAR offset). The random sequences' bound on the window
// (kmod/tests/resmem_seq_pins.h DropRevoked: a write in flight keeps its record past the FREE)
// rests on this order: d_random_sequences_edu_p2p failed on it (docs/reliability.md).
int CaseWriteWaitsOutFree(const std::string& edu_path) {
  Context ctx;
  if (!ctx.Open()) return 1;
  nv_p2p_standin_info info;
  if (int e = ctx.Info(&info)) return Fail("INFO -> " + Err(e));
  const uint64_t pinned0 = info.pinned_bytes;
  nv_p2p_standin_alloc busy, a, next;
  if (int e = ctx.Alloc(kGpuPage, &busy)) return Fail("ALLOC of the holder's page -> " + Err(e));
  if (int e = ctx.Alloc(2 * kGpuPage, &a)) return Fail("ALLOC of A -> " + Err(e));
  int holder = OpenEdu(edu_path), waiter = OpenEdu(edu_path);
  if (holder < 0 || waiter < 0) return 1;
  std::vector<uint8_t> data(3 * RESMEM_EDU_PIECE, 0x5a);
  resmem_edu_p2p_write hw, ww;
  int he = -1, we = -1;
  std::atomic<bool> wrote{false};
  std::thread h([&] { he = P2pWrite(holder, busy, kGpuPage, 0, data.data(), data.size(), RESMEM_EDU_P2P_NO_CACHE, &hw); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the holder's first command runs
  std::thread w([&] { we = P2pWrite(waiter, a, 2 * kGpuPage, 0, nullptr, 0, 0, &ww); wrote = true; });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // file 2 waits for the device
  const bool waited = !wrote;
  nv_p2p_standin_free f{};
  const int fe = ctx.Free(a.va, &f);
  const int ae = ctx.Alloc(2 * kGpuPage, &next);
  const bool before = !wrote;
  w.join();
  h.join();
  resmem_edu_p2p_stats st;
  Stats(waiter, &st);
  ctx.Info(&info);
  const uint64_t held = info.pinned_bytes - pinned0;
  Diag("file 2 waited: %s; cudaFree(A) -> %s, %u revoked; cudaMalloc -> %s at 0x%llx (A was 0x%llx) before file 2's "
       "write returned: %s; the write -> %s (hit %u); file 2 caches %u pins, %llu bytes; the provider holds %llu "
       "bytes more than before", waited ? "yes" : "no", Err(fe).c_str(), f.revoked, Err(ae).c_str(),
       (unsigned long long)next.va, (unsigned long long)a.va, before ? "yes" : "no", Err(we).c_str(), ww.hit,
       st.cached, (unsigned long long)st.cached_bytes, (unsigned long long)held);
  Checks ck;
  ck.Want(he == 0 && hw.written == data.size(), "file 1's transfer completed");
  ck.Want(waited && before, "file 2 waited for the device until the cudaMalloc had returned (the guest was too slow to tell)");
  ck.Want(fe == 0 && f.revoked == 0, "cudaFree(A) revoked nothing: file 2 had not pinned");
  ck.Want(ae == 0 && next.va == a.va, "the next cudaMalloc of A's size took A's address");
  ck.Want(we == 0 && !ww.hit, "file 2's write pinned the new allocation");
  ck.Want(st.cached == 1 && st.cached_bytes == 2 * kGpuPage, "file 2 caches that pin");
  ck.Want(held == 2 * kGpuPage, "the provider counts it in the window");
  close(waiter);
  ctx.Info(&info);
  ck.Want(info.pinned_bytes == pinned0, "file 2's close gave the share back");
  close(holder);
  ctx.Free(next.va);
  ctx.Free(busy.va);
  ck.NothingLeaked(ctx);
  return ck.Result();
}

thread_local sigjmp_buf* tl_bus_jump = nullptr;
void OnSigbus(int) {
  if (tl_bus_jump) siglongjmp(*tl_bus_jump, 1);
  _exit(99);
}

// Reads one word at p; false when the read faulted (SIGBUS: the page is not GPU memory any more).
bool ReadWord(const volatile uint64_t* p, uint64_t* out) {
  sigjmp_buf jump;
  tl_bus_jump = &jump;
  bool ok = false;
  if (sigsetjmp(jump, 1) == 0) {
    *out = *p;
    ok = true;
  }
  tl_bus_jump = nullptr;
  return ok;
}

// map-private: a private (copy-on-write) mapping of GPU memory is refused (remap_pfn_range would
// rewrite its vm_pgoff and cudaFree's unmap would miss it); a shared one faults (SIGBUS) once
// cudaFree has run, whether or not it was touched before.
int CaseMapPrivate() {
  Context ctx;
  nv_p2p_standin_alloc a;
  if (!ctx.Open()) return 1;
  if (int e = ctx.Alloc(2 * kGpuPage, &a)) return Fail("ALLOC -> " + Err(e));
  struct sigaction sa{};
  sa.sa_handler = OnSigbus;
  sigaction(SIGBUS, &sa, nullptr);
  Checks ck;
  void* priv = mmap(nullptr, kGpuPage, PROT_READ | PROT_WRITE, MAP_PRIVATE, ctx.fd, (off_t)a.va);
  Diag("mmap MAP_PRIVATE of the allocation -> %s", priv == MAP_FAILED ? ErrName(errno) : "mapped");
  ck.Want(priv == MAP_FAILED && errno == EINVAL, "a private mapping of GPU memory is refused (EINVAL)");
  auto* shared = reinterpret_cast<volatile uint64_t*>(ctx.Map(a.va, 2 * kGpuPage, false));
  if (!shared) return 1;
  shared[0] = 0x1234;  // the first page is mapped before the free, the second page not
  if (int e = ctx.Free(a.va)) return Fail("FREE -> " + Err(e));
  uint64_t v = 0;
  const bool touched = ReadWord(&shared[0], &v), untouched = ReadWord(&shared[kGpuPage / 8], &v);
  Diag("after cudaFree: the page touched before it %s, the one never touched %s",
       touched ? "still reads" : "faults (SIGBUS)", untouched ? "reads" : "faults (SIGBUS)");
  ck.Want(!touched && !untouched, "no page of a shared mapping reads GPU memory after cudaFree");
  if (priv != MAP_FAILED) {
    const bool kept = ReadWord(static_cast<volatile uint64_t*>(priv), &v);
    Diag("the private mapping after cudaFree %s", kept ? "still reads GPU memory" : "faults");
    munmap(priv, kGpuPage);
  }
  munmap(const_cast<uint64_t*>(shared), 2 * kGpuPage);
  ck.NothingLeaked(ctx);
  return ck.Result();
}

// One round of race-free: a transfer into the allocation (pin + DMA), a read through a new mapping
// of its BAR pages, and the close of the edu file the transfer uses (unpinning what it cached),
// all racing the allocation's cudaFree, which comes after delay_us.
struct RaceCounts {
  std::atomic<int> late_reads{0}, odd_errors{0}, reads{0}, faults{0}, cancelled{0};
};

void RaceRound(Context& ctx, const std::string& edu_path, const std::vector<uint64_t>& block,
               int delay_us, int close_us, RaceCounts* n) {
  nv_p2p_standin_alloc a;
  if (ctx.Alloc(2 * kGpuPage, &a)) {
    ++n->odd_errors;
    return;
  }
  int edu = open(edu_path.c_str(), O_RDWR | O_CLOEXEC);
  std::atomic<bool> freed{false};
  std::thread writer([&] {
    resmem_edu_p2p_write w;
    const int e = P2pWrite(edu, a, 2 * kGpuPage, 0, block.data(), 4096, 0, &w);
    if (e == ECANCELED) ++n->cancelled;
    else if (e && e != EINVAL && e != EBADF) ++n->odd_errors;  // EINVAL: pinned after the free began
  });
  std::thread mapper([&] {
    void* m = mmap(nullptr, kGpuPage, PROT_READ, MAP_SHARED, ctx.fd, static_cast<off_t>(a.va));
    if (m == MAP_FAILED) return;  // the free came first
    uint64_t v;
    const bool was_freed = freed.load();
    if (ReadWord(static_cast<volatile uint64_t*>(m), &v)) {
      ++n->reads;
      if (was_freed) ++n->late_reads;
    } else {
      ++n->faults;
    }
    munmap(m, kGpuPage);
  });
  std::thread closer([&] {
    std::this_thread::sleep_for(std::chrono::microseconds(close_us));
    close(edu);
  });
  std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
  ctx.Free(a.va);
  freed = true;
  writer.join();
  mapper.join();
  closer.join();
}

// race-free EDU ROUNDS: cudaFree races a transfer, a mapping's read and the edu file's close, ROUNDS
// times, the delays drawn from kSeed. No read through a mapping may complete after its cudaFree
// returned, every transfer ends 0, ECANCELED or EINVAL, the kernel stays quiet and, at the end,
// nothing is left pinned, mapped or allocated.
int CaseRaceFree(const std::string& edu_path, int rounds) {
  Context ctx;
  if (!ctx.Open()) return 1;
  struct sigaction sa{};
  sa.sa_handler = OnSigbus;
  sigaction(SIGBUS, &sa, nullptr);
  KmsgSince log;
  std::mt19937_64 rng(kSeed);
  const auto block = Block(4096, 11);
  RaceCounts n;
  for (int i = 0; i < rounds; ++i)
    RaceRound(ctx, edu_path, block, static_cast<int>(rng() % 300000), static_cast<int>(rng() % 300000), &n);
  Diag("%d rounds (seed 0x%llx): %d reads through a mapping, %d faulted, %d after their cudaFree; "
       "%d transfers cancelled by the revocation, %d odd errors", rounds, (unsigned long long)kSeed,
       n.reads.load(), n.faults.load(), n.late_reads.load(), n.cancelled.load(), n.odd_errors.load());
  Checks ck;
  ck.Want(n.late_reads == 0, "no read through a mapping completes after its cudaFree returned");
  ck.Want(n.odd_errors == 0, "transfers end 0, ECANCELED or EINVAL");
  std::vector<std::string> seen;
  ck.Want(!Said(log, &seen, {"BUG:"}) && !Said(log, &seen, {"WARNING:"}) &&
              !Said(log, &seen, {"general protection"}),
          "the kernel reported nothing");
  ck.NothingLeaked(ctx);
  return ck.Result();
}

// leaks: the provider's counters at the end of the run.
int CaseNoLeaks() {
  Context ctx;
  if (!ctx.Open()) return 1;
  nv_p2p_standin_info i;
  ctx.Info(&i);
  std::string left = Leftovers(ctx);
  if (!left.empty()) return Fail(left);
  if (i.allocated_bytes) return Fail(std::to_string(i.allocated_bytes) + " bytes still allocated");
  return 0;
}

int Usage() {
  std::fprintf(stderr,
               "usage: resmem_p2p_guest CASE ARGS (EDU: /dev/resmem_eduN)\n"
               "  absent EDU | pin EDU [iommu] | dma EDU BLOCK BLOCKS | revoke EDU\n"
               "  errors EDU misaligned|bad_token|bad_version | bar-full EDU | lazy-unpin EDU\n"
               "  bench EDU SIZES PINS | dmabuf EDU | phys-addr EDU [iommu] | held EDU\n"
               "  mask-refused EDU | unbind EDU | no-leaks | map-private\n"
               "  unpin-during-revoke EDU | window-after-revoke EDU | write-waits-out-free EDU\n"
               "  race-free EDU ROUNDS\n");
  return 2;
}

int Main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc < 2) return Usage();
  const std::string c = argv[1];
  if (c == "no-leaks" && argc == 2) return CaseNoLeaks();
  if (c == "map-private" && argc == 2) return CaseMapPrivate();
  if (argc < 3) return Usage();
  const std::string edu = argv[2];
  if (c == "absent" && argc == 3) return CaseAbsent(edu);
  if (c == "pin" && (argc == 3 || (argc == 4 && std::string(argv[3]) == "iommu")))
    return CasePin(edu, argc == 4);
  if (c == "dma" && argc == 5)
    return CaseDma(edu, std::strtoull(argv[3], nullptr, 0), std::atoi(argv[4]));
  if (c == "revoke" && argc == 3) return CaseRevoke(edu);
  if (c == "errors" && argc == 4) return CaseErrors(edu, argv[3]);
  if (c == "bar-full" && argc == 3) return CaseBarFull(edu);
  if (c == "lazy-unpin" && argc == 3) return CaseLazyUnpin(edu);
  if (c == "bench" && argc == 5) return CaseBench(edu, argv[3], std::atoi(argv[4]));
  if (c == "dmabuf" && argc == 3) return CaseDmabuf(edu);
  if (c == "phys-addr" && (argc == 3 || (argc == 4 && std::string(argv[3]) == "iommu")))
    return CasePhysAddr(edu, argc == 4);
  if (c == "held" && argc == 3) return CaseHeld(edu);
  if (c == "mask-refused" && argc == 3) return CaseMaskRefused(edu);
  if (c == "unbind" && argc == 3) return CaseUnbind(edu);
  if (c == "unpin-during-revoke" && argc == 3) return CaseUnpinDuringRevoke(edu);
  if (c == "window-after-revoke" && argc == 3) return CaseWindowAfterRevoke(edu);
  if (c == "write-waits-out-free" && argc == 3) return CaseWriteWaitsOutFree(edu);
  if (c == "race-free" && argc == 4) return CaseRaceFree(edu, std::atoi(argv[3]));
  return Usage();
}

}  // namespace
}  // namespace resmem

int main(int argc, char** argv) { return resmem::Main(argc, argv); }
