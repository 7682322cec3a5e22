// The card's DMA engine: the device side of card_abi.h. It reads the host's registers and
// descriptors through a CardBus, writes numbered, checksummed blocks into the targets at its rate,
// writes completions, and follows a fault script. The same engine runs on the simulator's virtual
// clock (mock/card), in the QEMU lane's device process writing into the guest's RAM, and on the
// GPU machine as a process writing into host memory: only the bus and the clock differ.
#ifndef RESMEM_BACKENDS_CARD_CARD_ENGINE_H_
#define RESMEM_BACKENDS_CARD_CARD_ENGINE_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "backends/api/status.h"
#include "backends/card/card_abi.h"
#include "backends/card/card_fault.h"

namespace resmem::card {

// The card's view of memory, by bus address (the physical address without an IOMMU). Accesses of
// 8 bytes at 8-byte-aligned addresses are single-copy atomic (registers, descriptor flags): the
// host reads them while the card writes. Errors: a range the bus does not reach (EFAULT, named).
class CardBus {
 public:
  virtual ~CardBus() = default;
  virtual Status Write(uint64_t bus, const void* data, uint64_t len) = 0;
  virtual Status Read(uint64_t bus, void* out, uint64_t len) = 0;
  virtual Result<uint64_t> Load64(uint64_t bus) = 0;
  virtual Status Store64(uint64_t bus, uint64_t value) = 0;
  // The 64-bit words at base + offsets[i], i < n, in that order, each as Load64 / Store64 does it
  // (the default: one call each, stopping at the first error). A bus that can take several at once
  // overrides them: the simulator's memory locks once for the lot (mock/sim/physical_bus.h). The
  // engine reads and publishes its registers this way, twice per poll of the driver.
  virtual Status Load64s(uint64_t base, const uint64_t* offsets, uint64_t* values, size_t n);
  virtual Status Store64s(uint64_t base, const uint64_t* offsets, const uint64_t* values, size_t n);
};

// A CardBus over memory this process addresses: bus addresses [base_bus, base_bus + length) are
// bytes [base, base + length). The QEMU device process maps the guest's RAM file this way; the
// GPU machine's producer a memfd; the tests a vector.
class SpanBus : public CardBus {
 public:
  SpanBus(uint8_t* base, uint64_t base_bus, uint64_t length) : base_(base), bus_(base_bus), len_(length) {}
  Status Write(uint64_t bus, const void* data, uint64_t len) override;
  Status Read(uint64_t bus, void* out, uint64_t len) override;
  Result<uint64_t> Load64(uint64_t bus) override;
  Status Store64(uint64_t bus, uint64_t value) override;

 private:
  Result<uint8_t*> At(uint64_t bus, uint64_t len);
  uint8_t* base_;
  uint64_t bus_, len_;
};

// What the card has done, for tests, scenario expectations and the lab's log.
struct CardCounters {
  uint64_t blocks = 0;        // blocks written whole, completion OK
  uint64_t bytes = 0;         // block bytes written (torn blocks' part included)
  uint64_t overruns = 0;      // blocks lost: no descriptor posted when due
  uint64_t timeouts = 0;      // descriptors completed with TIMEOUT
  uint64_t torn = 0;          // blocks written in part (a torn-block fault)
  uint64_t after_release = 0; // blocks written after the host released their target (fault)
  uint64_t duplicate = 0;     // blocks a second engine wrote into a target it was not given
  uint64_t out_of_order = 0;  // completions written before an earlier one
  uint64_t register_writes_lost = 0;  // host writes to a register the card never saw (link down)
  double link_down_seconds = 0;
};

struct CardConfig {
  uint64_t window_bus = 0;   // the register page's bus address (the ring follows, card_abi.h)
  uint64_t seed = 1;         // the payload pattern's seed
  double link_bytes_per_second = 12e9;  // the card's bus: a block takes at least bytes / this
  std::vector<CardFault> faults;
  bool write_payload = true;  // false: header and trailer only (the simulator's long runs model
                              // the words between: a run costs per block, not per byte)
  // A card whose memory the host removed without clearing its address registers (the second card
  // of a duplicate_target fault): its firmware reuses the descriptors it holds, in a cycle, with no
  // host posting them, and every block it writes is counted in `duplicate`. A descriptor the host
  // cleared (length 0) gets no block: its completion says SHORT.
  bool stale_descriptors = false;
  uint64_t first_sequence = 0;  // the sequence number of the first block after power-on
};

class CardDmaEngine {
 public:
  CardDmaEngine(CardBus& bus, CardConfig config);

