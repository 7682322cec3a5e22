#include "mock/parity/transcript.h"

#include <map>
#include <set>
#include <sstream>

namespace resmem::parity {

Result<Transcript> ParseTranscript(const std::string& text, const std::string& body,
                                   const std::string& source) {
  Transcript t;
  t.body = body;
  std::set<std::string> seen;
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    const size_t colon = line.find(": ");
    if (colon == std::string::npos || colon == 0)
      return Status::InvalidArgument(source + ":" + std::to_string(n) + ": '" + line +
                                     "' is not a transcript line; expected 'name: result' as "
                                     "the parity probe prints it");
    TranscriptLine l{line.substr(0, colon), line.substr(colon + 2)};
    if (!seen.insert(l.name).second)
      return Status::InvalidArgument(source + ":" + std::to_string(n) + ": case '" + l.name +
                                     "' appears twice; a transcript has each case once");
    t.lines.push_back(std::move(l));
  }
  if (t.lines.empty())
    return Status::InvalidArgument(source + ": no transcript lines; run the parity probe "
                                            "(mock/parity) on the device to make one");
  return t;
}

// THE place where a body's unremovable difference from the kernel module is normalised
// (docs/parity.md lists the same rows). Everything else must be equal on all three bodies.
//
// The FUSE device is a regular file in a FUSE mount (CUSE does not exist on our kernels and has no
// mmap: FACTS.md "FUSE"). For a regular file the kernel answers some calls itself, without asking
// the daemon, so the daemon cannot give the module's answer:
const std::vector<KnownDifference>& KnownDifferences() {
  static const std::vector<KnownDifference> table = {
      {"fuse", "fstat", "type=reg size=size", "type=chr size=0",
       "the FUSE node is S_ISREG, never S_ISCHR (FACTS.md), and must carry the range's size: a "
       "page fault past i_size is SIGBUS (mm/filemap.c filemap_fault); the module's node is a "
       "char device of size 0 whose size is RESMEM_IOC_LENGTH"},
      {"fuse", "mmap_at_end", "mapped first=SIGBUS last=SIGBUS", "EINVAL",
       "mmap of a regular file past its end succeeds without asking the filesystem (mm/mmap.c "
       "do_mmap, fs/fuse/file.c fuse_file_mmap); only the touch fails (filemap_fault past i_size: "
       "SIGBUS). The module refuses such a mapping (kmod/resmem.c resmem_mmap)"},
      {"fuse", "mmap_crossing_end", "mapped first=ok last=SIGBUS", "EINVAL",
       "as mmap_at_end: the part past the end of the file is SIGBUS when touched"},
      {"fuse", "mmap_far_past_end", "mapped first=SIGBUS last=SIGBUS", "EINVAL",
       "as mmap_at_end"},
      {"fuse", "mmap_private_rw", "mapped first=ok last=ok", "EINVAL",
       "fs/fuse/file.c fuse_file_mmap maps MAP_PRIVATE of a cached file with generic_file_mmap "
       "and never asks the daemon; the module refuses MAP_PRIVATE (copy-on-write of physical "
       "memory)"},
      {"fuse", "mmap_private_ro", "mapped first=ok last=ok", "EINVAL", "as mmap_private_rw"},
  };
  return table;
}

Transcript Normalise(const Transcript& t, std::vector<std::string>* notes) {
  Transcript out = t;
  for (TranscriptLine& l : out.lines) {
    for (const KnownDifference& k : KnownDifferences()) {
      if (t.body != k.body || l.name != k.name || l.result != k.from) continue;
      if (notes)
        notes->push_back(t.body + " " + l.name + ": '" + l.result + "' read as '" + k.to +
                         "': " + k.reason);
      l.result = k.to;
    }
  }
  return out;
}

std::vector<std::string> DiffTranscripts(const std::vector<Transcript>& transcripts) {
  std::vector<std::string> diff;
  if (transcripts.empty()) return diff;
  // Every case name, in the reference's order, then names only others have.
  std::vector<std::string> names;
  std::set<std::string> have;
  for (const Transcript& t : transcripts)
    for (const TranscriptLine& l : t.lines)
      if (have.insert(l.name).second) names.push_back(l.name);
  std::vector<std::map<std::string, std::string>> results;
  for (const Transcript& t : transcripts) {
    std::map<std::string, std::string> m;
    for (const TranscriptLine& l : t.lines) m[l.name] = l.result;
    results.push_back(std::move(m));
  }
  for (const std::string& name : names) {
    bool same = true;
    const auto first = results[0].find(name);
    for (const auto& r : results) {
      const auto it = r.find(name);
      if ((it == r.end()) != (first == results[0].end()) ||
          (it != r.end() && it->second != first->second))
        same = false;
    }
    if (same) continue;
    std::string line = name + ":";
    for (size_t i = 0; i < transcripts.size(); ++i) {
      const auto it = results[i].find(name);
      line += " " + transcripts[i].body + "=" +
              (it == results[i].end() ? std::string("<missing>") : "'" + it->second + "'");
    }
    diff.push_back(line);
  }
  // The same cases in a different order is a difference too: the probe's order is fixed.
  for (size_t i = 1; i < transcripts.size() && diff.empty(); ++i) {
    for (size_t k = 0; k < transcripts[i].lines.size() && k < transcripts[0].lines.size(); ++k)
      if (transcripts[i].lines[k].name != transcripts[0].lines[k].name) {
        diff.push_back("order: " + transcripts[i].body + " has '" + transcripts[i].lines[k].name +
                       "' where " + transcripts[0].body + " has '" +
                       transcripts[0].lines[k].name + "' (line " + std::to_string(k + 1) + ")");
        break;
      }
  }
  return diff;
}

}  // namespace resmem::parity
