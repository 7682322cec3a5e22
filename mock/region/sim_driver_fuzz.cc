// Fuzz target: the simulated driver (mock/region/sim_driver.h) as a program drives it: opens,
// ioctls with any command number and argument buffer (the kmod/uapi structs as the driver
// sees them), mmaps at any offset, length and protection, reads and writes through the
// mappings, closes. The input is a little program:
//   byte 0: the driver (bit 0 pages mode, bits 1-2 cache, bit 3 kernel-virtual PFN (seed 002),
//           bit 4 int length (the truncation bug), bit 5 range checks off)
//   byte 1: the command line of the simulated qemu-q35-5g machine (one of four)
//   then 17-byte steps: an opcode and two little-endian u64 operands.
// Properties: no crash, hang or OOM; an ioctl writes no more than the size its command number
// encodes (the buffer is exactly that size, so ASan sees any overrun) and INFO/LENGTH/PHYS agree
// with Info(); with the module's bounds (no int length bug), a mapping that succeeds lies inside
// the device; a read or write through a mapping past its end fails, never succeeds.
#include <linux/ioctl.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backends/fuzz/fuzz_check.h"
#include "kmod/uapi/resmem_ioctl.h"
#include "mock/machine/machine.h"
#include "mock/region/sim_driver.h"
#include "mock/sim/sim_world.h"

