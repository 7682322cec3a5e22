// The kernel's e820 lines read back (arch/x86/kernel/e820.c: e820_print_type,
// e820__print_table, __e820__range_update, e820__range_remove; 2.6-era e820_print_map).
#include "mock/machine/e820_text.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <tuple>
#include <utility>
#include <vector>

#include "backends/platform/proc_parsers.h"

namespace resmem::sim {
namespace {

std::string Trim(const std::string& s) { return TrimBlanks(s); }

// A whole hex number (optional 0x); false on anything else or on overflow of 64 bits.
bool ParseHex(std::string s, uint64_t* out, bool* overflow) {
  *overflow = false;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s = s.substr(2);
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  size_t first = s.find_first_not_of('0');
  if (first != std::string::npos && s.size() - first > 16) {
    *overflow = true;
    return false;
  }
  errno = 0;
  *out = std::strtoull(s.c_str(), nullptr, 16);
  return errno == 0;
}

Status Bad(const std::string& line, const std::string& why) {
  return Status::InvalidArgument("'" + line + "': " + why);
}

// "A-B" (inclusive) or "A - B" (exclusive, old form) into [start, end).
Status ParseRange(const std::string& line, const std::string& a, const std::string& b,
                  bool inclusive, uint64_t* start, uint64_t* end) {
  bool over = false;
  if (!ParseHex(Trim(a), start, &over))
    return Bad(line, over ? "the start is past 2^64" : "the start '" + Trim(a) + "' is not hex");
  uint64_t last = 0;
  if (!ParseHex(Trim(b), &last, &over))
    return Bad(line, over ? "the end is past 2^64; no x86 address reaches that far"
                          : "the end '" + Trim(b) + "' is not hex (a truncated line?)");
  if (inclusive) {
    if (last == UINT64_MAX)
      return Bad(line, "the range ends at 2^64, which the model cannot hold; no x86 machine "
                       "has memory there");
    *end = last + 1;
  } else {
    *end = last;
  }
  if (*end <= *start)
    return Bad(line, "the end is not after the start (" + Trim(a) + " .. " + Trim(b) + ")");
  return Status::Ok();
}

struct Word {
  const char* text;
  E820Type type;
};

const std::vector<Word>& Words() {
  static const std::vector<Word> kWords = {
      // dmesg (e820_print_type)
      {"usable", E820Type::kRam},
      {"reserved", E820Type::kReserved},
      {"ACPI data", E820Type::kAcpi},
      {"ACPI NVS", E820Type::kNvs},
      {"unusable", E820Type::kUnusable},
      {"persistent (type 7)", E820Type::kPmem},
      {"persistent (type 12)", E820Type::kPram},
      {"soft reserved", E820Type::kSoftReserved},
      // /sys/firmware/memmap and /proc/iomem (e820_type_to_string)
      {"System RAM", E820Type::kRam},
      {"Reserved", E820Type::kReserved},
      {"ACPI Tables", E820Type::kAcpi},
      {"ACPI Non-volatile Storage", E820Type::kNvs},
      {"Unusable memory", E820Type::kUnusable},
      {"Persistent Memory", E820Type::kPmem},
      {"Persistent Memory (legacy)", E820Type::kPram},
      {"Soft Reserved", E820Type::kSoftReserved},
  };
  return kWords;
}

}  // namespace

Result<E820Type> ParseE820TypeWord(const std::string& raw) {
  // Runs of blanks count as one ("(ACPI  data)" in pasted 2.6.32 logs).
  std::string word;
  for (char c : Trim(raw)) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!word.empty() && word.back() == ' ') continue;
      c = ' ';
    }
    word += c;
  }
  if (word.size() >= 2 && word.front() == '(' && word.back() == ')')
    word = Trim(word.substr(1, word.size() - 2));
  for (const auto& w : Words())
    if (word == w.text) return w.type;
  if (word.rfind("type ", 0) == 0) {
    const std::string n = Trim(word.substr(5));
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(n.c_str(), &end, 10);
    if (!n.empty() && std::isdigit(static_cast<unsigned char>(n[0])) && !*end && !errno &&
        v >= 1 && v <= 0xffffffffull)
      return static_cast<E820Type>(static_cast<int>(static_cast<uint32_t>(v)));
  }
  return Status::Error(kNotFound,
                       "'" + word + "' is not an e820 type (usable, reserved, ACPI data, "
                       "ACPI NVS, unusable, persistent (type 7), persistent (type 12), soft "
                       "reserved, type N, or the /sys/firmware/memmap names)");
}

std::string E820TypeWord(E820Type t) {
  for (const auto& w : Words())
    if (w.type == t) return w.text;
  return "type " + std::to_string(static_cast<uint32_t>(static_cast<int>(t)));
}

