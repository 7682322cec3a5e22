// The FUSE daemon behind the emulated /dev/resmem: libfuse3's low-level API with its multi-threaded
// loop, serving each device of a RegionProvider as a regular file in one mount (FACTS.md "FUSE":
// a regular file of a low-level daemon supports MAP_SHARED read/write mmap; size-encoded ioctls
// reach the daemon; the node is S_ISREG, never S_ISCHR), plus the control file (control.h).
//
// The daemon opens each device once, maps it whole, and serves read(2)/write(2) and page faults
// through HostMemory::Read/Write; RESMEM_IOC_INFO/LENGTH/PHYS are answered from
// RegionHandle::Info(). This runs inside the daemon process that FuseDevice (fuse_device.h) forks;
// use FuseDevice, not this, to mount.
#ifndef RESMEM_MOCK_FUSE_FUSE_DAEMON_H_
#define RESMEM_MOCK_FUSE_FUSE_DAEMON_H_

#include <memory>
#include <string>
#include <vector>

#include "backends/api/region.h"
#include "backends/fault/fault_injector.h"

namespace resmem::fuse_emu {

// The name the mount shows in /proc/mounts (source) and its type "fuse.resmem".
inline constexpr const char* kMountSource = "resmem-fuse";
inline constexpr const char* kMountType = "fuse.resmem";
inline constexpr const char* kControlName = ".control";

struct DaemonOptions {
  // Fault points consulted on each request (FaultInjector::KnownPoints): "region.open",
  // "region.read", "region.write", "region.ioctl", with the device's physical address as the
  // address. Null: only the control file's faults apply.
  std::shared_ptr<FaultInjector> faults;
  unsigned max_idle_threads = 10;
  // FUSE passthrough (Linux 6.9+, CONFIG_FUSE_PASSTHROUGH): a device whose memory is a plain file
  // (HostMemory::file_span, e.g. the memory provider's shmem file) is mapped by the kernel straight
  // from that file, at memory speed, when it is opened while no fault is armed on it; read(2) and
  // write(2) still come to the daemon. Opens made while a fault is armed take the daemon path
  // (page cache filled by read requests), and a fault cannot be armed while a passthrough file of
  // the device is open (docs/fuse.md "Memory speed"). False: every open takes the daemon path.
  bool passthrough = true;
};

class FuseDaemon {
 public:
  // Opens and maps every device the provider lists. A device the provider lists but cannot open
  // or map is still served: opening its file fails with the provider's errno (EIO when the
  // status is not an errno), as a device whose driver refused it would.
  static Result<std::unique_ptr<FuseDaemon>> Create(RegionProvider& provider,
                                                    DaemonOptions options);
  ~FuseDaemon();

  // File names in the mount, one per device ("resmem0", ...), in the provider's order.
  std::vector<std::string> device_names() const;

  // Mounts on `dir` through the already-open /dev/fuse descriptor `fuse_fd` (mount(2) with fd=,
  // as root). The daemon owns fuse_fd afterwards.
  Status Mount(const std::string& dir, int fuse_fd);
  // Serves until the session ends (SIGTERM/SIGINT/SIGHUP, or the mount goes away), then unmounts.
  // Returns 0 on a clean end.
  int Serve();

  struct State;  // the served devices, faults and counters (fuse_daemon.cc)

 private:
  FuseDaemon() = default;
  std::unique_ptr<State> state_;
};

}  // namespace resmem::fuse_emu

#endif  // RESMEM_MOCK_FUSE_FUSE_DAEMON_H_
