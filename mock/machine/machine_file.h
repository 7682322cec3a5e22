// The machine format: one TOML [machine] table that describes a whole x86 machine (firmware e820
// map, device windows, MTRRs, PAT, address width, the kernel's version and command line, host
// speeds). A scenario's [machine] table is the same format; the presets are files of it
// (mock/machine/presets/*.toml, compiled into the binaries); `resmem import` and
// `resmem doctor --record` write it. docs/scenarios.md "The machine format" lists every key.
//
// Ranges are written { start = A, last = B } with `last` the INCLUSIVE last byte, as dmesg's
// "[mem A-B]" and /sys/firmware/memmap print it, or { start = A, size = N }. The key `end` is
// refused: logs print exclusive ends (old "BIOS-e820: A - B") and inclusive ones (the rest), so
// "end" would be ambiguous.
#ifndef RESMEM_MOCK_MACHINE_MACHINE_FILE_H_
#define RESMEM_MOCK_MACHINE_MACHINE_FILE_H_

#ifndef TOML_EXCEPTIONS
#define TOML_EXCEPTIONS 0
#endif

#include <string>
#include <vector>

#include "backends/api/status.h"
#include "mock/machine/machine.h"
#include "toml++/toml.h"

namespace resmem::sim {

// Every key of the format, in the order WriteMachineToml writes them.
const std::vector<std::string>& MachineFormatKeys();

// Where a machine described from scratch starts: name "custom", no firmware map, MTRRs enabled
// with default type write-back and no ranges (nothing known says otherwise), the MachineSpec
// defaults for everything else.
MachineSpec BlankMachine();

// Applies the keys of `table` onto *spec: a key given replaces the value, a key absent keeps
// what *spec had (a preset's or a machine file's). Keys in `also_allowed` are skipped (the
// scenario's `preset` and `from`); any other unknown key is an error. Checks afterwards that the
// machine can boot as described (a firmware map, `ram` agreeing with it). The first error
// reads "FILE:LINE: key 'machine.KEY': problem; the way out".
Status ApplyMachineTable(const toml::table& table, const std::string& file,
                         const std::vector<std::string>& also_allowed, MachineSpec* spec);

// TOML text parsed with toml++ (the machine format and scenario files both read through it).
// The error reads "FILE:LINE: TOML syntax: what". Before toml++ sees the text, a non-ASCII
// character where TOML allows only ASCII (outside strings and comments, or first after a
// line-ending backslash in a """ string) is refused naming its line: Debian's toml++ 3.3
// reaches __builtin_unreachable() on some of them (is_non_ascii_horizontal_whitespace,
// marzer/tomlplusplus issues 190 and 295), undefined behaviour found by the machine_file fuzz
// target. TOML 1.0 allows no such character there anyway.
Result<toml::table> ParseTomlText(const std::string& text, const std::string& file);

// A machine file's text (a [machine] table in the format), from BlankMachine().
Result<MachineSpec> ParseMachineText(const std::string& text, const std::string& file);

// `spec` as a [machine] table in the format, each key on its own line; ParseMachineText of the
// result gives back an equal spec (E820Edit::line aside, which is the edit itself).
std::string WriteMachineToml(const MachineSpec& spec);

// `s` as a TOML basic string, quotes included (backslash, quote and control characters escaped).
std::string TomlQuote(const std::string& s);

// True when every field of a and b is equal (doubles exactly); `diff` names the first that is not.
bool SameMachine(const MachineSpec& a, const MachineSpec& b, std::string* diff);

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_MACHINE_MACHINE_FILE_H_
