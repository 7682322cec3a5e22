#include "backends/card/card_engine.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <iterator>

#include "backends/api/memory.h"

namespace resmem::card {
namespace {

// Register offsets in the page (card_abi.h).
constexpr uint64_t kMagic = offsetof(resmem_card_regs, magic), kAbi = offsetof(resmem_card_regs, abi),
                   kControl = offsetof(resmem_card_regs, control), kStatus = offsetof(resmem_card_regs, status),
                   kRingBus = offsetof(resmem_card_regs, ring_bus),
                   kRingEntries = offsetof(resmem_card_regs, ring_entries), kHead = offsetof(resmem_card_regs, head),
                   kTail = offsetof(resmem_card_regs, tail), kCompleted = offsetof(resmem_card_regs, completed),
                   kBlockBytes = offsetof(resmem_card_regs, block_bytes), kRate = offsetof(resmem_card_regs, rate),
                   kOverruns = offsetof(resmem_card_regs, overruns), kIrq = offsetof(resmem_card_regs, irq_count),
                   kSequence = offsetof(resmem_card_regs, sequence), kHeartbeat = offsetof(resmem_card_regs, heartbeat),
                   kErrors = offsetof(resmem_card_regs, errors);
constexpr uint64_t kRegWords = sizeof(resmem_card_regs) / 8;

bool BlockBytesValid(uint64_t b) { return b >= 64 && b % 8 == 0 && b <= (1ull << 30); }

}  // namespace

Result<uint8_t*> SpanBus::At(uint64_t bus, uint64_t len) {
  if (bus < bus_ || len > len_ || bus - bus_ > len_ - len)
    return Status::Errno(EFAULT, "card bus: [" + HexAddress(bus) + ", +" + std::to_string(len) +
                                     ") is outside the memory the card reaches [" + HexAddress(bus_) + ", +" +
                                     FormatSize(len_) + ")");
  return base_ + (bus - bus_);
}

Status SpanBus::Write(uint64_t bus, const void* data, uint64_t len) {
  RESMEM_ASSIGN_OR_RETURN(uint8_t* p, At(bus, len));
  std::memcpy(p, data, len);
  return Status::Ok();
}

Status SpanBus::Read(uint64_t bus, void* out, uint64_t len) {
  RESMEM_ASSIGN_OR_RETURN(uint8_t* p, At(bus, len));
  std::memcpy(out, p, len);
  return Status::Ok();
}

Status CardBus::Load64s(uint64_t base, const uint64_t* offsets, uint64_t* values, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    RESMEM_ASSIGN_OR_RETURN(values[i], Load64(base + offsets[i]));
  }
  return Status::Ok();
}

Status CardBus::Store64s(uint64_t base, const uint64_t* offsets, const uint64_t* values, size_t n) {
  for (size_t i = 0; i < n; ++i) RESMEM_RETURN_IF_ERROR(Store64(base + offsets[i], values[i]));
  return Status::Ok();
}

Result<uint64_t> SpanBus::Load64(uint64_t bus) {
  if (bus % 8) return Status::InvalidArgument("card bus: a 64-bit access at " + HexAddress(bus) + " is not aligned");
  RESMEM_ASSIGN_OR_RETURN(uint8_t* p, At(bus, 8));
  return __atomic_load_n(reinterpret_cast<uint64_t*>(p), __ATOMIC_ACQUIRE);
}

Status SpanBus::Store64(uint64_t bus, uint64_t value) {
  if (bus % 8) return Status::InvalidArgument("card bus: a 64-bit access at " + HexAddress(bus) + " is not aligned");
  RESMEM_ASSIGN_OR_RETURN(uint8_t* p, At(bus, 8));
  __atomic_store_n(reinterpret_cast<uint64_t*>(p), value, __ATOMIC_RELEASE);
  return Status::Ok();
}

