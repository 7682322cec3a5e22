// Kernel command-line helpers shared by Boot() and tests: memparse(), simple_strtoull() and the
// splitting of the line into parameters, each as the kernel version at hand does it.
// Internal to mock/machine.
#ifndef RESMEM_MOCK_MACHINE_CMDLINE_H_
#define RESMEM_MOCK_MACHINE_CMDLINE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "mock/machine/linux_rules.h"

namespace resmem::sim {

// lib/vsprintf.c simple_strtoull(text, &end, 0): base from the prefix (simple_guess_base: "0x"
// then a hex digit -> 16, a leading "0" -> 8, else 10), digits until the first that does not
// fit the base, arithmetic modulo 2^64 (no overflow check). `consumed` counts the characters
// read, "0x" included; 0 when no digit was read.
struct MemParsed {
  uint64_t value = 0;
  size_t consumed = 0;
};
MemParsed SimpleStrtoull(const std::string& text, size_t from = 0);

// lib/cmdline.c memparse(): simple_strtoull, then one optional suffix K, M, G (and T, P, E from
// 3.15; either case) shifting left by 10 per step (bits shifted out are lost). Reads from `from`;
// `consumed` counts from there and includes the suffix. The suffix is read even after no digit,
// as the kernel's switch on *endptr does: "G$4G" is 0 with consumed 1. consumed is 0 only when
// neither a digit nor a suffix was read.
MemParsed MemParse(const std::string& text, size_t from = 0);
MemParsed MemParse(const std::string& text, size_t from, const LinuxRules& rules);

// One parameter as kernel/params.c parse_args + lib/cmdline.c next_arg() split it: the first
// '=' (not at index 0) splits name from value; a '"' anywhere toggles quoting (spaces inside
// quotes do not split); a value starting with '"' loses it and a final '"'; an argument that
// starts with '"' loses that and its final '"'. Spaces are the kernel's isspace: ' ', \t, \n,
// \v, \f, \r and 0xa0 (lib/ctype.c marks 160 _S|_SP).
struct KernelOption {
  std::string raw;    // the argument as written on the line: "memmap=188G$4G"
  std::string key;    // "memmap"
  std::string value;  // "188G$4G" (quotes removed as next_arg removes them)
  bool has_value = false;
  bool after_dashdash = false;  // came after a bare "--" (parse_args stops there from 3.15)
  int position = 0;             // index among the line's arguments
};
std::vector<KernelOption> SplitKernelCmdline(const std::string& line);

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_MACHINE_CMDLINE_H_
