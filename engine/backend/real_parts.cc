// Real parts: platform=host reads this machine's /proc and /sys; region=kmod opens /dev/resmemN of
// the kernel module.
#include <glob.h>

#include "backends/kmod/kmod_region.h"
#include "backends/platform/host_platform.h"
#include "engine/backend/backend_factory.h"

namespace resmem::engine {
namespace {

const bool kHostPlatform = RegisterPlatformPart("host", [](PartContext&) -> Result<std::unique_ptr<Platform>> {
  return MakeHostPlatform();
});

// Unavailable (not an error) where no module is loaded: a run on a machine without the module
// says so by name instead of failing every step.
const bool kKmodRegion = RegisterRegionPart("kmod", [](PartContext& ctx) -> Result<std::unique_ptr<RegionProvider>> {
  const std::string pattern = ctx.options.count("kmod_devices") ? ctx.options.at("kmod_devices") : "/dev/resmem*";
  glob_t g{};
  const int rc = glob(pattern.c_str(), 0, nullptr, &g);
  const size_t n = rc == 0 ? g.gl_pathc : 0;
  globfree(&g);
  if (n == 0)
    return Status::Unavailable("no " + pattern + " device: load the module (modprobe resmem ranges=SIZE$PHYS, docs/kmod.md) "
                               "or run the QEMU lane (ci/qemu/kmod_lane.sh)");
  return MakeKmodRegionProvider(pattern);
});

}  // namespace
}  // namespace resmem::engine
