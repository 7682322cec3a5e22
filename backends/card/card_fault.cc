#include "backends/card/card_fault.h"

#include <cstdlib>
#include <sstream>

namespace resmem::card {
namespace {

// "5ms" -> 0.005; false when it is no time.
bool ParseSeconds(const std::string& w, double* out) {
  char* end = nullptr;
  const double v = std::strtod(w.c_str(), &end);
  if (end == w.c_str() || !(v >= 0)) return false;
  const std::string unit(end);
  if (unit == "s") *out = v;
  else if (unit == "ms") *out = v * 1e-3;
  else if (unit == "us") *out = v * 1e-6;
  else return false;
  return true;
}

bool ParseCount(const std::string& w, uint64_t* out) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(w.c_str(), &end, 0);
  if (end == w.c_str() || *end || w[0] == '-') return false;
  *out = v;
  return true;
}

// The words after the kind: "at T", "for D", "after D", "block N", "xF".
struct Words {
  std::vector<std::string> w;
  size_t i = 1;
  bool Done() const { return i >= w.size(); }
};

Status Bad(const std::string& line, const std::string& what) {
  return Status::InvalidArgument("card fault '" + line + "': " + what +
                                 "; forms: 'stall 5ms at 1s', 'link_down at 2s [for 30s]', "
                                 "'timeout block 100 after 1s', 'torn block 7', "
                                 "'out_of_order at 1s for 100ms', 'burst x4 at 1s for 10ms', "
                                 "'ignore_quiesce', 'duplicate_target at 0.1s [for 1s] [x2]'");
}

Result<CardFault> ParseOne(const std::string& line) {
  std::istringstream in(line);
  Words ws;
  for (std::string w; in >> w;) ws.w.push_back(w);
  CardFault f;
  f.text = line;
  const std::string& kind = ws.w[0];
  bool has_at = false, has_for = false, has_block = false, has_after = false, has_x = false;
  if (kind == "stall") {
    if (ws.w.size() < 2 || !ParseSeconds(ws.w[1], &f.duration)) return Bad(line, "stall needs a time first");
    ws.i = 2;
    has_for = true;
  }
  while (!ws.Done()) {
    const std::string& key = ws.w[ws.i];
    const std::string val = ws.i + 1 < ws.w.size() ? ws.w[ws.i + 1] : "";
    if (key == "at" && ParseSeconds(val, &f.at)) has_at = true;
    else if (key == "for" && ParseSeconds(val, &f.duration)) has_for = true;
    else if (key == "after" && ParseSeconds(val, &f.duration)) has_after = true;
    else if (key == "block" && ParseCount(val, &f.block)) has_block = true;
    else if (key.size() > 1 && key[0] == 'x' && (f.factor = std::strtod(key.c_str() + 1, nullptr)) > 0) {
      has_x = true;
      ws.i += 1;
      continue;
    } else {
      return Bad(line, "'" + key + (val.empty() ? "" : " " + val) + "' is not understood here");
    }
    ws.i += 2;
  }
  auto as = [&](FaultKind k) {
    f.kind = k;
    return f;
  };
  if (kind == "stall" && has_at) return as(FaultKind::kStall);
  if (kind == "link_down" && has_at) {
    if (!has_for) f.duration = -1;  // never comes back
    return as(FaultKind::kLinkDown);
  }
  if (kind == "timeout" && has_block && has_after) return as(FaultKind::kTimeout);
  if (kind == "torn" && has_block) return as(FaultKind::kTorn);
  if (kind == "out_of_order" && has_at && has_for) return as(FaultKind::kOutOfOrder);
  if (kind == "burst" && has_x && has_at && has_for) return as(FaultKind::kBurst);
  if (kind == "ignore_quiesce" && ws.w.size() == 1) return as(FaultKind::kIgnoreQuiesce);
  if (kind == "duplicate_target" && has_at && !has_block && !has_after) {
    if (!has_for) f.duration = -1;  // writes until the run ends
    return as(FaultKind::kDuplicateTarget);
  }
  return Bad(line, "'" + kind + "' is not a fault, or a word it needs is missing");
}

}  // namespace

const char* FaultKindName(FaultKind k) {
  switch (k) {
    case FaultKind::kStall: return "stall";
    case FaultKind::kLinkDown: return "link_down";
    case FaultKind::kTimeout: return "timeout";
    case FaultKind::kTorn: return "torn";
    case FaultKind::kOutOfOrder: return "out_of_order";
    case FaultKind::kBurst: return "burst";
    case FaultKind::kIgnoreQuiesce: return "ignore_quiesce";
    case FaultKind::kDuplicateTarget: return "duplicate_target";
  }
  return "?";
}

Result<std::vector<CardFault>> ParseCardFaults(const std::string& script) {
  std::vector<CardFault> out;
  std::string line;
  std::istringstream in(script);
  while (std::getline(in, line, '\n')) {
    std::istringstream parts(line);
    for (std::string one; std::getline(parts, one, ';');) {
      const size_t a = one.find_first_not_of(" \t\r"), b = one.find_last_not_of(" \t\r");
      if (a == std::string::npos || one[a] == '#') continue;
      RESMEM_ASSIGN_OR_RETURN(CardFault f, ParseOne(one.substr(a, b - a + 1)));
      out.push_back(f);
    }
  }
  return out;
}

}  // namespace resmem::card
