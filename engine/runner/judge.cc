#include "engine/runner/judge.h"

#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>
#include <utility>

#include "backends/api/gpu.h"
#include "backends/api/memory.h"
#include "backends/platform/proc_parsers.h"

namespace resmem::engine {

using scenario::Expectation;
using scenario::Expected;
using scenario::ExpectedError;

std::string Fmt(const char* printf_format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, printf_format, v);
  return buf;
}

std::string Observed(const Status& st, const std::string& profile) {
  if (st.ok()) return "ok";
  if (st.space() == ErrorSpace::kCuda) {
    const std::string name = CudaErrorName(profile, st.code());
    return "cuda " + std::to_string(st.code()) + (name.empty() ? "" : " " + name) + ": " + st.message();
  }
  return st.ToString();
}

namespace {

// Does status match the expected error ("cudaErrorUnknown", "EINVAL", "SIGKILL", a code, "any")?
// A CUDA name is looked up in the backend's profile: the numbering differs between eras.
bool ErrorMatches(const Expected<ExpectedError>& want, const Status& st, const std::string& profile,
                  std::string* why) {
  if (st.ok()) {
    *why = "expected error " + want.written + ", the step succeeded";
    return false;
  }
  const ExpectedError& w = want.value;
  switch (w.kind) {
    case ExpectedError::Kind::kAny:
      return true;
    case ExpectedError::Kind::kCode:
      if (st.code() == w.code) return true;
      *why = "expected code " + want.written + ", got " + std::to_string(st.code());
      return false;
    case ExpectedError::Kind::kCudaName: {
      const int code = CudaErrorFromName(profile, w.cuda_name);
      if (code < 0) {
        *why = "'" + w.cuda_name + "' is not an error of profile " + profile;
        return false;
      }
      if (st.space() == ErrorSpace::kCuda && st.code() == code) return true;
      *why = "expected " + w.cuda_name + " (" + std::to_string(code) + " in " + profile + ")";
      return false;
    }
    case ExpectedError::Kind::kSignal:
      if (st.space() == ErrorSpace::kSignal && st.code() == w.code) return true;
      *why = "expected signal " + want.written;
      return false;
    case ExpectedError::Kind::kErrno:
      if (st.space() == ErrorSpace::kErrno && st.code() == w.code) return true;
      *why = "expected " + want.written;
      return false;
  }
  return false;
}

bool Near(double got, double want, double tol) {
  if (want == 0) return std::fabs(got) <= tol;
  return std::fabs(got - want) <= tol * std::fabs(want);
}

// A kernel log's lines, blanks around each removed (2.6-era kernels printed " user: ...").
std::vector<std::string> LogLines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (!TrimBlanks(line).empty()) out.push_back(TrimBlanks(line));
  return out;
}

std::vector<std::string> Trimmed(const std::vector<std::string>& lines) {
  std::vector<std::string> out;
  for (const auto& s : lines) out.push_back(TrimBlanks(s));
  return out;
}

// The expected "user:" lines against the printed ones, line for line: "" when equal, else where
// they first differ, both lines, and the counts.
std::string MapDiff(const std::vector<std::string>& want, const std::vector<std::string>& got) {
  if (want == got) return "";
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  std::string out = "the user map differs from line " + std::to_string(i + 1) + " (expected " +
                    std::to_string(want.size()) + " user: lines, the kernel printed " +
                    std::to_string(got.size()) + ")";
  out += "\n        expected: " + (i < want.size() ? want[i] : std::string("(no more lines)"));
  out += "\n        printed:  " + (i < got.size() ? got[i] : std::string("(no more lines)"));
  return out;
}

// Each wanted line must appear in `lines`, in the given order: "" when they do, else the first
// that does not.
std::string MissingInOrder(const std::vector<std::string>& want, const std::vector<std::string>& lines) {
  size_t at = 0;
  for (size_t k = 0; k < want.size(); ++k) {
    while (at < lines.size() && lines[at] != want[k]) ++at;
    if (at == lines.size())
      return "dmesg line " + std::to_string(k + 1) + " of the expectation was not printed" +
             (k ? " after line " + std::to_string(k) : "") + ": '" + want[k] + "'";
    ++at;
  }
  return "";
}

// The failures found so far, and what the checks below read: the step's observations.
struct Judging {
  const Expectation& e;
  const Status& st;
  const StepResult& r;
  std::vector<std::string> fails;
  double tolerance() const { return e.tolerance ? e.tolerance->value : 0.15; }
};

// The outcome: the expected error, success, or a failure of any kind (ok = false); and the words
// the message must contain.
void JudgeOutcome(Judging& j, const std::string& profile) {
  const Expectation& e = j.e;
  std::string why;
  if (e.error) {
    if (!ErrorMatches(*e.error, j.st, profile, &why)) j.fails.push_back(why);
  } else if (!e.ok || e.ok->value) {
    if (!j.st.ok()) j.fails.push_back("expected success");
  } else if (j.st.ok()) {
    j.fails.push_back("expected a failure (ok = false), the step succeeded");
  }
  if (e.message_contains) {
    std::string hay = j.st.message();
    for (const auto& [k, v] : j.r.texts) hay += "\n" + v;
    if (hay.find(e.message_contains->value) == std::string::npos)
      j.fails.push_back("expected the message to contain \"" + e.message_contains->value + "\"");
  }
}

