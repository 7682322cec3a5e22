#include "backends/card/card_port.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <mutex>

#include "backends/api/memory.h"

namespace resmem::card {
namespace {

uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

std::mutex engine_mu;  // the engine's state between the thread that runs it and AddFault/Report

}  // namespace

Result<CardLayout> LayOut(const CardSetup& s, uint64_t lo, uint64_t hi, bool second_card) {
  CardLayout l;
  l.window = s.window ? s.window : lo;
  if (l.window % 4096)
    return Status::InvalidArgument("card window " + HexAddress(l.window) + " is not 4 KiB aligned");
  l.ring = l.window + RESMEM_CARD_REGS_BYTES;
  const uint64_t first = AlignUp(l.ring + s.ring_entries * RESMEM_CARD_DESC_BYTES, 4096);
  const uint64_t slot = AlignUp(s.block_bytes, 8);
  const uint64_t blocks_end = first + s.ring_entries * slot;
  if (second_card) l.second_window = AlignUp(blocks_end, 4096);
  const uint64_t end =
      second_card ? AlignUp(l.second_window + RESMEM_CARD_REGS_BYTES + s.ring_entries * RESMEM_CARD_DESC_BYTES, 4096)
                  : blocks_end;
  if (l.window < lo || end > hi || end < first)
    return Status::InvalidArgument(
        "the card needs [" + HexAddress(l.window) + ", " + HexAddress(end) + "): its registers, a ring of " +
        std::to_string(s.ring_entries) + " and as many blocks of " + FormatSize(s.block_bytes) +
        (second_card ? ", and a second card's registers and ring" : "") +
        ", but the reserved range is [" + HexAddress(lo) + ", " + HexAddress(hi) +
        "); give a smaller ring or block, or reserve more");
  for (uint64_t i = 0; i < s.ring_entries; ++i) l.targets.push_back(first + i * slot);
  return l;
}

BusCardPort::BusCardPort(std::unique_ptr<CardBus> bus, std::shared_ptr<Clock> clock,
                         std::vector<std::pair<uint64_t, uint64_t>> ranges, bool with_engine)
    : bus_(std::move(bus)), clock_(std::move(clock)), ranges_(std::move(ranges)), with_engine_(with_engine) {}

BusCardPort::~BusCardPort() { StopEngineThread(); }

Status CardNotStarted() {
  return Status::Error(kFailedPrecondition, "the card is not started: a card_start step comes first");
}

Status BusCardPort::Started() const {
  if (!driver_) return CardNotStarted();
  return Status::Ok();
}

namespace {

// The duplicate_target fault in a script, or null.
const CardFault* DuplicateTarget(const std::vector<CardFault>& faults) {
  for (const auto& f : faults)
    if (f.kind == FaultKind::kDuplicateTarget) return &f;
  return nullptr;
}

}  // namespace

Status BusCardPort::Start(const CardSetup& setup) {
  StopEngineThread();
  second_.reset();
  setup_ = setup;
  if (ranges_.empty())
    return Status::Error(kFailedPrecondition, "the machine reserves no memory (no memmap=nn$ss on its command "
                                              "line): the card writes into a reserved range");
  std::pair<uint64_t, uint64_t> range = ranges_[0];
  for (const auto& r : ranges_)
    if (setup.window >= r.first && setup.window < r.second) range = r;
  RESMEM_ASSIGN_OR_RETURN(std::vector<CardFault> faults, ParseCardFaults(setup.faults));
  const CardFault* duplicate = DuplicateTarget(faults);
  RESMEM_ASSIGN_OR_RETURN(CardLayout l, LayOut(setup, range.first, range.second, duplicate != nullptr));
  DriverOptions o;
  o.ring_entries = setup.ring_entries;
  o.block_bytes = setup.block_bytes;
  o.rate = setup.rate;
  o.seed = setup.seed;
  o.check_done = setup.check_done;
  o.watchdog = setup.watchdog;
  o.watchdog_seconds = setup.watchdog_seconds;
  o.modelled_payload = setup.model_payload;
  driver_ = std::make_unique<CardDriver>(*bus_, l.window, l.targets, o);
  started_at_ = clock_->NowSeconds();
  if (with_engine_) {
    CardConfig c;
    c.window_bus = l.window;
    c.seed = setup.seed;
    c.write_payload = !setup.model_payload;
    c.faults = faults;
    engine_ = std::make_unique<CardDmaEngine>(*bus_, c);
    RESMEM_RETURN_IF_ERROR(engine_->PowerOn(started_at_));
    if (duplicate) RESMEM_RETURN_IF_ERROR(StartSecondCard(*duplicate, l));
  } else if (!setup.faults.empty()) {
    return Status::Unsupported("this backend's card is a device elsewhere: give its faults to the device "
                               "(the QEMU lane's card process), not to card_start");
  }
  RESMEM_RETURN_IF_ERROR(driver_->Start(started_at_));
  if (with_engine_ && !clock_->is_virtual()) StartEngineThread();
  return Status::Ok();
}

// A duplicate_target fault's second card: another seed, sequence numbers from 2^40 (it has been
// running before), its ring left as the host left it when it removed that memory - every
// descriptor still pointing at one of our targets, or, with clear_on_remove, cleared (target and
// length 0: it writes nothing) - and its firmware enabled. It starts writing f.at after ENABLE (a
// stall until then) at f.factor times our rate, and stops f.duration later (its link goes down).
Status BusCardPort::StartSecondCard(const CardFault& f, const CardLayout& l) {
  CardConfig c;
  c.window_bus = l.second_window;
  c.seed = setup_.seed * 0x9e3779b97f4a7c15ull + 0x5ec0d;
  c.write_payload = !setup_.model_payload;
  c.stale_descriptors = true;
  c.first_sequence = 1ull << 40;
  CardFault quiet;
  quiet.kind = FaultKind::kStall;
  quiet.duration = f.at;
  quiet.text = "the second card's data starts";
  c.faults.push_back(quiet);
  if (f.duration >= 0) {
    CardFault gone;
    gone.kind = FaultKind::kLinkDown;
    gone.at = f.at + f.duration;
    gone.duration = -1;
    gone.text = "the second card stops";
    c.faults.push_back(gone);
  }
  second_ = std::make_unique<CardDmaEngine>(*bus_, c);
  RESMEM_RETURN_IF_ERROR(second_->PowerOn(started_at_));
  const uint64_t regs = l.second_window, ring = regs + RESMEM_CARD_REGS_BYTES;
  for (uint64_t i = 0; i < setup_.ring_entries; ++i) {
    resmem_card_desc d{};
    d.target = setup_.clear_on_remove ? 0 : l.targets[i];
    d.length = setup_.clear_on_remove ? 0 : static_cast<uint32_t>(setup_.block_bytes);
    RESMEM_RETURN_IF_ERROR(bus_->Write(ring + i * RESMEM_CARD_DESC_BYTES, &d, sizeof d));
  }
  const uint64_t rate = static_cast<uint64_t>(static_cast<double>(setup_.rate) * f.factor);
  for (auto [field, v] : {std::pair<uint64_t, uint64_t>{offsetof(resmem_card_regs, ring_bus), ring},
                          {offsetof(resmem_card_regs, ring_entries), setup_.ring_entries},
                          {offsetof(resmem_card_regs, block_bytes), setup_.block_bytes},
                          {offsetof(resmem_card_regs, rate), rate},
                          {offsetof(resmem_card_regs, head), setup_.ring_entries},
                          {offsetof(resmem_card_regs, control), RESMEM_CARD_CTRL_ENABLE}})
    RESMEM_RETURN_IF_ERROR(bus_->Store64(regs + field, v));
  return Status::Ok();
}

// The engine on the steady clock: advance, sleep until its next work or a poll interval.
void BusCardPort::StartEngineThread() {
  engine_stop_ = false;
  engine_thread_ = std::thread([this] {
    while (!engine_stop_.load()) {
      double due;
      {
        std::lock_guard<std::mutex> l(engine_mu);
        auto r = engine_->Advance(clock_->NowSeconds());
        auto other = second_ ? second_->Advance(clock_->NowSeconds()) : Result<double>(CardDmaEngine::kIdle);
        if (!r.ok() || !other.ok()) {
          engine_status_ = r.ok() ? other.status() : r.status();
          return;
        }
        due = std::min(*r, *other);
      }
      const double wait = std::min(due - clock_->NowSeconds(), setup_.poll_seconds);
      if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    }
  });
}

void BusCardPort::StopEngineThread() {
  engine_stop_ = true;
  if (engine_thread_.joinable()) engine_thread_.join();
}

Status BusCardPort::Run(double seconds) {
  RESMEM_RETURN_IF_ERROR(Started());
  const double from = clock_->NowSeconds(), until = from + seconds;
  if (clock_->is_virtual()) {
    RESMEM_RETURN_IF_ERROR(RunTogether(*engine_, *driver_, from, until, setup_.poll_seconds, second_.get()).status());
    clock_->Charge(seconds);
    return Status::Ok();
  }
  while (clock_->NowSeconds() < until) {
    RESMEM_RETURN_IF_ERROR(driver_->Poll(clock_->NowSeconds()).status());
    RESMEM_RETURN_IF_ERROR(engine_status_);
    std::this_thread::sleep_for(std::chrono::duration<double>(setup_.poll_seconds));
  }
  return driver_->Poll(clock_->NowSeconds()).status();
}

Status BusCardPort::AddFault(const std::string& line) {
  RESMEM_RETURN_IF_ERROR(Started());
  if (!engine_)
    return Status::Unsupported("this backend's card is a device elsewhere: give the fault to the device "
                               "(the QEMU lane's card process)");
  RESMEM_ASSIGN_OR_RETURN(std::vector<CardFault> faults, ParseCardFaults(line));
  if (DuplicateTarget(faults))
    return Status::InvalidArgument("card fault '" + line + "': the second card of a duplicate_target is set up when "
                                   "the card starts: put it in card_start's faults");
  std::lock_guard<std::mutex> l(engine_mu);
  for (auto& f : faults) engine_->AddFault(f, clock_->NowSeconds());
  return Status::Ok();
}

// The card alone (the driver gone) until `until`: on a virtual clock, advanced there.
Status BusCardPort::RunCardAlone(double until) {
  if (clock_->is_virtual()) {
    if (engine_) RESMEM_RETURN_IF_ERROR(engine_->Advance(until).status());
    if (second_) RESMEM_RETURN_IF_ERROR(second_->Advance(until).status());
    clock_->Charge(until - clock_->NowSeconds());
    return Status::Ok();
  }
  const double wait = until - clock_->NowSeconds();
  if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
  return Status::Ok();
}

// One poll interval: on a virtual clock the card and the driver advanced together, else the
// driver polls and the real clock moves on.
Status BusCardPort::StepOnce() {
  if (clock_->is_virtual() && engine_) {
    RESMEM_RETURN_IF_ERROR(RunTogether(*engine_, *driver_, clock_->NowSeconds(),
                                       clock_->NowSeconds() + setup_.poll_seconds, setup_.poll_seconds, second_.get())
                               .status());
    clock_->Charge(setup_.poll_seconds);
    return Status::Ok();
  }
  RESMEM_RETURN_IF_ERROR(driver_->Poll(clock_->NowSeconds()).status());
  std::this_thread::sleep_for(std::chrono::duration<double>(setup_.poll_seconds));
  return Status::Ok();
}

Status BusCardPort::Stop(bool wait, double wait_seconds) {
  RESMEM_RETURN_IF_ERROR(Started());
  RESMEM_RETURN_IF_ERROR(driver_->RequestStop());
  if (!wait) return Status::Ok();
  const double deadline = clock_->NowSeconds() + wait_seconds;
  for (;;) {
    RESMEM_RETURN_IF_ERROR(StepOnce());
    RESMEM_ASSIGN_OR_RETURN(bool idle, driver_->Idle());
    if (idle) break;
    if (clock_->NowSeconds() >= deadline)
      return Status::Errno(ETIMEDOUT, "the card did not go idle within " + std::to_string(wait_seconds) +
                                          " s of QUIESCE (its status stays ACTIVE or reads all ones)");
  }
  RESMEM_RETURN_IF_ERROR(driver_->Poll(clock_->NowSeconds()).status());
  return driver_->AccountTail();
}

// Steps until `done` says so or `deadline` passes; then an ETIMEDOUT naming `what` and the card's
// status word as read at that moment.
Status BusCardPort::WaitFor(double deadline, const std::function<Result<bool>()>& done, const std::string& what) {
  for (;;) {
    RESMEM_RETURN_IF_ERROR(StepOnce());
    RESMEM_ASSIGN_OR_RETURN(bool ok, done());
    if (ok) return Status::Ok();
    if (clock_->NowSeconds() >= deadline) {
      auto status = driver_->ReadStatus();
      const std::string word = status.ok() ? HexAddress(*status) : status.status().message();
      return Status::Errno(ETIMEDOUT, "card reset: the card did not " + what + " in time; its status word reads " + word +
                                          (status.ok() && *status == RESMEM_CARD_LINK_DOWN ? " (the link is down)" : ""));
    }
  }
}

// QUIESCE and wait until the card is idle and has run twice since (its sequence is final), read
// what completed and count what never will, RESET and wait for the card to clear the bit, then the
// driver programs the ring again and enables the card. All within wait_seconds.
Status BusCardPort::Reset(double wait_seconds) {
  RESMEM_RETURN_IF_ERROR(Started());
  const double deadline = clock_->NowSeconds() + wait_seconds;
  RESMEM_RETURN_IF_ERROR(driver_->RequestStop());
  RESMEM_ASSIGN_OR_RETURN(uint64_t beat, driver_->Heartbeat());
  RESMEM_RETURN_IF_ERROR(WaitFor(deadline, [&]() -> Result<bool> {
    RESMEM_ASSIGN_OR_RETURN(bool idle, driver_->Idle());
    RESMEM_ASSIGN_OR_RETURN(uint64_t now_beat, driver_->Heartbeat());
    return idle && beat != RESMEM_CARD_LINK_DOWN && now_beat >= beat + 2;
  }, "go idle after QUIESCE (the reset's first part)"));
  RESMEM_RETURN_IF_ERROR(driver_->Poll(clock_->NowSeconds()).status());
  RESMEM_RETURN_IF_ERROR(driver_->AccountReset(clock_->NowSeconds()));
  RESMEM_RETURN_IF_ERROR(WaitFor(deadline, [&] { return driver_->ResetDone(); }, "clear the RESET bit"));
  return driver_->Restart(clock_->NowSeconds());
}

Status BusCardPort::Release(double then_seconds) {
  RESMEM_RETURN_IF_ERROR(Started());
  const double now = clock_->NowSeconds();
  RESMEM_RETURN_IF_ERROR(driver_->Release(now));
  if (engine_) {
    std::lock_guard<std::mutex> l(engine_mu);
    engine_->HostReleased(now);
  }
  RESMEM_RETURN_IF_ERROR(RunCardAlone(now + then_seconds));
  return driver_->CheckCanaries();
}

CardReport BusCardPort::Report() const {
  CardReport r;
  if (engine_) {
    std::lock_guard<std::mutex> l(engine_mu);
    const CardCounters& c = engine_->counters();
    r.card_blocks = c.blocks;
    r.card_overruns = c.overruns;
    r.card_torn = c.torn;
    r.card_timeouts = c.timeouts;
    r.after_release = c.after_release;
    r.out_of_order = c.out_of_order;
    r.register_writes_lost = c.register_writes_lost;
    r.link_down_seconds = c.link_down_seconds;
    if (second_) r.duplicate = second_->counters().duplicate;
  }
  if (driver_) {
    const DriverCounters& d = driver_->counters();
    r.delivered = d.delivered;
    r.dropped = d.dropped;
    r.corrupt = d.corrupt;
    r.foreign = d.foreign;
    r.torn = d.torn;
    r.timeouts = d.timeouts;
    r.not_done = d.not_done;
    r.stray_words = d.stray_words;
    r.link_down_seen = d.link_down_seen;
    r.stalled_seen = d.stalled_seen;
    r.bytes = d.bytes;
    r.events = d.events;
  }
  r.seconds = clock_->NowSeconds() - started_at_;
  return r;
}

}  // namespace resmem::card
