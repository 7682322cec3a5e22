// A small option parser for the subcommands: "--key value", "--key=value", flags, positionals.
// Unknown options are refused by name.
#ifndef RESMEM_ENGINE_CLI_OPTIONS_H_
#define RESMEM_ENGINE_CLI_OPTIONS_H_

#include <map>
#include <string>
#include <vector>

#include "backends/api/status.h"

namespace resmem::cli {

struct Options {
  std::multimap<std::string, std::string> values;
  std::vector<std::string> positional;

  Status Parse(const std::vector<std::string>& args, const std::vector<std::string>& with_value,
               const std::vector<std::string>& flags);
  bool Has(const std::string& key) const { return values.count(key) > 0; }
  std::string Get(const std::string& key, const std::string& dflt) const;
  std::vector<std::string> GetAll(const std::string& key) const;
  Result<uint64_t> GetU64(const std::string& key) const;
};

}  // namespace resmem::cli

#endif  // RESMEM_ENGINE_CLI_OPTIONS_H_
