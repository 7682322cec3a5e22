// Parsers of the module policy's files (module_policy_parsers.h).
#include "backends/platform/module_policy_parsers.h"

#include <cctype>
#include <sstream>

#include "backends/platform/proc_parsers.h"

namespace resmem {
namespace {

bool IsHexRun(const std::string& s, size_t from, size_t to) {
  if (to <= from) return false;
  for (size_t i = from; i < to; ++i)
    if (!std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

// The subject part of an asymmetric key's description (see the header).
std::string SubjectOf(const std::string& description) {
  for (size_t p = description.find(": "); p != std::string::npos; p = description.find(": ", p + 1)) {
    const size_t hex_from = p + 2;
    size_t hex_to = description.find(": ", hex_from);
    if (hex_to == std::string::npos) hex_to = description.size();
    if (IsHexRun(description, hex_from, hex_to)) return description.substr(0, p);
  }
  const size_t first = description.find(": ");
  return first == std::string::npos ? description : description.substr(0, first);
}

}  // namespace

Result<bool> ParseModulesDisabled(const std::string& text) {
  const std::string t = TrimBlanks(text);
  if (t == "0") return false;
  if (t == "1") return true;
  return Status::InvalidArgument(std::string(kModulesDisabledPath) + " reads '" + t +
                                 "', not 0 or 1; pass the file's text unchanged");
}

const char* LockdownWord(LockdownLevel level) {
  switch (level) {
    case LockdownLevel::kNone: return "none";
    case LockdownLevel::kIntegrity: return "integrity";
    case LockdownLevel::kConfidentiality: return "confidentiality";
  }
  return "none";
}

Result<LockdownLevel> ParseLockdown(const std::string& text) {
  std::istringstream in(text);
  std::string word;
  int bracketed = 0;
  LockdownLevel level = LockdownLevel::kNone;
  while (in >> word) {
    const bool current = word.size() > 2 && word.front() == '[' && word.back() == ']';
    const std::string bare = current ? word.substr(1, word.size() - 2) : word;
    bool known = false;
    for (auto l : {LockdownLevel::kNone, LockdownLevel::kIntegrity, LockdownLevel::kConfidentiality}) {
      if (bare != LockdownWord(l)) continue;
      known = true;
      if (current) level = l;
    }
    if (!known)
      return Status::InvalidArgument(std::string(kLockdownPath) + ": '" + word +
                                     "' is not one of none, integrity, confidentiality "
                                     "(security/lockdown/lockdown.c lockdown_read)");
    bracketed += current ? 1 : 0;
  }
  if (bracketed != 1)
    return Status::InvalidArgument(std::string(kLockdownPath) + " reads '" + TrimBlanks(text) +
                                   "': exactly one level must be bracketed, the current one "
                                   "(\"none [integrity] confidentiality\")");
  return level;
}

Result<bool> ParseSigEnforce(const std::string& text) {
  const std::string t = TrimBlanks(text);
  if (t == "Y") return true;
  if (t == "N") return false;
  return Status::InvalidArgument(std::string(kSigEnforcePath) + " reads '" + t +
                                 "', not Y or N (kernel/params.c param_get_bool)");
}

Result<bool> ParseSecureBootVariable(const std::string& bytes) {
  if (bytes.size() != 5)
    return Status::InvalidArgument(
        "the SecureBoot variable has " + std::to_string(bytes.size()) +
        " bytes; efivarfs gives 5 (4 bytes of attributes, then the value 0 or 1)");
  const unsigned char v = static_cast<unsigned char>(bytes[4]);
  if (v > 1)
    return Status::InvalidArgument("the SecureBoot variable's value is " + std::to_string(v) +
                                   ", not 0 (disabled) or 1 (enabled)");
  return v == 1;
}

const char* SecureBootStateText(SecureBootState s) {
  switch (s) {
    case SecureBootState::kEnabled: return "enabled";
    case SecureBootState::kDisabled: return "disabled";
    case SecureBootState::kEfiNoVariable: return "EFI boot, no SecureBoot variable";
    case SecureBootState::kNotEfi: return "not an EFI boot";
  }
  return "not an EFI boot";
}

Result<std::vector<std::string>> ParseKeySubjects(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (TrimBlanks(line).empty()) continue;
    // "%08x %c%c%c%c%c%c%c %5d %4s %08x %5d %5d %-9.9s " then the type's description.
    std::istringstream fields(line);
    std::string serial, flags, usage, expiry, perm, uid, gid, type;
    fields >> serial >> flags >> usage >> expiry >> perm >> uid >> gid >> type;
    if (!fields || serial.size() != 8 || !IsHexRun(serial, 0, 8) || flags.size() != 7 ||
        perm.size() != 8 || !IsHexRun(perm, 0, 8))
      return Status::InvalidArgument("/proc/keys line " + std::to_string(n) + ": '" + line +
                                     "' is not 'SERIAL FLAGS USAGE EXPIRY PERM UID GID TYPE "
                                     "DESCRIPTION' (security/keys/proc.c)");
    if (type != "asymmetri") continue;
    std::string description;
    std::getline(fields, description);
    description = TrimBlanks(description);
    if (!description.empty()) out.push_back(SubjectOf(description));
  }
  return out;
}

bool KeySubjectMatches(const std::string& subject, const std::string& signer) {
  if (signer.empty()) return false;
  if (subject == signer) return true;
  const std::string tail = ": " + signer;
  return subject.size() > tail.size() && subject.compare(subject.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace resmem
