#include "engine/cli/options.h"

#include <algorithm>
#include <cstdlib>

namespace resmem::cli {

Status Options::Parse(const std::vector<std::string>& args, const std::vector<std::string>& with_value,
                      const std::vector<std::string>& flags) {
  auto known = [](const std::vector<std::string>& list, const std::string& k) {
    return std::find(list.begin(), list.end(), k) != list.end();
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0 || a == "--") {
      positional.push_back(a);
      continue;
    }
    std::string key = a, value;
    const auto eq = a.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      key = a.substr(0, eq);
      value = a.substr(eq + 1);
    }
    if (known(flags, key)) {
      if (inline_value) return Status::InvalidArgument("option " + key + " takes no value");
      values.emplace(key, "");
      continue;
    }
    if (!known(with_value, key)) {
      std::string all;
      for (const auto& k : with_value) all += " " + k + " VALUE";
      for (const auto& k : flags) all += " " + k;
      return Status::InvalidArgument("unknown option '" + key + "'; this command takes:" + all);
    }
    if (!inline_value) {
      if (i + 1 >= args.size()) return Status::InvalidArgument("option " + key + " needs a value");
      value = args[++i];
    }
    values.emplace(key, value);
  }
  return Status::Ok();
}

std::string Options::Get(const std::string& key, const std::string& dflt) const {
  auto it = values.find(key);
  return it == values.end() ? dflt : it->second;
}

std::vector<std::string> Options::GetAll(const std::string& key) const {
  std::vector<std::string> out;
  auto range = values.equal_range(key);
  for (auto it = range.first; it != range.second; ++it) out.push_back(it->second);
  return out;
}

Result<uint64_t> Options::GetU64(const std::string& key) const {
  const std::string v = Get(key, "");
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v.c_str(), &end, 0);
  if (v.empty() || *end || v[0] == '-')
    return Status::InvalidArgument("option " + key + " wants a non-negative integer, got '" + v + "'");
  return static_cast<uint64_t>(n);
}

}  // namespace resmem::cli