// A measured number within a relative tolerance of the expected one.
void JudgeNear(Judging& j, const char* key, double want, double t) {
  auto it = j.r.numbers.find(key);
  if (it == j.r.numbers.end()) {
    j.fails.push_back(std::string("no ") + key + " was measured");
    return;
  }
  if (!Near(it->second, want, t))
    j.fails.push_back(std::string(key) + " " + Fmt("%.4g", it->second) + " is not within " +
                      Fmt("%.0f%%", t * 100) + " of " + Fmt("%.4g", want));
}

// Bounds: a path that must be at least or at most so fast.
void JudgeRateBound(Judging& j, const std::optional<Expected<double>>& want, bool at_least) {
  if (!want) return;
  auto it = j.r.numbers.find("mbps");
  if (it == j.r.numbers.end()) {
    j.fails.push_back("no mbps was measured");
    return;
  }
  if (at_least ? it->second < want->value : it->second > want->value)
    j.fails.push_back("mbps " + Fmt("%.4g", it->second) + " is " + (at_least ? "below " : "above ") +
                      want->written);
}

// Counts that may be bounds (">0"): a stream's and a card's blocks.
void JudgeCountBounds(Judging& j) {
  const Expectation& e = j.e;
  const std::pair<const char*, const std::optional<Expected<scenario::CountBound>>*> bounds[] = {
      {"drops", &e.drops}, {"corrupt", &e.corrupt}, {"delivered", &e.delivered}, {"torn", &e.torn},
      {"timeouts", &e.timeouts}, {"stray_writes", &e.stray_writes}, {"after_release", &e.after_release},
      {"silent_losses", &e.silent_losses}, {"foreign", &e.foreign}, {"duplicate", &e.duplicate}};
  for (const auto& [key, v] : bounds) {
    if (!*v) continue;
    auto it = j.r.numbers.find(key);
    if (it == j.r.numbers.end()) {
      j.fails.push_back(std::string("no ") + key + " was measured");
    } else if (!(*v)->value.Holds(it->second)) {
      j.fails.push_back(std::string(key) + " is " + Fmt("%.0f", it->second) + ", expected " + (*v)->value.Describe());
    }
  }
}

// Rates, ratios and stream counts.
void JudgeRates(Judging& j) {
  const Expectation& e = j.e;
  if (e.mbps) JudgeNear(j, "mbps", e.mbps->value, j.tolerance());
  if (e.ratio_to_serial) JudgeNear(j, "ratio_to_serial", e.ratio_to_serial->value, j.tolerance());
  JudgeRateBound(j, e.mbps_min, true);
  JudgeRateBound(j, e.mbps_max, false);
  JudgeCountBounds(j);
}

// Sizes observed: RAM within the tolerance, the device's size and address exactly; counts exactly.
void JudgeSizesAndCounts(Judging& j) {
  const Expectation& e = j.e;
  struct SizeCheck {
    const char* key;
    const std::optional<Expected<uint64_t>>* want;
    double tolerance;
  };
  const SizeCheck sizes[] = {{"usable_ram", &e.usable_ram, j.tolerance()}, {"mem_total", &e.mem_total, j.tolerance()},
                             {"size", &e.size, 0}, {"phys", &e.phys, 0},
                             {"migrated", &e.migrated, 0}, {"evicted", &e.evicted, 0}, {"remote", &e.remote, 0}};
  for (const auto& [key, v, t] : sizes) {
    if (!*v) continue;
    auto it = j.r.numbers.find(key);
    if (it == j.r.numbers.end()) {
      j.fails.push_back(std::string("no ") + key + " was observed");
      continue;
    }
    const double want = static_cast<double>((*v)->value);
    if (!Near(it->second, want, t))
      j.fails.push_back(std::string(key) + " " + FormatSize(static_cast<uint64_t>(it->second)) +
                        " is not " + (t > 0 ? "within " + Fmt("%.0f%%", t * 100) + " of " : "") + (*v)->written);
  }
  const std::pair<const char*, const std::optional<Expected<int64_t>>*> counts[] = {
      {"reservations", &e.reservations}, {"abi_version", &e.abi_version}, {"pins", &e.pins},
      {"hits", &e.hits}, {"evictions", &e.evictions}, {"faults", &e.faults}};
  for (const auto& [key, v] : counts) {
    if (!*v) continue;
    auto it = j.r.numbers.find(key);
    if (it == j.r.numbers.end() || it->second != static_cast<double>((*v)->value))
      j.fails.push_back(std::string(key) + " is " + (it == j.r.numbers.end() ? "not observed" : Fmt("%.0f", it->second)) +
                        ", expected " + (*v)->written);
  }
}

