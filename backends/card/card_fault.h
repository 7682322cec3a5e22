// The card's fault script: what goes wrong, and when. One fault a line (or ';' between faults), in
// a scenario's [card] table or on a running device's control channel:
//   stall 5ms at 1s              the card writes nothing for 5 ms from 1 s after ENABLE (a RESET
//                                ends a stall in force: a hung engine restarts)
//   link_down at 2s for 30s      every register reads all ones, register writes are lost, no block
//                                and no completion until the link is back (Xilinx dma_ip_drivers
//                                #133, #175); "for" omitted: it never comes back
//   timeout block 100 after 1s   the card takes block 100's descriptor, writes nothing, and after
//                                1 s completes it with status TIMEOUT
//   torn block 7                 block 7 is written in part: header and half the payload, its
//                                trailer left as it was; its completion says OK
//   out_of_order at 1s for 100ms completions are written in pairs, the later one first
//   burst x4 at 1s for 10ms      the card produces at 4x its rate (its bus still limits it)
//   ignore_quiesce               the card's firmware does not stop at QUIESCE: it goes on taking
//                                and writing what the host posted
//   duplicate_target at 0.1s [for 1s] [x2]
//                                a second card on the same bus still holds this card's targets:
//                                the host removed that memory from it without clearing its address
//                                registers, and its firmware writes its own blocks (its seed, its
//                                sequence numbers) into them from 0.1 s, at this card's rate (x2:
//                                twice it) (aes-stream-drivers PR #284). The fix is the host's:
//                                card_start's clear_on_remove. Needs a card engine in this process
//                                (the simulator, the GPU machine's stand-in), not the QEMU lane's.
// Times: a number with s, ms or us. Blocks: the sequence number. Errors name the line and the
// word, with the form expected.
#ifndef RESMEM_BACKENDS_CARD_CARD_FAULT_H_
#define RESMEM_BACKENDS_CARD_CARD_FAULT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "backends/api/status.h"

namespace resmem::card {

enum class FaultKind { kStall, kLinkDown, kTimeout, kTorn, kOutOfOrder, kBurst, kIgnoreQuiesce, kDuplicateTarget };

struct CardFault {
  FaultKind kind = FaultKind::kStall;
  double at = 0;          // seconds after ENABLE (stall, link_down, out_of_order, burst, duplicate_target)
  double duration = 0;    // seconds; < 0: forever (link_down, duplicate_target without "for")
  uint64_t block = 0;     // sequence number (timeout, torn)
  double factor = 1;      // burst; duplicate_target: the second card's rate over this one's
  std::string text;       // the line as written
  // The script as written: the card engine keeps when each fault is in force, and any change to
  // that at run time (a late outage, a stall a RESET ended), in a table of its own (card_engine.h).
};

const char* FaultKindName(FaultKind k);

// The script's faults in order. An empty script is no fault.
Result<std::vector<CardFault>> ParseCardFaults(const std::string& script);

}  // namespace resmem::card

#endif  // RESMEM_BACKENDS_CARD_CARD_FAULT_H_
