// The real Gpu over the CUDA runtime (static cudart, so binaries built on CI run on a GPU machine
// as carried). Return codes are the runtime's own numbers (CUDA 13 numbering). Copies run on the
// calling thread's own stream (cudaStreamPerThread), so several threads copy concurrently, each
// on its own stream, and are timed by the steady clock around the synchronised copy.
// Where no GPU or driver is present, Create returns Unavailable naming the runtime's code
// (on the build machine: 35 cudaErrorInsufficientDriver) and the way out (--backend sim).
#ifndef RESMEM_BACKENDS_CUDA_CUDA_GPU_H_
#define RESMEM_BACKENDS_CUDA_CUDA_GPU_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/api/gpu.h"
#include "backends/cuda/kernels.h"
#include "backends/fault/fault_injector.h"

namespace resmem::cuda {

class CudaGpu : public Gpu {
 public:
  // Initialises the runtime on `device` and makes its primary context context 0.
  static Result<std::unique_ptr<CudaGpu>> Create(int device = 0);
  ~CudaGpu() override;

  std::string name() const override { return "cuda"; }
  std::string profile() const override { return profile_; }
  Result<int> DeviceCount() override;
  Result<DeviceAttributes> Attributes(int device) override;
  // Contexts beyond 0 are made with cuCtxCreate, reached through cudaGetDriverEntryPointByVersion
  // (no link against libcuda); a context is current per thread, and every call below first makes
  // the Gpu's current context current on the calling thread.
  Result<int> CreateContext(int device) override;
  Status UseContext(int context) override;
  int current_context() const override { return current_.load(); }

  Status Register(HostMemory& mem, uint64_t offset, uint64_t length, uint32_t flags) override;
  Status Unregister(HostMemory& mem, uint64_t offset) override;
  Result<std::unique_ptr<HostMemory>> AllocPinned(uint64_t bytes, uint32_t flags) override;
  Result<std::unique_ptr<DeviceBuffer>> AllocDevice(uint64_t bytes) override;
  // path: "pinned-dma" when the runtime knows the host pointer as page-locked (registered or
  // cudaMallocHost), "pageable-staged" otherwise (the driver stages through its own buffers).
  Result<CopyStats> Copy(CopyDirection dir, HostMemory& host, uint64_t host_offset,
                         DeviceBuffer& dev, uint64_t dev_offset, uint64_t length) override;
  // Copies the range back through a pinned bounce buffer and sums it on the host (FNV-1a 64 is
  // sequential; a device kernel would run it on one thread). For a device-side check of a whole
  // block use CountPatternMismatches.
  Result<uint64_t> DeviceChecksum(DeviceBuffer& dev, uint64_t offset, uint64_t length) override;

  // Seed 001 and dma-buf (gpu.h). SetDeviceFlags is cudaSetDeviceFlags; CreateContextWithFlags
  // is cuCtxCreate with CU_CTX_* flags (CU_CTX_MAP_HOST = kDeviceMapHost). AllocPinned takes
  // kAllocWriteCombined as cudaHostAllocWriteCombined.
  Status SetDeviceFlags(uint32_t flags) override;
  Result<int> CreateContextWithFlags(int device, uint32_t flags) override;
  // Two non-blocking streams (or one), the copy timed alone, the kernel (LaunchReadAndHold)
  // timed alone, then the whole pipeline, each on the steady clock around a synchronisation.
  Result<PipelineStats> CopyKernelPipeline(HostMemory& host, DeviceBuffer& dev,
                                           const PipelineSpec& spec) override;
  // cuMemGetHandleForAddressRange(CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, flags 0), reached through
  // cudaGetDriverEntryPointByVersion (no link against libcuda). The fd's size is read with
  // lseek(SEEK_END) and the fd closed. Errors carry the CUresult.
  Result<DmaBufExport> ExportDmaBuf(DeviceBuffer& dev, uint64_t offset, uint64_t length) override;
  Result<DmaBufExport> ExportDmaBufHost(HostMemory& host, uint64_t offset, uint64_t length) override;
  // cuMemCreate (pinned device memory on the current context's device, gpuDirectRDMACapable as
  // asked), cuMemAddressReserve, cuMemMap, cuMemSetAccess read-write for that device; all
  // through entry points. Freed in reverse order with the buffer.
  Result<std::unique_ptr<DeviceBuffer>> AllocDeviceVmm(uint64_t bytes, bool rdma_capable) override;

