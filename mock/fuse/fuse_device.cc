#include "mock/fuse/fuse_device.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "mock/fuse/control.h"
#include "mock/fuse/fuse_daemon.h"

namespace resmem::fuse_emu {
namespace {

// The child reports one line: "OK <private 0|1> name..." or "E <space> <code> <message>".
void Report(int fd, const std::string& line) {
  std::string text = line + "\n";
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

void ReportError(int fd, const Status& st) {
  std::string msg = st.message();
  for (auto& c : msg) {
    if (c == '\n') c = ' ';
  }
  Report(fd, "E " + std::to_string(static_cast<int>(st.space())) + " " +
                 std::to_string(st.code()) + " " + msg);
}

// Runs in the forked child; never returns.
[[noreturn]] void DaemonChild(RegionProvider& provider, const MountOptions& options,
                              const std::string& dir, const std::string& temp_root, int fuse_fd,
                              int report_fd, pid_t parent) {
  // The daemon must not outlive the process that mounted it (prctl(2) PR_SET_PDEATHSIG); SIGTERM
  // lets it unmount on the way out.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(0);
  // The mounting process may block its stop signals to wait for them (resmem fuse does, before
  // mounting, so a signal that comes early is not lost); the daemon takes them as they come.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  int private_ns = 0;
  if (options.private_namespace) {
    // A mount namespace of our own whose mounts do not propagate back (mount_namespaces(7)): the
    // mount exists only for this process and those that look through /proc/<pid>/root.
    if (unshare(CLONE_NEWNS) == 0 && mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0) {
      private_ns = 1;
    } else if (!options.allow_shared_fallback) {
      int err = errno;
      ReportError(report_fd,
                  Status::Unavailable(std::string("cannot make a private mount namespace: ") +
                                      std::strerror(err) +
                                      ": run as root, or set allow_shared_fallback"));
      _exit(3);
    }
  }
  DaemonOptions dopts;
  dopts.faults = options.faults;
  dopts.passthrough = options.passthrough;
  auto daemon = FuseDaemon::Create(provider, dopts);
  if (!daemon.ok()) {
    ReportError(report_fd, daemon.status());
    _exit(3);
  }
  Status st = daemon.value()->Mount(dir, fuse_fd);
  if (!st.ok()) {
    ReportError(report_fd, st);
    _exit(3);
  }
  std::string ok = "OK " + std::to_string(private_ns);
  for (const auto& n : daemon.value()->device_names()) ok += " " + n;
  Report(report_fd, ok);
  close(report_fd);
  int rc = daemon.value()->Serve();
  daemon.value().reset();
  // When the mounting process was killed it cannot remove the directories it made: do it here.
  if (!temp_root.empty()) {
    rmdir(dir.c_str());
    rmdir(temp_root.c_str());
  }
  _exit(rc);
}

Status ReadReport(int fd, double timeout_s, std::string* line) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  char buf[1024];
  while (line->find('\n') == std::string::npos) {
    int ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                  deadline - std::chrono::steady_clock::now())
                                  .count());
    if (ms <= 0) {
      return Status::Unavailable("the FUSE daemon did not report within " +
                                 std::to_string(timeout_s) + " s: raise ready_timeout_seconds");
    }
    pollfd p{fd, POLLIN, 0};
    int r = poll(&p, 1, ms);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::Internal("the FUSE daemon exited before reporting");
    line->append(buf, static_cast<size_t>(n));
  }
  line->resize(line->find('\n'));
  return Status::Ok();
}

std::string WriteSysfs(const std::string& path, const std::string& value) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return path + ": " + std::strerror(errno);
  ssize_t n = write(fd, value.data(), value.size());
  int err = errno;
  close(fd);
  if (n != static_cast<ssize_t>(value.size())) return path + ": " + std::strerror(err);
  return "";
}

}  // namespace

bool IsResmemFuseMountLine(const std::string& line) {
  return line.find(std::string(" ") + kMountType + " ") != std::string::npos ||
         line.rfind(std::string(kMountSource) + " ", 0) == 0;
}

std::vector<std::string> ResmemFuseMounts() {
  std::vector<std::string> out;
  std::ifstream in("/proc/mounts");
  for (std::string line; std::getline(in, line);) {
    if (IsResmemFuseMountLine(line)) out.push_back(line);
  }
  return out;
}

