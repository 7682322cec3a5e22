#include "backends/cuda/cuda_gpu.h"

#include <cuda.h>  // driver API types only; the functions are reached through entry points
#include <cuda_runtime_api.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <type_traits>
#include <chrono>
#include <thread>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "backends/cuda/kernels.h"
#include "backends/api/memory.h"

namespace resmem::cuda {
namespace {

using CtxSetCurrentFn = CUresult (*)(CUcontext);
using CtxGetCurrentFn = CUresult (*)(CUcontext*);
using CtxCreateFn = CUresult (*)(CUcontext*, CUctxCreateParams*, unsigned int, CUdevice);
using GetHandleForRangeFn = CUresult (*)(void*, CUdeviceptr, size_t, CUmemRangeHandleType,
                                         unsigned long long);

// A failed runtime call: clear the (non-sticky) error and return it as a value.
Status CudaError(cudaError_t err, const std::string& call) {
  cudaGetLastError();
  return Status::Cuda(static_cast<int>(err), call + " -> " + CudaCodeText(static_cast<int>(err)));
}

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class CudaBuffer : public DeviceBuffer {
 public:
  // `release` frees the memory (cudaFree when none is given: a cudaMalloc buffer).
  CudaBuffer(void* p, uint64_t size, int device, std::function<void()> release = nullptr)
      : p_(p), size_(size), device_(device), release_(std::move(release)) {}
  ~CudaBuffer() override {
    if (release_)
      release_();
    else
      cudaFree(p_);
  }
  uint64_t size() const override { return size_; }
  int device() const override { return device_; }
  uint8_t* ptr() { return static_cast<uint8_t*>(p_); }

 private:
  void* p_;
  uint64_t size_;
  int device_;
  std::function<void()> release_;
};

class PinnedMemory : public HostMemory {
 public:
  PinnedMemory(void* p, uint64_t size, MappingFacts facts)
      : p_(static_cast<uint8_t*>(p)), size_(size), facts_(std::move(facts)) {}
  ~PinnedMemory() override { cudaFreeHost(p_); }
  uint64_t size() const override { return size_; }
  const MappingFacts& facts() const override { return facts_; }
  uint64_t address() const override { return reinterpret_cast<uint64_t>(p_); }
  uint8_t* data() override { return p_; }
  Status Read(uint64_t offset, void* out, uint64_t len) override {
    RESMEM_RETURN_IF_ERROR(CheckSpan(*this, offset, len, "read"));
    std::memcpy(out, p_ + offset, len);
    return Status::Ok();
  }
  Status Write(uint64_t offset, const void* in, uint64_t len) override {
    RESMEM_RETURN_IF_ERROR(CheckSpan(*this, offset, len, "write"));
    std::memcpy(p_ + offset, in, len);
    return Status::Ok();
  }
  std::string Describe() const override {
    return "cudaHostAlloc " + FormatSize(size_) + " at " + HexAddress(address());
  }

 private:
  uint8_t* p_;
  uint64_t size_;
  MappingFacts facts_;
};

// A range past the span or buffer it names is refused before CUDA sees it (what lies beyond may
// be other memory of this process, which CUDA would copy or pin), with the answer CUDA itself
// gives for a range past an allocation or a mapping. Measured on the H200 (r580, CUDA 13.0,
// 2026-12-01, docs/hil/2026-12-01-h200-ranges): cudaMemcpy, cudaMemcpyAsync and cudaMemset of
// 4 MiB at +2 MiB of a 4 MiB allocation -> 1 cudaErrorInvalidValue, also with a second allocation
// right after it; cudaHostRegister over 64 KiB mapped and 64 KiB unmapped -> 1. The simulator
// answers the same (mock/gpu/sim_gpu.cc, Checked).
Status PastTheEnd(const Status& range) {
  return Status::Cuda(static_cast<int>(cudaErrorInvalidValue),
                      range.message() + " -> 1 cudaErrorInvalidValue (CUDA's answer for a range "
                                        "past an allocation)");
}

Result<uint8_t*> HostPointer(HostMemory& host, uint64_t offset, uint64_t length, const char* what) {
  if (Status st = CheckSpan(host, offset, length, what); !st.ok()) return PastTheEnd(st);
  if (host.data() == nullptr)
    return Status::InvalidArgument(std::string(what) + ": " + host.Describe() +
                                   " is not addressable in this process (a simulated span); "
                                   "use the sim Gpu with simulated memory");
  return host.data() + offset;
}

Result<CudaBuffer*> AsCuda(DeviceBuffer& dev, uint64_t offset, uint64_t length, const char* what) {
  auto* b = dynamic_cast<CudaBuffer*>(&dev);
  if (b == nullptr)
    return Status::InvalidArgument(std::string(what) +
                                   ": device buffer was not allocated by the CUDA backend");
  if (Status st = CheckDeviceSpan(*b, offset, length, what); !st.ok()) return PastTheEnd(st);
  return b;
}

}  // namespace

std::string CudaCodeText(int code) {
  const char* name = cudaGetErrorName(static_cast<cudaError_t>(code));
  return std::to_string(code) + " " + (name ? name : "?");
}

Result<std::unique_ptr<CudaGpu>> CudaGpu::Create(int device) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    cudaGetLastError();
    return Status::Unavailable(
        "no GPU: cudaGetDeviceCount -> " +
        (err != cudaSuccess ? CudaCodeText(err) : std::string("0 devices")) +
        "; run on a machine with an NVIDIA GPU and driver, or use --backend sim");
  }
  if (device < 0 || device >= count)
    return Status::InvalidArgument("device " + std::to_string(device) + " does not exist: " +
                                   std::to_string(count) + " device(s) here");
  std::unique_ptr<CudaGpu> gpu(new CudaGpu());
  gpu->device_ = device;
  int driver = 0;
  cudaDriverGetVersion(&driver);
  // The error numbering has been CUDA 13's since CUDA 10 (driver_types.h); the era name follows
  // the measured profile for r580 drivers (FACTS.md), else names the driver's CUDA version.
  char era[64];
  std::snprintf(era, sizeof era, "cuda-%d.%d%s", driver / 1000, (driver % 1000) / 10,
                driver >= 13000 ? "-r580" : "");
  gpu->profile_ = era;
  if ((err = cudaSetDevice(device)) != cudaSuccess) return CudaError(err, "cudaSetDevice");
  if ((err = cudaFree(nullptr)) != cudaSuccess) return CudaError(err, "cudaFree(0) (init)");
  cudaDriverEntryPointQueryResult q;
  cudaGetDriverEntryPointByVersion("cuCtxSetCurrent", &gpu->fn_ctx_set_current_, 4000,
                                   cudaEnableDefault, &q);
  cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &gpu->fn_ctx_get_current_, 4000,
                                   cudaEnableDefault, &q);
  cudaGetDriverEntryPointByVersion("cuCtxCreate", &gpu->fn_ctx_create_, 12050,
                                   cudaEnableDefault, &q);
  cudaGetDriverEntryPointByVersion("cuMemGetHandleForAddressRange",
                                   &gpu->fn_get_handle_for_range_, 11070, cudaEnableDefault, &q);
  cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", &gpu->fn_wait_value32_, 12000,
                                   cudaEnableDefault, &q);
  cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", &gpu->fn_write_value32_, 12000,
                                   cudaEnableDefault, &q);
  cudaGetLastError();
  CUcontext primary = nullptr;
  if (gpu->fn_ctx_get_current_)
    reinterpret_cast<CtxGetCurrentFn>(gpu->fn_ctx_get_current_)(&primary);
  gpu->contexts_.push_back(primary);
  gpu->context_device_.push_back(device);
  return gpu;
}

