// The CUDA model's Gpu. Rules and their sources: the table at the top of cuda_profile.cc.
#include "mock/gpu/sim_gpu.h"
#include "mock/sim/sim_memory.h"
#include "mock/sim/sparse_pages.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <utility>

namespace resmem::sim {
namespace {

constexpr uint64_t kChunk = 1ull << 20;       // Copy moves bytes in chunks of at most this
constexpr uint64_t kSparsePage = 64ull << 10; // unit of the sparse byte stores

std::string Hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// Device and pinned buffers' bytes: pages held only where non-zero bytes were written.
using SparseBytes = SparsePages<kSparsePage>;

// Per-device bookkeeping shared with the buffers, so a buffer outliving the Gpu stays valid.
struct DeviceState {
  uint64_t capacity = 0;
  uint64_t allocated = 0;
};

class SimDeviceBuffer : public DeviceBuffer {
 public:
  SimDeviceBuffer(uint64_t size, int device, std::shared_ptr<DeviceState> state)
      : size_(size), device_(device), state_(std::move(state)) {
    state_->allocated += size_;
  }
  ~SimDeviceBuffer() override { state_->allocated -= size_; }
  uint64_t size() const override { return size_; }
  int device() const override { return device_; }
  SparseBytes& bytes() { return bytes_; }

 private:
  uint64_t size_;
  int device_;
  std::shared_ptr<DeviceState> state_;
  SparseBytes bytes_;
};

// cudaMallocHost / cudaHostAlloc memory: pinned by its allocator, not addressable (address() 0).
// Write-combined memory has the memory type WC, so CPU reads of it cost the host model's WC rate.
class SimPinnedMemory : public HostMemory {
 public:
  SimPinnedMemory(uint64_t size, int context, bool portable, bool mapped, bool write_combined) {
    facts_.length = size;
    facts_.shared = false;
    facts_.locked = true;
    facts_.backing = Backing::kPinnedHost;
    facts_.memory_type = write_combined ? MemoryType::kWriteCombining : MemoryType::kWriteBack;
    facts_.pinned = true;
    facts_.pinned_context = context;
    facts_.portable = portable;
    facts_.origin = "sim-gpu";
    mapped_ = mapped;
    write_combined_ = write_combined;
  }
  uint64_t size() const override { return facts_.length; }
  const MappingFacts& facts() const override { return facts_; }
  uint64_t address() const override { return 0; }
  bool mapped() const { return mapped_; }
  bool write_combined() const { return write_combined_; }
  Status Read(uint64_t offset, void* out, uint64_t len) override {
    RESMEM_RETURN_IF_ERROR(CheckSpan(*this, offset, len, "read pinned host memory"));
    bytes_.Read(offset, static_cast<uint8_t*>(out), len);
    return Status::Ok();
  }
  Status Write(uint64_t offset, const void* in, uint64_t len) override {
    RESMEM_RETURN_IF_ERROR(CheckSpan(*this, offset, len, "write pinned host memory"));
    bytes_.Write(offset, static_cast<const uint8_t*>(in), len);
    return Status::Ok();
  }
  SparseBytes& bytes() { return bytes_; }
  std::string Describe() const override {
    return "simulated pinned host memory (cudaMallocHost" + std::string(facts_.portable ? ", portable" : "") +
           (mapped_ ? ", mapped" : "") + (write_combined_ ? ", write-combined" : "") +
           ", context " + std::to_string(facts_.pinned_context) + ") " + FormatSize(facts_.length);
  }

 private:
  MappingFacts facts_;
  bool mapped_ = false;
  bool write_combined_ = false;
  SparseBytes bytes_;
};

// A registered range: [start, end) in a key space (0: process virtual addresses; otherwise the
// HostMemory object's identity, for spans with no address).
struct Registration {
  int context = 0;
  uintptr_t space = 0;
  uint64_t start = 0;
  uint64_t end = 0;
  uint32_t flags = 0;
  bool mapped = false;  // the device can reach it (cudaHostGetDevicePointer succeeds)
};

struct RangeKey {
  uintptr_t space;
  uint64_t start;
};

RangeKey KeyOf(const HostMemory& mem, uint64_t offset) {
  if (mem.address() != 0) return {0, mem.address() + offset};
  return {reinterpret_cast<uintptr_t>(&mem), offset};
}

double Gbps(double gbps) { return gbps * 1e9; }

class SimGpu : public Gpu {
 public:
  SimGpu(const CudaProfile& profile, const HostPerf& host, std::shared_ptr<Clock> clock,
         std::shared_ptr<FaultInjector> faults, const SimGpuOptions& options)
      : profile_(profile), host_(host), clock_(std::move(clock)), faults_(std::move(faults)),
        options_(options) {
    if (options_.device_count < 1) options_.device_count = 1;
    mem_total_ = options_.host_mem_total ? options_.host_mem_total : profile_.default_host_mem_total;
    for (int d = 0; d < options_.device_count; ++d) {
      auto state = std::make_shared<DeviceState>();
      state->capacity = profile_.device_memory;
      devices_.push_back(state);
    }
    contexts_.push_back(0);  // context 0 on device 0
    context_map_host_.push_back(profile_.runtime_implies_map_host);
  }

  std::string name() const override { return "sim:" + profile_.name; }
  std::string profile() const override { return profile_.name; }

  Result<int> DeviceCount() override { return options_.device_count; }

  Result<DeviceAttributes> Attributes(int device) override {
    RESMEM_RETURN_IF_ERROR(CheckDevice(device));
    DeviceAttributes a;
    a.name = profile_.device_name;
    a.total_memory = profile_.device_memory;
    a.host_register_supported = 1;  // cudaHostRegister exists in both eras (4.0+; FACTS)
    a.read_only_host_register_supported = profile_.read_only_host_register_supported;
    a.pageable_memory_access = profile_.pageable_memory_access;
    a.pageable_memory_access_uses_host_page_tables = 0;  // FACTS "Device attributes"
    a.async_engine_count = profile_.async_engine_count;
    a.can_map_host_memory = profile_.can_map_host_memory;
    a.pci_bus_id = device;  // simulated: one bus per device, numbered like the devices
    return a;
  }

