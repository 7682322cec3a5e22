// What the kernel says about one mapping of this process, read from /proc/self/smaps. Shared by
// every backend that maps real memory (kmod, host, fuse): the facts the CUDA model judges by are
// the kernel's own (VmFlags "pf io" for a remap_pfn_range mapping, "mm" for a mixed map), never
// assumed from how the mapping was made.
#ifndef RESMEM_BACKENDS_KMOD_SMAPS_H_
#define RESMEM_BACKENDS_KMOD_SMAPS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "backends/api/memory.h"
#include "backends/api/status.h"

namespace resmem {

// One VMA's smaps entry (fs/proc/task_mmu.c show_smap: header line, sizes, VmFlags).
struct SmapsVma {
  uint64_t start = 0;
  uint64_t end = 0;
  std::string perms;                  // "rw-s"
  uint64_t file_offset = 0;           // the header's offset field
  std::string path;                   // "/dev/resmem0", "/memfd:x (deleted)", "[heap]", "" (anon)
  std::vector<std::string> vm_flags;  // two-letter mnemonics: "rd" "wr" "sh" "pf" "io" "mm" ...
  uint64_t kernel_page_size = 4096;   // KernelPageSize (4 KiB, or the hugetlb size)
  uint64_t mmu_page_size = 4096;      // MMUPageSize
  uint64_t rss = 0;                   // Rss in bytes
  bool HasFlag(const std::string& mnemonic) const;
};

// Finds the VMA containing `addr` in the text of a /proc/<pid>/smaps file. NotFound names the
// address when none contains it; InvalidArgument names the line when the text is malformed.
Result<SmapsVma> FindSmapsVma(const std::string& smaps_text, uint64_t addr);

// The same, reading `smaps_path` (default /proc/self/smaps).
Result<SmapsVma> ReadSmapsVma(uint64_t addr, const std::string& smaps_path = "/proc/self/smaps");

// MappingFacts from an smaps entry: length, rd/wr/sh, io/pf/mm/lo, KernelPageSize, and a backing
// guessed from flags and name: pf -> device-pfn; mm or /dev/resmem without pf -> device-pages;
// ht -> hugetlb; /memfd:, /dev/shm/, SYSV -> shmem; no name/[heap]/[stack] -> anonymous; another path
// -> file. origin is "smaps <path>". Memory type stays WB (smaps does not show PAT types).
MappingFacts FactsFromSmaps(const SmapsVma& vma);

// ReadSmapsVma + FactsFromSmaps for this process.
Result<MappingFacts> ReadMappingFacts(uint64_t addr);

}  // namespace resmem

#endif  // RESMEM_BACKENDS_KMOD_SMAPS_H_
