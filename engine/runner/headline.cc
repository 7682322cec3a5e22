#include "engine/runner/headline.h"

#include <variant>
#include <vector>

#include "backends/api/memory.h"
#include "engine/runner/judge.h"

namespace resmem::engine {
namespace {

// A number the step observed, 0 where it observed none (as the headline always read it).
double Number(const StepResult& r, const char* key) {
  auto it = r.numbers.find(key);
  return it == r.numbers.end() ? 0 : it->second;
}

std::string Text(const StepResult& r, const char* key) {
  auto it = r.texts.find(key);
  return it == r.texts.end() ? "" : it->second;
}

std::string Size(const StepResult& r, const char* key) {
  return FormatSize(static_cast<uint64_t>(Number(r, key)));
}

// The parts from the step's measurements: rate, managed-memory faults, overlap, sizes, data.
void MeasuredParts(const scenario::Expectation& e, const scenario::StepArgs& args, const StepResult& r,
                   std::vector<std::string>& parts) {
  if ((e.mbps || e.mbps_min || e.mbps_max) && r.numbers.count("mbps"))
    parts.push_back(Fmt("%.1f MB/s", Number(r, "mbps")));
  if ((e.faults || e.migrated || e.evicted) && r.numbers.count("faults"))
    parts.push_back(Fmt("%.0f faults", Number(r, "faults")) + ", " + Size(r, "migrated") + " migrated" +
                    (Number(r, "evicted") > 0 ? ", " + Size(r, "evicted") + " evicted" : ""));
  if (e.ratio_to_serial) parts.push_back(Text(r, "path") + Fmt(", %.2f of serial", Number(r, "ratio_to_serial")));
  if (e.size && std::holds_alternative<scenario::DmaBufExportStep>(args))
    parts.push_back("dma-buf of " + Size(r, "size"));
  if (e.data) parts.push_back("data " + Text(r, "data"));
  if (e.usable_ram) parts.push_back("usable RAM " + Size(r, "usable_ram"));
  if (e.memory_type) parts.push_back(Text(r, "memory_type"));
  if (e.drops) parts.push_back(Fmt("%.0f drops", Number(r, "drops")) + Fmt(", %.0f corrupt", Number(r, "corrupt")));
}

// A card's: blocks read, what went missing unseen, stray writes, the link as the driver saw it.
void CardParts(const scenario::Expectation& e, const StepResult& r, std::vector<std::string>& parts) {
  if (e.corrupt && !e.drops) parts.push_back(Fmt("%.0f corrupt", Number(r, "corrupt")));
  if (e.delivered) parts.push_back(Fmt("%.0f blocks delivered", Number(r, "delivered")));
  if (e.silent_losses) parts.push_back(Fmt("%.0f lost unseen", Number(r, "silent_losses")));
  if (e.stray_writes) parts.push_back(Fmt("%.0f stray words", Number(r, "stray_writes")));
  if (e.after_release) parts.push_back(Fmt("%.0f blocks after release", Number(r, "after_release")));
  if (e.foreign) parts.push_back(Fmt("%.0f another card's", Number(r, "foreign")));
  if (e.duplicate) parts.push_back(Fmt("%.0f written by the second card", Number(r, "duplicate")));
  if (e.torn) parts.push_back(Fmt("%.0f torn", Number(r, "torn")));
  if (e.timeouts) parts.push_back(Fmt("%.0f timeouts", Number(r, "timeouts")));
  if (e.link_down) parts.push_back(Text(r, "link_down") == "true" ? "link down seen" : "link down not seen");
  if (e.stalled) parts.push_back(Text(r, "stalled") == "true" ? "stall seen" : "no stall seen");
}

// The parts from what the step found: doctor findings, pin-cache counts, the DMA path, events,
// reservations.
void FoundParts(const scenario::Expectation& e, const scenario::StepArgs& args, const StepResult& r,
                std::vector<std::string>& parts) {
  if (e.finding) parts.push_back("found " + e.finding->written);
  if (e.pins || e.hits || e.evictions)
    parts.push_back(Fmt("%.0f pins", Number(r, "pins")) + Fmt(", %.0f hits", Number(r, "hits")) +
                    Fmt(", %.0f evictions", Number(r, "evictions")));
  if (e.path && std::holds_alternative<scenario::P2pDmaStep>(args)) parts.push_back(Text(r, "path"));
  if (e.events && !e.events->value.empty() && parts.empty()) parts.push_back("'" + e.events->value.back() + "'");
  if (e.reservations && !e.usable_ram) parts.push_back(Fmt("%.0f reservations", Number(r, "reservations")));
  CardParts(e, r, parts);
}

// A registration: in how many calls, and its time. Measured where the clock is real; on the
// simulator the model's (mock/gpu RegisterSeconds, calibrated on the H100: docs/benchmarks.md
// "Registration time"), so a 188 GB scenario says how long start-up takes. It qualifies the part
// before.
void RegistrationParts(const scenario::StepArgs& args, const Status& st, const StepResult& r,
                       bool virtual_clock, std::vector<std::string>& parts) {
  if (!std::holds_alternative<scenario::RegisterStep>(args) || !st.ok()) return;
  if (Number(r, "calls") > 1) parts.push_back(Fmt("registered in %.0f calls", Number(r, "calls")));
  if (!r.numbers.count("seconds")) return;
  if (parts.empty()) parts.push_back("ok");
  parts.back() += Fmt(virtual_clock ? " in %.3g s (modelled)" : " in %.3g s", Number(r, "seconds"));
}

}  // namespace

std::string HeadlinePart(const scenario::Expectation& expect, const scenario::StepArgs& step_args,
                         const Status& st, const StepResult& r, bool virtual_clock) {
  std::vector<std::string> parts;
  // An expected error shows as its name ("cuda 1 cudaErrorInvalidValue").
  if (!st.ok()) parts.push_back(r.observed.substr(0, r.observed.find(':')));
  MeasuredParts(expect, step_args, r, parts);
  FoundParts(expect, step_args, r, parts);
  RegistrationParts(step_args, st, r, virtual_clock, parts);
  std::string shown;
  for (const auto& part : parts) shown += (shown.empty() ? "" : ", ") + part;
  return shown;
}

}  // namespace resmem::engine
