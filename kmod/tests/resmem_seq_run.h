// Inside resmem_seq's executor (resmem_seq_executor.h): one run's state, the oracles the ops
// share, and the ops on the module. resmem_seq_executor.cc runs the epochs and barriers,
// resmem_seq_oracle.cc holds the shared checks, resmem_seq_file_ops.cc the ops on files (open,
// close, ioctl, read/write, lseek) and resmem_seq_map_ops.cc those on mappings (mmap, munmap,
// mremap, madvise, touch, fork).
//
// Oracle: each result is compared with what the kernel's mm/vfs code and kmod/resmem.c promise
// (success, or an errno from the set that applies). After every mapping, touch and madvise,
// /proc/self/pagemap is read for the whole mapping: every present page must show the PFN of
// phys + offset of its own device, and every PFN must lie inside the ranges the module was loaded
// with: the module must never expose other memory.
#ifndef RESMEM_KMOD_TESTS_RESMEM_SEQ_RUN_H_
#define RESMEM_KMOD_TESTS_RESMEM_SEQ_RUN_H_

#include <fcntl.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kmod/tests/resmem_seq_executor.h"
#include "kmod/tests/tap_diag.h"

namespace resmem::seq {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kArenaLen = 160ull << 20;

struct Fd {
  int fd, dev, flags;
  uint64_t pos;  // the file position as the module's llseek/read/write leave it
};

struct Slot {
  uint8_t* addr;
  uint64_t len;  // page multiple
  int dev;
  uint64_t off;  // device offset of addr
  int prot;
  bool in_arena, dontfork, maybe_split;
};

struct ThreadState {
  int id = 0, nthreads = 1;
  std::vector<Fd> fds;
  std::vector<Slot> slots;
  uint8_t* arena = nullptr;
  std::vector<uint8_t> scratch;
  uint8_t* guard = nullptr;  // a readable page followed by an inaccessible one
};

// Everything a run shares; lives in the child process that executes the run.
struct Run {
  World* w;
  Counters* c;  // shared with the parent (MAP_SHARED)
  bool huge_optin = false;  // RunSetup::huge_optin
  std::atomic<bool> stop{false};
  std::atomic<bool> failed{false};
  std::string failure;
  std::atomic<int> fail_guard{0};
  int result_fd = -1;  // pipe to the parent: the failure message
  std::optional<guest::KmsgSince> kmsg;  // opened when the run starts
  p2p::Executor* p2p = nullptr;          // --p2p: the device ops
};

// The run a signal in this process reports to (its pipe to the parent); a forked child's own.
void ReportSignalsTo(Run* r);

// ---- oracles (resmem_seq_oracle.cc) ----------------------------------------------------------

// The run's failure: the first one is kept; every call stops the run.
void Failure(Run* r, long index, const Op* op, const std::string& why);
// Checks one outcome against the set that applies: success only when `allowed` is empty.
bool Expect(Run* r, long idx, const Op& op, const char* what, long rc, int err, const std::set<int>& allowed);

inline int AccMode(int flags) { return flags & O_ACCMODE; }
inline bool Readable(const Fd& f) {
  return !(f.flags & O_PATH) && (AccMode(f.flags) == O_RDONLY || AccMode(f.flags) == O_RDWR);
}
inline bool Writable(const Fd& f) {
  return !(f.flags & O_PATH) && (AccMode(f.flags) == O_WRONLY || AccMode(f.flags) == O_RDWR);
}
// The index of the thread's first fd of device dev that can read/write as asked; -1 if none.
int FindFd(const ThreadState& t, int dev, bool want_read, bool want_write);
// The thread's own stripe of a device: the only bytes it writes (others' data is theirs).
void Stripe(const ThreadState& t, uint64_t size, uint64_t* lo, uint64_t* hi);
// Faults pages of a slot in (reads), compares them with the device's bytes, writes a pattern
// where the slot is writable and inside the thread's stripe and reads it back, then checks
// pagemap. False (and the run's failure) when the module got any of it wrong.
bool TouchSlot(Run* r, ThreadState& t, long idx, const Op* op, const Slot& s, uint64_t salt);
// Returns a slot's address range to the thread (the arena is restored over arena slots).
bool ReleaseRange(uint8_t* addr, uint64_t len, bool in_arena);
// A place in the thread's arena not covered by one of its slots; null if none was found.
uint8_t* ArenaHole(const ThreadState& t, uint64_t len, uint64_t salt);
// A user pointer of the kind p selects: valid scratch, NULL, kernel, unmapped, the tail of the
// guard page (`valid` = bytes that can be copied), or a device mapping of the thread's.
uint8_t* PickBuffer(ThreadState& t, Run* r, uint64_t p, uint64_t len, uint64_t* valid, bool for_device_write);

// ---- the ops (resmem_seq_file_ops.cc, resmem_seq_map_ops.cc) ---------------------------------

void DoOpen(Run* r, ThreadState& t, long idx, const Op& op);
void DoClose(Run* r, ThreadState& t, long idx, const Op& op);
void DoIoctl(Run* r, ThreadState& t, long idx, const Op& op);
void DoReadWrite(Run* r, ThreadState& t, long idx, const Op& op);  // read, write, pread, pwrite
void DoLseek(Run* r, ThreadState& t, long idx, const Op& op);
void DoMmap(Run* r, ThreadState& t, long idx, const Op& op);
void DoMunmap(Run* r, ThreadState& t, long idx, const Op& op);
void DoMremap(Run* r, ThreadState& t, long idx, const Op& op);
void DoMadvise(Run* r, ThreadState& t, long idx, const Op& op);
void DoTouch(Run* r, ThreadState& t, long idx, const Op& op);
void DoFork(Run* r, ThreadState& t, long idx, const Op& op);

}  // namespace resmem::seq

#endif  // RESMEM_KMOD_TESTS_RESMEM_SEQ_RUN_H_
