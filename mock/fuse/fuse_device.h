// The FUSE-emulated /dev/resmem: mounts a RegionProvider's devices as files an unmodified program
// can open, ioctl and mmap (one file per reserved range, plus the control file of control.h).
//
// Mount() forks the daemon (fuse_daemon.h) into a child process. By default the child mounts in a
// mount namespace of its own (unshare(CLONE_NEWNS), propagation private), so the mount is never in
// this machine's /proc/mounts and vanishes with the child whatever way it ends; this process and
// its children reach the files through /proc/<daemon pid>/root/<dir> (mount_dir() gives that path).
// Where a private namespace cannot be made, or private_namespace is false (a mount others must
// see), the mount is made in the current namespace and removed on every exit path: Unmount(), the
// destructor, the daemon's SIGTERM/SIGINT/SIGHUP handlers, and the daemon's parent-death signal.
//
// The daemon is a copy (fork) of this process's provider: what the device holds changes through
// the mount (writes, mappings) and through the control file's `fill`, not through the provider
// object left in this process.
#ifndef RESMEM_MOCK_FUSE_FUSE_DEVICE_H_
#define RESMEM_MOCK_FUSE_FUSE_DEVICE_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/api/region.h"
#include "backends/fault/fault_injector.h"

namespace resmem::fuse_emu {

struct MountOptions {
  // Where to mount. Empty: a fresh private directory under $TMPDIR (or /tmp), removed afterwards.
  std::string mount_dir;
  // Mount inside the daemon's own mount namespace (see above). False: mount where others see it.
  bool private_namespace = true;
  // When the private namespace cannot be made (no CAP_SYS_ADMIN for unshare), mount in the current
  // namespace instead of failing.
  bool allow_shared_fallback = true;
  // As root, raise /sys/class/bdi/<mount's dev>/max_ratio to 100 and strict_limit to 0, so writes
  // through a mapping run at memory speed rather than about 1 GB/s (FACTS.md "FUSE").
  bool raise_writeback_limits = true;
  // The FUSE device node; a test can point it elsewhere to see the "FUSE unavailable" error.
  std::string fuse_device = "/dev/fuse";
  // Scenario faults consulted by the daemon (fuse_daemon.h DaemonOptions::faults).
  std::shared_ptr<FaultInjector> faults;
  // FUSE passthrough where the kernel grants it and the device's memory is a file
  // (fuse_daemon.h DaemonOptions::passthrough). False: every open takes the daemon path.
  bool passthrough = true;
  double ready_timeout_seconds = 10;
};

class FuseDevice {
 public:
  // Starts the daemon and waits until the mount answers. Errors: Unavailable when /dev/fuse is
  // missing or cannot be opened, or FUSE cannot be mounted here (with the reason and the remedy);
  // the provider's error when it offers no device.
  static Result<std::unique_ptr<FuseDevice>> Mount(RegionProvider& provider,
                                                   const MountOptions& options = MountOptions());
  ~FuseDevice();  // Unmount()
  FuseDevice(const FuseDevice&) = delete;
  FuseDevice& operator=(const FuseDevice&) = delete;

  // The directory this process (and its children) open the files through.
  const std::string& mount_dir() const { return access_dir_; }
  // The directory as mounted inside the daemon's namespace (equal to mount_dir() when shared).
  const std::string& mounted_at() const { return mounted_at_; }
  std::string control_path() const;
  // mount_dir()/name, for name "resmem0" or "/dev/resmem0".
  std::string DevicePath(const std::string& name) const;
  const std::vector<std::string>& device_names() const { return device_names_; }
  pid_t daemon_pid() const { return pid_; }
  bool private_namespace() const { return private_ns_; }
  // What was done about the writeback limits ("raised on bdi 0:52", "left: not root", ...).
  const std::string& writeback_note() const { return writeback_note_; }

  // Writes one or more control commands (control.h). A refused command comes back as
  // InvalidArgument carrying the daemon's last_error line. After `die` it returns once the daemon
  // process has ended (at most 3 s).
  Status Control(const std::string& commands);
  // The control file's text: devices, active faults, counters.
  Result<std::string> ControlStatus() const;

  // False once the daemon process has ended (after `die`, say). Reaps it.
  bool DaemonAlive();
  // Stops the daemon (SIGTERM, then SIGKILL after 3 s), removes the mount and the temporary
  // directory. Idempotent.
  Status Unmount();

 private:
  FuseDevice() = default;
  pid_t pid_ = -1;
  bool reaped_ = false;
  bool private_ns_ = false;
  bool own_dir_ = false;
  std::string temp_root_;   // the private temp dir we created (removed at the end)
  std::string mounted_at_;
  std::string access_dir_;
  std::string writeback_note_;
  std::vector<std::string> device_names_;
};

// True when `line` of /proc/mounts (or /proc/self/mountinfo) is a mount made by this module.
bool IsResmemFuseMountLine(const std::string& line);
// The lines of /proc/mounts that are mounts of this module (normally none).
std::vector<std::string> ResmemFuseMounts();

}  // namespace resmem::fuse_emu

#endif  // RESMEM_MOCK_FUSE_FUSE_DEVICE_H_
