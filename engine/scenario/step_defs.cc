// The step definitions: one entry per kind, bound to the members of its struct in steps.h.
#include "engine/scenario/step_defs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <type_traits>
#include <utility>

#include "backends/api/gpu.h"
#include "backends/api/memory.h"
#include "mock/gpu/sim_gpu.h"

namespace resmem::scenario {
namespace {

// ---- converters: a value as written -> a typed value, or the problem ----

Status WrongType(const char* wanted, const RawValue& v) {
  return Status::InvalidArgument(std::string("expected ") + wanted + ", found " + v.TypeName());
}

Result<uint64_t> ToSize(const RawValue& v) {
  if (v.kind == RawValue::Kind::kInt) {
    if (v.i < 0) return Status::InvalidArgument("a size cannot be negative");
    return static_cast<uint64_t>(v.i);
  }
  if (v.kind == RawValue::Kind::kString) return ParseSize(v.str);
  return WrongType("a size like \"16M\", \"0x1000\" or an integer", v);
}

Result<std::optional<uint64_t>> ToWholeOrSize(const RawValue& v) {
  if (v.kind == RawValue::Kind::kString && v.str == "all") return std::optional<uint64_t>();
  RESMEM_ASSIGN_OR_RETURN(uint64_t size, ToSize(v));
  return std::optional<uint64_t>(size);
}

Result<std::string> ToString(const RawValue& v, const std::string& help) {
  if (v.kind != RawValue::Kind::kString) return WrongType(("a string (" + help + ")").c_str(), v);
  return v.str;
}

// The range an integer argument allows, as the docs print it ("" for any).
std::string RangeText(int64_t min, int64_t max) {
  if (max != INT64_MAX) return std::to_string(min) + " to " + std::to_string(max);
  if (min != INT64_MIN) return "at least " + std::to_string(min);
  return "";
}

Result<int64_t> ToInt(const RawValue& v, int64_t min, int64_t max) {
  if (v.kind != RawValue::Kind::kInt) return WrongType("an integer", v);
  if (v.i < min || v.i > max)
    return Status::InvalidArgument(std::to_string(v.i) + " is out of range: give " + RangeText(min, max));
  return v.i;
}

// A boolean, or the string "true"/"false" (a sweep substitutes into strings only).
Result<bool> ToBool(const RawValue& v) {
  if (v.kind == RawValue::Kind::kBool) return v.b;
  if (v.kind == RawValue::Kind::kString && (v.str == "true" || v.str == "false")) return v.str == "true";
  return WrongType("true or false", v);
}

Result<double> ToNumber(const RawValue& v) {
  if (v.kind == RawValue::Kind::kInt) return static_cast<double>(v.i);
  if (v.kind == RawValue::Kind::kFloat) return v.f;
  return WrongType("a number", v);
}

std::string NumberText(double v);

// A rate, a time, a bandwidth or a tolerance: a finite number, 0 or more (a negative rate or a
// NaN tolerance would run, or judge, something the file did not mean).
Result<double> ToNonNegative(const RawValue& v) {
  RESMEM_ASSIGN_OR_RETURN(double x, ToNumber(v));
  if (!std::isfinite(x) || x < 0)
    return Status::InvalidArgument(NumberText(x) + " is out of range: give a finite number, at least 0");
  return x;
}

Result<uint32_t> ToFlags(const RawValue& v) {
  if (v.kind != RawValue::Kind::kList && v.kind != RawValue::Kind::kString)
    return WrongType("a list of flag names, e.g. [\"portable\", \"iomemory\"]", v);
  const std::vector<std::string> names =
      v.kind == RawValue::Kind::kList ? v.list : std::vector<std::string>{v.str};
  uint32_t flags = 0;
  for (const auto& n : names) {
    RESMEM_ASSIGN_OR_RETURN(uint32_t f, ParseRegisterFlag(n));
    flags |= f;
  }
  return flags;
}

Result<std::vector<std::string>> ToStringList(const RawValue& v) {
  if (v.kind == RawValue::Kind::kList) return v.list;
  if (v.kind == RawValue::Kind::kString) return std::vector<std::string>{v.str};
  return WrongType("a string or a list of strings", v);
}

std::string Join(const std::vector<std::string>& names, const char* sep = ", ") {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : sep) + n;
  return out;
}

Result<ExpectedError> ToExpectedError(const RawValue& v) {
  ExpectedError e;
  if (v.kind == RawValue::Kind::kInt) {
    e.kind = ExpectedError::Kind::kCode;
    e.code = static_cast<int>(v.i);
    return e;
  }
  if (v.kind != RawValue::Kind::kString)
    return WrongType("an error name (cudaErrorInvalidValue, ENXIO, SIGBUS), a number or \"any\"", v);
  const std::string& w = v.str;
  if (w == "any") return e;
  if (w.rfind("cuda", 0) == 0) {
    // Resolved at run time in the backend's numbering; here it must name an error of some era.
    const auto profiles = sim::CudaProfileNames();
    for (const auto& p : profiles)
      if (CudaErrorFromName(p, w) >= 0) {
        e.kind = ExpectedError::Kind::kCudaName;
        e.cuda_name = w;
        return e;
      }
    return Status::InvalidArgument("'" + w + "' is not a CUDA error of any profile (" + Join(profiles) +
                                   "); names are spelt as in cudaGetErrorName, e.g. cudaErrorInvalidValue");
  }
  if (w.rfind("SIG", 0) == 0) {
    e.kind = ExpectedError::Kind::kSignal;
    e.code = SignalFromName(w);
    if (e.code < 0) return Status::InvalidArgument("'" + w + "' is not a signal name (SIGBUS, SIGSEGV, ...)");
    return e;
  }
  if (w.rfind("E", 0) == 0) {
    e.kind = ExpectedError::Kind::kErrno;
    e.code = ErrnoFromName(w);
    if (e.code < 0) return Status::InvalidArgument("'" + w + "' is not an errno name (EIO, ENXIO, ...)");
    return e;
  }
  return Status::InvalidArgument("'" + w +
                                 "' is not a CUDA error name (cudaError...), an errno name (EIO), "
                                 "a signal name (SIGBUS), a number or any");
}

// ---- argument definitions, bound to a kind's members ----

enum Need { kRequired, kOptional };

template <typename K, typename T, typename Convert>
std::function<Status(const RawValue&, StepArgs*)> Setter(T K::*member, Convert convert) {
  return [member, convert](const RawValue& v, StepArgs* args) -> Status {
    auto r = convert(v);
    if (!r.ok()) return r.status();
    std::get<K>(*args).*member = std::move(r).value();
    return Status::Ok();
  };
}

std::string NumberText(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

template <typename K>
ArgDef Size(const char* name, uint64_t K::*m, Need need, std::string help) {
  return {name, ArgType::kSize, need == kRequired, "",
          need == kRequired ? "" : std::to_string(K{}.*m), std::move(help), {}, Setter(m, ToSize)};
}

template <typename K>
ArgDef WholeOrSize(const char* name, std::optional<uint64_t> K::*m, std::string whole, std::string help) {
  return {name, ArgType::kWholeOrSize, false, "", std::move(whole), std::move(help), {},
          Setter(m, ToWholeOrSize)};
}

template <typename K>
ArgDef Name(const char* name, std::string K::*m, std::string help) {
  return {name, ArgType::kName, true, "", "", help, {},
          Setter(m, [help](const RawValue& v) { return ToString(v, help); })};
}

template <typename K>
ArgDef Text(const char* name, std::string K::*m, std::string absent, std::string help) {
  return {name, ArgType::kText, false, "", std::move(absent), help, {},
          Setter(m, [help](const RawValue& v) { return ToString(v, help); })};
}

// An integer in [min, max] into a member of type T: int64_t (Int), or uint64_t for a count held
// unsigned (CardSetup::ring_entries; min >= 0). K and T given, as a base class's member binds.
template <typename K, typename T>
ArgDef IntInto(const char* name, T K::*m, Need need, int64_t min, int64_t max, std::string help) {
  return {name, ArgType::kInt, need == kRequired, RangeText(min, max),
          need == kRequired ? "" : std::to_string(K{}.*m), std::move(help), {},
          Setter(m, [min, max](const RawValue& v) -> Result<T> {
            RESMEM_ASSIGN_OR_RETURN(int64_t n, ToInt(v, min, max));
            return static_cast<T>(n);
          })};
}

template <typename K>
ArgDef Int(const char* name, int64_t K::*m, Need need, int64_t min, int64_t max, std::string help) {
  return IntInto<K, int64_t>(name, m, need, min, max, std::move(help));
}

template <typename K>
ArgDef Bool(const char* name, bool K::*m, std::string help) {
  return {name, ArgType::kBool, false, "", K{}.*m ? "true" : "false", std::move(help), {},
          Setter(m, ToBool)};
}

template <typename K>
ArgDef Number(const char* name, double K::*m, std::string unit, std::string absent, std::string help) {
  return {name, ArgType::kNumber, false, std::move(unit), std::move(absent), std::move(help), {},
          Setter(m, ToNonNegative)};
}

template <typename K>
ArgDef Flags(const char* name, uint32_t K::*m, std::string help) {
  return {name, ArgType::kFlags, false, "", "none", std::move(help), {}, Setter(m, ToFlags)};
}

template <typename K, typename E>
ArgDef Choice(const char* name, E K::*m, Need need, std::vector<std::pair<std::string, E>> values,
              std::string help) {
  std::vector<std::string> names;
  std::string absent;
  for (const auto& [n, e] : values) {
    names.push_back(n);
    if (need == kOptional && e == K{}.*m) absent = n;
  }
  auto convert = [values, names](const RawValue& v) -> Result<E> {
    if (v.kind != RawValue::Kind::kString) return WrongType(("one of " + Join(names)).c_str(), v);
    for (const auto& [n, e] : values)
      if (n == v.str) return e;
    return Status::InvalidArgument("'" + v.str + "' is not one of " + Join(names));
  };
  return {name, ArgType::kChoice, need == kRequired, "", absent, std::move(help), names,
          Setter(m, convert)};
}

// Arguments several kinds share, with the same meaning.
constexpr int64_t kMaxPasses = 1000;
template <typename K>
ArgDef Passes() {
  return Int<K>("passes", &K::passes, kOptional, 1, kMaxPasses,
             "measure N times and judge the median (FACTS.md: one pass on the GPU machine can "
             "drop 10-50%)");
}
template <typename K>  // WriteStep, VerifyStep
std::vector<ArgDef> PatternSpanArgs() {
  return {Name<K>("span", &K::span, "host memory"),
          Size<K>("offset", &K::offset, kOptional, "into the span"),
          Size<K>("length", &K::length, kRequired, "bytes"),
          Choice<K, DataPattern>("pattern", &K::pattern, kOptional,
                                 {{"counter", DataPattern::kCounter}, {"seeded", DataPattern::kSeeded},
                                  {"zero", DataPattern::kZero}},
                                 "bytes as a function of their offset (seeded: and of the run's seed)")};
}
template <typename K>  // CopyStep, ZeroCopyStep
std::vector<ArgDef> HostDeviceRangeArgs(const char* direction_help, const char* host_help) {
  return {Choice<K, CopyDirection>("direction", &K::direction, kRequired,
                                   {{"h2d", CopyDirection::kHostToDevice}, {"d2h", CopyDirection::kDeviceToHost}},
                                   direction_help),
          Name<K>("host", &K::host, host_help),
          Name<K>("device", &K::device, "device buffer"),
          Size<K>("host_offset", &K::host_offset, kOptional, "into host"),
          Size<K>("device_offset", &K::device_offset, kOptional, "into device"),
          Size<K>("length", &K::length, kRequired, "bytes"), Passes<K>()};
}
template <typename K>  // P2pPinStep, P2pDmaStep
std::vector<ArgDef> P2pRangeArgs(std::vector<ArgDef> own) {
  std::vector<ArgDef> args = {Name<K>("buffer", &K::buffer, "GPU buffer"),
                              Size<K>("offset", &K::offset, kOptional, "into the buffer"),
                              WholeOrSize<K>("length", &K::length, "the rest of the buffer", "bytes")};
  args.insert(args.end(), own.begin(), own.end());
  return args;
}
template <typename K>  // the managed steps' ranges
std::vector<ArgDef> ManagedRangeArgs(std::vector<ArgDef> own) {
  std::vector<ArgDef> args = {Name<K>("buffer", &K::buffer, "managed allocation"),
                              Size<K>("offset", &K::offset, kOptional, "into the allocation"),
                              WholeOrSize<K>("length", &K::length, "the rest of the allocation", "bytes")};
  args.insert(args.end(), own.begin(), own.end());
  return args;
}
template <typename K>
ArgDef ProcessorChoice(const char* name, Processor K::*m, std::string help) {
  return Choice<K, Processor>(name, m, kOptional, {{"gpu", Processor::kGpu}, {"cpu", Processor::kCpu}},
                              std::move(help));
}
const std::vector<std::string> kManagedExpectations = {
    "mbps", "mbps_min", "mbps_max", "tolerance", "seconds_max", "data",
    "faults", "migrated", "evicted", "remote", "events"};
const std::vector<std::string> kCardExpectations = {
    "delivered", "drops", "corrupt", "foreign", "duplicate", "torn", "timeouts", "link_down", "stalled",
    "silent_losses", "mbps", "mbps_min", "tolerance", "events"};
constexpr const char* kRegisterFlagsHelp = "default, portable, mapped, iomemory, readonly";

template <typename K>
StepDef Kind(std::string help, std::vector<ArgDef> args, std::vector<std::string> expectations) {
  return {K::kName, std::move(help), K{}, std::move(args), std::move(expectations)};
}

std::vector<StepDef> MakeStepDefs() {
  return {
      Kind<BootStep>("boot the machine with its command line; observes the kernel's view", {},
                     {"usable_ram", "mem_total", "tolerance", "reservations", "cmdline",
                      "reservation_over_hole", "user_map", "dmesg"}),
      Kind<OpenStep>("open the reserved-memory device",
                     {Text("device", &OpenStep::device, "the first device", "device path"),
                      Bool("sync", &OpenStep::sync, "open with O_SYNC")},
                     {}),
      Kind<InfoStep>("the device's info ioctl", {}, {"size", "phys", "mode", "cache", "abi_version"}),
      Kind<IoctlStep>("a raw ioctl with a command number (bad-input checks)",
                      {Int("cmd", &IoctlStep::cmd, kRequired, INT64_MIN, INT64_MAX, "ioctl command number"),
                       Bool("null_arg", &IoctlStep::null_arg, "pass a NULL argument")},
                      {}),
      Kind<MmapStep>("map the device",
                     {Name("as", &MmapStep::as, "name of the mapping"),
                      Size("offset", &MmapStep::offset, kOptional, "mmap offset"),
                      WholeOrSize("length", &MmapStep::length, "the rest of the range", "mmap length"),
                      Bool("writable", &MmapStep::writable, "PROT_WRITE")},
                     {"vm_flags", "memory_type", "backing"}),
      Kind<MunmapStep>("unmap a mapping", {Name("span", &MunmapStep::span, "the mapping")}, {}),
      Kind<AllocPageableStep>("malloc/new",
                              {Name("as", &AllocPageableStep::as, "name"),
                               Size("length", &AllocPageableStep::length, kRequired, "bytes")},
                              {}),
      Kind<AllocPinnedStep>("cudaMallocHost / cudaHostAlloc",
                            {Name("as", &AllocPinnedStep::as, "name"),
                             Size("length", &AllocPinnedStep::length, kRequired, "bytes"),
                             Flags("flags", &AllocPinnedStep::flags, kRegisterFlagsHelp)},
                            {}),
      Kind<AllocDeviceStep>("cudaMalloc",
                            {Name("as", &AllocDeviceStep::as, "name"),
                             Size("length", &AllocDeviceStep::length, kRequired, "bytes")},
                            {}),
      Kind<ContextStep>("create or switch CUDA contexts",
                        {Choice("action", &ContextStep::action, kRequired,
                                {{"create", ContextAction::kCreate}, {"use", ContextAction::kUse}},
                                "create or use"),
                         Name("name", &ContextStep::name, "context name; 'primary' is the first"),
                         Int("device", &ContextStep::device, kOptional, INT64_MIN, INT64_MAX,
                             "GPU index for create"),
                         Bool("map_host", &ContextStep::map_host,
                              "create with CU_CTX_MAP_HOST (CUDA 4.1 maps pinned memory in a driver-API context only with it; driver 580 without it too)")},
                        {}),
      Kind<DeviceFlagsStep>("cudaSetDeviceFlags (seed 001: cudaDeviceMapHost before any other CUDA call)",
                            {Bool("map_host", &DeviceFlagsStep::map_host, "cudaDeviceMapHost")}, {}),
      Kind<RegisterStep>("cudaHostRegister",
                         {Name("span", &RegisterStep::span, "host memory"),
                          Size("offset", &RegisterStep::offset, kOptional, "into the span"),
                          WholeOrSize("length", &RegisterStep::length, "the rest of the span", "bytes"),
                          Flags("flags", &RegisterStep::flags, kRegisterFlagsHelp),
                          Size("chunk", &RegisterStep::chunk, kOptional,
                               "register in calls of at most this size (0: one call)")},
                         {"seconds_max"}),
      Kind<UnregisterStep>("cudaHostUnregister",
                           {Name("span", &UnregisterStep::span, "host memory"),
                            Size("offset", &UnregisterStep::offset, kOptional, "into the span")},
                           {}),
      Kind<WriteStep>("CPU writes a pattern through a mapping", PatternSpanArgs<WriteStep>(), {}),
      Kind<VerifyStep>("CPU reads back and compares with the pattern", PatternSpanArgs<VerifyStep>(),
                       {"data"}),
      Kind<MemcpyStep>("CPU memcpy between host spans; measures bandwidth",
                       {Name("dst", &MemcpyStep::dst, "destination"),
                        Name("src", &MemcpyStep::src, "source"),
                        Size("dst_offset", &MemcpyStep::dst_offset, kOptional, "into dst"),
                        Size("src_offset", &MemcpyStep::src_offset, kOptional, "into src"),
                        Size("length", &MemcpyStep::length, kRequired, "bytes"), Passes<MemcpyStep>()},
                       {"mbps", "tolerance", "mbps_min", "mbps_max"}),
      Kind<CopyStep>("cudaMemcpy between host and device; measures bandwidth",
                     HostDeviceRangeArgs<CopyStep>("h2d or d2h", "host memory"),
                     {"mbps", "tolerance", "mbps_min", "mbps_max", "path"}),
      Kind<ZeroCopyStep>("a kernel moves the bytes through mapped host memory (cudaHostGetDevicePointer); measures bandwidth",
                         HostDeviceRangeArgs<ZeroCopyStep>("h2d (the kernel reads host memory) or d2h (writes it)",
                                                           "pinned or registered host memory"),
                         {"mbps", "tolerance", "mbps_min", "mbps_max", "path"}),
      Kind<OverlapStep>("copy H2D then a kernel per block, on 1 or 2 streams; measures the whole",
                        {Name("host", &OverlapStep::host, "host memory (at least one block)"),
                         Name("device", &OverlapStep::device, "device buffer (at least two blocks)"),
                         Size("host_offset", &OverlapStep::host_offset, kOptional, "into host"),
                         Size("block_size", &OverlapStep::block_size, kRequired, "bytes per block"),
                         Int("blocks", &OverlapStep::blocks, kRequired, 1, 100000, "how many"),
                         Int("streams", &OverlapStep::streams, kOptional, 1, 2,
                             "1: copy and kernel one after another; 2: block i on stream i % 2"),
                         Number("kernel_us", &OverlapStep::kernel_us, "us", "0 (as long as reading the block takes)",
                                "how long each kernel holds the GPU"),
                         Passes<OverlapStep>()},
                        {"mbps", "tolerance", "mbps_min", "mbps_max", "path", "ratio_to_serial"}),
      Kind<StageStep>("copy through a pinned staging buffer: memcpy into it, then DMA",
                      {Name("src", &StageStep::src, "source host memory"),
                       Name("staging", &StageStep::staging, "pinned buffer"),
                       Name("device", &StageStep::device, "device buffer"),
                       Size("src_offset", &StageStep::src_offset, kOptional, "into src"),
                       Size("length", &StageStep::length, kRequired, "bytes"), Passes<StageStep>()},
                      {"mbps", "tolerance", "mbps_min", "mbps_max"}),
      Kind<ChecksumStep>("compare a device-side checksum with the host bytes",
                         {Name("host", &ChecksumStep::host, "host memory"),
                          Name("device", &ChecksumStep::device, "device buffer"),
                          Size("host_offset", &ChecksumStep::host_offset, kOptional, "into host"),
                          Size("device_offset", &ChecksumStep::device_offset, kOptional, "into device"),
                          Size("length", &ChecksumStep::length, kRequired, "bytes")},
                         {"data"}),
      Kind<StreamStep>("a short acquisition: numbered checksummed blocks into the region, to the GPU",
                       {Name("span", &StreamStep::span, "the ring (a mapping)"),
                        Name("device", &StreamStep::device, "device buffer (at least one block)"),
                        Int("blocks", &StreamStep::blocks, kRequired, 1, INT64_MAX, "how many"),
                        Size("block_size", &StreamStep::block_size, kRequired, "bytes per block"),
                        Number("rate_hz", &StreamStep::rate_hz, "Hz", "flat out", "producer rate"),
                        Bool("register", &StreamStep::register_ring, "register the ring first")},
                       {"drops", "corrupt", "mbps", "tolerance"}),
      Kind<DoctorStep>("diagnose the machine's facts as `resmem doctor` does",
                       {Bool("devices", &DoctorStep::devices,
                             "also check the reserved-memory devices; false: the machine alone, as "
                             "a recording of it has it"),
                        Bool("bandwidth", &DoctorStep::bandwidth,
                             "also measure host<->GPU bandwidth on the backend's GPU and judge it "
                             "(`resmem doctor --bandwidth`: the link, NUMA node, IOMMU, THP)")},
                       {"finding", "no_finding", "findings"}),
      // GPUDirect RDMA (docs/rdma.md): each step's events (what the NVIDIA driver, the device's
      // driver and the device did, in order) are its observations, for `events` and
      // `message_contains`.
      Kind<P2pSetupStep>(
          "GPUDirect RDMA: the GPU, the IOMMU, the third-party device and its driver",
          {Text("gpu", &P2pSetupStep::gpu, "h100",
                "GPU profile: h100 (BAR1 128 GiB, FACTS.md) or kepler-guide (256 MB BAR1, 32 MB reserved: the 2013 guide)"),
           Bool("iommu", &P2pSetupStep::iommu, "an IOMMU translates the device's addresses"),
           Choice("path", &P2pSetupStep::path, kOptional,
                  {{"same-switch", PciePath::kSameSwitch}, {"through-cpu", PciePath::kThroughCpu},
                   {"cross-socket", PciePath::kCrossSocket}},
                  "what lies between the device and the GPU (the guide's 2.2)"),
           Int("dma_mask", &P2pSetupStep::dma_mask, kOptional, 24, 64,
               "the device's DMA mask, bits (QEMU's edu has 28)"),
           Size("bar1_base", &P2pSetupStep::bar1_base, kOptional, "BAR1's bus address (0: the profile's)"),
           Number("link_gbps", &P2pSetupStep::link_gbps, "GB/s", "the profile's",
                  "the device's write rate where the path works"),
           Choice("unpin", &P2pSetupStep::unpin, kOptional,
                  {{"lazy", UnpinPolicy::kLazy}, {"after-each", UnpinPolicy::kAfterEach},
                   {"never", UnpinPolicy::kNever}},
                  "when the driver gives pins back: lazy (LRU when BAR1 is full), after each transfer, never"),
           Bool("callback_waits", &P2pSetupStep::callback_waits,
                "the driver's free callback waits for its DMA before returning"),
           Bool("put_after_callback", &P2pSetupStep::put_after_callback,
                "the driver still calls nvidia_p2p_put_pages on a table its free callback saw revoked"),
           Int("built_against", &P2pSetupStep::built_against, kOptional, 0, 0xffffffffll,
               "NVIDIA_P2P_PAGE_TABLE_VERSION the driver was built against (0: the GPU driver's)"),
           Int("table_version", &P2pSetupStep::table_version, kOptional, 0, 0xffffffffll,
               "the version of the page tables the GPU driver hands out (0: the profile's)")},
          {"events"}),
      Kind<P2pAllocStep>("cudaMalloc of GPU memory for the P2P path",
                         {Name("as", &P2pAllocStep::as, "name of the buffer"),
                          Size("length", &P2pAllocStep::length, kRequired, "bytes"),
                          Int("context", &P2pAllocStep::context, kOptional, 0, 64, "CUDA context")},
                         {"events"}),
      Kind<P2pTokensStep>("cuPointerGetAttribute(P2P_TOKENS) on a buffer; remembers them",
                          {Name("buffer", &P2pTokensStep::buffer, "GPU buffer")}, {}),
      Kind<P2pPinStep>("the driver pins a range with nvidia_p2p_get_pages (and maps it for the device)",
                       P2pRangeArgs<P2pPinStep>(
                           {Choice("tokens", &P2pPinStep::tokens, kOptional,
                                   {{"query", P2pTokenSource::kQuery}, {"cached", P2pTokenSource::kCached},
                                    {"zero", P2pTokenSource::kZero}},
                                   "query them now, the last p2p_tokens of this name, or zeros")}),
                       {"events"}),
      Kind<P2pUnpinStep>("the driver unpins the buffer's p2p_pin (nvidia_p2p_put_pages)",
                         {Name("buffer", &P2pUnpinStep::buffer, "GPU buffer")}, {"events"}),
      Kind<P2pDmaStep>("the device writes into a GPU buffer, each transfer pinned as the driver's unpin policy says",
                       P2pRangeArgs<P2pDmaStep>(
                           {Size("block", &P2pDmaStep::block, kOptional, "bytes per transfer (0: one transfer)"),
                            Int("rounds", &P2pDmaStep::rounds, kOptional, 1, 100000, "times over the range")}),
                       {"mbps", "tolerance", "path", "data", "pins", "hits", "evictions", "events"}),
      Kind<P2pFreeStep>("cudaFree of a GPU buffer: pins in it are revoked through the free callback",
                        {Name("buffer", &P2pFreeStep::buffer, "GPU buffer"),
                         Bool("during_dma", &P2pFreeStep::during_dma, "the device is writing into it")},
                        {"events"}),
      // ---- managed memory (seed 004) ----
      Kind<GpuReserveStep>("cudaMalloc GPU memory until only `leave` is free (a smaller GPU, for oversubscription)",
                           {Size("leave", &GpuReserveStep::leave, kRequired, "bytes left free")}, {}),
      Kind<ManagedAllocStep>("cudaMallocManaged",
                             {Name("as", &ManagedAllocStep::as, "name of the allocation"),
                              Size("length", &ManagedAllocStep::length, kRequired, "bytes")},
                             {}),
      Kind<ManagedTouchStep>("a kernel (by = gpu) or the CPU touches every word of a managed range; pages elsewhere fault and migrate",
                             ManagedRangeArgs<ManagedTouchStep>(
                                 {ProcessorChoice("by", &ManagedTouchStep::by, "who touches it"),
                                  Bool("write", &ManagedTouchStep::write, "write the words (else read and check them)"),
                                  Int("rounds", &ManagedTouchStep::rounds, kOptional, 1, 100000, "times over the range")}),
                             kManagedExpectations),
      Kind<ManagedPrefetchStep>("cudaMemPrefetchAsync of a managed range to a processor, synchronised",
                                ManagedRangeArgs<ManagedPrefetchStep>(
                                    {ProcessorChoice("to", &ManagedPrefetchStep::to, "destination")}),
                                kManagedExpectations),
      Kind<ManagedAdviseStep>("cudaMemAdvise on a managed range",
                              ManagedRangeArgs<ManagedAdviseStep>(
                                  {Choice("advice", &ManagedAdviseStep::advice, kRequired,
                                          {{"read-mostly", ManagedAdvice::kReadMostly},
                                           {"preferred-location", ManagedAdvice::kPreferredLocation},
                                           {"accessed-by", ManagedAdvice::kAccessedBy}},
                                          "cudaMemAdviseSetReadMostly, SetPreferredLocation, SetAccessedBy"),
                                   ProcessorChoice("target", &ManagedAdviseStep::target, "the advice's location")}),
                              {}),
      Kind<ManagedPingPongStep>("the GPU and the CPU take turns writing a managed range, `rounds` times each",
                                ManagedRangeArgs<ManagedPingPongStep>(
                                    {Int("rounds", &ManagedPingPongStep::rounds, kOptional, 1, 100000, "turns of each side")}),
                                kManagedExpectations),
      Kind<ManagedFreeStep>("cudaFree of a managed allocation",
                            {Name("buffer", &ManagedFreeStep::buffer, "managed allocation")}, {}),
      Kind<BarReadStep>("the CPU reads GPU memory through a BAR mapping (uncached loads across PCIe)",
                        {Name("device", &BarReadStep::device, "device buffer (alloc_device)"),
                         Size("length", &BarReadStep::length, kRequired, "bytes")},
                        {"mbps", "mbps_min", "mbps_max", "tolerance", "seconds_max", "events"}),
      Kind<DmaBufExportStep>("cuMemGetHandleForAddressRange(DMA_BUF_FD) on a range of a device buffer or of host memory",
                             {Text("buffer", &DmaBufExportStep::buffer, "none: give host",
                                   "device buffer (alloc_device)"),
                              Text("host", &DmaBufExportStep::host, "none: give buffer",
                                   "host memory instead (pinned, registered, pageable)"),
                              Size("offset", &DmaBufExportStep::offset, kOptional, "into it"),
                              WholeOrSize("length", &DmaBufExportStep::length, "the rest from offset", "bytes")},
                             {"size"}),
      // ---- a data-acquisition card (docs/digitizer.md) ----
      Kind<CardStartStep>("power the card on, program its ring in the reserved range, post every slot, enable it",
                          {Size<CardStartStep>("window", &CardStartStep::window, kOptional, "the register page's physical address (0: the first reserved range's start)"),
                           Size<CardStartStep>("block", &CardStartStep::block_bytes, kOptional, "bytes per block, header and trailer included"),
                           IntInto<CardStartStep, uint64_t>("ring", &CardStartStep::ring_entries, kOptional, 1, 65536, "descriptors (a power of two)"),
                           Size<CardStartStep>("rate", &CardStartStep::rate, kOptional, "bytes per second the card produces (0: flat out)"),
                           Text<CardStartStep>("faults", &CardStartStep::faults, "none", "the fault script (docs/digitizer.md)"),
                           Bool<CardStartStep>("check_done", &CardStartStep::check_done, "the driver reads a slot only once its DONE flag is set"),
                           Bool<CardStartStep>("watchdog", &CardStartStep::watchdog, "the driver notices all-ones registers and a card that stops completing"),
                           Number<CardStartStep>("watchdog_seconds", &CardStartStep::watchdog_seconds, "s", "1", "no completion for this long is a stall"),
                           Number<CardStartStep>("poll_seconds", &CardStartStep::poll_seconds, "s", "0.0001", "how often the driver looks"),
                           Bool<CardStartStep>("model_payload", &CardStartStep::model_payload, "header and trailer only (long runs on the simulator)"),
                           Bool<CardStartStep>("clear_on_remove", &CardStartStep::clear_on_remove, "a duplicate_target's second card had its address registers cleared when the host removed that memory (aes-stream-drivers PR #284's fix)")},
                          {}),
      Kind<CardRunStep>("acquisition: the card writes blocks, the driver reads and checks them, for `seconds` of the backend's clock",
                        {Number("seconds", &CardRunStep::seconds, "s", "1", "how long")},
                        kCardExpectations),
      Kind<CardFaultStep>("one fault-script line on the running card, its times counted from now",
                          {Name("fault", &CardFaultStep::fault, "e.g. link_down at 0s for 2s")}, {}),
      Kind<CardStopStep>("the driver asks the card to stop (QUIESCE), and with `wait` waits until it is idle",
                         {Bool("wait", &CardStopStep::wait, "wait until the card's ACTIVE bit clears"),
                          Number("wait_seconds", &CardStopStep::wait_seconds, "s", "1", "how long to wait")},
                         kCardExpectations),
      Kind<CardResetStep>("the driver resets the card (RESET): quiesce, count the blocks lost across it, wait for the card to clear the bit, program the ring again, enable",
                          {Number("wait_seconds", &CardResetStep::wait_seconds, "s", "1", "how long the card may take to go idle and clear RESET")},
                          kCardExpectations),
      Kind<CardReleaseStep>("the driver releases the blocks' memory (canaries in it), the card runs on for `then_seconds`",
                            {Number("then_seconds", &CardReleaseStep::then_seconds, "s", "0.1", "the card's time after the release")},
                            {"stray_writes", "after_release"}),
  };
}

// ---- expectation definitions, bound to Expectation's members ----

template <typename T, typename Convert>
ExpectDef Expect(const char* name, const char* type, std::string help,
                 std::optional<Expected<T>> Expectation::*m, Convert convert) {
  ExpectDef d;
  d.name = name;
  d.type = type;
  d.help = std::move(help);
  d.set = [m, convert](const RawValue& v, Expectation* out) -> Status {
    auto r = convert(v);
    if (!r.ok()) return r.status();
    out->*m = Expected<T>{std::move(r).value(), v.Text(), v.line};
    return Status::Ok();
  };
  d.describe = [m](const Expectation& e) -> std::optional<std::string> {
    const auto& x = e.*m;
    if (!x) return std::nullopt;
    if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      if (x->value.size() > 3) return "[" + std::to_string(x->value.size()) + " lines]";
    }
    return x->written;
  };
  return d;
}

Result<std::string> ToText(const RawValue& v) {
  if (v.kind != RawValue::Kind::kString) return WrongType("a string", v);
  return v.str;
}
Result<int64_t> ToCount(const RawValue& v) { return ToInt(v, 0, INT64_MAX); }

// An integer (exactly), or a string ">0", ">= 3", "<= 10", "< 5".
Result<CountBound> ToCountBound(const RawValue& v) {
  CountBound b;
  if (v.kind != RawValue::Kind::kString) {
    RESMEM_ASSIGN_OR_RETURN(b.value, ToCount(v));
    return b;
  }
  std::string t;
  for (char c : v.str)
    if (c != ' ') t += c;
  size_t n = 0;
  if (t.rfind(">=", 0) == 0) b.op = CountBound::Op::kGe, n = 2;
  else if (t.rfind("<=", 0) == 0) b.op = CountBound::Op::kLe, n = 2;
  else if (t.rfind(">", 0) == 0) b.op = CountBound::Op::kGt, n = 1;
  else if (t.rfind("<", 0) == 0) b.op = CountBound::Op::kLt, n = 1;
  char* end = nullptr;
  const long long x = std::strtoll(t.c_str() + n, &end, 10);
  if (t.size() == n || *end || x < 0)
    return Status::InvalidArgument("'" + v.str + "' is not a count: give an integer, or a bound as a string "
                                   "(\">0\", \">= 3\", \"<= 10\", \"< 5\")");
  b.value = x;
  return b;
}
Result<uint64_t> ToSizeExpectation(const RawValue& v) {
  if (v.kind == RawValue::Kind::kFloat) return WrongType("a size like \"3G\" or an integer (bytes)", v);
  return ToSize(v);
}

std::vector<ExpectDef> MakeExpectDefs() {
  using E = Expectation;
  std::vector<ExpectDef> d = {
      Expect("error", "error", "the step must fail with it: a CUDA name (cudaErrorInvalidValue, in "
             "the backend's numbering), an errno name (ENXIO), a signal name (SIGBUS), a number, or "
             "`any`", &E::error, ToExpectedError),
      Expect("ok", "bool", "`false`: the step must fail (with any error)", &E::ok, ToBool),
      Expect("message_contains", "string", "text the step's message or observations contain",
             &E::message_contains, ToText),
      Expect("tolerance", "number", "relative tolerance of `mbps`, `usable_ram` and `mem_total` "
             "(default 0.15)", &E::tolerance, ToNonNegative),
      Expect("mbps", "number", "bandwidth in MB/s (MB = 10^6 B, as the seeds computed it), within "
             "`tolerance`", &E::mbps, ToNonNegative),
      Expect("seconds_max", "number", "the step took at most this many seconds", &E::seconds_max,
             ToNonNegative),
      Expect("mbps_min", "number", "bandwidth at least this many MB/s", &E::mbps_min, ToNonNegative),
      Expect("mbps_max", "number", "bandwidth at most this many MB/s (a path that must be slow)",
             &E::mbps_max, ToNonNegative),
      Expect("ratio_to_serial", "number", "an overlap's time over copy + kernel one after another, "
             "within `tolerance`: 1 without overlap, about max/sum with it", &E::ratio_to_serial,
             ToNonNegative),
      Expect("drops", "count", "blocks lost: the stream's producer overwrote them before they were copied; the card's driver saw them missing from the sequence", &E::drops,
             ToCountBound),
      Expect("corrupt", "count", "blocks whose device checksum differs from their header",
             &E::corrupt, ToCountBound),
      Expect("reservations", "integer", "memmap reservations the booted kernel made",
             &E::reservations, ToCount),
      Expect("abi_version", "integer", "the driver's ABI version", &E::abi_version, ToCount),
      Expect("usable_ram", "size", "usable RAM after boot, within `tolerance`", &E::usable_ram,
             ToSizeExpectation),
      Expect("mem_total", "size", "MemTotal after boot, within `tolerance`", &E::mem_total,
             ToSizeExpectation),
      Expect("size", "size", "the device's size; a dma-buf's size (lseek SEEK_END)", &E::size,
             ToSizeExpectation),
      Expect("phys", "size", "the device's physical address", &E::phys, ToSizeExpectation),
      Expect("path", "string", "the copy's path: pinned-dma, pageable-staged; a p2p_dma's route: "
             "same-switch, through-cpu, through-cpu (IOMMU)", &E::path, ToText),
      Expect("pins", "integer", "nvidia_p2p_get_pages calls a p2p_dma made", &E::pins, ToCount),
      Expect("hits", "integer", "transfers a kept pin served (lazy unpinning)", &E::hits, ToCount),
      Expect("evictions", "integer", "pins given back to make room in BAR1", &E::evictions, ToCount),
      Expect("events", "list of strings", "texts the step's P2P or managed-memory events contain, one event each, in "
             "this order (others between)", &E::events, ToStringList),
      Expect("mbps_min", "number", "bandwidth at least this many MB/s", &E::mbps_min, ToNonNegative),
      Expect("mbps_max", "number", "bandwidth at most this many MB/s", &E::mbps_max, ToNonNegative),
      Expect("faults", "integer", "page-fault groups the managed-memory model serviced (simulator)",
             &E::faults, ToCount),
      Expect("migrated", "size", "bytes the managed-memory model moved between system and GPU "
             "memory (simulator)", &E::migrated, ToSizeExpectation),
      Expect("evicted", "size", "bytes pushed out of a full GPU memory (simulator)", &E::evicted,
             ToSizeExpectation),
      Expect("remote", "size", "bytes the GPU reached over the link through a mapping instead of "
             "migrating (simulator)", &E::remote, ToSizeExpectation),
      Expect("vm_flags", "string", "the mapping's VM flags: \"pf io\", \"mm\", \"\"", &E::vm_flags,
             ToText),
      Expect("memory_type", "string", "the mapping's memory type: WB, WC, UC-, ...", &E::memory_type,
             ToText),
      Expect("backing", "string", "what backs the mapping", &E::backing, ToText),
      Expect("data", "string", "intact, zeros or mismatch; misdirected (a DMA that landed elsewhere); lost (a peer DMA that did not arrive)",
             &E::data, ToText),
      Expect("mode", "string", "the device's mode: pfnmap or pages", &E::mode, ToText),
      Expect("cache", "string", "the device's cache type: wb, wc or uc", &E::cache, ToText),
      Expect("cmdline", "string", "the command line the kernel received", &E::cmdline, ToText),
      Expect("reservation_over_hole", "bool", "a reservation lies over a hole of the firmware map",
             &E::reservation_over_hole, ToBool),
      Expect("user_map", "list of strings", "the kernel's \"user:\" lines, all, in order",
             &E::user_map, ToStringList),
      Expect("dmesg", "list of strings", "lines the kernel log has in this order (others between)",
             &E::dmesg, ToStringList),
      Expect("delivered", "count", "blocks the card's driver read whole and correct", &E::delivered, ToCountBound),
      Expect("torn", "count", "blocks the driver found written in part (trailer not matching header)", &E::torn, ToCountBound),
      Expect("timeouts", "count", "descriptors the card completed with status TIMEOUT", &E::timeouts, ToCountBound),
      Expect("stray_writes", "count", "canary words the card overwrote after the release", &E::stray_writes, ToCountBound),
      Expect("after_release", "count", "blocks the card wrote after the host released their memory", &E::after_release, ToCountBound),
      Expect("foreign", "count", "of the corrupt blocks, whole blocks another card wrote into this card's targets (the driver's count)", &E::foreign, ToCountBound),
      Expect("duplicate", "count", "blocks a duplicate_target's second card wrote into this card's targets (the cards' count)", &E::duplicate, ToCountBound),
      Expect("silent_losses", "count", "blocks the card lost or spoiled that the driver did not count", &E::silent_losses, ToCountBound),
      Expect("link_down", "bool", "the driver saw the card's registers read all ones", &E::link_down, ToBool),
      Expect("stalled", "bool", "the driver's watchdog saw no completion for watchdog_seconds", &E::stalled, ToBool),
      Expect("finding", "list of strings", "finding ids the doctor reports (as `resmem doctor` "
             "prints them)", &E::finding, ToStringList),
      Expect("no_finding", "list of strings", "finding ids the doctor does not report",
             &E::no_finding, ToStringList),
      Expect("findings", "list of strings", "the doctor's exact list of finding ids, in order",
             &E::findings, ToStringList),
  };
  std::sort(d.begin(), d.end(), [](const ExpectDef& a, const ExpectDef& b) { return a.name < b.name; });
  return d;
}

// The definition named `name` in `defs`, or null.
template <typename Def>
const Def* FindByName(const std::vector<Def>& defs, const std::string& name) {
  for (const auto& d : defs)
    if (d.name == name) return &d;
  return nullptr;
}

std::string Code(const std::string& s) { return "`" + s + "`"; }

// A table cell: '|' would end it.
std::string Cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

std::string DescribeArg(const ArgDef& a) {
  std::string type = ArgTypeName(a.type);
  if (a.type == ArgType::kChoice) type = Join(a.choices, " | ");
  if (!a.unit.empty()) type += ", " + a.unit;
  type += a.required ? ", required" : ", default " + a.default_text;
  return Code(a.name) + " (" + type + "): " + a.help;
}

}  // namespace

