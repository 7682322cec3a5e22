// `resmem fuse`: serves the simulated reserved-memory device of a machine preset as files in a
// FUSE mount, so unmodified programs (or the LD_PRELOAD shim) can open, ioctl and mmap it, until
// SIGINT or SIGTERM. The mount is made where the user asks (a shared mount) and removed on exit.
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/cli/command.h"
#include "mock/fuse/control.h"
#include "mock/fuse/fuse_device.h"
#include "mock/machine/machine.h"
#include "mock/region/sim_driver.h"
#include "mock/sim/sim_world.h"

namespace resmem::fuse_emu {
namespace {

constexpr char kUsage[] =
    "usage: resmem fuse --machine PRESET --mount DIR [--seed N] [--mode pfnmap|pages]\n"
    "                   [--cache wb|wc|uc]\n"
    "Serves the simulated /dev/resmemN of a machine preset as DIR/resmemN (one file per memmap=\n"
    "reservation) until SIGINT/SIGTERM. Programs that hard-code /dev/resmemN run with\n"
    "  LD_PRELOAD=libresmem_fuse_preload.so RESMEM_FUSE_DIR=DIR program\n"
    "Faults at run time: write commands to DIR/.control:\n";

int Usage(const std::string& problem) {
  std::fprintf(stderr, "resmem fuse: %s\n%s%s", problem.c_str(), kUsage, ControlUsage());
  return cli::kExitBadInput;
}

int FuseServeMain(const std::vector<std::string>& args) {
  std::string machine, mount_dir, mode = "pfnmap", cache = "wb";
  uint64_t seed = 1;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= args.size()) return false;
      *out = args[++i];
      return true;
    };
    std::string v;
    if (a == "--machine") {
      if (!value(&machine)) return Usage("--machine needs a preset name");
    } else if (a == "--mount") {
      if (!value(&mount_dir)) return Usage("--mount needs a directory");
    } else if (a == "--mode") {
      if (!value(&mode)) return Usage("--mode needs pfnmap or pages");
    } else if (a == "--cache") {
      if (!value(&cache)) return Usage("--cache needs wb, wc or uc");
    } else if (a == "--seed") {
      if (!value(&v)) return Usage("--seed needs a number");
      char* end = nullptr;
      seed = std::strtoull(v.c_str(), &end, 0);
      if (!end || *end) return Usage("--seed '" + v + "' is not a number");
    } else {
      return Usage("unknown argument '" + a + "'");
    }
  }
  if (machine.empty() || mount_dir.empty()) return Usage("--machine and --mount are required");
  // Serve only into a directory of our own: mounting over another user's directory would hide
  // what they keep there and put the device where they decide (fusermount3 refuses the same:
  // util/fusermount.c check_perm, "user has no write access to mountpoint").
  struct stat dir_stat;
  if (stat(mount_dir.c_str(), &dir_stat) != 0 || !S_ISDIR(dir_stat.st_mode))
    return Usage("--mount " + mount_dir + " is not a directory: create it first (mkdir " +
                 mount_dir + ")");
  if (dir_stat.st_uid != geteuid())
    return Usage("--mount " + mount_dir + " is owned by uid " + std::to_string(dir_stat.st_uid) +
                 ", not by you (uid " + std::to_string(geteuid()) +
                 "): resmem fuse serves only into a directory you own; make one (mkdir DIR)");
  auto map_mode = ParseMapMode(mode);
  if (!map_mode) return Usage("--mode '" + mode + "': use pfnmap or pages");
  auto cache_type = ParseCacheType(cache);
  if (!cache_type) return Usage("--cache '" + cache + "': use wb, wc or uc");

  auto spec = sim::MachinePreset(machine);
  if (!spec.ok()) {
    std::string names;
    for (const auto& n : sim::MachinePresetNames()) names += " " + n;
    return Usage(spec.status().message() + "; presets:" + names);
  }
  auto world = sim::MakeSimWorld(spec.value(), seed);
  if (!world.ok()) {
    std::fprintf(stderr, "resmem fuse: machine %s does not boot: %s\n", machine.c_str(),
                 world.status().ToString().c_str());
    return cli::kExitBadInput;
  }
  sim::SimDriverSpec driver;
  driver.mode = *map_mode;
  driver.cache = *cache_type;
  auto provider = sim::MakeSimRegionProvider(world.value(), driver);
  // Block the stop signals before mounting: one that arrives while the mount comes up waits for
  // sigtimedwait below instead of killing this process and leaving the mount behind. The daemon
  // child unblocks them for itself.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGHUP);
  sigprocmask(SIG_BLOCK, &stop, nullptr);
  MountOptions opts;
  opts.mount_dir = mount_dir;
  opts.private_namespace = false;  // the user wants to see it at DIR
  opts.faults = world.value()->faults;
  auto dev = FuseDevice::Mount(*provider, opts);
  if (!dev.ok()) {
    std::fprintf(stderr, "resmem fuse: %s\n", dev.status().ToString().c_str());
    const Status& st = dev.status();
    if (st.space() == ErrorSpace::kResmem && st.code() == kUnavailable) return cli::kExitUnavailable;
    if (st.space() == ErrorSpace::kResmem && st.code() == kInvalidArgument) return cli::kExitBadInput;
    return cli::kExitInternal;
  }
  for (const auto& n : dev.value()->device_names()) {
    std::printf("serving %s/%s (simulated /dev/%s of %s, seed %llu)\n", mount_dir.c_str(),
                n.c_str(), n.c_str(), machine.c_str(), static_cast<unsigned long long>(seed));
  }
  std::printf("control: %s; writeback limits %s; stop with Ctrl-C or SIGTERM\n",
              dev.value()->control_path().c_str(), dev.value()->writeback_note().c_str());
  std::fflush(stdout);

  timespec tick{0, 200 * 1000 * 1000};
  for (;;) {
    int sig = sigtimedwait(&stop, nullptr, &tick);
    if (sig > 0) {
      dev.value()->Unmount();
      std::printf("stopped by %s; %s unmounted\n", SignalName(sig), mount_dir.c_str());
      return cli::kExitOk;
    }
    if (!dev.value()->DaemonAlive()) {
      dev.value()->Unmount();
      std::fprintf(stderr, "resmem fuse: the daemon ended (a `die` command?); %s unmounted\n",
                   mount_dir.c_str());
      return cli::kExitCheckFailed;
    }
  }
}

}  // namespace

RESMEM_REGISTER_COMMAND(fuse, cli::Command{
                                  "fuse",
                                  "serve a machine preset's simulated /dev/resmem in a FUSE mount",
                                  std::string(kUsage) + ControlUsage(),
                                  FuseServeMain,
                              });

}  // namespace resmem::fuse_emu
