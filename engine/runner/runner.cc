#include "engine/runner/runner.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <cctype>
#include <chrono>
#include <type_traits>
#include <variant>
#include <sstream>
#include <memory>
#include <optional>
#include <vector>

#include "backends/api/backend.h"
#include "backends/fault/rng.h"
#include "engine/backend/backend_factory.h"
#include "backends/platform/proc_parsers.h"
#include "engine/doctor/bandwidth.h"
#include "engine/doctor/doctor.h"
#include "engine/runner/card_steps.h"
#include "engine/runner/headline.h"
#include "engine/runner/judge.h"
#include "engine/runner/patterns.h"
#include "kmod/uapi/resmem_ioctl.h"

namespace resmem::engine {
namespace {

using scenario::Expectation;
using scenario::Expected;
using scenario::ExpectedError;
using scenario::Scenario;
using scenario::Step;
using scenario::StepArgs;

constexpr uint64_t kChunk = 1ull << 20;

// Everything a run holds between steps.
class Run {
 public:
  Run(const Scenario& s, Backend& b, uint64_t seed) : s_(s), b_(b), seed_(seed) {}

  // Runs `step` with `args` (its own, or a backend's where [step.on.B] gives other arguments).
  Status Execute(const Step& step, const StepArgs& args, StepResult* r) {
    return std::visit(
        [&](const auto& kind) -> Status {
          if constexpr (std::is_same_v<std::decay_t<decltype(kind)>, scenario::BootStep>)
            return Boot(step, r);
          else
            return Do(kind, r);
        },
        args);
  }
  // Unregisters, in the context that made it, every registration the steps left, as a program
  // does before it unmaps: a real driver keeps a registration (and its pinned pages) past the
  // munmap, so a later scenario in the same process would meet it (712 for an address range
  // mapped again, and a new context that cannot map it in). Errors are ignored: the scenario's
  // verdict is already decided.
  void ReleaseRegistrations() {
    if (!b_.gpu) return;
    for (auto it = registered_.rbegin(); it != registered_.rend(); ++it) {
      auto span = spans_.find(it->span);
      if (span == spans_.end()) continue;
      if (!b_.gpu->UseContext(it->context).ok()) continue;
      (void)b_.gpu->Unregister(*span->second, it->offset);
    }
    registered_.clear();
  }

 private:
  Result<HostMemory*> Span(const std::string& name) {
    auto it = spans_.find(name);
    if (it == spans_.end())
      return Status::InvalidArgument("no host memory named '" + name +
                                     "': create it first with mmap, alloc_pageable or alloc_pinned");
    return it->second.get();
  }
  Result<DeviceBuffer*> Device(const std::string& name) {
    auto it = devices_.find(name);
    if (it == devices_.end())
      return Status::InvalidArgument("no device buffer named '" + name + "': create it with alloc_device");
    return it->second.get();
  }
  // The span, offset, length and pattern of a write or verify step, bounds checked.
  struct SpanPatternArgs {
    HostMemory* mem = nullptr;
    uint64_t offset = 0, length = 0;
    Pattern pattern;
  };
  Result<SpanPatternArgs> SpanPattern(const scenario::PatternSpan& step, const char* what) {
    SpanPatternArgs a;
    RESMEM_ASSIGN_OR_RETURN(a.mem, Span(step.span));
    a.offset = step.offset;
    a.length = step.length;
    RESMEM_RETURN_IF_ERROR(CheckSpan(*a.mem, a.offset, a.length, what));
    a.pattern = Pattern{step.pattern, PatternSeed()};
    return a;
  }
  // How many times a bandwidth step measures (the `passes` argument, 1 to 1000: the loader
  // checked it). FACTS.md: any one pass on the GPU machine can drop 10-50%, so its files ask for
  // the median of several.
  static Result<int> Passes(int64_t passes) {
    if (passes < 1) return Status::InvalidArgument("passes must be at least 1");
    return static_cast<int>(passes);
  }
  // Runs `once` `passes` times and returns the median of the seconds it reports.
  template <typename F>
  static Result<double> MedianSeconds(int passes, F once) {
    std::vector<double> seconds;
    for (int i = 0; i < passes; ++i) {
      RESMEM_ASSIGN_OR_RETURN(double t, once());
      seconds.push_back(t);
    }
    std::sort(seconds.begin(), seconds.end());
    return seconds[seconds.size() / 2];
  }
  // Seconds and MB/s (MB = 1e6, as the seeds computed them) of a measured transfer.
  static void RecordRate(StepResult* r, uint64_t bytes, double seconds) {
    r->numbers["seconds"] = seconds;
    if (seconds > 0) r->numbers["mbps"] = bytes / seconds / 1e6;
  }
  Status NeedGpu() {
    if (!b_.gpu) return Status::Unavailable("this backend has no GPU part");
    return Status::Ok();
  }
  // A copy between named host memory and a named device buffer, `passes` times: its median rate
  // and the path of the last pass. `copy(host, dev)` makes one.
  template <typename F>
  Status MeasureCopy(const std::string& host_name, const std::string& device_name, int64_t passes_arg,
                     StepResult* r, F copy) {
    RESMEM_RETURN_IF_ERROR(NeedGpu());
    RESMEM_ASSIGN_OR_RETURN(HostMemory * host, Span(host_name));
    RESMEM_ASSIGN_OR_RETURN(DeviceBuffer * dev, Device(device_name));
    RESMEM_ASSIGN_OR_RETURN(int passes, Passes(passes_arg));
    CopyStats cs;
    RESMEM_ASSIGN_OR_RETURN(double seconds, MedianSeconds(passes, [&]() -> Result<double> {
      RESMEM_ASSIGN_OR_RETURN(cs, copy(*host, *dev));
      return cs.seconds;
    }));
    RecordRate(r, cs.bytes, seconds);
    r->texts["path"] = cs.path;
    if (passes > 1) r->numbers["passes"] = passes;
    return Status::Ok();
  }
  uint64_t PatternSeed() const { return seed_; }

