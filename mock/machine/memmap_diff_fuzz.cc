// Differential fuzz target: the same kernel command line through the simulator (Boot() of
// mock/machine with Linux 6.1's rules) and through kernel_e820_ref.c, a small independent C port
// of Linux 6.1's parse_memopt / parse_memmap_one / e820__update_table. Any difference in the
// resulting e820 table or in whether the kernel panics is a finding (the simulator is wrong
// where the kernel's rules say otherwise).
//
// Input: byte 0 picks the preset machine (its firmware map); the rest is the command line, with
// '"', NUL and the kernel's other spaces (\t \n \v \f \r 0xa0) turned into ' ' (quoting is the
// cmdline target's business; the port splits at ' ' only) and cut to 2000 characters (below
// COMMAND_LINE_SIZE - 1).
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "backends/fuzz/fuzz_check.h"
#include "mock/machine/kernel_e820_ref.h"
#include "mock/machine/machine.h"

namespace {
using namespace resmem::sim;

const std::vector<MachineSpec>& Presets() {
  static const std::vector<MachineSpec> presets = [] {
    std::vector<MachineSpec> out;
    for (const std::string& name : MachinePresetNames()) {
      auto spec = MachinePreset(name);
      if (!spec.ok()) resmem::fuzz::Finding("preset " + name + ": " + spec.status().ToString());
      out.push_back(spec.value());
    }
    return out;
  }();
  return presets;
}

std::string Line(uint64_t start, uint64_t end_exclusive, uint32_t type) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "[0x%016" PRIx64 "-0x%016" PRIx64 ") type %" PRIu32, start,
                end_exclusive, type);
  return buf;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const auto& presets = Presets();
  MachineSpec spec = presets[data[0] % presets.size()];
  std::string line(reinterpret_cast<const char*>(data + 1), std::min<size_t>(size - 1, 2000));
  for (char& c : line) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u == 0 || u == '"' || u == '\t' || u == '\n' || u == '\v' || u == '\f' || u == '\r' ||
        u == 0xa0)
      c = ' ';
  }
  spec.cmdline = line;
  spec.cmdline_source = "kernel";
  spec.kernel_version = "6.1.0";
  spec.arch = "x86_64";
  spec.early_edits.clear();

  auto booted = Boot(spec);
  if (!booted.ok())
    resmem::fuzz::Finding("Boot() refused a kernel command line: " + booted.status().ToString());
  const BootedKernel& sim = booted.value();

  std::vector<kref_entry> firmware;
  for (const E820Entry& e : spec.firmware_e820)
    if (e.type != E820Type::kHole && e.end > e.start)
      firmware.push_back({e.start, e.end - e.start, static_cast<uint32_t>(e.type)});
  static kref_boot ref;  // large: not on the stack
  kref_boot_cmdline(firmware.data(), static_cast<uint32_t>(firmware.size()), line.c_str(), &ref);

  const bool sim_panics = !sim.panic.empty();
  if (sim_panics != (ref.panic != 0))
    resmem::fuzz::Finding("on '" + line + "' the simulator " +
                          (sim_panics ? "panics (" + sim.panic + ")" : "boots") +
                          " but Linux 6.1's rules " + (ref.panic ? "panic" : "boot"));
  if (sim_panics) return 0;

  std::vector<std::string> sim_map, ref_map;
  for (const E820Entry& e : sim.e820)
    sim_map.push_back(Line(e.start, e.end, static_cast<uint32_t>(e.type)));
  for (uint32_t i = 0; i < ref.table.nr_entries; ++i) {
    const kref_entry& e = ref.table.entries[i];
    ref_map.push_back(Line(e.addr, e.addr + e.size, e.type));
  }
  if (sim_map != ref_map) {
    std::string msg = "on '" + line + "' the maps differ\n  simulator:\n";
    for (const auto& l : sim_map) msg += "    " + l + "\n";
    msg += "  Linux 6.1 rules:\n";
    for (const auto& l : ref_map) msg += "    " + l + "\n";
    resmem::fuzz::Finding(msg);
  }
  return 0;
}
