#include "engine/runner/runner.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <cctype>
#include <type_traits>
#include <variant>
#include <sstream>
#include <memory>
#include <vector>

#include "backends/api/backend.h"
#include "backends/fault/rng.h"
#include "engine/backend/backend_factory.h"
#include "backends/platform/proc_parsers.h"
#include "engine/doctor/doctor.h"
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

std::string Fmt(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

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

std::string Observed(const Status& st, const std::string& profile) {
  if (st.ok()) return "ok";
  if (st.space() == ErrorSpace::kCuda) {
    const std::string name = CudaErrorName(profile, st.code());
    return "cuda " + std::to_string(st.code()) + (name.empty() ? "" : " " + name) + ": " + st.message();
  }
  return st.ToString();
}

// Does status match the expected error ("cudaErrorUnknown", "EINVAL", "SIGKILL", a code, "any")?
// A CUDA name is looked up in the backend's profile: the numbering differs between eras.
bool ErrorMatches(const Expected<ExpectedError>& want, const Status& st, const std::string& profile,
                  std::string* why) {
  if (st.ok()) {
    *why = "expected error " + want.written + ", the step succeeded";
    return false;
  }
  const ExpectedError& w = want.value;
  switch (w.kind) {
    case ExpectedError::Kind::kAny:
      return true;
    case ExpectedError::Kind::kCode:
      if (st.code() == w.code) return true;
      *why = "expected code " + want.written + ", got " + std::to_string(st.code());
      return false;
    case ExpectedError::Kind::kCudaName: {
      const int code = CudaErrorFromName(profile, w.cuda_name);
      if (code < 0) {
        *why = "'" + w.cuda_name + "' is not an error of profile " + profile;
        return false;
      }
      if (st.space() == ErrorSpace::kCuda && st.code() == code) return true;
      *why = "expected " + w.cuda_name + " (" + std::to_string(code) + " in " + profile + ")";
      return false;
    }
    case ExpectedError::Kind::kSignal:
      if (st.space() == ErrorSpace::kSignal && st.code() == w.code) return true;
      *why = "expected signal " + want.written;
      return false;
    case ExpectedError::Kind::kErrno:
      if (st.space() == ErrorSpace::kErrno && st.code() == w.code) return true;
      *why = "expected " + want.written;
      return false;
  }
  return false;
}

bool Near(double got, double want, double tol) {
  if (want == 0) return std::fabs(got) <= tol;
  return std::fabs(got - want) <= tol * std::fabs(want);
}

// A kernel log's lines, blanks around each removed (2.6-era kernels printed " user: ...").
std::vector<std::string> LogLines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (!TrimBlanks(line).empty()) out.push_back(TrimBlanks(line));
  return out;
}

std::vector<std::string> Trimmed(const std::vector<std::string>& lines) {
  std::vector<std::string> out;
  for (const auto& s : lines) out.push_back(TrimBlanks(s));
  return out;
}

// The expected "user:" lines against the printed ones, line for line: "" when equal, else where
// they first differ, both lines, and the counts.
std::string MapDiff(const std::vector<std::string>& want, const std::vector<std::string>& got) {
  if (want == got) return "";
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  std::string out = "the user map differs from line " + std::to_string(i + 1) + " (expected " +
                    std::to_string(want.size()) + " user: lines, the kernel printed " +
                    std::to_string(got.size()) + ")";
  out += "\n        expected: " + (i < want.size() ? want[i] : std::string("(no more lines)"));
  out += "\n        printed:  " + (i < got.size() ? got[i] : std::string("(no more lines)"));
  return out;
}

// Each wanted line must appear in `lines`, in the given order: "" when they do, else the first
// that does not.
std::string MissingInOrder(const std::vector<std::string>& want, const std::vector<std::string>& lines) {
  size_t at = 0;
  for (size_t k = 0; k < want.size(); ++k) {
    while (at < lines.size() && lines[at] != want[k]) ++at;
    if (at == lines.size())
      return "dmesg line " + std::to_string(k + 1) + " of the expectation was not printed" +
             (k ? " after line " + std::to_string(k) : "") + ": '" + want[k] + "'";
    ++at;
  }
  return "";
}

