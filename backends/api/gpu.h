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
  // cudaHostAllocWriteCombined, for AllocPinned only. The runtime's bit is 0x04, the same as
  // cudaHostRegisterIoMemory's, so one flag word cannot carry both: resmem gives it a bit of its
  // own and the CUDA backend passes cudaHostAllocWriteCombined. To cudaHostRegister it is an
  // unknown flag.
  kAllocWriteCombined = 0x100,
};
// cudaSetDeviceFlags / CU_CTX_* flags the model knows.
enum DeviceFlag : uint32_t {
  kDeviceMapHost = 0x08,  // cudaDeviceMapHost, CU_CTX_MAP_HOST
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

// The device twin of CheckSpan (memory.h): InvalidArgument unless [offset, +len) lies inside
// `dev`, naming the offset, the length and the buffer's size, after `what` ("transfer", "staged
// queue"). The staged copies check it before they queue any DMA, so none of a copy past the
// buffer's end runs.
Status CheckDeviceSpan(const DeviceBuffer& dev, uint64_t offset, uint64_t len, const char* what);

// What one copy did: how long it took on the backend's clock and which way the driver moved it.
struct CopyStats {
  uint64_t bytes = 0;
  double seconds = 0;          // measured (real) or modelled (sim)
  std::string path;            // "pinned-dma", "pageable-staged", "mapped", ...
  double GBps() const { return seconds > 0 ? bytes / seconds / 1e9 : 0; }
};

enum class CopyDirection { kHostToDevice, kDeviceToHost };

// Copy and kernel overlapped on streams (seed 001, "async copies"): `blocks` blocks of
// `block_size` bytes go from host memory [host_offset, ...) (wrapping round the span) to device
// memory (two slots of block_size, so the device buffer holds at least 2 blocks), and after each
// block's copy a kernel reads that slot and then keeps its SMs for kernel_us microseconds in all.
// streams = 1: copy and kernel of every block in one stream, one after another; streams = 2: block i
// on stream i % 2, so the copy of block i+1 can run while block i's kernel does.
struct PipelineSpec {
  uint64_t host_offset = 0;
  uint64_t block_size = 0;
  int blocks = 0;
  int streams = 1;
  double kernel_us = 0;
};
struct PipelineStats {
  uint64_t bytes = 0;
  double seconds = 0;         // first copy issued to last kernel finished
  double copy_seconds = 0;    // one block's copy alone (measured or modelled)
  double kernel_seconds = 0;  // one block's kernel alone
  std::string path;           // "overlapped (2 streams)", "serial (1 stream)", "serial (...)"
  // seconds / (blocks x (copy + kernel)): 1 with no overlap, about max/sum with full overlap.
  double ratio_to_serial = 0;
};

// What cuMemGetHandleForAddressRange(CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD) gave for a range.
struct DmaBufExport {
  uint64_t size = 0;  // lseek(fd, 0, SEEK_END) of the dma-buf fd (closed again by the backend)
};

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

  // ---- seed 001 (page-locked memory: mapped, write-combined, streams) and dma-buf. Backends
  // without them answer Unsupported. ----
  // cudaSetDeviceFlags(flags) on the current device (DeviceFlag bits).
  virtual Status SetDeviceFlags(uint32_t flags);
  // A context made the driver API's way (cuCtxCreate) with CU_CTX_* flags (DeviceFlag bits):
  // without kDeviceMapHost it cannot map pinned memory (cuda_runtime_api.h, cudaDeviceMapHost:
  // "may be absent if a context is created using the driver API"). CreateContext(d) is this
  // with flags 0.
  virtual Result<int> CreateContextWithFlags(int device, uint32_t flags);
  // Zero-copy: a kernel moves the bytes through the device pointer cudaHostGetDevicePointer
  // gives for pinned or registered host memory (path "zero-copy-mapped").
  virtual Result<CopyStats> CopyMapped(CopyDirection dir, HostMemory& host, uint64_t host_offset,
                                       DeviceBuffer& dev, uint64_t dev_offset, uint64_t length);
  // Copy H2D and kernel per block, on one or two streams (PipelineSpec).
  virtual Result<PipelineStats> CopyKernelPipeline(HostMemory& host, DeviceBuffer& dev,
                                                   const PipelineSpec& spec);
  // cuMemGetHandleForAddressRange(DMA_BUF_FD) on [offset, offset+length) of a device buffer, or
  // of host memory (ExportDmaBufHost). Errors carry the CUresult number (1 invalid value, 801
  // not supported: the same numbers as the runtime's).
  virtual Result<DmaBufExport> ExportDmaBuf(DeviceBuffer& dev, uint64_t offset, uint64_t length);
  // Device memory made the VMM way (cuMemCreate, cuMemAddressReserve, cuMemMap, cuMemSetAccess),
  // `bytes` rounded up to the allocation granularity; rdma_capable sets the allocation's
  // gpuDirectRDMACapable flag. ExportDmaBuf takes it like a cudaMalloc buffer.
  virtual Result<std::unique_ptr<DeviceBuffer>> AllocDeviceVmm(uint64_t bytes, bool rdma_capable);
  virtual Result<DmaBufExport> ExportDmaBufHost(HostMemory& host, uint64_t offset,
                                                uint64_t length);
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
