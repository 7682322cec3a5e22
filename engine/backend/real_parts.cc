// Real parts: platform=host reads this machine's /proc and /sys; region=kmod opens /dev/resmemN of
// the kernel module.
#include <glob.h>

#include "backends/kmod/kmod_gpudirect.h"
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

// GPUDirect RDMA through the real modules (backends/kmod/kmod_gpudirect.h): the QEMU lane's
// stand-in provider and resmem_edu.ko. Opens nothing until p2p_setup, which names what is missing.
// --option p2p_provider=PATH and edu_devices=GLOB point it at other nodes.
const bool kKmodGpuDirect = RegisterGpuDirectPart("kmod", [](PartContext& ctx) -> Result<std::unique_ptr<GpuDirect>> {
  KmodGpuDirectOptions o;
  if (ctx.options.count("p2p_provider")) o.provider = ctx.options.at("p2p_provider");
  if (ctx.options.count("edu_devices")) o.edu_glob = ctx.options.at("edu_devices");
  o.seed = ctx.seed;
  return MakeKmodGpuDirect(o);
});

}  // namespace
}  // namespace resmem::engine
