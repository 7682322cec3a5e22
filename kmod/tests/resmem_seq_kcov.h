// KCOV in resmem_seq: which of the module's instrumented sites the runs reached.
// On a kernel with KCOV the lane builds the module with KCOV_INSTRUMENT=y (kmod_lane.sh): each of
// its basic blocks calls __sanitizer_cov_trace_pc, which appends the call's return address, less
// the kernel's KASLR offset (kernel/kcov.c canonicalize_ip), to the buffer of the calling task
// when that task has enabled KCOV (Documentation/dev-tools/kcov.rst: KCOV_INIT_TRACE, mmap,
// KCOV_ENABLE). Every worker thread enables it for itself; after each op its PCs become offsets
// into the module's core (/proc/modules: base and size, read per epoch, as a reload moves it)
// and bits of a bitmap shared with the parent. What forked children and the barrier ops do in the
// module is not counted (other tasks; the main thread).
#ifndef RESMEM_KMOD_TESTS_RESMEM_SEQ_KCOV_H_
#define RESMEM_KMOD_TESTS_RESMEM_SEQ_KCOV_H_

#include <cstdint>
#include <string>

namespace resmem::seq {
struct Counters;
}

namespace resmem::seq::kcov {

// Before the runs: the shared bitmap, when /sys/kernel/debug/kcov can be used. Whether it can.
bool Start();
bool On();
// The module's core (base, size) from /proc/modules, for this epoch; none when not loaded.
void FindModule(const std::string& name);
// The TAP line: distinct sites reached (of sites_total, the .ko's count, when known: not 0).
void Report(const Counters& c, const std::string& module_name, uint64_t sites_total);

// One worker thread's KCOV buffer, enabled for its lifetime (nothing when KCOV is off).
class Thread {
 public:
  Thread();
  ~Thread();
  Thread(const Thread&) = delete;
  Thread& operator=(const Thread&) = delete;
  // Folds the PCs since the last call into the shared bitmap.
  void Fold(Counters* c);

 private:
  void Close();
  int fd_ = -1;
  unsigned long* cover_ = nullptr;
};

}  // namespace resmem::seq::kcov

#endif  // RESMEM_KMOD_TESTS_RESMEM_SEQ_KCOV_H_