uint64_t MakeBlock(uint64_t seed, uint64_t sequence, uint64_t block_bytes, uint8_t* out) {
  const uint64_t payload = block_bytes - RESMEM_CARD_BLOCK_OVERHEAD;
  uint64_t* words = reinterpret_cast<uint64_t*>(out + sizeof(resmem_card_block_header));
  for (uint64_t k = 0; k < payload / 8; ++k) words[k] = resmem_card_word(seed, sequence, k);
  resmem_card_block_header h{RESMEM_CARD_BLOCK_MAGIC, sequence, payload, resmem_card_checksum(words, payload / 8)};
  resmem_card_block_trailer t{sequence, RESMEM_CARD_BLOCK_MAGIC};
  std::memcpy(out, &h, sizeof h);
  std::memcpy(out + block_bytes - sizeof t, &t, sizeof t);
  return h.checksum;
}

CardDmaEngine::CardDmaEngine(CardBus& bus, CardConfig config)
    : bus_(bus), config_(std::move(config)), regs_(config_.window_bus) {
  ReplayScript();
}

void CardDmaEngine::ReplayScript() {
  windows_.clear();
  for (const auto& f : config_.faults) windows_.push_back(ScriptWindow(f));
}

Status CardDmaEngine::PowerOn(double now) {
  const std::vector<uint8_t> zeros(RESMEM_CARD_REGS_BYTES, 0);
  RESMEM_RETURN_IF_ERROR(bus_.Write(regs_, zeros.data(), zeros.size()));
  control_ = ring_bus_ = ring_entries_ = head_ = block_bytes_ = rate_ = 0;
  tail_ = completed_ = sequence_ = irq_ = heartbeat_ = errors_ = overruns_ = 0;
  sequence_ = config_.first_sequence;
  enabled_ = released_ = timeline_ = false;
  link_up_ = true;
  ReplayScript();
  current_ = Block();
  held_.clear();
  flush_held_ = false;
  counters_ = CardCounters();
  RESMEM_RETURN_IF_ERROR(bus_.Store64(regs_ + kMagic, RESMEM_CARD_MAGIC));
  RESMEM_RETURN_IF_ERROR(bus_.Store64(regs_ + kAbi, RESMEM_CARD_ABI));
  next_start_ = now;
  return PublishRegisters();
}

void CardDmaEngine::HostReleased(double) { released_ = true; }

void CardDmaEngine::AddFault(CardFault f, double now) {
  if (timeline_) f.at += Since(now);
  windows_.push_back(ScriptWindow(f));
  config_.faults.push_back(std::move(f));
}

CardDmaEngine::FaultWindow CardDmaEngine::ScriptWindow(const CardFault& f) {
  return {f.at, f.duration < 0 ? kIdle : f.at + f.duration, false};
}

int CardDmaEngine::Covering(FaultKind kind, double at) const {
  if (!enabled_) return -1;
  for (size_t i = 0; i < config_.faults.size(); ++i)
    if (config_.faults[i].kind == kind && windows_[i].Covers(Since(at))) return static_cast<int>(i);
  return -1;
}

const CardFault* CardDmaEngine::OnBlock(FaultKind kind, uint64_t sequence) const {
  for (const auto& f : config_.faults)
    if (f.kind == kind && f.block == sequence) return &f;
  return nullptr;
}

double CardDmaEngine::BlockSeconds() const {
  return config_.link_bytes_per_second > 0 ? block_bytes_ / config_.link_bytes_per_second : 0;
}

// The time from one block's start to the next's: the rate's (a burst divides it), never less
// than the bus takes to move a block.
double CardDmaEngine::Interval(double at) const {
  double rate = static_cast<double>(rate_);
  if (const int b = Covering(FaultKind::kBurst, at); b >= 0) rate *= config_.faults[b].factor;
  const double paced = rate > 0 ? block_bytes_ / rate : 0;
  return std::max(paced, BlockSeconds());
}