Result<std::unique_ptr<FuseDevice>> FuseDevice::Mount(RegionProvider& provider,
                                                      const MountOptions& options) {
  int fuse_fd = open(options.fuse_device.c_str(), O_RDWR | O_CLOEXEC);
  if (fuse_fd < 0) {
    int err = errno;
    std::string why = std::string("cannot open ") + options.fuse_device + ": " +
                      std::strerror(err);
    if (err == ENOENT || err == ENODEV || err == ENXIO) {
      why += ": this machine has no FUSE (kernel without CONFIG_FUSE_FS, or a container without "
             "the device); load the fuse module or run where /dev/fuse exists "
             "(mknod /dev/fuse c 10 229)";
    } else if (err == EACCES || err == EPERM) {
      why += ": run as root (on a fresh machine /dev/fuse is 0600, FACTS.md \"FUSE\")";
    }
    return Status::Unavailable(why);
  }
  std::unique_ptr<FuseDevice> dev(new FuseDevice());
  if (options.mount_dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/resmem-fuse.XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data())) {
      int err = errno;
      close(fuse_fd);
      return Status::Errno(err, "cannot create a directory like " + tmpl + ": " +
                                    std::strerror(err) + ": set TMPDIR to a writable directory");
    }
    dev->temp_root_ = buf.data();
    dev->mounted_at_ = dev->temp_root_ + "/mnt";
    if (mkdir(dev->mounted_at_.c_str(), 0755) != 0) {
      int err = errno;
      close(fuse_fd);
      rmdir(dev->temp_root_.c_str());
      return Status::Errno(err, "mkdir " + dev->mounted_at_ + ": " + std::strerror(err));
    }
    dev->own_dir_ = true;
  } else {
    struct stat st;
    if (stat(options.mount_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      close(fuse_fd);
      return Status::InvalidArgument("mount directory " + options.mount_dir +
                                     " does not exist or is not a directory: create it first");
    }
    dev->mounted_at_ = options.mount_dir;
  }

  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) {
    int err = errno;
    close(fuse_fd);
    return Status::Errno(err, std::string("pipe: ") + std::strerror(err));
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close(fuse_fd);
    close(pipefd[0]);
    close(pipefd[1]);
    return Status::Errno(err, std::string("fork of the FUSE daemon: ") + std::strerror(err));
  }
  if (pid == 0) {
    close(pipefd[0]);
    DaemonChild(provider, options, dev->mounted_at_, dev->own_dir_ ? dev->temp_root_ : "",
                fuse_fd, pipefd[1], parent);
  }
  // Only the daemon may hold the /dev/fuse descriptor: when it dies the kernel must see the last
  // one close and abort the connection (ENOTCONN), as with a real crashed daemon.
  close(fuse_fd);
  close(pipefd[1]);
  dev->pid_ = pid;
  std::string line;
  Status st = ReadReport(pipefd[0], options.ready_timeout_seconds, &line);
  close(pipefd[0]);
  if (st.ok() && line.rfind("E ", 0) == 0) {
    std::istringstream in(line.substr(2));
    int space = 0, code = 0;
    in >> space >> code;
    std::string msg;
    std::getline(in, msg);
    if (!msg.empty() && msg[0] == ' ') msg.erase(0, 1);
    switch (static_cast<ErrorSpace>(space)) {
      case ErrorSpace::kErrno:
        // A mount refused by the kernel means FUSE is not usable here.
        st = Status::Unavailable("FUSE mount failed: " + msg);
        break;
      case ErrorSpace::kResmem: st = Status::Error(static_cast<ResmemCode>(code), msg); break;
      default: st = Status::Internal(msg); break;
    }
  } else if (st.ok() && line.rfind("OK ", 0) != 0) {
    st = Status::Internal("the FUSE daemon reported '" + line + "'");
  }
  if (!st.ok()) {
    dev->Unmount();
    return st;
  }
  std::istringstream in(line.substr(3));
  int private_ns = 0;
  in >> private_ns;
  dev->private_ns_ = private_ns == 1;
  for (std::string n; in >> n;) dev->device_names_.push_back(n);
  dev->access_dir_ = dev->private_ns_
                         ? "/proc/" + std::to_string(pid) + "/root" + dev->mounted_at_
                         : dev->mounted_at_;

  // The first stat waits until the daemon's loop answers: after this the mount is usable.
  struct stat root;
  if (stat(dev->access_dir_.c_str(), &root) != 0) {
    int err = errno;
    dev->Unmount();
    return Status::Unavailable("the FUSE mount at " + dev->access_dir_ + " does not answer: " +
                               std::strerror(err));
  }
  if (!options.raise_writeback_limits) {
    dev->writeback_note_ = "left at kernel defaults (raise_writeback_limits = false)";
  } else if (geteuid() != 0) {
    dev->writeback_note_ = "left at kernel defaults: not root";
  } else {
    std::string bdi = std::to_string(major(root.st_dev)) + ":" + std::to_string(minor(root.st_dev));
    std::string base = "/sys/class/bdi/" + bdi + "/";
    std::string e1 = WriteSysfs(base + "max_ratio", "100");
    std::string e2 = WriteSysfs(base + "strict_limit", "0");
    dev->writeback_note_ = e1.empty() && e2.empty()
                               ? "raised on bdi " + bdi + " (max_ratio=100 strict_limit=0)"
                               : "not raised on bdi " + bdi + ": " + e1 + (e1.empty() ? "" : " ") + e2;
  }
  return dev;
}

