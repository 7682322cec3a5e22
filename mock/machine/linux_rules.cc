// Kernel version -> the rules it follows (sources in linux_rules.h).
#include "mock/machine/linux_rules.h"

#include <cctype>
#include <tuple>

namespace resmem::sim {

bool LinuxRules::AtLeast(int ma, int mi, int pa, int pre) const {
  return std::tie(major, minor, patch, prerelease) >= std::tie(ma, mi, pa, pre);
}

namespace {

// The pre-release number of a version's suffix ("-test8" -> 8, "-rc3" -> 3, "-pre7" -> 7), or
// LinuxRules::kRelease for a release, whatever else follows ("-13-amd64", "+deb12").
int PrereleaseOf(const std::string& suffix) {
  for (const char* kind : {"-test", "-rc", "-pre"}) {
    const std::string k = kind;
    if (suffix.compare(0, k.size(), k) != 0 || suffix.size() == k.size() ||
        !std::isdigit(static_cast<unsigned char>(suffix[k.size()])))
      continue;
    int n = 0;
    for (size_t i = k.size(); i < suffix.size() && std::isdigit(static_cast<unsigned char>(suffix[i])) && n < 100000; ++i)
      n = n * 10 + (suffix[i] - '0');
    return n;
  }
  return LinuxRules::kRelease;
}

}  // namespace

Result<LinuxRules> LinuxRulesFor(const std::string& kernel_version, const std::string& arch) {
  LinuxRules r;
  if (!arch.empty() && arch != "x86_64" && arch != "i386")
    return Status::InvalidArgument("machine arch '" + arch +
                                   "' is not one the model knows: write \"x86_64\" (the "
                                   "default) or \"i386\" (a 32-bit kernel)");
  if (!arch.empty()) r.arch = arch;
  if (kernel_version.empty()) {
    r.version = "newest";
  } else {
    r.version = kernel_version;
    int parts[3] = {0, 0, 0};
    int n = 0;
    size_t i = 0;
    while (n < 3 && i < kernel_version.size() &&
           std::isdigit(static_cast<unsigned char>(kernel_version[i]))) {
      int v = 0;
      while (i < kernel_version.size() &&
             std::isdigit(static_cast<unsigned char>(kernel_version[i])) && v < 100000)
        v = v * 10 + (kernel_version[i++] - '0');
      parts[n++] = v;
      if (i < kernel_version.size() && kernel_version[i] == '.') ++i;
      else break;
    }
    if (n < 2)
      return Status::InvalidArgument(
          "machine kernel_version '" + kernel_version +
          "' is not a Linux version; write it as uname -r prints it, e.g. \"2.6.32\", "
          "\"4.19.0-21-amd64\", \"6.1.0\", or leave it empty for the newest rules");
    r.major = parts[0];
    r.minor = parts[1];
    r.patch = parts[2];
    r.prerelease = PrereleaseOf(kernel_version.substr(i));
  }
  r.old_print_format = !r.AtLeast(3, 5);
  r.header_e820_prefix = r.AtLeast(3, 5) && !r.AtLeast(4, 12);
  r.prints_remove = r.AtLeast(2, 6, 33);
  r.memmap_comma_list = r.AtLeast(3, 15);
  r.memparse_tpe = r.AtLeast(3, 15);
  r.stops_at_dashdash = r.AtLeast(3, 15);
  r.setup_data_after_params = r.AtLeast(3, 14);
  r.keeps_setup_data = !r.AtLeast(6, 15);
  r.memmap_pram = r.AtLeast(4, 1);
  r.memmap_retype = r.AtLeast(4, 16);
  r.soft_reserved = r.AtLeast(5, 5);
  // i386 before the unified arch/x86 e820.c (2.6.27): limit_regions, no sanitize of the user
  // map, the 2.4 mem= spellings (sources and boundaries in linux_rules.h).
  if (r.arch == "i386" && !r.AtLeast(2, 6, 27)) {
    r.sanitizes_user_map = false;
    if (!r.AtLeast(2, 5)) r.mem_limit = MemLimitRule::kI386CutAtEnd;
    else if (!r.AtLeast(2, 6, 0, /*-test*/ 8)) r.mem_limit = MemLimitRule::kI386CutAtRamSum;
    else if (!r.AtLeast(2, 6, 19)) r.mem_limit = MemLimitRule::kI386CutAtEnd;
    else r.mem_limit = MemLimitRule::kI386CutAtEndSkipPast;
    r.mem_takes_map_items = !r.AtLeast(2, 5, 66);
  }
  r.range_update_bug_line = r.AtLeast(6, 1) && !r.AtLeast(6, 13) ? 469 : 0;
  r.kstrtobool_enable_disable = r.AtLeast(6, 15);
  r.pfn_t_devmap = !r.AtLeast(6, 17);
  return r;
}

}  // namespace resmem::sim