CudaGpu::~CudaGpu() = default;  // contexts die with the process; buffers free themselves

FaultOutcome CudaGpu::CheckFault(const char* point, uint64_t address, uint64_t length) {
  if (!faults_) return FaultOutcome();
  FaultOutcome o = faults_->Check(point, address, length);
  if (o.fired && o.effect == FaultEffect::kDelay)
    std::this_thread::sleep_for(std::chrono::duration<double>(o.delay_seconds));
  return o;
}

namespace {
bool IsErrorFault(const FaultOutcome& o) {
  return o.fired && (o.effect == FaultEffect::kError || o.effect == FaultEffect::kSignal);
}
}  // namespace

Status CudaGpu::BindThread() {
  int c = current_.load();
  void* ctx = contexts_[c];
  if (fn_ctx_set_current_ && ctx) {
    CUresult r = reinterpret_cast<CtxSetCurrentFn>(fn_ctx_set_current_)(static_cast<CUcontext>(ctx));
    if (r != CUDA_SUCCESS)
      return Status::Cuda(static_cast<int>(r), "cuCtxSetCurrent(context " + std::to_string(c) +
                                                   ") -> " + std::to_string(r));
    return Status::Ok();
  }
  cudaError_t err = cudaSetDevice(context_device_[c]);
  return err == cudaSuccess ? Status::Ok() : CudaError(err, "cudaSetDevice");
}

Result<int> CudaGpu::DeviceCount() {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) return CudaError(err, "cudaGetDeviceCount");
  return count;
}

Result<DeviceAttributes> CudaGpu::Attributes(int device) {
  cudaDeviceProp prop;
  cudaError_t err = cudaGetDeviceProperties(&prop, device);
  if (err != cudaSuccess) return CudaError(err, "cudaGetDeviceProperties(" + std::to_string(device) + ")");
  DeviceAttributes a;
  a.name = prop.name;
  a.total_memory = prop.totalGlobalMem;
  auto attr = [&](cudaDeviceAttr which, int* out) { cudaDeviceGetAttribute(out, which, device); };
  attr(cudaDevAttrHostRegisterSupported, &a.host_register_supported);
  attr(cudaDevAttrHostRegisterReadOnlySupported, &a.read_only_host_register_supported);
  attr(cudaDevAttrPageableMemoryAccess, &a.pageable_memory_access);
  attr(cudaDevAttrPageableMemoryAccessUsesHostPageTables,
       &a.pageable_memory_access_uses_host_page_tables);
  attr(cudaDevAttrAsyncEngineCount, &a.async_engine_count);
  attr(cudaDevAttrCanMapHostMemory, &a.can_map_host_memory);
  attr(cudaDevAttrPciBusId, &a.pci_bus_id);
  cudaGetLastError();
  return a;
}

Result<int> CudaGpu::CreateContext(int device) { return CreateContextWithFlags(device, 0); }

Result<int> CudaGpu::CreateContextWithFlags(int device, uint32_t flags) {
  if (!fn_ctx_create_)
    return Status::Unsupported("cuCtxCreate is not offered by this driver's entry points");
  CUcontext ctx = nullptr;
  const unsigned ctx_flags = (flags & kDeviceMapHost) ? unsigned{CU_CTX_MAP_HOST} : 0u;
  CUresult r = reinterpret_cast<CtxCreateFn>(fn_ctx_create_)(&ctx, nullptr, ctx_flags, device);
  if (r != CUDA_SUCCESS)
    return Status::Cuda(static_cast<int>(r), "cuCtxCreate(device " + std::to_string(device) +
                                                 ", flags " + HexAddress(ctx_flags) + ") -> " +
                                                 std::to_string(r));
  std::lock_guard<std::mutex> l(mu_);
  contexts_.push_back(ctx);
  context_device_.push_back(device);
  int id = static_cast<int>(contexts_.size()) - 1;
  // cuCtxCreate made the new context current on this thread; put ours back.
  RESMEM_RETURN_IF_ERROR(BindThread());
  return id;
}

Status CudaGpu::UseContext(int context) {
  if (context < 0 || context >= static_cast<int>(contexts_.size()))
    return Status::InvalidArgument("no context " + std::to_string(context) + ": " +
                                   std::to_string(contexts_.size()) + " exist (CreateContext first)");
  current_.store(context);
  return BindThread();
}

Status CudaGpu::Register(HostMemory& mem, uint64_t offset, uint64_t length, uint32_t flags) {
  RESMEM_RETURN_IF_ERROR(BindThread());
  RESMEM_ASSIGN_OR_RETURN(uint8_t* p, HostPointer(mem, offset, length, "cudaHostRegister"));
  if (FaultOutcome f = CheckFault("gpu.register", reinterpret_cast<uint64_t>(p), length);
      IsErrorFault(f))
    return f.status;
  cudaError_t err = cudaHostRegister(p, length, flags);
  if (err != cudaSuccess)
    return CudaError(err, "cudaHostRegister(" + HexAddress(reinterpret_cast<uint64_t>(p)) + ", " +
                              FormatSize(length) + ", " + RegisterFlagsName(flags) + ")");
  return Status::Ok();
}

