// Kernel command-line helpers shared by Boot() and tests: memparse() and the splitting of the
// line into options. Internal to mock/machine.
#ifndef RESMEM_MOCK_MACHINE_CMDLINE_H_
#define RESMEM_MOCK_MACHINE_CMDLINE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace resmem::sim {

// lib/cmdline.c memparse(): simple_strtoull(base 0: 0x hex, leading 0 octal, else decimal)
// followed by an optional K/M/G/T/P/E suffix (binary, either case). `consumed` is how many
// characters it read; 0 when no number starts the text.
struct MemParsed {
  uint64_t value = 0;
  size_t consumed = 0;
};
MemParsed MemParse(const std::string& text);

// lib/cmdline.c next_arg(): options separated by spaces; double quotes group ("a=\"x y\"").
struct KernelOption {
  std::string raw;    // the option as written: "memmap=188G$4G"
  std::string key;    // "memmap"
  std::string value;  // "188G$4G" (quotes removed)
  bool has_value = false;
};
std::vector<KernelOption> SplitKernelCmdline(const std::string& line);

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_MACHINE_CMDLINE_H_