  Result<int> CreateContext(int device) override { return CreateContextWithFlags(device, 0); }

  // cuCtxCreate: in CUDA 4.1 a driver-API context maps pinned memory only with CU_CTX_MAP_HOST
  // (cuda_runtime_api.h, cudaDeviceMapHost: "may be absent if a context is created using the
  // driver API"); driver 580 maps it without the flag (cuda_profile.cc, measured on the H100).
  Result<int> CreateContextWithFlags(int device, uint32_t flags) override {
    RESMEM_RETURN_IF_ERROR(CheckDevice(device));
    contexts_.push_back(device);
    context_map_host_.push_back(profile_.driver_context_maps_without_flag || (flags & kDeviceMapHost) != 0);
    return static_cast<int>(contexts_.size() - 1);
  }

  // Seed 001: cudaSetDeviceFlags(cudaDeviceMapHost) must come before any runtime call that
  // creates the context; after it the 2012 runtime refused (cudaErrorSetOnActiveProcess). CUDA
  // 13 overwrites the flags of an active primary context, and maps pinned memory in runtime
  // contexts anyway ("implicit for the runtime").
  Status SetDeviceFlags(uint32_t flags) override {
    if (flags & ~uint32_t(kDeviceMapHost))
      return Cuda(profile_.error_invalid_value,
                  "cudaSetDeviceFlags(" + Hex(flags) + "): the model knows only cudaDeviceMapHost (0x8)");
    if (!profile_.runtime_implies_map_host && context_active_)
      return Cuda(profile_.error_set_on_active_process,
                  "cudaSetDeviceFlags(cudaDeviceMapHost) after the context was created by an "
                  "earlier CUDA call; call it first, before any other CUDA runtime call");
    if (current_ == 0)
      context_map_host_[0] = profile_.runtime_implies_map_host || (flags & kDeviceMapHost);
    else
      context_map_host_[current_] = context_map_host_[current_] || (flags & kDeviceMapHost);
    return Status::Ok();
  }

  Status UseContext(int context) override {
    if (context < 0 || context >= static_cast<int>(contexts_.size()))
      return Cuda(profile_.error_invalid_context,
                  "context " + std::to_string(context) + " does not exist (" +
                      std::to_string(contexts_.size()) + " created); create it with CreateContext");
    current_ = context;
    return Status::Ok();
  }
  int current_context() const override { return current_; }

  Status Register(HostMemory& mem, uint64_t offset, uint64_t length, uint32_t flags) override {
    const MappingFacts& f = mem.facts();
    const RangeKey key = KeyOf(mem, offset);
    const std::string what = "cudaHostRegister(" + FormatSize(length) + " at offset " +
                             Hex(offset) + " of " + mem.Describe() + ", flags " +
                             RegisterFlagsName(flags) + ")";
    if (faults_) {
      FaultOutcome o = faults_->Check("gpu.register", key.start, length);
      if (Status st = ApplySimpleFault(o); !st.ok()) return st;
    }
    // FACTS.md: "size 0, unknown flag: 1".
    if (length == 0) return Cuda(profile_.error_invalid_value, what + ": size 0; pass a length > 0");
    uint32_t known = kRegisterPortable | kRegisterMapped;
    if (profile_.has_iomemory_flag) known |= kRegisterIoMemory;
    if (profile_.has_readonly_flag) known |= kRegisterReadOnly;
    if (flags & ~known)
      return Cuda(profile_.error_invalid_value,
                  what + ": flag " + RegisterFlagsName(flags & ~known) + " is unknown to " +
                      profile_.name + "; use only " + RegisterFlagsName(known));
    if (offset > mem.size() || length > mem.size() - offset)
      return Cuda(profile_.error_invalid_value,
                  what + ": the range runs past the end of the mapping (" + FormatSize(mem.size()) +
                      "); register inside the mapping");
    // Size first (seed 000: 188 GB -> 2 while 16 MB of the same mapping -> 30). FACTS.md: one
    // call larger than MemTotal (126 GiB on a 128 GiB host) or of 512 GiB and more -> 2.
    if (mem_total_ && length > mem_total_)
      return Cuda(profile_.error_memory_allocation,
                  what + ": one call larger than the host's MemTotal (" + FormatSize(mem_total_) +
                      ") cannot be pinned; register in chunks smaller than MemTotal");
    if (profile_.max_single_registration && length >= profile_.max_single_registration)
      return Cuda(profile_.error_memory_allocation,
                  what + ": the driver refuses one call of " +
                      FormatSize(profile_.max_single_registration) +
                      " or more; register in chunks");
    // FACTS.md: "same range twice, a sub-range, an overlap: 712".
    for (const auto& r : registrations_) {
      if (r.context != current_ || r.space != key.space) continue;
      if (key.start < r.end && key.start + length > r.start)
        return Cuda(profile_.error_already_registered,
                    what + ": overlaps a range already registered in context " +
                        std::to_string(current_) + " [" + Hex(r.start) + ", " + Hex(r.end) +
                        "); unregister it first or register only the part not yet registered");
    }
    if (Status st = DecideFromFacts(f, offset, length, flags, what); !st.ok()) return st;
    // Anonymous memory whose every page in the range was written is resident (smaps Rss), as a
    // touched malloc buffer is on the real host: it pins at the resident rate.
    MappingFacts priced = f;
    if (auto* anon = dynamic_cast<SimAnonymousMemory*>(&mem); anon && anon->UntouchedPages(offset, length) == 0)
      priced.resident = true;
    clock_->Charge(RegisterSeconds(profile_, host_, priced, length, flags));
    context_active_ = true;
    const bool mapped = context_map_host_[current_] &&
                        ((flags & kRegisterMapped) || profile_.maps_without_mapped_flag);
    registrations_.push_back({current_, key.space, key.start, key.start + length, flags, mapped});
    return Status::Ok();
  }

