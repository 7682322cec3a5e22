// simple_strtoull(), memparse() and next_arg(), after lib/vsprintf.c, lib/cmdline.c and
// kernel/params.c (2.6.32.69 and 6.12 read).
#include "mock/machine/cmdline.h"

#include <cctype>

namespace resmem::sim {
namespace {

bool KernelIsSpace(char c) {
  const unsigned char u = static_cast<unsigned char>(c);
  return u == ' ' || (u >= '\t' && u <= '\r') || u == 0xa0;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (l >= 'a' && l <= 'f') return 10 + (l - 'a');
  return 99;
}

const LinuxRules& Newest() {
  static const LinuxRules* rules = new LinuxRules(LinuxRulesFor("").value());
  return *rules;
}

}  // namespace

MemParsed SimpleStrtoull(const std::string& text, size_t from) {
  MemParsed out;
  size_t i = from;
  auto at = [&](size_t k) { return k < text.size() ? text[k] : '\0'; };
  unsigned base = 10;
  if (at(i) == '0') {
    base = 8;
    if (std::tolower(static_cast<unsigned char>(at(i + 1))) == 'x' &&
        std::isxdigit(static_cast<unsigned char>(at(i + 2)))) {
      base = 16;
      i += 2;
    }
  }
  const size_t digits = i;
  uint64_t v = 0;
  while (i < text.size()) {
    const int d = HexValue(text[i]);
    if (d >= static_cast<int>(base)) break;
    v = v * base + static_cast<unsigned>(d);
    ++i;
  }
  if (i == digits) return out;  // "0x" without a digit never gets here: base 8 reads the "0"
  out.value = v;
  out.consumed = i - from;
  return out;
}

MemParsed MemParse(const std::string& text, size_t from) { return MemParse(text, from, Newest()); }

MemParsed MemParse(const std::string& text, size_t from, const LinuxRules& rules) {
  // lib/cmdline.c memparse switches on *endptr whether or not simple_strtoull read a digit:
  // "G$4G" reads as 0 with the 'G' consumed, so parse_memmap_one's "p == oldp" check passes
  // (found by the differential fuzz target, mock/machine/memmap_diff_fuzz.cc).
  MemParsed out = SimpleStrtoull(text, from);
  const size_t end = from + out.consumed;
  if (end >= text.size()) return out;
  int steps = 0;
  switch (std::tolower(static_cast<unsigned char>(text[end]))) {
    case 'k': steps = 1; break;
    case 'm': steps = 2; break;
    case 'g': steps = 3; break;
    case 't': steps = rules.memparse_tpe ? 4 : 0; break;
    case 'p': steps = rules.memparse_tpe ? 5 : 0; break;
    case 'e': steps = rules.memparse_tpe ? 6 : 0; break;  // a hex 'e' was already read as a digit
  }
  if (steps == 0) return out;
  for (int s = 0; s < steps; ++s) out.value <<= 10;
  ++out.consumed;
  return out;
}

std::vector<KernelOption> SplitKernelCmdline(const std::string& line) {
  std::vector<KernelOption> out;
  size_t i = 0;
  bool after_dashdash = false;
  while (i < line.size() && KernelIsSpace(line[i])) ++i;  // parse_args: skip_spaces
  while (i < line.size()) {
    const size_t word_start = i;
    bool quoted = false;
    if (line[i] == '"') {
      ++i;
      quoted = true;
    }
    const size_t args = i;
    bool in_quote = quoted;
    size_t equals = 0;  // offset from args; 0 = none (a '=' at index 0 does not count)
    size_t k = 0;
    for (; args + k < line.size(); ++k) {
      const char c = line[args + k];
      if (KernelIsSpace(c) && !in_quote) break;
      if (equals == 0 && c == '=') equals = k;
      if (c == '"') in_quote = !in_quote;
    }
    // args[0..k) is the argument; next_arg writes NULs into it.
    std::string arg = line.substr(args, k);
    KernelOption opt;
    opt.raw = line.substr(word_start, args + k - word_start);
    opt.position = static_cast<int>(out.size());
    if (equals == 0) {
      if (quoted && k > 0 && arg[k - 1] == '"') arg.resize(k - 1);
      opt.key = arg;
    } else {
      opt.key = arg.substr(0, equals);
      std::string val = arg.substr(equals + 1);
      size_t val_end = val.size();
      bool strip_last = false;
      if (!val.empty() && val[0] == '"') {
        val.erase(0, 1);
        --val_end;
        if (arg[k - 1] == '"') strip_last = true;
      }
      if (quoted && k > 0 && arg[k - 1] == '"') strip_last = true;
      if (strip_last && val_end > 0 && !val.empty() && val.back() == '"') val.pop_back();
      opt.value = val;
      opt.has_value = true;
    }
    opt.after_dashdash = after_dashdash;
    if (!opt.has_value && opt.key == "--") after_dashdash = true;
    out.push_back(opt);
    i = args + k;
    if (i < line.size()) ++i;  // the space that ended it
    while (i < line.size() && KernelIsSpace(line[i])) ++i;
  }
  return out;
}

}  // namespace resmem::sim
