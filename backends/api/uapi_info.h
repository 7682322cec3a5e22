// Conversion between the ioctl ABI's struct resmem_info (kmod/uapi/resmem_ioctl.h) and RegionInfo,
// shared by every side that speaks the ABI: the kmod and fuse Region backends read it, the
// simulated driver and the FUSE daemon answer with it.
#ifndef RESMEM_BACKENDS_API_UAPI_INFO_H_
#define RESMEM_BACKENDS_API_UAPI_INFO_H_

#include <string>

#include "backends/api/region.h"
#include "kmod/uapi/resmem_ioctl.h"

namespace resmem {

// `device` is the path the caller opened ("/dev/resmem0"); unknown mode/cache values read as
// pfnmap/wb, the ABI's zero values.
RegionInfo RegionInfoFromUapi(const resmem_info& raw, const std::string& device);
// `name` is the device's short name ("resmem0"), truncated to fit; flags are the caller's.
resmem_info UapiFromRegionInfo(const RegionInfo& info, const std::string& name, __u32 flags = 0);

}  // namespace resmem

#endif  // RESMEM_BACKENDS_API_UAPI_INFO_H_