  Status Unregister(HostMemory& mem, uint64_t offset) override {
    const RangeKey key = KeyOf(mem, offset);
    const std::string what = "cudaHostUnregister(offset " + Hex(offset) + " of " + mem.Describe() + ")";
    if (faults_) {
      FaultOutcome o = faults_->Check("gpu.unregister", key.start, 0);
      if (Status st = ApplySimpleFault(o); !st.ok()) return st;
    }
    for (auto it = registrations_.begin(); it != registrations_.end(); ++it) {
      if (it->context == current_ && it->space == key.space && it->start == key.start) {
        registrations_.erase(it);
        return Status::Ok();
      }
    }
    // FACTS.md: "unregister of an interior pointer or nullptr ...: 1"; unknown pointer: 713.
    // (A nullptr cannot be passed through this API: every call names a HostMemory.)
    for (const auto& r : registrations_) {
      if (r.context == current_ && r.space == key.space && key.start > r.start && key.start < r.end)
        return Cuda(profile_.error_invalid_value,
                    what + ": points inside the registered range [" + Hex(r.start) + ", " +
                        Hex(r.end) + "); unregister with the pointer that was registered");
    }
    return Cuda(profile_.error_not_registered,
                what + ": this pointer is not registered in context " + std::to_string(current_));
  }

  Result<std::unique_ptr<HostMemory>> AllocPinned(uint64_t bytes, uint32_t flags) override {
    if (faults_) {
      FaultOutcome o = faults_->Check("gpu.alloc", 0, bytes);
      if (Status st = ApplySimpleFault(o); !st.ok()) return st;
    }
    const std::string what = "cudaHostAlloc(" + FormatSize(bytes) + ", " + RegisterFlagsName(flags) + ")";
    if (bytes == 0) return Cuda(profile_.error_invalid_value, what + ": size 0; ask for > 0 bytes");
    if (flags & ~uint32_t(kRegisterPortable | kRegisterMapped | kAllocWriteCombined))
      return Cuda(profile_.error_invalid_value,
                  what + ": cudaHostAlloc takes only portable, mapped and writecombined");
    if (mem_total_ && bytes > mem_total_)
      return Cuda(profile_.error_memory_allocation,
                  what + ": more than the host's MemTotal (" + FormatSize(mem_total_) + ")");
    // cudaMallocHost allocates fresh pages and pins them: charged like registering untouched
    // anonymous memory (FACTS.md pin rate; seed 000: "we mmap ... and do the same internal
    // operations as cudaHostRegister to implement cudaMallocHost").
    MappingFacts fresh;
    fresh.backing = Backing::kAnonymous;
    clock_->Charge(RegisterSeconds(profile_, host_, fresh, bytes, 0));
    context_active_ = true;
    // Mapped: the context must map host memory (cudaDeviceMapHost), and the allocation asks for
    // it or unified addressing maps it anyway (not write-combined memory: cuda_profile.cc).
    const bool wc = (flags & kAllocWriteCombined) != 0;
    const bool mapped = context_map_host_[current_] &&
                        ((flags & kRegisterMapped) || (profile_.maps_without_mapped_flag && !wc));
    return std::unique_ptr<HostMemory>(new SimPinnedMemory(
        bytes, current_, (flags & kRegisterPortable) != 0, mapped, wc));
  }

  Result<std::unique_ptr<DeviceBuffer>> AllocDevice(uint64_t bytes) override {
    if (faults_) {
      FaultOutcome o = faults_->Check("gpu.alloc", 0, bytes);
      if (Status st = ApplySimpleFault(o); !st.ok()) return st;
    }
    context_active_ = true;
    const int device = contexts_[current_];
    auto& state = devices_[device];
    if (bytes > state->capacity - state->allocated)
      return Cuda(profile_.error_memory_allocation,
                  "cudaMalloc(" + FormatSize(bytes) + ") on device " + std::to_string(device) +
                      ": only " + FormatSize(state->capacity - state->allocated) + " of " +
                      FormatSize(state->capacity) + " free; free buffers or ask for less");
    return std::unique_ptr<DeviceBuffer>(new SimDeviceBuffer(bytes, device, state));
  }

  // cuMemCreate rounds nothing itself: the size must be a multiple of the granularity (2 MiB on
  // the H100; cuMemGetAllocationGranularity), which the backend rounds up to, as CudaGpu does.
  // gpuDirectRDMACapable changes nothing the model sees (dma-buf export works either way on r580).
  Result<std::unique_ptr<DeviceBuffer>> AllocDeviceVmm(uint64_t bytes, bool /*rdma_capable*/) override {
    if (!profile_.has_dmabuf_export)
      return Status::Unsupported("cuMemCreate does not exist in " + profile_.name + " (CUDA 10.2+)");
    constexpr uint64_t kGranularity = 2ull << 20;
    return AllocDevice((bytes + kGranularity - 1) / kGranularity * kGranularity);
  }

