#include "mock/fuse/control.h"

#include <cctype>
#include <cstdlib>
#include <sstream>

#include "backends/api/memory.h"

namespace resmem::fuse_emu {
namespace {

struct VerbForm {
  ControlVerb verb;
  const char* name;
  const char* form;  // the arguments it takes
  size_t args;
};

constexpr VerbForm kVerbs[] = {
    {ControlVerb::kEio, "eio", "eio DEV OFFSET LENGTH", 3},
    {ControlVerb::kDelay, "delay", "delay DEV OFFSET LENGTH MICROSECONDS", 4},
    {ControlVerb::kRefuseMmap, "refuse-mmap", "refuse-mmap DEV", 1},
    {ControlVerb::kRefuseOpen, "refuse-open", "refuse-open DEV ERRNO", 2},
    {ControlVerb::kFill, "fill", "fill DEV OFFSET LENGTH SEED", 4},
    {ControlVerb::kDie, "die", "die", 0},
    {ControlVerb::kClear, "clear", "clear [DEV]", 1},
};

Result<uint64_t> Number(const std::string& word, const char* what, const std::string& where) {
  auto r = ParseSize(word);
  if (!r.ok()) {
    return Status::InvalidArgument(where + ": " + what + " '" + word +
                                   "' is not a number (write 4096, 0x1000 or 2M)");
  }
  return r.value();
}

}  // namespace

const char* ControlVerbName(ControlVerb v) {
  for (const auto& f : kVerbs) {
    if (f.verb == v) return f.name;
  }
  return "?";
}

std::string ControlCommand::Describe() const {
  std::ostringstream o;
  o << ControlVerbName(verb);
  switch (verb) {
    case ControlVerb::kEio: o << ' ' << device << ' ' << offset << ' ' << length; break;
    case ControlVerb::kDelay:
      o << ' ' << device << ' ' << offset << ' ' << length << ' ' << delay_us;
      break;
    case ControlVerb::kRefuseMmap: o << ' ' << device; break;
    case ControlVerb::kRefuseOpen: {
      const char* n = ErrnoName(error);
      o << ' ' << device << ' ' << (n && *n ? std::string(n) : std::to_string(error));
      break;
    }
    case ControlVerb::kFill:
      o << ' ' << device << ' ' << offset << ' ' << length << ' ' << seed;
      break;
    case ControlVerb::kDie: break;
    case ControlVerb::kClear:
      if (!device.empty()) o << ' ' << device;
      break;
  }
  return o.str();
}

Result<std::vector<ControlCommand>> ParseControl(const std::string& text) {
  std::vector<ControlCommand> out;
  std::istringstream lines(text);
  std::string line;
  int line_no = 0;
  while (std::getline(lines, line)) {
    ++line_no;
    auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string s; words >> s;) w.push_back(s);
    if (w.empty()) continue;
    std::string where = "control line " + std::to_string(line_no) + " '" + line + "'";
    const VerbForm* form = nullptr;
    for (const auto& f : kVerbs) {
      if (w[0] == f.name) form = &f;
    }
    if (!form) {
      std::string verbs;
      for (const auto& f : kVerbs) verbs += std::string(verbs.empty() ? "" : ", ") + f.name;
      return Status::InvalidArgument(where + ": unknown command '" + w[0] + "'; commands: " +
                                     verbs);
    }
    size_t args = w.size() - 1;
    bool optional_ok = form->verb == ControlVerb::kClear && args == 0;
    if (args != form->args && !optional_ok) {
      return Status::InvalidArgument(where + ": expected '" + form->form + "'");
    }
    ControlCommand c;
    c.verb = form->verb;
    if (args >= 1) c.device = w[1];
    if (c.verb == ControlVerb::kEio || c.verb == ControlVerb::kDelay ||
        c.verb == ControlVerb::kFill) {
      RESMEM_ASSIGN_OR_RETURN(c.offset, Number(w[2], "OFFSET", where));
      RESMEM_ASSIGN_OR_RETURN(c.length, Number(w[3], "LENGTH", where));
      if (c.length == 0) {
        return Status::InvalidArgument(where + ": LENGTH is 0; give the bytes the fault covers");
      }
      if (c.offset + c.length < c.offset) {
        return Status::InvalidArgument(where + ": OFFSET+LENGTH overflows 64 bits");
      }
    }
    if (c.verb == ControlVerb::kDelay) {
      RESMEM_ASSIGN_OR_RETURN(c.delay_us, Number(w[4], "MICROSECONDS", where));
    }
    if (c.verb == ControlVerb::kFill) {
      RESMEM_ASSIGN_OR_RETURN(c.seed, Number(w[4], "SEED", where));
      if (c.offset % 8 != 0 || c.length % 8 != 0) {
        return Status::InvalidArgument(where +
                                       ": fill works on whole 8-byte words; make OFFSET and "
                                       "LENGTH multiples of 8");
      }
    }
    if (c.verb == ControlVerb::kRefuseOpen) {
      int err = ErrnoFromName(w[2]);
      if (err < 0) {
        char* end = nullptr;
        long v = std::strtol(w[2].c_str(), &end, 10);
        if (end && *end == '\0' && v > 0 && v < 4096) err = static_cast<int>(v);
      }
      if (err <= 0) {
        return Status::InvalidArgument(where + ": ERRNO '" + w[2] +
                                       "' is neither an errno name (EACCES, EBUSY, ...) nor a "
                                       "positive number");
      }
      c.error = err;
    }
    out.push_back(c);
  }
  return out;
}

const char* ControlUsage() {
  return "eio DEV OFFSET LENGTH        reads of the range fail EIO (SIGBUS through a mapping)\n"
         "delay DEV OFFSET LENGTH US   reads meeting the range wait US microseconds\n"
         "refuse-mmap DEV              later opens cannot be mmapped (ENODEV)\n"
         "refuse-open DEV ERRNO        later opens fail with ERRNO (EACCES, EBUSY, 13, ...)\n"
         "fill DEV OFFSET LENGTH SEED  device-side write of the fill pattern, seen by mappings\n"
         "die                          the daemon exits (ENOTCONN, SIGBUS)\n"
         "clear [DEV]                  remove faults\n";
}

}  // namespace resmem::fuse_emu
