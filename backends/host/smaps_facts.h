// Reads the kernel's facts about one mapping of this process from /proc/self/smaps.
// Private to backends/host: the shared reader (backends/kmod/smaps.h ReadMappingFacts) was not in
// the tree when this was written; this one reads only what the host stand-ins need.
// Field meanings: Documentation/filesystems/proc.rst ("VmFlags": rd wr sh io pf mm lo ht).
#ifndef RESMEM_BACKENDS_HOST_SMAPS_FACTS_H_
#define RESMEM_BACKENDS_HOST_SMAPS_FACTS_H_

#include <cstdint>
#include <string>

#include "backends/api/memory.h"

namespace resmem::host {

// Facts of the VMA that contains `address`, parsed from `smaps_text` (the text of
// /proc/<pid>/smaps). NotFound when no VMA contains it. origin is "smaps".
Result<MappingFacts> ParseSmapsFacts(const std::string& smaps_text, uint64_t address);

// The same, reading /proc/self/smaps.
Result<MappingFacts> ReadSmapsFacts(uint64_t address);

// Start and length of the VMA named `name` ("[vvar]"), or NotFound.
struct VmaSpan {
  uint64_t start = 0;
  uint64_t length = 0;
};
Result<VmaSpan> FindNamedVma(const std::string& name);

}  // namespace resmem::host

#endif  // RESMEM_BACKENDS_HOST_SMAPS_FACTS_H_