  Result<CopyStats> Copy(CopyDirection dir, HostMemory& host, uint64_t host_offset,
                         DeviceBuffer& dev, uint64_t dev_offset, uint64_t length) override {
    const bool h2d = dir == CopyDirection::kHostToDevice;
    const std::string what = std::string("cudaMemcpy ") + (h2d ? "HostToDevice " : "DeviceToHost ") +
                             FormatSize(length) + " (host " + mem_name(host) + " +" +
                             Hex(host_offset) + ", device +" + Hex(dev_offset) + ")";
    RESMEM_ASSIGN_OR_RETURN(SimDeviceBuffer * sdev, Checked(what, host, host_offset, dev, dev_offset, length));

    const RangeKey key = KeyOf(host, host_offset);
    FaultOutcome fault;
    if (faults_) fault = faults_->Check("gpu.copy", key.start, length);
    if (fault.fired && (fault.effect == FaultEffect::kError || fault.effect == FaultEffect::kSignal))
      return fault.status.WithContext(what);
    if (fault.fired && fault.effect == FaultEffect::kDelay) clock_->Charge(fault.delay_seconds);
    const bool short_copy = fault.fired && fault.effect == FaultEffect::kShortCopy;
    const uint64_t arriving = short_copy ? std::min(fault.short_length, length) : length;

    CopyStats stats;
    double seconds = 0;
    ChoosePath(host, key, length, dir, &stats.path, &seconds);
    uint64_t done = 0;
    const Status access = MoveBytes(h2d, host, host_offset, *sdev, dev_offset, arriving, fault, &done);
    // Time charged for what moved, at the path's rate.
    const double charged = length ? seconds * (static_cast<double>(done) / length) : 0;
    clock_->Charge(charged);
    if (!access.ok())
      return access.WithContext(what + ": host access failed after " + FormatSize(done));
    if (short_copy)
      return Cuda(profile_.error_unknown,
                  what + ": short copy: only " + std::to_string(done) + " of " +
                      std::to_string(length) + " bytes arrived (" + fault.rule + ")");
    stats.bytes = done;
    stats.seconds = charged + (fault.fired && fault.effect == FaultEffect::kDelay ? fault.delay_seconds : 0);
    return stats;
  }

  Result<uint64_t> DeviceChecksum(DeviceBuffer& dev, uint64_t offset, uint64_t length) override {
    auto* sdev = dynamic_cast<SimDeviceBuffer*>(&dev);
    if (!sdev)
      return Cuda(profile_.error_invalid_value,
                  "checksum: the device buffer was not allocated by this simulated GPU");
    if (Status range = CheckDeviceSpan(dev, offset, length, "checksum"); !range.ok())
      return Cuda(profile_.error_invalid_value, range.message());  // as Checked
    FaultOutcome fault;
    if (faults_) fault = faults_->Check("gpu.checksum", offset, length);
    if (fault.fired && (fault.effect == FaultEffect::kError || fault.effect == FaultEffect::kSignal))
      return fault.status;
    if (fault.fired && fault.effect == FaultEffect::kDelay) clock_->Charge(fault.delay_seconds);
    uint64_t sum = 0xcbf29ce484222325ull;
    std::vector<uint8_t> buf(std::min<uint64_t>(kChunk, std::max<uint64_t>(length, 1)));
    for (uint64_t done = 0; done < length;) {
      const uint64_t n = std::min<uint64_t>(kChunk, length - done);
      sdev->bytes().Read(offset + done, buf.data(), n);
      CorruptIfHit(fault, done, n, buf.data());
      sum = Fnv1a64(buf.data(), n, sum);
      done += n;
    }
    return sum;
  }

  // Zero-copy (seed 001): the kernel reaches host memory through cudaHostGetDevicePointer's
  // pointer, which exists for pinned memory allocated, or registered, while the context mapped
  // host memory (cuda_profile.cc).
  Result<CopyStats> CopyMapped(CopyDirection dir, HostMemory& host, uint64_t host_offset,
                               DeviceBuffer& dev, uint64_t dev_offset, uint64_t length) override {
    const bool h2d = dir == CopyDirection::kHostToDevice;
    const std::string what = std::string("zero-copy kernel ") + (h2d ? "reading " : "writing ") +
                             FormatSize(length) + " of " + host.Describe();
    RESMEM_ASSIGN_OR_RETURN(SimDeviceBuffer * sdev, Checked(what, host, host_offset, dev, dev_offset, length));
    RESMEM_RETURN_IF_ERROR(DevicePointer(host, host_offset, length, what));
    uint64_t done = 0;
    RESMEM_RETURN_IF_ERROR(MoveBytes(h2d, host, host_offset, *sdev, dev_offset, length, FaultOutcome(), &done));
    CopyStats stats;
    stats.bytes = length;
    stats.seconds = ZeroCopySeconds(profile_, dir, length);
    stats.path = "zero-copy-mapped";
    clock_->Charge(stats.seconds);
    return stats;
  }

  // Copy and kernel per block on one or two streams (seed 001, "数据传输和内核并行"): the copy of
  // block i+1 overlaps block i's kernel when there are two streams, a copy engine, and the host
  // memory is page-locked (cudaMemcpyAsync from pageable memory is synchronous). Only the two
  // blocks left in the device slots are moved as bytes; the clock is charged the timeline.
  Result<PipelineStats> CopyKernelPipeline(HostMemory& host, DeviceBuffer& dev,
                                           const PipelineSpec& spec) override {
    const uint64_t block = spec.block_size;
    const std::string what = "copy/kernel pipeline of " + std::to_string(spec.blocks) + " x " +
                             FormatSize(block) + " on " + std::to_string(spec.streams) + " stream(s)";
    if (block == 0 || spec.blocks < 1 || (spec.streams != 1 && spec.streams != 2))
      return Status::InvalidArgument(what + ": give a block size > 0, at least one block and 1 or 2 streams");
    if (dev.size() < 2 * block)
      return Status::InvalidArgument(what + ": the device buffer (" + FormatSize(dev.size()) +
                                     ") must hold two blocks (one slot per stream)");
    if (spec.host_offset > host.size() || host.size() - spec.host_offset < block)
      return Status::InvalidArgument(what + ": the host span holds no whole block past the offset");
    RESMEM_ASSIGN_OR_RETURN(SimDeviceBuffer * sdev, Checked(what, host, spec.host_offset, dev, 0, block));
    std::string copy_path;
    double copy = 0;
    ChoosePath(host, KeyOf(host, spec.host_offset), block, CopyDirection::kHostToDevice, &copy_path, &copy);
    const double dev_rate = profile_.device_memory_gbps > 0 ? Gbps(profile_.device_memory_gbps) : 0;
    const double kernel = std::max(spec.kernel_us * 1e-6, dev_rate > 0 ? block / dev_rate : 0);
    const bool pageable = copy_path != "pinned-dma";
    const bool overlapped = spec.streams == 2 && profile_.async_engine_count > 0 &&
                            !(pageable && profile_.pageable_async_is_synchronous);
    PipelineStats st;
    st.bytes = block * static_cast<uint64_t>(spec.blocks);
    st.copy_seconds = copy;
    st.kernel_seconds = kernel;
    st.seconds = PipelineSeconds(spec.blocks, copy, kernel, overlapped);
    st.ratio_to_serial = st.seconds / PipelineSeconds(spec.blocks, copy, kernel, false);
    if (overlapped)
      st.path = "overlapped (2 streams)";
    else if (spec.streams == 1)
      st.path = "serial (1 stream)";
    else if (pageable)
      st.path = "serial (pageable host memory: cudaMemcpyAsync is synchronous)";
    else
      st.path = "serial (no copy engine)";
    const uint64_t host_slots = (host.size() - spec.host_offset) / block;
    for (int i = std::max(0, spec.blocks - 2); i < spec.blocks; ++i) {
      uint64_t done = 0;
      RESMEM_RETURN_IF_ERROR(MoveBytes(true, host, spec.host_offset + (i % host_slots) * block, *sdev,
                                       (i % 2) * block, block, FaultOutcome(), &done));
    }
    clock_->Charge(st.seconds);
    return st;
  }