// ---- public ----

std::string RawValue::Text() const {
  switch (kind) {
    case Kind::kString: return str;
    case Kind::kInt: return std::to_string(i);
    case Kind::kFloat: return NumberText(f);
    case Kind::kBool: return b ? "true" : "false";
    case Kind::kList: return Join(list, "|");
  }
  return "";
}

std::string RawValue::TypeName() const {
  switch (kind) {
    case Kind::kString: return "a string";
    case Kind::kInt: return "an integer";
    case Kind::kFloat: return "a decimal number";
    case Kind::kBool: return "a boolean";
    case Kind::kList: return "a list";
  }
  return "?";
}

const char* ArgTypeName(ArgType type) {
  switch (type) {
    case ArgType::kSize: return "size";
    case ArgType::kWholeOrSize: return "size or \"all\"";
    case ArgType::kName: return "name";
    case ArgType::kText: return "string";
    case ArgType::kInt: return "integer";
    case ArgType::kBool: return "bool";
    case ArgType::kNumber: return "number";
    case ArgType::kFlags: return "flags";
    case ArgType::kChoice: return "choice";
  }
  return "?";
}

const ArgDef* StepDef::FindArg(const std::string& arg) const { return FindByName(args, arg); }

bool StepDef::AllowsExpectation(const std::string& expectation) const {
  const auto& common = CommonExpectations();
  return std::find(common.begin(), common.end(), expectation) != common.end() ||
         std::find(expectations.begin(), expectations.end(), expectation) != expectations.end();
}