FuseDevice::~FuseDevice() { Unmount(); }

std::string FuseDevice::control_path() const { return access_dir_ + "/" + kControlName; }

std::string FuseDevice::DevicePath(const std::string& name) const {
  return access_dir_ + "/" + name.substr(name.rfind('/') + 1);
}

Status FuseDevice::Control(const std::string& commands) {
  int fd = open(control_path().c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    return Status::Errno(err, "open " + control_path() + ": " + std::strerror(err) +
                                  (err == ENOTCONN ? ": the daemon is gone" : ""));
  }
  ssize_t n = write(fd, commands.data(), commands.size());
  int err = errno;
  close(fd);
  if (n == static_cast<ssize_t>(commands.size())) {
    // `die` is answered before the daemon exits and other threads may still serve a request or
    // two: wait until it is gone, so the caller's next access meets the dead device.
    auto parsed = ParseControl(commands);
    bool dies = false;
    if (parsed.ok()) {
      for (const auto& c : parsed.value()) dies = dies || c.verb == ControlVerb::kDie;
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (dies && DaemonAlive() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return Status::Ok();
  }
  if (n >= 0) return Status::Internal("short write to " + control_path());
  if (err == EINVAL) {
    auto text = ControlStatus();
    std::string why = "control command refused";
    if (text.ok()) {
      auto pos = text->find("last_error: ");
      if (pos != std::string::npos) {
        why = text->substr(pos + 12, text->find('\n', pos) - pos - 12);
      }
    }
    return Status::InvalidArgument(why);
  }
  return Status::Errno(err, "write " + control_path() + ": " + std::strerror(err));
}

Result<std::string> FuseDevice::ControlStatus() const {
  int fd = open(control_path().c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    return Status::Errno(err, "open " + control_path() + ": " + std::strerror(err));
  }
  std::string text;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      close(fd);
      return Status::Errno(err, "read " + control_path() + ": " + std::strerror(err));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return text;
}

bool FuseDevice::DaemonAlive() {
  if (pid_ <= 0 || reaped_) return false;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_ || (r < 0 && errno == ECHILD)) {
    reaped_ = true;
    return false;
  }
  return true;
}

Status FuseDevice::Unmount() {
  if (pid_ > 0 && !reaped_) {
    kill(pid_, SIGTERM);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (DaemonAlive() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (DaemonAlive()) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      reaped_ = true;
    }
  }
  if (!private_ns_ && !mounted_at_.empty()) {
    // A killed or dead daemon leaves its mount behind in a shared namespace; detach it. EINVAL
    // means it was not mounted any more, which is the goal.
    umount2(mounted_at_.c_str(), MNT_DETACH);
  }
  if (own_dir_) {
    rmdir(mounted_at_.c_str());
    rmdir(temp_root_.c_str());
    own_dir_ = false;
  }
  mounted_at_.clear();
  return Status::Ok();
}

}  // namespace resmem::fuse_emu