  // cuMemGetHandleForAddressRange(DMA_BUF_FD): the rules of cuda_profile.cc (cuda.h 13.0,
  // FACTS.md, and `resmem calibrate --backend cuda` on the H100, docs/hil/2026-11-23-h100-seed001).
  Result<DmaBufExport> ExportDmaBuf(DeviceBuffer& dev, uint64_t offset, uint64_t length) override {
    const std::string what = "cuMemGetHandleForAddressRange(device buffer of " + FormatSize(dev.size()) +
                             " +" + Hex(offset) + ", " + std::to_string(length) + " bytes, DMA_BUF_FD)";
    RESMEM_RETURN_IF_ERROR(DmaBufOffered(what));
    const auto* sdev = dynamic_cast<const SimDeviceBuffer*>(&dev);
    if (!sdev) return Cuda(profile_.error_invalid_value, what + ": not a device allocation of this GPU");
    // cuMemCreate (VMM) memory exports with or without gpuDirectRDMACapable: the H100 gave 0
    // for 'VMM 4M whole, not RDMA-capable' (cuda_profile.cc, docs/hil/2026-11-23-h100-seed001).
    RESMEM_RETURN_IF_ERROR(DmaBufRange(what, offset, length, dev.size()));
    DmaBufExport e;
    e.size = length;
    return e;
  }
  Result<DmaBufExport> ExportDmaBufHost(HostMemory& host, uint64_t offset, uint64_t length) override {
    const std::string what = "cuMemGetHandleForAddressRange(" + host.Describe() + " +" + Hex(offset) +
                             ", " + std::to_string(length) + " bytes, DMA_BUF_FD)";
    RESMEM_RETURN_IF_ERROR(DmaBufOffered(what));
    const auto* pinned = dynamic_cast<const SimPinnedMemory*>(&host);
    if (!pinned || !profile_.dmabuf_host_alloc_supported)
      return Cuda(profile_.error_invalid_value,
                  what + ": host memory is no device allocation" +
                      (pinned ? std::string(" and this device does not export cudaHostAlloc memory "
                                            "(HOST_ALLOC_DMA_BUF_SUPPORTED 0)")
                              : std::string()) +
                      "; export a cudaMalloc buffer and copy into it");
    RESMEM_RETURN_IF_ERROR(DmaBufRange(what, offset, length, host.size()));
    DmaBufExport e;
    e.size = length;
    return e;
  }

 private:
  Status Cuda(int code, const std::string& message) const {
    return Status::Cuda(code, CudaErrorName(profile_.name, code) + ": " + message);
  }

  static std::string mem_name(const HostMemory& m) { return m.Describe(); }

  // The simulated device buffer of a host<->device operation, with both ranges checked.
  Result<SimDeviceBuffer*> Checked(const std::string& what, const HostMemory& host, uint64_t host_offset,
                                   DeviceBuffer& dev, uint64_t dev_offset, uint64_t length) const {
    auto* sdev = dynamic_cast<SimDeviceBuffer*>(&dev);
    if (!sdev)
      return Cuda(profile_.error_invalid_value,
                  what + ": the device buffer was not allocated by this simulated GPU");
    // CUDA's answer for a range past an allocation (the H200, r580: 1 cudaErrorInvalidValue for
    // cudaMemcpy, cudaMemcpyAsync and cudaMemset; the cuda backend refuses it up front the same
    // way, backends/cuda/cuda_gpu.cc PastTheEnd), in the profile's numbering.
    Status range = CheckSpan(host, host_offset, length, what.c_str());
    if (range.ok()) range = CheckDeviceSpan(dev, dev_offset, length, what.c_str());
    if (!range.ok()) return Cuda(profile_.error_invalid_value, range.message());
    return sdev;
  }