// Whether the card starts new blocks: enabled, not told to quiesce (unless its firmware ignores
// QUIESCE), configured.
bool CardDmaEngine::Producing() const {
  const bool ignore = std::any_of(config_.faults.begin(), config_.faults.end(),
                                  [](const CardFault& f) { return f.kind == FaultKind::kIgnoreQuiesce; });
  const bool told_to_stop = !(control_ & RESMEM_CARD_CTRL_ENABLE) || (control_ & RESMEM_CARD_CTRL_QUIESCE);
  return enabled_ && (ignore || !told_to_stop) && ring_entries_ && BlockBytesValid(block_bytes_);
}

Status CardDmaEngine::ReadHostRegisters() {
  static constexpr uint64_t kHostWords[] = {kControl, kRingBus, kRingEntries, kHead, kBlockBytes, kRate};
  uint64_t* const into[] = {&control_, &ring_bus_, &ring_entries_, &head_, &block_bytes_, &rate_};
  uint64_t v[std::size(kHostWords)];
  for (size_t i = 0; i < std::size(v); ++i) v[i] = *into[i];  // what a load that failed leaves
  const Status loaded = bus_.Load64s(regs_, kHostWords, v, std::size(kHostWords));
  for (size_t i = 0; i < std::size(v); ++i) *into[i] = v[i];
  RESMEM_RETURN_IF_ERROR(loaded);
  if (ring_entries_ & (ring_entries_ - 1) || ring_entries_ > 65536) ring_entries_ = 0;  // not a ring
  return Status::Ok();
}

// A RESET from the host at `now`: ring state and counters back to 0 (the sequence to the first
// block's), nothing in flight - a block taken but not landed, or landed with its completion held,
// is lost and counted in `overruns` (the host sees it missing) - and a stall in force ends (a
// hung engine restarts). Registers published, then the RESET bit cleared last: the card's
// acknowledgement, so a host that sees it clear reads the reset registers. ENABLE is the host's
// to write again; the fault script keeps its time line (from the first ENABLE).
Status CardDmaEngine::Reset(double now) {
  const uint64_t lost = (current_.taken && !current_.timeout ? 1 : 0) + held_.size();
  counters_.overruns += lost;
  for (size_t i = 0; i < config_.faults.size(); ++i)
    if (config_.faults[i].kind == FaultKind::kStall && windows_[i].Covers(Since(now))) windows_[i].end = Since(now);
  current_ = Block();
  held_.clear();
  flush_held_ = false;
  tail_ = completed_ = irq_ = errors_ = overruns_ = 0;
  sequence_ = config_.first_sequence;
  enabled_ = released_ = false;
  control_ &= ~RESMEM_CARD_CTRL_RESET;
  RESMEM_RETURN_IF_ERROR(bus_.Store64(regs_ + kHead, 0));
  head_ = 0;
  RESMEM_RETURN_IF_ERROR(PublishRegisters());
  return bus_.Store64(regs_ + kControl, control_);
}

// The outage that puts the link down at `now`, if one does: the one covering `now`, or one whose
// whole window passed before the engine looked (a device process on the real clock that was not
// run then, as the QEMU lane's card_device may be on a loaded host). That one begins now and lasts
// its duration: the host meets every outage of the script, late rather than never. On a virtual
// clock the engine is advanced to each outage's start (Advance's "next change"), so none is late.
int CardDmaEngine::BeginOutage(double now) {
  if (!enabled_ || !link_up_) return -1;
  for (size_t i = 0; i < config_.faults.size(); ++i) {
    FaultWindow& w = windows_[i];
    if (config_.faults[i].kind != FaultKind::kLinkDown || w.begun) continue;
    if (w.Covers(Since(now))) return static_cast<int>(i);
    if (w.end != kIdle && Since(now) >= w.end) {
      w.end = Since(now) + (w.end - w.start);
      w.start = Since(now);
      return static_cast<int>(i);
    }
  }
  return -1;
}

