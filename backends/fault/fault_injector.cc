#include "backends/fault/fault_injector.h"

#include <algorithm>
#include <cstdio>

namespace resmem {

const char* FaultTriggerName(FaultTrigger t) {
  switch (t) {
    case FaultTrigger::kAlways: return "always";
    case FaultTrigger::kNth: return "nth";
    case FaultTrigger::kProbability: return "probability";
    case FaultTrigger::kAddressRange: return "range";
  }
  return "?";
}

const char* FaultEffectName(FaultEffect e) {
  switch (e) {
    case FaultEffect::kError: return "error";
    case FaultEffect::kDelay: return "delay";
    case FaultEffect::kCorrupt: return "corrupt";
    case FaultEffect::kShortCopy: return "short";
    case FaultEffect::kSignal: return "signal";
  }
  return "?";
}

FaultRule FaultRule::ErrorOnCall(std::string point, uint64_t nth, Status error) {
  FaultRule r;
  r.point = std::move(point);
  r.trigger = FaultTrigger::kNth;
  r.nth = nth;
  r.effect = FaultEffect::kError;
  r.error = std::move(error);
  return r;
}

std::string FaultRule::Describe() const {
  char buf[256];
  std::string out = point + " trigger=" + FaultTriggerName(trigger);
  switch (trigger) {
    case FaultTrigger::kNth: out += " nth=" + std::to_string(nth); break;
    case FaultTrigger::kProbability:
      std::snprintf(buf, sizeof buf, " probability=%.6g", probability);
      out += buf;
      break;
    case FaultTrigger::kAddressRange:
      std::snprintf(buf, sizeof buf, " range=[0x%llx,0x%llx)", (unsigned long long)range_start,
                    (unsigned long long)range_end);
      out += buf;
      break;
    case FaultTrigger::kAlways: break;
  }
  out += std::string(" effect=") + FaultEffectName(effect);
  switch (effect) {
    case FaultEffect::kError:
    case FaultEffect::kSignal: out += " (" + error.ToString() + ")"; break;
    case FaultEffect::kDelay:
      std::snprintf(buf, sizeof buf, " delay=%.6gs", delay_seconds);
      out += buf;
      break;
    case FaultEffect::kShortCopy:
      std::snprintf(buf, sizeof buf, " fraction=%.6g", short_fraction);
      out += buf;
      break;
    case FaultEffect::kCorrupt: break;
  }
  if (max_fires) out += " max_fires=" + std::to_string(max_fires);
  return out;
}

const std::vector<std::string>& FaultInjector::KnownPoints() {
  static const std::vector<std::string> kPoints = {
      "region.open",  "region.mmap",  "region.ioctl",  "region.read",    "region.write",
      "gpu.register", "gpu.unregister", "gpu.alloc",   "gpu.copy",       "gpu.checksum",
      "host.memcpy",  "stream.block",
  };
  return kPoints;
}

Status FaultInjector::AddRule(const FaultRule& rule) {
  const auto& known = KnownPoints();
  if (std::find(known.begin(), known.end(), rule.point) == known.end()) {
    std::string list;
    for (const auto& p : known) list += (list.empty() ? "" : ", ") + p;
    return Status::InvalidArgument("unknown fault point '" + rule.point + "'; known points: " + list);
  }
  if (rule.trigger == FaultTrigger::kNth && rule.nth == 0)
    return Status::InvalidArgument("fault on " + rule.point + ": nth counts from 1, got 0");
  if (rule.trigger == FaultTrigger::kProbability &&
      !(rule.probability >= 0 && rule.probability <= 1))
    return Status::InvalidArgument("fault on " + rule.point + ": probability must be in [0,1]");
  if (rule.trigger == FaultTrigger::kAddressRange && rule.range_end <= rule.range_start)
    return Status::InvalidArgument("fault on " + rule.point + ": empty address range");
  if ((rule.effect == FaultEffect::kError || rule.effect == FaultEffect::kSignal) && rule.error.ok())
    return Status::InvalidArgument("fault on " + rule.point + ": effect '" +
                                   FaultEffectName(rule.effect) + "' needs an error code");
  if (rule.effect == FaultEffect::kShortCopy && !(rule.short_fraction >= 0 && rule.short_fraction < 1))
    return Status::InvalidArgument("fault on " + rule.point + ": short fraction must be in [0,1)");
  std::lock_guard<std::mutex> lock(mu_);
  rules_.push_back(rule);
  fires_.push_back(0);
  return Status::Ok();
}

uint64_t FaultInjector::calls(const std::string& point) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& c : counters_)
    if (c.point == point) return c.calls;
  return 0;
}

FaultOutcome FaultInjector::Check(const std::string& point, uint64_t address, uint64_t length) {
  std::lock_guard<std::mutex> lock(mu_);
  PointCounter* counter = nullptr;
  for (auto& c : counters_)
    if (c.point == point) counter = &c;
  if (!counter) {
    counters_.push_back({point, 0});
    counter = &counters_.back();
  }
  const uint64_t call = ++counter->calls;
  FaultOutcome out;
  for (size_t i = 0; i < rules_.size(); ++i) {
    const FaultRule& r = rules_[i];
    if (r.point != point) continue;
    if (r.max_fires && fires_[i] >= r.max_fires) continue;
    bool fire = false;
    switch (r.trigger) {
      case FaultTrigger::kAlways: fire = true; break;
      case FaultTrigger::kNth: fire = (call == r.nth); break;
      case FaultTrigger::kProbability: fire = rng_.NextDouble() < r.probability; break;
      case FaultTrigger::kAddressRange: {
        const uint64_t end = length ? address + length : address + 1;
        fire = address < r.range_end && end > r.range_start;
        break;
      }
    }
    if (!fire) continue;
    ++fires_[i];
    out.fired = true;
    out.effect = r.effect;
    out.rule = r.Describe();
    switch (r.effect) {
      case FaultEffect::kError:
      case FaultEffect::kSignal:
        out.status = r.error.WithContext("injected fault at " + point + " (call " +
                                         std::to_string(call) + ")");
        break;
      case FaultEffect::kDelay: out.delay_seconds = r.delay_seconds; break;
      case FaultEffect::kCorrupt:
        out.corrupt_offset = length ? rng_.Below(length) : 0;
        out.corrupt_xor = static_cast<uint8_t>(1u << rng_.Below(8));
        break;
      case FaultEffect::kShortCopy:
        out.short_length = static_cast<uint64_t>(length * r.short_fraction);
        break;
    }
    fired_.push_back({call, point, address, length, out.rule});
    break;
  }
  return out;
}

}  // namespace resmem