  // Moves `n` bytes between host memory and a device buffer in bounded chunks, flipping the byte
  // a corrupt fault names; a failed host access stops it with its status. *done: bytes moved.
  // A chunk whose source is known to read as zeros (pages never written) is not read: the
  // destination gets zeros through its sparse store, so the doctor's bandwidth measurement (62
  // copies of 256 MiB of zeros, scenarios/bandwidth) moves no bytes. The host's checks, fault
  // points and delays run once per chunk either way.
  Status MoveBytes(bool h2d, HostMemory& host, uint64_t host_offset, SimDeviceBuffer& dev,
                   uint64_t dev_offset, uint64_t n, const FaultOutcome& fault, uint64_t* done) {
    auto* pinned = dynamic_cast<SimPinnedMemory*>(&host);
    const bool sparse_host = pinned || dynamic_cast<SimHostMemory*>(&host);  // else its own Read/Write per chunk
    std::vector<uint8_t> buf;
    *done = 0;
    while (*done < n) {
      const uint64_t c = std::min<uint64_t>(kChunk, n - *done);
      buf.resize(c);
      const bool corrupts = CorruptHits(fault, *done, c);
      if (h2d) {
        bool zeros = pinned && !corrupts && pinned->bytes().NoneIn(host_offset + *done, c);
        if (!zeros)
          RESMEM_RETURN_IF_ERROR(ReadUncharged(host, host_offset + *done, buf.data(), c, corrupts ? nullptr : &zeros));
        if (zeros) {
          dev.bytes().Zero(dev_offset + *done, c);
        } else {
          CorruptIfHit(fault, *done, c, buf.data());
          dev.bytes().Write(dev_offset + *done, buf.data(), c);
        }
      } else if (sparse_host && !corrupts && dev.bytes().NoneIn(dev_offset + *done, c)) {
        if (pinned)
          pinned->bytes().Zero(host_offset + *done, c);
        else
          RESMEM_RETURN_IF_ERROR(WriteZerosUncharged(host, host_offset + *done, c));
      } else {
        dev.bytes().Read(dev_offset + *done, buf.data(), c);
        CorruptIfHit(fault, *done, c, buf.data());
        RESMEM_RETURN_IF_ERROR(WriteUncharged(host, host_offset + *done, buf.data(), c));
      }
      *done += c;
    }
    return Status::Ok();
  }

  // cudaHostGetDevicePointer for [offset, offset+length) of `host`, or the failure code and why.
  Status DevicePointer(const HostMemory& host, uint64_t offset, uint64_t length,
                       const std::string& what) const {
    const std::string call = what + ": cudaHostGetDevicePointer";
    const std::string map_host_fix =
        profile_.runtime_implies_map_host
            ? "create the context with CU_CTX_MAP_HOST or use the runtime's own context"
            : "call cudaSetDeviceFlags(cudaDeviceMapHost) before any other CUDA call, then allocate";
    if (const auto* pinned = dynamic_cast<const SimPinnedMemory*>(&host)) {
      if (pinned->mapped()) return Status::Ok();
      const int ctx = host.facts().pinned_context;
      if (ctx >= 0 && ctx < static_cast<int>(context_map_host_.size()) && !context_map_host_[ctx])
        return Cuda(profile_.error_invalid_value,
                    call + " fails: the context that allocated it does not map host memory " +
                        (ctx == 0 ? "(cudaDeviceMapHost was not set); " + map_host_fix
                                  : std::string("(a cuCtxCreate context without CU_CTX_MAP_HOST); "
                                                "create the context with CU_CTX_MAP_HOST")));
      return Cuda(profile_.error_invalid_value,
                  call + " fails: allocated without cudaHostAllocMapped" +
                      (pinned->write_combined() ? std::string(" (write-combined memory is not "
                                                              "mapped automatically)")
                                                : std::string()) +
                      "; allocate with flags mapped");
    }
    const RangeKey key = KeyOf(host, offset);
    const Registration* covering = nullptr;
    for (const auto& r : registrations_)
      if (r.space == key.space && key.start >= r.start && key.start + length <= r.end &&
          (!covering || r.mapped))
        covering = &r;
    if (covering && covering->mapped) return Status::Ok();
    if (covering)
      return Cuda(profile_.error_invalid_value,
                  call + " fails: registered without cudaHostRegisterMapped, or in a context that "
                         "does not map host memory; register with flags mapped (" + map_host_fix + ")");
    return Cuda(profile_.error_invalid_value,
                call + " fails: the memory is neither pinned nor registered (pageable: this device "
                       "reports PageableMemoryAccess " + std::to_string(profile_.pageable_memory_access) +
                       "); register it with flags mapped or allocate it with cudaHostAlloc");
  }

  Status DmaBufOffered(const std::string& what) const {
    if (!profile_.has_dmabuf_export)
      return Status::Unsupported(what + ": the call does not exist in " + profile_.name +
                                 " (dma-buf export came with CUDA 11.7)");
    return Status::Ok();
  }
  Status DmaBufRange(const std::string& what, uint64_t offset, uint64_t length, uint64_t size) const {
    const uint64_t a = profile_.dmabuf_alignment ? profile_.dmabuf_alignment : 1;
    if (length == 0) return Cuda(profile_.error_invalid_value, what + ": size 0; export at least one page");
    if (offset % a || length % a)
      return Cuda(profile_.error_invalid_value,
                  what + ": offset and size must be multiples of the host page size (" +
                      FormatSize(a) + "); round the range out to pages");
    if (offset > size || length > size - offset)
      return Cuda(profile_.error_invalid_value,
                  what + ": the range runs past the allocation (" + FormatSize(size) + ")");
    return Status::Ok();
  }

  Status CheckDevice(int device) const {
    if (device < 0 || device >= options_.device_count)
      return Cuda(profile_.error_invalid_device,
                  "device " + std::to_string(device) + " does not exist; this simulated machine has " +
                      std::to_string(options_.device_count) + " (set device_count)");
    return Status::Ok();
  }

  // Error/signal faults are returned; delays charged; other effects mean nothing at these points.
  Status ApplySimpleFault(const FaultOutcome& o) {
    if (!o.fired) return Status::Ok();
    if (o.effect == FaultEffect::kError || o.effect == FaultEffect::kSignal) return o.status;
    if (o.effect == FaultEffect::kDelay) clock_->Charge(o.delay_seconds);
    return Status::Ok();
  }

  // Whether a corrupt fault flips a byte of the chunk [chunk_start, chunk_start + n).
  static bool CorruptHits(const FaultOutcome& o, uint64_t chunk_start, uint64_t n) {
    return o.fired && o.effect == FaultEffect::kCorrupt && o.corrupt_offset >= chunk_start &&
           o.corrupt_offset < chunk_start + n;
  }
  static void CorruptIfHit(const FaultOutcome& o, uint64_t chunk_start, uint64_t n, uint8_t* buf) {
    if (CorruptHits(o, chunk_start, n)) buf[o.corrupt_offset - chunk_start] ^= (o.corrupt_xor ? o.corrupt_xor : 1);
  }