Status CudaGpu::Unregister(HostMemory& mem, uint64_t offset) {
  RESMEM_RETURN_IF_ERROR(BindThread());
  uint8_t* p = mem.data() ? mem.data() + offset : nullptr;
  if (FaultOutcome f = CheckFault("gpu.unregister", reinterpret_cast<uint64_t>(p), 0);
      IsErrorFault(f))
    return f.status;
  cudaError_t err = cudaHostUnregister(p);
  if (err != cudaSuccess)
    return CudaError(err, "cudaHostUnregister(" + HexAddress(reinterpret_cast<uint64_t>(p)) + ")");
  return Status::Ok();
}

Result<std::unique_ptr<HostMemory>> CudaGpu::AllocPinned(uint64_t bytes, uint32_t flags) {
  RESMEM_RETURN_IF_ERROR(BindThread());
  if (FaultOutcome f = CheckFault("gpu.alloc", 0, bytes); IsErrorFault(f)) return f.status;
  void* p = nullptr;
  unsigned alloc_flags = (flags & kRegisterPortable ? cudaHostAllocPortable : 0) |
                         (flags & kRegisterMapped ? cudaHostAllocMapped : 0) |
                         (flags & kAllocWriteCombined ? cudaHostAllocWriteCombined : 0);
  cudaError_t err = cudaHostAlloc(&p, bytes, alloc_flags);
  if (err != cudaSuccess)
    return CudaError(err, "cudaHostAlloc(" + FormatSize(bytes) + ", " + RegisterFlagsName(flags) + ")");
  MappingFacts f;
  f.length = bytes;
  f.shared = true;
  f.backing = Backing::kPinnedHost;
  f.pinned = true;
  f.locked = true;
  f.pinned_context = current_.load();
  f.portable = flags & kRegisterPortable;
  f.memory_type = flags & kAllocWriteCombined ? MemoryType::kWriteCombining : MemoryType::kWriteBack;
  f.origin = "cudaHostAlloc";
  return std::unique_ptr<HostMemory>(new PinnedMemory(p, bytes, f));
}

Result<std::unique_ptr<DeviceBuffer>> CudaGpu::AllocDevice(uint64_t bytes) {
  RESMEM_RETURN_IF_ERROR(BindThread());
  if (FaultOutcome f = CheckFault("gpu.alloc", 0, bytes); IsErrorFault(f)) return f.status;
  void* p = nullptr;
  cudaError_t err = cudaMalloc(&p, bytes);
  if (err != cudaSuccess) return CudaError(err, "cudaMalloc(" + FormatSize(bytes) + ")");
  return std::unique_ptr<DeviceBuffer>(new CudaBuffer(p, bytes, context_device_[current_.load()]));
}

Result<CopyStats> CudaGpu::Copy(CopyDirection dir, HostMemory& host, uint64_t host_offset,
                                DeviceBuffer& dev, uint64_t dev_offset, uint64_t length) {
  RESMEM_RETURN_IF_ERROR(BindThread());
  RESMEM_ASSIGN_OR_RETURN(uint8_t* h, HostPointer(host, host_offset, length, "cudaMemcpy"));
  RESMEM_ASSIGN_OR_RETURN(CudaBuffer* b, AsCuda(dev, dev_offset, length, "cudaMemcpy"));
  cudaPointerAttributes attrs;
  bool pinned = cudaPointerGetAttributes(&attrs, h) == cudaSuccess &&
                attrs.type == cudaMemoryTypeHost;
  cudaGetLastError();
  FaultOutcome fault = CheckFault("gpu.copy", reinterpret_cast<uint64_t>(h), length);
  if (IsErrorFault(fault)) return fault.status;
  const uint64_t requested = length;
  if (fault.fired && fault.effect == FaultEffect::kShortCopy)
    length = std::min(length, fault.short_length);
  double t0 = Now();
  cudaError_t err =
      dir == CopyDirection::kHostToDevice
          ? cudaMemcpyAsync(b->ptr() + dev_offset, h, length, cudaMemcpyHostToDevice,
                            cudaStreamPerThread)
          : cudaMemcpyAsync(h, b->ptr() + dev_offset, length, cudaMemcpyDeviceToHost,
                            cudaStreamPerThread);
  if (err == cudaSuccess) err = cudaStreamSynchronize(cudaStreamPerThread);
  double t1 = Now();
  if (err != cudaSuccess)
    return CudaError(err, std::string("cudaMemcpyAsync ") +
                              (dir == CopyDirection::kHostToDevice ? "H2D " : "D2H ") +
                              FormatSize(length));
  if (fault.fired && fault.effect == FaultEffect::kCorrupt && fault.corrupt_offset < length) {
    // Flip the byte where it landed: in device memory for H2D, in the host span for D2H.
    if (dir == CopyDirection::kHostToDevice) {
      uint8_t byte = h[fault.corrupt_offset] ^ fault.corrupt_xor;
      cudaMemcpy(b->ptr() + dev_offset + fault.corrupt_offset, &byte, 1, cudaMemcpyHostToDevice);
    } else {
      h[fault.corrupt_offset] ^= fault.corrupt_xor;
    }
  }
  CopyStats s;
  s.bytes = length;
  s.seconds = t1 - t0;
  s.path = pinned ? "pinned-dma" : "pageable-staged";
  if (length < requested) s.path += " (short copy: " + std::to_string(length) + " of " +
                                    std::to_string(requested) + " bytes)";
  return s;
}

Result<CudaGpu::CopyTicket> CudaGpu::CopyAsync(CopyDirection dir, HostMemory& host,
                                             uint64_t host_offset, DeviceBuffer& dev,
                                             uint64_t dev_offset, uint64_t length) {
  RESMEM_RETURN_IF_ERROR(BindThread());
  RESMEM_ASSIGN_OR_RETURN(uint8_t* h, HostPointer(host, host_offset, length, "cudaMemcpyAsync"));
  RESMEM_ASSIGN_OR_RETURN(CudaBuffer* b, AsCuda(dev, dev_offset, length, "cudaMemcpyAsync"));
  cudaError_t err =
      dir == CopyDirection::kHostToDevice
          ? cudaMemcpyAsync(b->ptr() + dev_offset, h, length, cudaMemcpyHostToDevice,
                            cudaStreamPerThread)
          : cudaMemcpyAsync(h, b->ptr() + dev_offset, length, cudaMemcpyDeviceToHost,
                            cudaStreamPerThread);
  if (err != cudaSuccess) return CudaError(err, "cudaMemcpyAsync " + FormatSize(length));
  cudaEvent_t ev = nullptr;
  if ((err = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming)) != cudaSuccess)
    return CudaError(err, "cudaEventCreate");
  if ((err = cudaEventRecord(ev, cudaStreamPerThread)) != cudaSuccess) {
    cudaEventDestroy(ev);
    return CudaError(err, "cudaEventRecord");
  }
  CopyTicket t;
  t.event = ev;
  return t;
}

