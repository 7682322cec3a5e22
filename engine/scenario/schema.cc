#include "engine/scenario/schema.h"

#include <algorithm>

#include "backends/api/gpu.h"
#include "backends/api/memory.h"

namespace resmem::scenario {
namespace {

// Expectations every step can carry.
#define COMMON_EXPECT "error", "message_contains", "ok"

const std::vector<OpSchema>& Table() {
  static const std::vector<OpSchema> kOps = {
      {"boot", "boot the machine with its command line; observes the kernel's view",
       {},
       {COMMON_EXPECT, "usable_ram", "mem_total", "tolerance", "reservations", "cmdline",
        "reservation_over_hole", "user_map", "dmesg"}},
      {"open", "open the reserved-memory device",
       {{"device", ArgType::kString, false, "device path, default the first", {}},
        {"sync", ArgType::kBool, false, "O_SYNC", {}}},
       {COMMON_EXPECT}},
      {"info", "the device's info ioctl",
       {},
       {COMMON_EXPECT, "size", "phys", "mode", "cache", "abi_version"}},
      {"ioctl", "a raw ioctl with a command number (bad-input checks)",
       {{"cmd", ArgType::kInt, true, "ioctl command number", {}},
        {"null_arg", ArgType::kBool, false, "pass a NULL argument", {}}},
       {COMMON_EXPECT}},
      {"mmap", "map the device",
       {{"as", ArgType::kName, true, "name of the mapping", {}},
        {"offset", ArgType::kSize, false, "mmap offset, default 0", {}},
        {"length", ArgType::kSize, false, "mmap length, default the whole range", {}},
        {"writable", ArgType::kBool, false, "PROT_WRITE, default true", {}}},
       {COMMON_EXPECT, "vm_flags", "memory_type", "backing"}},
      {"munmap", "unmap a mapping", {{"span", ArgType::kName, true, "the mapping", {}}}, {COMMON_EXPECT}},
      {"alloc_pageable", "malloc/new",
       {{"as", ArgType::kName, true, "name", {}}, {"length", ArgType::kSize, true, "bytes", {}}},
       {COMMON_EXPECT}},
      {"alloc_pinned", "cudaMallocHost / cudaHostAlloc",
       {{"as", ArgType::kName, true, "name", {}},
        {"length", ArgType::kSize, true, "bytes", {}},
        {"flags", ArgType::kFlags, false, "portable, mapped", {}}},
       {COMMON_EXPECT}},
      {"alloc_device", "cudaMalloc",
       {{"as", ArgType::kName, true, "name", {}}, {"length", ArgType::kSize, true, "bytes", {}}},
       {COMMON_EXPECT}},
      {"context", "create or switch CUDA contexts",
       {{"action", ArgType::kString, true, "create or use", {"create", "use"}},
        {"name", ArgType::kName, true, "context name; 'primary' is the first", {}},
        {"device", ArgType::kInt, false, "GPU index for create, default 0", {}}},
       {COMMON_EXPECT}},
      {"register", "cudaHostRegister",
       {{"span", ArgType::kName, true, "host memory", {}},
        {"offset", ArgType::kSize, false, "default 0", {}},
        {"length", ArgType::kSize, false, "default the whole span", {}},
        {"flags", ArgType::kFlags, false, "default, portable, mapped, iomemory, readonly", {}},
        {"chunk", ArgType::kSize, false, "register in calls of at most this size", {}}},
       {COMMON_EXPECT, "seconds_max"}},
      {"unregister", "cudaHostUnregister",
       {{"span", ArgType::kName, true, "host memory", {}},
        {"offset", ArgType::kSize, false, "default 0", {}}},
       {COMMON_EXPECT}},
      {"write", "CPU writes a pattern through a mapping",
       {{"span", ArgType::kName, true, "host memory", {}},
        {"offset", ArgType::kSize, false, "default 0", {}},
        {"length", ArgType::kSize, true, "bytes", {}},
        {"pattern", ArgType::kString, false, "counter (default), seeded, zero", {"counter", "seeded", "zero"}}},
       {COMMON_EXPECT}},
      {"verify", "CPU reads back and compares with the pattern",
       {{"span", ArgType::kName, true, "host memory", {}},
        {"offset", ArgType::kSize, false, "default 0", {}},
        {"length", ArgType::kSize, true, "bytes", {}},
        {"pattern", ArgType::kString, false, "counter (default), seeded, zero", {"counter", "seeded", "zero"}}},
       {COMMON_EXPECT, "data"}},
      {"memcpy", "CPU memcpy between host spans; measures bandwidth",
       {{"dst", ArgType::kName, true, "destination", {}},
        {"src", ArgType::kName, true, "source", {}},
        {"dst_offset", ArgType::kSize, false, "", {}},
        {"src_offset", ArgType::kSize, false, "", {}},
        {"length", ArgType::kSize, true, "bytes", {}},
        {"passes", ArgType::kInt, false, "measure N times, report the median (default 1)", {}}},
       {COMMON_EXPECT, "mbps", "tolerance"}},
      {"copy", "cudaMemcpy between host and device; measures bandwidth",
       {{"direction", ArgType::kString, true, "h2d or d2h", {"h2d", "d2h"}},
        {"host", ArgType::kName, true, "host memory", {}},
        {"device", ArgType::kName, true, "device buffer", {}},
        {"host_offset", ArgType::kSize, false, "", {}},
        {"device_offset", ArgType::kSize, false, "", {}},
        {"length", ArgType::kSize, true, "bytes", {}},
        {"passes", ArgType::kInt, false, "measure N times, report the median (default 1)", {}}},
       {COMMON_EXPECT, "mbps", "tolerance", "path"}},
      {"stage", "copy through a pinned staging buffer: memcpy into it, then DMA",
       {{"src", ArgType::kName, true, "source host memory", {}},
        {"staging", ArgType::kName, true, "pinned buffer", {}},
        {"device", ArgType::kName, true, "device buffer", {}},
        {"src_offset", ArgType::kSize, false, "", {}},
        {"length", ArgType::kSize, true, "bytes", {}},
        {"passes", ArgType::kInt, false, "measure N times, report the median (default 1)", {}}},
       {COMMON_EXPECT, "mbps", "tolerance"}},
      {"checksum", "compare a device-side checksum with the host bytes",
       {{"host", ArgType::kName, true, "host memory", {}},
        {"device", ArgType::kName, true, "device buffer", {}},
        {"host_offset", ArgType::kSize, false, "", {}},
        {"device_offset", ArgType::kSize, false, "", {}},
        {"length", ArgType::kSize, true, "bytes", {}}},
       {COMMON_EXPECT, "data"}},
      {"stream", "a short acquisition: numbered checksummed blocks into the region, to the GPU",
       {{"span", ArgType::kName, true, "the ring (a mapping)", {}},
        {"device", ArgType::kName, true, "device buffer (at least one block)", {}},
        {"blocks", ArgType::kInt, true, "how many", {}},
        {"block_size", ArgType::kSize, true, "bytes per block", {}},
        {"rate_hz", ArgType::kNumber, false, "producer rate; default flat out", {}},
        {"register", ArgType::kBool, false, "register the ring first (default false)", {}}},
       {COMMON_EXPECT, "drops", "corrupt", "mbps", "tolerance"}},
      {"doctor", "diagnose the machine's facts as `resmem doctor` does",
       {{"devices", ArgType::kBool, false,
         "also check the reserved-memory devices (default true); false: the machine alone, as a "
         "recording of it has it", {}}},
       {COMMON_EXPECT, "finding", "no_finding", "findings"}},
  };
  return kOps;
}

}  // namespace

const std::vector<OpSchema>& AllOps() { return Table(); }

const OpSchema* FindOp(const std::string& name) {
  for (const auto& op : Table())
    if (op.name == name) return &op;
  return nullptr;
}

const std::vector<std::string>& KnownOps() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& op : Table()) n.push_back(op.name);
    return n;
  }();
  return names;
}

