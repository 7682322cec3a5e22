// `resmem fuse`: serves the simulated reserved-memory device of a machine preset as files in a
// FUSE mount, so unmodified programs (or the LD_PRELOAD shim) can open, ioctl and mmap it, until
// SIGINT or SIGTERM. The mount is made where the user asks (a shared mount) and removed on exit.
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "engine/cli/command.h"
#include "engine/cli/values.h"
#include "mock/fuse/control.h"
#include "mock/fuse/fuse_device.h"
#include "mock/machine/machine.h"
#include "mock/region/sim_driver.h"
#include "mock/sim/sim_world.h"

namespace resmem::fuse_emu {
namespace {

// What `resmem fuse` is given, as its definition below binds it.
struct FuseArgs {
  std::string machine, mount_dir, mode = "pfnmap", cache = "wb";
  uint64_t seed = 1;
};

// Serve only into a directory of our own: mounting over another user's directory would hide
// what they keep there and put the device where they decide (fusermount3 refuses the same:
// util/fusermount.c check_perm, "user has no write access to mountpoint").
CLI::Validator OwnDirectory() {
  return CLI::Validator(
      [](std::string& dir) -> std::string {
        struct stat dir_stat;
        if (stat(dir.c_str(), &dir_stat) != 0)
          return dir + " is not a directory: create it first (mkdir " + dir + ")";
        if (!S_ISDIR(dir_stat.st_mode))
          return dir + " is a file, not a directory: give a directory you own (mkdir DIR)";
        if (dir_stat.st_uid != geteuid())
          return dir + " is owned by uid " + std::to_string(dir_stat.st_uid) + ", not by you (uid " +
                 std::to_string(geteuid()) +
                 "): resmem fuse serves only into a directory you own; make one (mkdir DIR)";
        return std::string();
      },
      "", "DIR");
}

int FuseServeMain(const FuseArgs& a);

cli::Action Define(CLI::App& app) {
  auto a = std::make_shared<FuseArgs>();
  app.footer(std::string(
                 "Serves the simulated /dev/resmemN of a machine preset as DIR/resmemN (one file "
                 "per memmap=\nreservation) until SIGINT/SIGTERM. Programs that hard-code "
                 "/dev/resmemN run with\n"
                 "  LD_PRELOAD=libresmem_fuse_preload.so RESMEM_FUSE_DIR=DIR program\n"
                 "Faults at run time: write commands to DIR/.control:\n") +
             ControlUsage());
  app.add_option("--machine", a->machine, "the machine preset")
      ->type_name("PRESET")
      ->required()
      ->check(CLI::IsMember(sim::MachinePresetNames()));
  app.add_option("--mount", a->mount_dir,
                 "where to mount: a directory you own (the mount is shared)")
      ->type_name("DIR")
      ->required()
      ->check(cli::PathNamed(/*required=*/true))
      ->check(OwnDirectory());
  app.add_option("--seed", a->seed, "the simulated world's seed")
      ->type_name("N")
      ->check(cli::NonNegativeInteger());
  app.add_option("--mode", a->mode, "the simulated driver's mapping mode")
      ->type_name("MODE")
      ->check(CLI::IsMember({"pfnmap", "pages"}));
  app.add_option("--cache", a->cache, "the simulated driver's caching of mappings")
      ->type_name("TYPE")
      ->check(CLI::IsMember({"wb", "wc", "uc"}));
  return [a] { return FuseServeMain(*a); };
}

int FuseServeMain(const FuseArgs& a) {
  const std::string& machine = a.machine;
  const std::string& mount_dir = a.mount_dir;
  const uint64_t seed = a.seed;
  auto map_mode = ParseMapMode(a.mode);
  auto cache_type = ParseCacheType(a.cache);
  if (!map_mode || !cache_type) return cli::kExitInternal;  // the definition's choices admit none else
  auto spec = sim::MachinePreset(machine);
  if (!spec.ok()) {
    std::fprintf(stderr, "resmem fuse: %s\n", spec.status().message().c_str());
    return cli::kExitBadInput;
  }
  auto world = sim::MakeSimWorld(spec.value(), seed);
  if (!world.ok()) {
    std::fprintf(stderr, "resmem fuse: machine %s does not boot: %s\n", machine.c_str(),
                 world.status().message().c_str());
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
    std::fprintf(stderr, "resmem fuse: %s\n", dev.status().message().c_str());
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
                                  Define,
                              });

}  // namespace resmem::fuse_emu