  Status Boot(const Step& step, StepResult* r);
  Status Do(const scenario::OpenStep& step, StepResult* r);
  Status Do(const scenario::InfoStep& step, StepResult* r);
  Status Do(const scenario::IoctlStep& step, StepResult* r);
  Status Do(const scenario::MmapStep& step, StepResult* r);
  Status Do(const scenario::MunmapStep& step, StepResult* r);
  Status Do(const scenario::AllocPageableStep& step, StepResult* r);
  Status Do(const scenario::AllocPinnedStep& step, StepResult* r);
  Status Do(const scenario::AllocDeviceStep& step, StepResult* r);
  Status Do(const scenario::ContextStep& step, StepResult* r);
  Status Do(const scenario::DeviceFlagsStep& step, StepResult* r);
  Status Do(const scenario::ZeroCopyStep& step, StepResult* r);
  Status Do(const scenario::OverlapStep& step, StepResult* r);
  Status Do(const scenario::DmaBufExportStep& step, StepResult* r);
  Status Do(const scenario::RegisterStep& step, StepResult* r);
  Status Do(const scenario::UnregisterStep& step, StepResult* r);
  Status Do(const scenario::WriteStep& step, StepResult* r);
  Status Do(const scenario::VerifyStep& step, StepResult* r);
  Status Do(const scenario::MemcpyStep& step, StepResult* r);
  Status Do(const scenario::CopyStep& step, StepResult* r);
  Status Do(const scenario::StageStep& step, StepResult* r);
  Status Do(const scenario::ChecksumStep& step, StepResult* r);
  Status Do(const scenario::StreamStep& step, StepResult* r);
  Status Do(const scenario::DoctorStep& step, StepResult* r);
  Status Do(const scenario::P2pSetupStep& step, StepResult* r);
  Status Do(const scenario::P2pAllocStep& step, StepResult* r);
  Status Do(const scenario::P2pTokensStep& step, StepResult* r);
  Status Do(const scenario::P2pPinStep& step, StepResult* r);
  Status Do(const scenario::P2pUnpinStep& step, StepResult* r);
  Status Do(const scenario::P2pDmaStep& step, StepResult* r);
  Status Do(const scenario::P2pFreeStep& step, StepResult* r);

  // ---- managed memory (seed 004): the backend's part, the allocations by name ----
  Status Do(const scenario::GpuReserveStep& step, StepResult* r);
  Status Do(const scenario::ManagedAllocStep& step, StepResult* r);
  Status Do(const scenario::ManagedTouchStep& step, StepResult* r);
  Status Do(const scenario::ManagedPrefetchStep& step, StepResult* r);
  Status Do(const scenario::ManagedAdviseStep& step, StepResult* r);
  Status Do(const scenario::ManagedPingPongStep& step, StepResult* r);
  Status Do(const scenario::ManagedFreeStep& step, StepResult* r);
  Status Do(const scenario::BarReadStep& step, StepResult* r);
  // ---- a data-acquisition card (engine/runner/card_steps.h) ----
  Status Do(const scenario::CardStartStep& step, StepResult* r) { return DoCardStep(b_, step, seed_, r); }
  Status Do(const scenario::CardRunStep& step, StepResult* r) { return DoCardStep(b_, step, r); }
  Status Do(const scenario::CardFaultStep& step, StepResult* r) { return DoCardStep(b_, step, r); }
  Status Do(const scenario::CardStopStep& step, StepResult* r) { return DoCardStep(b_, step, r); }
  Status Do(const scenario::CardResetStep& step, StepResult* r) { return DoCardStep(b_, step, r); }
  Status Do(const scenario::CardReleaseStep& step, StepResult* r) { return DoCardStep(b_, step, r); }
  Status NeedManaged() {
    if (!b_.managed)
      return Status::Unavailable("this backend has no managed-memory part: run the managed steps on "
                                 "--backend sim or cuda");
    return Status::Ok();
  }
  struct ManagedBuffer {
    uint64_t id = 0, length = 0;
  };
  // The allocation and [offset, offset+length) of a managed step, length absent meaning the rest.
  Result<std::pair<ManagedBuffer, std::pair<uint64_t, uint64_t>>> ManagedRangeOf(const scenario::ManagedRange& step) {
    RESMEM_RETURN_IF_ERROR(NeedManaged());
    auto it = managed_.find(step.buffer);
    if (it == managed_.end())
      return Status::InvalidArgument("no managed allocation named '" + step.buffer + "': create it with managed_alloc");
    const ManagedBuffer& m = it->second;
    if (step.offset > m.length) return Status::InvalidArgument("offset is past the allocation's end");
    const uint64_t len = step.length.value_or(m.length - step.offset);
    if (len > m.length - step.offset) return Status::InvalidArgument("the range runs past the allocation's end");
    return std::make_pair(m, std::make_pair(step.offset, len));
  }
  // Time, rate (`moved` bytes over the time), the model's counters and the events of a managed step.
  static void RecordManaged(const ManagedStats& s, uint64_t moved, StepResult* r) {
    RecordRate(r, moved, s.seconds);
    if (s.rounds > 1) r->numbers["round_us"] = s.seconds / s.rounds * 1e6;
    if (s.counted) {
      r->numbers["faults"] = static_cast<double>(s.faults);
      r->numbers["migrated"] = static_cast<double>(s.migrated);
      r->numbers["evicted"] = static_cast<double>(s.evicted);
      r->numbers["remote"] = static_cast<double>(s.remote);
    }
    if (!s.data.empty()) r->texts["data"] = s.data;
    std::string text;
    for (const auto& e : s.events) text += (text.empty() ? "" : "\n") + e;
    r->texts["events"] = text;
  }
  std::map<std::string, ManagedBuffer> managed_;

  // GPUDirect RDMA: the backend's path, the GPU buffers by name, and what the steps record.
  Status NeedGpuDirect() {
    if (!b_.gpudirect)
      return Status::Unavailable("this backend has no GPUDirect RDMA part (nvidia_p2p_get_pages is a "
                                 "kernel interface): run the p2p steps on --backend sim, or name one "
                                 "with --option gpudirect=NAME");
    return Status::Ok();
  }
  struct GpuBuffer {
    uint64_t va = 0, length = 0;
  };
  Result<GpuBuffer> Buffer(const std::string& name) {
    auto it = gpu_buffers_.find(name);
    if (it == gpu_buffers_.end())
      return Status::InvalidArgument("no GPU buffer named '" + name + "': create it with p2p_alloc");
    return it->second;
  }
  // [offset, offset+length) of a buffer, length absent meaning the rest of it.
  static Result<std::pair<uint64_t, uint64_t>> BufferRange(const GpuBuffer& b, uint64_t offset,
                                                           const std::optional<uint64_t>& length) {
    if (offset > b.length) return Status::InvalidArgument("offset is past the buffer's end");
    const uint64_t len = length.value_or(b.length - offset);
    if (len > b.length - offset) return Status::InvalidArgument("the range runs past the buffer's end");
    return std::make_pair(b.va + offset, len);
  }
  // The P2P events since `from`, one per line, as the step's observation "events".
  void RecordEvents(size_t from, StepResult* r) {
    if (!b_.gpudirect) return;
    const std::vector<std::string> ev = b_.gpudirect->Events();
    std::string text;
    for (size_t i = from; i < ev.size(); ++i) text += (text.empty() ? "" : "\n") + ev[i];
    r->texts["events"] = text;
  }
  size_t EventCount() const { return b_.gpudirect ? b_.gpudirect->Events().size() : 0; }
  std::map<std::string, GpuBuffer> gpu_buffers_;
  std::map<std::string, P2pTokens> p2p_tokens_;
  std::map<std::string, uint64_t> p2p_pins_;

