#include "engine/cli/memory_fit.h"

#include <cstdio>

#include "backends/api/memory.h"
#include "backends/host/host_region.h"

namespace resmem::cli {
namespace {

Status TooLarge(const std::string& what, uint64_t bytes, const std::string& where,
                const std::string& way_out) {
  const std::string size =
      bytes == UINT64_MAX ? "more than 2^64 bytes" : FormatSize(bytes);
  return Status::InvalidArgument(what + " is " + size + ", more than " + where + "; " + way_out);
}

}  // namespace

uint64_t SaturatingProduct(uint64_t a, uint64_t b) {
  return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

Status CheckFitsRam(const std::string& what, uint64_t bytes, const std::string& way_out) {
  const uint64_t ram = host::MemTotalBytes();
  if (ram == 0 || bytes <= ram) return Status::Ok();
  return TooLarge(what, bytes, "this machine's " + FormatSize(ram) + " of RAM (MemTotal)",
                  way_out);
}

std::string RamWarning(const std::string& what, uint64_t bytes, uint64_t available,
                       const std::string& way_out) {
  if (available == 0 || bytes <= available) return "";
  return what + " is " + FormatSize(bytes) + ", more than the " + FormatSize(available) +
         " this machine has free now (MemAvailable): the kernel may swap or end the run for "
         "memory; " + way_out;
}

Status CheckRamBeforeStart(const std::string& command, const std::string& what, uint64_t bytes,
                           const std::string& way_out) {
  RESMEM_RETURN_IF_ERROR(CheckFitsRam(what, bytes, way_out));
  const std::string short_now = RamWarning(what, bytes, host::MemAvailableBytes(), way_out);
  if (!short_now.empty())
    std::fprintf(stderr, "resmem %s: warning: %s\n", command.c_str(), short_now.c_str());
  return Status::Ok();
}

Status CheckFitsGpu(Gpu& gpu, const std::string& what, uint64_t bytes,
                    const std::string& way_out) {
  auto device = gpu.Attributes(0);
  if (!device.ok() || device->total_memory == 0 || bytes <= device->total_memory)
    return Status::Ok();
  return TooLarge(what, bytes,
                  "the GPU's " + FormatSize(device->total_memory) + " of memory (" +
                      (device->name.empty() ? gpu.name() : device->name) + ")",
                  way_out);
}

}  // namespace resmem::cli
