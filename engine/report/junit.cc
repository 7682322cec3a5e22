// JUnit XML of a run (junit.h).
#include "engine/report/junit.h"

#include <cstdio>
#include <map>
#include <sstream>

#include "engine/report/report.h"

namespace resmem::engine {
namespace {

// The length of the valid UTF-8 sequence starting at s[i], or 0 when the bytes there are not one.
size_t Utf8Length(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  const size_t n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  return n;
}

// `text` for an attribute (tab, newline, carriage return as references, which attribute-value
// normalisation would otherwise turn into blanks) or for element content (tab and newline as
// they are). The rest as XmlEscape says.
std::string Escape(std::string_view text, bool attribute);
std::string XmlText(std::string_view text) { return Escape(text, false); }

std::string HexByte(unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02X", c);
  return buf;
}

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f", s < 0 ? 0.0 : s);
  return buf;
}

// The case's name as the table shows it: "NAME [CASE]" for a sweep's case.
std::string CaseName(const ScenarioResult& r) {
  return r.case_label.empty() ? r.name : r.name + " [" + r.case_label + "]";
}

bool Skipped(const ScenarioResult& r) {
  return r.verdict == ScenarioVerdict::kNotApplicable || r.verdict == ScenarioVerdict::kUnavailable;
}

// A failed case's text: each failing step with what it expected and observed, the steps that
// did not run after it, the kernel log, the seed and the replay command.
std::string FailureText(const ScenarioResult& r) {
  std::ostringstream out;
  out << r.file << ": " << ScenarioVerdictName(r.verdict) << " on " << r.backend << "\n";
  for (const auto& st : r.steps) {
    if (st.verdict != StepVerdict::kFail && st.verdict != StepVerdict::kNotRun) continue;
    out << "step " << st.index << " (" << st.op << ", line " << st.line << ") "
        << StepVerdictName(st.verdict);
    if (st.verdict == StepVerdict::kFail)
      out << ": expected " << st.expected << ": " << st.note << "; observed " << st.observed;
    else
      out << ": " << st.note;
    out << "\n";
  }
  for (const auto& f : r.faults) out << "fault fired: " << f.rule << " (call " << f.call << ")\n";
  for (const auto& line : r.dmesg) out << "dmesg: " << line << "\n";
  out << "seed " << r.seed << "; replay: " << ReplayCommand(r) << "\n";
  return out.str();
}

// One <testcase>, indented under its suite.
void RenderCase(const ScenarioResult& r, std::ostream& out) {
  out << "    <testcase name=\"" << XmlEscape(CaseName(r)) << "\" classname=\""
      << XmlEscape(JunitClassName(r.file)) << "\" time=\"" << Seconds(r.seconds) << "\">\n";
  const char* verdict = ScenarioVerdictName(r.verdict);
  if (Skipped(r)) {
    out << "      <skipped message=\"" << XmlEscape(std::string(verdict) + ": " + r.reason)
        << "\"/>\n";
  } else if (r.verdict == ScenarioVerdict::kFailed || r.verdict == ScenarioVerdict::kError) {
    const char* tag = r.verdict == ScenarioVerdict::kFailed ? "failure" : "error";
    out << "      <" << tag << " message=\"" << XmlEscape(r.reason) << "\" type=\"" << verdict
        << "\">" << XmlText(FailureText(r)) << "</" << tag << ">\n";
  }
  out << "      <system-out>" << XmlText(std::string(verdict) + " (" + r.kind + ", seed " +
                                           std::to_string(r.seed) + ", " + r.file + ")" +
                                           (r.headline.empty() ? "" : ": " + r.headline))
      << "</system-out>\n";
  out << "    </testcase>\n";
}

// What a <testsuite> or <testsuites> element counts.
struct Counts {
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  double seconds = 0;
  void Add(const ScenarioResult& r) {
    ++tests;
    failures += r.verdict == ScenarioVerdict::kFailed;
    errors += r.verdict == ScenarioVerdict::kError;
    skipped += Skipped(r);
    seconds += r.seconds;
  }
  std::string Attributes() const {
    return "tests=\"" + std::to_string(tests) + "\" failures=\"" + std::to_string(failures) +
           "\" errors=\"" + std::to_string(errors) + "\" skipped=\"" + std::to_string(skipped) +
           "\" time=\"" + Seconds(seconds) + "\"";
  }
};

}  // namespace

std::string XmlEscape(std::string_view text) { return Escape(text, true); }

namespace {

std::string Escape(std::string_view text, bool attribute) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    switch (c) {
      case '&': out += "&amp;"; continue;
      case '<': out += "&lt;"; continue;
      case '>': out += "&gt;"; continue;
      case '"': out += "&quot;"; continue;
      case '\'': out += "&apos;"; continue;
      case '\t': out += attribute ? "&#9;" : "\t"; continue;
      case '\n': out += attribute ? "&#10;" : "\n"; continue;
      case '\r': out += "&#13;"; continue;
      default: break;
    }
    if (c < 0x20 || c == 0x7F) {
      out += HexByte(c);
    } else if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (const size_t n = Utf8Length(text, i); n > 0) {
      out.append(text.substr(i, n));
      i += n - 1;
    } else {
      out += HexByte(c);  // not UTF-8: the byte as text, so the document stays well-formed
    }
  }
  return out;
}

}  // namespace

std::string JunitClassName(const std::string& file) {
  std::string dir = file.substr(0, file.find_last_of('/') == std::string::npos
                                       ? 0
                                       : file.find_last_of('/'));
  while (dir.rfind("./", 0) == 0) dir.erase(0, 2);
  while (!dir.empty() && dir.front() == '/') dir.erase(0, 1);
  if (dir.empty() || dir == ".") return ".";
  for (char& c : dir)
    if (c == '/') c = '.';
  return dir;
}

std::string RenderJunit(const std::vector<ScenarioResult>& results) {
  std::vector<std::string> order;  // folders, in order of first appearance
  std::map<std::string, std::vector<const ScenarioResult*>> by_folder;
  Counts all;
  for (const auto& r : results) {
    const std::string cls = JunitClassName(r.file);
    if (by_folder.find(cls) == by_folder.end()) order.push_back(cls);
    by_folder[cls].push_back(&r);
    all.Add(r);
  }
  const std::string backend = results.empty() ? "" : results.front().backend;
  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << "<testsuites name=\"resmem run --backend " << XmlEscape(backend) << "\" "
      << all.Attributes() << ">\n";
  for (const auto& cls : order) {
    Counts c;
    for (const ScenarioResult* r : by_folder[cls]) c.Add(*r);
    out << "  <testsuite name=\"" << XmlEscape(cls) << "\" " << c.Attributes() << ">\n";
    out << "    <properties>\n      <property name=\"backend\" value=\"" << XmlEscape(backend)
        << "\"/>\n    </properties>\n";
    for (const ScenarioResult* r : by_folder[cls]) RenderCase(*r, out);
    out << "  </testsuite>\n";
  }
  out << "</testsuites>\n";
  return out.str();
}

}  // namespace resmem::engine