std::vector<std::string> StepDef::AllowedExpectations() const {
  std::vector<std::string> all = CommonExpectations();
  all.insert(all.end(), expectations.begin(), expectations.end());
  return all;
}

const std::vector<StepDef>& StepDefs() {
  static const std::vector<StepDef> defs = MakeStepDefs();
  return defs;
}

const StepDef* FindStepDef(const std::string& name) { return FindByName(StepDefs(), name); }

const std::vector<std::string>& StepNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& d : StepDefs()) n.push_back(d.name);
    return n;
  }();
  return names;
}

const char* StepName(const StepArgs& args) {
  return std::visit([](const auto& kind) { return std::decay_t<decltype(kind)>::kName; }, args);
}

bool CountBound::Holds(double got) const {
  const double v = static_cast<double>(value);
  switch (op) {
    case Op::kEq: return got == v;
    case Op::kGt: return got > v;
    case Op::kGe: return got >= v;
    case Op::kLt: return got < v;
    case Op::kLe: return got <= v;
  }
  return false;
}

std::string CountBound::Describe() const {
  const char* words[] = {"exactly ", "more than ", "at least ", "fewer than ", "at most "};
  return words[static_cast<int>(op)] + std::to_string(value);
}

const std::vector<ExpectDef>& ExpectDefs() {
  static const std::vector<ExpectDef> defs = MakeExpectDefs();
  return defs;
}