Status CudaGpu::Wait(CopyTicket& ticket) {
  if (!ticket.event) return Status::InvalidArgument("Wait on an empty copy ticket");
  cudaEvent_t ev = static_cast<cudaEvent_t>(ticket.event);
  cudaError_t err = cudaEventSynchronize(ev);
  cudaEventDestroy(ev);
  ticket.event = nullptr;
  return err == cudaSuccess ? Status::Ok() : CudaError(err, "cudaEventSynchronize (async copy)");
}

Result<CudaGpu::CopyTicket> CudaGpu::NewTicket() {
  RESMEM_RETURN_IF_ERROR(BindThread());
  cudaEvent_t ev = nullptr;
  cudaError_t err = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
  if (err != cudaSuccess) return CudaError(err, "cudaEventCreate (reusable copy ticket)");
  CopyTicket t;
  t.event = ev;
  return t;
}

Status CudaGpu::CopyAsyncInto(CopyTicket& ticket, CopyDirection dir, HostMemory& host,
                              uint64_t host_offset, DeviceBuffer& dev, uint64_t dev_offset,
                              uint64_t length, int stream) {
  if (!ticket.event) return Status::InvalidArgument("CopyAsyncInto needs a ticket from NewTicket");
  RESMEM_RETURN_IF_ERROR(BindThread());
  RESMEM_RETURN_IF_ERROR(EnqueueCopy(dir, host, host_offset, dev, dev_offset, length, stream));
  cudaError_t err = cudaEventRecord(static_cast<cudaEvent_t>(ticket.event),
                                    static_cast<cudaStream_t>(StreamOf(stream)));
  return err == cudaSuccess ? Status::Ok() : CudaError(err, "cudaEventRecord (copy ticket)");
}

Status CudaGpu::WaitKeep(const CopyTicket& ticket) {
  if (!ticket.event) return Status::InvalidArgument("WaitKeep on an empty copy ticket");
  cudaError_t err = cudaEventSynchronize(static_cast<cudaEvent_t>(ticket.event));
  return err == cudaSuccess ? Status::Ok() : CudaError(err, "cudaEventSynchronize (async copy)");
}

Result<CudaGpu::Signals> CudaGpu::NewSignals(int count) {
  if (!fn_wait_value32_ || !fn_write_value32_)
    return Status::Unsupported(
        "this driver gives no cuStreamWaitValue32/cuStreamWriteValue32 (stream memory "
        "operations, CUDA 12.0+): the staged path polls events instead");
  if (count <= 0) return Status::InvalidArgument("NewSignals needs a count > 0");
  RESMEM_RETURN_IF_ERROR(BindThread());
  void* p = nullptr;
  cudaError_t err = cudaHostAlloc(&p, static_cast<size_t>(count) * sizeof(uint32_t),
                                  cudaHostAllocMapped | cudaHostAllocPortable);
  if (err != cudaSuccess) return CudaError(err, "cudaHostAlloc (stream signals)");
  void* d = nullptr;
  if ((err = cudaHostGetDevicePointer(&d, p, 0)) != cudaSuccess) {
    cudaFreeHost(p);
    return CudaError(err, "cudaHostGetDevicePointer (stream signals)");
  }
  std::memset(p, 0, static_cast<size_t>(count) * sizeof(uint32_t));
  Signals s;
  s.host = static_cast<volatile uint32_t*>(p);
  s.device = reinterpret_cast<uint64_t>(d);
  s.count = count;
  return s;
}

void CudaGpu::FreeSignals(Signals& s) {
  if (s.host) cudaFreeHost(const_cast<uint32_t*>(s.host));
  s = Signals();
}

namespace {
using StreamValue32Fn = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
// The per-thread default stream, as cudaStreamPerThread names it to the runtime.
CUstream PerThreadStream() { return CU_STREAM_PER_THREAD; }
}  // namespace

Status CudaGpu::WaitSignalAsync(const Signals& s, int index, uint32_t value) {
  if (index < 0 || index >= s.count) return Status::InvalidArgument("signal index out of range");
  CUresult r = reinterpret_cast<StreamValue32Fn>(fn_wait_value32_)(
      PerThreadStream(), s.device + 4ull * index, value, CU_STREAM_WAIT_VALUE_GEQ);
  if (r != CUDA_SUCCESS)
    return Status::Internal("cuStreamWaitValue32 -> CUresult " + std::to_string(r));
  return Status::Ok();
}

Status CudaGpu::SetSignalAsync(const Signals& s, int index, uint32_t value) {
  if (index < 0 || index >= s.count) return Status::InvalidArgument("signal index out of range");
  CUresult r = reinterpret_cast<StreamValue32Fn>(fn_write_value32_)(
      PerThreadStream(), s.device + 4ull * index, value, CU_STREAM_WRITE_VALUE_DEFAULT);
  if (r != CUDA_SUCCESS)
    return Status::Internal("cuStreamWriteValue32 -> CUresult " + std::to_string(r));
  return Status::Ok();
}

Result<CudaGpu::PieceRing> CudaGpu::NewPieceRing(uint64_t piece, uint32_t slots, int blocks) {
  if (piece == 0 || piece % 4096 || slots == 0 || blocks < 1)
    return Status::InvalidArgument(
        "NewPieceRing needs a piece of a multiple of 4 KiB, >= 1 slot and >= 1 block (got piece " +
        std::to_string(piece) + ", " + std::to_string(slots) + " slots, " + std::to_string(blocks) +
        " blocks)");
  RESMEM_RETURN_IF_ERROR(BindThread());
  PieceRing r;
  r.piece = piece;
  r.slots = slots;
  RESMEM_ASSIGN_OR_RETURN(r.ring, AllocPinned(piece * slots, kRegisterMapped | kRegisterPortable));
  cudaError_t err = cudaSuccess;
  auto words = NewSignals((2 * static_cast<int>(slots) + 6) * static_cast<int>(kWordStride));
  if (!words.ok()) {
    r.ring.reset();
    return words.status();
  }
  r.words = *words;
  // [0] finished blocks, [1] the last kernel's leader base, [2] its verdict (kernels.h).
  if ((err = cudaMalloc(&r.blocks_done, 3 * sizeof(unsigned int))) != cudaSuccess ||
      (err = cudaMemset(r.blocks_done, 0, 3 * sizeof(unsigned int))) != cudaSuccess) {
    FreePieceRing(r);
    return CudaError(err, "cudaMalloc (piece ring counter)");
  }
  int device = 0;
  if ((err = cudaHostGetDevicePointer(&r.ring_device, r.ring->data(), 0)) != cudaSuccess) {
    FreePieceRing(r);
    return CudaError(err, "cudaHostGetDevicePointer (piece ring)");
  }
  if ((err = cudaGetDevice(&device)) != cudaSuccess ||
      (err = cudaDeviceGetAttribute(&r.sms, cudaDevAttrMultiProcessorCount, device)) != cudaSuccess) {
    FreePieceRing(r);
    return CudaError(err, "cudaDeviceGetAttribute (multiprocessors, piece ring)");
  }
  r.blocks = std::min(blocks, r.sms);
  int least = 0, greatest = 0;
  cudaStream_t stream = nullptr;
  if ((err = cudaDeviceGetStreamPriorityRange(&least, &greatest)) != cudaSuccess ||
      (err = cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, greatest)) != cudaSuccess) {
    FreePieceRing(r);
    return CudaError(err, "cudaStreamCreateWithPriority (piece ring)");
  }
  r.stream = stream;
  return r;
}