// Judges one step; returns the failures (empty = pass).
std::vector<std::string> Judge(const Expectation& e, const Status& st, const StepResult& r,
                               const std::string& profile) {
  std::vector<std::string> fails;
  std::string why;
  if (e.error) {
    if (!ErrorMatches(*e.error, st, profile, &why)) fails.push_back(why);
  } else if (!e.ok || e.ok->value) {
    if (!st.ok()) fails.push_back("expected success");
  } else if (st.ok()) {
    fails.push_back("expected a failure (ok = false), the step succeeded");
  }
  if (e.message_contains) {
    std::string hay = st.message();
    for (const auto& [k, v] : r.texts) hay += "\n" + v;
    if (hay.find(e.message_contains->value) == std::string::npos)
      fails.push_back("expected the message to contain \"" + e.message_contains->value + "\"");
  }
  const double tol = e.tolerance ? e.tolerance->value : 0.15;
  // A measured number within a relative tolerance of the expected one.
  auto near = [&](const char* key, double want, double t) {
    auto it = r.numbers.find(key);
    if (it == r.numbers.end()) {
      fails.push_back(std::string("no ") + key + " was measured");
      return;
    }
    if (!Near(it->second, want, t))
      fails.push_back(std::string(key) + " " + Fmt("%.4g", it->second) + " is not within " +
                      Fmt("%.0f%%", t * 100) + " of " + Fmt("%.4g", want));
  };
  if (e.mbps) near("mbps", e.mbps->value, tol);
  if (e.ratio_to_serial) near("ratio_to_serial", e.ratio_to_serial->value, tol);
  // Bounds: a path that must be at least or at most so fast.
  auto bound = [&](const std::optional<Expected<double>>& want, bool at_least) {
    if (!want) return;
    auto it = r.numbers.find("mbps");
    if (it == r.numbers.end()) {
      fails.push_back("no mbps was measured");
      return;
    }
    if (at_least ? it->second < want->value : it->second > want->value)
      fails.push_back("mbps " + Fmt("%.4g", it->second) + " is " + (at_least ? "below " : "above ") +
                      want->written);
  };
  bound(e.mbps_min, true);
  bound(e.mbps_max, false);
  if (e.drops) near("drops", static_cast<double>(e.drops->value), 0);
  if (e.corrupt) near("corrupt", static_cast<double>(e.corrupt->value), 0);
  // Sizes observed: RAM within the tolerance, the device's size and address exactly.
  struct SizeCheck {
    const char* key;
    const std::optional<Expected<uint64_t>>* want;
    double tolerance;
  };
  const SizeCheck sizes[] = {{"usable_ram", &e.usable_ram, tol}, {"mem_total", &e.mem_total, tol},
                             {"size", &e.size, 0}, {"phys", &e.phys, 0},
                             {"migrated", &e.migrated, 0}, {"evicted", &e.evicted, 0}, {"remote", &e.remote, 0}};
  for (const auto& [key, v, t] : sizes) {
    if (!*v) continue;
    auto it = r.numbers.find(key);
    if (it == r.numbers.end()) {
      fails.push_back(std::string("no ") + key + " was observed");
      continue;
    }
    const double want = static_cast<double>((*v)->value);
    if (!Near(it->second, want, t))
      fails.push_back(std::string(key) + " " + FormatSize(static_cast<uint64_t>(it->second)) +
                      " is not " + (t > 0 ? "within " + Fmt("%.0f%%", t * 100) + " of " : "") + (*v)->written);
  }
  const std::pair<const char*, const std::optional<Expected<int64_t>>*> counts[] = {
      {"reservations", &e.reservations}, {"abi_version", &e.abi_version}, {"pins", &e.pins},
      {"hits", &e.hits}, {"evictions", &e.evictions}, {"faults", &e.faults}};
  for (const auto& [key, v] : counts) {
    if (!*v) continue;
    auto it = r.numbers.find(key);
    if (it == r.numbers.end() || it->second != static_cast<double>((*v)->value))
      fails.push_back(std::string(key) + " is " + (it == r.numbers.end() ? "not observed" : Fmt("%.0f", it->second)) +
                      ", expected " + (*v)->written);
  }
  if (e.events) {
    // Each expected text in an event of its own, in the given order.
    auto ev = r.texts.find("events");
    const std::vector<std::string> lines = LogLines(ev == r.texts.end() ? "" : ev->second);
    size_t at = 0;
    for (size_t k = 0; k < e.events->value.size(); ++k) {
      const std::string& want = e.events->value[k];
      while (at < lines.size() && lines[at].find(want) == std::string::npos) ++at;
      if (at == lines.size()) {
        fails.push_back("event " + std::to_string(k + 1) + " of the expectation did not happen" +
                        (k ? " after event " + std::to_string(k) : "") + ": '" + want + "'");
        break;
      }
      ++at;
    }
  }
  // Texts observed, compared whole.
  auto same_text = [&](const char* key, const std::string& want, const std::string& written) {
    auto it = r.texts.find(key);
    const std::string got = it == r.texts.end() ? "(none)" : it->second;
    if (got != want) fails.push_back(std::string(key) + " is '" + got + "', expected '" + written + "'");
  };
  const std::pair<const char*, const std::optional<Expected<std::string>>*> texts[] = {
      {"path", &e.path}, {"vm_flags", &e.vm_flags}, {"memory_type", &e.memory_type},
      {"backing", &e.backing}, {"data", &e.data}, {"mode", &e.mode}, {"cache", &e.cache},
      {"cmdline", &e.cmdline}};
  for (const auto& [key, v] : texts)
    if (*v) same_text(key, (*v)->value, (*v)->written);
  if (e.reservation_over_hole)
    same_text("reservation_over_hole", e.reservation_over_hole->value ? "true" : "false",
              e.reservation_over_hole->written);
  if (e.seconds_max) {
    auto it = r.numbers.find("seconds");
    if (it == r.numbers.end() || it->second > e.seconds_max->value)
      fails.push_back("took longer than " + e.seconds_max->written + " s");
  }
  if (e.user_map || e.dmesg) {
    auto log = r.texts.find("kernel_log");
    const std::vector<std::string> lines = LogLines(log == r.texts.end() ? "" : log->second);
    if (e.user_map) {
      std::vector<std::string> got;
      for (const auto& l : lines)
        if (l.rfind("user:", 0) == 0) got.push_back(l);
      if (std::string diff = MapDiff(Trimmed(e.user_map->value), got); !diff.empty()) fails.push_back(diff);
    }
    if (e.dmesg) {
      if (std::string miss = MissingInOrder(Trimmed(e.dmesg->value), lines); !miss.empty()) fails.push_back(miss);
    }
  }
  auto findings = r.texts.find("findings");
  const std::string reported = findings == r.texts.end() ? "" : findings->second;
  const std::string list = findings == r.texts.end() ? "" : "," + findings->second + ",";
  if (e.finding) {
    for (const auto& w : e.finding->value)
      if (list.find("," + w + ",") == std::string::npos)
        fails.push_back("the doctor did not report '" + w + "' (reported: " + reported + ")");
  }
  if (e.findings) {
    // The exact list, in the doctor's order: a replay shows the same findings, no more.
    std::string want;
    for (const auto& id : Trimmed(e.findings->value)) want += (want.empty() ? "" : ",") + id;
    if (reported != want)
      fails.push_back("the doctor reported [" + reported + "], expected exactly [" + want + "]");
  }
  if (e.no_finding) {
    for (const auto& w : e.no_finding->value)
      if (list.find("," + w + ",") != std::string::npos)
        fails.push_back("the doctor reported '" + w + "', which this machine should not have");
  }
  return fails;
}

}  // namespace


