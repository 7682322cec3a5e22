#include "backends/api/uapi_info.h"

#include <cstdio>
#include <cstring>

namespace resmem {

RegionInfo RegionInfoFromUapi(const resmem_info& raw, const std::string& device) {
  RegionInfo info;
  info.device = device;
  info.phys_addr = raw.phys_addr;
  info.size = raw.size;
  info.mode = raw.mode == RESMEM_MODE_PAGES ? MapMode::kPages : MapMode::kPfnmap;
  info.cache = raw.cache == RESMEM_CACHE_WC   ? CacheType::kWriteCombining
               : raw.cache == RESMEM_CACHE_UC ? CacheType::kUncached
                                              : CacheType::kWriteBack;
  info.abi_version = raw.abi_version;
  return info;
}

resmem_info UapiFromRegionInfo(const RegionInfo& info, const std::string& name, __u32 flags) {
  resmem_info raw;
  std::memset(&raw, 0, sizeof raw);
  raw.abi_version = info.abi_version;
  raw.mode = info.mode == MapMode::kPages ? RESMEM_MODE_PAGES : RESMEM_MODE_PFNMAP;
  switch (info.cache) {
    case CacheType::kWriteBack: raw.cache = RESMEM_CACHE_WB; break;
    case CacheType::kWriteCombining: raw.cache = RESMEM_CACHE_WC; break;
    case CacheType::kUncached: raw.cache = RESMEM_CACHE_UC; break;
  }
  raw.flags = flags;
  raw.phys_addr = info.phys_addr;
  raw.size = info.size;
  std::snprintf(raw.name, sizeof raw.name, "%s", name.c_str());
  return raw;
}

}  // namespace resmem