  // The registration decision from the mapping's facts (the table in cuda_profile.cc). The
  // order of the rules is part of the model: h100.json (2026-11-21) shows IoMemory decided
  // before the read-only rule, and ReadOnly lifting the writable-shared-file rule.
  Status DecideFromFacts(const MappingFacts& f, uint64_t offset, uint64_t length, uint32_t flags,
                         const std::string& what) const {
    const bool pfn_io = f.vm_pfnmap || f.vm_io || f.backing == Backing::kDevicePfn;
    if (profile_.has_iomemory_flag && (flags & kRegisterIoMemory)) {
      // FACTS.md (os-mlock.c): the IoMemory path wants one VM_IO|VM_PFNMAP VMA with physically
      // contiguous pages; on ordinary memory it fails with 1. It looks up PFNs and pins nothing
      // for writing, so a read-only mapping passes without ReadOnly (h100.json: the read-only
      // [vvar] page, iomemory -> 0).
      if (!pfn_io)
        return Cuda(profile_.error_invalid_value,
                    what + ": IoMemory is for VM_IO|VM_PFNMAP device mappings, and this is " +
                        f.Describe() + "; register without IoMemory");
      // The open driver's os-mlock.c get_io_ptes() checks each page against the one before it,
      // so a span inside one page is contiguous whatever the facts say (h100.json: pfnmap-vvar
      // 4 KiB iomemory -> 0; smaps cannot tell contiguity).
      const uint64_t page = f.page_size ? f.page_size : 4096;
      const bool one_page = (offset % page) + length <= page;
      if (!f.physically_contiguous && !one_page)
        return Cuda(profile_.error_invalid_value,
                    what + ": IoMemory needs physically contiguous memory behind the mapping; "
                           "register each contiguous piece separately, or map the region in "
                           "pages mode and register without IoMemory");
      return Status::Ok();
    }
    if (pfn_io) {
      // seed 000: 30 unknown error; FACTS.md: 1 on r580. pin_user_pages needs struct pages.
      const int code = profile_.pfnmap_error_is_unknown ? profile_.error_unknown
                                                        : profile_.error_invalid_value;
      std::string fix = profile_.has_iomemory_flag
                            ? "register with the IoMemory flag, or map the region in pages mode"
                            : "this driver cannot pin it: map the region in pages mode (struct "
                              "pages) or stage through pinned buffers";
      return Cuda(code, what + ": a VM_IO|VM_PFNMAP mapping has no struct pages to pin; " + fix);
    }
    if (profile_.readonly_mapping_needs_flag && !f.writable && !(flags & kRegisterReadOnly))
      return Cuda(profile_.error_invalid_value,
                  what + ": the mapping is read-only; register with the ReadOnly flag");
    // FACTS.md: writable MAP_SHARED ext4 file -> 1 (mm/gup.c writable_file_mapping_allowed()).
    // h100.json (2026-11-21): the same mapping with ReadOnly -> 0: the driver then pins without
    // FOLL_WRITE, and mm/gup.c check_vma_flags() asks writable_file_mapping_allowed() only for
    // write pins.
    if (profile_.refuses_writable_shared_file && f.shared && f.writable &&
        !(flags & kRegisterReadOnly) &&
        (f.backing == Backing::kFile || f.backing == Backing::kFuse))
      return Cuda(profile_.error_invalid_value,
                  what + ": a writable MAP_SHARED mapping of a file that needs writeback cannot be "
                         "pinned long-term for writing; register with ReadOnly if the GPU only "
                         "reads it, map it MAP_PRIVATE, or use shmem/memfd");
    return Status::Ok();
  }

  bool UsableFromCurrent(int context, bool portable) const {
    if (context < 0 || context == current_ || portable) return true;
    return !profile_.non_portable_slow_in_other_context;
  }

  // Decides the path and its modelled seconds for the whole length.
  void ChoosePath(const HostMemory& host, const RangeKey& key, uint64_t length, CopyDirection dir,
                  std::string* path, double* seconds) const {
    const MappingFacts& f = host.facts();
    bool pinned = false, other_context_slow = false;
    if (f.pinned) {
      pinned = true;
      other_context_slow = !UsableFromCurrent(f.pinned_context, f.portable);
    } else {
      // Registered when one registration (in any context) covers the whole range.
      for (const auto& r : registrations_) {
        if (r.space != key.space || key.start < r.start || key.start + length > r.end) continue;
        const bool ok = UsableFromCurrent(r.context, (r.flags & kRegisterPortable) != 0);
        if (!pinned || ok) other_context_slow = !ok;
        pinned = true;
      }
    }
    if (pinned && !other_context_slow) {
      *path = "pinned-dma";
      *seconds = f.memory_type == MemoryType::kWriteCombining && f.pinned
                     ? WriteCombinedCopySeconds(profile_, dir, length)
                     : PinnedCopySeconds(profile_, dir, length);
      return;
    }
    // Pageable, or (2012) non-portable pinned memory from another context, which that driver
    // treated as pageable and slowed further (seed 000's last posts).
    *path = "pageable-staged";
    *seconds = StagedCopySeconds(profile_, host_, dir, f.memory_type, length);
    if (other_context_slow) *seconds *= profile_.other_context_slowdown;
  }

