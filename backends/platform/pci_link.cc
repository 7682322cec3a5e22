#include "backends/platform/pci_link.h"

#include <cstdio>
#include <cstdlib>

namespace resmem {
namespace {

// Transfer rate in GT/s per generation (index gen-1), as PCI_SPEED2STR prints them.
constexpr double kGts[] = {2.5, 5.0, 8.0, 16.0, 32.0, 64.0};
// Data rate per lane after encoding, GB/s: 8b/10b for Gen1-2, 128b/130b for Gen3-5, FLIT 242/256
// for Gen6 (header comment).
constexpr double kLaneGBps[] = {0.250, 0.500, 0.98462, 1.96923, 3.93846, 7.5625};

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\n") - b + 1);
}

}  // namespace

double PcieLaneGBps(int gen) { return gen >= 1 && gen <= 6 ? kLaneGBps[gen - 1] : 0; }

double PcieLinkGBps(int gen, int width) { return width > 0 ? width * PcieLaneGBps(gen) : 0; }

Result<int> ParsePcieSpeed(const std::string& text) {
  const std::string t = Trim(text);
  double gts = 0;
  if (std::sscanf(t.c_str(), "%lf GT/s", &gts) != 1)
    return Status::InvalidArgument("link speed '" + t + "' names no rate (a link that is down "
                                   "reads \"Unknown\")");
  for (int g = 1; g <= 6; ++g)
    if (gts > kGts[g - 1] - 0.05 && gts < kGts[g - 1] + 0.05) return g;
  return Status::InvalidArgument("link speed '" + t + "' is no PCIe generation's rate");
}

Result<int> ParsePcieWidth(const std::string& text) {
  const std::string t = Trim(text);
  char* end = nullptr;
  const long w = std::strtol(t.c_str(), &end, 10);
  if (t.empty() || *end != '\0' || w < 0 || w > 32)
    return Status::InvalidArgument("link width '" + t + "' is not a lane count");
  return static_cast<int>(w);
}

std::string PcieLinkName(int gen, int width) {
  return "Gen" + (gen > 0 ? std::to_string(gen) : std::string("?")) + " x" +
         (width > 0 ? std::to_string(width) : std::string("?"));
}

std::string PcieSpeedText(int gen) {
  if (gen < 1 || gen > 6) return "Unknown";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GT/s PCIe", kGts[gen - 1]);
  return buf;
}

Result<std::string> ParseThpMode(const std::string& text) {
  const size_t open = text.find('['), close = text.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open)
    return Status::InvalidArgument("transparent_hugepage/enabled '" + Trim(text) +
                                   "' has no bracketed mode");
  return text.substr(open + 1, close - open - 1);
}

std::string RenderThpMode(const std::string& mode) {
  std::string out;
  for (const char* w : {"always", "madvise", "never"})
    out += (out.empty() ? "" : " ") + (mode == w ? "[" + std::string(w) + "]" : std::string(w));
  return out + "\n";
}

Result<CpuPlace> ParseGetcpu(const std::string& text) {
  CpuPlace p;
  if (std::sscanf(text.c_str(), "%d %d", &p.cpu, &p.node) != 2)
    return Status::InvalidArgument("getcpu '" + Trim(text) + "' is not \"CPU NODE\"");
  return p;
}

}  // namespace resmem
