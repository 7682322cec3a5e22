// The card as the stream's producer (`resmem stream --producer card`): the card's DMA engine
// (backends/card, card_abi.h) writes its blocks - header, payload, trailer - into the stream ring's
// slots, as seed 000's FPGA DMAs into the reserved range, instead of the CPU writing the block
// pattern. The host side here is the card's driver reduced to what the stream needs: it posts one
// descriptor per free slot, reads completions in order (DONE set), and posts a slot again only when
// the stream's consumers have moved its block to the GPU. A block due while no slot is posted is
// lost on the card (an overrun): the sequence numbers of the blocks that arrive show the gap.
//
// Layout: the card's register page and descriptor ring sit in a small buffer of their own (the
// card's BAR and a ring page), at bus address kWindowBus; the slots are the region's bytes at bus
// kSlotsBus. One thread drives the engine (Advance), one the host side (Start, Observe, Next,
// GiveBack): they share only the bus's memory, through its single-copy-atomic words, as a card and
// its driver do.
#ifndef RESMEM_ENGINE_STREAM_CARD_FEED_H_
#define RESMEM_ENGINE_STREAM_CARD_FEED_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/api/memory.h"
#include "backends/api/status.h"
#include "backends/card/card_engine.h"

namespace resmem::stream {

struct CardFeedOptions {
  uint64_t block_bytes = 16ull << 20;  // the card's blocks, header and trailer included
  int slots = 16;                      // a power of two: the card's ring has one descriptor per slot
  double rate_hz = 10;                 // blocks a second (the card's rate = rate_hz * block_bytes); 0: flat out
  uint64_t seed = 1;                   // the card's payload seed
  std::string faults;                  // the card's fault script (backends/card/card_fault.h)
};

// A completed descriptor, in order.
struct CardBlock {
  uint64_t sequence = 0;  // the card's block number
  int slot = 0;           // where it is in the region
  bool ok = true;         // false: the card completed it with an error status (no block written)
  uint32_t status = 0;    // RESMEM_CARD_DESC_*
  double landed = 0;      // when the host first saw its completion (Observe's time)
};

class CardFeed {
 public:
  // Errors: the region is not addressable in this process (a kind without a mapping), the slots
  // are not a power of two, the block is under 64 bytes, the fault script does not parse - each
  // named, with what to give instead.
  static Result<std::unique_ptr<CardFeed>> Open(HostMemory& region, const CardFeedOptions& o);

  // Powers the card on at `now`, programs its ring, posts every slot, enables it.
  Status Start(double now);
  // The engine's side: the card's work due by `now`; when it next has work (CardDmaEngine::kIdle:
  // none until the host posts). Only the engine's thread calls it.
  Result<double> Advance(double now) { return engine_->Advance(now); }

  // The host's side. Stamps the completions the card has counted since the last call with `now`.
  Status Observe(double now);
  // The next completion in order whose DONE is set, or none yet. Its slot is the host's until
  // GiveBack.
  Result<std::optional<CardBlock>> Next();
  // The consumers are done with `slot`: posted again, in ring order (a slot given back early waits
  // for the ones before it).
  Status GiveBack(int slot);
  // Blocks the card has made so far (its sequence register), lost ones included.
  Result<uint64_t> Made();

  // The engine's counters; read them once its thread is done.
  const card::CardCounters& card_counters() const { return engine_->counters(); }
  // FNV-1a 64 (byte-wise, as Gpu::DeviceChecksum) of block `sequence` as the card writes it.
  uint64_t BlockFnv(uint64_t sequence) const;

  static constexpr uint64_t kWindowBus = 0x10000000, kSlotsBus = 0x100000000ull;

 private:
  enum class Slot { kCard, kHost, kFree };
  CardFeed(HostMemory& region, const CardFeedOptions& o, std::vector<card::CardFault> faults);
  Status Post();

  CardFeedOptions o_;
  std::vector<uint8_t> window_;  // register page and ring
  std::unique_ptr<card::CardBus> bus_;
  std::unique_ptr<card::CardDmaEngine> engine_;
  std::vector<Slot> slots_;
  uint64_t head_ = 0, consumed_ = 0, seen_ = 0;
  std::deque<double> seen_at_;  // when completions consumed_.. were first counted
};

}  // namespace resmem::stream

#endif  // RESMEM_ENGINE_STREAM_CARD_FEED_H_