  // ---- beyond the Gpu interface ----
  // Zero-copy: a kernel moves the bytes through the device's view of host memory: the mapped
  // pointer of memory registered with kRegisterMapped (or pinned with it), or the host pointer
  // itself where the device reports PageableMemoryAccess (HMM). path "zero-copy-mapped" or
  // "pageable-access". Refused with the runtime's code when neither applies.
  Result<CopyStats> CopyMapped(CopyDirection dir, HostMemory& host, uint64_t host_offset,
                               DeviceBuffer& dev, uint64_t dev_offset, uint64_t length) override;
  // Words of dev[offset, offset+length) that differ from the block pattern (block_pattern.h),
  // counted on the device.
  Result<uint64_t> CountPatternMismatches(DeviceBuffer& dev, uint64_t offset, uint64_t length,
                                          uint64_t seq, uint64_t fill_seed);
  // An asynchronous copy on the calling thread's stream, finished by Wait (which must be called
  // on the same thread). Lets a staging lane fill one pinned buffer while the other is in DMA.
  struct CopyTicket {
    void* event = nullptr;  // cudaEvent_t recorded after the copy
  };
  Result<CopyTicket> CopyAsync(CopyDirection dir, HostMemory& host, uint64_t host_offset,
                               DeviceBuffer& dev, uint64_t dev_offset, uint64_t length);
  Status Wait(CopyTicket& ticket);
  // Reusable tickets: NewTicket makes one event once; CopyAsyncInto queues a copy on the calling
  // thread's stream and records that same event after it; WaitKeep waits for it and keeps the
  // event; ReleaseTicket destroys it. A staging lane keeps one per pinned buffer instead of
  // creating and destroying an event per chunk. CopyAsyncInto honours the "gpu.copy" fault point
  // for error and delay effects (short and corrupt copies are Copy's).
  Result<CopyTicket> NewTicket();
  // `stream` -1: the calling thread's stream; k >= 0: copy stream k (EnsureCopyStreams).
  Status CopyAsyncInto(CopyTicket& ticket, CopyDirection dir, HostMemory& host,
                       uint64_t host_offset, DeviceBuffer& dev, uint64_t dev_offset,
                       uint64_t length, int stream = -1);
  // Copy streams: non-blocking streams owned by the Gpu, made once (at least n of them after the
  // call) in the current context, for a caller that spreads DMAs over several so that one DMA's
  // set-up overlaps another's transfer. Safe from several threads.
  Status EnsureCopyStreams(int n);
  Status WaitKeep(const CopyTicket& ticket);
  // Non-blocking: true once the copy recorded in the ticket finished (cudaEventQuery).
  Result<bool> Done(const CopyTicket& ticket);
  void ReleaseTicket(CopyTicket& ticket);
  // Stream signals: 32-bit words in mapped pinned host memory shared by the CPU and the calling
  // thread's stream, through cuStreamWaitValue32 / cuStreamWriteValue32 (stream memory
  // operations: always available from CUDA 12 with the v2 API; reached through
  // cudaGetDriverEntryPointByVersion, no link against libcuda). The staged path queues every
  // segment's DMA at once, each behind a wait on the word its fill lanes set, and each followed
  // by a write the lanes poll: no host call sits between a fill and its DMA, and no event query
  // between a DMA and its drain. Words start at 0 and compare cyclically ((int32)(word - value)
  // >= 0, the driver's CU_STREAM_WAIT_VALUE_GEQ), so a caller can count up forever.
  struct Signals {
    volatile uint32_t* host = nullptr;  // the CPU's view
    uint64_t device = 0;                // the stream's view (CUdeviceptr)
    int count = 0;
  };
  // Unsupported, naming what is missing, where the driver has no stream memory operations.
  Result<Signals> NewSignals(int count);
  void FreeSignals(Signals& s);
  // The calling thread's stream waits until word `index` reaches `value` (cyclic >=).
  Status WaitSignalAsync(const Signals& s, int index, uint32_t value);
  // The calling thread's stream writes `value` to word `index` once everything queued before it
  // on that stream finished (the default write: ordered after the preceding copy's data).
  Status SetSignalAsync(const Signals& s, int index, uint32_t value);
  // A copy on the calling thread's stream with no event (CopyAsyncInto's checks and its
  // "gpu.copy" fault point, error and delay effects). Call BindThread first.
  Status EnqueueCopy(CopyDirection dir, HostMemory& host, uint64_t host_offset, DeviceBuffer& dev,
                     uint64_t dev_offset, uint64_t length, int stream = -1);
  // Waits for everything queued on the calling thread's stream; its first error.
  Status SyncStream();
  // Without waiting: the error of the calling thread's stream if it failed, else Ok (running or
  // idle).
  Status StreamError();
  // Staged copies moved by the SMs instead of copy-engine DMAs (TransferOptions::
  // staging_kernel): a pinned, mapped ring of `slots` pieces of `piece` bytes and the words the
  // CPU lanes and the kernel hand pieces over with (kernels.h, PieceCopyArgs), each alone in a
  // 64-byte line: word(i) = words.host[i * kWordStride]; words 0..slots-1 the CPU's, slots..
  // 2 slots-1 the kernel's, 2 slots done, 2 slots + 1 abandoned, 2 slots + 2 the blocks the last
  // copy's kernel ran with (written with done), 2 slots + 3 started (the kernel's: it runs),
  // 2 slots + 4 intent (the CPU's: give the copy to the DMAs), 2 slots + 5 the kernel's verdict
  // (kernels.h, PieceCopyArgs).
  struct PieceRing {
    std::unique_ptr<HostMemory> ring;
    Signals words;
    void* blocks_done = nullptr;  // device words: finished blocks, the leader, the verdict
    void* ring_device = nullptr;  // the device's view of `ring`
    void* stream = nullptr;       // the kernel's stream: non-blocking, the device's top priority
    int sms = 0;                  // multiprocessors of the device
    int blocks = 0;               // the kernel's blocks of 512 threads: min(asked, sms)
    uint64_t piece = 0;
    uint32_t slots = 0;
  };
  // piece: a multiple of 4 KiB; slots >= 1; blocks >= 1, at most one per SM is used (more are
  // cut to the device's SM count). Fewer blocks leave SMs to a program's kernel: on the H100, 32
  // blocks of 512 threads move a staged copy as fast as 132 (4 MiB 88.6% of pinned against
  // 87.9%, 64 MiB 91.8 against 91.3) and take a quarter of the time from a kernel of 10 us blocks
  // beside it (16 MiB: +21 us against +82), docs/hil/2026-11-24-h100-staged8, smx2-run1.
  Result<PieceRing> NewPieceRing(uint64_t piece, uint32_t slots, int blocks);
  void FreePieceRing(PieceRing& r);
  // Launches the kernel for [dev_offset, +length) of `dev` (length a multiple of 16) on the
  // ring's stream, pieces numbered base+1 .., after setting the ring's abandoned word to a value
  // that is not `base`. The kernel moves nothing before its verdict: it leaves at once where the
  // caller's intent word has reached `base` by then (kernels.h, PieceCopyArgs). The stream has the device's greatest priority, so while a program's
  // kernel runs, the piece kernel's blocks are placed as that kernel's blocks end, before its
  // remaining ones (H100: a 4 MiB copy beside 2 ms of 10 us blocks 108.5 us instead of 1,982;
  // blocks that hold every SM for 2 ms still delay it 1.9 ms: docs/hil/2026-11-24-h100-staged7,
  // smx-run7). Honours the "gpu.copy" fault point's error effects.
  Status LaunchPieceCopy(PieceRing& r, CopyDirection dir, DeviceBuffer& dev, uint64_t dev_offset,
                         uint64_t length, uint32_t base);
  // Launches, on a stream of its own, a kernel that holds every SM for `busy_us` (LaunchHold
  // EverySm: full occupancy, as a program's kernel of long blocks would), and returns at once.
  // The SM copy's fallback is tested beside it (staged_cuda_test).
  Status HoldEverySm(double busy_us);
  // Without waiting: the error of the ring's stream if a piece kernel failed, else Ok.
  Status PieceStreamError(PieceRing& r);
  // Waits for the ring's stream (after an abandoned copy: its kernel's blocks have stopped).
  Status SyncPieceStream(PieceRing& r);
  // Fault points (backends/fault): "gpu.register", "gpu.unregister", "gpu.alloc", "gpu.copy"
  // fire before the runtime is called. Effects: error/signal -> returned as the status; delay ->
  // slept; short copy -> only short_length bytes move; corrupt -> the byte lands flipped in the
  // destination. Without an injector nothing fires.
  void set_faults(std::shared_ptr<FaultInjector> faults) { faults_ = std::move(faults); }
  // Makes the Gpu's current context current on this thread (done by every call above).
  Status BindThread();