void CudaGpu::FreePieceRing(PieceRing& r) {
  if (r.stream) {
    cudaStreamSynchronize(static_cast<cudaStream_t>(r.stream));
    cudaStreamDestroy(static_cast<cudaStream_t>(r.stream));
  }
  if (r.blocks_done) cudaFree(r.blocks_done);
  FreeSignals(r.words);
  r = PieceRing();
}

Status CudaGpu::LaunchPieceCopy(PieceRing& r, CopyDirection dir, DeviceBuffer& dev,
                                uint64_t dev_offset, uint64_t length, uint32_t base) {
  if (!r.ring || !r.blocks_done || !r.stream)
    return Status::InvalidArgument("LaunchPieceCopy needs a ring from NewPieceRing");
  RESMEM_RETURN_IF_ERROR(BindThread());
  RESMEM_ASSIGN_OR_RETURN(CudaBuffer* b, AsCuda(dev, dev_offset, length, "piece copy"));
  if (faults_) {
    FaultOutcome fault = CheckFault("gpu.copy", reinterpret_cast<uint64_t>(r.ring->data()), length);
    if (IsErrorFault(fault)) return fault.status;
  }
  const uint32_t s = r.slots;
  r.words.host[(2 * s + 1) * kWordStride] = base ^ 0x80000000u;  // not abandoned
  PieceCopyArgs a;
  a.dev = b->ptr() + dev_offset;
  a.ring = static_cast<uint8_t*>(r.ring_device);
  a.blocks = r.blocks;
  a.length = length;
  a.piece = r.piece;
  a.slots = s;
  a.base = base;
  a.h2d = dir == CopyDirection::kHostToDevice;
  auto* words = reinterpret_cast<volatile uint32_t*>(r.words.device);
  a.cpu_words = words;
  a.gpu_words = words + s * kWordStride;
  a.done_word = words + 2 * s * kWordStride;
  a.started_word = words + (2 * s + 3) * kWordStride;
  a.intent_word = words + (2 * s + 4) * kWordStride;
  a.verdict_word = words + (2 * s + 5) * kWordStride;
  a.blocks_done = static_cast<unsigned int*>(r.blocks_done);
  a.leader = a.blocks_done + 1;
  a.verdict = a.blocks_done + 2;
  cudaError_t err = static_cast<cudaError_t>(cuda::LaunchPieceCopy(a, r.stream));
  if (err != cudaSuccess) return CudaError(err, "piece copy kernel launch");
  return Status::Ok();
}

namespace {
// Without waiting: the error of stream `s` if its work failed, else Ok (running or idle). `what`
// names the stream in the error.
Status StreamErrorOf(cudaStream_t s, const std::string& what) {
  cudaError_t err = cudaStreamQuery(s);
  if (err == cudaSuccess) return Status::Ok();
  if (err == cudaErrorNotReady) {
    cudaGetLastError();
    return Status::Ok();
  }
  return CudaError(err, what + " (cudaStreamQuery)");
}

Status SyncStreamOf(cudaStream_t s, const std::string& what) {
  cudaError_t err = cudaStreamSynchronize(s);
  if (err != cudaSuccess) return CudaError(err, "cudaStreamSynchronize (" + what + ")");
  return Status::Ok();
}
}  // namespace

Status CudaGpu::PieceStreamError(PieceRing& r) {
  return StreamErrorOf(static_cast<cudaStream_t>(r.stream), "the piece kernel's stream");
}

Status CudaGpu::HoldEverySm(double busy_us) {
  if (!(busy_us > 0)) return Status::InvalidArgument("HoldEverySm needs a time > 0 us");
  RESMEM_RETURN_IF_ERROR(BindThread());
  cudaStream_t st = nullptr;
  cudaError_t err = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
  if (err != cudaSuccess) return CudaError(err, "cudaStreamCreateWithFlags (hold every SM)");
  err = static_cast<cudaError_t>(LaunchHoldEverySm(static_cast<uint64_t>(busy_us * 1e3), st));
  cudaStreamDestroy(st);  // the kernel runs on; the stream goes when it ends
  if (err != cudaSuccess) return CudaError(err, "hold kernel launch");
  return Status::Ok();
}

Status CudaGpu::SyncPieceStream(PieceRing& r) {
  return SyncStreamOf(static_cast<cudaStream_t>(r.stream), "piece kernel");
}

Status CudaGpu::EnsureCopyStreams(int n) {
  RESMEM_RETURN_IF_ERROR(BindThread());
  std::lock_guard<std::mutex> lock(mu_);
  while (static_cast<int>(copy_streams_.size()) < n) {
    cudaStream_t s = nullptr;
    cudaError_t err = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (err != cudaSuccess) return CudaError(err, "cudaStreamCreateWithFlags (copy stream)");
    copy_streams_.push_back(s);
  }
  return Status::Ok();
}

void* CudaGpu::StreamOf(int stream) {
  if (stream < 0) return cudaStreamPerThread;
  std::lock_guard<std::mutex> lock(mu_);
  return stream < static_cast<int>(copy_streams_.size()) ? copy_streams_[stream]
                                                         : cudaStreamPerThread;
}

