#include "engine/doctor/grub_stages.h"

#include <string>

#include "mock/machine/grub.h"

namespace resmem::engine {
namespace {

constexpr const char* kSeed = "002_94e4d7274f023a25.txt";

std::string Joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += (out.empty() ? "" : " | ") + l;
  return out;
}

void Check(const std::string& path, const std::string& source, const std::string& text,
           std::vector<Finding>* out) {
  auto trace = sim::TraceKernelCmdline(source, text);
  if (!trace.ok()) {
    out->push_back({"grub-config-broken", "error",
                    path + ": the kernel gets no command line from it",
                    trace.status().message(),
                    "fix the line as the message says, run update-grub, and check /proc/cmdline "
                    "after the reboot",
                    kSeed});
    return;
  }
  std::vector<std::string> evidence = trace->StageLines();
  if (trace->Changed()) {
    for (const auto& n : trace->notes) evidence.push_back(n);
    out->push_back({"grub-changed-cmdline", "warning",
                    path + ": the kernel receives other options than the ones written",
                    path + ": " + Joined(evidence),
                    "escape each $ GRUB must not expand: \\$ in grub.cfg, \\\\\\$ inside double "
                    "quotes in /etc/default/grub (e.g. GRUB_CMDLINE_LINUX=\"memmap=8G\\\\\\$4G\"); "
                    "`resmem plan` prints both spellings",
                    kSeed});
  } else {
    out->push_back({"grub-cmdline-stages", "info", path + ": the options reach the kernel as "
                    "written", path + ": " + Joined(evidence), "", ""});
  }
}

}  // namespace

std::vector<Finding> GrubStageFindings(Platform& platform) {
  std::vector<Finding> out;
  if (auto text = platform.ReadSource("/etc/default/grub"); text.ok())
    Check("/etc/default/grub", "etc-default-grub", *text, &out);
  if (auto text = platform.ReadSource("/boot/grub/grub.cfg"); text.ok()) {
    const std::string line = sim::FirstGrubCfgLinuxLine(*text);
    if (!line.empty()) Check("/boot/grub/grub.cfg", "grub-cfg", line, &out);
  }
  return out;
}

}  // namespace resmem::engine
