// The real Platform: this machine's fact files, malloc'ed pageable memory, real memcpy, the
// steady clock.
#ifndef RESMEM_BACKENDS_PLATFORM_HOST_PLATFORM_H_
#define RESMEM_BACKENDS_PLATFORM_HOST_PLATFORM_H_

#include <memory>
#include <string>

#include "backends/api/platform.h"

namespace resmem {

// ReadSource reads the named file as it is; "/sys/firmware/memmap" is rendered by walking its
// numbered entry directories (N/start, N/end, N/type) in numeric order into lines
// "0x%016llx 0x%016llx type". Missing files give an errno status (ENOENT, EACCES).
// "module-signature:NAME" and "module-signature:/PATH" render the module's appended signature
// (backends/platform/module_file.h), decompressing with the xz, zstd or gzip found in
// `tool_path` (a PATH-style list; "" means $PATH). "/sys/bus/pci/devices" reads as the device
// names, one a line; the pseudo-source "getcpu" as "CPU NODE\n" of the calling thread
// (getcpu(2); backends/platform/pci_link.h).
// `root` prefixes every path (tests point it at a fake tree); "" reads the real files.
std::unique_ptr<Platform> MakeHostPlatform(const std::string& root = "",
                                           const std::string& tool_path = "");

}  // namespace resmem

#endif  // RESMEM_BACKENDS_PLATFORM_HOST_PLATFORM_H_
