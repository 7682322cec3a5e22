// Fuzz target: what `resmem import` reads (engine/paste/paste.h ReadPaste): dmesg in both e820
// forms with timestamps and syslog prefixes, /proc/iomem, /sys/firmware/memmap dumps, /proc/mtrr,
// /proc/cpuinfo, /proc/meminfo, /etc/default/grub and grub.cfg lines, mixed. The import is then
// booted, as `resmem import` does. Properties: no crash, hang or OOM; every non-blank input line
// gets exactly one verdict; the error and warning counts match the notes.
#include <cstdint>
#include <string>

#include "backends/fuzz/fuzz_check.h"
#include "engine/paste/paste.h"
#include "mock/machine/machine.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace resmem::import;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const Imported imported = ReadPaste({PasteInput{"fuzz.txt", text}});
  int errors = 0, warnings = 0;
  for (const LineNote& note : imported.notes) {
    if (note.verdict == Verdict::kError) ++errors;
    if (note.verdict == Verdict::kWarning) ++warnings;
  }
  if (errors != imported.errors || warnings != imported.warnings)
    resmem::fuzz::Finding("error/warning counts disagree with the notes");
  if (imported.has_firmware_map) (void)resmem::sim::Boot(imported.machine);
  return 0;
}
