// Transcripts of the parity probe (probe.h): parsing, the one place where differences that no
// body can remove are normalised, and the diff the parity test prints.
#ifndef RESMEM_MOCK_PARITY_TRANSCRIPT_H_
#define RESMEM_MOCK_PARITY_TRANSCRIPT_H_

#include <string>
#include <utility>
#include <vector>

#include "backends/api/status.h"

namespace resmem::parity {

struct TranscriptLine {
  std::string name;    // "read_crossing_end"
  std::string result;  // "100 pos=size"
};

struct Transcript {
  std::string body;  // "kmod", "fuse", "sim"
  std::vector<TranscriptLine> lines;
};

// Parses "name: result" lines. Blank lines and lines starting with '#' are skipped; any other line
// without ": ", or a name twice, is InvalidArgument naming `source` and the line number.
Result<Transcript> ParseTranscript(const std::string& text, const std::string& body,
                                   const std::string& source);

// A difference one body cannot remove, with the kernel's reason. The result `from` of case `name`
// on `body` is replaced by `to`, the module's answer. Only an exact match is replaced, so a change
// on either side still shows in the diff.
struct KnownDifference {
  const char* body;
  const char* name;
  const char* from;
  const char* to;
  const char* reason;
};
// The table (transcript.cc): the one place such differences are normalised.
const std::vector<KnownDifference>& KnownDifferences();

// Applies the table to `t` (matching t.body). Each replacement adds one note:
// "fuse fstat: 'type=reg size=size' read as 'type=chr size=0': <reason>".
Transcript Normalise(const Transcript& t, std::vector<std::string>* notes);

// Compares transcripts line by line against the first (the reference). Empty when every
// transcript has the same names in the same order with the same results; else one line per
// difference: "name: kmod='...' fuse='...' sim='...'" (a missing line reads <missing>).
std::vector<std::string> DiffTranscripts(const std::vector<Transcript>& transcripts);

}  // namespace resmem::parity

#endif  // RESMEM_MOCK_PARITY_TRANSCRIPT_H_
