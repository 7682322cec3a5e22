// Real parts: platform=host reads this machine's /proc and /sys.
#include "backends/platform/host_platform.h"
#include "engine/backend/backend_factory.h"

namespace resmem::engine {
namespace {

const bool kHostPlatform = RegisterPlatformPart("host", [](PartContext&) -> Result<std::unique_ptr<Platform>> {
  return MakeHostPlatform();
});

}  // namespace
}  // namespace resmem::engine
