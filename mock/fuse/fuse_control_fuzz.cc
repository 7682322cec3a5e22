// Fuzz target: the FUSE control file (mock/fuse/control.h ParseControl), what a user writes into
// `.control`. Properties: no crash; every command parsed reads back, through Describe(), as
// itself (the status the daemon shows is what it applies).
#include <cstdint>
#include <string>

#include "backends/fuzz/fuzz_check.h"
#include "mock/fuse/control.h"

namespace {
using resmem::fuse_emu::ControlCommand;

bool Same(const ControlCommand& a, const ControlCommand& b) {
  return a.verb == b.verb && a.device == b.device && a.offset == b.offset &&
         a.length == b.length && a.delay_us == b.delay_us && a.error == b.error &&
         a.seed == b.seed;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto parsed = resmem::fuse_emu::ParseControl(text);
  if (!parsed.ok()) return 0;
  for (const ControlCommand& command : parsed.value()) {
    const std::string described = command.Describe();
    auto again = resmem::fuse_emu::ParseControl(described);
    if (!again.ok() || again.value().size() != 1 || !Same(again.value()[0], command))
      resmem::fuzz::Finding("control command '" + described + "' does not read back as itself" +
                            (again.ok() ? "" : ": " + again.status().ToString()));
  }
  return 0;
}