namespace {
using namespace resmem;
using namespace resmem::sim;
using resmem::fuzz::Finding;

const char* const kCmdlines[] = {
    "memmap=64M$0x140000000",
    "memmap=64M$0x140000000 memmap=16M$0xc0000000",  // one over the PCI hole
    "memmap=4K$0x100000000,8M$0x13f800000",
    "mem=6G memmap=2M$0x100100000",
};

uint64_t U64(const uint8_t* p) {
  uint64_t v = 0;
  std::memcpy(&v, p, sizeof v);
  return v;
}

const unsigned long kKnownCommands[] = {RESMEM_IOC_INFO, RESMEM_IOC_LENGTH, RESMEM_IOC_PHYS,
                                        RESMEM_IOC_TEST_PIN};

void CheckIoctl(RegionHandle& handle, unsigned long cmd, bool null_arg) {
  const size_t arg_size = _IOC_SIZE(cmd);
  // Exactly the bytes the command's number says, on the heap: a longer copy is an ASan report.
  std::unique_ptr<uint8_t[]> arg(new uint8_t[arg_size == 0 ? 1 : arg_size]);
  std::memset(arg.get(), 0xa5, arg_size == 0 ? 1 : arg_size);
  const Status st = handle.Ioctl(cmd, null_arg ? nullptr : arg.get());
  if (!st.ok()) return;
  if (null_arg) Finding("an ioctl with a null argument succeeded");
  auto info = handle.Info();
  if (!info.ok()) Finding("ioctl succeeded but Info() failed: " + info.status().ToString());
  if (cmd == RESMEM_IOC_INFO) {
    if (arg_size < sizeof(resmem_info)) Finding("RESMEM_IOC_INFO's size is below its struct");
    resmem_info out;
    std::memcpy(&out, arg.get(), sizeof out);
    if (out.phys_addr != info.value().phys_addr || out.size != info.value().size)
      Finding("RESMEM_IOC_INFO disagrees with Info()");
    if (std::memchr(out.name, 0, sizeof out.name) == nullptr)
      Finding("RESMEM_IOC_INFO's name is not NUL terminated");
  } else if (cmd == RESMEM_IOC_LENGTH || cmd == RESMEM_IOC_PHYS) {
    uint64_t v;
    std::memcpy(&v, arg.get(), sizeof v);
    if (v != (cmd == RESMEM_IOC_LENGTH ? info.value().size : info.value().phys_addr))
      Finding("RESMEM_IOC_LENGTH/PHYS disagrees with Info()");
  } else {
    Finding("an unknown ioctl command succeeded");
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  SimDriverSpec spec;
  spec.mode = (data[0] & 1) ? MapMode::kPages : MapMode::kPfnmap;
  const CacheType caches[] = {CacheType::kWriteBack, CacheType::kWriteCombining,
                              CacheType::kUncached, CacheType::kWriteBack};
  spec.cache = caches[(data[0] >> 1) & 3];
  spec.pfn_source = (data[0] & 8) ? SimDriverSpec::PfnSource::kKernelVirtual
                                  : SimDriverSpec::PfnSource::kPhysical;
  spec.length_as_int32 = data[0] & 16;
  spec.range_check = !(data[0] & 32);

  static const MachineSpec base = [] {
    auto m = MachinePreset("qemu-q35-5g");
    if (!m.ok()) Finding("preset qemu-q35-5g: " + m.status().ToString());
    return m.value();
  }();
  MachineSpec machine = base;
  machine.cmdline = kCmdlines[data[1] % 4];
  auto world = MakeSimWorld(machine, 1);
  if (!world.ok()) Finding("the fixed machine does not boot: " + world.status().ToString());
  auto provider = MakeSimRegionProvider(world.value(), spec);
  (void)provider->List();

  std::vector<std::unique_ptr<RegionHandle>> handles;
  struct Mapped {
    std::unique_ptr<HostMemory> memory;
    uint64_t length = 0;
  };
  std::vector<Mapped> mappings;
  std::vector<uint8_t> buffer;
  constexpr size_t kStep = 17;
  constexpr uint64_t kMaxAccess = 64 * 1024;
  for (size_t at = 2; at + kStep <= size; at += kStep) {
    const uint8_t op = data[at];
    const uint64_t a = U64(data + at + 1), b = U64(data + at + 9);
    switch (op % 6) {
      case 0: {  // open
        if (handles.size() >= 4) break;
        OpenRequest request;
        request.path = (op & 0x80) ? "" : "/dev/resmem" + std::to_string(a % 4);
        request.sync = op & 0x40;
        request.writable = !(op & 0x20);
        auto h = provider->Open(request);
        if (h.ok()) handles.push_back(std::move(h).value());
        break;
      }
      case 1: {  // ioctl: a known command, or any number
        if (handles.empty()) break;
        const unsigned long cmd =
            (op & 0x80) ? static_cast<unsigned long>(a) : kKnownCommands[a % 4];
        CheckIoctl(*handles[b % handles.size()], cmd, op & 0x40);
        break;
      }
      case 2: {  // mmap
        if (handles.empty() || mappings.size() >= 4) break;
        RegionHandle& h = *handles[(op >> 5) % handles.size()];
        MapRequest request;
        request.offset = (op & 0x10) ? a : (a % 64) * 4096;
        request.length = (op & 0x08) ? b : (b % 64 + 1) * 4096;
        request.writable = op & 0x04;
        request.shared = !(op & 0x02) || !spec.range_check;
        auto m = h.Map(request);
        if (!m.ok()) break;
        auto info = h.Info();
        if (!spec.length_as_int32 && info.ok() &&
            (request.offset > info.value().size ||
             request.length > info.value().size - request.offset))
          Finding("a mapping past the device's end succeeded");
        mappings.push_back({std::move(m).value(), request.length});
        break;
      }
      case 3:
      case 4: {  // read / write through a mapping
        if (mappings.empty()) break;
        Mapped& m = mappings[(op >> 5) % mappings.size()];
        const uint64_t len = b % (kMaxAccess + 1);
        const uint64_t offset = (op & 0x10) ? a : a % (m.length + 1);
        buffer.assign(len, static_cast<uint8_t>(a));
        const Status st = (op % 6 == 3) ? m.memory->Read(offset, buffer.data(), len)
                                        : m.memory->Write(offset, buffer.data(), len);
        if (st.ok() && (offset > m.memory->size() || len > m.memory->size() - offset))
          Finding("an access past the end of a mapping succeeded");
        break;
      }
      case 5: {  // close a mapping or a handle
        if ((op & 0x80) && !handles.empty()) handles.erase(handles.begin() + a % handles.size());
        else if (!mappings.empty()) mappings.erase(mappings.begin() + a % mappings.size());
        break;
      }
    }
  }
  return 0;
}
