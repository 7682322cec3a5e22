#include "engine/cli/values.h"

#include <cerrno>
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

CLI::Validator NonNegativeInteger() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        errno = 0;
        std::strtoull(text.c_str(), &end, 0);
        if (text.empty() || text[0] == '-' || *end != '\0' || errno == ERANGE)
          return "'" + text + "' is not a whole number of 0 or more";
        return std::string();
      },
      "", "N");
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
