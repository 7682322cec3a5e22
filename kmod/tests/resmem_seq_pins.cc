// The random sequences' bound on the P2P window's use (resmem_seq_pins.h says what and why).
#include "kmod/tests/resmem_seq_pins.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace resmem::seq::p2p {

PinClaim PinLedger::Begin(uint32_t edu, uint32_t ctx, uint64_t va, uint64_t len, bool cached, bool pins) {
  PinClaim c;
  for (const auto& p : pins_) c.bound += p.len;
  c.added0 = added_;
  if (!pins) return c;
  // resmem_edu_p2p.c edu_p2p_pin: a cached write takes the file's pin of the same range. If the
  // driver evicted it meanwhile it pins again, and the record stands for that pin.
  for (auto& p : pins_) {
    if (cached && !p.released && p.edu == edu && p.ctx == ctx && p.va == va && p.len == len) {
      p.busy = true;
      c.rec = p.id;
      return c;
    }
  }
  c.rec = next_++;
  c.fresh = true;
  PinRec r{c.rec, edu, ctx, va, len};
  r.busy = true;
  pins_.push_back(r);
  added_ += len;
  return c;
}

bool PinLedger::MayBeFull(const PinClaim& c, uint64_t len, uint64_t window) const {
  const uint64_t others = added_ - c.added0 - (c.fresh ? len : 0);
  return c.bound + others + len > window;
}

// An orphaned record (its allocation's FREE or its context's end was over during the write): the
// write's pin, if it holds one, is either of the freed allocation, revoked and given back by now,
// or of the allocation that took its place, still held. Which one cannot be told from the answer
// (both have the same address and BAR offset): a cached pin is counted while a live allocation
// holds the range (an over-count at worst, until the file lets go or that allocation goes); with
// none there, no table over the range is left.
PinLedger::Orphan PinLedger::End(const PinClaim& c, PinAfterWrite after, const Revoking& revoking, bool covered) {
  PinRec* r = c.rec ? Find(c.rec) : nullptr;
  if (!r) return Orphan::kNo;
  r->busy = false;
  if (r->orphaned) {
    r->orphaned = false;
    if (after == PinAfterWrite::kCached && covered) return Orphan::kKept;
    ReleaseOne(c.rec, revoking);
    return Orphan::kGone;
  }
  // Not orphaned: a cached pin stays in the file's cache; a cancelled one stays until the
  // revocation that cancelled it is over (its drop); a new pin let go is unpinned by now.
  if (c.fresh && after == PinAfterWrite::kLetGo) ReleaseOne(c.rec, revoking);
  return Orphan::kNo;
}

void PinLedger::Release(const Match& match, const Revoking& revoking) {
  for (auto& p : pins_)
    if (match(p) && revoking(p)) p.released = true;
  pins_.erase(std::remove_if(pins_.begin(), pins_.end(), [&](const PinRec& p) { return match(p) && !p.released; }),
              pins_.end());
}

void PinLedger::DropRevoked(const Match& match) {
  for (auto& p : pins_)
    if (match(p) && p.busy) p.orphaned = true;
  pins_.erase(std::remove_if(pins_.begin(), pins_.end(), [&](const PinRec& p) { return match(p) && !p.busy; }),
              pins_.end());
}

std::string PinLedger::Describe() const {
  std::string out;
  for (const auto& p : pins_) {
    char one[160];
    std::snprintf(one, sizeof one, "%sfile %u ctx %u va 0x%" PRIx64 " +0x%" PRIx64 "%s%s%s", out.empty() ? "" : ", ", p.edu,
                  p.ctx, p.va, p.len, p.released ? " released" : "", p.busy ? " in a write" : "",
                  p.orphaned ? " orphaned" : "");
    out += one;
  }
  return out.empty() ? "none" : out;
}

PinRec* PinLedger::Find(uint64_t id) {
  for (auto& p : pins_)
    if (p.id == id) return &p;
  return nullptr;
}

void PinLedger::ReleaseOne(uint64_t id, const Revoking& revoking) {
  Release([id](const PinRec& p) { return p.id == id; }, revoking);
}

}  // namespace resmem::seq::p2p
