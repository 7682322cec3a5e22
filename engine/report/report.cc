#include "engine/report/report.h"

#include <cstdio>

#include "nlohmann/json.hpp"

namespace resmem::engine {
namespace {

std::string Pad(std::string s, size_t width) {
  if (s.size() > width) s = s.substr(0, width - 1) + "~";
  s.resize(width, ' ');
  return s;
}

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

std::string ReplayCommand(const ScenarioResult& r) {
  return "resmem run " + r.file + " --backend " + r.backend + " --seed " + std::to_string(r.seed);
}

RunSummary Summarise(const std::vector<ScenarioResult>& results) {
  RunSummary s;
  for (const auto& r : results) {
    switch (r.verdict) {
      case ScenarioVerdict::kReproduced: ++s.reproduced; break;
      case ScenarioVerdict::kFixed: ++s.fixed; break;
      case ScenarioVerdict::kPassed: ++s.passed; break;
      case ScenarioVerdict::kFailed: ++s.failed; break;
      case ScenarioVerdict::kNotApplicable: ++s.not_applicable; break;
      case ScenarioVerdict::kUnavailable: ++s.unavailable; break;
      case ScenarioVerdict::kError: ++s.errors; break;
    }
  }
  return s;
}

void RenderTable(const std::vector<ScenarioResult>& results, bool verbose, std::ostream& out) {
  if (results.empty()) return;
  out << "backend: " << results.front().backend << "\n\n";
  out << Pad("SCENARIO", 40) << Pad("CASE", 18) << Pad("KIND", 6) << Pad("SEED", 6)
      << Pad("VERDICT", 13) << "DETAIL\n";
  for (const auto& r : results) {
    std::string detail = r.failed() || r.verdict == ScenarioVerdict::kNotApplicable ||
                                 r.verdict == ScenarioVerdict::kUnavailable
                             ? r.reason
                             : r.headline;
    out << Pad(r.name, 40) << Pad(r.case_label.empty() ? "-" : r.case_label, 18) << Pad(r.kind, 6)
        << Pad(std::to_string(r.seed), 6) << Pad(ScenarioVerdictName(r.verdict), 13) << detail
        << "\n";
  }
  for (const auto& r : results) {
    const bool show = verbose || r.failed();
    if (!show) continue;
    out << "\n== " << r.name << (r.case_label.empty() ? "" : " [" + r.case_label + "]") << " ("
        << r.file << ") " << ScenarioVerdictName(r.verdict) << "\n";
    if (!r.title.empty()) out << "   " << r.title << "\n";
    for (const auto& st : r.steps) {
      out << "   " << st.index << ". " << Pad(st.op, 15) << Pad(StepVerdictName(st.verdict), 8);
      if (st.verdict == StepVerdict::kSkipped) {
        out << "not applicable on " << r.backend << ": " << st.note << "\n";
        continue;
      }
      out << st.observed;
      for (const auto& [k, v] : st.numbers) out << "  " << k << "=" << Num(v);
      for (const auto& [k, v] : st.texts)
        if (k != "facts" && k != "kernel_log") out << "  " << k << "=" << v;
      if (st.verdict == StepVerdict::kFail) out << "\n      expected " << st.expected << ": " << st.note;
      out << "\n";
    }
    for (const auto& f : r.faults) out << "   fault fired: " << f.rule << " (call " << f.call << ")\n";
    if (verbose || r.failed())
      for (const auto& line : r.dmesg) out << "   dmesg: " << line << "\n";
    if (r.failed())
      out << "   seed " << r.seed << "; replay: " << ReplayCommand(r) << "\n";
  }
  const RunSummary s = Summarise(results);
  out << "\n"
      << s.total() << " scenario cases: " << s.reproduced << " bugs reproduced, " << s.fixed
      << " fixes working, " << s.passed << " checks passed, " << s.failed << " failed, "
      << s.errors << " errors, " << s.not_applicable << " not applicable, " << s.unavailable
      << " unavailable\n";
}

std::string RenderJson(const std::vector<ScenarioResult>& results) {
  nlohmann::ordered_json root;
  root["tool"] = "resmem";
  root["backend"] = results.empty() ? "" : results.front().backend;
  auto& arr = root["scenarios"] = nlohmann::ordered_json::array();
  for (const auto& r : results) {
    nlohmann::ordered_json j;
    j["name"] = r.name;
    j["case"] = r.case_label;
    j["file"] = r.file;
    j["kind"] = r.kind;
    j["seed_file"] = r.seed_file;
    j["twin"] = r.twin;
    j["backend"] = r.backend;
    j["seed"] = r.seed;
    j["verdict"] = ScenarioVerdictName(r.verdict);
    j["reason"] = r.reason;
    j["headline"] = r.headline;
    auto& steps = j["steps"] = nlohmann::ordered_json::array();
    for (const auto& st : r.steps) {
      nlohmann::ordered_json s;
      s["index"] = st.index;
      s["op"] = st.op;
      s["line"] = st.line;
      s["verdict"] = StepVerdictName(st.verdict);
      s["observed"] = st.observed;
      s["expected"] = st.expected;
      if (!st.note.empty()) s["note"] = st.note;
      for (const auto& [k, v] : st.numbers) s["numbers"][k] = v;
      for (const auto& [k, v] : st.texts) s["texts"][k] = v;
      steps.push_back(s);
    }
    auto& faults = j["faults_fired"] = nlohmann::ordered_json::array();
    for (const auto& f : r.faults)
      faults.push_back({{"point", f.point}, {"call", f.call}, {"address", f.address},
                        {"length", f.length}, {"rule", f.rule}});
    j["dmesg"] = r.dmesg;
    arr.push_back(j);
  }
  const RunSummary s = Summarise(results);
  root["summary"] = {{"total", s.total()},          {"reproduced", s.reproduced},
                     {"fixed", s.fixed},            {"passed", s.passed},
                     {"failed", s.failed},          {"errors", s.errors},
                     {"not_applicable", s.not_applicable}, {"unavailable", s.unavailable}};
  return root.dump(2) + "\n";
}

}  // namespace resmem::engine