Status CheckArg(const ArgSchema& arg, const Value& v) {
  switch (arg.type) {
    case ArgType::kSize:
      if (v.kind == Value::Kind::kInt) {
        if (v.i < 0) return Status::InvalidArgument("a size cannot be negative");
        return Status::Ok();
      }
      if (v.kind == Value::Kind::kString) {
        if (v.str == "all") return Status::Ok();
        auto r = ParseSize(v.str);
        return r.ok() ? Status::Ok() : r.status();
      }
      return Status::InvalidArgument("expected a size like \"16M\", \"0x1000\" or an integer");
    case ArgType::kString:
    case ArgType::kName:
      if (v.kind != Value::Kind::kString) return Status::InvalidArgument("expected a string (" + arg.help + ")");
      if (!arg.choices.empty() &&
          std::find(arg.choices.begin(), arg.choices.end(), v.str) == arg.choices.end()) {
        std::string c;
        for (const auto& x : arg.choices) c += (c.empty() ? "" : ", ") + x;
        return Status::InvalidArgument("'" + v.str + "' is not one of " + c);
      }
      return Status::Ok();
    case ArgType::kInt:
      if (v.kind != Value::Kind::kInt) return Status::InvalidArgument("expected an integer");
      return Status::Ok();
    case ArgType::kBool:
      if (v.kind != Value::Kind::kBool) return Status::InvalidArgument("expected true or false");
      return Status::Ok();
    case ArgType::kNumber:
      if (!v.Number()) return Status::InvalidArgument("expected a number");
      return Status::Ok();
    case ArgType::kFlags: {
      std::vector<std::string> flags = v.kind == Value::Kind::kList ? v.list : std::vector<std::string>{v.str};
      if (v.kind != Value::Kind::kList && v.kind != Value::Kind::kString)
        return Status::InvalidArgument("expected a list of flag names, e.g. [\"portable\", \"iomemory\"]");
      for (const auto& f : flags) {
        auto r = ParseRegisterFlag(f);
        if (!r.ok()) return r.status();
      }
      return Status::Ok();
    }
  }
  return Status::Ok();
}

}  // namespace resmem::scenario
