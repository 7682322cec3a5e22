// The guest's side of the lane's card cases that are not scenario files (guest_init.sh):
//   card_guest throughput DEVICES [MIN_MBPS]
//       1. the device sprays blocks flat out into 32 slots of the first range for 2 s (its rate into
//          the guest's RAM with nobody holding it back), and the guest then checks every word of
//          the last pass through the module's mapping (its checking rate);
//       2. the real protocol flat out for 3 s: the device writes a block only into a descriptor the
//          guest's driver posted, so both run at the reader's pace.
//       Fails when a block is wrong or the device's spray is below MIN_MBPS (default 1000).
//   card_guest long DEVICES SECONDS
//       acquisition at 50 MB/s with a fault injected through the mailbox every 20 s (stall, link
//       down and back, torn block, timeout, out-of-order completions, burst); prints the drops of
//       every minute; fails on any silent loss or silent corruption.
// DEVICES: the module's devices (a glob, e.g. '/dev/resmem0'); the device process is
// ci/qemu/card_device on the host, reached through the lane's mailbox (card_abi.h).
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backends/api/status.h"
#include "backends/card/card_abi.h"
#include "backends/card/card_engine.h"
#include "engine/backend/kmod_card.h"

namespace {

using resmem::Result;
using resmem::Status;
using resmem::engine::KmodCardBus;
using resmem::engine::LaneMailbox;
using Mailbox = resmem_card_lane_mailbox;

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

int Fail(const Status& s) {
  std::printf("FAIL: %s\n", s.ToString().c_str());
  return 1;
}

constexpr uint64_t kSprayBlock = 1 << 20, kSpraySlots = 32, kSprayMs = 2000, kSpraySeed = 7;

// Whether the block at `p` is block `sequence` of the spray's seed, whole: header, every payload
// word, checksum, trailer.
bool BlockIsWhole(const uint8_t* p, uint64_t sequence) {
  resmem_card_block_header h;
  resmem_card_block_trailer t;
  std::memcpy(&h, p, sizeof h);
  std::memcpy(&t, p + kSprayBlock - sizeof t, sizeof t);
  const uint64_t n = (kSprayBlock - RESMEM_CARD_BLOCK_OVERHEAD) / 8;
  if (h.magic != RESMEM_CARD_BLOCK_MAGIC || h.sequence != sequence || h.length != n * 8 ||
      t.magic != RESMEM_CARD_BLOCK_MAGIC || t.sequence != sequence)
    return false;
  const uint64_t* w = reinterpret_cast<const uint64_t*>(p + sizeof h);
  for (uint64_t k = 0; k < n; ++k)
    if (w[k] != resmem_card_word(kSpraySeed, sequence, k)) return false;
  return resmem_card_checksum(w, n) == h.checksum;
}

// The guest copying `bytes` out of the mapping without checking them: what the mapping gives under
// TCG (a check's first pass is this copy).
double PlainCopyMbps(KmodCardBus& bus, uint64_t at, uint64_t bytes) {
  std::vector<uint8_t> copy(bytes);
  const double t0 = Now();
  if (!bus.Read(at, copy.data(), bytes).ok()) return 0;
  return bytes / (Now() - t0) / 1e6;
}

// Leg 1: the device's spray, then every word of the last pass checked.
int Spray(KmodCardBus& bus, double min_mbps) {
  LaneMailbox mb(bus, bus.lo() + RESMEM_CARD_LANE_MAILBOX_OFFSET);
  const uint64_t target = bus.lo() + (1 << 20);
  for (auto [off, v] : {std::pair<size_t, uint64_t>{offsetof(Mailbox, spray_target), target},
                        {offsetof(Mailbox, spray_block), kSprayBlock}, {offsetof(Mailbox, spray_slots), kSpraySlots},
                        {offsetof(Mailbox, spray_ms), kSprayMs}, {offsetof(Mailbox, seed), kSpraySeed}})
    if (Status s = mb.Set(off, v); !s.ok()) return Fail(s);
  if (Status s = mb.Request(RESMEM_CARD_LANE_SPRAY, kSprayMs / 1e3 + 10); !s.ok()) return Fail(s);
  const uint64_t bytes = *mb.Get(offsetof(Mailbox, spray_bytes)), ns = *mb.Get(offsetof(Mailbox, spray_ns));
  const uint64_t last = *mb.Get(offsetof(Mailbox, spray_last_sequence));
  (void)mb.Set(offsetof(Mailbox, magic), 0);
  const double device_mbps = bytes / (ns / 1e9) / 1e6;
  std::printf("device spray: %llu blocks of 1 MiB (%llu bytes) into 32 slots in %.3f s: %.1f MB/s into the guest's range\n",
              static_cast<unsigned long long>(last + 1), static_cast<unsigned long long>(bytes), ns / 1e9, device_mbps);
  if (last + 1 < kSpraySlots) return Fail(Status::Internal("the spray wrote fewer blocks than slots"));
  std::vector<uint8_t> copy(kSprayBlock);
  uint64_t bad = 0;
  const double t0 = Now();
  for (uint64_t s = last + 1 - kSpraySlots; s <= last; ++s) {
    const uint64_t at = target + (s % kSpraySlots) * kSprayBlock;
    if (!bus.Read(at, copy.data(), kSprayBlock).ok() || !BlockIsWhole(copy.data(), s)) ++bad;
  }
  const double check_s = Now() - t0;
  const double guest_mbps = kSpraySlots * kSprayBlock / check_s / 1e6;
  const double plain = PlainCopyMbps(bus, target, kSpraySlots * kSprayBlock);
  std::printf("guest check: %llu blocks, every word, %llu bad, %.1f MB/s (a plain copy of the same 32 MiB out of the "
              "mapping %.1f MB/s); "
              "the device is %.1fx faster than the guest's checking reader\n",
              static_cast<unsigned long long>(kSpraySlots), static_cast<unsigned long long>(bad), guest_mbps, plain,
              device_mbps / guest_mbps);
  if (bad) return Fail(Status::Internal(std::to_string(bad) + " blocks of the spray were not whole"));
  if (device_mbps < min_mbps)
    return Fail(Status::Internal("the device wrote " + std::to_string(device_mbps) + " MB/s, below " + std::to_string(min_mbps)));
  return 0;
}

// The i-th fault of the long run, its block numbers ahead of the card's `sequence`.
std::string FaultLine(int i, uint64_t sequence) {
  switch (i % 6) {
    case 0: return "stall 20ms at 1s";
    case 1: return "link_down at 1s for 200ms";
    case 2: return "torn block " + std::to_string(sequence + 100);
    case 3: return "timeout block " + std::to_string(sequence + 150) + " after 50ms";
    case 4: return "out_of_order at 1s for 100ms";
    default: return "burst x4 at 1s for 50ms";
  }
}

void PrintReport(const char* what, const resmem::CardReport& r) {
  std::printf("%s: card %llu blocks, %llu overruns, %llu torn, %llu timeouts; driver %llu delivered, %llu dropped, "
              "%llu corrupt, %llu torn, %llu timeouts, link down seen %s; %.1f MB/s checked\n",
              what, static_cast<unsigned long long>(r.card_blocks), static_cast<unsigned long long>(r.card_overruns),
              static_cast<unsigned long long>(r.card_torn), static_cast<unsigned long long>(r.card_timeouts),
              static_cast<unsigned long long>(r.delivered), static_cast<unsigned long long>(r.dropped),
              static_cast<unsigned long long>(r.corrupt), static_cast<unsigned long long>(r.torn),
              static_cast<unsigned long long>(r.timeouts), r.link_down_seen ? "yes" : "no",
              r.seconds > 0 ? r.bytes / r.seconds / 1e6 : 0.0);
}

// One CardPort run: start, `seconds` of acquisition in pieces of `piece` seconds (a fault by
// mailbox after each when `faults`), stop. Prints each minute's drops; fails on a silent loss (a
// block the card lost or spoiled that the driver did not count) or a corrupt block (the faults
// here spoil none: a torn block is counted as torn).
int Acquire(const std::string& devices, const resmem::CardSetup& setup, double seconds, double piece, bool faults) {
  auto port = resmem::engine::MakeKmodCardPort(devices, 0);
  if (Status s = port->Start(setup); !s.ok()) return Fail(s);
  uint64_t minute_drops = 0, minute = 0;
  int injected = 0;
  for (double done = 0; done < seconds;) {
    const double step = std::min(piece, seconds - done);
    if (Status s = port->Run(step); !s.ok()) return Fail(s);
    done += step;
    const resmem::CardReport r = port->Report();
    if (faults && done < seconds) {
      const std::string line = FaultLine(injected++, r.card_blocks + r.card_overruns + r.card_timeouts + r.card_torn);
      if (Status s = port->AddFault(line); !s.ok()) return Fail(s);
      std::printf("  %.0f s: fault '%s' by mailbox\n", done, line.c_str());
    }
    if (seconds >= 60 && (done >= 60.0 * (minute + 1) || done >= seconds)) {
      std::printf("  minute %llu: %llu drops, %llu delivered so far\n", static_cast<unsigned long long>(++minute),
                  static_cast<unsigned long long>(r.dropped - minute_drops), static_cast<unsigned long long>(r.delivered));
      minute_drops = r.dropped;
    }
  }
  if (Status s = port->Stop(true, 2.0); !s.ok()) return Fail(s);
  const resmem::CardReport r = port->Report();
  PrintReport("acquisition", r);
  const uint64_t silent_corrupt = r.corrupt + (r.card_torn > r.torn ? r.card_torn - r.torn : 0);
  std::printf("silent losses %llu, silent corruptions %llu, drops per minute %.1f, faults injected %d\n",
              static_cast<unsigned long long>(r.SilentLosses()), static_cast<unsigned long long>(silent_corrupt),
              r.dropped / (seconds / 60.0), injected);
  if (r.delivered == 0) return Fail(Status::Internal("no block delivered"));
  if (r.SilentLosses() || silent_corrupt) return Fail(Status::Internal("silent losses or corruptions"));
  return 0;
}

// 1 MiB blocks, a ring of 16, at `rate` bytes a second (0: flat out), the driver looking every `poll`.
resmem::CardSetup Setup(uint64_t rate, double poll, uint64_t seed) {
  resmem::CardSetup s;
  s.block_bytes = 1 << 20;
  s.ring_entries = 16;
  s.rate = rate;
  s.poll_seconds = poll;
  s.seed = seed;
  return s;
}

int Long(const std::string& devices, double seconds) {
  const resmem::CardSetup s = Setup(50000000, 1e-3, 5);
  std::printf("long run: %.0f s at 50 MB/s of 1 MiB blocks, a fault every 20 s\n", seconds);
  return Acquire(devices, s, seconds, 20, true);
}

int Throughput(const std::string& devices, double min_mbps) {
  auto bus = KmodCardBus::Open(devices, 0);
  if (!bus.ok()) return Fail(bus.status());
  const int rc = Spray(**bus, min_mbps);
  bus->reset();
  const resmem::CardSetup s = Setup(0, 1e-4, 3);
  std::printf("the protocol flat out (rate 0: the device writes only into posted descriptors):\n");
  return Acquire(devices, s, 3, 3, false) || rc;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "throughput" && argc >= 3) return Throughput(argv[2], argc > 3 ? std::atof(argv[3]) : 1000);
  if (cmd == "long" && argc >= 4) return Long(argv[2], std::atof(argv[3]));
  std::fprintf(stderr, "usage: card_guest throughput DEVICES [MIN_MBPS] | card_guest long DEVICES SECONDS\n");
  return 2;
}
