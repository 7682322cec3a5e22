// The e820 table the way arch/x86/kernel/e820.c keeps it: ranges are appended, removed or
// retyped, and e820__update_table() (sanitize) resolves overlaps and merges neighbours.
// Internal to mock/machine.
#ifndef RESMEM_MOCK_MACHINE_E820_TABLE_H_
#define RESMEM_MOCK_MACHINE_E820_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "mock/machine/linux_rules.h"
#include "mock/machine/machine.h"

namespace resmem::sim {

// Sorted, non-overlapping, adjacent equal types merged. Where entries overlap the higher type
// number wins, compared as the kernel's unsigned enum (e820.c, e820__update_table: "larger
// value takes precedence"), so a reserved range (2) carves RAM (1), type 12 beats 2, and
// soft-reserved (0xefffffff) beats all. Newest rules (KernelE820Table::UpdateTable), without
// its refusal of a one-entry table. kHole entries are dropped.
std::vector<E820Entry> SanitizeE820(const std::vector<E820Entry>& table);

// Bytes of [start, end) covered by entries of `type`.
uint64_t E820BytesOfType(const std::vector<E820Entry>& table, uint64_t start, uint64_t end,
                         E820Type type);

// The kernel's own e820_table, entry for entry, as arch/x86/kernel/e820.c keeps it between the
// BIOS map and "user-defined physical RAM map": unsorted, with the zeroed entries that
// e820__range_remove leaves, until UpdateTable sanitizes it. Every edit prints what that version
// prints into `dmesg` (may be null).
class KernelE820Table {
 public:
  struct Entry {
    uint64_t addr = 0;
    uint64_t size = 0;
    uint32_t type = 0;  // enum e820_type: a u32; memmap=%...+N can put any number here
  };
  KernelE820Table(const LinuxRules& rules, std::vector<std::string>* dmesg)
      : rules_(rules), dmesg_(dmesg) {}

  std::vector<Entry> entries;

  // __e820__range_add: appends as given (no overflow check); when the table is full prints
  // "too many entries; ignoring [mem ...]" and drops it.
  void Add(uint64_t start, uint64_t size, uint32_t type);
  // __e820__range_update: size clamped to ULLONG_MAX - start; prints "e820: update [mem ...]
  // old ==> new". The caller keeps old != new (the kernel's BUG_ON).
  void Update(uint64_t start, uint64_t size, uint32_t old_type, uint32_t new_type);
  // e820__range_remove: size clamped; prints "e820: remove [mem ...] type" (3.5+). check_type
  // false removes every type.
  void Remove(uint64_t start, uint64_t size, uint32_t old_type, bool check_type);
  // e820__update_table / sanitize_e820_map: false (-1) and the table untouched when it has
  // fewer than 2 entries or an entry wraps past 2^64 (addr + size < addr).
  bool UpdateTable();
  // e820__print_table(who) / e820_print_map(who): one line per entry, in this version's format.
  void Print(const std::string& who) const;
  // The header lines: "BIOS-provided physical RAM map:" etc., with "e820: " where it had it.
  void PrintHeader(const std::string& text) const;

  // The entries with a size, as E820Entry (end exclusive; one wrapping past 2^64 ends at
  // UINT64_MAX).
  std::vector<E820Entry> ToEntries() const;

  // One dmesg line for [start, start+size) of `type` in this version's format ("who: ...").
  std::string MapLine(const std::string& who, uint64_t start, uint64_t size, uint32_t type) const;
  // e820_print_type: "usable", "persistent (type 12)", "type 20"; "(usable)" in the old format.
  std::string TypeText(uint32_t type) const;
  // "e820: update [mem 0x7a1bd018-0x7a1cd057] usable ==> usable" (or the old
  // "e820 update range: ... (usable) ==> (usable)").
  std::string UpdateLine(uint64_t start, uint64_t end, uint32_t old_type, uint32_t new_type) const;
  // "e820: remove [mem 0x100000000-0xfffffffffffffffe] usable" (3.0: "e820 remove range: ...");
  // empty before 2.6.33.
  std::string RemoveLine(uint64_t start, uint64_t end, uint32_t old_type, bool check_type) const;

 private:
  bool NoMerge(uint32_t type) const;
  void Emit(const std::string& line) const {
    if (dmesg_) dmesg_->push_back(line);
  }
  const LinuxRules& rules_;
  std::vector<std::string>* dmesg_;
};

// The kernel's vsprintf "%#0Nx": "0x" then hex digits zero-padded so the whole is N wide; unlike
// glibc it keeps the "0x" for zero.
std::string KernelHex(uint64_t v, int width);

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_MACHINE_E820_TABLE_H_
