// resmem_seq's executor (resmem_seq_executor.h): a run in a child process, its epochs (each
// worker thread's ops up to the next barrier, concurrently), the barriers (module unload attempts
// and unload + reload), the kernel log after each epoch, and a signal in an op reported with what
// the thread had mapped. The ops and their oracles: resmem_seq_run.h.
#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>

#include "kmod/tests/resmem_seq_kcov.h"
#include "kmod/tests/resmem_seq_run.h"
#include "kmod/tests/resmem_seq_util.h"

namespace resmem::seq {
namespace {

using guest::Diag;

thread_local long g_current_op = -1;
thread_local int g_current_kind = -1;
thread_local const ThreadState* g_current_thread = nullptr;
Run* g_run = nullptr;

// A signal in an op: the op, the address, what the thread believed it had mapped and what the
// kernel says is mapped there (best effort: the process is going anyway).
void OnSignal(int sig, siginfo_t* si, void*) {
  if (sig == SIGBUS) p2p::EscapeGuardedRead();  // a BAR read the device mode expects may fault
  char buf[4096];
  int n = std::snprintf(buf, sizeof buf, "op #%ld (%s): signal %d (%s) at address %p", g_current_op,
                        g_current_kind >= 0 ? KindName(g_current_kind) : "-", sig,
                        sig == SIGBUS ? "SIGBUS" : sig == SIGSEGV ? "SIGSEGV" : "?", si ? si->si_addr : nullptr);
  if (g_current_thread)
    for (const auto& sl : g_current_thread->slots)
      if (n < 3000)
        n += std::snprintf(buf + n, sizeof buf - n, "; slot %p+0x%lx dev %d off 0x%lx prot %d%s", sl.addr,
                           static_cast<unsigned long>(sl.len), sl.dev, static_cast<unsigned long>(sl.off), sl.prot,
                           sl.in_arena ? " arena" : "");
  int maps = open("/proc/self/maps", O_RDONLY);
  if (maps >= 0 && si) {
    static char m[65536];
    ssize_t got = read(maps, m, sizeof m - 1);
    m[got > 0 ? got : 0] = 0;
    for (char* line = std::strtok(m, "\n"); line; line = std::strtok(nullptr, "\n")) {
      unsigned long lo = std::strtoul(line, nullptr, 16), hi = std::strtoul(std::strchr(line, '-') + 1, nullptr, 16);
      unsigned long a = reinterpret_cast<unsigned long>(si->si_addr);
      if (a + (4ul << 20) >= lo && a < hi + (4ul << 20) && n < 3900)
        n += std::snprintf(buf + n, sizeof buf - n, "; maps: %s", line);
    }
  }
  buf[n++] = '\n';
  if (g_run && g_run->result_fd >= 0) (void)!write(g_run->result_fd, buf, n);
  (void)!write(1, "# ", 2);
  (void)!write(1, buf, n);
  _exit(3);
}

void ReleaseAll(std::vector<ThreadState>& ts) {
  for (auto& t : ts) {
    for (auto& s : t.slots) ReleaseRange(s.addr, s.len, s.in_arena);
    for (auto& f : t.fds) close(f.fd);
    t.slots.clear();
    t.fds.clear();
  }
}

// Unload with nothing held must succeed and leave no trace; then load again with the same
// parameters and find the same devices.
void UnloadReload(Run* r, std::vector<ThreadState>& ts, long idx, const Op* op) {
  ReleaseAll(ts);
  long rc = DeleteModule(r->w->module_name);
  if (rc != 0) {
    Failure(r, idx, op, Fmt("delete_module(%s) with nothing held failed: %s (a leaked reference)",
                            r->w->module_name.c_str(), strerror(errno)));
    return;
  }
  auto left = IomemLines("resmem");
  if (!left.empty()) {
    Failure(r, idx, op, "after unload /proc/iomem still lists: " + left[0]);
    return;
  }
  struct stat st;
  for (const auto& d : r->w->devices)
    if (stat(d.path.c_str(), &st) == 0) {
      Failure(r, idx, op, d.path + " still exists after unload");
      return;
    }
  std::string e = LoadModule(r->w);
  if (!e.empty()) {
    Failure(r, idx, op, "reload: " + e);
    return;
  }
  r->c->reloads++;
  for (const auto& d : r->w->devices) {
    int fd = open(d.path.c_str(), O_RDONLY | O_CLOEXEC);
    resmem_info info{};
    if (fd < 0 || ioctl(fd, RESMEM_IOC_INFO, &info) != 0 || info.phys_addr != d.info.phys_addr ||
        info.size != d.info.size) {
      Failure(r, idx, op, d.path + " after reload is missing or describes another range");
      if (fd >= 0) close(fd);
      return;
    }
    close(fd);
  }
  if (IomemLines("resmem").size() != r->w->devices.size())
    Failure(r, idx, op, Fmt("after reload /proc/iomem lists %zu resmem entries for %zu devices",
                            IomemLines("resmem").size(), r->w->devices.size()));
}

void UnloadHeld(Run* r, std::vector<ThreadState>& ts, long idx, const Op& op) {
  // What pins the module: an open file (fops owner) or a mapping (it holds its file). An O_PATH
  // fd does not: it never calls the driver's open (fs/open.c do_dentry_open). With --p2p an open
  // edu file too (resmem_edu serves it).
  bool held = r->p2p && r->p2p->HoldsEduModule();
  for (auto& t : ts) {
    held |= !t.slots.empty();
    for (const auto& f : t.fds) held |= !(f.flags & O_PATH);
  }
  if (!held) {
    UnloadReload(r, ts, idx, &op);
    return;
  }
  long rc = DeleteModule(r->w->module_name);
  if (Expect(r, idx, op, "delete_module while fds/mappings are held", rc, errno, {EWOULDBLOCK, EBUSY})) r->c->unload_refused++;
  else if (rc == 0) {
    std::string e = LoadModule(r->w);  // keep the run going for the report
    if (!e.empty()) Diag("%s", e.c_str());
  }
}

// Lines that mean the kernel found a bug (KASAN, lockdep, DEBUG_VM, WARN, Oops, kmemleak).
const char* BadKernelLine(const std::string& l) {
  static const char* kSigns[] = {"BUG:", "WARNING:", "KASAN", "possible circular locking",
                                 "inconsistent lock state", "possible recursive locking",
                                 "sleeping function called", "suspicious RCU usage",
                                 "general protection", "Oops", "kernel BUG", "Bad page",
                                 "list_add corruption", "list_del corruption", "unreferenced object",
                                 "UBSAN", "Unable to handle", "lock held when returning",
                                 "bad unlock balance", "DEBUG_LOCKS_WARN_ON", "Kernel panic",
                                 // include/linux/pgtable.h pmd_clear_bad & co (mm/pgtable-generic.c)
                                 "bad pmd", "bad pud", "bad pte", "bad p4d", "bad pgd", "Bad pagetable",
                                 "Corrupted page table"};
  for (const char* s : kSigns)
    if (l.find(s) != std::string::npos) return s;
  return nullptr;
}

// New records of /dev/kmsg since the last call: the first bad one, or "".
std::string DrainKmsg(std::optional<guest::KmsgSince>& kmsg) {
  if (!kmsg) return "";
  std::string first;
  for (const std::string& record : kmsg->Lines()) {
    const std::string line = Trim(record);
    if (first.empty() && BadKernelLine(line)) first = line;
  }
  return first;
}

// The device mode's ops report through the run's counters and Failure.
class RunOutcome : public Outcome {
 public:
  explicit RunOutcome(Run* r) : r_(r) {}
  void Ok() override { r_->c->ok++; }
  void ExpectedError() override { r_->c->expected_errors++; }
  void Fail(long index, const Op* op, const std::string& why) override { Failure(r_, index, op, why); }

