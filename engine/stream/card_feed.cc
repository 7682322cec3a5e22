#include "engine/stream/card_feed.h"

#include <cstddef>

#include "backends/api/gpu.h"
#include "backends/card/card_abi.h"
#include "backends/card/card_fault.h"

namespace resmem::stream {
namespace {

constexpr uint64_t kControl = offsetof(resmem_card_regs, control), kRingBus = offsetof(resmem_card_regs, ring_bus),
                   kRingEntries = offsetof(resmem_card_regs, ring_entries), kHead = offsetof(resmem_card_regs, head),
                   kCompleted = offsetof(resmem_card_regs, completed),
                   kBlockBytes = offsetof(resmem_card_regs, block_bytes), kRate = offsetof(resmem_card_regs, rate),
                   kSequence = offsetof(resmem_card_regs, sequence);
constexpr uint64_t kRing = CardFeed::kWindowBus + RESMEM_CARD_REGS_BYTES;

// Two spans on one bus: the card's window (registers and ring) and the region's slots.
class FeedBus : public card::CardBus {
 public:
  FeedBus(uint8_t* window, uint64_t window_bytes, uint8_t* slots, uint64_t slot_bytes)
      : window_(window, CardFeed::kWindowBus, window_bytes), slots_(slots, CardFeed::kSlotsBus, slot_bytes) {}
  Status Write(uint64_t bus, const void* data, uint64_t len) override { return Of(bus).Write(bus, data, len); }
  Status Read(uint64_t bus, void* out, uint64_t len) override { return Of(bus).Read(bus, out, len); }
  Result<uint64_t> Load64(uint64_t bus) override { return Of(bus).Load64(bus); }
  Status Store64(uint64_t bus, uint64_t value) override { return Of(bus).Store64(bus, value); }

 private:
  card::SpanBus& Of(uint64_t bus) { return bus >= CardFeed::kSlotsBus ? slots_ : window_; }
  card::SpanBus window_, slots_;
};

}  // namespace

Result<std::unique_ptr<CardFeed>> CardFeed::Open(HostMemory& region, const CardFeedOptions& o) {
  if (o.slots < 1 || (o.slots & (o.slots - 1)) || o.slots > 65536)
    return Status::InvalidArgument("--producer card: --slots " + std::to_string(o.slots) +
                                   " is not a power of two from 1 to 65536 (the card's descriptor ring has one "
                                   "entry per slot): give 16, say");
  if (o.block_bytes < 64 || o.block_bytes % 8 || o.block_bytes > (1ull << 30))
    return Status::InvalidArgument("--producer card: a card block is 64 bytes to 1 GiB, a multiple of 8");
  if (!region.data() || region.size() < o.block_bytes * o.slots)
    return Status::InvalidArgument("--producer card: the card writes the ring through this process's mapping, and "
                                   "this host kind gives none: use --host memfd");
  RESMEM_ASSIGN_OR_RETURN(std::vector<card::CardFault> faults, card::ParseCardFaults(o.faults));
  return std::unique_ptr<CardFeed>(new CardFeed(region, o, std::move(faults)));
}

CardFeed::CardFeed(HostMemory& region, const CardFeedOptions& o, std::vector<card::CardFault> faults)
    : o_(o), window_(RESMEM_CARD_REGS_BYTES + o.slots * RESMEM_CARD_DESC_BYTES), slots_(o.slots, Slot::kFree) {
  bus_ = std::make_unique<FeedBus>(window_.data(), window_.size(), region.data(), o.block_bytes * o.slots);
  card::CardConfig c;
  c.window_bus = kWindowBus;
  c.seed = o.seed;
  c.faults = std::move(faults);
  engine_ = std::make_unique<card::CardDmaEngine>(*bus_, c);
}

Status CardFeed::Start(double now) {
  RESMEM_RETURN_IF_ERROR(engine_->PowerOn(now));
  const uint64_t rate = static_cast<uint64_t>(o_.rate_hz * static_cast<double>(o_.block_bytes));
  for (auto [off, v] : {std::pair<uint64_t, uint64_t>{kRingBus, kRing}, {kRingEntries, static_cast<uint64_t>(o_.slots)},
                        {kBlockBytes, o_.block_bytes}, {kRate, rate}})
    RESMEM_RETURN_IF_ERROR(bus_->Store64(kWindowBus + off, v));
  for (int i = 0; i < o_.slots; ++i) RESMEM_RETURN_IF_ERROR(Post());
  return bus_->Store64(kWindowBus + kControl, RESMEM_CARD_CTRL_ENABLE);
}

// The descriptor at head_ gets its slot's target, flags 0, and head moves past it.
Status CardFeed::Post() {
  const int slot = static_cast<int>(head_ % o_.slots);
  resmem_card_desc d{};
  d.target = kSlotsBus + slot * o_.block_bytes;
  d.length = static_cast<uint32_t>(o_.block_bytes);
  RESMEM_RETURN_IF_ERROR(bus_->Write(kRing + slot * RESMEM_CARD_DESC_BYTES, &d, sizeof d));
  slots_[slot] = Slot::kCard;
  return bus_->Store64(kWindowBus + kHead, ++head_);
}

Status CardFeed::Observe(double now) {
  RESMEM_ASSIGN_OR_RETURN(uint64_t completed, bus_->Load64(kWindowBus + kCompleted));
  if (completed == RESMEM_CARD_LINK_DOWN) return Status::Ok();  // the link is down: nothing to count
  for (; seen_ < completed; ++seen_) seen_at_.push_back(now);
  return Status::Ok();
}

Result<std::optional<CardBlock>> CardFeed::Next() {
  if (consumed_ == seen_) return std::optional<CardBlock>();
  const int slot = static_cast<int>(consumed_ % o_.slots);
  resmem_card_desc d;
  RESMEM_RETURN_IF_ERROR(bus_->Read(kRing + slot * RESMEM_CARD_DESC_BYTES, &d, sizeof d));
  if (!(d.flags & RESMEM_CARD_DESC_DONE)) return std::optional<CardBlock>();  // counted, not written yet
  CardBlock b;
  b.sequence = d.sequence;
  b.slot = slot;
  b.status = d.status;
  b.ok = d.status == RESMEM_CARD_DESC_OK;
  b.landed = seen_at_.front();
  seen_at_.pop_front();
  slots_[slot] = Slot::kHost;
  ++consumed_;
  return std::optional<CardBlock>(b);
}

Status CardFeed::GiveBack(int slot) {
  if (slot < 0 || slot >= o_.slots || slots_[slot] != Slot::kHost)
    return Status::Internal("card feed: slot " + std::to_string(slot) + " given back but the host does not hold it");
  slots_[slot] = Slot::kFree;
  while (head_ < consumed_ + o_.slots && slots_[head_ % o_.slots] == Slot::kFree) RESMEM_RETURN_IF_ERROR(Post());
  return Status::Ok();
}

Result<uint64_t> CardFeed::Made() { return bus_->Load64(kWindowBus + kSequence); }

uint64_t CardFeed::BlockFnv(uint64_t sequence) const {
  std::vector<uint8_t> block(o_.block_bytes);
  card::MakeBlock(o_.seed, sequence, o_.block_bytes, block.data());
  return Fnv1a64(block.data(), block.size());
}

}  // namespace resmem::stream
