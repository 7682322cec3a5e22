// Editing an e820 table the way arch/x86/kernel/e820.c does: ranges are appended, removed or
// retyped, and e820__update_table() (sanitize) resolves overlaps and merges neighbours.
// Internal to mock/machine.
#ifndef RESMEM_MOCK_MACHINE_E820_TABLE_H_
#define RESMEM_MOCK_MACHINE_E820_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "mock/machine/machine.h"

namespace resmem::sim {

// Sorted, non-overlapping, adjacent equal types merged. Where entries overlap the higher type
// number wins (e820.c, e820__update_table: "the entry with the larger type value wins"), so a
// reserved range (2) carves RAM (1), and type 12 beats 2. kHole entries are dropped.
std::vector<E820Entry> SanitizeE820(const std::vector<E820Entry>& table);

// e820__range_add: appends [start, start+size) of `type` (sanitize afterwards).
void E820RangeAdd(std::vector<E820Entry>& table, uint64_t start, uint64_t size, E820Type type);

// e820__range_remove(start, size, old_type, check_type=1): drops the parts of `old_type`
// entries inside [start, end). Entries of other types stay.
void E820RangeRemove(std::vector<E820Entry>& table, uint64_t start, uint64_t end,
                     E820Type old_type);

// e820__range_update: the parts of `old_type` entries inside [start, end) become `new_type`.
void E820RangeUpdate(std::vector<E820Entry>& table, uint64_t start, uint64_t end,
                     E820Type old_type, E820Type new_type);

// Bytes of [start, end) covered by entries of `type`.
uint64_t E820BytesOfType(const std::vector<E820Entry>& table, uint64_t start, uint64_t end,
                         E820Type type);

// dmesg's spelling of a type (e820.c, e820_print_type): "usable", "reserved", "ACPI data",
// "ACPI NVS", "unusable", "persistent (type 12)".
std::string E820PrintTypeName(E820Type t);

// "user: [mem 0x0000000100000000-0x0000002fffffffff] reserved" (e820__print_table,
// format "%s: [mem %#018Lx-%#018Lx] ").
std::string E820PrintLine(const std::string& who, const E820Entry& e);

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_MACHINE_E820_TABLE_H_
