// JUnit XML of a run, the shape GitLab and Jenkins read (ci/junit.xsd checks it): one <testsuite>
// per scenario folder, one <testcase> per scenario case. Verdicts map as a CI reads them:
// REPRODUCED, FIXED and PASSED pass (the verdict and headline in <system-out>); N/A and
// UNAVAILABLE are <skipped message="reason">; FAILED is a <failure> naming the failing step, what
// it observed and the command that replays it; ERROR (bad input) is an <error>.
#ifndef RESMEM_ENGINE_REPORT_JUNIT_H_
#define RESMEM_ENGINE_REPORT_JUNIT_H_

#include <string>
#include <string_view>
#include <vector>

#include "engine/report/results.h"

namespace resmem::engine {

// The XML document for `results`, in their order, grouped by folder in order of first
// appearance. Times are the cases' `seconds` (wall clock), so two runs differ only in them.
std::string RenderJunit(const std::vector<ScenarioResult>& results);

// A case's classname: the folder of its scenario file, '/' as '.', without a leading "./" or
// "/" ("scenarios/card/backpressure.toml" -> "scenarios.card"; a file with no folder -> ".").
std::string JunitClassName(const std::string& file);

// `text` made safe inside an XML element or a double-quoted attribute: & < > " ' as entities,
// tab, newline and carriage return as character references (kept through attribute
// normalisation), every other control character, which XML 1.0 cannot carry, as the text
// "\xNN". Bytes of 0x80 and up pass through (the reports are UTF-8).
std::string XmlEscape(std::string_view text);

}  // namespace resmem::engine

#endif  // RESMEM_ENGINE_REPORT_JUNIT_H_
