// The typed steps of a scenario: one struct per step kind, holding its arguments already
// converted (sizes in bytes, flags as bits, choices as enums), and one Expectation struct holding
// what a step must show. The loader (scenario.cc, through the definitions in step_defs.h) builds
// them once from the file; the runner executes them and reads no string of the file again.
// A struct's member defaults are the step's defaults (docs/scenarios.md prints them).
#ifndef RESMEM_ENGINE_SCENARIO_STEPS_H_
#define RESMEM_ENGINE_SCENARIO_STEPS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "backends/api/card.h"
#include "backends/api/gpu.h"
#include "backends/api/managed.h"
#include "backends/api/p2p.h"

namespace resmem::scenario {

// Data written and checked by write/verify (engine/runner/patterns.h makes the bytes).
enum class DataPattern { kCounter, kSeeded, kZero };
enum class ContextAction { kCreate, kUse };
// Where a p2p_pin takes its tokens from: queried now, the ones an earlier p2p_tokens step got
// for that buffer name (stale when the name was allocated again), or zeros.
enum class P2pTokenSource { kQuery, kCached, kZero };

struct BootStep {
  static constexpr const char* kName = "boot";
};
struct OpenStep {
  static constexpr const char* kName = "open";
  std::string device;  // "": the first device
  bool sync = false;
};
struct InfoStep {
  static constexpr const char* kName = "info";
};
struct IoctlStep {
  static constexpr const char* kName = "ioctl";
  int64_t cmd = 0;
  bool null_arg = false;
};
struct MmapStep {
  static constexpr const char* kName = "mmap";
  std::string as;
  uint64_t offset = 0;
  std::optional<uint64_t> length;  // none: the rest of the range from offset
  bool writable = true;
};
struct MunmapStep {
  static constexpr const char* kName = "munmap";
  std::string span;
};
struct AllocPageableStep {
  static constexpr const char* kName = "alloc_pageable";
  std::string as;
  uint64_t length = 0;
};
struct AllocPinnedStep {
  static constexpr const char* kName = "alloc_pinned";
  std::string as;
  uint64_t length = 0;
  uint32_t flags = 0;  // RegisterFlag bits
};
struct AllocDeviceStep {
  static constexpr const char* kName = "alloc_device";
  std::string as;
  uint64_t length = 0;
};
struct ContextStep {
  static constexpr const char* kName = "context";
  ContextAction action = ContextAction::kCreate;
  std::string name;
  int64_t device = 0;
  bool map_host = false;  // create: cuCtxCreate with CU_CTX_MAP_HOST
};
// cudaSetDeviceFlags (seed 001: cudaDeviceMapHost before any other CUDA call).
struct DeviceFlagsStep {
  static constexpr const char* kName = "device_flags";
  bool map_host = true;
};
struct RegisterStep {
  static constexpr const char* kName = "register";
  std::string span;
  uint64_t offset = 0;
  std::optional<uint64_t> length;  // none: the rest of the span from offset
  uint32_t flags = 0;              // RegisterFlag bits
  uint64_t chunk = 0;              // 0: one call
};
struct UnregisterStep {
  static constexpr const char* kName = "unregister";
  std::string span;
  uint64_t offset = 0;
};
// What write and verify take: bytes [offset, offset + length) of a span, and their pattern.
struct PatternSpan {
  std::string span;
  uint64_t offset = 0;
  uint64_t length = 0;
  DataPattern pattern = DataPattern::kCounter;
};
struct WriteStep : PatternSpan {
  static constexpr const char* kName = "write";
};
struct VerifyStep : PatternSpan {
  static constexpr const char* kName = "verify";
};
struct MemcpyStep {
  static constexpr const char* kName = "memcpy";
  std::string dst, src;
  uint64_t dst_offset = 0, src_offset = 0;
  uint64_t length = 0;
  int64_t passes = 1;
};
// What copy and zero_copy take: a direction, bytes of named host memory and a device buffer.
struct HostDeviceRange {
  CopyDirection direction = CopyDirection::kHostToDevice;
  std::string host, device;
  uint64_t host_offset = 0, device_offset = 0;
  uint64_t length = 0;
  int64_t passes = 1;
};
struct CopyStep : HostDeviceRange {
  static constexpr const char* kName = "copy";
};
// A kernel moves the bytes through mapped host memory (seed 001's zero-copy).
struct ZeroCopyStep : HostDeviceRange {
  static constexpr const char* kName = "zero_copy";
};
// Copy H2D and kernel per block on one or two streams (seed 001's async copies).
struct OverlapStep {
  static constexpr const char* kName = "overlap";
  std::string host, device;
  uint64_t host_offset = 0;
  uint64_t block_size = 0;
  int64_t blocks = 0;
  int64_t streams = 2;
  double kernel_us = 0;
  int64_t passes = 1;
};
struct StageStep {
  static constexpr const char* kName = "stage";
  std::string src, staging, device;
  uint64_t src_offset = 0;
  uint64_t length = 0;
  int64_t passes = 1;
};
struct ChecksumStep {
  static constexpr const char* kName = "checksum";
  std::string host, device;
  uint64_t host_offset = 0, device_offset = 0;
  uint64_t length = 0;
};
struct StreamStep {
  static constexpr const char* kName = "stream";
  std::string span, device;
  int64_t blocks = 0;
  uint64_t block_size = 0;
  double rate_hz = 0;           // 0: the producer runs flat out
  bool register_ring = false;   // the argument `register`
};
struct DoctorStep {
  static constexpr const char* kName = "doctor";
  bool devices = true;
  bool bandwidth = false;  // also `resmem doctor --bandwidth`: measure and judge on the backend's GPU
};
// GPUDirect RDMA (backends/api/p2p.h, docs/rdma.md): the machine, GPU memory, pins, the device's DMA.
struct P2pSetupStep {
  static constexpr const char* kName = "p2p_setup";
  std::string gpu = "h100";
  bool iommu = false;
  PciePath path = PciePath::kSameSwitch;
  int64_t dma_mask = 64;
  uint64_t bar1_base = 0;  // 0: the profile's
  double link_gbps = 0;    // 0: the profile's
  UnpinPolicy unpin = UnpinPolicy::kLazy;
  bool callback_waits = true;
  bool put_after_callback = false;
  int64_t built_against = 0;  // 0: the GPU driver's own page-table version
  int64_t table_version = 0;  // 0: the profile's
};
struct P2pAllocStep {
  static constexpr const char* kName = "p2p_alloc";
  std::string as;
  uint64_t length = 0;
  int64_t context = 0;
};
struct P2pTokensStep {
  static constexpr const char* kName = "p2p_tokens";
  std::string buffer;
};
// What p2p_pin and p2p_dma take: bytes [offset, offset + length) of a GPU buffer.
struct P2pRange {
  std::string buffer;
  uint64_t offset = 0;
  std::optional<uint64_t> length;  // none: the rest of the buffer
};
struct P2pPinStep : P2pRange {
  static constexpr const char* kName = "p2p_pin";
  P2pTokenSource tokens = P2pTokenSource::kQuery;
};
struct P2pUnpinStep {
  static constexpr const char* kName = "p2p_unpin";
  std::string buffer;
};
struct P2pDmaStep : P2pRange {
  static constexpr const char* kName = "p2p_dma";
  uint64_t block = 0;  // 0: one transfer
  int64_t rounds = 1;
};
struct P2pFreeStep {
  static constexpr const char* kName = "p2p_free";
  std::string buffer;
  bool during_dma = false;
};
// cuMemGetHandleForAddressRange(DMA_BUF_FD) on a device buffer or host memory.
struct DmaBufExportStep {
  static constexpr const char* kName = "dmabuf_export";
  std::string buffer;  // a device buffer (alloc_device); "" when `host` is given
  std::string host;    // host memory instead
  uint64_t offset = 0;
  std::optional<uint64_t> length;  // none: the rest from offset
};

// Managed memory and BAR reads (backends/api/managed.h, docs/seed004.md): GPU memory shrunk by a
// ballast, managed allocations, a processor touching them, prefetch, advice, ping-pong.
struct GpuReserveStep {
  static constexpr const char* kName = "gpu_reserve";
  uint64_t leave = 0;
};
struct ManagedAllocStep {
  static constexpr const char* kName = "managed_alloc";
  std::string as;
  uint64_t length = 0;
};
// What the managed steps take: bytes [offset, offset + length) of a managed allocation.
struct ManagedRange {
  std::string buffer;
  uint64_t offset = 0;
  std::optional<uint64_t> length;  // none: the rest of the allocation
};
struct ManagedTouchStep : ManagedRange {
  static constexpr const char* kName = "managed_touch";
  Processor by = Processor::kGpu;
  bool write = false;
  int64_t rounds = 1;
};
struct ManagedPrefetchStep : ManagedRange {
  static constexpr const char* kName = "managed_prefetch";
  Processor to = Processor::kGpu;
};
struct ManagedAdviseStep : ManagedRange {
  static constexpr const char* kName = "managed_advise";
  ManagedAdvice advice = ManagedAdvice::kReadMostly;
  Processor target = Processor::kGpu;
};
struct ManagedPingPongStep : ManagedRange {
  static constexpr const char* kName = "managed_pingpong";
  int64_t rounds = 1;
};
struct ManagedFreeStep {
  static constexpr const char* kName = "managed_free";
  std::string buffer;
};
struct BarReadStep {
  static constexpr const char* kName = "bar_read";
  std::string device;
  uint64_t length = 0;
};

// A data-acquisition card (backends/api/card.h, docs/digitizer.md): its DMA engine writes blocks
// into the reserved range while a driver reads them. The step's arguments are the card's set-up,
// field for field, all but the seed, which is the run's (the runner sets it).
struct CardStartStep : CardSetup {
  static constexpr const char* kName = "card_start";
};
struct CardRunStep {
  static constexpr const char* kName = "card_run";
  double seconds = 1;
};
struct CardFaultStep {
  static constexpr const char* kName = "card_fault";
  std::string fault;
};
struct CardStopStep {
  static constexpr const char* kName = "card_stop";
  bool wait = true;
  double wait_seconds = 1;
};
struct CardResetStep {
  static constexpr const char* kName = "card_reset";
  double wait_seconds = 1;
};
struct CardReleaseStep {
  static constexpr const char* kName = "card_release";
  double then_seconds = 0.1;
};

// A step's kind and its arguments. The order is the order of docs/scenarios.md's table.
using StepArgs =
    std::variant<BootStep, OpenStep, InfoStep, IoctlStep, MmapStep, MunmapStep, AllocPageableStep,
                 AllocPinnedStep, AllocDeviceStep, ContextStep, DeviceFlagsStep, RegisterStep,
                 UnregisterStep, WriteStep, VerifyStep, MemcpyStep, CopyStep, ZeroCopyStep,
                 OverlapStep, StageStep, ChecksumStep, StreamStep, DoctorStep, P2pSetupStep,
                 P2pAllocStep, P2pTokensStep, P2pPinStep, P2pUnpinStep, P2pDmaStep, P2pFreeStep,
                 GpuReserveStep, ManagedAllocStep, ManagedTouchStep, ManagedPrefetchStep,
                 ManagedAdviseStep, ManagedPingPongStep, ManagedFreeStep, BarReadStep,
                 DmaBufExportStep, CardStartStep, CardRunStep, CardFaultStep, CardStopStep,
                 CardResetStep, CardReleaseStep>;

// The kind's name as a file writes it ("mmap").
const char* StepName(const StepArgs& args);

// An expected value, with the text and line the file gave it (for messages and reports).
template <typename T>
struct Expected {
  T value{};
  std::string written;
  int line = 0;
};

// A count a step must show: exactly N (an integer in the file), or a bound written as a string -
// ">0", ">= 3", "<= 10", "< 5" - where the exact number depends on timing (a card's blocks on a
// real machine).
struct CountBound {
  enum class Op { kEq, kGt, kGe, kLt, kLe } op = Op::kEq;
  int64_t value = 0;
  bool Holds(double got) const;
  std::string Describe() const;  // "exactly 3", "more than 0", ...
};

// The error a step must fail with. Errno and signal names are resolved by the loader; a CUDA name
// is resolved at run time in the backend's numbering (its profile is known only then).
struct ExpectedError {
  enum class Kind { kAny, kCudaName, kErrno, kSignal, kCode } kind = Kind::kAny;
  std::string cuda_name;  // kCudaName
  int code = 0;           // kErrno, kSignal, kCode
};

// What one step must show. Every field absent: the step must succeed. Which fields a step kind
// may carry is in its definition (step_defs.cc).
struct Expectation {
  int line = 0;
  std::optional<Expected<ExpectedError>> error;
  std::optional<Expected<bool>> ok;
  std::optional<Expected<std::string>> message_contains;
  std::optional<Expected<double>> tolerance;  // fraction, for mbps, usable_ram and mem_total
  std::optional<Expected<double>> mbps, seconds_max, mbps_min, mbps_max, ratio_to_serial;
  std::optional<Expected<CountBound>> drops, corrupt;
  std::optional<Expected<int64_t>> reservations, abi_version, pins, hits, evictions;
  std::optional<Expected<uint64_t>> usable_ram, mem_total, size, phys;  // bytes
  // Managed memory (seed 004): the model's fault groups and bytes moved.
  std::optional<Expected<int64_t>> faults;
  std::optional<Expected<uint64_t>> migrated, evicted, remote;  // bytes
  std::optional<Expected<std::string>> path, vm_flags, memory_type, backing, data, mode, cache,
      cmdline;
  std::optional<Expected<bool>> reservation_over_hole;
  // A card (docs/digitizer.md): what the driver counted, and what it missed.
  std::optional<Expected<CountBound>> delivered, torn, timeouts, stray_writes, after_release, silent_losses,
      foreign, duplicate;
  std::optional<Expected<bool>> link_down, stalled;
  std::optional<Expected<std::vector<std::string>>> user_map, dmesg, finding, no_finding, findings,
      events;

  bool empty() const;
  // "key=written, ..." in key order ("ok" when empty); a list longer than 3 entries is
  // summarised as "[N lines]".
  std::string Describe() const;
};

// A backend's own take on a step ([step.on.BACKEND]).
struct BackendOverride {
  std::optional<std::string> skip;  // not applicable on this backend: the reason, printed
  std::optional<Expectation> expect;
  // The step's arguments on this backend, where the file gives some there (a host stand-in allows
  // other lengths than the reserved range: [step.on.cuda] length = "4K"): the step's own with
  // those replaced, checked like the step's own.
  std::optional<StepArgs> args;
};

struct Step {
  StepArgs args;
  std::string file;  // the scenario file and the line of the step's [[step]], for messages
  int line = 0;
  Expectation expect;
  std::map<std::string, BackendOverride> on;  // keyed by backend name

  const char* name() const { return StepName(args); }
};

}  // namespace resmem::scenario

#endif  // RESMEM_ENGINE_SCENARIO_STEPS_H_
