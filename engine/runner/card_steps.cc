#include "engine/runner/card_steps.h"

namespace resmem::engine {
namespace {

Status NeedCard(const Backend& b) {
  if (!b.card)
    return Status::Unavailable("this backend has no card part: run the card steps on --backend sim, kmod "
                               "(the QEMU lane's device process) or cuda (docs/digitizer.md)");
  return Status::Ok();
}

// The report as the step's observations: counts, rate, the driver's events.
void Observe(const CardReport& c, double run_seconds, StepResult* r) {
  r->numbers["delivered"] = static_cast<double>(c.delivered);
  r->numbers["drops"] = static_cast<double>(c.dropped);
  r->numbers["corrupt"] = static_cast<double>(c.corrupt);
  r->numbers["foreign"] = static_cast<double>(c.foreign);
  r->numbers["duplicate"] = static_cast<double>(c.duplicate);
  r->numbers["torn"] = static_cast<double>(c.torn);
  r->numbers["timeouts"] = static_cast<double>(c.timeouts);
  r->numbers["stray_writes"] = static_cast<double>(c.stray_words);
  r->numbers["after_release"] = static_cast<double>(c.after_release);
  r->numbers["silent_losses"] = static_cast<double>(c.SilentLosses());
  r->numbers["overruns"] = static_cast<double>(c.card_overruns);
  // Out-of-order completions from both sides: those the card wrote after a later one, and the
  // slots the driver read whose DONE flag was not set yet. Beside `corrupt` they tell a driver
  // that never met a held completion from a card that held none.
  r->numbers["out_of_order"] = static_cast<double>(c.out_of_order);
  r->numbers["not_done"] = static_cast<double>(c.not_done);
  if (run_seconds > 0) r->numbers["mbps"] = c.bytes / run_seconds / 1e6;
  // How long the card's link was down by its own count (outages that have ended): beside link_down
  // (what the driver saw), it tells a driver that missed an outage from a card that had none.
  if (c.link_down_seconds > 0) r->numbers["link_down_seconds"] = c.link_down_seconds;
  r->texts["link_down"] = c.link_down_seen ? "true" : "false";
  r->texts["stalled"] = c.stalled_seen ? "true" : "false";
  std::string events;
  for (const auto& e : c.events) events += e + "\n";
  r->texts["events"] = events;
}

}  // namespace

Status DoCardStep(Backend& b, const scenario::CardStartStep& step, uint64_t seed, StepResult*) {
  RESMEM_RETURN_IF_ERROR(NeedCard(b));
  CardSetup s = step;
  s.seed = seed;
  return b.card->Start(s);
}

Status DoCardStep(Backend& b, const scenario::CardRunStep& step, StepResult* r) {
  RESMEM_RETURN_IF_ERROR(NeedCard(b));
  const double bytes_before = b.card->Report().bytes;
  RESMEM_RETURN_IF_ERROR(b.card->Run(step.seconds));
  CardReport c = b.card->Report();
  Observe(c, 0, r);
  r->numbers["mbps"] = (c.bytes - bytes_before) / step.seconds / 1e6;
  return Status::Ok();
}

Status DoCardStep(Backend& b, const scenario::CardFaultStep& step, StepResult*) {
  RESMEM_RETURN_IF_ERROR(NeedCard(b));
  return b.card->AddFault(step.fault);
}

Status DoCardStep(Backend& b, const scenario::CardStopStep& step, StepResult* r) {
  RESMEM_RETURN_IF_ERROR(NeedCard(b));
  RESMEM_RETURN_IF_ERROR(b.card->Stop(step.wait, step.wait_seconds));
  Observe(b.card->Report(), 0, r);
  return Status::Ok();
}

// The report after the restart: `drops` holds the blocks lost across the reset.
Status DoCardStep(Backend& b, const scenario::CardResetStep& step, StepResult* r) {
  RESMEM_RETURN_IF_ERROR(NeedCard(b));
  RESMEM_RETURN_IF_ERROR(b.card->Reset(step.wait_seconds));
  Observe(b.card->Report(), 0, r);
  return Status::Ok();
}

Status DoCardStep(Backend& b, const scenario::CardReleaseStep& step, StepResult* r) {
  RESMEM_RETURN_IF_ERROR(NeedCard(b));
  RESMEM_RETURN_IF_ERROR(b.card->Release(step.then_seconds));
  Observe(b.card->Report(), 0, r);
  return Status::Ok();
}

}  // namespace resmem::engine
