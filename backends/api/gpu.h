// The GPU as the CUDA runtime offers it: devices, contexts, host registration, device memory,
// copies, streams and events. One interface for the real CUDA backend (backends/cuda) and the
// CUDA model (mock/gpu), which decides return codes from a mapping's facts and a driver profile.
// Return codes are CUDA runtime numbers in the numbering of the backend's era (Status space kCuda);
// CudaErrorName() gives their names.
#ifndef RESMEM_BACKENDS_API_GPU_H_
#define RESMEM_BACKENDS_API_GPU_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/api/memory.h"
#include "backends/api/status.h"

namespace resmem {

// cudaHostRegister flags, with the runtime's bit values.
enum RegisterFlag : uint32_t {
  kRegisterDefault = 0x0,
  kRegisterPortable = 0x1,
  kRegisterMapped = 0x2,
  kRegisterIoMemory = 0x4,
  kRegisterReadOnly = 0x8,
};
// "default", "portable", "mapped", "iomemory", "readonly"; joined with '|' when several.
std::string RegisterFlagsName(uint32_t flags);
Result<uint32_t> ParseRegisterFlag(const std::string& name);

struct DeviceAttributes {
  std::string name;
  uint64_t total_memory = 0;
  int host_register_supported = 0;
  int read_only_host_register_supported = 0;
  int pageable_memory_access = 0;
  int pageable_memory_access_uses_host_page_tables = 0;
  int async_engine_count = 0;
  int can_map_host_memory = 0;
  int pci_bus_id = -1;
};

// Memory on the device (cudaMalloc).
class DeviceBuffer {
 public:
  virtual ~DeviceBuffer() = default;
  virtual uint64_t size() const = 0;
  virtual int device() const = 0;
};

// What one copy did: how long it took on the backend's clock and which way the driver moved it.
struct CopyStats {
  uint64_t bytes = 0;
  double seconds = 0;          // measured (real) or modelled (sim)
  std::string path;            // "pinned-dma", "pageable-staged", "mapped", ...
  double GBps() const { return seconds > 0 ? bytes / seconds / 1e9 : 0; }
};

enum class CopyDirection { kHostToDevice, kDeviceToHost };

class Gpu {
 public:
  virtual ~Gpu() = default;
  virtual std::string name() const = 0;     // "sim:cuda-13.0-r580", "cuda"
  virtual std::string profile() const = 0;  // the error numbering era: "cuda-4.1-r285", "cuda-13.0-r580"

  virtual Result<int> DeviceCount() = 0;
  virtual Result<DeviceAttributes> Attributes(int device) = 0;

  // Contexts. Context 0 on device 0 exists once the backend is created; CreateContext makes
  // another (cuCtxCreate); UseContext makes one current for the calls that follow.
  virtual Result<int> CreateContext(int device) = 0;
  virtual Status UseContext(int context) = 0;
  virtual int current_context() const = 0;

  // cudaHostRegister / cudaHostUnregister of [offset, offset+length) of a host span.
  virtual Status Register(HostMemory& mem, uint64_t offset, uint64_t length, uint32_t flags) = 0;
  virtual Status Unregister(HostMemory& mem, uint64_t offset) = 0;

  // cudaMallocHost (flags: Portable/Mapped) and cudaMalloc.
  virtual Result<std::unique_ptr<HostMemory>> AllocPinned(uint64_t bytes, uint32_t flags) = 0;
  virtual Result<std::unique_ptr<DeviceBuffer>> AllocDevice(uint64_t bytes) = 0;

  // cudaMemcpy between a host span and device memory, synchronous. The driver picks its path
  // from the host memory's state (registered, pinned, pageable, mapped).
  virtual Result<CopyStats> Copy(CopyDirection dir, HostMemory& host, uint64_t host_offset,
                                 DeviceBuffer& dev, uint64_t dev_offset, uint64_t length) = 0;

  // A checksum (FNV-1a 64 of the bytes) computed on the device over [offset, offset+length):
  // proves what arrived without trusting the host side.
  virtual Result<uint64_t> DeviceChecksum(DeviceBuffer& dev, uint64_t offset, uint64_t length) = 0;
};

// "cudaErrorInvalidValue" for code 1 in profile "cuda-13.0-r580", "cudaErrorUnknown" for 30 in
// "cuda-4.1-r285"; "" when unknown. And the reverse; -1 when the name is not in that era's table.
std::string CudaErrorName(const std::string& profile, int code);
int CudaErrorFromName(const std::string& profile, const std::string& name);

// FNV-1a 64 over bytes, continuing from `seed` (the offset basis by default). Used by every
// checksum in resmem so host-side and device-side sums agree.
uint64_t Fnv1a64(const void* data, uint64_t len, uint64_t seed = 0xcbf29ce484222325ull);

}  // namespace resmem

#endif  // RESMEM_BACKENDS_API_GPU_H_
