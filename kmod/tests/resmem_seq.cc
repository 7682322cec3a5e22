// resmem_seq: random syscall sequences against the real module, inside the kmod lane's guest
// (ci/qemu/guest_init.sh case d_random_syscall_sequences; docs/reliability.md "Random syscall
// sequences"). Statically linked: the guest has only busybox.
//
//   resmem_seq [--seed S] [--ops N] [--threads T] [--module-name resmem] [--module-file /resmem.ko]
//              [--keep I,J,K-L] [--no-shrink] [--shrink-seconds S] [--list] [--huge] [--kcov-sites N]
//              [--p2p /dev/resmem_eduN[,...] [--provider-file /nv_p2p_standin.ko]]
//
// The op list is a pure function of (seed, ops, threads, --p2p or not): each op carries a kind, a
// thread and six random words that are interpreted against the state at run time (the k-th open
// fd, the k-th mapping, ...), so any sub-list is still a valid program. That is what makes a
// failure shrinkable: on failure the seed is printed, the list is delta-debugged (each candidate
// run in a fresh child process) and the reproducer printed as a command with --keep.
//
// The parts: the generator (resmem_seq_generator.h: the list of a seed), the executor
// (resmem_seq_executor.h: running a list, each op against its oracle; resmem_seq_run.h inside it),
// the shrinker (resmem_seq_shrinker.h), and this file: the command line, the module's setup
// before the runs and its checks after them.
//
// Operations: open with every flag, close, ioctl (valid, wrong size, random numbers, bad
// pointers), mmap (random offsets, lengths, protections, flags incl. MAP_FIXED in a per-thread
// arena), munmap (whole, part, unaligned), mremap (shrink, grow, move, DONTUNMAP), madvise (every
// advice but HWPOISON/SOFT_OFFLINE), touch (fault pages in, write/read back), read/write/pread/
// pwrite/lseek, fork (the child checks and exits holding mappings), module unload attempts (must
// fail while anything is held) and unload + reload (must succeed when nothing is; /proc/iomem
// must lose every resmem entry). Threads run their own ops concurrently between barriers.
//
// Oracle: each result is compared with what the kernel's mm/vfs code and kmod/resmem.c promise
// (success, or an errno from the set that applies). After every mapping, touch and madvise,
// /proc/self/pagemap is read for the whole mapping: every present page must show the PFN of
// phys + offset of its own device, and every PFN must lie inside the ranges the module was loaded
// with (read back from /sys/module/NAME/parameters): the module must never expose other memory.
// New kernel log lines with BUG/WARNING/KASAN/lockdep/Oops fail the run. At the end the module is
// unloaded (/proc/iomem clean), kmemleak scanned (no unreferenced object), and loaded again.
// On a KCOV kernel the run also says how many of the module's instrumented sites its ops reached
// (--kcov-sites: how many there are, counted in the .ko by the lane; resmem_seq_kcov.h).
//
// --p2p (guest case d_random_sequences_edu_p2p): the module is resmem_edu (its /dev/resmemN as
// above) and the lists also drive the edu DMA devices and the GPUDirect RDMA stand-in provider,
// nv_p2p_standin, from every thread: contexts, cudaMalloc/cudaFree, pins and transfers racing the
// frees, BAR mappings that must fault once freed, dma-bufs, unloads of both modules; the provider
// must be at rest once everything is closed (resmem_seq_p2p.h).
//
// Exit: 0 pass, 1 failure (seed and reproducer printed), 2 usage or setup error.
#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "kmod/tests/resmem_seq_executor.h"
#include "kmod/tests/resmem_seq_generator.h"
#include "kmod/tests/resmem_seq_kcov.h"
#include "kmod/tests/resmem_seq_p2p.h"
#include "kmod/tests/resmem_seq_shrinker.h"
#include "kmod/tests/resmem_seq_util.h"
#include "kmod/tests/resmem_seq_world.h"
#include "kmod/tests/tap_diag.h"