ScenarioResult RunScenario(const Scenario& s, const RunOptions& options) {
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

  auto spec = ResolveBackendSpec(options.backend);
  if (!spec.ok()) {
    res.verdict = ScenarioVerdict::kError;
    res.reason = spec.status().message();
    return res;
  }
  for (const auto& [backend, reason] : s.not_applicable) {
    if (backend == options.backend) {
      res.verdict = ScenarioVerdict::kNotApplicable;
      res.reason = reason;
      return res;
    }
  }
  PartContext ctx;
  ctx.machine = s.machine;
  ctx.driver = s.driver;
  ctx.cuda_profile = s.cuda_profile;
  ctx.gpu_count = s.gpu_count;
  ctx.seed = res.seed;
  ctx.options = options.options;
  ctx.faults = std::make_shared<FaultInjector>(res.seed);
  for (const auto& rule : s.faults) {
    Status st = ctx.faults->AddRule(rule);
    if (!st.ok()) {
      res.verdict = ScenarioVerdict::kError;
      res.reason = st.message();
      return res;
    }
  }
  auto backend = MakeBackend(*spec, ctx);
  if (!backend.ok()) {
    const Status& st = backend.status();
    res.verdict = st.space() == ErrorSpace::kResmem && st.code() == kUnavailable
                      ? ScenarioVerdict::kUnavailable
                      : ScenarioVerdict::kError;
    res.reason = st.message();
    return res;
  }
  Backend& b = *backend;
  const std::string profile = b.gpu ? b.gpu->profile() : s.cuda_profile;
  Run run(s, b, res.seed);
  bool failed = false, stopped = false;
  std::string headline, unavailable;
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const Step& step = s.steps[i];
    StepResult r;
    r.index = static_cast<int>(i + 1);
    r.op = step.name();
    r.line = step.line;
    const Expectation* expect = &step.expect;
    const StepArgs* args = &step.args;  // this backend's, where the file gives some
    auto on = step.on.find(options.backend);
    if (on != step.on.end()) {
      if (on->second.skip) {
        r.verdict = StepVerdict::kSkipped;
        r.note = *on->second.skip;
        res.steps.push_back(r);
        continue;
      }
      if (on->second.expect) expect = &*on->second.expect;
      if (on->second.args) args = &*on->second.args;
    }
    r.expected = expect->Describe();
    if (stopped) {
      r.verdict = StepVerdict::kNotRun;
      r.note = "an earlier step failed";
      res.steps.push_back(r);
      continue;
    }
    Status st = run.Execute(step, *args, &r);
    r.observed = Observed(st, profile);
    // A part this machine lacks (no module, no GPU), met at a step that expected no error: the
    // scenario cannot run here, which is not a failure of what it checks. UNAVAILABLE, with the
    // part's message (it names what to load or where to run it).
    if (!st.ok() && !expect->error && st.space() == ErrorSpace::kResmem && st.code() == kUnavailable) {
      r.verdict = StepVerdict::kNotRun;
      r.note = "unavailable here: " + st.message();
      if (unavailable.empty())
        unavailable = "step " + std::to_string(r.index) + " (" + r.op + ", line " + std::to_string(step.line) +
                      "): " + st.message();
      stopped = true;
      res.steps.push_back(r);
      continue;
    }
    std::vector<std::string> fails = Judge(*expect, st, r, profile);
    if (fails.empty()) {
      r.verdict = StepVerdict::kPass;
      // The headline strings together what the expected steps showed, one part each, joined
      // by ", " (a step that shows a rate and a data verdict reads "54500.0 MB/s, data intact").
      std::vector<std::string> parts;
      if (!st.ok()) parts.push_back(r.observed.substr(0, r.observed.find(':')));
      if ((expect->mbps || expect->mbps_min || expect->mbps_max) && r.numbers.count("mbps"))
        parts.push_back(Fmt("%.1f MB/s", r.numbers["mbps"]));
      if ((expect->faults || expect->migrated || expect->evicted) && r.numbers.count("faults"))
        parts.push_back(Fmt("%.0f faults", r.numbers["faults"]) + ", " +
                        FormatSize(static_cast<uint64_t>(r.numbers["migrated"])) + " migrated" +
                        (r.numbers["evicted"] > 0 ? ", " + FormatSize(static_cast<uint64_t>(r.numbers["evicted"])) + " evicted" : ""));
      if (expect->ratio_to_serial) parts.push_back(r.texts["path"] + Fmt(", %.2f of serial", r.numbers["ratio_to_serial"]));
      if (expect->size && std::holds_alternative<scenario::DmaBufExportStep>(step.args))
        parts.push_back("dma-buf of " + FormatSize(static_cast<uint64_t>(r.numbers["size"])));
      if (expect->data) parts.push_back("data " + r.texts["data"]);
      if (expect->usable_ram) parts.push_back("usable RAM " + FormatSize(static_cast<uint64_t>(r.numbers["usable_ram"])));
      if (expect->memory_type) parts.push_back(r.texts["memory_type"]);
      if (expect->drops) parts.push_back(Fmt("%.0f drops", r.numbers["drops"]) + Fmt(", %.0f corrupt", r.numbers["corrupt"]));
      if (expect->finding) parts.push_back("found " + expect->finding->written);
      if (expect->pins || expect->hits || expect->evictions)
        parts.push_back(Fmt("%.0f pins", r.numbers["pins"]) + Fmt(", %.0f hits", r.numbers["hits"]) +
                        Fmt(", %.0f evictions", r.numbers["evictions"]));
      if (expect->path && std::holds_alternative<scenario::P2pDmaStep>(step.args)) parts.push_back(r.texts["path"]);
      if (expect->events && !expect->events->value.empty() && parts.empty())
        parts.push_back("'" + expect->events->value.back() + "'");
      if (expect->reservations && !expect->usable_ram)
        parts.push_back(Fmt("%.0f reservations", r.numbers["reservations"]));
      const bool is_register = std::holds_alternative<scenario::RegisterStep>(step.args);
      if (is_register && st.ok() && r.numbers["calls"] > 1) parts.push_back(Fmt("registered in %.0f calls", r.numbers["calls"]));
      // A registration's time: measured where the clock is real; on the simulator the model's
      // (mock/gpu RegisterSeconds, calibrated on the H100: docs/benchmarks.md "Registration
      // time"), so a 188 GB scenario says how long start-up takes. It qualifies the part before.
      if (is_register && st.ok() && r.numbers.count("seconds")) {
        const bool modelled = std::dynamic_pointer_cast<VirtualClock>(b.clock) != nullptr;
        if (parts.empty()) parts.push_back("ok");
        parts.back() += Fmt(modelled ? " in %.3g s (modelled)" : " in %.3g s", r.numbers["seconds"]);
      }
      std::string shown;
      for (const auto& part : parts) shown += (shown.empty() ? "" : ", ") + part;
      if (!shown.empty()) headline += (headline.empty() ? "" : "; ") + r.op + ": " + shown;
    } else {
      r.verdict = StepVerdict::kFail;
      for (const auto& f : fails) r.note += (r.note.empty() ? "" : "; ") + f;
      failed = true;
      if (!st.ok() && !expect->error) stopped = true;
      if (res.reason.empty())
        res.reason = "step " + std::to_string(r.index) + " (" + r.op + ", line " +
                     std::to_string(step.line) + "): " + r.note + "; observed " + r.observed;
    }
    res.steps.push_back(r);
  }
  run.ReleaseRegistrations();
  res.faults = b.faults->fired();
  if (auto dm = b.platform->ReadSource("dmesg"); dm.ok()) {
    size_t pos = 0;
    const std::string& text = *dm;
    while (pos < text.size()) {
      size_t nl = text.find('\n', pos);
      if (nl == std::string::npos) nl = text.size();
      if (nl > pos) res.dmesg.push_back(text.substr(pos, nl - pos));
      pos = nl + 1;
    }
  }
  res.headline = headline;
  if (failed) res.verdict = ScenarioVerdict::kFailed;
  else if (!unavailable.empty()) {
    res.verdict = ScenarioVerdict::kUnavailable;
    res.reason = unavailable;
  } else if (s.kind == "bug") res.verdict = ScenarioVerdict::kReproduced;
  else if (s.kind == "fix") res.verdict = ScenarioVerdict::kFixed;
  else res.verdict = ScenarioVerdict::kPassed;
  return res;
}

}  // namespace resmem::engine
