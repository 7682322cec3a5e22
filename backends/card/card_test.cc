// The card and its driver on one time line over a plain buffer: what a card with each fault does,
// and what a driver with and without each fix makes of it.
#include <gtest/gtest.h>

#include <vector>

#include "backends/card/card_driver.h"
#include "backends/card/card_engine.h"
#include "backends/card/card_fault.h"
#include "backends/card/card_port.h"

namespace resmem::card {
namespace {

constexpr uint64_t kBase = 0x40000000;  // the buffer's bus address (a reservation's)
constexpr uint64_t kBlock = 64 * 1024;

struct Rig {
  std::vector<uint8_t> mem;
  SpanBus bus;
  CardDmaEngine card;
  CardDriver driver;
  Rig(const std::string& faults, DriverOptions o, uint64_t seed = 7)
      : mem(2 * 1024 * 1024 + o.ring_entries * o.block_bytes),
        bus(mem.data(), kBase, mem.size()),
        card(bus, Config(faults, seed)),
        driver(bus, kBase, Targets(o), WithSeed(o, seed)) {}
  static CardConfig Config(const std::string& faults, uint64_t seed) {
    CardConfig c;
    c.window_bus = kBase;
    c.seed = seed;
    c.link_bytes_per_second = 4e9;
    auto f = ParseCardFaults(faults);
    EXPECT_TRUE(f.ok()) << f.status().message();
    c.faults = f.ok() ? *f : std::vector<CardFault>{};
    return c;
  }
  static DriverOptions WithSeed(DriverOptions o, uint64_t seed) {
    o.seed = seed;
    return o;
  }
  static std::vector<uint64_t> Targets(const DriverOptions& o) {
    std::vector<uint64_t> t;
    for (uint64_t i = 0; i < o.ring_entries; ++i) t.push_back(kBase + 2 * 1024 * 1024 + i * o.block_bytes);
    return t;
  }
  void Run(double until, double poll = 1e-4) {
    ASSERT_TRUE(card.PowerOn(0).ok());
    ASSERT_TRUE(driver.Start(0).ok());
    auto r = RunTogether(card, driver, 0, until, poll);
    ASSERT_TRUE(r.ok()) << r.status().message();
  }
};

DriverOptions Paced(uint64_t rate) {
  DriverOptions o;
  o.ring_entries = 16;
  o.block_bytes = kBlock;
  o.rate = rate;
  return o;
}

TEST(Card, DeliversEveryBlockAtItsRate) {
  Rig r("", Paced(100e6));  // 100 MB/s of 64 KiB blocks: 1,525.9 blocks a second
  r.Run(1.0);
  const auto& d = r.driver.counters();
  EXPECT_NEAR(static_cast<double>(d.delivered), 1e8 / kBlock, 2);
  EXPECT_EQ(d.dropped + d.corrupt + d.torn + d.timeouts, 0u);
  EXPECT_EQ(r.card.counters().overruns, 0u);
}

TEST(Card, AConsumerThatFallsBehindLosesBlocksAndSeesTheGap) {
  Rig r("", Paced(1e9));
  r.Run(0.05, /*poll=*/0.01);  // 16 slots of 64 KiB = 1 ms of data; polled every 10 ms
  const auto& d = r.driver.counters();
  EXPECT_GT(r.card.counters().overruns, 0u);
  EXPECT_GT(d.dropped, 0u);
  EXPECT_LE(d.dropped, r.card.counters().overruns);  // the tail's overruns come after the last block read
  EXPECT_EQ(d.corrupt, 0u);
}

TEST(Card, LinkDownReadsAllOnesAndOnlyAWatchdogNotices) {
  for (bool watchdog : {false, true}) {
    DriverOptions o = Paced(100e6);
    o.watchdog = watchdog;
    Rig r("link_down at 0.2s", o);
    r.Run(1.0);
    EXPECT_EQ(r.driver.counters().link_down_seen, watchdog);
    auto status = r.bus.Load64(kBase + offsetof(resmem_card_regs, status));
    EXPECT_EQ(*status, RESMEM_CARD_LINK_DOWN);
    EXPECT_NEAR(static_cast<double>(r.driver.counters().delivered), 0.2 * 1e8 / kBlock, 3);
  }
}

// A card that first looks after an outage's whole window (a device process on the real clock that
// was not run then) still goes down, for the outage's whole duration, from when it looks; the
// outage's blocks are lost, not delivered late. A card that looks within the window keeps its end.
TEST(Card, AnOutageTheCardSleptThroughBeginsWhenItLooks) {
  Rig r("link_down at 0.2s for 0.1s", Paced(100e6));
  ASSERT_TRUE(r.card.PowerOn(0).ok());
  ASSERT_TRUE(r.driver.Start(0).ok());
  ASSERT_TRUE(r.card.Advance(0.001).ok());  // ENABLE seen: the script's zero
  ASSERT_TRUE(r.card.Advance(0.35).ok());   // the window [0.2, 0.3) passed unseen
  EXPECT_EQ(*r.bus.Load64(kBase + offsetof(resmem_card_regs, status)), RESMEM_CARD_LINK_DOWN);
  EXPECT_EQ(r.card.counters().blocks, 0u);  // nothing written late: what fell due is lost
  EXPECT_GT(r.card.counters().overruns, 0u);
  ASSERT_TRUE(r.card.Advance(0.449).ok());  // still down 0.099 s after it began
  EXPECT_EQ(*r.bus.Load64(kBase + offsetof(resmem_card_regs, status)), RESMEM_CARD_LINK_DOWN);
  ASSERT_TRUE(r.card.Advance(0.452).ok());
  EXPECT_NE(*r.bus.Load64(kBase + offsetof(resmem_card_regs, status)), RESMEM_CARD_LINK_DOWN);
  EXPECT_NEAR(r.card.counters().link_down_seconds, 0.102, 1e-3);
  // Once only: the same outage does not come back.
  ASSERT_TRUE(r.card.Advance(0.9).ok());
  EXPECT_NE(*r.bus.Load64(kBase + offsetof(resmem_card_regs, status)), RESMEM_CARD_LINK_DOWN);
  // Looked at within the window: the link comes back at the window's end, as scripted.
  Rig in("link_down at 0.2s for 0.1s", Paced(100e6));
  ASSERT_TRUE(in.card.PowerOn(0).ok());
  ASSERT_TRUE(in.driver.Start(0).ok());
  ASSERT_TRUE(in.card.Advance(0.001).ok());
  ASSERT_TRUE(in.card.Advance(0.25).ok());
  EXPECT_EQ(*in.bus.Load64(kBase + offsetof(resmem_card_regs, status)), RESMEM_CARD_LINK_DOWN);
  ASSERT_TRUE(in.card.Advance(0.302).ok());
  EXPECT_NE(*in.bus.Load64(kBase + offsetof(resmem_card_regs, status)), RESMEM_CARD_LINK_DOWN);
  EXPECT_NEAR(in.card.counters().link_down_seconds, 0.052, 1e-3);
  // A power-on replays the script from its start: the outage is the script's again.
  ASSERT_TRUE(r.card.PowerOn(1).ok());
  ASSERT_TRUE(r.driver.Start(1).ok());
  ASSERT_TRUE(r.card.Advance(1.001).ok());
  ASSERT_TRUE(r.card.Advance(1.25).ok());
  EXPECT_EQ(*r.bus.Load64(kBase + offsetof(resmem_card_regs, status)), RESMEM_CARD_LINK_DOWN);
}

// The engine's next work includes the earliest outage to come, whatever the script's order.
TEST(Card, TheNextWorkIsTheEarliestOutage) {
  Rig r("link_down at 0.5s for 0.05s; link_down at 0.2s for 0.05s", Paced(kBlock));  // a block a second
  ASSERT_TRUE(r.card.PowerOn(0).ok());
  ASSERT_TRUE(r.driver.Start(0).ok());
  ASSERT_TRUE(r.card.Advance(0.001).ok());  // ENABLE seen; the first block starts
  auto due = r.card.Advance(0.01);          // it has landed; the next is 1 s on
  ASSERT_TRUE(due.ok());
  EXPECT_NEAR(*due, 0.201, 1e-9);
}

TEST(Card, ALinkThatComesBackResumesAndTheWritesItMissedAreCounted) {
  Rig r("link_down at 0.2s for 0.1s", Paced(100e6));
  r.Run(1.0);
  EXPECT_TRUE(r.driver.counters().link_down_seen);
  EXPECT_NEAR(r.card.counters().link_down_seconds, 0.1, 1e-3);
  EXPECT_EQ(r.card.counters().register_writes_lost, 0u);  // a watchdog driver wrote nothing meanwhile
  EXPECT_GT(r.driver.counters().delivered, 0.8 * 1e8 / kBlock);
  // A stop asked for while the link is down never reaches the card: it produces on.
  Rig lost("link_down at 0.2s for 0.1s", Paced(100e6));
  lost.Run(0.25);
  ASSERT_TRUE(lost.driver.RequestStop().ok());
  ASSERT_TRUE(RunTogether(lost.card, lost.driver, 0.25, 0.6, 1e-4).ok());
  EXPECT_EQ(lost.card.counters().register_writes_lost, 1u);
  EXPECT_GT(lost.driver.counters().delivered, 0.5 * 1e8 / kBlock);
}

TEST(Card, TornBlockAndTimeoutAreEachCountedOnce) {
  Rig r("torn block 7; timeout block 20 after 50ms", Paced(100e6));
  r.Run(0.5);
  EXPECT_EQ(r.driver.counters().torn, 1u);
  EXPECT_EQ(r.driver.counters().timeouts, 1u);
  EXPECT_EQ(r.card.counters().torn, 1u);
  EXPECT_EQ(r.driver.counters().corrupt, 0u);
}

TEST(Card, OutOfOrderCompletionsCorruptOnlyADriverThatTrustsTheCount) {
  for (bool check_done : {false, true}) {
    DriverOptions o = Paced(100e6);
    o.check_done = check_done;
    Rig r("out_of_order at 0.1s for 0.3s", o);  // 30 blocks: more than a lap of the 16-slot ring
    r.Run(0.5, 1e-5);
    EXPECT_GT(r.card.counters().out_of_order, 0u);
    if (check_done) {
      EXPECT_EQ(r.driver.counters().corrupt, 0u);
      EXPECT_EQ(r.driver.counters().not_done, 0u);
    } else {
      EXPECT_GT(r.driver.counters().not_done, 0u);
      EXPECT_GT(r.driver.counters().corrupt, 0u);
      // Its slips make it read this card's later laps in the wrong slots: its own blocks, not
      // another card's (the payload says whose; once the header's sequence alone said "foreign").
      EXPECT_EQ(r.driver.counters().foreign, 0u);
    }
  }
}

TEST(Card, AStallLongerThanTheWatchdogIsSeen) {
  Rig r("stall 1.5s at 0.1s", Paced(100e6));
  r.Run(2.0);
  EXPECT_TRUE(r.driver.counters().stalled_seen);
  EXPECT_FALSE(r.driver.counters().link_down_seen);
}

// A paced card's source goes on making blocks through a stall; every one it could not write is
// lost and counted (an overrun, its sequence number skipped), however often the card is run
// meanwhile: 0.5 s at 100 MB/s of 64 KiB blocks is about 763 blocks. The driver sees each one
// as a gap in the sequence.
TEST(Card, AStallLosesEveryBlockDueInItAndTheDriverSeesEachGap) {
  for (double poll : {1e-4, 2e-3}) {  // the ring holds 10 ms of blocks
    Rig r("stall 0.5s at 0.1s", Paced(100e6));
    r.Run(1.0, poll);
    const double due = 0.5 * 1e8 / kBlock;
    EXPECT_NEAR(static_cast<double>(r.card.counters().overruns), due, 2) << "poll " << poll;
    EXPECT_NEAR(static_cast<double>(r.driver.counters().dropped), due, 2) << "poll " << poll;
    EXPECT_NEAR(static_cast<double>(r.driver.counters().delivered), 0.5 * 1e8 / kBlock, 3);
    EXPECT_EQ(r.driver.counters().corrupt, 0u);
  }
}

// A RESET ends the stall in force (a hung engine restarts); the script itself is not changed, so
// the next power-on replays it as written: the stall lasts its whole 10 s again.
TEST(Card, AResetEndsAStallAndAPowerOnReplaysTheScript) {
  Rig r("stall 10s at 0.1s", Paced(100e6));
  r.Run(0.3);
  const uint64_t stalled = r.card.counters().blocks;
  EXPECT_NEAR(static_cast<double>(stalled), 0.1 * 1e8 / kBlock, 3);
  ASSERT_TRUE(r.driver.AccountReset(0.3).ok());
  ASSERT_TRUE(r.card.Advance(0.3).ok());  // the card sees RESET
  ASSERT_TRUE(*r.driver.ResetDone());
  ASSERT_TRUE(r.driver.Restart(0.3).ok());
  ASSERT_TRUE(RunTogether(r.card, r.driver, 0.3, 0.5, 1e-4).ok());
  EXPECT_NEAR(static_cast<double>(r.card.counters().blocks - stalled), 0.2 * 1e8 / kBlock, 3);
  ASSERT_TRUE(r.card.PowerOn(1.0).ok());
  ASSERT_TRUE(r.driver.Start(1.0).ok());
  ASSERT_TRUE(RunTogether(r.card, r.driver, 1.0, 1.6, 1e-4).ok());
  // The card's counters start at power-on: the 0.1 s before the stall, and nothing in it.
  EXPECT_NEAR(static_cast<double>(r.card.counters().blocks), 0.1 * 1e8 / kBlock, 3);
}

// Releasing while the card is active: the block in flight (and, unstopped, every block after it)
// lands in released memory, and the canaries count each word. Quiescing and waiting for idle
// first: nothing lands.
TEST(Card, ReleaseWhileActiveWritesAfterReleaseUnlessQuiesced) {
  for (bool quiesce : {false, true}) {
    Rig r("", Paced(100e6));
    r.Run(0.1);
    double t = 0.1;
    if (quiesce) {
      ASSERT_TRUE(r.driver.RequestStop().ok());
      for (int i = 0; i < 1000; ++i) {
        ASSERT_TRUE(r.card.Advance(t).ok());
        if (*r.driver.Idle()) break;
        t += 1e-4;
      }
    }
    ASSERT_TRUE(r.driver.Release(t).ok());
    r.card.HostReleased(t);
    ASSERT_TRUE(r.card.Advance(t + 0.05).ok());
    ASSERT_TRUE(r.driver.CheckCanaries().ok());
    if (quiesce) {
      EXPECT_EQ(r.driver.counters().stray_words, 0u);
      EXPECT_EQ(r.card.counters().after_release, 0u);
    } else {
      EXPECT_GT(r.driver.counters().stray_words, 0u);
      EXPECT_GT(r.card.counters().after_release, 0u);
    }
  }
}

// A card whose firmware ignores QUIESCE is idle between blocks, so a driver that waits for idle
// releases while the card still takes what was posted: its blocks land in released memory.
TEST(Card, IgnoreQuiesceWritesAfterReleaseEvenForADriverThatWaits) {
  Rig r("ignore_quiesce", Paced(100e6));
  r.Run(0.1);
  ASSERT_TRUE(r.driver.RequestStop().ok());
  double t = 0.1;
  for (int i = 0; i < 1000 && !*r.driver.Idle(); ++i) ASSERT_TRUE(r.card.Advance(t += 1e-4).ok());
  ASSERT_TRUE(r.driver.Release(t).ok());
  r.card.HostReleased(t);
  ASSERT_TRUE(r.card.Advance(t + 0.05).ok());
  ASSERT_TRUE(r.driver.CheckCanaries().ok());
  EXPECT_GT(r.card.counters().after_release, 1u);
  EXPECT_GT(r.driver.counters().stray_words, 0u);
}

TEST(Card, TheSameSeedWritesTheSameBytes) {
  Rig a("torn block 3", Paced(100e6), 11), b("torn block 3", Paced(100e6), 11);
  a.Run(0.2);
  b.Run(0.2);
  EXPECT_EQ(a.mem, b.mem);
  Rig c("torn block 3", Paced(100e6), 12);
  c.Run(0.2);
  EXPECT_NE(a.mem, c.mem);
}

TEST(CardFault, BadScriptsAreRefusedNamingTheWord) {
  for (const char* bad : {"stall at 1s", "link_down", "torn 7", "burst x4 at 1s", "meltdown at 1s", "timeout block 3",
                          "stall 5 at 1s"}) {
    auto f = ParseCardFaults(bad);
    ASSERT_FALSE(f.ok()) << bad;
    EXPECT_NE(f.status().message().find("card fault '"), std::string::npos) << f.status().message();
    EXPECT_NE(f.status().message().find("forms:"), std::string::npos);
  }
  auto ok = ParseCardFaults("# a comment\nstall 5ms at 1s; link_down at 2s for 30s\nburst x4 at 1s for 10ms");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  ASSERT_EQ(ok->size(), 3u);
  EXPECT_DOUBLE_EQ((*ok)[0].duration, 0.005);
  EXPECT_DOUBLE_EQ((*ok)[1].at, 2);
  EXPECT_DOUBLE_EQ((*ok)[2].factor, 4);
}

TEST(CardDriver, RefusesABadRingAndAWindowWithNoCard) {
  DriverOptions o = Paced(0);
  o.ring_entries = 12;
  Rig r("", Paced(0));
  CardDriver bad(r.bus, kBase, Rig::Targets(o), o);
  ASSERT_TRUE(r.card.PowerOn(0).ok());
  auto st = bad.Start(0);
  EXPECT_NE(st.message().find("power of two"), std::string::npos) << st.message();
  CardDriver nowhere(r.bus, kBase + 4096 * 8, Rig::Targets(Paced(0)), Paced(0));
  st = nowhere.Start(0);
  EXPECT_NE(st.message().find("no card at"), std::string::npos) << st.message();
}

// The port the backends build: on a virtual clock the card and the driver share its time line; a
// runtime fault counts from now; quiesce-and-wait, then release: no stray write.
TEST(CardPort, RunsOnAVirtualClockAndReportsBothSides) {
  std::vector<uint8_t> mem(64 << 20);
  auto clock = std::make_shared<VirtualClock>();
  BusCardPort port(std::make_unique<SpanBus>(mem.data(), kBase, mem.size()), clock, kBase, kBase + mem.size(), true);
  CardSetup s;
  s.block_bytes = kBlock;
  s.ring_entries = 32;
  s.rate = 200000000;
  ASSERT_TRUE(port.Start(s).ok());
  ASSERT_TRUE(port.Run(0.5).ok());
  ASSERT_TRUE(port.AddFault("torn block 2000").ok());
  ASSERT_TRUE(port.AddFault("link_down at 0.1s for 0.05s").ok());
  ASSERT_TRUE(port.Run(0.5).ok());
  ASSERT_TRUE(port.Stop(true, 1.0).ok());
  ASSERT_TRUE(port.Release(0.1).ok());
  const CardReport r = port.Report();
  EXPECT_NEAR(r.seconds, 1.1, 0.01);  // the runs, the stop, the release's 0.1 s
  EXPECT_EQ(r.torn, 1u);
  EXPECT_TRUE(r.link_down_seen);
  EXPECT_NEAR(r.link_down_seconds, 0.05, 1e-3);
  EXPECT_EQ(r.stray_words, 0u);
  EXPECT_EQ(r.corrupt, 0u);
  EXPECT_EQ(r.SilentLosses(), 0u);
  EXPECT_NEAR(static_cast<double>(r.delivered), 0.95 * 2e8 / kBlock, 40);
}

// Every step but card_start, before it: refused, naming the step that comes first.
TEST(CardPort, StepsBeforeStartAreRefusedNamingCardStart) {
  std::vector<uint8_t> mem(1 << 20);
  auto clock = std::make_shared<VirtualClock>();
  BusCardPort port(std::make_unique<SpanBus>(mem.data(), kBase, mem.size()), clock, kBase, kBase + mem.size(), true);
  for (const Status& s : {port.Run(1), port.AddFault("stall 1ms at 0s"), port.Stop(true, 1), port.Release(0.1),
                          port.Reset(1)}) {
    EXPECT_EQ(s.code(), kFailedPrecondition) << s.ToString();
    EXPECT_NE(s.message().find("a card_start step comes first"), std::string::npos) << s.ToString();
  }
}

TEST(CardPort, ModelledPayloadRunsAnHourInAFewSeconds) {
  std::vector<uint8_t> mem(64 << 20);
  auto clock = std::make_shared<VirtualClock>();
  BusCardPort port(std::make_unique<SpanBus>(mem.data(), kBase, mem.size()), clock, kBase, kBase + mem.size(), true);
  CardSetup s;
  s.block_bytes = 1 << 20;
  s.ring_entries = 16;
  s.rate = 100000000;  // 100 MB/s: 343,000 blocks an hour
  s.model_payload = true;
  s.poll_seconds = 1e-3;
  s.faults = "stall 20ms at 600s; link_down at 1800s for 2s";
  ASSERT_TRUE(port.Start(s).ok());
  ASSERT_TRUE(port.Run(3600).ok());
  ASSERT_TRUE(port.Stop(true, 1.0).ok());
  const CardReport r = port.Report();
  EXPECT_GT(r.delivered, 340000u);
  EXPECT_GT(r.dropped, 0u);  // the outage's blocks, counted
  EXPECT_EQ(r.SilentLosses(), 0u);
  EXPECT_EQ(r.corrupt, 0u);
}

TEST(CardPort, ALayoutThatDoesNotFitSaysWhatWould) {
  auto l = LayOut(CardSetup{}, 0x40000000, 0x40000000 + (16 << 20));
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("give a smaller ring or block, or reserve more"), std::string::npos)
      << l.status().message();
}

TEST(CardPort, TheSteadyClockRunsTheCardAsAThread) {
  std::vector<uint8_t> mem(16 << 20);
  BusCardPort port(std::make_unique<SpanBus>(mem.data(), kBase, mem.size()), std::make_shared<SteadyClock>(), kBase,
                   kBase + mem.size(), true);
  CardSetup s;
  s.block_bytes = kBlock;
  s.ring_entries = 16;
  s.rate = 50000000;
  ASSERT_TRUE(port.Start(s).ok());
  ASSERT_TRUE(port.Run(0.1).ok());
  ASSERT_TRUE(port.Stop(true, 1.0).ok());
  const CardReport r = port.Report();
  EXPECT_GT(r.delivered, 10u);
  EXPECT_EQ(r.corrupt + r.torn, 0u);
}

// aes-stream-drivers PR #284: a second card on the bus still holds our targets (the host removed
// that memory from it without clearing its address registers) and writes its own blocks there.
// The driver counts them as another card's, never as its own; clearing the registers on remove
// leaves the second card nothing to write.
CardReport RunDuplicate(bool clear_on_remove, bool model_payload, std::shared_ptr<Clock> clock, double seconds) {
  std::vector<uint8_t> mem(16 << 20);
  BusCardPort port(std::make_unique<SpanBus>(mem.data(), kBase, mem.size()), clock, kBase, kBase + mem.size(), true);
  CardSetup s;
  s.block_bytes = kBlock;
  s.ring_entries = 16;
  s.rate = 50000000;
  s.poll_seconds = 2e-3;
  s.model_payload = model_payload;
  s.clear_on_remove = clear_on_remove;
  s.faults = "duplicate_target at 0.01s x3";
  EXPECT_TRUE(port.Start(s).ok());
  EXPECT_TRUE(port.Run(seconds).ok());
  EXPECT_TRUE(port.Stop(true, 1.0).ok());
  return port.Report();
}

TEST(CardPort, ASecondCardHoldingOurTargetsWritesBlocksTheDriverCountsAsForeign) {
  for (bool modelled : {false, true}) {
    const CardReport r = RunDuplicate(false, modelled, std::make_shared<VirtualClock>(), 0.5);
    EXPECT_GT(r.duplicate, 100u) << modelled;
    EXPECT_GT(r.foreign, 0u) << modelled;
    EXPECT_EQ(r.foreign, r.corrupt) << modelled;  // every wrong block was the other card's, none silent
    EXPECT_GT(r.delivered, 100u) << modelled;
    EXPECT_EQ(r.SilentLosses(), 0u);
  }
}

TEST(CardPort, ClearingTheTargetRegistersOnRemoveLeavesTheSecondCardNothingToWrite) {
  const CardReport r = RunDuplicate(true, false, std::make_shared<VirtualClock>(), 0.5);
  EXPECT_EQ(r.duplicate, 0u);
  EXPECT_EQ(r.foreign + r.corrupt, 0u);
  EXPECT_GT(r.delivered, 300u);
}

TEST(CardPort, TheSecondCardRunsOnTheSteadyClockToo) {
  const CardReport r = RunDuplicate(false, false, std::make_shared<SteadyClock>(), 0.3);
  EXPECT_GT(r.duplicate, 0u);
  // Real writes race the driver's reads: a block read while the other card overwrites it is a mix,
  // corrupt but not whole enough to be the other card's.
  EXPECT_GE(r.corrupt, r.foreign);
  EXPECT_GT(r.corrupt, 0u);
  const CardReport fixed = RunDuplicate(true, false, std::make_shared<SteadyClock>(), 0.1);
  EXPECT_EQ(fixed.duplicate + fixed.foreign, 0u);
}

TEST(CardFault, DuplicateTargetParsesAndARunningCardRefusesIt) {
  auto f = ParseCardFaults("duplicate_target at 0.1s for 1s x2");
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ((*f)[0].kind, FaultKind::kDuplicateTarget);
  EXPECT_DOUBLE_EQ((*f)[0].factor, 2);
  EXPECT_DOUBLE_EQ((*f)[0].duration, 1);
  EXPECT_LT((*ParseCardFaults("duplicate_target at 0s"))[0].duration, 0);
  EXPECT_FALSE(ParseCardFaults("duplicate_target block 3").ok());
  std::vector<uint8_t> mem(16 << 20);
  BusCardPort port(std::make_unique<SpanBus>(mem.data(), kBase, mem.size()), std::make_shared<VirtualClock>(), kBase,
                   kBase + mem.size(), true);
  CardSetup s;
  s.block_bytes = kBlock;
  s.ring_entries = 16;
  ASSERT_TRUE(port.Start(s).ok());
  auto st = port.AddFault("duplicate_target at 0s");
  EXPECT_NE(st.message().find("put it in card_start's faults"), std::string::npos) << st.message();
}

// RESET (card_reset): a card hung after a link drop (a stall with no end) is brought back; the
// blocks lost across the outage and the reset are counted (what the card lost = what the driver
// counted), and the sequence numbers starting over are neither drops nor corruption.
struct ResetRig {
  std::vector<uint8_t> mem = std::vector<uint8_t>(16 << 20);
  std::shared_ptr<Clock> clock;
  BusCardPort port;
  explicit ResetRig(std::shared_ptr<Clock> c = std::make_shared<VirtualClock>())
      : clock(c), port(std::make_unique<SpanBus>(mem.data(), kBase, mem.size()), c, kBase, kBase + mem.size(), true) {}
  Status Start(const std::string& faults, uint64_t rate = 100000000, double poll = 1e-4) {
    CardSetup s;
    s.block_bytes = kBlock;
    s.ring_entries = 16;
    s.rate = rate;
    s.faults = faults;
    s.watchdog_seconds = 0.05;
    s.poll_seconds = poll;
    return port.Start(s);
  }
};

TEST(CardPort, ResetBringsAHungCardBackAndCountsWhatWasLost) {
  ResetRig rig;
  ASSERT_TRUE(rig.Start("link_down at 0.1s for 0.05s; stall 100s at 0.15s").ok());
  ASSERT_TRUE(rig.port.Run(0.3).ok());
  const CardReport hung = rig.port.Report();
  EXPECT_TRUE(hung.link_down_seen);
  EXPECT_TRUE(hung.stalled_seen);
  EXPECT_NEAR(static_cast<double>(hung.delivered), 0.1 * 1e8 / kBlock, 3);
  auto st = rig.port.Reset(1.0);
  ASSERT_TRUE(st.ok()) << st.message();
  const CardReport reset = rig.port.Report();
  EXPECT_GT(reset.dropped, 70u);  // the outage's blocks: 0.05 s at 1,526 a second
  EXPECT_EQ(reset.dropped, reset.card_overruns);  // lost across the reset: counted, every one
  EXPECT_EQ(reset.SilentLosses(), 0u);
  ASSERT_TRUE(rig.port.Run(0.2).ok());
  ASSERT_TRUE(rig.port.Stop(true, 1.0).ok());
  const CardReport after = rig.port.Report();
  EXPECT_NEAR(static_cast<double>(after.delivered - reset.delivered), 0.2 * 1e8 / kBlock, 3);
  EXPECT_EQ(after.dropped, reset.dropped);  // sequence 0 again: not a gap
  EXPECT_EQ(after.corrupt + after.torn, 0u);
  EXPECT_EQ(after.SilentLosses(), 0u);
  bool said = false;
  for (const auto& e : after.events) said = said || e.find("reset: ") == 0;
  EXPECT_TRUE(said);
}

// Blocks the card made but the driver never read (a driver polling too slowly: they overran)
// count as lost across a reset too, as a card_stop's tail does.
TEST(CardPort, ResetCountsTheBlocksMadeButNeverRead) {
  ResetRig rig;
  ASSERT_TRUE(rig.Start("", 1000000000, /*poll=*/0.01).ok());
  ASSERT_TRUE(rig.port.Run(0.05).ok());
  ASSERT_TRUE(rig.port.Reset(1.0).ok());
  const CardReport r = rig.port.Report();
  EXPECT_GT(r.card_overruns, 0u);
  EXPECT_EQ(r.SilentLosses(), 0u);
  ASSERT_TRUE(rig.port.Run(0.01).ok());
  EXPECT_GT(rig.port.Report().delivered, r.delivered);
}

// A card that cannot be reset: link down (registers all ones, the RESET would be lost), or busy
// with a block that never completes within wait_seconds. The error names the card's status word.
TEST(CardPort, AResetThatCannotHappenSaysWhyWithTheStatusWord) {
  ResetRig down;
  ASSERT_TRUE(down.Start("link_down at 0.01s").ok());
  ASSERT_TRUE(down.port.Run(0.05).ok());
  auto st = down.port.Reset(0.1);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("status word reads 0xffffffffffffffff (the link is down)"), std::string::npos)
      << st.message();
  ResetRig busy;
  ASSERT_TRUE(busy.Start("timeout block 3 after 10s").ok());
  ASSERT_TRUE(busy.port.Run(0.01).ok());
  st = busy.port.Reset(0.1);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("did not go idle after QUIESCE"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("status word reads 0x"), std::string::npos) << st.message();
}

// On the steady clock the engine is a thread: the RESET goes through the register page and the
// thread acknowledges it, as the QEMU lane's device process does.
TEST(CardPort, ResetOnTheSteadyClock) {
  ResetRig rig(std::make_shared<SteadyClock>());
  ASSERT_TRUE(rig.Start("").ok());
  ASSERT_TRUE(rig.port.Run(0.05).ok());
  auto st = rig.port.Reset(1.0);
  ASSERT_TRUE(st.ok()) << st.message();
  const uint64_t before = rig.port.Report().delivered;
  ASSERT_TRUE(rig.port.Run(0.05).ok());
  ASSERT_TRUE(rig.port.Stop(true, 1.0).ok());
  const CardReport r = rig.port.Report();
  EXPECT_GT(r.delivered, before);
  EXPECT_EQ(r.corrupt + r.torn, 0u);
  EXPECT_EQ(r.SilentLosses(), 0u);
}

}  // namespace
}  // namespace resmem::card
