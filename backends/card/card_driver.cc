#include "backends/card/card_driver.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "backends/api/memory.h"

namespace resmem::card {
namespace {

constexpr uint64_t kControl = offsetof(resmem_card_regs, control), kStatus = offsetof(resmem_card_regs, status),
                   kRingBus = offsetof(resmem_card_regs, ring_bus),
                   kRingEntries = offsetof(resmem_card_regs, ring_entries), kHead = offsetof(resmem_card_regs, head),
                   kCompleted = offsetof(resmem_card_regs, completed),
                   kBlockBytes = offsetof(resmem_card_regs, block_bytes), kRate = offsetof(resmem_card_regs, rate),
                   kMagic = offsetof(resmem_card_regs, magic);

std::string At(double now) {
  char t[32];
  std::snprintf(t, sizeof t, "%.3f s", now);
  return t;
}

}  // namespace

CardDriver::CardDriver(CardBus& bus, uint64_t window_bus, std::vector<uint64_t> targets, DriverOptions o)
    : bus_(bus), regs_(window_bus), targets_(std::move(targets)), o_(o) {}

void CardDriver::Event(double now, const std::string& what) { c_.events.push_back(what + " at " + At(now)); }

Status CardDriver::Start(double now) {
  if (o_.ring_entries == 0 || (o_.ring_entries & (o_.ring_entries - 1)) || o_.ring_entries > 65536)
    return Status::InvalidArgument("card ring: " + std::to_string(o_.ring_entries) +
                                   " entries is not a power of two from 1 to 65536");
  if (o_.block_bytes < 64 || o_.block_bytes % 8)
    return Status::InvalidArgument("card block of " + std::to_string(o_.block_bytes) +
                                   " bytes: give a multiple of 8, at least 64 (a 48-byte header and trailer)");
  if (targets_.size() != o_.ring_entries)
    return Status::InvalidArgument("card ring of " + std::to_string(o_.ring_entries) + " entries needs as many targets, got " +
                                   std::to_string(targets_.size()));
  return Program(now);
}

// The card's magic checked; control 0, the ring's registers, every slot posted, then ENABLE.
Status CardDriver::Program(double now) {
  RESMEM_ASSIGN_OR_RETURN(uint64_t magic, bus_.Load64(regs_ + kMagic));
  if (magic != RESMEM_CARD_MAGIC)
    return Status::Errno(ENODEV, "no card at " + HexAddress(regs_) + ": its first register reads " + HexAddress(magic) +
                                     ", not the card's magic (is the card powered on, the window right?)");
  for (auto [off, v] : {std::pair<uint64_t, uint64_t>{kControl, 0}, {kRingBus, RingBus(regs_)},
                        {kRingEntries, o_.ring_entries}, {kBlockBytes, o_.block_bytes}, {kRate, o_.rate}})
    RESMEM_RETURN_IF_ERROR(bus_.Store64(regs_ + off, v));
  for (uint64_t i = 0; i < o_.ring_entries; ++i) RESMEM_RETURN_IF_ERROR(Repost(i));
  last_progress_ = now;
  return bus_.Store64(regs_ + kControl, RESMEM_CARD_CTRL_ENABLE);
}

Status CardDriver::AccountReset(double now) {
  RESMEM_ASSIGN_OR_RETURN(uint64_t sequence, bus_.Load64(regs_ + offsetof(resmem_card_regs, sequence)));
  if (sequence == RESMEM_CARD_LINK_DOWN)
    return Status::Errno(EIO, "card reset: the card's registers read 0xffffffffffffffff (the link is down): a RESET "
                              "written now would be lost");
  const uint64_t lost = sequence > next_sequence_ ? sequence - next_sequence_ : 0;
  c_.dropped += lost;
  Event(now, "reset: " + std::to_string(lost) + " blocks lost across it (made by the card, never read)");
  return bus_.Store64(regs_ + kControl, RESMEM_CARD_CTRL_RESET);
}

Result<bool> CardDriver::ResetDone() {
  RESMEM_ASSIGN_OR_RETURN(uint64_t control, bus_.Load64(regs_ + kControl));
  return control != RESMEM_CARD_LINK_DOWN && !(control & RESMEM_CARD_CTRL_RESET);
}

Status CardDriver::Restart(double now) {
  RESMEM_ASSIGN_OR_RETURN(uint64_t sequence, bus_.Load64(regs_ + offsetof(resmem_card_regs, sequence)));
  if (sequence == RESMEM_CARD_LINK_DOWN)
    return Status::Errno(EIO, "card reset: the registers read all ones after the RESET (the link went down)");
  consumed_ = head_ = 0;
  next_sequence_ = sequence;
  released_ = false;
  return Program(now);
}

Result<uint64_t> CardDriver::ReadStatus() { return bus_.Load64(regs_ + kStatus); }
Result<uint64_t> CardDriver::Heartbeat() { return bus_.Load64(regs_ + offsetof(resmem_card_regs, heartbeat)); }

// Slot i's descriptor gets its target again, flags 0, and head moves past it.
Status CardDriver::Repost(uint64_t index) {
  resmem_card_desc d{};
  d.target = targets_[index % o_.ring_entries];
  d.length = static_cast<uint32_t>(o_.block_bytes);
  RESMEM_RETURN_IF_ERROR(bus_.Write(RingBus(regs_) + (index % o_.ring_entries) * RESMEM_CARD_DESC_BYTES, &d, sizeof d));
  return bus_.Store64(regs_ + kHead, ++head_);
}

// The watchdog: a register that reads all ones is a link that went down; a card that completes
// nothing for watchdog_seconds while descriptors are posted has stalled.
Status CardDriver::Watch(double now, uint64_t status, uint64_t completed) {
  if (status == RESMEM_CARD_LINK_DOWN) {
    if (!c_.link_down_seen) Event(now, "link down: the card's registers read 0xffffffffffffffff");
    c_.link_down_seen = true;
    return Status::Ok();
  }
  if (completed != consumed_ || head_ == consumed_) {
    last_progress_ = now;
  } else if (now - last_progress_ >= o_.watchdog_seconds && !c_.stalled_seen) {
    c_.stalled_seen = true;
    Event(now, "no completion for " + At(now - last_progress_) + " with " + std::to_string(head_ - consumed_) +
                   " descriptors posted");
  }
  return Status::Ok();
}

Result<int> CardDriver::Poll(double now) {
  now_ = now;
  RESMEM_ASSIGN_OR_RETURN(uint64_t status, bus_.Load64(regs_ + kStatus));
  RESMEM_ASSIGN_OR_RETURN(uint64_t completed, bus_.Load64(regs_ + kCompleted));
  if (o_.watchdog) RESMEM_RETURN_IF_ERROR(Watch(now, status, completed));
  if (status == RESMEM_CARD_LINK_DOWN) {
    if (o_.watchdog) return 0;
    completed = consumed_;  // a driver without a watchdog reads garbage counts and gets nothing
  }
  int n = 0;
  while (consumed_ < completed && !released_) {
    const uint64_t slot = consumed_ % o_.ring_entries;
    resmem_card_desc d;
    RESMEM_RETURN_IF_ERROR(bus_.Read(RingBus(regs_) + slot * RESMEM_CARD_DESC_BYTES, &d, sizeof d));
    if (!(d.flags & RESMEM_CARD_DESC_DONE)) {
      if (o_.check_done) break;  // counted, but not written yet: come back
      ++c_.not_done;
    }
    RESMEM_RETURN_IF_ERROR(CheckBlock(d, targets_[slot]));
    ++consumed_;
    ++n;
    RESMEM_RETURN_IF_ERROR(Repost(consumed_ + o_.ring_entries - 1));
  }
  return n;
}

// A wrong block that is whole and another card's: header, trailer and length agree and (full
// payload) its checksum is right, but it is not this card's. With the payload written, the payload
// decides: words that are not this card's seed's for the header's sequence. A block of this card
// in the wrong slot - an older lap's, or a later lap's that a driver trusting the completion count
// reads after it slipped (out_of_order_trusts_count) - has its own pattern and is not foreign.
// With the payload modelled (header and trailer only) the sequence is all there is: one ahead of
// the descriptor's is taken for another card's (a second card counts from 2^40, duplicate_target).
// Nothing in a slot whose DONE is unset is foreign.
bool CardDriver::Foreign(const resmem_card_desc& d, const resmem_card_block_header& h,
                         const resmem_card_block_trailer& t, const uint64_t* words) const {
  const uint64_t payload = o_.block_bytes - RESMEM_CARD_BLOCK_OVERHEAD;
  const bool whole = h.magic == RESMEM_CARD_BLOCK_MAGIC && h.length == payload && t.magic == RESMEM_CARD_BLOCK_MAGIC &&
                     t.sequence == h.sequence;
  if (!whole || !(d.flags & RESMEM_CARD_DESC_DONE)) return false;  // a slot not completed says nothing
  if (o_.modelled_payload) return h.sequence > d.sequence;
  if (resmem_card_checksum(words, payload / 8) != h.checksum) return false;  // a mix of writes: not whole
  for (uint64_t k = 0; k < payload / 8; ++k)
    if (words[k] != resmem_card_word(o_.seed, h.sequence, k)) return true;
  return false;
}

// One completed slot: its status, then the block at its target - header, trailer, checksum, and
// (verify_payload) every word - and the sequence against the one expected next (a gap: blocks
// the card dropped).
Status CardDriver::CheckBlock(const resmem_card_desc& d, uint64_t target) {
  if (d.status == RESMEM_CARD_DESC_TIMEOUT) {
    ++c_.timeouts;
    next_sequence_ = d.sequence + 1;
    return Status::Ok();
  }
  // A modelled payload: header and trailer are all the card wrote, all the driver reads.
  std::vector<uint8_t> block(o_.modelled_payload ? RESMEM_CARD_BLOCK_OVERHEAD : o_.block_bytes);
  resmem_card_block_header h;
  resmem_card_block_trailer t;
  if (o_.modelled_payload) {
    RESMEM_RETURN_IF_ERROR(bus_.Read(target, &h, sizeof h));
    RESMEM_RETURN_IF_ERROR(bus_.Read(target + o_.block_bytes - sizeof t, &t, sizeof t));
  } else {
    RESMEM_RETURN_IF_ERROR(bus_.Read(target, block.data(), block.size()));
    std::memcpy(&h, block.data(), sizeof h);
    std::memcpy(&t, block.data() + block.size() - sizeof t, sizeof t);
  }
  const uint64_t payload = o_.block_bytes - RESMEM_CARD_BLOCK_OVERHEAD;
  const uint64_t* words = reinterpret_cast<const uint64_t*>(block.data() + sizeof h);
  bool ok = h.magic == RESMEM_CARD_BLOCK_MAGIC && h.length == payload && h.sequence == d.sequence;
  if (ok && (t.magic != RESMEM_CARD_BLOCK_MAGIC || t.sequence != h.sequence)) {
    ++c_.torn;
    next_sequence_ = d.sequence + 1;
    return Status::Ok();
  }
  if (o_.modelled_payload) ok = ok && h.checksum == 0;
  else ok = ok && resmem_card_checksum(words, payload / 8) == h.checksum;
  for (uint64_t k = 0; ok && o_.verify_payload && !o_.modelled_payload && k < payload / 8; ++k)
    ok = words[k] == resmem_card_word(o_.seed, h.sequence, k);
  if (!ok) {
    ++c_.corrupt;
    if (Foreign(d, h, t, words) && c_.foreign++ == 0)
      Event(now_, "another card's block at " + HexAddress(target) + ": sequence " + std::to_string(h.sequence) +
                      " where the completion says " + std::to_string(d.sequence) + " (a duplicate target)");
    return Status::Ok();
  }
  if (h.sequence > next_sequence_) c_.dropped += h.sequence - next_sequence_;
  next_sequence_ = h.sequence + 1;
  ++c_.delivered;
  c_.bytes += static_cast<double>(payload);
  return Status::Ok();
}

Status CardDriver::AccountTail() {
  RESMEM_ASSIGN_OR_RETURN(uint64_t sequence, bus_.Load64(regs_ + offsetof(resmem_card_regs, sequence)));
  RESMEM_ASSIGN_OR_RETURN(uint64_t completed, bus_.Load64(regs_ + kCompleted));
  if (sequence == RESMEM_CARD_LINK_DOWN || completed != consumed_) return Status::Ok();  // not settled
  if (sequence > next_sequence_) c_.dropped += sequence - next_sequence_;
  next_sequence_ = sequence;
  return Status::Ok();
}

Status CardDriver::RequestStop() { return bus_.Store64(regs_ + kControl, RESMEM_CARD_CTRL_QUIESCE); }

Result<bool> CardDriver::Idle() {
  RESMEM_ASSIGN_OR_RETURN(uint64_t status, bus_.Load64(regs_ + kStatus));
  return status != RESMEM_CARD_LINK_DOWN && !(status & RESMEM_CARD_STATUS_ACTIVE);
}

Status CardDriver::Release(double) {
  released_ = true;
  std::vector<uint64_t> canary(o_.block_bytes / 8);
  for (uint64_t k = 0; k < canary.size(); ++k) canary[k] = CanaryWord(k);
  for (uint64_t t : targets_) RESMEM_RETURN_IF_ERROR(bus_.Write(t, canary.data(), o_.block_bytes / 8 * 8));
  return Status::Ok();
}

Status CardDriver::CheckCanaries() {
  if (!released_) return Status::Error(kFailedPrecondition, "canaries are checked after Release: call Release first");
  uint64_t stray = 0;
  std::vector<uint64_t> got(o_.block_bytes / 8);
  for (uint64_t t : targets_) {
    RESMEM_RETURN_IF_ERROR(bus_.Read(t, got.data(), got.size() * 8));
    for (uint64_t k = 0; k < got.size(); ++k) stray += got[k] != CanaryWord(k);
  }
  c_.stray_words = stray;
  return Status::Ok();
}

Result<double> RunTogether(CardDmaEngine& card, CardDriver& driver, double from, double until, double poll_seconds,
                           CardDmaEngine* second) {
  if (!(poll_seconds > 0)) return Status::InvalidArgument("the driver's poll interval must be > 0 s");
  double t = from, next_poll = from;
  for (;;) {
    double other = CardDmaEngine::kIdle;
    if (second) {
      RESMEM_ASSIGN_OR_RETURN(other, second->Advance(t));
    }
    RESMEM_ASSIGN_OR_RETURN(double due, card.Advance(t));
    if (t >= next_poll) {
      RESMEM_ASSIGN_OR_RETURN(int taken, driver.Poll(t));
      next_poll = t + poll_seconds;
      // The slots the driver gave back. A poll that took nothing wrote no register (the driver
      // writes them only when it reposts), and the card has done all it had by t: a second step
      // at t would find nothing to do. Not taken every time: an hour of acquisition polled every
      // millisecond is 3.6 million polls. (Not the step before the poll: during an outage or a
      // stall the card loses the blocks falling due at each step's time, which its `due` does
      // not name.)
      if (taken > 0) {
        RESMEM_ASSIGN_OR_RETURN(due, card.Advance(t));
      }
    }
    // The card does all it has due by t, so what it names next is later; never stand still.
    const double next = std::max(std::min({due, other, next_poll}), std::nextafter(t, CardDmaEngine::kIdle));
    if (next > until) break;
    t = next;
  }
  return until;
}

}  // namespace resmem::card