Status CudaGpu::EnqueueCopy(CopyDirection dir, HostMemory& host, uint64_t host_offset,
                            DeviceBuffer& dev, uint64_t dev_offset, uint64_t length, int stream) {
  RESMEM_ASSIGN_OR_RETURN(uint8_t* h, HostPointer(host, host_offset, length, "cudaMemcpyAsync"));
  RESMEM_ASSIGN_OR_RETURN(CudaBuffer* b, AsCuda(dev, dev_offset, length, "cudaMemcpyAsync"));
  if (faults_) {
    FaultOutcome fault = CheckFault("gpu.copy", reinterpret_cast<uint64_t>(h), length);
    if (IsErrorFault(fault)) return fault.status;
  }
  cudaError_t err =
      dir == CopyDirection::kHostToDevice
          ? cudaMemcpyAsync(b->ptr() + dev_offset, h, length, cudaMemcpyHostToDevice,
                            static_cast<cudaStream_t>(StreamOf(stream)))
          : cudaMemcpyAsync(h, b->ptr() + dev_offset, length, cudaMemcpyDeviceToHost,
                            static_cast<cudaStream_t>(StreamOf(stream)));
  if (err != cudaSuccess) return CudaError(err, "cudaMemcpyAsync " + FormatSize(length));
  return Status::Ok();
}

Status CudaGpu::StreamError() {
  return StreamErrorOf(cudaStreamPerThread, "the staged segments' stream");
}

Status CudaGpu::SyncStream() { return SyncStreamOf(cudaStreamPerThread, "staged segments"); }