 private:
  Run* r_;
};

// A barrier op: the device mode's part first (it may release the edu files that hold the
// module), then the module's unload attempt or unload + reload.
void Barrier(Run* r, std::vector<ThreadState>& ts, long idx, const Op& op) {
  if (r->p2p) r->p2p->Barrier(idx, op, op.kind == kUnloadReload);
  if (r->stop) return;
  if (op.kind == kUnloadHeld) UnloadHeld(r, ts, idx, op);
  else UnloadReload(r, ts, idx, &op);
}

// One op on worker th.
void DoOp(Run* run, ThreadState& t, int th, long idx, const Op& op) {
  switch (op.kind) {
    case kOpen: DoOpen(run, t, idx, op); break;
    case kClose: DoClose(run, t, idx, op); break;
    case kIoctl: DoIoctl(run, t, idx, op); break;
    case kMmap: DoMmap(run, t, idx, op); break;
    case kMunmap: DoMunmap(run, t, idx, op); break;
    case kMremap: DoMremap(run, t, idx, op); break;
    case kMadvise: DoMadvise(run, t, idx, op); break;
    case kTouch: DoTouch(run, t, idx, op); break;
    case kRead: case kWrite: case kPread: case kPwrite: DoReadWrite(run, t, idx, op); break;
    case kLseek: DoLseek(run, t, idx, op); break;
    case kFork: DoFork(run, t, idx, op); break;
    default:
      if (run->p2p && op.kind >= kP2pFirst) run->p2p->Do(th, idx, op, op.kind - kP2pFirst);
      break;
  }
}

// Each worker's arena, scratch buffer and guard page; false when they cannot be mapped.
bool SetupThreads(std::vector<ThreadState>* ts) {
  const int threads = static_cast<int>(ts->size());
  for (int i = 0; i < threads; ++i) {
    ThreadState& t = (*ts)[i];
    t.id = i;
    t.nthreads = threads;
    t.arena = static_cast<uint8_t*>(mmap(nullptr, kArenaLen, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
    t.scratch.assign(96 * 1024, 0);
    t.guard = static_cast<uint8_t*>(mmap(nullptr, 2 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (t.arena == MAP_FAILED || t.guard == MAP_FAILED) return false;
    // PROT_NONE, not unmapped: an unmapped page could be taken by a later mmap.
    mprotect(t.guard + kPage, kPage, PROT_NONE);
  }
  return true;
}

// SIGSEGV and SIGBUS in this process go to OnSignal.
void CatchSignals() {
  struct sigaction sa {};
  sa.sa_sigaction = OnSignal;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGSEGV, &sa, nullptr);
  sigaction(SIGBUS, &sa, nullptr);
}

// An epoch: ops[keep[k..end)], each worker thread its own, concurrently.
void RunEpoch(Run* run, std::vector<ThreadState>& ts, const std::vector<Op>& ops, const std::vector<long>& keep,
              size_t k, size_t end) {
  std::vector<std::thread> workers;
  if (kcov::On()) kcov::FindModule(run->w->module_name);
  for (int th = 0; th < static_cast<int>(ts.size()); ++th) {
    workers.emplace_back([&, th] {
      ThreadState& t = ts[th];
      kcov::Thread kcov;
      for (size_t j = k; j < end && !run->stop; ++j) {
        const Op& op = ops[keep[j]];
        if (op.thread != th) continue;
        g_current_op = keep[j];
        g_current_kind = op.kind;
        g_current_thread = &t;
        run->c->ops++;
        run->c->kinds[op.kind]++;
        DoOp(run, t, th, keep[j], op);
        kcov.Fold(run->c);
      }
    });
  }
  for (auto& wk : workers) wk.join();
}

// Runs ops[keep] in this process (the caller forked it). Returns "" or the failure.
std::string Execute(const RunSetup& setup, const std::vector<Op>& ops, const std::vector<long>& keep, int result_fd) {
  Run run;
  run.w = setup.w;
  run.c = setup.c;
  run.huge_optin = setup.huge_optin;
  run.result_fd = result_fd;
  g_run = &run;
  run.kmsg.emplace();
  RunOutcome outcome(&run);
  std::unique_ptr<p2p::Executor> p2p;
  if (setup.p2p) {
    p2p.reset(new p2p::Executor(*setup.p2p, setup.p2p_counters, &outcome, setup.threads));
    std::string e = p2p->Start();
    if (!e.empty()) return "device mode: " + e;
    run.p2p = p2p.get();
  }
  CatchSignals();
  std::vector<ThreadState> ts(setup.threads);
  if (!SetupThreads(&ts)) return "cannot reserve the thread arenas";
  for (size_t k = 0; k < keep.size() && !run.stop;) {
    size_t end = k;  // the next barrier
    while (end < keep.size() && ops[keep[end]].kind != kUnloadHeld && ops[keep[end]].kind != kUnloadReload) ++end;
    RunEpoch(&run, ts, ops, keep, k, end);
    std::string bad = DrainKmsg(run.kmsg);
    if (!bad.empty()) Failure(&run, end ? keep[end - 1] : -1, nullptr, "kernel log: " + bad);
    if (run.p2p && !run.stop) run.p2p->EpochEnd(end ? keep[end - 1] : -1);
    if (run.stop) break;
    if (end < keep.size()) {
      const Op& op = ops[keep[end]];
      g_current_op = keep[end];
      setup.c->ops++;
      setup.c->kinds[op.kind]++;
      Barrier(&run, ts, keep[end], op);
      bad = DrainKmsg(run.kmsg);
      if (!bad.empty()) Failure(&run, keep[end], &op, "kernel log: " + bad);
    }
    k = end + 1;
  }
  ReleaseAll(ts);
  if (run.p2p && !run.stop) run.p2p->Finish();
  std::string bad = DrainKmsg(run.kmsg);
  if (!bad.empty() && !run.failed) Failure(&run, -1, nullptr, "kernel log after the run: " + bad);
  return run.failed ? run.failure : "";
}

// Waits for the run's child, killing it after limit_s; its exit status, and whether it timed out.
int WaitChild(pid_t pid, double limit_s, bool* timed_out) {
  double t0 = Now();
  int status = 0;
  *timed_out = false;
  for (;;) {
    pid_t got = waitpid(pid, &status, WNOHANG);
    if (got == pid) break;
    if (Now() - t0 > limit_s) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      *timed_out = true;
      break;
    }
    usleep(20000);
  }
  return status;
}

}  // namespace

void ReportSignalsTo(Run* r) { g_run = r; }

std::string RunInChild(const RunSetup& setup, const std::vector<Op>& ops, const std::vector<long>& keep,
                       double limit_s) {
  if (!ModuleLoaded(setup.w->module_name)) {
    std::string e = LoadModule(setup.w);
    if (!e.empty()) return "the module is not loaded and cannot be: " + e;
  }
  int pfd[2];
  if (pipe(pfd) != 0) return "pipe failed";
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(pfd[0]);
    std::string f = Execute(setup, ops, keep, pfd[1]);
    if (!f.empty()) {
      (void)!write(pfd[1], f.data(), f.size());
      _exit(1);
    }
    _exit(0);
  }
  close(pfd[1]);
  bool timed_out = false;
  int status = WaitChild(pid, limit_s, &timed_out);
  std::string msg;
  char buf[4096];
  ssize_t n;
  while ((n = read(pfd[0], buf, sizeof buf)) > 0) msg.append(buf, n);
  close(pfd[0]);
  if (timed_out) return Fmt("the run did not finish in %.0f s (hang): %s", limit_s, msg.c_str());
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  if (msg.empty()) msg = Fmt("the run ended with status 0x%x", status);
  return msg;
}

}  // namespace resmem::seq
