// The edu cases of the kmod lane's guest (ci/qemu/guest_init.sh; docs/rdma.md): QEMU's edu PCI
// device, driven by kmod/resmem_edu.ko, is the producer that DMAs numbered blocks into a reserved
// range, and a reader checks them through its mapping of /dev/resmemN. Statically linked.
//
//   resmem_edu_guest CASE [ARGS...]   exit 0 = pass, 1 = fail, 2 = usage; "# " lines are
//                                     diagnostics the lane keeps with the case.
//
// The blocks are the stream's (backends/cuda/block_pattern.h: a stamp with the block's number in
// each 4 KiB page, SplitMix64 fill), built in user space, handed to the driver, and written into
// the range by the device's DMA engine; the reader counts delivered, dropped and corrupt blocks by
// number as `resmem stream` does (engine/stream/stream.h), with a ring of slots and the producer
// waiting for a free slot (the stream's flat-out mode). The range is poisoned through the mapping
// first, so a block that the device did not write cannot pass.
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backends/api/status.h"
#include "backends/cuda/block_pattern.h"
#include "kmod/uapi/resmem_edu_ioctl.h"
#include "kmod/uapi/resmem_ioctl.h"

#include "kmod/tests/tap_diag.h"

namespace resmem {
namespace {

using guest::Diag;
using guest::ErrName;
using guest::Fail;
using guest::KmsgSince;

constexpr uint64_t kSeed = 0x656475ull;  // "edu": the blocks' fill seeds derive from it
constexpr uint8_t kPoison = 0xa5;        // what the reader writes before the device does

// The fill of block `seq`: its own for every block, not one per slot as the stream's CPU producer
// keeps (it rewrites only the page stamps, block_pattern.h). The device writes a block in 2 KiB
// pieces, below the stamp's page: with a slot's fill, a piece the device never wrote keeps the
// previous block's bytes, which equal the new ones but for the stamps, and passes. The fault case
// found that (a dropped second half-page passed as delivered, 2026-11-23).
uint64_t FillSeed(uint64_t seq) { return pattern::Mix(kSeed * 7919 + seq); }

// An edu device and a resmem device, opened; the edu file attached to the range when asked.
struct Pair {
  int edu = -1, res = -1;
  resmem_edu_info edu_info{};
  resmem_info res_info{};
  ~Pair() {
    if (edu >= 0) close(edu);
    if (res >= 0) close(res);
  }
};

bool OpenPair(const std::string& edu_path, const std::string& res_path, Pair* p) {
  p->edu = open(edu_path.c_str(), O_RDWR | O_CLOEXEC);
  p->res = open(res_path.c_str(), O_RDWR | O_CLOEXEC);
  if (p->edu < 0 || p->res < 0) {
    Fail("cannot open " + (p->edu < 0 ? edu_path : res_path) + ": " + std::strerror(errno));
    return false;
  }
  if (ioctl(p->edu, RESMEM_EDU_IOC_INFO, &p->edu_info) || ioctl(p->res, RESMEM_IOC_INFO, &p->res_info)) {
    Fail(std::string("INFO: ") + std::strerror(errno));
    return false;
  }
  Diag("%s: edu at %s, %u-bit DMA mask 0x%llx, %s DMA; target %s [mem 0x%llx-0x%llx] %s",
       p->edu_info.name, p->edu_info.pci_name, p->edu_info.dma_bits,
       static_cast<unsigned long long>(p->edu_info.dma_mask),
       (p->edu_info.flags & RESMEM_EDU_TRANSLATED) ? "IOMMU-translated" : "direct",
       p->res_info.name, static_cast<unsigned long long>(p->res_info.phys_addr),
       static_cast<unsigned long long>(p->res_info.phys_addr + p->res_info.size - 1),
       p->res_info.mode == RESMEM_MODE_PAGES ? "pages" : "pfnmap");
  return true;
}

int Attach(Pair& p) {
  resmem_edu_attach a{};
  a.resmem_fd = p.res;
  return ioctl(p.edu, RESMEM_EDU_IOC_ATTACH, &a) == 0 ? 0 : errno;
}

// The device writes `len` bytes of `data` at `offset` of the attached range.
int DeviceWrite(int edu, const void* data, uint64_t len, uint64_t offset, resmem_edu_write* w) {
  *w = resmem_edu_write{};
  w->data = reinterpret_cast<uintptr_t>(data);
  w->length = len;
  w->offset = offset;
  return ioctl(edu, RESMEM_EDU_IOC_WRITE, w) == 0 ? 0 : errno;
}

// Maps the first `bytes` of the range and poisons them through the mapping.
uint8_t* MapPoisoned(const Pair& p, uint64_t bytes) {
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, p.res, 0);
  if (m == MAP_FAILED) {
    Fail(std::string("mmap: ") + std::strerror(errno));
    return nullptr;
  }
  std::memset(m, kPoison, bytes);
  return static_cast<uint8_t*>(m);
}

// What is wrong with a block in the mapping, or "" when it is whole.
std::string BlockProblem(const uint8_t* at, uint64_t len, uint64_t seq) {
  const uint64_t bad = pattern::CountMismatches(at, len, seq, FillSeed(seq));
  if (!bad) return "";
  const auto* w = reinterpret_cast<const uint64_t*>(at);
  uint64_t i = 0;
  while (w[i] == pattern::Word(i, seq, FillSeed(seq))) ++i;
  char why[200];
  std::snprintf(why, sizeof why, "%" PRIu64 " of %" PRIu64 " words wrong, first at byte %" PRIu64
                ": 0x%016" PRIx64 " where 0x%016" PRIx64 " belongs%s",
                bad, len / 8, i * 8, w[i], pattern::Word(i, seq, FillSeed(seq)),
                w[i] == 0xa5a5a5a5a5a5a5a5ull ? " (the poison: the device never wrote it)" : "");
  return why;
}

// ---- the device produces, the reader checks ----------------------------------------------------

// blocks EDU RESMEM BLOCK_BYTES BLOCKS SLOTS [iommu]: the stream's ring with the device as its
// producer. With "iommu" the device's DMA must be translated (the bus address is an IOVA).
int CaseBlocks(const std::string& edu_path, const std::string& res_path, uint64_t block,
               uint64_t blocks, int slots, bool want_iommu) {
  Pair p;
  if (!OpenPair(edu_path, res_path, &p)) return 1;
  const bool translated = p.edu_info.flags & RESMEM_EDU_TRANSLATED;
  if (want_iommu != translated)
    return Fail(want_iommu ? "expected an IOMMU to translate for the device" : "expected direct DMA");
  if (!block || block % 4096 || slots < 2 || block * slots > p.res_info.size)
    return Fail("bad block size or slots for this range");
  if (int err = Attach(p)) return Fail(std::string("ATTACH -> ") + ErrName(err));
  uint8_t* ring = MapPoisoned(p, block * slots);
  if (!ring) return 1;

  std::mutex mu;
  std::condition_variable cv;
  uint64_t written = 0, consumed = 0;  // blocks the device finished / the reader finished
  int producer_err = 0;
  uint64_t first_bus = 0, commands = 0;
  double device_s = 0;
  std::vector<std::pair<uint64_t, std::string>> lost;
  uint64_t delivered = 0, dropped = 0, corrupt = 0;

  std::thread producer([&] {
    std::vector<uint64_t> buf(block / 8);
    for (uint64_t seq = 0; seq < blocks; ++seq) {
      const int slot = static_cast<int>(seq % slots);
      {  // flat out: wait for the slot's previous block to be read
        std::unique_lock<std::mutex> l(mu);
        cv.wait(l, [&] { return seq < consumed + slots; });
      }
      pattern::Fill(buf.data(), block, seq, FillSeed(seq));
      resmem_edu_write w;
      int err = DeviceWrite(p.edu, buf.data(), block, slot * block, &w);
      std::lock_guard<std::mutex> l(mu);
      if (err) {
        producer_err = err;
        written = blocks;  // ends the reader
        cv.notify_all();
        return;
      }
      if (seq == 0) first_bus = w.dma_addr;
      commands += w.commands;
      device_s += w.device_ns / 1e9;
      written = seq + 1;
      cv.notify_all();
    }
  });
  const auto t0 = std::chrono::steady_clock::now();
  for (uint64_t seq = 0; seq < blocks; ++seq) {
    const int slot = static_cast<int>(seq % slots);
    {
      std::unique_lock<std::mutex> l(mu);
      cv.wait(l, [&] { return written > seq; });
      if (producer_err) break;
    }
    std::string why = BlockProblem(ring + slot * block, block, seq);
    std::lock_guard<std::mutex> l(mu);
    // The slot's next block started before this one was read: the stream calls that dropped.
    if (written > seq + slots) {
      ++dropped;
      lost.emplace_back(seq, "dropped: its slot was overwritten before it was read");
    } else if (why.empty()) {
      ++delivered;
    } else {
      ++corrupt;
      lost.emplace_back(seq, "corrupt: " + why);
    }
    consumed = seq + 1;
    cv.notify_all();
  }
  producer.join();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  munmap(ring, block * slots);

  for (const auto& [seq, why] : lost) Diag("block %" PRIu64 ": %s", seq, why.c_str());
  Diag("%" PRIu64 " blocks of %" PRIu64 " B in %d slots: delivered %" PRIu64 ", dropped %" PRIu64
       ", corrupt %" PRIu64 "; %" PRIu64 " DMA commands, device %.3f s, %.4f MB/s",
       blocks, block, slots, delivered, dropped, corrupt, commands, device_s,
       device_s > 0 ? delivered * block / device_s / 1e6 : 0.0);
  Diag("the device wrote block 0 to bus address 0x%" PRIx64 " (range at phys 0x%llx); wall %.2f s",
       first_bus, static_cast<unsigned long long>(p.res_info.phys_addr), wall);
  if (producer_err) return Fail(std::string("WRITE -> ") + ErrName(producer_err));
  if (!translated && first_bus != p.res_info.phys_addr)
    return Fail("without an IOMMU the bus address must be the physical address");
  if (translated && first_bus == p.res_info.phys_addr)
    return Fail("through the IOMMU the bus address should be an IOVA, not the physical address");
  if (commands != blocks * (block / RESMEM_EDU_PIECE) * 2)
    return Fail("expected two DMA commands per piece of RESMEM_EDU_PIECE bytes");
  if (delivered != blocks) return Fail("not every block arrived whole");
  return 0;
}

// refused EDU RESMEM: ATTACH fails with ERANGE and one dmesg line naming the range, the mask and
// the way out; a WRITE afterwards finds nothing attached (no DMA happened).
int CaseRefused(const std::string& edu_path, const std::string& res_path) {
  Pair p;
  if (!OpenPair(edu_path, res_path, &p)) return 1;
  KmsgSince log;
  const int err = Attach(p);
  Diag("ATTACH %s to %s -> %s", p.edu_info.name, p.res_info.name, err ? ErrName(err) : "0");
  char range[64], reach[64];
  std::snprintf(range, sizeof range, "[mem 0x%llx-0x%llx]",
                static_cast<unsigned long long>(p.res_info.phys_addr),
                static_cast<unsigned long long>(p.res_info.phys_addr + p.res_info.size - 1));
  std::snprintf(reach, sizeof reach, "%u-bit DMA mask reaches 0x0-0x%llx", p.edu_info.dma_bits,
                static_cast<unsigned long long>(p.edu_info.dma_mask));
  bool said = false;
  for (const auto& l : log.Lines()) {
    Diag("console: %s", l.c_str());
    said |= l.find(range) != std::string::npos && l.find(reach) != std::string::npos &&
            l.find("reserve the buffer in RAM below") != std::string::npos &&
            l.find("-ERANGE") != std::string::npos;
  }
  if (err != ERANGE) return Fail("expected ERANGE");
  if (!said)
    return Fail(std::string("no dmesg line with ") + range + ", '" + reach +
                "', the way out and -ERANGE");
  uint64_t word = 0;
  resmem_edu_write w;
  const int werr = DeviceWrite(p.edu, &word, sizeof word, 0, &w);
  Diag("WRITE after the refusal -> %s", werr ? ErrName(werr) : "0");
  if (werr != ENOTCONN) return Fail("expected ENOTCONN: the refused range must not be attached");
  return 0;
}

// bad-requests EDU RESMEM: what the driver refuses before any DMA, with the errno it promises.
int CaseBadRequests(const std::string& edu_path, const std::string& res_path) {
  Pair p;
  if (!OpenPair(edu_path, res_path, &p)) return 1;
  int failures = 0;
  auto expect = [&](const char* what, int got, int want) {
    Diag("%s -> %s%s", what, got ? ErrName(got) : "0", got == want ? "" : "  <- WRONG");
    failures += got != want;
  };
  uint64_t word = 0;
  resmem_edu_write w;
  expect("WRITE before ATTACH", DeviceWrite(p.edu, &word, 8, 0, &w), ENOTCONN);
  resmem_edu_attach a{};
  a.resmem_fd = p.edu;  // an open file, but not a /dev/resmemN
  expect("ATTACH of /dev/resmem_eduN itself", ioctl(p.edu, RESMEM_EDU_IOC_ATTACH, &a) ? errno : 0, EINVAL);
  a.resmem_fd = 987654;
  expect("ATTACH of a closed fd", ioctl(p.edu, RESMEM_EDU_IOC_ATTACH, &a) ? errno : 0, EBADF);
  a.resmem_fd = p.res;
  a.reserved = 1;
  expect("ATTACH with reserved != 0", ioctl(p.edu, RESMEM_EDU_IOC_ATTACH, &a) ? errno : 0, EINVAL);
  expect("ATTACH with a NULL argument", ioctl(p.edu, RESMEM_EDU_IOC_ATTACH, nullptr) ? errno : 0, EFAULT);
  // The device writes into the range: a read-only open must not make it a writer.
  a.reserved = 0;
  a.resmem_fd = open(res_path.c_str(), O_RDONLY | O_CLOEXEC);
  expect("ATTACH of a /dev/resmemN opened O_RDONLY", ioctl(p.edu, RESMEM_EDU_IOC_ATTACH, &a) ? errno : 0, EBADF);
  close(a.resmem_fd);
  expect("WRITE after the read-only ATTACH was refused", DeviceWrite(p.edu, &word, 8, 0, &w), ENOTCONN);
  expect("ATTACH", Attach(p), 0);
  expect("WRITE of 0 bytes", DeviceWrite(p.edu, &word, 0, 0, &w), EINVAL);
  expect("WRITE above RESMEM_EDU_MAX_WRITE",
         DeviceWrite(p.edu, &word, RESMEM_EDU_MAX_WRITE + 1ull, 0, &w), EINVAL);
  expect("WRITE past the end of the range", DeviceWrite(p.edu, &word, 8, p.res_info.size - 4, &w), EINVAL);
  expect("WRITE at offset ~0", DeviceWrite(p.edu, &word, 8, ~0ull, &w), EINVAL);
  expect("WRITE from an unreadable address",
         DeviceWrite(p.edu, reinterpret_cast<void*>(8), 8, 0, &w), EFAULT);
  expect("unknown ioctl", ioctl(p.edu, _IO('R', 47)) ? errno : 0, ENOTTY);
  auto faults = [&](uint32_t permille, uint32_t kinds, uint32_t flags, uint32_t reserved) {
    resmem_edu_test_faults t{};
    t.permille = permille;
    t.kinds = kinds;
    t.flags = flags;
    t.reserved = reserved;
    return ioctl(p.edu, RESMEM_EDU_IOC_TEST_FAULTS, &t) ? errno : 0;
  };
  expect("TEST_FAULTS at 1001 per 1000", faults(1001, RESMEM_EDU_FAULT_DROP, 0, 0), EINVAL);
  expect("TEST_FAULTS with an unknown kind", faults(10, 1u << RESMEM_EDU_FAULT_KINDS, 0, 0), EINVAL);
  expect("TEST_FAULTS with no kind", faults(10, 0, 0, 0), EINVAL);
  expect("TEST_FAULTS with an unknown flag", faults(0, 0, 2, 0), EINVAL);
  expect("TEST_FAULTS with reserved != 0", faults(0, 0, 0, 1), EINVAL);
  expect("TEST_FAULTS off", faults(0, 0, 0, 0), 0);
  // The one good write of this case: 8 bytes at an odd offset land where they were sent.
  uint8_t* m = MapPoisoned(p, 4096);
  if (!m) return 1;
  const uint64_t magic = 0x0123456789abcdefull;
  expect("WRITE of 8 bytes at offset 100", DeviceWrite(p.edu, &magic, 8, 100, &w), 0);
  uint64_t got;
  std::memcpy(&got, m + 100, 8);
  const bool around = m[99] == kPoison && m[108] == kPoison;
  Diag("offset 100 holds 0x%016" PRIx64 "; the bytes around it %s", got, around ? "untouched" : "CHANGED");
  failures += got != magic || !around;
  munmap(m, 4096);
  return failures ? Fail(std::to_string(failures) + " answers wrong") : 0;
}

// unmapped EDU RESMEM: behind an IOMMU the device writes to a bus address nobody mapped. The
// IOMMU must block it: the kernel logs a DMAR fault naming the device and the address, the driver
// answers EIO, and the range keeps what it held.
int CaseUnmapped(const std::string& edu_path, const std::string& res_path) {
  Pair p;
  if (!OpenPair(edu_path, res_path, &p)) return 1;
  if (int err = Attach(p)) return Fail(std::string("ATTACH -> ") + ErrName(err));
  uint8_t* m = MapPoisoned(p, 4096);
  if (!m) return 1;
  KmsgSince log;
  resmem_edu_test_unmapped t{};
  t.offset = 0;
  const int err = ioctl(p.edu, RESMEM_EDU_IOC_TEST_UNMAPPED, &t) == 0 ? 0 : errno;
  Diag("TEST_UNMAPPED: the device wrote to bus address 0x%llx -> %s, landed %u",
       static_cast<unsigned long long>(t.bus_addr), err ? ErrName(err) : "0", t.landed);
  bool intact = true;
  for (int i = 0; i < 4096; ++i) intact &= m[i] == kPoison;
  munmap(m, 4096);
  // The fault interrupt may be handled after the ioctl returned: wait up to 2 s for its line.
  // It names the device "[00:10.0]" up to 6.12 and with its PCI segment, "[0000:00:10.0]", on the
  // lane's 7.3 kernel.
  const std::string full_pci = p.edu_info.pci_name;  // "0000:00:10.0"
  const std::string pci = full_pci.substr(5);         // "00:10.0"
  char addr[40];
  std::snprintf(addr, sizeof addr, "fault addr 0x%llx", static_cast<unsigned long long>(t.bus_addr));
  bool dmar = false, driver = false;
  for (int i = 0; i < 20 && !(dmar && driver); ++i) {
    for (const auto& l : log.Lines()) {
      Diag("console: %s", l.c_str());
      dmar |= l.find("DMAR: [DMA Write") != std::string::npos &&
              (l.find("[" + pci + "]") != std::string::npos ||
               l.find("[" + full_pci + "]") != std::string::npos) &&
              l.find(addr) != std::string::npos;
      driver |= l.find("did not reach") != std::string::npos && l.find("-EIO") != std::string::npos;
    }
    if (!(dmar && driver)) usleep(100000);
  }
  if (err != EIO || t.landed) return Fail("expected EIO from the driver and nothing landed");
  if (!intact) return Fail("the range changed: the write reached memory");
  if (!dmar) return Fail(std::string("no DMAR fault line naming [") + pci + "] and " + addr);
  if (!driver) return Fail("no driver line saying the write did not reach the range (-EIO)");
  return 0;
}

// bench EDU RESMEM SIZES BLOCKS: MB/s of the device's DMA into the range per block size, and of the
// CPU copying the same blocks through the mapping (TCG: a comparison inside this guest only).
int Bench(const std::string& edu_path, const std::string& res_path, const std::string& sizes,
          int blocks) {
  Pair p;
  if (!OpenPair(edu_path, res_path, &p)) return 1;
  if (int err = Attach(p)) return Fail(std::string("ATTACH -> ") + ErrName(err));
  int failures = 0;
  for (const char* s = sizes.c_str(); *s;) {
    char* end;
    const uint64_t block = std::strtoull(s, &end, 0);
    s = *end == ',' ? end + 1 : end;
    if (!block || block % 4096 || block > RESMEM_EDU_MAX_WRITE || block > p.res_info.size)
      return Fail("bad block size in " + sizes);
    uint8_t* m = MapPoisoned(p, block);
    if (!m) return 1;
    std::vector<uint64_t> buf(block / 8);
    double device_s = 0, wall_s = 0;
    for (int seq = 0; seq < blocks; ++seq) {
      pattern::Fill(buf.data(), block, seq, FillSeed(seq));
      resmem_edu_write w;
      const auto t0 = std::chrono::steady_clock::now();
      int err = DeviceWrite(p.edu, buf.data(), block, 0, &w);
      wall_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      device_s += w.device_ns / 1e9;
      std::string why = err ? std::string("WRITE -> ") + ErrName(err) : BlockProblem(m, block, seq);
      if (!why.empty()) {
        Diag("block %d of %" PRIu64 " B: %s", seq, block, why.c_str());
        ++failures;
      }
    }
    // The CPU's copy of the same bytes into the same mapping, repeated for about 0.2 s.
    int reps = 0;
    const auto c0 = std::chrono::steady_clock::now();
    double cpu_s = 0;
    do {
      std::memcpy(m, buf.data(), block);
      ++reps;
      cpu_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
    } while (cpu_s < 0.2);
    munmap(m, block);
    Diag("block %7" PRIu64 " B: device DMA %.4f MB/s (%d blocks, %.1f ms each, ioctl %.1f ms); "
         "CPU memcpy through the mapping %.0f MB/s",
         block, blocks * block / device_s / 1e6, blocks, device_s * 1e3 / blocks,
         wall_s * 1e3 / blocks, reps * block / cpu_s / 1e6);
  }
  return failures ? Fail("blocks arrived wrong") : 0;
}

// ---- the device fails: every block delivered intact or reported lost ---------------------------

// This file's injected-fault counts (RESMEM_EDU_IOC_TEST_FAULTS with QUERY).
bool FaultCounts(int edu, resmem_edu_test_faults* t) {
  *t = resmem_edu_test_faults{};
  t->flags = RESMEM_EDU_FAULTS_QUERY;
  return ioctl(edu, RESMEM_EDU_IOC_TEST_FAULTS, t) == 0;
}

// faults EDU RESMEM BLOCK_BYTES BLOCKS SLOTS SEED PERMILLE: the device writes numbered blocks while
// the driver plays its failures (an error, a write that never lands, a flipped bit, a late
// completion: uapi RESMEM_EDU_IOC_TEST_FAULTS, one seed for all of them). The producer writes a
// block again after an error, three tries in all, then reports it lost by number; the reader
// checks every block in the mapping and reports the damaged ones by number. The driver's fault
// counts around each write are the truth the two are judged against: a block with a dropped or
// flipped piece that the reader passed is a silent corruption, a block neither delivered nor
// reported a silent loss, a block the reader refused with no fault in it a false alarm. Passes
// when all three are 0 and every kind of fault happened at least once.
int CaseFaults(const std::string& edu_path, const std::string& res_path, uint64_t block,
               uint64_t blocks, int slots, uint64_t seed, uint32_t permille) {
  Pair p;
  if (!OpenPair(edu_path, res_path, &p)) return 1;
  if (!block || block % 4096 || slots < 1 || block * slots > p.res_info.size)
    return Fail("bad block size or slots for this range");
  if (int err = Attach(p)) return Fail(std::string("ATTACH -> ") + ErrName(err));
  resmem_edu_test_faults arm{};
  arm.seed = seed;
  arm.permille = permille;
  arm.kinds = RESMEM_EDU_FAULT_ERROR | RESMEM_EDU_FAULT_DROP | RESMEM_EDU_FAULT_FLIP |
              RESMEM_EDU_FAULT_DELAY;
  if (ioctl(p.edu, RESMEM_EDU_IOC_TEST_FAULTS, &arm)) return Fail(std::string("TEST_FAULTS -> ") + ErrName(errno));
  uint8_t* ring = MapPoisoned(p, block * slots);
  if (!ring) return 1;
  constexpr int kTries = 3;
  std::vector<uint64_t> buf(block / 8);
  uint64_t delivered = 0, reported_lost = 0, reported_corrupt = 0, retried = 0;
  uint64_t silent_corrupt = 0, silent_lost = 0, false_alarm = 0;
  for (uint64_t seq = 0; seq < blocks; ++seq) {
    const int slot = static_cast<int>(seq % slots);
    pattern::Fill(buf.data(), block, seq, FillSeed(seq));
    resmem_edu_test_faults before{}, after{};
    int err = 0, tries = 0;
    do {
      if (!FaultCounts(p.edu, &before)) return Fail(std::string("TEST_FAULTS query -> ") + ErrName(errno));
      resmem_edu_write w;
      err = DeviceWrite(p.edu, buf.data(), block, slot * block, &w);
      ++tries;
    } while (err == EIO && tries < kTries);
    if (!FaultCounts(p.edu, &after)) return Fail(std::string("TEST_FAULTS query -> ") + ErrName(errno));
    if (tries > 1) ++retried;
    if (err && err != EIO) return Fail(std::string("WRITE -> ") + ErrName(err));
    if (err) {  // the producer's report: the device failed this block on every try
      ++reported_lost;
      Diag("block %" PRIu64 ": lost, reported by the producer: the device failed it %d times (EIO)", seq, tries);
      continue;
    }
    // The last try's damage, as the driver counted it (DROP: bit 1, FLIP: bit 2).
    const uint64_t damaged = (after.injected[1] - before.injected[1]) + (after.injected[2] - before.injected[2]);
    const std::string why = BlockProblem(ring + slot * block, block, seq);
    if (why.empty() && !damaged) {
      ++delivered;
    } else if (!why.empty() && damaged) {
      ++reported_corrupt;
      Diag("block %" PRIu64 ": corrupt, reported by the reader: %s", seq, why.c_str());
    } else if (why.empty()) {
      ++silent_corrupt;
      Diag("block %" PRIu64 ": SILENT corruption: %" PRIu64 " damaged pieces, the reader passed it", seq, damaged);
    } else {
      ++false_alarm;
      Diag("block %" PRIu64 ": FALSE alarm: no fault injected, the reader says %s", seq, why.c_str());
    }
  }
  munmap(ring, block * slots);
  resmem_edu_test_faults end{};
  if (!FaultCounts(p.edu, &end)) return Fail(std::string("TEST_FAULTS query -> ") + ErrName(errno));
  silent_lost = blocks - delivered - reported_lost - reported_corrupt - silent_corrupt - false_alarm;
  Diag("%" PRIu64 " blocks of %" PRIu64 " B, seed 0x%" PRIx64 ", %u per 1000 pieces: delivered %" PRIu64
       ", reported lost %" PRIu64 ", reported corrupt %" PRIu64 ", retried %" PRIu64 "; silently lost %" PRIu64
       ", silently corrupt %" PRIu64 ", false alarms %" PRIu64,
       blocks, block, seed, permille, delivered, reported_lost, reported_corrupt, retried, silent_lost,
       silent_corrupt, false_alarm);
  Diag("the driver: %llu pieces, injected error %llu, drop %llu, flip %llu, delay %llu (replay: "
       "resmem_edu_guest faults %s %s %" PRIu64 " %" PRIu64 " %d 0x%" PRIx64 " %u)",
       static_cast<unsigned long long>(end.pieces), static_cast<unsigned long long>(end.injected[0]),
       static_cast<unsigned long long>(end.injected[1]), static_cast<unsigned long long>(end.injected[2]),
       static_cast<unsigned long long>(end.injected[3]), edu_path.c_str(), res_path.c_str(), block,
       blocks, slots, seed, permille);
  if (silent_lost || silent_corrupt) return Fail("a block was lost or corrupted silently");
  if (false_alarm) return Fail("the reader refused a block the device wrote whole");
  for (int k = 0; k < RESMEM_EDU_FAULT_KINDS; ++k)
    if (!end.injected[k])
      return Fail("not every kind of fault happened: more blocks, a higher rate or another seed");
  if (!retried) return Fail("no block was written again after an error");
  return 0;
}

int Usage() {
  std::fprintf(stderr,
               "usage: resmem_edu_guest CASE ARGS\n"
               "  blocks EDU RESMEM BLOCK_BYTES BLOCKS SLOTS [iommu]   the device writes numbered\n"
               "                                 blocks, the reader checks them in the mapping\n"
               "  unmapped EDU RESMEM            behind an IOMMU: a write to an unmapped address faults\n"
               "  refused EDU RESMEM             ATTACH refused (ERANGE) with the reason in dmesg\n"
               "  bad-requests EDU RESMEM        the errnos of bad ATTACH/WRITE requests\n"
               "  bench EDU RESMEM SIZES BLOCKS  MB/s per block size (SIZES: 4096,16384,...)\n"
               "  faults EDU RESMEM BLOCK_BYTES BLOCKS SLOTS SEED PERMILLE   the device fails; every\n"
               "                                 block delivered intact or reported lost by number\n");
  return 2;
}

int Main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc < 4) return Usage();
  const std::string c = argv[1], edu = argv[2], res = argv[3];
  if (c == "blocks" && (argc == 7 || (argc == 8 && std::string(argv[7]) == "iommu")))
    return CaseBlocks(edu, res, std::strtoull(argv[4], nullptr, 0),
                      std::strtoull(argv[5], nullptr, 0), std::atoi(argv[6]), argc == 8);
  if (c == "unmapped" && argc == 4) return CaseUnmapped(edu, res);
  if (c == "refused" && argc == 4) return CaseRefused(edu, res);
  if (c == "bad-requests" && argc == 4) return CaseBadRequests(edu, res);
  if (c == "bench" && argc == 6) return Bench(edu, res, argv[4], std::atoi(argv[5]));
  if (c == "faults" && argc == 9)
    return CaseFaults(edu, res, std::strtoull(argv[4], nullptr, 0), std::strtoull(argv[5], nullptr, 0),
                      std::atoi(argv[6]), std::strtoull(argv[7], nullptr, 0),
                      static_cast<uint32_t>(std::strtoul(argv[8], nullptr, 0)));
  return Usage();
}

}  // namespace
}  // namespace resmem

int main(int argc, char** argv) { return resmem::Main(argc, argv); }
