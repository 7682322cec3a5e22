// The reserved-memory device: what /dev/resmemN offers. One interface for the kernel module (kmod),
// the simulated driver (sim), host stand-ins (memfd, hugetlbfs, /dev/shm, ...) and the FUSE
// emulation (fuse). Its ioctl structs are kmod/uapi/resmem_ioctl.h, shared with the kernel.
#ifndef RESMEM_BACKENDS_API_REGION_H_
#define RESMEM_BACKENDS_API_REGION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/api/memory.h"
#include "backends/api/status.h"

namespace resmem {

enum class MapMode { kPfnmap, kPages };
const char* MapModeName(MapMode m);  // "pfnmap", "pages"
std::optional<MapMode> ParseMapMode(const std::string& s);

// The cache type a device asks for when mapping (the driver's cache= parameter).
enum class CacheType { kWriteBack, kWriteCombining, kUncached };
const char* CacheTypeName(CacheType c);  // "wb", "wc", "uc"
std::optional<CacheType> ParseCacheType(const std::string& s);

struct RegionInfo {
  std::string device;        // "/dev/resmem0"
  uint64_t phys_addr = 0;    // start of the reserved range
  uint64_t size = 0;         // bytes
  MapMode mode = MapMode::kPfnmap;
  CacheType cache = CacheType::kWriteBack;
  uint32_t abi_version = 0;  // the driver's ioctl ABI version
  std::string Describe() const;
};

struct MapRequest {
  uint64_t offset = 0;   // mmap's offset argument (bytes, page aligned)
  uint64_t length = 0;   // mmap's length argument
  bool writable = true;  // PROT_WRITE
  bool shared = true;    // MAP_SHARED (MAP_PRIVATE otherwise)
};

// An open device (an fd).
class RegionHandle {
 public:
  virtual ~RegionHandle() = default;
  virtual Result<RegionInfo> Info() = 0;
  // mmap(2). The returned memory is unmapped when destroyed.
  virtual Result<std::unique_ptr<HostMemory>> Map(const MapRequest& request) = 0;
  // A raw ioctl, for bad-input tests: cmd and an in/out argument buffer.
  virtual Status Ioctl(unsigned long cmd, void* arg) = 0;
};

struct OpenRequest {
  std::string path;     // "/dev/resmem0"; empty means the first device
  bool sync = false;    // O_SYNC
  bool writable = true; // O_RDWR (else O_RDONLY)
};

class RegionProvider {
 public:
  virtual ~RegionProvider() = default;
  virtual std::string name() const = 0;  // "sim", "kmod", "memfd", "fuse", ...
  // Device paths this provider offers ("/dev/resmem0", ...).
  virtual Result<std::vector<std::string>> List() = 0;
  virtual Result<std::unique_ptr<RegionHandle>> Open(const OpenRequest& request) = 0;
};

}  // namespace resmem

#endif  // RESMEM_BACKENDS_API_REGION_H_
