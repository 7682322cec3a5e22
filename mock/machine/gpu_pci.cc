// The GPU's sysfs files and the NUMA/THP facts as the simulated machine serves them.
#include <cerrno>

#include "backends/platform/pci_link.h"
#include "mock/machine/machine.h"

namespace resmem::sim {
namespace {

constexpr const char* kPciDevices = "/sys/bus/pci/devices";
constexpr const char* kThp = "/sys/kernel/mm/transparent_hugepage/enabled";

// One attribute file of the GPU's directory; "" when `attr` is not one the model has.
std::string GpuAttribute(const GpuPciSpec& g, const std::string& attr) {
  if (attr == "vendor") return "0x10de\n";    // NVIDIA
  if (attr == "class") return "0x030200\n";   // 3D controller (data-centre GPUs)
  if (attr == "numa_node") return std::to_string(g.numa_node) + "\n";
  if (attr == "current_link_speed") return PcieSpeedText(g.link_gen) + "\n";
  if (attr == "current_link_width") return std::to_string(g.link_width) + "\n";
  if (attr == "max_link_speed") return PcieSpeedText(g.max_link_gen) + "\n";
  if (attr == "max_link_width") return std::to_string(g.max_link_width) + "\n";
  return "";
}

}  // namespace

Result<std::string> RenderGpuPciSource(const MachineSpec& spec, const std::string& path) {
  const std::string dir = std::string(kPciDevices) + "/";
  const bool ours = path == kPciDevices || path.rfind(dir, 0) == 0 || path == kThp || path == "getcpu";
  if (!ours) return Status::Error(kNotFound, path + ": not a GPU/NUMA/THP source");
  const GpuPciSpec& g = spec.gpu_pci;
  if (!g.described)
    return Status::Errno(ENOENT, path + ": the simulated machine does not describe its GPU's "
                                        "link (machine key gpu_pci = { gen = 5, width = 16 })");
  if (path == kPciDevices) return g.bdf + "\n";
  if (path == kThp) return RenderThpMode(g.thp);
  if (path == "getcpu") return "0 " + std::to_string(g.cpu_numa_node) + "\n";
  const std::string rest = path.substr(dir.size());
  const size_t slash = rest.find('/');
  const std::string attr = slash == std::string::npos ? "" : GpuAttribute(g, rest.substr(slash + 1));
  if (rest.substr(0, slash) != g.bdf || attr.empty())
    return Status::Errno(ENOENT, path + ": no such file on the simulated machine");
  return attr;
}

}  // namespace resmem::sim