// Each expected text in an event of its own, in the given order.
void JudgeEvents(Judging& j) {
  if (!j.e.events) return;
  auto ev = j.r.texts.find("events");
  const std::vector<std::string> lines = LogLines(ev == j.r.texts.end() ? "" : ev->second);
  size_t at = 0;
  for (size_t k = 0; k < j.e.events->value.size(); ++k) {
    const std::string& want = j.e.events->value[k];
    while (at < lines.size() && lines[at].find(want) == std::string::npos) ++at;
    if (at == lines.size()) {
      j.fails.push_back("event " + std::to_string(k + 1) + " of the expectation did not happen" +
                        (k ? " after event " + std::to_string(k) : "") + ": '" + want + "'");
      return;
    }
    ++at;
  }
}

// Texts observed, compared whole; and the time bound.
void JudgeTexts(Judging& j) {
  const Expectation& e = j.e;
  auto same_text = [&](const char* key, const std::string& want, const std::string& written) {
    auto it = j.r.texts.find(key);
    const std::string got = it == j.r.texts.end() ? "(none)" : it->second;
    if (got != want) j.fails.push_back(std::string(key) + " is '" + got + "', expected '" + written + "'");
  };
  const std::pair<const char*, const std::optional<Expected<std::string>>*> texts[] = {
      {"path", &e.path}, {"vm_flags", &e.vm_flags}, {"memory_type", &e.memory_type},
      {"backing", &e.backing}, {"data", &e.data}, {"mode", &e.mode}, {"cache", &e.cache},
      {"cmdline", &e.cmdline}};
  for (const auto& [key, v] : texts)
    if (*v) same_text(key, (*v)->value, (*v)->written);
  for (const auto& [key, v] : {std::pair<const char*, const std::optional<Expected<bool>>*>{
                                    "reservation_over_hole", &e.reservation_over_hole},
                                {"link_down", &e.link_down}, {"stalled", &e.stalled}})
    if (*v) same_text(key, (*v)->value ? "true" : "false", (*v)->written);
  if (e.seconds_max) {
    auto it = j.r.numbers.find("seconds");
    if (it == j.r.numbers.end() || it->second > e.seconds_max->value)
      j.fails.push_back("took longer than " + e.seconds_max->written + " s");
  }
}

// The kernel's log: the "user:" map line for line, the dmesg lines in order.
void JudgeKernelLog(Judging& j) {
  const Expectation& e = j.e;
  if (!e.user_map && !e.dmesg) return;
  auto log = j.r.texts.find("kernel_log");
  const std::vector<std::string> lines = LogLines(log == j.r.texts.end() ? "" : log->second);
  if (e.user_map) {
    std::vector<std::string> got;
    for (const auto& l : lines)
      if (l.rfind("user:", 0) == 0) got.push_back(l);
    if (std::string diff = MapDiff(Trimmed(e.user_map->value), got); !diff.empty()) j.fails.push_back(diff);
  }
  if (e.dmesg) {
    if (std::string miss = MissingInOrder(Trimmed(e.dmesg->value), lines); !miss.empty()) j.fails.push_back(miss);
  }
}

// The doctor's findings: each wanted one reported, the exact list, none of the unwanted ones.
void JudgeFindings(Judging& j) {
  const Expectation& e = j.e;
  auto findings = j.r.texts.find("findings");
  const std::string reported = findings == j.r.texts.end() ? "" : findings->second;
  const std::string list = findings == j.r.texts.end() ? "" : "," + findings->second + ",";
  if (e.finding) {
    for (const auto& w : e.finding->value)
      if (list.find("," + w + ",") == std::string::npos)
        j.fails.push_back("the doctor did not report '" + w + "' (reported: " + reported + ")");
  }
  if (e.findings) {
    // The exact list, in the doctor's order: a replay shows the same findings, no more.
    std::string want;
    for (const auto& id : Trimmed(e.findings->value)) want += (want.empty() ? "" : ",") + id;
    if (reported != want)
      j.fails.push_back("the doctor reported [" + reported + "], expected exactly [" + want + "]");
  }
  if (e.no_finding) {
    for (const auto& w : e.no_finding->value)
      if (list.find("," + w + ",") != std::string::npos)
        j.fails.push_back("the doctor reported '" + w + "', which this machine should not have");
  }
}

}  // namespace

std::vector<std::string> Judge(const Expectation& e, const Status& st, const StepResult& r,
                               const std::string& profile) {
  Judging j{e, st, r, {}};
  JudgeOutcome(j, profile);
  JudgeRates(j);
  JudgeSizesAndCounts(j);
  JudgeEvents(j);
  JudgeTexts(j);
  JudgeKernelLog(j);
  JudgeFindings(j);
  return std::move(j.fails);
}

}  // namespace resmem::engine