Result<bool> CudaGpu::Done(const CopyTicket& ticket) {
  if (!ticket.event) return Status::InvalidArgument("Done on an empty copy ticket");
  cudaError_t err = cudaEventQuery(static_cast<cudaEvent_t>(ticket.event));
  if (err == cudaSuccess) return true;
  if (err == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  return CudaError(err, "cudaEventQuery (async copy)");
}

void CudaGpu::ReleaseTicket(CopyTicket& ticket) {
  if (ticket.event) cudaEventDestroy(static_cast<cudaEvent_t>(ticket.event));
  ticket.event = nullptr;
}

Result<CopyStats> CudaGpu::CopyMapped(CopyDirection dir, HostMemory& host, uint64_t host_offset,
                                      DeviceBuffer& dev, uint64_t dev_offset, uint64_t length) {
  RESMEM_RETURN_IF_ERROR(BindThread());
  RESMEM_ASSIGN_OR_RETURN(uint8_t* h, HostPointer(host, host_offset, length, "zero-copy"));
  RESMEM_ASSIGN_OR_RETURN(CudaBuffer* b, AsCuda(dev, dev_offset, length, "zero-copy"));
  void* dptr = nullptr;
  std::string path = "zero-copy-mapped";
  cudaError_t err = cudaHostGetDevicePointer(&dptr, h, 0);
  if (err != cudaSuccess) {
    cudaGetLastError();
    int pageable = 0;
    cudaDeviceGetAttribute(&pageable, cudaDevAttrPageableMemoryAccess, b->device());
    if (!pageable)
      return CudaError(err, "cudaHostGetDevicePointer (memory not registered with Mapped, and "
                            "the device reports PageableMemoryAccess 0)");
    dptr = h;  // HMM: the device walks the host's page tables
    path = "pageable-access";
  }
  double t0 = Now();
  int rc = dir == CopyDirection::kHostToDevice
               ? LaunchKernelCopy(b->ptr() + dev_offset, dptr, length, cudaStreamPerThread)
               : LaunchKernelCopy(dptr, b->ptr() + dev_offset, length, cudaStreamPerThread);
  err = static_cast<cudaError_t>(rc);
  if (err == cudaSuccess) err = cudaStreamSynchronize(cudaStreamPerThread);
  double t1 = Now();
  if (err != cudaSuccess) return CudaError(err, "zero-copy kernel copy of " + FormatSize(length));
  CopyStats s;
  s.bytes = length;
  s.seconds = t1 - t0;
  s.path = path;
  return s;
}

Result<uint64_t> CudaGpu::DeviceChecksum(DeviceBuffer& dev, uint64_t offset, uint64_t length) {
  RESMEM_RETURN_IF_ERROR(BindThread());
  RESMEM_ASSIGN_OR_RETURN(CudaBuffer* b, AsCuda(dev, offset, length, "checksum"));
  constexpr uint64_t kBounce = 4 << 20;
  void* bounce = nullptr;
  cudaError_t err = cudaMallocHost(&bounce, kBounce);
  if (err != cudaSuccess) return CudaError(err, "cudaMallocHost (checksum bounce buffer)");
  uint64_t sum = 0xcbf29ce484222325ull;
  for (uint64_t done = 0; done < length && err == cudaSuccess;) {
    uint64_t n = length - done < kBounce ? length - done : kBounce;
    err = cudaMemcpyAsync(bounce, b->ptr() + offset + done, n, cudaMemcpyDeviceToHost,
                          cudaStreamPerThread);
    if (err == cudaSuccess) err = cudaStreamSynchronize(cudaStreamPerThread);
    if (err == cudaSuccess) sum = Fnv1a64(bounce, n, sum);
    done += n;
  }
  cudaFreeHost(bounce);
  if (err != cudaSuccess) return CudaError(err, "checksum copy-back");
  return sum;
}

Result<uint64_t> CudaGpu::CountPatternMismatches(DeviceBuffer& dev, uint64_t offset,
                                                 uint64_t length, uint64_t seq,
                                                 uint64_t fill_seed) {
  RESMEM_RETURN_IF_ERROR(BindThread());
  RESMEM_ASSIGN_OR_RETURN(CudaBuffer* b, AsCuda(dev, offset, length, "pattern check"));
  // One counter per thread, kept for the thread's life: the check runs per block in the stream.
  thread_local unsigned long long* counter = nullptr;
  thread_local unsigned long long* host_count = nullptr;
  cudaError_t err = cudaSuccess;
  if (!counter) {
    if ((err = cudaMalloc(reinterpret_cast<void**>(&counter), sizeof *counter)) != cudaSuccess)
      return CudaError(err, "cudaMalloc (pattern counter)");
    if ((err = cudaMallocHost(reinterpret_cast<void**>(&host_count), sizeof *host_count)) != cudaSuccess)
      return CudaError(err, "cudaMallocHost (pattern counter)");
  }
  err = cudaMemsetAsync(counter, 0, sizeof *counter, cudaStreamPerThread);
  if (err == cudaSuccess)
    err = static_cast<cudaError_t>(LaunchCountPatternMismatches(
        b->ptr() + offset, length, seq, fill_seed, counter, cudaStreamPerThread));
  if (err == cudaSuccess)
    err = cudaMemcpyAsync(host_count, counter, sizeof *counter, cudaMemcpyDeviceToHost,
                          cudaStreamPerThread);
  if (err == cudaSuccess) err = cudaStreamSynchronize(cudaStreamPerThread);
  if (err != cudaSuccess) return CudaError(err, "pattern check kernel");
  return static_cast<uint64_t>(*host_count);
}

Status CudaGpu::SetDeviceFlags(uint32_t flags) {
  RESMEM_RETURN_IF_ERROR(BindThread());
  const unsigned f = (flags & kDeviceMapHost) ? cudaDeviceMapHost : 0;
  cudaError_t err = cudaSetDeviceFlags(f);
  if (err != cudaSuccess) return CudaError(err, "cudaSetDeviceFlags(" + HexAddress(f) + ")");
  return Status::Ok();
}

Result<PipelineStats> CudaGpu::CopyKernelPipeline(HostMemory& host, DeviceBuffer& dev,
                                                  const PipelineSpec& spec) {
  RESMEM_RETURN_IF_ERROR(BindThread());
  const uint64_t block = spec.block_size;
  const std::string what = "copy/kernel pipeline of " + std::to_string(spec.blocks) + " x " +
                           FormatSize(block) + " on " + std::to_string(spec.streams) + " stream(s)";
  if (block == 0 || spec.blocks < 1 || (spec.streams != 1 && spec.streams != 2))
    return Status::InvalidArgument(what + ": give a block size > 0, at least one block and 1 or 2 streams");
  if (spec.host_offset > host.size() || host.size() - spec.host_offset < block)
    return Status::InvalidArgument(what + ": the host span holds no whole block past the offset");
  RESMEM_ASSIGN_OR_RETURN(uint8_t* h, HostPointer(host, spec.host_offset, block, "pipeline"));
  RESMEM_ASSIGN_OR_RETURN(CudaBuffer* b, AsCuda(dev, 0, 2 * block, "pipeline (two device slots)"));
  const uint64_t host_slots = (host.size() - spec.host_offset) / block;
  const uint64_t busy_ns = static_cast<uint64_t>(spec.kernel_us * 1e3);
  cudaStream_t streams[2] = {nullptr, nullptr};
  unsigned long long* sum = nullptr;
  cudaError_t err = cudaMalloc(reinterpret_cast<void**>(&sum), sizeof *sum);
  for (int i = 0; i < 2 && err == cudaSuccess; ++i)
    err = cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking);
  auto release = [&] {
    for (cudaStream_t st : streams)
      if (st) cudaStreamDestroy(st);
    if (sum) cudaFree(sum);
  };
  if (err != cudaSuccess) {
    release();
    return CudaError(err, what + ": streams");
  }
  auto copy = [&](int i, cudaStream_t st) {
    return cudaMemcpyAsync(b->ptr() + (i % 2) * block, h + (i % host_slots) * block, block,
                           cudaMemcpyHostToDevice, st);
  };
  auto kernel = [&](int i, cudaStream_t st) {
    return static_cast<cudaError_t>(
        LaunchReadAndHold(b->ptr() + (i % 2) * block, block, busy_ns, sum, st));
  };
  auto timed = [&](auto issue) -> Result<double> {
    const double t0 = Now();
    cudaError_t e = issue();
    for (cudaStream_t st : streams)
      if (e == cudaSuccess) e = cudaStreamSynchronize(st);
    if (e != cudaSuccess) return CudaError(e, what);
    return Now() - t0;
  };
  PipelineStats st;
  st.bytes = block * static_cast<uint64_t>(spec.blocks);
  // One untimed round warms the copy engine and loads the kernel; then each part alone.
  Result<double> warm = timed([&] {
    cudaError_t e = copy(0, streams[0]);
    return e == cudaSuccess ? kernel(0, streams[0]) : e;
  });
  // Each part alone: the median of 5 timings, so one stalled copy on a shared host does not
  // inflate the serial time the whole is compared with.
  auto median_of_5 = [&](auto issue) -> Result<double> {
    std::vector<double> t;
    for (int i = 0; i < 5; ++i) {
      Result<double> one = timed(issue);
      if (!one.ok()) return one;
      t.push_back(*one);
    }
    std::sort(t.begin(), t.end());
    return t[2];
  };
  Result<double> c = warm.ok() ? median_of_5([&] { return copy(0, streams[0]); }) : warm;
  Result<double> k = c.ok() ? median_of_5([&] { return kernel(0, streams[0]); }) : c;
  Result<double> all = k.ok() ? timed([&] {
    for (int i = 0; i < spec.blocks; ++i) {
      cudaStream_t s = streams[spec.streams == 2 ? i % 2 : 0];
      cudaError_t e = copy(i, s);
      if (e == cudaSuccess) e = kernel(i, s);
      if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
  }) : k;
  release();
  if (!all.ok()) return all.status();
  st.copy_seconds = *c;
  st.kernel_seconds = *k;
  st.seconds = *all;
  const double serial = spec.blocks * (*c + *k);
  st.ratio_to_serial = serial > 0 ? st.seconds / serial : 0;
  cudaPointerAttributes attrs;
  const bool pinned = cudaPointerGetAttributes(&attrs, h) == cudaSuccess &&
                      attrs.type == cudaMemoryTypeHost;
  cudaGetLastError();
  // The path says what was asked and what the timeline shows: overlapped when the whole took
  // less than 90% of copy + kernel done one after the other.
  const bool overlapped = st.ratio_to_serial < 0.9;
  st.path = overlapped ? "overlapped (" + std::to_string(spec.streams) + " stream" +
                             (spec.streams == 2 ? "s)" : ")")
                       : spec.streams == 1 ? std::string("serial (1 stream)")
                       : pinned ? std::string("serial (2 streams, no overlap seen)")
                                : std::string("serial (pageable host memory: cudaMemcpyAsync is synchronous)");
  return st;
}

Result<DmaBufExport> CudaGpu::ExportRange(uint64_t address, uint64_t length, const std::string& what) {
  if (!fn_get_handle_for_range_)
    return Status::Unsupported(what + ": this driver offers no cuMemGetHandleForAddressRange entry "
                                      "point (CUDA 11.7 and later have it)");
  int fd = -1;
  CUresult r = reinterpret_cast<GetHandleForRangeFn>(fn_get_handle_for_range_)(
      &fd, static_cast<CUdeviceptr>(address), length, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
  if (r != CUDA_SUCCESS) {
    cudaGetLastError();
    return Status::Cuda(static_cast<int>(r), what + " -> " + CudaCodeText(static_cast<int>(r)));
  }
  DmaBufExport e;
  const off_t end = lseek(fd, 0, SEEK_END);
  close(fd);
  if (end < 0) return Status::Errno(errno, what + ": lseek(SEEK_END) of the dma-buf fd failed");
  e.size = static_cast<uint64_t>(end);
  return e;
}

Result<DmaBufExport> CudaGpu::ExportDmaBuf(DeviceBuffer& dev, uint64_t offset, uint64_t length) {
  RESMEM_RETURN_IF_ERROR(BindThread());
  auto* b = dynamic_cast<CudaBuffer*>(&dev);
  if (b == nullptr)
    return Status::InvalidArgument("dma-buf export: device buffer was not allocated by the CUDA backend");
  // The range is passed as asked, even past the buffer's end: what the driver says is the case.
  return ExportRange(reinterpret_cast<uint64_t>(b->ptr()) + offset, length,
                     "cuMemGetHandleForAddressRange(cudaMalloc " + FormatSize(dev.size()) + " +" +
                         HexAddress(offset) + ", " + std::to_string(length) + " bytes, DMA_BUF_FD)");
}

Result<DmaBufExport> CudaGpu::ExportDmaBufHost(HostMemory& host, uint64_t offset, uint64_t length) {
  RESMEM_RETURN_IF_ERROR(BindThread());
  if (host.data() == nullptr)
    return Status::InvalidArgument("dma-buf export: " + host.Describe() + " is not addressable here");
  return ExportRange(reinterpret_cast<uint64_t>(host.data()) + offset, length,
                     "cuMemGetHandleForAddressRange(" + host.Describe() + " +" + HexAddress(offset) + ", " +
                         std::to_string(length) + " bytes, DMA_BUF_FD)");
}

// The VMM calls, reached through entry points (CUDA 10.2: version 10020).
struct CudaGpu::VmmFns {
  CUresult (*create)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,
                     unsigned long long) = nullptr;
  CUresult (*release)(CUmemGenericAllocationHandle) = nullptr;
  CUresult (*reserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long) = nullptr;
  CUresult (*address_free)(CUdeviceptr, size_t) = nullptr;
  CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long) = nullptr;
  CUresult (*unmap)(CUdeviceptr, size_t) = nullptr;
  CUresult (*set_access)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t) = nullptr;
  CUresult (*granularity)(size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags) = nullptr;
};