Result<E820MapLine> ParseE820MapLine(const std::string& raw) {
  const std::string line = Trim(raw);
  const size_t colon = line.find(": ");
  if (colon == std::string::npos || colon == 0)
    return Bad(line, "not a map line 'WHO: [mem 0xSTART-0xEND] type'");
  E820MapLine out;
  out.who = line.substr(0, colon);
  const std::string rest = Trim(line.substr(colon + 2));
  std::string type_text;
  if (rest.rfind("[mem ", 0) == 0) {
    const size_t close = rest.find(']');
    if (close == std::string::npos) return Bad(line, "no ']' after the range (a truncated line?)");
    const std::string range = rest.substr(5, close - 5);
    const size_t dash = range.find('-');
    if (dash == std::string::npos) return Bad(line, "the range has no '-' (a truncated line?)");
    RESMEM_RETURN_IF_ERROR(ParseRange(line, range.substr(0, dash), range.substr(dash + 1),
                                      /*inclusive=*/true, &out.entry.start, &out.entry.end));
    type_text = Trim(rest.substr(close + 1));
  } else {
    // Old form: "%016Lx - %016Lx " then the type.
    const size_t dash = rest.find(" - ");
    if (dash == std::string::npos)
      return Bad(line, "neither '[mem A-B]' nor 'A - B' (a truncated line?)");
    const size_t after = rest.find(' ', dash + 3);
    const std::string b = rest.substr(dash + 3, after == std::string::npos ? std::string::npos
                                                                           : after - dash - 3);
    // e820_print_map prints both numbers with %016Lx: fewer digits is a cut line.
    if (rest.find_first_of(" ") != 16 || b.size() != 16)
      return Bad(line, "the old form prints 16 hex digits per number, this has fewer or more "
                       "(a truncated line?)");
    RESMEM_RETURN_IF_ERROR(ParseRange(line, rest.substr(0, dash), b, /*inclusive=*/false,
                                      &out.entry.start, &out.entry.end));
    type_text = after == std::string::npos ? "" : Trim(rest.substr(after));
    out.old_form = true;
  }
  if (type_text.empty()) return Bad(line, "no type after the range (a truncated line?)");
  auto type = ParseE820TypeWord(type_text);
  if (!type.ok()) return Bad(line, type.status().message());
  out.entry.type = *type;
  return out;
}

Result<E820Edit> ParseE820EditLine(const std::string& raw) {
  const std::string line = Trim(raw);
  E820Edit edit;
  edit.line = line;
  bool update = false;
  std::string rest;
  bool inclusive = true;
  for (const auto& [prefix, is_update, incl] :
       std::vector<std::tuple<std::string, bool, bool>>{{"e820: update ", true, true},
                                                         {"e820: remove ", false, true},
                                                         {"e820 update range: ", true, false},
                                                         {"e820 remove range: ", false, false}}) {
    if (line.rfind(prefix, 0) == 0) {
      update = is_update;
      inclusive = incl;
      rest = line.substr(prefix.size());
      break;
    }
  }
  if (rest.empty()) return Bad(line, "not an 'e820: update' or 'e820: remove' line");
  std::string types;
  if (inclusive) {
    if (rest.rfind("[mem ", 0) != 0) return Bad(line, "no '[mem A-B]' range");
    const size_t close = rest.find(']');
    if (close == std::string::npos) return Bad(line, "no ']' after the range (a truncated line?)");
    const std::string range = rest.substr(5, close - 5);
    const size_t dash = range.find('-');
    if (dash == std::string::npos) return Bad(line, "the range has no '-'");
    RESMEM_RETURN_IF_ERROR(ParseRange(line, range.substr(0, dash), range.substr(dash + 1), true,
                                      &edit.start, &edit.end));
    types = Trim(rest.substr(close + 1));
  } else {
    const size_t dash = rest.find(" - ");
    if (dash == std::string::npos) return Bad(line, "no 'A - B' range");
    const size_t after = rest.find(' ', dash + 3);
    RESMEM_RETURN_IF_ERROR(ParseRange(
        line, rest.substr(0, dash),
        rest.substr(dash + 3, after == std::string::npos ? std::string::npos : after - dash - 3),
        false, &edit.start, &edit.end));
    types = after == std::string::npos ? "" : Trim(rest.substr(after));
  }
  if (update) {
    const size_t arrow = types.find("==>");
    if (arrow == std::string::npos) return Bad(line, "an update needs 'OLD ==> NEW' types");
    auto from = ParseE820TypeWord(types.substr(0, arrow));
    auto to = ParseE820TypeWord(types.substr(arrow + 3));
    if (!from.ok()) return Bad(line, from.status().message());
    if (!to.ok()) return Bad(line, to.status().message());
    edit.from = *from;
    edit.to = *to;
    // "usable ==> usable": RAM kept as E820_TYPE_RESERVED_KERN, which prints as "usable"
    // (e820__reserve_setup_data: e820__range_update(pa, size, RAM, RESERVED_KERN)).
    if (edit.from == E820Type::kRam && edit.to == E820Type::kRam) edit.to = E820Type::kReservedKern;
  } else {
    edit.to = E820Type::kHole;
    if (types.empty()) {
      edit.from = E820Type::kHole;  // check_type 0: any type
    } else {
      auto from = ParseE820TypeWord(types);
      if (!from.ok()) return Bad(line, from.status().message());
      edit.from = *from;
    }
  }
  return edit;
}

}  // namespace resmem::sim