 private:
  CudaGpu() = default;
  std::string profile_;
  int device_ = 0;
  std::vector<void*> contexts_;  // CUcontext per index
  std::vector<int> context_device_;
  std::atomic<int> current_{0};
  std::mutex mu_;
  void* fn_ctx_set_current_ = nullptr;
  void* fn_ctx_create_ = nullptr;
  void* fn_ctx_get_current_ = nullptr;
  void* fn_get_handle_for_range_ = nullptr;  // cuMemGetHandleForAddressRange (CUDA 11.7+)
  void* fn_wait_value32_ = nullptr;          // cuStreamWaitValue32 (v2, CUDA 12.0+)
  void* fn_write_value32_ = nullptr;         // cuStreamWriteValue32 (v2, CUDA 12.0+)
  struct VmmFns;                              // cuMemCreate and friends (cuda_gpu.cc)
  std::shared_ptr<VmmFns> vmm_;
  Result<DmaBufExport> ExportRange(uint64_t address, uint64_t length, const std::string& what);
  std::shared_ptr<FaultInjector> faults_;
  std::vector<void*> copy_streams_;  // cudaStream_t, EnsureCopyStreams; guarded by mu_
  void* StreamOf(int stream);        // -1 or out of range: cudaStreamPerThread
  FaultOutcome CheckFault(const char* point, uint64_t address, uint64_t length);
};

// "cudaHostRegister -> 1 cudaErrorInvalidValue" style text for a runtime code.
std::string CudaCodeText(int code);

// Registers [offset, offset+length) in pieces of at most `chunk` bytes, for ranges too large for
// one call (r580 drivers refuse one call of 512 GiB or more with 2; FACTS.md). On a failure the
// pieces already registered are unregistered again and the failing piece is named.
Status RegisterInChunks(Gpu& gpu, HostMemory& mem, uint64_t offset, uint64_t length,
                        uint32_t flags, uint64_t chunk, std::vector<uint64_t>* piece_offsets);

}  // namespace resmem::cuda

#endif  // RESMEM_BACKENDS_CUDA_CUDA_GPU_H_