const ExpectDef* FindExpectDef(const std::string& name) { return FindByName(ExpectDefs(), name); }

const std::vector<std::string>& CommonExpectations() {
  static const std::vector<std::string> common = {"error", "message_contains", "ok"};
  return common;
}

bool Expectation::empty() const {
  for (const auto& d : ExpectDefs())
    if (d.describe(*this)) return false;
  return true;
}

std::string Expectation::Describe() const {
  std::string out;
  for (const auto& d : ExpectDefs())
    if (auto text = d.describe(*this)) out += (out.empty() ? "" : ", ") + d.name + "=" + *text;
  return out.empty() ? "ok" : out;
}

std::string StepTableMarkdown() {
  std::string out =
      "A size is bytes: an integer, or a string such as \"16M\" (K/M/G/T binary) or \"0x1000\". A "
      "name is one an earlier step gave (`as`, or a context's `name`). Flags are cudaHostRegister "
      "flag names, one or a list: " + std::string(kRegisterFlagsHelp) + ". A number (a rate, a time, "
      "a bandwidth, a tolerance) is finite and 0 or more.\n\n"
      "| step | what it does | arguments | expectations |\n|---|---|---|---|\n";
  for (const auto& d : StepDefs()) {
    std::vector<std::string> args, expects;
    for (const auto& a : d.args) args.push_back(DescribeArg(a));
    for (const auto& e : d.expectations) expects.push_back(Code(e));
    out += "| " + Code(d.name) + " | " + Cell(d.help) + " | " + (args.empty() ? "-" : Cell(Join(args, "; "))) +
           " | " + (expects.empty() ? "-" : Join(expects)) + " |\n";
  }
  std::vector<std::string> common;
  for (const auto& c : CommonExpectations()) common.push_back(Code(c));
  out += "\nEvery step also takes " + Join(common) +
         ". The expectations (`expect = { ... }` or `[step.expect]`; a count is an integer, exactly, or "
         "a bound written as a string: \">0\", \">= 3\", \"<= 10\", \"< 5\"):\n\n"
         "| expectation | value | meaning |\n|---|---|---|\n";
  for (const auto& e : ExpectDefs()) out += "| " + Code(e.name) + " | " + e.type + " | " + Cell(e.help) + " |\n";
  return out;
}

Result<std::string> WithCurrentStepTable(const std::string& doc) {
  const size_t begin = doc.find(kStepTableBegin);
  const size_t end = doc.find(kStepTableEnd);
  if (begin == std::string::npos || end == std::string::npos || end < begin)
    return Status::InvalidArgument(std::string("the generated step tables' markers are missing: put ") +
                                   "the line '" + std::string(kStepTableBegin, sizeof kStepTableBegin - 2) +
                                   "' and, below it, '" + std::string(kStepTableEnd, sizeof kStepTableEnd - 2) +
                                   "' where the tables go");
  const size_t body = begin + sizeof kStepTableBegin - 1;
  return doc.substr(0, body) + StepTableMarkdown() + doc.substr(end);
}

}  // namespace resmem::scenario
