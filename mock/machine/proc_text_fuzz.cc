// Fuzz target: the kernel's fact files and map lines, each parser alone: /proc/iomem, /proc/mtrr,
// /sys/firmware/memmap lines, /proc/meminfo, /proc/cpuinfo, /proc/cmdline, the IOMMU's sysfs
// folders as the platforms render them (backends/platform/proc_parsers.h), and the e820 lines of dmesg (mock/machine/e820_text.h:
// map lines in both forms, early edits, type words). The whole input goes to each whole-file
// parser and each of its lines to the line parsers. Properties: no crash, hang or OOM; a map
// line that parses has end > start and its type word reads back; an IOMMU unit has a name
// without blanks; a group whose type is known prints as the word it was read from.
#include <cstdint>
#include <sstream>
#include <string>

#include "backends/fuzz/fuzz_check.h"
#include "backends/platform/proc_parsers.h"
#include "mock/machine/e820_text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace resmem;
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)ParseIomem(text);
  (void)ParseMtrr(text);
  (void)ParseFirmwareMemmap(text);
  (void)ParseMeminfoTotal(text);
  (void)ParsePhysAddressBits(text);
  (void)ParseCmdlineOptions(text);
  (void)TrimBlanks(text);
  (void)ParseAcpiTableNames(text);
  (void)ParseCpuVendor(text);
  if (auto units = ParseIommuUnits(text); units.ok())
    for (const auto& u : units.value())
      if (u.name.empty() || u.name.find_first_of(" \t") != std::string::npos)
        fuzz::Finding("an IOMMU unit with an empty or blank name: '" + u.name + "'");
  if (auto groups = ParseIommuGroups(text); groups.ok())
    for (const auto& g : groups.value())
      if (g.type != IommuDomainType::kUnknown && g.type_word != IommuDomainTypeName(g.type))
        fuzz::Finding("a group type that does not read back: " + g.type_word);
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    auto map_line = sim::ParseE820MapLine(line);
    if (map_line.ok()) {
      const sim::E820Entry& e = map_line.value().entry;
      if (e.end <= e.start) fuzz::Finding("a parsed e820 map line with end <= start: " + line);
      auto word = sim::ParseE820TypeWord(sim::E820TypeWord(e.type));
      if (!word.ok() || word.value() != e.type)
        fuzz::Finding("the type of a parsed map line does not read back: " + line);
    }
    (void)sim::ParseE820EditLine(line);
    (void)sim::ParseE820TypeWord(line);
  }
  return 0;
}
