// memparse() and next_arg(), after lib/cmdline.c.
#include "mock/machine/cmdline.h"

#include <cctype>

namespace resmem::sim {

MemParsed MemParse(const std::string& text) {
  MemParsed out;
  size_t i = 0;
  int base = 10;
  if (text.size() >= 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X') &&
      text.size() > 2 && std::isxdigit(static_cast<unsigned char>(text[2]))) {
    base = 16;
    i = 2;
  } else if (!text.empty() && text[0] == '0') {
    base = 8;
  }
  const size_t digits_start = i;
  uint64_t v = 0;
  for (; i < text.size(); ++i) {
    const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = 10 + (c - 'a');
    else break;
    if (d >= base) break;
    v = v * base + d;
  }
  if (i == digits_start) return out;  // nothing read
  int shift = 0;
  if (i < text.size()) {
    switch (std::tolower(static_cast<unsigned char>(text[i]))) {
      case 'e': shift = 60; break;
      case 'p': shift = 50; break;
      case 't': shift = 40; break;
      case 'g': shift = 30; break;
      case 'm': shift = 20; break;
      case 'k': shift = 10; break;
    }
    // In base 16 'e' is a digit and already consumed; the switch only sees non-digits.
    if (shift) ++i;
  }
  out.value = v << shift;
  out.consumed = i;
  return out;
}

std::vector<KernelOption> SplitKernelCmdline(const std::string& line) {
  std::vector<KernelOption> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i >= line.size()) break;
    KernelOption opt;
    bool in_quote = false;
    size_t start = i;
    for (; i < line.size(); ++i) {
      const char c = line[i];
      if (c == '"') {
        in_quote = !in_quote;
        continue;
      }
      if (!in_quote && std::isspace(static_cast<unsigned char>(c))) break;
    }
    opt.raw = line.substr(start, i - start);
    std::string unquoted;
    for (char c : opt.raw)
      if (c != '"') unquoted += c;
    const size_t eq = unquoted.find('=');
    if (eq == std::string::npos) {
      opt.key = unquoted;
    } else {
      opt.key = unquoted.substr(0, eq);
      opt.value = unquoted.substr(eq + 1);
      opt.has_value = true;
    }
    out.push_back(opt);
  }
  return out;
}

}  // namespace resmem::sim