Result<std::unique_ptr<DeviceBuffer>> CudaGpu::AllocDeviceVmm(uint64_t bytes, bool rdma_capable) {
  RESMEM_RETURN_IF_ERROR(BindThread());
  if (!vmm_) {
    auto f = std::make_shared<VmmFns>();
    cudaDriverEntryPointQueryResult q;
    auto get = [&](const char* name, auto** fn) {
      void* p = nullptr;
      cudaGetDriverEntryPointByVersion(name, &p, 10020, cudaEnableDefault, &q);
      *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(p);
      return p != nullptr;
    };
    const bool all = get("cuMemCreate", &f->create) && get("cuMemRelease", &f->release) &&
                     get("cuMemAddressReserve", &f->reserve) &&
                     get("cuMemAddressFree", &f->address_free) && get("cuMemMap", &f->map) &&
                     get("cuMemUnmap", &f->unmap) && get("cuMemSetAccess", &f->set_access) &&
                     get("cuMemGetAllocationGranularity", &f->granularity);
    cudaGetLastError();
    if (!all) return Status::Unsupported("this driver's entry points lack the VMM calls (cuMemCreate, ...)");
    vmm_ = f;
  }
  const VmmFns& f = *vmm_;
  const int device = context_device_[current_.load()];
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  prop.allocFlags.gpuDirectRDMACapable = rdma_capable ? 1 : 0;
  const std::string what = "cuMemCreate(" + FormatSize(bytes) + (rdma_capable ? ", gpuDirectRDMACapable" : "") + ")";
  auto fail = [&](CUresult r, const char* call) {
    return Status::Cuda(static_cast<int>(r), what + ": " + call + " -> " + CudaCodeText(static_cast<int>(r)));
  };
  size_t gran = 0;
  if (CUresult r = f.granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM); r != CUDA_SUCCESS)
    return fail(r, "cuMemGetAllocationGranularity");
  if (gran == 0) gran = 2 << 20;
  const uint64_t size = (bytes + gran - 1) / gran * gran;
  CUmemGenericAllocationHandle handle = 0;
  if (CUresult r = f.create(&handle, size, &prop, 0); r != CUDA_SUCCESS) return fail(r, "cuMemCreate");
  CUdeviceptr va = 0;
  if (CUresult r = f.reserve(&va, size, gran, 0, 0); r != CUDA_SUCCESS) {
    f.release(handle);
    return fail(r, "cuMemAddressReserve");
  }
  if (CUresult r = f.map(va, size, 0, handle, 0); r != CUDA_SUCCESS) {
    f.address_free(va, size);
    f.release(handle);
    return fail(r, "cuMemMap");
  }
  CUmemAccessDesc access = {};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if (CUresult r = f.set_access(va, size, &access, 1); r != CUDA_SUCCESS) {
    f.unmap(va, size);
    f.address_free(va, size);
    f.release(handle);
    return fail(r, "cuMemSetAccess");
  }
  std::shared_ptr<VmmFns> keep = vmm_;
  auto release = [keep, va, size, handle] {
    keep->unmap(va, size);
    keep->address_free(va, size);
    keep->release(handle);
  };
  return std::unique_ptr<DeviceBuffer>(
      new CudaBuffer(reinterpret_cast<void*>(va), size, device, std::move(release)));
}

Status RegisterInChunks(Gpu& gpu, HostMemory& mem, uint64_t offset, uint64_t length,
                        uint32_t flags, uint64_t chunk, std::vector<uint64_t>* piece_offsets) {
  if (chunk == 0) return Status::InvalidArgument("registration chunk of 0 bytes: give a chunk size");
  std::vector<uint64_t> done;
  for (uint64_t off = offset; off < offset + length; off += chunk) {
    uint64_t n = offset + length - off < chunk ? offset + length - off : chunk;
    Status st = gpu.Register(mem, off, n, flags);
    if (!st.ok()) {
      for (uint64_t d : done) gpu.Unregister(mem, d);
      return st.WithContext("piece " + std::to_string(done.size()) + " at offset " +
                            std::to_string(off) + " of " + std::to_string(length / chunk + 1));
    }
    done.push_back(off);
  }
  if (piece_offsets) *piece_offsets = done;
  return Status::Ok();
}

}  // namespace resmem::cuda
