// The kernel's own e820 lines read back: the map lines ("BIOS-e820:", "user:") in both dmesg
// forms, the early edits ("e820: update ...", "e820: remove ..."), and the type words of dmesg
// and /sys/firmware/memmap. Used by the machine format (early_edits) and by `resmem import`.
#ifndef RESMEM_MOCK_MACHINE_E820_TEXT_H_
#define RESMEM_MOCK_MACHINE_E820_TEXT_H_

#include <cstdint>
#include <string>

#include "backends/api/status.h"
#include "mock/machine/machine.h"

namespace resmem::sim {

// One type word as the kernel prints it, or as /sys/firmware/memmap/N/type and /proc/iomem name
// it: "usable", "reserved", "ACPI data", "ACPI NVS", "unusable", "persistent (type 7)",
// "persistent (type 12)", "soft reserved", "type 12", "System RAM", "Reserved", "ACPI Tables",
// "ACPI Non-volatile Storage", "Unusable memory", "Persistent Memory", "Persistent Memory
// (legacy)", "Soft Reserved". Parentheses around the word ("(usable)", the 2.6-era form) are
// accepted. "usable" is RAM: the kernel prints E820_TYPE_RESERVED_KERN as "usable" too, and a
// log cannot tell them apart (arch/x86/kernel/e820.c, e820_print_type). NotFound for others.
Result<E820Type> ParseE820TypeWord(const std::string& word);

// A word the machine format writes for `t` that ParseE820TypeWord reads back as `t`:
// "usable", "reserved", "ACPI data", "ACPI NVS", "unusable", "persistent (type 7)",
// "persistent (type 12)", "soft reserved", else "type N" (128 included).
std::string E820TypeWord(E820Type t);

// One map line, without a timestamp and leading blanks:
//   current: "BIOS-e820: [mem 0x0000000000000000-0x000000000009fbff] usable" (end inclusive,
//            e820__print_table: "%s: [mem %#018Lx-%#018Lx] ")
//   old:     "BIOS-e820: 0000000000000000 - 000000000009fc00 (usable)" (end EXCLUSIVE,
//            2.6-era e820_print_map: " %s: %016Lx - %016Lx ")
// `who` is the word before the colon ("BIOS-e820", "user", ...). Errors say what is wrong with
// the line (a truncated range, an end at or past 2^64, an end before the start, a bad type).
struct E820MapLine {
  std::string who;
  E820Entry entry;    // end exclusive
  bool old_form = false;
};
Result<E820MapLine> ParseE820MapLine(const std::string& line);

// "e820: update [mem 0x7a1bd018-0x7a1cd057] usable ==> usable" (__e820__range_update),
// "e820: remove [mem 0x000a0000-0x000fffff] usable" (e820__range_remove), and the old forms
// "e820 update range: 0000000000000000 - 0000000000010000 (usable) ==> (reserved)",
// "e820 remove range: 00000000000a0000 - 0000000000100000 (usable)".
// "usable ==> usable" is RAM kept as E820_TYPE_RESERVED_KERN (setup_data,
// e820__reserve_setup_data): from kRam to kReservedKern. A remove's `to` is kHole; a remove
// that names no type (check_type 0) has `from` kHole, meaning any type.
Result<E820Edit> ParseE820EditLine(const std::string& line);

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_MACHINE_E820_TEXT_H_