  CudaProfile profile_;
  HostPerf host_;
  std::shared_ptr<Clock> clock_;
  std::shared_ptr<FaultInjector> faults_;
  SimGpuOptions options_;
  uint64_t mem_total_ = 0;
  std::vector<std::shared_ptr<DeviceState>> devices_;
  std::vector<int> contexts_;  // context id -> device
  std::vector<bool> context_map_host_;  // context id -> maps pinned host memory
  bool context_active_ = false;         // a call has created the runtime's context (seed 001)
  int current_ = 0;
  std::vector<Registration> registrations_;
};

}  // namespace

double PinnedCopySeconds(const CudaProfile& profile, CopyDirection dir, uint64_t bytes) {
  const double link = dir == CopyDirection::kHostToDevice ? profile.link_h2d_gbps : profile.link_d2h_gbps;
  return link > 0 ? bytes / Gbps(link) : 0;
}

double WriteCombinedCopySeconds(const CudaProfile& profile, CopyDirection dir, uint64_t bytes) {
  const double gain = dir == CopyDirection::kHostToDevice && profile.wc_h2d_gain > 0 ? profile.wc_h2d_gain : 1;
  return PinnedCopySeconds(profile, dir, bytes) / gain;
}

double ZeroCopySeconds(const CudaProfile& profile, CopyDirection dir, uint64_t bytes) {
  const double eff = dir == CopyDirection::kHostToDevice ? profile.zero_copy_h2d_efficiency
                                                         : profile.zero_copy_d2h_efficiency;
  return PinnedCopySeconds(profile, dir, bytes) / (eff > 0 ? eff : 1);
}

double PipelineSeconds(int blocks, double copy, double kernel, bool overlapped) {
  if (blocks < 1) return 0;
  if (!overlapped) return blocks * (copy + kernel);
  return copy + (blocks - 1) * std::max(copy, kernel) + kernel;
}

double StagedCopySeconds(const CudaProfile& profile, const HostPerf& host, CopyDirection dir,
                         MemoryType type, uint64_t bytes) {
  const bool h2d = dir == CopyDirection::kHostToDevice;
  const double link = Gbps(h2d ? profile.link_h2d_gbps : profile.link_d2h_gbps);
  // The driver's CPU stage reads the source (H2D) or writes the destination (D2H) with the
  // host's rates for that memory type (HostPerf; UC reads at the driver's load width).
  const double cpu = h2d ? host.ReadBytesPerSecond(type, profile.staging_load_bytes)
                         : host.WriteBytesPerSecond(type);
  if (cpu <= 0 || link <= 0) return 0;
  // Write-back memory where the profile carries a fit to a measurement of the real driver
  // (r580: h100-range.json, cuda_profile.cc): rates are multiples of the host's memcpy rate, the
  // overlapped rate never above the link.
  const PageableStagingFit& fit = h2d ? profile.pageable_wb_h2d : profile.pageable_wb_d2h;
  if (type == MemoryType::kWriteBack && fit.overlapped_ratio > 0) {
    const uint64_t overlapped = std::min(bytes, fit.overlap_bytes);
    const uint64_t serial = bytes - overlapped;
    const double serial_ratio = fit.serial_ratio > 0 ? fit.serial_ratio : 1;
    return overlapped / std::min(fit.overlapped_ratio * cpu, link) +
           serial * (1 / (serial_ratio * cpu) + 1 / link);
  }
  const double eff = profile.pageable_pipeline_efficiency > 0 ? profile.pageable_pipeline_efficiency : 1;
  const uint64_t overlapped = std::min(bytes, profile.pageable_overlap_bytes);
  const uint64_t serial = bytes - overlapped;
  return overlapped / (eff * std::min(cpu, link)) + serial * (1 / (eff * cpu) + 1 / link);
}

double ModelledGbps(const CudaProfile& profile, const HostPerf& host,
                    const MeasuredCopyRange& c) {
  const double seconds =
      c.copy_class == "pageable"
          ? StagedCopySeconds(profile, host, c.direction, MemoryType::kWriteBack, c.bytes)
          : PinnedCopySeconds(profile, c.direction, c.bytes);
  return seconds > 0 ? c.bytes / seconds / 1e9 : 0;
}

double RegisterSeconds(const CudaProfile& profile, const HostPerf& host, const MappingFacts& facts,
                       uint64_t bytes, uint32_t flags) {
  double seconds = profile.register_fixed_seconds;
  // IoMemory takes the PFNs of one contiguous VMA, and cudaMallocHost memory is pinned already:
  // nothing to fault in or pin per page.
  const bool io = (flags & kRegisterIoMemory) && profile.has_iomemory_flag;
  if (io || facts.pinned) return seconds;
  // FACTS.md: untouched anonymous memory pins at ~3.2 GB/s; touched (resident) 64 MiB in 2-4 ms;
  // docs/hil/2026-11-23-h100-perf (registration table): 4 KiB pages untouched 0.33-0.56 s/GiB,
  // resident 0.033-0.055; 2 MiB / 1 GiB pages untouched 0.15-0.20 s/GiB, resident 0.022-0.036.
  // Resident: VM_LOCKED, or every page present (smaps Rss). A driver's own pages (kDevicePages,
  // the module's pages mode) are costed as untouched: each pin faults through the driver, and no
  // GPU host here can load the module to measure it (docs/benchmarks.md, "Registration time").
  const bool huge = facts.page_size >= (2ull << 20) || facts.transparent_huge ||
                    facts.backing == Backing::kHugetlb;
  const bool resident = facts.locked || facts.resident;
  double rate = host.pin_gbps;
  if (huge && profile.pin_untouched_huge_gbps > 0) rate = profile.pin_untouched_huge_gbps;
  if (resident && profile.pin_resident_gbps > 0)
    rate = huge && profile.pin_resident_huge_gbps > 0 ? profile.pin_resident_huge_gbps
                                                      : profile.pin_resident_gbps;
  if (rate > 0) seconds += bytes / Gbps(rate);
  return seconds;
}

std::unique_ptr<Gpu> MakeSimGpu(const CudaProfile& profile, const HostPerf& host,
                                std::shared_ptr<Clock> clock, std::shared_ptr<FaultInjector> faults,
                                const SimGpuOptions& options) {
  if (!clock) clock = std::make_shared<VirtualClock>();
  return std::make_unique<SimGpu>(profile, host, std::move(clock), std::move(faults), options);
}

}  // namespace resmem::sim