// The link as the fault script has it at `now`. Going down: the page reads all ones. Coming back:
// the card writes its own registers again, and every host register it finds changed from all
// ones was a write the card never saw: it keeps its last known value.
Status CardDmaEngine::FollowLink(double now, bool* up) {
  const int outage = BeginOutage(now);
  const bool down = Covering(FaultKind::kLinkDown, now) >= 0;
  if (down && link_up_) {
    if (outage >= 0) windows_[outage].begun = true;
    link_up_ = false;
    down_since_ = now;
    const std::vector<uint8_t> ones(sizeof(resmem_card_regs), 0xff);
    RESMEM_RETURN_IF_ERROR(bus_.Write(regs_, ones.data(), ones.size()));
  } else if (!down && !link_up_) {
    link_up_ = true;
    counters_.link_down_seconds += now - down_since_;
    for (uint64_t w = 0; w < kRegWords; ++w) {
      RESMEM_ASSIGN_OR_RETURN(uint64_t v, bus_.Load64(regs_ + 8 * w));
      if (v != RESMEM_CARD_LINK_DOWN) ++counters_.register_writes_lost;
    }
    for (auto [off, v] : {std::pair<uint64_t, uint64_t>{kMagic, RESMEM_CARD_MAGIC}, {kAbi, RESMEM_CARD_ABI},
                          {kControl, control_}, {kRingBus, ring_bus_}, {kRingEntries, ring_entries_},
                          {kHead, head_}, {kBlockBytes, block_bytes_}, {kRate, rate_}})
      RESMEM_RETURN_IF_ERROR(bus_.Store64(regs_ + off, v));
    // What was in flight finishes after the outage. The blocks the source made while the link was
    // down are lost (counted by LoseDueBlocks whether or not the host looked during the outage).
    if (current_.taken) current_.ends += now - down_since_;
    RESMEM_RETURN_IF_ERROR(LoseDueBlocks(std::nextafter(now, 0.0)));
    next_start_ = std::max(next_start_, now);
  }
  *up = link_up_;
  return Status::Ok();
}

// The blocks a paced card's source made by `until` while its engine could not write (a stall,
// the link down): lost, as a card's FIFO overflows - counted as overruns, their sequence
// numbers skipped, so a driver sees the gap.
Status CardDmaEngine::LoseDueBlocks(double until) {
  if (rate_ == 0 || !Producing()) return Status::Ok();
  while (next_start_ <= until) {
    ++overruns_;
    ++counters_.overruns;
    ++sequence_;
    next_start_ += Interval(next_start_);
  }
  return Status::Ok();
}

// A block is due at `at`: it takes the next posted descriptor and will land one block time later
// (a timeout fault: complete with TIMEOUT after the fault's time, nothing written); with none
// posted, a paced card loses the block (an overrun), a flat-out one waits for the host.
Status CardDmaEngine::Start(double at) {
  if (flush_held_) RESMEM_RETURN_IF_ERROR(FlushHeld());
  if (head_ == tail_ && !config_.stale_descriptors) {
    if (rate_ == 0) {
      next_start_ = kIdle;  // flat out: the next post starts it
      return Status::Ok();
    }
    ++overruns_;
    ++counters_.overruns;
    ++sequence_;
    next_start_ = at + Interval(at);
    return Status::Ok();
  }
  Block b;
  b.taken = true;
  b.index = tail_;
  const uint64_t slot = ring_bus_ + (tail_ % ring_entries_) * RESMEM_CARD_DESC_BYTES;
  RESMEM_RETURN_IF_ERROR(bus_.Read(slot, &b.desc, sizeof b.desc));
  ++tail_;
  b.sequence = sequence_++;
  b.ends = at + BlockSeconds();
  if (const CardFault* t = OnBlock(FaultKind::kTimeout, b.sequence)) {
    b.timeout = true;
    b.ends = at + t->duration;
  }
  current_ = b;
  next_start_ = at + Interval(at);
  return Status::Ok();
}

