#include "engine/cli/values.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "backends/api/memory.h"

namespace resmem::cli {

CLI::Validator CheckedBy(const std::string& name,
                         std::function<Status(const std::string&)> check) {
  return CLI::Validator(
      [check = std::move(check)](std::string& text) -> std::string {
        const Status st = check(text);
        return st.ok() ? std::string() : st.message();
      },
      "", name);
}

CLI::Validator MachineNamed(const std::string& without) {
  return CheckedBy("PRESET|FILE", [without](const std::string& given) {
    return given.empty() ? Status::InvalidArgument(
                               "'' names no machine; give a preset (seed000-workstation, ...), a "
                               "machine file or a paste, or leave --machine out to " + without)
                         : Status::Ok();
  });
}

namespace {

// `text` as a whole number: decimal digits, or 0x and hexadecimal ones; the problem otherwise.
// CLI11 then converts the text itself with strtoull(..., 0), which reads a leading 0 as octal
// ("010" as 8): such a number is refused, not reinterpreted.
std::string WholeNumberProblem(const std::string& text) {
  const bool hex = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
  const std::string digits = hex ? text.substr(2) : text;
  const DigitsRead r = ReadDigits(digits, hex ? 16 : 10);
  if (!r.digits_only) return "'" + text + "' is not a whole number of 0 or more";
  if (!r.fits) return "'" + text + "' is too large (at most " + std::to_string(UINT64_MAX) + ")";
  if (!hex && digits.size() > 1 && digits[0] == '0')
    return "'" + text + "' starts with 0, which would read as octal: write it without the leading "
           "zeros (" + std::to_string(r.value) + ")";
  return std::string();
}

}  // namespace

CLI::Validator NonNegativeInteger() { return WholeNumberFrom(0); }

CLI::Validator WholeNumberFrom(uint64_t least) {
  return CLI::Validator(
      [least](std::string& text) {
        const std::string problem = WholeNumberProblem(text);
        if (!problem.empty() || std::strtoull(text.c_str(), nullptr, 0) >= least) return problem;
        return "'" + text + "' is less than " + std::to_string(least) + ", the least allowed";
      },
      "", "N");
}

CLI::Validator NonNegativeReal() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !std::isfinite(value) || value < 0)
          return "'" + text + "' is not a number of 0 or more";
        return std::string();
      },
      "", "NUMBER");
}

CLI::Validator PathNamed(bool required) {
  const std::string problem = std::string("'' names no file or folder; give a path") +
                              (required ? "" : ", or leave the option out");
  return CLI::Validator(
      [problem](std::string& path) { return path.empty() ? problem : std::string(); }, "", "PATH");
}

CLI::Validator ByteSize(uint64_t least_bytes) {
  return CLI::Validator(
      [least_bytes](std::string& text) -> std::string {
        auto bytes = ParseSize(text);
        if (!bytes.ok()) return "'" + text + "' is no size: " + bytes.status().message();
        if (*bytes < least_bytes)
          return "'" + text + "' is below the least allowed, " + SpellSize(least_bytes);
        text = std::to_string(*bytes);
        return std::string();
      },
      "", "SIZE");
}

std::string SpellSize(uint64_t bytes) {
  static const char kUnits[] = "KMGTPE";
  if (bytes == 0) return "0";
  int unit = -1;
  while (unit < 5 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return std::to_string(bytes) + (unit < 0 ? "" : std::string(1, kUnits[unit]));
}

CLI::Option* AddSizeOption(CLI::App& app, const std::string& name, uint64_t* bytes,
                           const std::string& help, uint64_t least_bytes) {
  CLI::Option* opt = app.add_option(name, *bytes, help)->transform(ByteSize(least_bytes));
  opt->type_name("SIZE")->default_str(SpellSize(*bytes));
  return opt;
}

CLI::Option* AddSizeOption(CLI::App& app, const std::string& name, std::optional<uint64_t>* bytes,
                           const std::string& help) {
  return app.add_option(name, *bytes, help)->transform(ByteSize())->type_name("SIZE");
}

CLI::Option* AddSizeListOption(CLI::App& app, const std::string& name,
                               std::vector<uint64_t>* sizes, const std::string& help) {
  std::string shown;
  for (uint64_t s : *sizes) shown += (shown.empty() ? "" : ",") + SpellSize(s);
  CLI::Option* opt = app.add_option(name, *sizes, help)->delimiter(',')->transform(ByteSize());
  opt->type_name("SIZE,...")->default_str(shown);
  return opt;
}

}  // namespace resmem::cli
