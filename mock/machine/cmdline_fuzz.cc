// Fuzz target: the kernel command line from where a user writes it to the booted kernel's map:
// /etc/default/grub (dash's expansion), a grub.cfg linux line (GRUB's lexer and loader) or the
// kernel's own line, then parse_args, memparse and every mem= / memmap= form, applied by Boot()
// (mock/machine) with the rules of one of several kernel versions on one of the presets.
//
// Input: byte 0 picks the source (bits 0-1), the kernel version (bits 2-4) and the preset (bits
// 5-7); the rest is the text. Properties: no crash, hang or OOM; Boot() fails only for the
// reasons its contract names (never for a malformed option: a real kernel boots on); the map
// it returns is sorted and free of overlaps unless the kernel would panic; every mem=/memmap=
// item on the line has an outcome. The same text is read for its IOMMU options on each kind of
// firmware (mock/machine/iommu.h): an IOMMU is on only where the firmware has one, identity
// domains only when the line set them, and the sysfs texts rendered from it read back.
#include <cstdint>
#include <string>
#include <vector>

#include "backends/fuzz/fuzz_check.h"
#include "mock/machine/cmdline.h"
#include "mock/machine/grub.h"
#include "mock/machine/machine.h"

namespace {
using namespace resmem::sim;
using resmem::fuzz::Finding;

const char* const kSources[] = {"kernel", "grub-cfg", "etc-default-grub", "grub"};
const char* const kVersions[] = {"",       "2.6.9",   "2.6.32", "3.13.10",
                                 "3.19.8", "4.4.155", "4.19.0", "6.1.0-13-amd64"};

const std::vector<MachineSpec>& Presets() {
  static const std::vector<MachineSpec> presets = [] {
    std::vector<MachineSpec> out;
    for (const std::string& name : MachinePresetNames()) {
      auto spec = MachinePreset(name);
      if (!spec.ok()) Finding("preset " + name + " does not load: " + spec.status().ToString());
      out.push_back(spec.value());
    }
    return out;
  }();
  return presets;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t selector = data[0];
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  const auto& presets = Presets();
  MachineSpec spec = presets[(selector >> 5) % presets.size()];
  spec.cmdline_source = kSources[selector & 3];
  spec.kernel_version = kVersions[(selector >> 2) & 7];
  spec.arch = (selector & 0x80) && spec.kernel_version == "2.6.9" ? "i386" : "x86_64";
  spec.cmdline = text;

  // The stages alone.
  (void)SplitKernelCmdline(text);
  (void)MemParse(text, 0);
  (void)SimpleStrtoull(text, 0);
  auto trace = TraceKernelCmdline(spec.cmdline_source, text);
  (void)SpellKernelOptionsForGrub(text);

  auto booted = Boot(spec);
  if (!booted.ok()) {
    // Boot's contract: errors only for the scenario's own mistakes and for text the boot loader
    // tools refuse (then TraceKernelCmdline refuses it too).
    if (trace.ok())
      Finding("Boot failed on a command line the boot loader accepted: " +
              booted.status().ToString());
    return 0;
  }
  const BootedKernel& kernel = booted.value();
  if (kernel.panic.empty()) {
    for (size_t i = 0; i < kernel.e820.size(); ++i) {
      const E820Entry& e = kernel.e820[i];
      // i386 before 2.6.27 keeps the table unsanitized (linux_rules.h sanitizes_user_map): a
      // memmap= of size 0 or past 2^64 stands in it as written, as print_memory_map shows.
      if (e.end <= e.start && spec.arch != "i386")
        Finding("an empty or inverted entry in the booted map");
      if (i > 0 && kernel.e820[i - 1].end > e.start && spec.arch != "i386")
        Finding("overlapping or unsorted entries in a sanitized booted map");
    }
  }
  for (const auto& outcome : kernel.memory_options)
    if (outcome.key != "mem" && outcome.key != "memmap")
      Finding("a memory outcome for key '" + outcome.key + "'");
  for (IommuVendor v : {IommuVendor::kNone, IommuVendor::kIntel, IommuVendor::kAmd}) {
    IommuSpec hw;
    hw.described = true;
    hw.vendor = v;
    hw.units = 2;
    hw.intel_default_on = (selector & 1) != 0;
    hw.devices = {"0000:00:00.0", "0000:00:02.0", "0000:00:10.0"};
    const IommuKernel k = ReadIommuOptions(text, hw);
    if (k.on() && k.active != v) Finding("an IOMMU on that the firmware does not have");
    if (k.default_domain == resmem::IommuDomainType::kIdentity && !k.domain_from_cmdline)
      Finding("identity domains the command line did not ask for");
    for (const auto& o : k.options)
      if (o.key.find("iommu") == std::string::npos) Finding("an IOMMU outcome for key '" + o.key + "'");
    auto units = resmem::ParseIommuUnits(RenderIommuUnits(hw, k));
    auto groups = resmem::ParseIommuGroups(RenderIommuGroups(hw, k));
    if (!units.ok() || !groups.ok()) Finding("rendered IOMMU sysfs does not parse");
    else if (units.value().empty() == k.on()) Finding("units shown for an IOMMU that is off, or none for one on");
  }
  return 0;
}
