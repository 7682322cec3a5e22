// The host side of the pseudo-source "module-signature:WHAT" (module_policy_parsers.h): finds
// the module file, decompresses it with the system's tool, reads its appended signature
// (module_signature.h) and renders the facts as text.
#ifndef RESMEM_BACKENDS_PLATFORM_MODULE_FILE_H_
#define RESMEM_BACKENDS_PLATFORM_MODULE_FILE_H_

#include <string>
#include <vector>

#include "backends/api/status.h"

namespace resmem {

// The module files named NAME.ko, NAME.ko.xz, NAME.ko.zst or NAME.ko.gz under
// ROOT/lib/modules/RELEASE/ (directory symlinks, such as build/ and source/, are not followed),
// as paths without ROOT, in the order modprobe prefers them: depmod's default search order puts
// updates/ (where dkms installs, updates/dkms/) before the kernel's own tree
// (depmod.d(5): "search updates built-in"), then by path.
std::vector<std::string> FindModuleFiles(const std::string& root, const std::string& release,
                                         const std::string& name);

// "none", "xz", "zstd" or "gzip" from the file name's suffix (.ko, .ko.xz, .ko.zst, .ko.gz).
std::string ModuleCompression(const std::string& path);

// The bytes of ROOT+PATH, decompressed with `xz -dc`, `zstd -dc` or `gzip -dc` as its suffix
// says; the tool is looked for in the directories of `tool_path` (a PATH-style list). A missing
// tool is kUnavailable naming it and its Debian package; a tool that fails is an error with its
// exit status. A decompressed module larger than 1 GiB is refused.
Result<std::string> ReadModuleBytes(const std::string& root, const std::string& path,
                                    const std::string& tool_path);

// The pseudo-source's text for `what`: a module name ("resmem": the file depmod would load for
// the running kernel, ROOT/proc/sys/kernel/osrelease) or an absolute path. A module that is not
// installed is errno ENOENT naming where it was looked for; a file that cannot be read or
// decompressed is that error. A signature that cannot be parsed is rendered "signed: malformed"
// with the reason: it is a fact about the file (the kernel refuses it), not a failure to read.
Result<std::string> RenderModuleSignatureSource(const std::string& what, const std::string& root,
                                                const std::string& tool_path);

}  // namespace resmem

#endif  // RESMEM_BACKENDS_PLATFORM_MODULE_FILE_H_