namespace resmem::seq {
namespace {

using guest::Diag;

// The command line.
struct Options {
  uint64_t seed = 0;
  bool seed_given = false, shrink = true, list = false, huge = false;
  size_t nops = 10000;
  int threads = 4;
  double shrink_s = 300;
  uint64_t kcov_sites = 0;  // the module's instrumented sites (kmod_lane.sh counts them); 0: unknown
  std::string keep_text, p2p_list, provider_file = "/nv_p2p_standin.ko";
  bool module_named = false, module_filed = false;
};

int Usage(const char* why) {
  std::fprintf(stderr,
               "resmem_seq: %s\nusage: resmem_seq [--seed S] [--ops N] [--threads T] [--module-name resmem] "
               "[--module-file /resmem.ko] [--keep I,J,K-L] [--no-shrink] [--shrink-seconds S] [--list] [--huge] [--kcov-sites N]\n"
               "                  [--p2p /dev/resmem_eduN[,...] [--provider-file /nv_p2p_standin.ko]]\n"
               "  --p2p: the module is resmem_edu (/resmem_edu.ko) unless --module-name/--module-file say otherwise\n",
               why);
  return 2;
}

// Reads the command line into *o and the module's name and file into *w: 0, or Usage's status.
int ParseArgs(int argc, char** argv, Options* o, World* w) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&](const char* what) -> const char* {
      if (i + 1 >= argc) {
        Usage((std::string(what) + " needs a value").c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--seed") o->seed = std::strtoull(next("--seed"), nullptr, 0), o->seed_given = true;
    else if (a == "--ops") o->nops = std::strtoull(next("--ops"), nullptr, 0);
    else if (a == "--threads") o->threads = std::atoi(next("--threads"));
    else if (a == "--module-name") w->module_name = next("--module-name"), o->module_named = true;
    else if (a == "--module-file") w->module_file = next("--module-file"), o->module_filed = true;
    else if (a == "--p2p") o->p2p_list = next("--p2p");
    else if (a == "--provider-file") o->provider_file = next("--provider-file");
    else if (a == "--keep") o->keep_text = next("--keep");
    else if (a == "--no-shrink") o->shrink = false;
    else if (a == "--shrink-seconds") o->shrink_s = std::atof(next("--shrink-seconds"));
    else if (a == "--list") o->list = true;
    else if (a == "--huge") o->huge = true;
    else if (a == "--kcov-sites") o->kcov_sites = std::strtoull(next("--kcov-sites"), nullptr, 0);
    else return Usage(("unknown argument '" + a + "'").c_str());
  }
  if (o->threads < 1 || o->threads > 16) return Usage("--threads must be 1..16");
  if (o->nops == 0) return Usage("--ops must be at least 1");
  if (!o->p2p_list.empty() && !o->module_named) w->module_name = "resmem_edu";
  if (!o->p2p_list.empty() && !o->module_filed) w->module_file = "/resmem_edu.ko";
  if (!o->seed_given) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    o->seed = static_cast<uint64_t>(ts.tv_sec) * 1000003u ^ static_cast<uint64_t>(ts.tv_nsec);
  }
  return 0;
}

// The command that replays this run (the reproducer adds --keep).
std::string ReplayCommand(const Options& o, const World& w) {
  std::string cmd = Fmt("resmem_seq --seed 0x%" PRIx64 " --ops %zu --threads %d --module-name %s --module-file %s%s",
                        o.seed, o.nops, o.threads, w.module_name.c_str(), w.module_file.c_str(),
                        o.huge ? " --huge" : "");
  if (!o.p2p_list.empty())
    cmd += " --p2p " + o.p2p_list + (o.provider_file != "/nv_p2p_standin.ko" ? " --provider-file " + o.provider_file : "");
  return cmd;
}

// --p2p: what the device ops work with, read into *cfg, and their counters, shared with the runs.
// "" or why not.
std::string SetupDeviceMode(const Options& o, p2p::Config* cfg, RunSetup* setup) {
  std::string e = p2p::Setup(o.p2p_list, o.provider_file, cfg);
  if (!e.empty()) return e;
  void* m = mmap(nullptr, sizeof(p2p::Counters), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return "cannot map the device mode's counters";
  setup->p2p_counters = new (m) p2p::Counters();
  setup->p2p = cfg;
  return "";
}

// --huge: 2 MiB entries asked for now and on every reload. "" or why not.
std::string AskForHuge(World* w) {
  std::string e;
  int fd = open(("/sys/module/" + w->module_name + "/parameters/huge").c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0 || write(fd, "1", 1) != 1) e = "--huge: cannot write /sys/module/" + w->module_name + "/parameters/huge";
  if (fd >= 0) close(fd);
  size_t at = w->params.find("huge=");
  if (at != std::string::npos) w->params.replace(at, 6, "huge=Y");
  else w->params += " huge=Y";
  return e;
}

// The module as loaded (parameters, ranges, devices, its file for reloads) and, with --p2p, the
// device mode: 0, or 2 with the reason said.
int SetupModule(const Options& o, World* w, p2p::Config* p2p_cfg, RunSetup* setup) {
  std::string e = ReadModuleSetup(w);
  if (e.empty() && o.huge) e = AskForHuge(w);
  if (e.empty()) e = FindDevices(w);
  if (e.empty() && !o.p2p_list.empty()) e = SetupDeviceMode(o, p2p_cfg, setup);
  if (!e.empty()) {
    Diag("setup: %s", e.c_str());
    return 2;
  }
  std::ifstream f(w->module_file, std::ios::binary);
  w->image.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  if (w->image.empty()) {
    Diag("setup: cannot read the module file %s (needed to reload after unload; --module-file)", w->module_file.c_str());
    return 2;
  }
  std::string rs;
  for (const auto& r : w->ranges) rs += Fmt(" [0x%" PRIx64 "+0x%" PRIx64 ")", r.start, r.size);
  Diag("module %s (%s): ranges%s; %zu devices", w->module_name.c_str(), w->params.c_str(), rs.c_str(), w->devices.size());
  return 0;
}

// kmemleak before: what the kernel already reports is not ours; clear it. Whether kmemleak is there.
bool KmemleakBefore() {
  std::string before = KmemleakScan();
  if (before == "-") {
    Diag("kmemleak: not available on this kernel (/sys/kernel/debug/kmemleak): leak check left to the debug kernel lane");
    return false;
  }
  size_t n = 0;
  for (size_t p = 0; (p = before.find("unreferenced object", p)) != std::string::npos; ++p) ++n;
  Diag("kmemleak: %zu unreferenced objects before the run (not the module's: marked reported)", n);
  KmemleakClear();
  return true;
}

// What the run did: ops per kind, the oracles' counts, the device mode's and KCOV's.
void ReportRun(const Options& o, const RunSetup& setup, double dt) {
  const Counters* c = setup.c;
  std::string kinds;
  for (int k = 0; k < kNumKinds; ++k)
    if (Weight(k, setup.p2p != nullptr) || c->kinds[k]) kinds += Fmt(" %s=%" PRIu64, KindName(k), c->kinds[k].load());
  Diag("ran %" PRIu64 " ops in %.1f s (%.0f ops/s), %d threads:%s", c->ops.load(), dt, c->ops.load() / std::max(dt, 1e-9),
       o.threads, kinds.c_str());
  Diag("results: %" PRIu64 " succeeded as expected, %" PRIu64 " failed with an expected errno; %" PRIu64
       " mappings; pagemap: %" PRIu64 " pages of pages-mode mappings read, %" PRIu64 " present, every PFN its own device's and "
       "inside the ranges; %" PRIu64 " pages of pfnmap mappings read (a hole to pagemap: mm/pagewalk.c); %" PRIu64
       " touched pages matched the device's bytes; %" PRIu64 " bytes written and read back; %" PRIu64
       " forks; %" PRIu64 " unloads refused while held; %" PRIu64 " unload+reloads",
       c->ok.load(), c->expected_errors.load(), c->mappings.load(), c->pfn_checked.load(), c->pages_present.load(),
       c->pfnmap_pages_walked.load(), c->content_checked.load(),
       c->bytes_verified.load(), c->forks.load(), c->unload_refused.load(), c->reloads.load());
  if (setup.p2p) p2p::Report(*setup.p2p_counters);
  kcov::Report(*c, setup.w->module_name, o.kcov_sites);
}

// A failed run: the failure, shrunk to a reproducer unless --no-shrink. Returns 1.
int ReportFailure(const Options& o, const RunSetup& setup, const std::vector<Op>& ops, const std::vector<long>& keep,
                  const std::string& failure) {
  Diag("FAIL (seed 0x%" PRIx64 "): %s", o.seed, failure.c_str());
  if (o.shrink) {
    int runs = 0;
    RunList run = [&](const std::vector<long>& k) { return RunInChild(setup, ops, k, 120); };
    std::vector<long> small = Shrink(run, keep, o.shrink_s, Signature(failure), &runs);
    std::string again = RunInChild(setup, ops, small, 300);
    Diag("shrunk to %zu ops in %d runs%s; reproducer:", small.size(), runs,
         again.empty() ? " (the shrunk list PASSES when run alone: the failure depends on timing)" : "");
    Diag("  %s --keep %s", ReplayCommand(o, *setup.w).c_str(), KeepList(small).c_str());
    if (!again.empty()) Diag("  which fails with: %s", again.c_str());
    for (size_t i = 0; i < small.size() && i < 40; ++i) Diag("    %ld %s", small[i], Describe(ops[small[i]]).c_str());
  }
  if (setup.p2p) p2p::RestoreSettings(*setup.p2p);
  return 1;
}

// kmemleak after the run and the final unload: 0 when clean, 1 (said) when not.
int KmemleakAfter(uint64_t seed) {
  sleep(6);  // kmemleak reports objects older than 5 s (mm/kmemleak.c jiffies_min_age)
  KmemleakScan();
  std::string rep = KmemleakScan();
  if (rep.find("unreferenced object") == std::string::npos) {
    Diag("kmemleak: clean after the run and unload");
    return 0;
  }
  Diag("FAIL (seed 0x%" PRIx64 "): kmemleak after the run and unload:", seed);
  std::stringstream in(rep);
  std::string l;
  for (int i = 0; i < 60 && std::getline(in, l); ++i) Diag("  %s", l.c_str());
  KmemleakClear();
  return 1;
}

// The end of a passing run: nothing held, unload, nothing left in /proc/iomem, kmemleak clean,
// load again (and with --p2p the provider too). 0 pass, 1 failure.
int FinishRun(const Options& o, const RunSetup& setup, bool have_kmemleak) {
  World* w = setup.w;
  if (!ModuleLoaded(w->module_name)) {
    std::string e = LoadModule(w);
    if (!e.empty()) return Diag("FAIL: %s", e.c_str()), 1;
  }
  if (DeleteModule(w->module_name) != 0) {
    Diag("FAIL (seed 0x%" PRIx64 "): unload after the run failed: %s (a leaked reference)", o.seed, strerror(errno));
    return 1;
  }
  auto left = IomemLines("resmem");
  if (!left.empty()) {
    Diag("FAIL (seed 0x%" PRIx64 "): after the final unload /proc/iomem still lists: %s", o.seed, left[0].c_str());
    return 1;
  }
  Diag("final unload: /proc/iomem has no resmem entry");
  int rc = have_kmemleak ? KmemleakAfter(o.seed) : 0;
  std::string e = LoadModule(w);
  if (!e.empty()) return Diag("FAIL: %s", e.c_str()), 1;
  if (setup.p2p) {
    e = p2p::FinalUnloadReload(*setup.p2p);
    if (e.empty()) {
      Diag("final: %s at rest, unloaded and loaded again", setup.p2p->provider_name.c_str());
    } else {
      Diag("FAIL (seed 0x%" PRIx64 "): %s", o.seed, e.c_str());
      rc = 1;
    }
  }
  if (rc == 0) Diag("PASS: seed 0x%" PRIx64 ", %" PRIu64 " ops", o.seed, setup.c->ops.load());
  return rc;
}

int Main(int argc, char** argv) {
  Options o;
  World w;
  if (int rc = ParseArgs(argc, argv, &o, &w)) return rc;
  std::vector<Op> ops = Generate(o.seed, o.nops, o.threads, !o.p2p_list.empty());
  std::vector<long> keep;
  if (!o.keep_text.empty()) {
    if (!ParseKeep(o.keep_text, o.nops, &keep))
      return Usage(("--keep '" + o.keep_text + "': expected indexes below --ops like 3,17,40-45").c_str());
  } else {
    for (size_t i = 0; i < o.nops; ++i) keep.push_back(static_cast<long>(i));
  }
  Diag("seed 0x%" PRIx64 ": replay with: %s%s", o.seed, ReplayCommand(o, w).c_str(),
       o.keep_text.empty() ? "" : (" --keep " + o.keep_text).c_str());
  if (o.list) {
    for (long i : keep) std::printf("%ld %s\n", i, Describe(ops[i]).c_str());
    return 0;
  }
  RunSetup setup;
  setup.w = &w;
  setup.threads = o.threads;
  setup.huge_optin = o.huge;
  p2p::Config p2p_cfg;
  if (int rc = SetupModule(o, &w, &p2p_cfg, &setup)) return rc;
  const bool have_kmemleak = KmemleakBefore();
  void* shm = mmap(nullptr, sizeof(Counters), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  setup.c = new (shm) Counters();
  if (!kcov::Start()) Diag("kcov: not available on this kernel (/sys/kernel/debug/kcov): no coverage figure");
  double t0 = Now();
  std::string failure = RunInChild(setup, ops, keep, 3000);
  ReportRun(o, setup, Now() - t0);
  if (!failure.empty()) return ReportFailure(o, setup, ops, keep, failure);
  return FinishRun(o, setup, have_kmemleak);
}

}  // namespace
}  // namespace resmem::seq

int main(int argc, char** argv) { return resmem::seq::Main(argc, argv); }
