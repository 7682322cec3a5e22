// The GPU's place in the machine as sysfs shows it, and the one rule for what a PCIe link can
// carry. Shared by the simulator (which renders these files from its machine model and costs its
// copies by the link) and the doctor (which reads them from a real or simulated machine and
// scales the measured profiles by them), so both sides use the same per-lane rates.
#ifndef RESMEM_BACKENDS_PLATFORM_PCI_LINK_H_
#define RESMEM_BACKENDS_PLATFORM_PCI_LINK_H_

#include <string>

#include "backends/api/status.h"

namespace resmem {

// PCIe per-lane, per-direction data rate in GB/s (1e9 B/s) after line encoding, by generation:
// Gen1 2.5 GT/s and Gen2 5 GT/s with 8b/10b; Gen3 8, Gen4 16, Gen5 32 GT/s with 128b/130b; Gen6
// 64 GT/s PAM4 with 242/256 FLIT (PCI Express Base Specifications 1.0-6.0; the table of rates in
// Wikipedia's "PCI Express" article: 0.250, 0.500, 0.985, 1.969, 3.938, 7.563 GB/s per lane).
// 0 for a generation outside 1..6.
double PcieLaneGBps(int gen);
// The raw data rate of a link of `width` lanes at `gen`: lanes x PcieLaneGBps(gen). 0 when
// either is unknown (<= 0).
double PcieLinkGBps(int gen, int width);

// The generation a sysfs link speed names: "32.0 GT/s PCIe" -> 5, "8.0 GT/s PCIe" -> 3,
// "2.5 GT/s PCIe" -> 1 (drivers/pci/pci-sysfs.c, PCI_SPEED2STR). Older kernels print "8 GT/s".
// InvalidArgument for "Unknown" (a link that is down or a function without a link) or text that
// names no known rate.
Result<int> ParsePcieSpeed(const std::string& text);
// current_link_width / max_link_width: a decimal lane count, "16\n". InvalidArgument otherwise.
Result<int> ParsePcieWidth(const std::string& text);
// "Gen5 x16"; "Gen? x?" for unknown parts.
std::string PcieLinkName(int gen, int width);
// sysfs's speed text for a generation ("32.0 GT/s PCIe"), as the kernel prints it.
std::string PcieSpeedText(int gen);

// /sys/kernel/mm/transparent_hugepage/enabled: "always [madvise] never" -> "madvise" (the
// bracketed word). InvalidArgument when no word is bracketed.
Result<std::string> ParseThpMode(const std::string& text);
// The file's text for a mode ("always", "madvise", "never"): the three words, one bracketed.
std::string RenderThpMode(const std::string& mode);

// The pseudo-source "getcpu": "CPU NODE\n", what getcpu(2) answered for the calling thread.
struct CpuPlace {
  int cpu = -1;
  int node = -1;
};
Result<CpuPlace> ParseGetcpu(const std::string& text);

}  // namespace resmem

#endif  // RESMEM_BACKENDS_PLATFORM_PCI_LINK_H_