  const Scenario& s_;
  Backend& b_;
  uint64_t seed_;
  std::unique_ptr<RegionHandle> handle_;
  std::map<std::string, std::unique_ptr<HostMemory>> spans_;
  std::map<std::string, std::unique_ptr<DeviceBuffer>> devices_;
  std::map<std::string, int> contexts_{{"primary", 0}};
  struct Registration {
    std::string span;
    uint64_t offset;
    int context;
  };
  std::vector<Registration> registered_;
  void Registered(const std::string& span, uint64_t offset) {
    registered_.push_back({span, offset, b_.gpu->current_context()});
  }
};

// Does any expectation of `step` (its own or a backend's) ask for the kernel log?
bool ExpectsKernelLog(const Step& step) {
  auto wants = [](const Expectation& e) { return e.user_map || e.dmesg; };
  if (wants(step.expect)) return true;
  for (const auto& [backend, o] : step.on)
    if (o.expect && wants(*o.expect)) return true;
  return false;
}

Status Run::Boot(const Step& step, StepResult* r) {
  if (ExpectsKernelLog(step)) {
    auto log = b_.platform->ReadSource("dmesg");
    if (!log.ok())
      return log.status().WithContext("the boot step's user_map/dmesg expectation needs the "
                                      "kernel log, which this backend does not give");
    r->texts["kernel_log"] = *log;
  }
  // The platform's own view of the booted machine, through the same texts the doctor reads.
  auto cmdline = b_.platform->ReadSource("/proc/cmdline");
  if (cmdline.ok()) {
    std::string c = *cmdline;
    while (!c.empty() && (c.back() == '\n' || c.back() == ' ')) c.pop_back();
    r->texts["cmdline"] = c;
  }
  auto facts = CollectMachineFacts(*b_.platform);
  if (!facts.ok()) return facts.status();
  r->numbers["mem_total"] = static_cast<double>(facts->mem_total);
  r->numbers["usable_ram"] = static_cast<double>(facts->usable_ram);
  r->numbers["reservations"] = static_cast<double>(facts->reservations.size());
  bool over_hole = false;
  for (const auto& res : facts->reservations) over_hole |= res.over_hole;
  r->texts["reservation_over_hole"] = over_hole ? "true" : "false";
  return Status::Ok();
}

Status Run::Do(const scenario::OpenStep& step, StepResult*) {
  OpenRequest req;
  req.path = step.device;
  req.sync = step.sync;
  RESMEM_ASSIGN_OR_RETURN(handle_, b_.regions->Open(req));
  return Status::Ok();
}

Status Run::Do(const scenario::InfoStep&, StepResult* r) {
  if (!handle_) return Status::InvalidArgument("info before open: add an open step first");
  RESMEM_ASSIGN_OR_RETURN(RegionInfo info, handle_->Info());
  r->numbers["size"] = static_cast<double>(info.size);
  r->numbers["phys"] = static_cast<double>(info.phys_addr);
  r->numbers["abi_version"] = info.abi_version;
  r->texts["mode"] = MapModeName(info.mode);
  r->texts["cache"] = CacheTypeName(info.cache);
  r->texts["device"] = info.device;
  return Status::Ok();
}

Status Run::Do(const scenario::IoctlStep& step, StepResult*) {
  if (!handle_) return Status::InvalidArgument("ioctl before open: add an open step first");
  resmem_info info{};
  void* arg = step.null_arg ? nullptr : &info;
  return handle_->Ioctl(static_cast<unsigned long>(step.cmd), arg);
}

Status Run::Do(const scenario::MmapStep& step, StepResult* r) {
  if (!handle_) return Status::InvalidArgument("mmap before open: add an open step first");
  RESMEM_ASSIGN_OR_RETURN(RegionInfo info, handle_->Info());
  MapRequest req;
  req.offset = step.offset;
  const uint64_t rest = info.size > req.offset ? info.size - req.offset : 0;
  req.length = step.length.value_or(rest);
  req.writable = step.writable;
  RESMEM_ASSIGN_OR_RETURN(auto mem, handle_->Map(req));
  const MappingFacts& f = mem->facts();
  std::string flags;
  if (f.vm_pfnmap) flags += "pf ";
  if (f.vm_io) flags += "io ";
  if (f.vm_mixedmap) flags += "mm ";
  if (!flags.empty()) flags.pop_back();
  r->texts["vm_flags"] = flags;
  r->texts["memory_type"] = MemoryTypeName(f.memory_type);
  r->texts["backing"] = BackingName(f.backing);
  r->texts["facts"] = f.Describe();
  spans_[step.as] = std::move(mem);
  return Status::Ok();
}

Status Run::Do(const scenario::MunmapStep& step, StepResult*) {
  auto it = spans_.find(step.span);
  if (it == spans_.end()) return Status::InvalidArgument("no mapping named '" + step.span + "'");
  spans_.erase(it);
  return Status::Ok();
}

Status Run::Do(const scenario::AllocPageableStep& step, StepResult*) {
  RESMEM_ASSIGN_OR_RETURN(auto mem, b_.platform->AllocPageable(step.length));
  spans_[step.as] = std::move(mem);
  return Status::Ok();
}

Status Run::Do(const scenario::AllocPinnedStep& step, StepResult*) {
  RESMEM_RETURN_IF_ERROR(NeedGpu());
  RESMEM_ASSIGN_OR_RETURN(auto mem, b_.gpu->AllocPinned(step.length, step.flags));
  spans_[step.as] = std::move(mem);
  return Status::Ok();
}

Status Run::Do(const scenario::AllocDeviceStep& step, StepResult*) {
  RESMEM_RETURN_IF_ERROR(NeedGpu());
  RESMEM_ASSIGN_OR_RETURN(auto dev, b_.gpu->AllocDevice(step.length));
  devices_[step.as] = std::move(dev);
  return Status::Ok();
}

Status Run::Do(const scenario::ContextStep& step, StepResult*) {
  RESMEM_RETURN_IF_ERROR(NeedGpu());
  if (step.action == scenario::ContextAction::kCreate) {
    RESMEM_ASSIGN_OR_RETURN(int ctx, b_.gpu->CreateContextWithFlags(
                                         static_cast<int>(step.device), step.map_host ? uint32_t{kDeviceMapHost} : 0u));
    contexts_[step.name] = ctx;
    return Status::Ok();
  }
  auto it = contexts_.find(step.name);
  if (it == contexts_.end())
    return Status::InvalidArgument("no context named '" + step.name + "'; create it first");
  return b_.gpu->UseContext(it->second);
}

Status Run::Do(const scenario::DeviceFlagsStep& step, StepResult*) {
  RESMEM_RETURN_IF_ERROR(NeedGpu());
  return b_.gpu->SetDeviceFlags(step.map_host ? uint32_t{kDeviceMapHost} : 0u);
}

Status Run::Do(const scenario::RegisterStep& step, StepResult* r) {
  RESMEM_RETURN_IF_ERROR(NeedGpu());
  RESMEM_ASSIGN_OR_RETURN(HostMemory * mem, Span(step.span));
  const uint64_t off = step.offset;
  const uint64_t len = step.length.value_or(mem->size() > off ? mem->size() - off : 0);
  const uint32_t flags = step.flags;
  uint64_t chunk = step.chunk;
  r->texts["flags"] = RegisterFlagsName(flags);
  const double t0 = b_.clock->NowSeconds();
  uint64_t calls = 0;
  if (chunk == 0) chunk = len ? len : 1;
  for (uint64_t done = 0; done < len || (len == 0 && calls == 0); ) {
    const uint64_t n = std::min(chunk, len - done);
    Status st = b_.gpu->Register(*mem, off + done, n, flags);
    ++calls;
    if (st.ok()) Registered(step.span, off + done);
    if (!st.ok()) {
      r->numbers["calls"] = static_cast<double>(calls);
      r->numbers["seconds"] = b_.clock->NowSeconds() - t0;
      return st.WithContext("cudaHostRegister call " + std::to_string(calls) + " of [" +
                            std::to_string(off + done) + ", +" + FormatSize(n) + ")");
    }
    done += n;
    if (len == 0) break;
  }
  r->numbers["calls"] = static_cast<double>(calls);
  r->numbers["seconds"] = b_.clock->NowSeconds() - t0;
  return Status::Ok();
}

Status Run::Do(const scenario::UnregisterStep& step, StepResult*) {
  RESMEM_RETURN_IF_ERROR(NeedGpu());
  RESMEM_ASSIGN_OR_RETURN(HostMemory * mem, Span(step.span));
  return b_.gpu->Unregister(*mem, step.offset);
}

Status Run::Do(const scenario::WriteStep& step, StepResult*) {
  RESMEM_ASSIGN_OR_RETURN(SpanPatternArgs a, SpanPattern(step, "write"));
  HostMemory* mem = a.mem;
  const uint64_t off = a.offset, len = a.length;
  const Pattern& p = a.pattern;
  std::vector<uint8_t> buf(std::min(len, kChunk));
  for (uint64_t done = 0; done < len;) {
    const uint64_t n = std::min<uint64_t>(buf.size(), len - done);
    FillPattern(p, off + done, buf.data(), n);
    RESMEM_RETURN_IF_ERROR(mem->Write(off + done, buf.data(), n));
    done += n;
  }
  return Status::Ok();
}

Status Run::Do(const scenario::VerifyStep& step, StepResult* r) {
  RESMEM_ASSIGN_OR_RETURN(SpanPatternArgs a, SpanPattern(step, "verify"));
  HostMemory* mem = a.mem;
  const uint64_t off = a.offset, len = a.length;
  const Pattern& p = a.pattern;
  std::vector<uint8_t> got(std::min(len, kChunk)), want(got.size());
  uint64_t mismatched = 0, zero = 0;
  int64_t first_bad = -1;
  for (uint64_t done = 0; done < len;) {
    const uint64_t n = std::min<uint64_t>(got.size(), len - done);
    RESMEM_RETURN_IF_ERROR(mem->Read(off + done, got.data(), n));
    FillPattern(p, off + done, want.data(), n);
    for (uint64_t i = 0; i < n; ++i) {
      if (got[i] == 0) ++zero;
      if (got[i] != want[i]) {
        ++mismatched;
        if (first_bad < 0) first_bad = static_cast<int64_t>(off + done + i);
      }
    }
    done += n;
  }
  r->numbers["mismatched_bytes"] = static_cast<double>(mismatched);
  r->texts["data"] = mismatched == 0 ? "intact" : (zero == len ? "zeros" : "mismatch");
  if (first_bad >= 0) r->numbers["first_mismatch_offset"] = static_cast<double>(first_bad);
  return Status::Ok();
}


Status Run::Do(const scenario::MemcpyStep& step, StepResult* r) {
  RESMEM_ASSIGN_OR_RETURN(HostMemory * dst, Span(step.dst));
  RESMEM_ASSIGN_OR_RETURN(HostMemory * src, Span(step.src));
  RESMEM_ASSIGN_OR_RETURN(int passes, Passes(step.passes));
  RESMEM_ASSIGN_OR_RETURN(double seconds, MedianSeconds(passes, [&]() {
    return b_.platform->CopyHost(*dst, step.dst_offset, *src, step.src_offset, step.length);
  }));
  RecordRate(r, step.length, seconds);
  if (passes > 1) r->numbers["passes"] = passes;
  return Status::Ok();
}

Status Run::Do(const scenario::CopyStep& step, StepResult* r) {
  return MeasureCopy(step.host, step.device, step.passes, r, [&](HostMemory& host, DeviceBuffer& dev) {
    return b_.gpu->Copy(step.direction, host, step.host_offset, dev, step.device_offset, step.length);
  });
}

Status Run::Do(const scenario::ZeroCopyStep& step, StepResult* r) {
  return MeasureCopy(step.host, step.device, step.passes, r, [&](HostMemory& host, DeviceBuffer& dev) {
    return b_.gpu->CopyMapped(step.direction, host, step.host_offset, dev, step.device_offset, step.length);
  });
}

Status Run::Do(const scenario::OverlapStep& step, StepResult* r) {
  RESMEM_RETURN_IF_ERROR(NeedGpu());
  RESMEM_ASSIGN_OR_RETURN(HostMemory * host, Span(step.host));
  RESMEM_ASSIGN_OR_RETURN(DeviceBuffer * dev, Device(step.device));
  RESMEM_ASSIGN_OR_RETURN(int passes, Passes(step.passes));
  PipelineSpec spec;
  spec.host_offset = step.host_offset;
  spec.block_size = step.block_size;
  spec.blocks = static_cast<int>(step.blocks);
  spec.streams = static_cast<int>(step.streams);
  spec.kernel_us = step.kernel_us;
  PipelineStats ps;
  // Each pass's ratio with the path the backend read from it: the step reports the median pass's
  // pair, so the path always agrees with the ratio printed beside it (the last pass's path beside
  // the median ratio read "overlapped" at 0.95 of serial on a disturbed H100 host,
  // docs/hil/2026-11-24-h100-staged6 run 8).
  std::vector<std::pair<double, std::string>> ratios;
  RESMEM_ASSIGN_OR_RETURN(double seconds, MedianSeconds(passes, [&]() -> Result<double> {
    RESMEM_ASSIGN_OR_RETURN(ps, b_.gpu->CopyKernelPipeline(*host, *dev, spec));
    ratios.emplace_back(ps.ratio_to_serial, ps.path);
    return ps.seconds;
  }));
  std::sort(ratios.begin(), ratios.end());
  RecordRate(r, ps.bytes, seconds);
  r->numbers["ratio_to_serial"] = ratios[ratios.size() / 2].first;
  r->numbers["copy_seconds"] = ps.copy_seconds;  // of the last pass
  r->numbers["kernel_seconds"] = ps.kernel_seconds;
  r->texts["path"] = ratios[ratios.size() / 2].second;
  if (passes > 1) r->numbers["passes"] = passes;
  return Status::Ok();
}

Status Run::Do(const scenario::DmaBufExportStep& step, StepResult* r) {
  RESMEM_RETURN_IF_ERROR(NeedGpu());
  if (step.buffer.empty() == step.host.empty())
    return Status::InvalidArgument("dmabuf_export: give either buffer (a device buffer) or host "
                                   "(host memory), not both and not neither");
  DmaBufExport e;
  if (!step.buffer.empty()) {
    RESMEM_ASSIGN_OR_RETURN(DeviceBuffer * dev, Device(step.buffer));
    const uint64_t len = step.length.value_or(dev->size() > step.offset ? dev->size() - step.offset : 0);
    RESMEM_ASSIGN_OR_RETURN(e, b_.gpu->ExportDmaBuf(*dev, step.offset, len));
  } else {
    RESMEM_ASSIGN_OR_RETURN(HostMemory * host, Span(step.host));
    const uint64_t len = step.length.value_or(host->size() > step.offset ? host->size() - step.offset : 0);
    RESMEM_ASSIGN_OR_RETURN(e, b_.gpu->ExportDmaBufHost(*host, step.offset, len));
  }
  r->numbers["size"] = static_cast<double>(e.size);
  return Status::Ok();
}

// The seed-000 workaround: memcpy from the mapping into a pinned buffer, then DMA from there.
Status Run::Do(const scenario::StageStep& step, StepResult* r) {
  RESMEM_RETURN_IF_ERROR(NeedGpu());
  RESMEM_ASSIGN_OR_RETURN(HostMemory * src, Span(step.src));
  RESMEM_ASSIGN_OR_RETURN(HostMemory * staging, Span(step.staging));
  RESMEM_ASSIGN_OR_RETURN(DeviceBuffer * dev, Device(step.device));
  const uint64_t soff = step.src_offset, len = step.length;
  RESMEM_ASSIGN_OR_RETURN(int passes, Passes(step.passes));
  double t_copy = 0, t_dma = 0;
  RESMEM_ASSIGN_OR_RETURN(double seconds, MedianSeconds(passes, [&]() -> Result<double> {
    RESMEM_ASSIGN_OR_RETURN(t_copy, b_.platform->CopyHost(*staging, 0, *src, soff, len));
    RESMEM_ASSIGN_OR_RETURN(CopyStats cs, b_.gpu->Copy(CopyDirection::kHostToDevice, *staging, 0, *dev, 0, len));
    t_dma = cs.seconds;
    return t_copy + cs.seconds;
  }));
  RecordRate(r, len, seconds);
  r->numbers["memcpy_seconds"] = t_copy;  // of the last pass
  r->numbers["dma_seconds"] = t_dma;
  if (passes > 1) r->numbers["passes"] = passes;
  return Status::Ok();
}

Status Run::Do(const scenario::ChecksumStep& step, StepResult* r) {
  RESMEM_RETURN_IF_ERROR(NeedGpu());
  RESMEM_ASSIGN_OR_RETURN(HostMemory * host, Span(step.host));
  RESMEM_ASSIGN_OR_RETURN(DeviceBuffer * dev, Device(step.device));
  const uint64_t hoff = step.host_offset, len = step.length;
  RESMEM_RETURN_IF_ERROR(CheckSpan(*host, hoff, len, "checksum"));
  uint64_t h = 0xcbf29ce484222325ull;
  std::vector<uint8_t> buf(std::min(len, kChunk));
  for (uint64_t done = 0; done < len;) {
    const uint64_t n = std::min<uint64_t>(buf.size(), len - done);
    RESMEM_RETURN_IF_ERROR(host->Read(hoff + done, buf.data(), n));
    h = Fnv1a64(buf.data(), n, h);
    done += n;
  }
  RESMEM_ASSIGN_OR_RETURN(uint64_t d, b_.gpu->DeviceChecksum(*dev, step.device_offset, len));
  char hex[64];
  std::snprintf(hex, sizeof hex, "host %016" PRIx64 " device %016" PRIx64, h, d);
  r->texts["checksums"] = hex;
  r->texts["data"] = h == d ? "intact" : "mismatch";
  return Status::Ok();
}

// A short acquisition on the backend's clock. The producer (the FPGA's stand-in) writes block k,
// numbered and checksummed, into ring slot k % slots at k / rate_hz; the consumer copies each slot
// to the device and checks it there. A block the producer overwrites before the consumer starts
// copying it is a drop; a block whose device checksum differs from its header is corrupt.
Status Run::Do(const scenario::StreamStep& step, StepResult* r) {
  RESMEM_RETURN_IF_ERROR(NeedGpu());
  RESMEM_ASSIGN_OR_RETURN(HostMemory * ring, Span(step.span));
  RESMEM_ASSIGN_OR_RETURN(DeviceBuffer * dev, Device(step.device));
  const uint64_t block = step.block_size;
  const int64_t blocks = step.blocks;
  const double rate = step.rate_hz;
  if (block < 64 || block > ring->size() || block > dev->size())
    return Status::InvalidArgument("stream: block_size must be >= 64 B and fit in the ring (" +
                                   FormatSize(ring->size()) + ") and the device buffer (" +
                                   FormatSize(dev->size()) + ")");
  if (blocks <= 0) return Status::InvalidArgument("stream: blocks must be positive");
  if (step.register_ring) {
    RESMEM_RETURN_IF_ERROR(b_.gpu->Register(*ring, 0, ring->size(), 0));
    Registered(step.span, 0);
  }
  const uint64_t slots = ring->size() / block;
  std::vector<uint8_t> buf(block);
  const Pattern p{Pattern::Kind::kSeeded, PatternSeed()};
  uint64_t drops = 0, corrupt = 0, delivered = 0;
  std::vector<double> latencies;
  const double start = b_.clock->NowSeconds();
  double consumer_free = start;
  for (int64_t k = 0; k < blocks; ++k) {
    const uint64_t slot = static_cast<uint64_t>(k) % slots;
    const double produced = rate > 0 ? start + k / rate : std::max(consumer_free, b_.clock->NowSeconds());
    // Producer writes header (block number, payload checksum) and payload.
    FillPattern(p, static_cast<uint64_t>(k) * block, buf.data(), block);
    std::memcpy(buf.data(), &k, sizeof k);
    const uint64_t sum = Fnv1a64(buf.data() + 16, block - 16);
    std::memcpy(buf.data() + 8, &sum, sizeof sum);
    FaultOutcome fo = b_.faults->Check("stream.block", slot * block, block);
    if (fo.fired && fo.effect == FaultEffect::kCorrupt) buf[16 + fo.corrupt_offset % (block - 16)] ^= fo.corrupt_xor;
    if (fo.fired && fo.effect == FaultEffect::kError) return fo.status;
    RESMEM_RETURN_IF_ERROR(ring->Write(slot * block, buf.data(), block));
    // Consumer: starts when both the block is there and the previous copy finished.
    const double begin = std::max(produced, consumer_free);
    if (rate > 0 && begin >= start + (k + slots) / rate) {
      ++drops;  // overwritten before it could be read
      continue;
    }
    RESMEM_ASSIGN_OR_RETURN(CopyStats cs, b_.gpu->Copy(CopyDirection::kHostToDevice, *ring, slot * block, *dev, 0, block));
    consumer_free = begin + cs.seconds;
    latencies.push_back(consumer_free - produced);
    RESMEM_ASSIGN_OR_RETURN(uint64_t dsum, b_.gpu->DeviceChecksum(*dev, 16, block - 16));
    if (dsum != sum) ++corrupt;
    ++delivered;
  }
  const double elapsed = std::max(consumer_free - start, rate > 0 ? (blocks - 1) / rate : 0.0);
  r->numbers["drops"] = static_cast<double>(drops);
  r->numbers["corrupt"] = static_cast<double>(corrupt);
  r->numbers["delivered"] = static_cast<double>(delivered);
  if (elapsed > 0) r->numbers["mbps"] = delivered * static_cast<double>(block) / elapsed / 1e6;
  if (!latencies.empty()) {
    std::sort(latencies.begin(), latencies.end());
    r->numbers["latency_p50_ms"] = latencies[latencies.size() / 2] * 1e3;
    r->numbers["latency_p99_ms"] = latencies[std::min(latencies.size() - 1, latencies.size() * 99 / 100)] * 1e3;
    r->numbers["latency_max_ms"] = latencies.back() * 1e3;
  }
  return Status::Ok();
}

Status Run::Do(const scenario::DoctorStep& step, StepResult* r) {
  auto report = Diagnose(*b_.platform, step.devices ? b_.regions.get() : nullptr);
  if (!report.ok()) return report.status();
  if (step.bandwidth)  // engine/doctor/bandwidth.h: its findings join the doctor's
    for (auto& f : DiagnoseBandwidth(*b_.platform, b_.gpu.get(), report->facts).findings)
      report->findings.push_back(std::move(f));
  std::string ids;
  for (const auto& f : report->findings) ids += (ids.empty() ? "" : ",") + f.id;
  r->texts["findings"] = ids;
  return Status::Ok();
}

// ---- GPUDirect RDMA ----

Status Run::Do(const scenario::P2pSetupStep& step, StepResult* r) {
  RESMEM_RETURN_IF_ERROR(NeedGpuDirect());
  GpuDirectConfig c;
  c.gpu = step.gpu;
  c.iommu = step.iommu;
  c.path = step.path;
  c.dma_mask_bits = static_cast<int>(step.dma_mask);
  if (step.bar1_base) c.bar1_base = step.bar1_base;
  if (step.link_gbps != 0) c.link_gbps = step.link_gbps;  // Configure refuses one below 0
  c.unpin = step.unpin;
  c.callback_waits_for_dma = step.callback_waits;
  c.put_pages_after_callback = step.put_after_callback;
  c.built_against_version = static_cast<uint32_t>(step.built_against);
  c.table_version = static_cast<uint32_t>(step.table_version);
  gpu_buffers_.clear();
  p2p_tokens_.clear();
  p2p_pins_.clear();
  Status st = b_.gpudirect->Configure(c);
  RecordEvents(0, r);
  return st;
}

Status Run::Do(const scenario::P2pAllocStep& step, StepResult* r) {
  RESMEM_RETURN_IF_ERROR(NeedGpuDirect());
  const size_t from = EventCount();
  auto va = b_.gpudirect->AllocGpu(step.length, static_cast<int>(step.context));
  RecordEvents(from, r);
  if (!va.ok()) return va.status();
  gpu_buffers_[step.as] = {*va, step.length};
  return Status::Ok();
}

Status Run::Do(const scenario::P2pTokensStep& step, StepResult* r) {
  RESMEM_RETURN_IF_ERROR(NeedGpuDirect());
  RESMEM_ASSIGN_OR_RETURN(GpuBuffer buf, Buffer(step.buffer));
  RESMEM_ASSIGN_OR_RETURN(P2pTokens t, b_.gpudirect->QueryTokens(buf.va));
  p2p_tokens_[step.buffer] = t;
  r->texts["tokens"] = DescribeTokens(t);
  return Status::Ok();
}

Status Run::Do(const scenario::P2pPinStep& step, StepResult* r) {
  RESMEM_RETURN_IF_ERROR(NeedGpuDirect());
  RESMEM_ASSIGN_OR_RETURN(GpuBuffer buf, Buffer(step.buffer));
  RESMEM_ASSIGN_OR_RETURN(auto range, BufferRange(buf, step.offset, step.length));
  P2pTokens tokens;
  if (step.tokens == scenario::P2pTokenSource::kQuery) {
    RESMEM_ASSIGN_OR_RETURN(tokens, b_.gpudirect->QueryTokens(buf.va));
  } else if (step.tokens == scenario::P2pTokenSource::kCached) {
    auto it = p2p_tokens_.find(step.buffer);
    if (it == p2p_tokens_.end())
      return Status::InvalidArgument("tokens = \"cached\" but no p2p_tokens step queried '" + step.buffer + "' before");
    tokens = it->second;
  }
  r->texts["tokens"] = DescribeTokens(tokens);
  const size_t from = EventCount();
  auto table = b_.gpudirect->Pin(tokens, range.first, range.second);
  RecordEvents(from, r);
  if (!table.ok()) return table.status();
  p2p_pins_[step.buffer] = table->id;
  char text[96];
  std::snprintf(text, sizeof text, "page table version 0x%08" PRIx32 ", %zu pages of %s", table->version,
                table->physical_addresses.size(), FormatSize(table->page_size).c_str());
  r->texts["page_table"] = text;
  return Status::Ok();
}

Status Run::Do(const scenario::P2pUnpinStep& step, StepResult* r) {
  RESMEM_RETURN_IF_ERROR(NeedGpuDirect());
  auto it = p2p_pins_.find(step.buffer);
  if (it == p2p_pins_.end())
    return Status::InvalidArgument("no p2p_pin of '" + step.buffer + "' to unpin: pin it first");
  const size_t from = EventCount();
  Status st = b_.gpudirect->Unpin(it->second);
  RecordEvents(from, r);
  if (st.ok()) p2p_pins_.erase(it);
  return st;
}

Status Run::Do(const scenario::P2pDmaStep& step, StepResult* r) {
  RESMEM_RETURN_IF_ERROR(NeedGpuDirect());
  RESMEM_ASSIGN_OR_RETURN(GpuBuffer buf, Buffer(step.buffer));
  RESMEM_ASSIGN_OR_RETURN(auto range, BufferRange(buf, step.offset, step.length));
  const size_t from = EventCount();
  auto stats = b_.gpudirect->Dma(range.first, range.second, step.block, static_cast<int>(step.rounds));
  RecordEvents(from, r);
  if (!stats.ok()) return stats.status();
  RecordRate(r, stats->bytes, stats->seconds);
  r->numbers["transfers"] = static_cast<double>(stats->transfers);
  r->numbers["pins"] = static_cast<double>(stats->pins);
  r->numbers["hits"] = static_cast<double>(stats->hits);
  r->numbers["evictions"] = static_cast<double>(stats->evictions);
  r->texts["path"] = stats->route;
  r->texts["data"] = stats->data;
  r->texts["note"] = stats->note;
  return Status::Ok();
}

Status Run::Do(const scenario::P2pFreeStep& step, StepResult* r) {
  RESMEM_RETURN_IF_ERROR(NeedGpuDirect());
  RESMEM_ASSIGN_OR_RETURN(GpuBuffer buf, Buffer(step.buffer));
  const size_t from = EventCount();
  // The name keeps the address, as a program's pointer outlives cudaFree: a later step that uses
  // it asks the model what a dangling GPU pointer does.
  Status st = b_.gpudirect->FreeGpu(buf.va, step.during_dma);
  RecordEvents(from, r);
  return st;
}

// ---- judging ----

// ---- managed memory (seed 004) ----

Status Run::Do(const scenario::GpuReserveStep& step, StepResult*) {
  RESMEM_RETURN_IF_ERROR(NeedManaged());
  return b_.managed->ReserveDevice(step.leave);
}

Status Run::Do(const scenario::ManagedAllocStep& step, StepResult*) {
  RESMEM_RETURN_IF_ERROR(NeedManaged());
  RESMEM_ASSIGN_OR_RETURN(uint64_t id, b_.managed->Alloc(step.length));
  managed_[step.as] = {id, step.length};
  return Status::Ok();
}

Status Run::Do(const scenario::ManagedTouchStep& step, StepResult* r) {
  RESMEM_ASSIGN_OR_RETURN(auto range, ManagedRangeOf(step));
  const auto [off, len] = range.second;
  RESMEM_ASSIGN_OR_RETURN(ManagedStats s, b_.managed->Touch(range.first.id, off, len, step.by, step.write,
                                                            static_cast<int>(step.rounds)));
  RecordManaged(s, len * static_cast<uint64_t>(step.rounds), r);
  return Status::Ok();
}

Status Run::Do(const scenario::ManagedPrefetchStep& step, StepResult* r) {
  RESMEM_ASSIGN_OR_RETURN(auto range, ManagedRangeOf(step));
  const auto [off, len] = range.second;
  RESMEM_ASSIGN_OR_RETURN(ManagedStats s, b_.managed->Prefetch(range.first.id, off, len, step.to));
  RecordManaged(s, len, r);
  return Status::Ok();
}

Status Run::Do(const scenario::ManagedAdviseStep& step, StepResult*) {
  RESMEM_ASSIGN_OR_RETURN(auto range, ManagedRangeOf(step));
  const auto [off, len] = range.second;
  return b_.managed->Advise(range.first.id, off, len, step.advice, step.target);
}

Status Run::Do(const scenario::ManagedPingPongStep& step, StepResult* r) {
  RESMEM_ASSIGN_OR_RETURN(auto range, ManagedRangeOf(step));
  const auto [off, len] = range.second;
  RESMEM_ASSIGN_OR_RETURN(ManagedStats s, b_.managed->PingPong(range.first.id, off, len, static_cast<int>(step.rounds)));
  RecordManaged(s, 2 * len * static_cast<uint64_t>(step.rounds), r);  // both sides write it each round
  return Status::Ok();
}

Status Run::Do(const scenario::ManagedFreeStep& step, StepResult*) {
  RESMEM_RETURN_IF_ERROR(NeedManaged());
  auto it = managed_.find(step.buffer);
  if (it == managed_.end())
    return Status::InvalidArgument("no managed allocation named '" + step.buffer + "': create it with managed_alloc");
  Status st = b_.managed->Free(it->second.id);
  managed_.erase(it);
  return st;
}

Status Run::Do(const scenario::BarReadStep& step, StepResult* r) {
  RESMEM_RETURN_IF_ERROR(NeedManaged());
  RESMEM_ASSIGN_OR_RETURN(DeviceBuffer * dev, Device(step.device));
  if (step.length > dev->size())
    return Status::InvalidArgument("bar_read: length " + FormatSize(step.length) + " is larger than the device buffer (" +
                                   FormatSize(dev->size()) + ")");
  RESMEM_ASSIGN_OR_RETURN(ManagedStats s, b_.managed->ReadDeviceThroughBar(step.length));
  RecordManaged(s, step.length, r);
  return Status::Ok();
}

}  // namespace


namespace {

// The backend a case runs on, or the verdict that stops it before any step: a backend name that
// is not one (ERROR), a file not applicable there (N/A), a fault rule that does not parse
// (ERROR), a part this machine lacks (UNAVAILABLE).
std::optional<Backend> PrepareBackend(const Scenario& s, const RunOptions& options,
                                      ScenarioResult* res) {
  auto stop = [&](ScenarioVerdict v, const std::string& why) {
    res->verdict = v;
    res->reason = why;
    return std::nullopt;
  };
  auto spec = ResolveBackendSpec(options.backend);
  if (!spec.ok()) return stop(ScenarioVerdict::kError, spec.status().message());
  if (auto na = s.not_applicable.find(options.backend); na != s.not_applicable.end())
    return stop(ScenarioVerdict::kNotApplicable, na->second);
  PartContext ctx;
  ctx.machine = s.machine;
  ctx.driver = s.driver;
  ctx.cuda_profile = s.cuda_profile;
  ctx.gpu_count = s.gpu_count;
  ctx.seed = res->seed;
  ctx.options = options.options;
  ctx.faults = std::make_shared<FaultInjector>(res->seed);
  for (const auto& rule : s.faults)
    if (Status st = ctx.faults->AddRule(rule); !st.ok()) return stop(ScenarioVerdict::kError, st.message());
  auto backend = MakeBackend(*spec, ctx);
  if (backend.ok()) return std::move(*backend);
  const Status& st = backend.status();
  const bool unavailable = st.space() == ErrorSpace::kResmem && st.code() == kUnavailable;
  return stop(unavailable ? ScenarioVerdict::kUnavailable : ScenarioVerdict::kError, st.message());
}

// A case's steps in order, each judged: where the run is after the last one.
struct StepsRun {
  bool failed = false;
  std::string headline, unavailable;
};

// One step: this backend's overrides (skip, expect, args), run unless an earlier one stopped
// the case, judged, its headline part added.
void RunStep(Run& run, const Step& step, int index, const std::string& backend, bool virtual_clock,
             const std::string& profile, bool* stopped, StepsRun* out, ScenarioResult* res) {
  StepResult r;
  r.index = index;
  r.op = step.name();
  r.line = step.line;
  const Expectation* expect = &step.expect;
  const StepArgs* args = &step.args;  // this backend's, where the file gives some
  if (auto on = step.on.find(backend); on != step.on.end()) {
    if (on->second.skip) {
      r.verdict = StepVerdict::kSkipped;
      r.note = *on->second.skip;
      res->steps.push_back(r);
      return;
    }
    if (on->second.expect) expect = &*on->second.expect;
    if (on->second.args) args = &*on->second.args;
  }
  r.expected = expect->Describe();
  if (*stopped) {
    r.verdict = StepVerdict::kNotRun;
    r.note = "an earlier step failed";
    res->steps.push_back(r);
    return;
  }
  const Status st = run.Execute(step, *args, &r);
  r.observed = Observed(st, profile);
  const std::string where = "step " + std::to_string(r.index) + " (" + r.op + ", line " +
                            std::to_string(step.line) + "): ";
  // A part this machine lacks (no module, no GPU), met at a step that expected no error: the
  // scenario cannot run here, which is not a failure of what it checks. UNAVAILABLE, with the
  // part's message (it names what to load or where to run it).
  if (!st.ok() && !expect->error && st.space() == ErrorSpace::kResmem && st.code() == kUnavailable) {
    r.verdict = StepVerdict::kNotRun;
    r.note = "unavailable here: " + st.message();
    if (out->unavailable.empty()) out->unavailable = where + st.message();
    *stopped = true;
  } else if (std::vector<std::string> fails = Judge(*expect, st, r, profile); fails.empty()) {
    r.verdict = StepVerdict::kPass;
    const std::string shown = HeadlinePart(*expect, step.args, st, r, virtual_clock);
    if (!shown.empty()) out->headline += (out->headline.empty() ? "" : "; ") + r.op + ": " + shown;
  } else {
    r.verdict = StepVerdict::kFail;
    for (const auto& f : fails) r.note += (r.note.empty() ? "" : "; ") + f;
    out->failed = true;
    if (!st.ok() && !expect->error) *stopped = true;
    if (res->reason.empty()) res->reason = where + r.note + "; observed " + r.observed;
  }
  res->steps.push_back(r);
}

// What the (simulated) kernel printed during the case, a line each.
std::vector<std::string> KernelLogOf(Platform& platform) {
  std::vector<std::string> out;
  auto dm = platform.ReadSource("dmesg");
  if (!dm.ok()) return out;
  std::istringstream in(*dm);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

// The case's verdict from its steps and kind.
ScenarioVerdict VerdictOf(const StepsRun& steps, const std::string& kind) {
  if (steps.failed) return ScenarioVerdict::kFailed;
  if (!steps.unavailable.empty()) return ScenarioVerdict::kUnavailable;
  if (kind == "bug") return ScenarioVerdict::kReproduced;
  if (kind == "fix") return ScenarioVerdict::kFixed;
  return ScenarioVerdict::kPassed;
}

// RunScenario without its timing.
ScenarioResult RunCase(const Scenario& s, const RunOptions& options) {
  ScenarioResult res;
  res.file = s.file;
  res.name = s.name;
  res.title = s.title;
  res.case_label = s.case_label;
  res.kind = s.kind;
  res.seed_file = s.seed_file;
  res.twin = s.twin;
  res.backend = options.backend;
  res.seed = options.seed.value_or(s.seed);
  std::optional<Backend> backend = PrepareBackend(s, options, &res);
  if (!backend) return res;
  Backend& b = *backend;
  const std::string profile = b.gpu ? b.gpu->profile() : s.cuda_profile;
  const bool virtual_clock = std::dynamic_pointer_cast<VirtualClock>(b.clock) != nullptr;
  Run run(s, b, res.seed);
  StepsRun steps;
  bool stopped = false;
  for (size_t i = 0; i < s.steps.size(); ++i)
    RunStep(run, s.steps[i], static_cast<int>(i + 1), options.backend, virtual_clock, profile,
            &stopped, &steps, &res);
  run.ReleaseRegistrations();
  res.faults = b.faults->fired();
  res.dmesg = KernelLogOf(*b.platform);
  res.headline = steps.headline;
  res.verdict = VerdictOf(steps, s.kind);
  if (res.verdict == ScenarioVerdict::kUnavailable) res.reason = steps.unavailable;
  return res;
}

}  // namespace

ScenarioResult RunScenario(const Scenario& s, const RunOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  ScenarioResult res = RunCase(s, options);
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return res;
}

}  // namespace resmem::engine
