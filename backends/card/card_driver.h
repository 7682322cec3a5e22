// The host side of card_abi.h: what a lab's driver does with the card - set the ring up, post
// descriptors, read completions in order and check every block, give the slots back, stop the
// card, release the memory. Each thing a driver in the public trackers got wrong is an option
// here, so a scenario runs the driver that has the bug and the one with the fix:
//   check_done       read a slot only once its DONE flag is set (not because `completed` moved:
//                    a card that completes out of order)
//   watchdog         notice a register that reads all ones (link down) and a card that completes
//                    nothing for watchdog_seconds while descriptors are posted (Xilinx
//                    dma_ip_drivers #133, #175)
//   quiesce          before releasing: clear ENABLE, set QUIESCE, and wait until ACTIVE clears
//                    (aes-stream-drivers PR #291's fix)
//   canaries         on release, fill the released targets with a canary pattern and count
//                    every word a card writes there afterwards (stray writes, never silent)
#ifndef RESMEM_BACKENDS_CARD_CARD_DRIVER_H_
#define RESMEM_BACKENDS_CARD_CARD_DRIVER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "backends/api/status.h"
#include "backends/card/card_engine.h"

namespace resmem::card {

struct DriverOptions {
  uint64_t ring_entries = 64;      // a power of two
  uint64_t block_bytes = 1 << 20;  // header and trailer included
  uint64_t rate = 0;               // bytes per second for the card; 0: flat out
  uint64_t seed = 1;               // the card's payload seed (to check blocks)
  bool check_done = true;
  bool watchdog = true;
  double watchdog_seconds = 1.0;
  bool verify_payload = true;      // every word of every block (else header, checksum, trailer)
  bool modelled_payload = false;   // the card writes header and trailer only: check those
};

// What the driver saw, counted. Silent losses and corruptions are what it failed to count.
struct DriverCounters {
  uint64_t delivered = 0;          // blocks read whole and correct
  uint64_t dropped = 0;            // blocks missing from the sequence (the card's overruns)
  uint64_t corrupt = 0;            // a block whose payload, checksum or header is wrong
  uint64_t foreign = 0;            // of those, whole blocks another card wrote: header, trailer and
                                   // checksum agree, but the payload is not this card's seed's, or
                                   // the sequence is one this card has not made yet (duplicate_target)
  uint64_t torn = 0;               // a block whose trailer does not match its header
  uint64_t timeouts = 0;           // completions with status TIMEOUT
  uint64_t not_done = 0;           // slots `completed` counted but whose DONE flag was not set yet
  uint64_t stray_words = 0;        // canary words overwritten after release
  bool link_down_seen = false;     // a register read all ones
  bool stalled_seen = false;       // the watchdog saw no completion for watchdog_seconds
  double bytes = 0;
  std::vector<std::string> events; // what the driver noticed, in order ("link down at 2.000 s")
};

class CardDriver {
 public:
  // `bus`: the host's view of the same addresses (the reserved range's physical addresses);
  // `window_bus`: the card's register page; `targets`: one block slot per ring entry, each at
  // least block_bytes, outside the window and the ring.
  CardDriver(CardBus& bus, uint64_t window_bus, std::vector<uint64_t> targets, DriverOptions o);

  // Programs the ring, posts every slot, enables the card. Refuses bad options by name.
  Status Start(double now);
  // Reads every completion there is, checks each block, gives the slot back. Returns how many
  // it consumed.
  Result<int> Poll(double now);
  // Asks the card to stop: ENABLE cleared, QUIESCE set.
  Status RequestStop();
  // Whether the card says it is idle (ACTIVE clear, link up).
  Result<bool> Idle();
  // The host lets the targets go at `now` (the card may still write them). With canaries on,
  // fills them with the canary pattern first.
  Status Release(double now);
  // Counts the canary words a card overwrote since Release.
  Status CheckCanaries();
  // At the end of a run, with the card idle: the blocks it made after the last one read (its
  // `sequence` register) that never arrived are dropped too. A driver that does not look counts
  // them nowhere - a silent loss.
  Status AccountTail();

  // A RESET, in three parts (the caller advances the card and waits between them):
  // AccountReset, with the card quiesced and idle and every completion read: the blocks the card
  // made (its `sequence` register) that never arrived are lost across the reset and counted as
  // dropped, never silent. Refuses a card whose registers read all ones (link down). Then writes
  // control = RESET.
  Status AccountReset(double now);
  // Whether the card has cleared the RESET bit (its acknowledgement); false while the link is down.
  Result<bool> ResetDone();
  // After the acknowledgement: the ring programmed again as Start does, every slot posted, the
  // card enabled; the driver's expectations start over (slot cursor 0, next sequence the card's
  // `sequence` register), so the restart is not counted as drops or corruption. Counters stay.
  Status Restart(double now);
  // The card's status word and heartbeat, as read now (all ones: link down).
  Result<uint64_t> ReadStatus();
  Result<uint64_t> Heartbeat();

  const DriverCounters& counters() const { return c_; }
  const DriverOptions& options() const { return o_; }
  uint64_t window_bus() const { return regs_; }
  static uint64_t RingBus(uint64_t window_bus) { return window_bus + RESMEM_CARD_REGS_BYTES; }

 private:
  Status CheckBlock(const resmem_card_desc& d, uint64_t target);
  bool Foreign(const resmem_card_desc& d, const resmem_card_block_header& h, const resmem_card_block_trailer& t,
               const uint64_t* words) const;
  Status Repost(uint64_t slot_index);
  Status Program(double now);
  void Event(double now, const std::string& what);
  Status Watch(double now, uint64_t status, uint64_t completed);

  CardBus& bus_;
  uint64_t regs_;
  std::vector<uint64_t> targets_;
  DriverOptions o_;
  uint64_t consumed_ = 0, head_ = 0, next_sequence_ = 0;
  double now_ = 0;  // the time of the Poll in progress (for events)
  double last_progress_ = 0;
  bool released_ = false;
  DriverCounters c_;
};

// The card and the driver on one time line, as the simulator runs them (and a test): from `from`
// to `until`, the card advancing to each moment its work is due, the driver polling every
// `poll_seconds`. Returns the time reached (`until`).
// `second`: another card on the same bus (a duplicate_target fault's), advanced on the same line.
Result<double> RunTogether(CardDmaEngine& card, CardDriver& driver, double from, double until, double poll_seconds,
                           CardDmaEngine* second = nullptr);

// The canary word at byte offset 8*k of a released target (what a stray write overwrites).
inline uint64_t CanaryWord(uint64_t k) { return 0xdeadca4ddeadca4dull ^ (k * 0x9e3779b97f4a7c15ull); }

}  // namespace resmem::card

#endif  // RESMEM_BACKENDS_CARD_CARD_DRIVER_H_