// The block in flight lands at `at`: whole, or in part (a torn-block fault), or not at all (a
// timeout, or a descriptor too short for a block); then its completion.
Status CardDmaEngine::Land(double at) {
  Block b = current_;
  current_ = Block();
  if (b.timeout) {
    ++counters_.timeouts;
    return Complete(b, RESMEM_CARD_DESC_TIMEOUT, 0);
  }
  if (b.desc.length < block_bytes_) return Complete(b, RESMEM_CARD_DESC_SHORT, 0);
  std::vector<uint8_t> block;
  uint64_t checksum = 0;
  if (config_.write_payload) {
    block.resize(block_bytes_);
    checksum = MakeBlock(config_.seed, b.sequence, block_bytes_, block.data());
  }
  uint64_t bytes = block_bytes_;
  if (OnBlock(FaultKind::kTorn, b.sequence)) {
    // Header and half the payload; the trailer keeps what was there.
    bytes = sizeof(resmem_card_block_header) + (block_bytes_ - RESMEM_CARD_BLOCK_OVERHEAD) / 2 / 8 * 8;
    ++counters_.torn;
  }
  const std::string what = "card: block " + std::to_string(b.sequence) + " into descriptor " + std::to_string(b.index) + "'s target";
  if (config_.write_payload) {
    RESMEM_RETURN_IF_ERROR(bus_.Write(b.desc.target, block.data(), bytes).WithContext(what));
  } else {
    RESMEM_RETURN_IF_ERROR(WriteModelledBlock(b, bytes).WithContext(what));
  }
  counters_.bytes += bytes;
  if (bytes == block_bytes_) ++counters_.blocks;
  if (released_) ++counters_.after_release;
  if (config_.stale_descriptors) ++counters_.duplicate;
  (void)at;
  return Complete(b, RESMEM_CARD_DESC_OK, static_cast<uint32_t>(checksum));
}

// A block whose payload is modelled: its header, and its trailer unless torn (`bytes` short).
Status CardDmaEngine::WriteModelledBlock(const Block& b, uint64_t bytes) {
  const uint64_t payload = block_bytes_ - RESMEM_CARD_BLOCK_OVERHEAD;
  resmem_card_block_header h{RESMEM_CARD_BLOCK_MAGIC, b.sequence, payload, 0};
  RESMEM_RETURN_IF_ERROR(bus_.Write(b.desc.target, &h, sizeof h));
  if (bytes < block_bytes_) return Status::Ok();
  resmem_card_block_trailer t{b.sequence, RESMEM_CARD_BLOCK_MAGIC};
  return bus_.Write(b.desc.target + block_bytes_ - sizeof t, &t, sizeof t);
}

// A completion, in order - or, inside an out-of-order window, in pairs with the later one first:
// the earlier is held, the later written (so `completed` counts a slot whose DONE is not set
// yet), and the held one written when the card starts its next block.
Status CardDmaEngine::Complete(const Block& b, uint32_t status, uint32_t checksum) {
  if (status != RESMEM_CARD_DESC_OK) ++errors_;
  Block done = b;
  done.desc.status = status;
  done.desc.checksum = checksum;
  if (Covering(FaultKind::kOutOfOrder, b.ends) >= 0 && held_.empty() && !flush_held_) {
    held_.push_back(done);
    return Status::Ok();
  }
  RESMEM_RETURN_IF_ERROR(WriteCompletion(done, status, checksum));
  if (!held_.empty()) flush_held_ = true;
  return Status::Ok();
}

// The completions held back, written now.
Status CardDmaEngine::FlushHeld() {
  for (const Block& h : held_) {
    ++counters_.out_of_order;
    RESMEM_RETURN_IF_ERROR(WriteCompletion(h, h.desc.status, h.desc.checksum));
  }
  held_.clear();
  flush_held_ = false;
  return Status::Ok();
}

// The descriptor's completion fields, DONE last, then `completed` and the interrupt.
Status CardDmaEngine::WriteCompletion(const Block& b, uint32_t status, uint32_t checksum) {
  const uint64_t slot = ring_bus_ + (b.index % ring_entries_) * RESMEM_CARD_DESC_BYTES;
  resmem_card_desc d = b.desc;
  d.sequence = b.sequence;
  d.status = status;
  d.checksum = checksum;
  d.flags = 0;
  RESMEM_RETURN_IF_ERROR(bus_.Write(slot, &d, sizeof d));
  // flags and length share a word: DONE goes in with one 64-bit store.
  const uint64_t word = static_cast<uint64_t>(d.length) | (static_cast<uint64_t>(RESMEM_CARD_DESC_DONE) << 32);
  RESMEM_RETURN_IF_ERROR(bus_.Store64(slot + offsetof(resmem_card_desc, length), word));
  ++completed_;
  ++irq_;
  return Status::Ok();
}