  // Power-on at time `now`: the register page gets magic, abi, LINK_UP; counters and ring state 0.
  Status PowerOn(double now);

  // Does all the card's work due by `now` (seconds on the caller's clock, never going back): reads
  // control and head, starts the blocks due by then (taking a descriptor each, or counting an
  // overrun when none is posted), lands the blocks whose time has come, writes their completions,
  // applies the faults. Returns when the card next has work due: a virtual clock jumps there, a
  // device process sleeps until then (or until the host posts). kIdle: nothing until the host
  // writes a register.
  Result<double> Advance(double now);

  // The host released the memory its descriptors point to (unmap, free, close, unload) at `now`.
  // A card that is idle writes nothing more; a block in flight still lands, and a card that was
  // not stopped goes on taking what the host had posted: each such block is counted in
  // after_release (aes-stream-drivers PR #291). Enabling again forgets the release.
  void HostReleased(double now);

  // A fault added while the card runs; its times count from `now`.
  // (A RESET written by the host - card_abi.h - is seen by Advance: see Reset.)
  void AddFault(CardFault f, double now);

  const CardCounters& counters() const { return counters_; }
  bool active() const { return current_.taken; }
  static constexpr double kIdle = std::numeric_limits<double>::infinity();

 private:
  struct Block {
    bool taken = false;
    uint64_t index = 0;     // descriptor index (ever)
    resmem_card_desc desc{};
    uint64_t sequence = 0;
    double ends = 0;        // when its data lands (or its timeout completes)
    bool timeout = false;
  };
  Status ReadHostRegisters();
  Status FollowLink(double now, bool* up);
  // When fault i of config_.faults is in force, in seconds after ENABLE ([start, end); end kIdle:
  // for ever): the script's window until the run changes it. link_down: `begun` once the card has
  // put its link down for it; an outage whose window passed before the card looked moves to begin
  // then (BeginOutage). stall: a RESET ends the stall in force (Reset). Rebuilt from the script at
  // power-on, so every power-on replays the script as written.
  struct FaultWindow {
    double start = 0, end = 0;
    bool begun = false;
    bool Covers(double t) const { return t >= start && t < end; }
  };
  static FaultWindow ScriptWindow(const CardFault& f);
  void ReplayScript();  // windows_ from the script as written
  int BeginOutage(double now);
  Status Reset(double now);
  Status Start(double at);
  Status LoseDueBlocks(double until);
  Status Land(double at);
  Status WriteModelledBlock(const Block& b, uint64_t bytes);
  Status Complete(const Block& b, uint32_t status, uint32_t checksum);
  Status WriteCompletion(const Block& b, uint32_t status, uint32_t checksum);
  Status FlushHeld();
  Status PublishRegisters();
  bool Producing() const;
  double Interval(double at) const;
  double BlockSeconds() const;
  double Since(double at) const { return at - enabled_at_; }
  // The index in config_.faults of a fault of `kind` in force at `at`, or -1.
  int Covering(FaultKind kind, double at) const;
  const CardFault* OnBlock(FaultKind kind, uint64_t sequence) const;

  CardBus& bus_;
  CardConfig config_;
  std::vector<FaultWindow> windows_;  // index for index with config_.faults
  uint64_t regs_ = 0;  // bus address of the register page
  // The host's registers as the card last read them.
  uint64_t control_ = 0, ring_bus_ = 0, ring_entries_ = 0, head_ = 0, block_bytes_ = 0, rate_ = 0;
  // The card's own.
  uint64_t tail_ = 0, completed_ = 0, sequence_ = 0, irq_ = 0, heartbeat_ = 0, errors_ = 0, overruns_ = 0;
  bool enabled_ = false, link_up_ = true, released_ = false;
  bool timeline_ = false;  // enabled_at_ is set: ENABLE seen since power-on (a RESET keeps it)
  double enabled_at_ = 0, next_start_ = 0, down_since_ = 0;
  Block current_;
  std::vector<Block> held_;  // a completion held back (out-of-order fault)
  bool flush_held_ = false;  // the later one of the pair is written: the held one goes next
  CardCounters counters_;
};

// A whole block for (seed, sequence) of `block_bytes`: header, payload (resmem_card_word),
// trailer, as the card writes it. Returns the payload's checksum.
uint64_t MakeBlock(uint64_t seed, uint64_t sequence, uint64_t block_bytes, uint8_t* out);

}  // namespace resmem::card

#endif  // RESMEM_BACKENDS_CARD_CARD_ENGINE_H_
