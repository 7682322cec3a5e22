// The card seam: a data-acquisition card's DMA engine (backends/card/card_abi.h) and the host
// driver reading it, as one part of a Backend. The simulator's runs both on its virtual clock
// (mock/card); the QEMU guest's driver reads a real asynchronous writer, a device process on the
// host writing into the guest's RAM (ci/qemu); the GPU machine's runs the engine as a thread
// writing into host memory. Scenario steps card_start, card_run, card_fault, card_stop,
// card_reset and card_release drive it (docs/digitizer.md).
#ifndef RESMEM_BACKENDS_API_CARD_H_
#define RESMEM_BACKENDS_API_CARD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "backends/api/status.h"

namespace resmem {

struct CardSetup {
  uint64_t window = 0;         // physical (bus) address of the register page; 0: the start of the
                               // backend's first reserved range
  uint64_t block_bytes = 1 << 20;
  uint64_t ring_entries = 64;
  uint64_t rate = 0;           // bytes per second; 0: flat out
  uint64_t seed = 1;
  std::string faults;          // the fault script (backends/card/card_fault.h)
  bool check_done = true;      // the driver's fixes (backends/card/card_driver.h)
  bool watchdog = true;
  double watchdog_seconds = 1.0;
  double poll_seconds = 1e-4;  // how often the driver looks
  bool model_payload = false;  // the card writes header and trailer only and the driver checks
                               // those: an hour on the simulator costs per block, not per byte
  bool clear_on_remove = false;  // the host cleared the address registers of the second card of a
                                 // duplicate_target fault when it removed that memory from it
                                 // (aes-stream-drivers PR #284's fix): that card writes nothing
};

// What the card did and what the driver made of it.
struct CardReport {
  // the card's side
  uint64_t card_blocks = 0, card_overruns = 0, card_torn = 0, card_timeouts = 0, after_release = 0,
           out_of_order = 0, register_writes_lost = 0;
  uint64_t duplicate = 0;      // blocks a second card wrote into this card's targets (duplicate_target)
  double link_down_seconds = 0;
  // the driver's side
  uint64_t delivered = 0, dropped = 0, corrupt = 0, torn = 0, timeouts = 0, not_done = 0, stray_words = 0;
  uint64_t foreign = 0;        // of the corrupt blocks, whole blocks another card wrote
  bool link_down_seen = false, stalled_seen = false;
  double bytes = 0;            // payload bytes delivered
  double seconds = 0;          // the card's time since card_start
  std::vector<std::string> events;
  // Silent losses: blocks the card lost or spoiled that the driver did not count.
  uint64_t SilentLosses() const;
};

class CardPort {
 public:
  virtual ~CardPort() = default;
  // Powers the card on, programs the ring, posts every slot, enables it.
  virtual Status Start(const CardSetup& setup) = 0;
  // Acquisition for `seconds` on the backend's clock: the card writes, the driver reads.
  virtual Status Run(double seconds) = 0;
  // One fault-script line, its times counted from now.
  virtual Status AddFault(const std::string& line) = 0;
  // QUIESCE the card; `wait`: until it says it is idle (at most `wait_seconds`).
  virtual Status Stop(bool wait, double wait_seconds) = 0;
  // The driver lets go of the targets (after Stop, or not), the card runs `then_seconds` more, and
  // the canaries count what it wrote into them.
  virtual Status Release(double then_seconds) = 0;
  // RESMEM_CARD_CTRL_RESET on a running card: it is quiesced (and must go idle), what completed is
  // read, the blocks it made that never arrived are counted as dropped (lost across the reset,
  // never silent); then RESET (the card clears the bit when done: ring state, counters and
  // sequence numbers start over, a hung engine restarts), the ring programmed again, every slot
  // posted, ENABLE. The driver's expectations start over with it, so the restart itself is
  // neither a drop nor corruption. All within `wait_seconds`, else ETIMEDOUT naming the step and
  // the card's status word (all ones: the link is down and the RESET would be lost).
  virtual Status Reset(double wait_seconds) = 0;
  virtual CardReport Report() const = 0;
};

}  // namespace resmem

#endif  // RESMEM_BACKENDS_API_CARD_H_