Status CardDmaEngine::PublishRegisters() {
  uint64_t status = RESMEM_CARD_STATUS_LINK_UP;
  if (current_.taken || !held_.empty()) status |= RESMEM_CARD_STATUS_ACTIVE;
  if (enabled_) status |= RESMEM_CARD_STATUS_ENABLED;
  if (errors_) status |= RESMEM_CARD_STATUS_ERROR;
  static constexpr uint64_t kCardWords[] = {kStatus, kTail, kCompleted, kOverruns, kIrq, kSequence, kHeartbeat, kErrors};
  const uint64_t v[] = {status, tail_, completed_, overruns_, irq_, sequence_, ++heartbeat_, errors_};
  static_assert(std::size(v) == std::size(kCardWords));
  return bus_.Store64s(regs_, kCardWords, v, std::size(kCardWords));
}

Result<double> CardDmaEngine::Advance(double now) {
  bool up = true;
  RESMEM_RETURN_IF_ERROR(FollowLink(now, &up));
  if (!up) {
    RESMEM_RETURN_IF_ERROR(LoseDueBlocks(now));
    const int outage = Covering(FaultKind::kLinkDown, now);
    return outage >= 0 ? enabled_at_ + windows_[outage].end : kIdle;  // kIdle + x: kIdle
  }
  RESMEM_RETURN_IF_ERROR(ReadHostRegisters());
  if (control_ & RESMEM_CARD_CTRL_RESET) RESMEM_RETURN_IF_ERROR(Reset(now));
  if ((control_ & RESMEM_CARD_CTRL_ENABLE) && !(control_ & RESMEM_CARD_CTRL_QUIESCE) && !enabled_) {
    enabled_ = true;
    released_ = false;
    if (!timeline_) enabled_at_ = now;  // the fault script's zero: the first ENABLE after power-on
    timeline_ = true;
    next_start_ = now;
  }
  if (next_start_ == kIdle && head_ != tail_) next_start_ = now;  // a flat-out card saw a post
  for (;;) {
    const double start = Producing() ? next_start_ : kIdle;
    const double land = current_.taken ? current_.ends : kIdle;
    if (std::min(start, land) > now) break;
    if (land <= start) {
      RESMEM_RETURN_IF_ERROR(Land(land));
    } else if (const int stall = Covering(FaultKind::kStall, start); stall >= 0) {
      // A paced source loses what falls due up to now; the rest of the stall's blocks are lost
      // as they fall due (the next run). A flat-out card waits for the stall's end.
      const double stall_end = enabled_at_ + windows_[stall].end;
      RESMEM_RETURN_IF_ERROR(LoseDueBlocks(std::min(now, stall_end)));
      if (rate_ == 0 || now >= stall_end) next_start_ = std::max(next_start_, stall_end);
    } else if (current_.taken) {
      next_start_ = current_.ends;  // one block in flight at a time
    } else {
      RESMEM_RETURN_IF_ERROR(Start(start));
    }
  }
  // A card that stops producing writes the completion it held back.
  if (!Producing() && !current_.taken && !held_.empty()) RESMEM_RETURN_IF_ERROR(FlushHeld());
  RESMEM_RETURN_IF_ERROR(PublishRegisters());
  double next = std::min(Producing() ? next_start_ : kIdle, current_.taken ? current_.ends : kIdle);
  for (size_t i = 0; i < config_.faults.size(); ++i)  // the link's next change is work too (the earliest)
    if (config_.faults[i].kind == FaultKind::kLinkDown && enabled_ && enabled_at_ + windows_[i].start > now)
      next = std::min(next, enabled_at_ + windows_[i].start);
  return next;
}

}  // namespace resmem::card
