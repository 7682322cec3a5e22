// resmem_seq's device mode (--p2p EDU[,EDU]): the random sequences also drive the lane's DMA
// devices, from every worker thread at once (ci/qemu/guest_init.sh case
// d_random_sequences_edu_p2p; docs/rdma.md "GPUDirect RDMA in the guest"):
//   - /dev/nv_p2p_standin (kmod/nv_p2p_standin.c): an open file is a CUDA context; ALLOC is
//     cudaMalloc, FREE cudaFree (revokes every pin over the range through the pinning driver's
//     free callback before it returns), mmap maps an allocation's BAR pages, EXPORT_DMABUF;
//   - /dev/resmem_eduN (kmod/resmem_edu.c, resmem_edu_p2p.c): P2P_WRITE pins a range of an
//     allocation (nvidia_p2p_get_pages, cached per file) and has the edu device DMA a few KiB
//     into it, P2P_FLUSH, P2P_STATS, DMABUF_WRITE; close unpins what the file cached.
// Contexts, edu files, BAR mappings and dma-bufs belong to the thread that opened them; the
// allocations are shared: any thread pins and writes into any thread's allocation (and into
// freed ones), while the owner frees it, closes its context or unmaps it. Every op's result is
// checked against the errno set the drivers document for the state it met (which, for a range
// another thread may be freeing, is the union over the states it may have met). A thread writes
// only the bytes of its own stripe of each 64 KiB GPU page, so the owner of an allocation can
// read back through its mapping what it had the device write. Barriers try to unload both
// modules (refused while anything holds them) or release everything, check the provider at rest
// and unload and reload both; at the end of a run the provider must be at rest.
#ifndef RESMEM_KMOD_TESTS_RESMEM_SEQ_P2P_H_
#define RESMEM_KMOD_TESTS_RESMEM_SEQ_P2P_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kmod/tests/resmem_seq_op.h"

namespace resmem::seq::p2p {

// The device mode's op kinds, numbered from 0 (resmem_seq_generator.h numbers them after its own).
constexpr int kKinds = 14;
const char* KindName(int k);
// Weight of kind k per about 10,000 ops of a list (resmem_seq_generator.h adds its own kinds').
int Weight(int k);

// What the run works with: read in the parent before the run (Setup), fixed afterwards.
struct Config {
  std::vector<std::string> edu_paths;  // /dev/resmem_eduN to use
  std::string provider_name = "nv_p2p_standin";
  std::string provider_file = "/nv_p2p_standin.ko";  // for reloads
  std::string provider_dev = "/dev/nv_p2p_standin";
  std::string provider_params;  // as loaded: bar_reserve=... (read back from sysfs)
  std::vector<char> provider_image;
  int revoke_delay_ms = 0;   // the provider's settings before the run (restored after it)
  int release_delay_ms = 0;
  uint64_t bar_phys = 0, bar_size = 0;
  bool translated = false;  // an IOMMU translates for the edu devices (bus != physical)
};

// Reads the provider's parameters, module file and BAR, and the edu devices' INFO; checks that
// the provider is at rest (nothing pinned, mapped, exported or allocated). "" or why not.
std::string Setup(const std::string& edu_list, const std::string& provider_file, Config* cfg);

// What the runs did, summed over every run (MAP_SHARED: the runs are child processes).
struct Counters {
  std::atomic<uint64_t> contexts{0}, allocs{0}, frees{0}, free_busy{0}, revoked{0}, writes{0},
      writes_ok{0}, writes_raced{0}, orphans_kept{0}, orphans_gone{0}, cancelled{0}, write_einval{0}, write_efault{0}, write_enomem{0}, hits{0},
      bytes_dma{0}, bytes_verified{0}, maps{0}, reads{0}, faults{0}, faults_after_free{0},
      dmabufs{0}, dmabuf_writes{0}, flushes{0}, flushed{0}, stats_checked{0}, unload_refused{0},
      reloads{0}, small_window_loads{0}, delayed_revoke_epochs{0},
      delayed_release_epochs{0};
};
// One line per group of counters, as TAP diagnostics.
void Report(const Counters& c);

// One run's device state and ops (in the run's child process). Do runs on the worker threads,
// concurrently; the rest on the main thread while no worker runs.
class Executor {
 public:
  Executor(const Config& cfg, Counters* c, Outcome* out, int threads);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;
  // Before the first op: the provider loaded as the run expects (its own parameters, no revoke
  // delay), at rest. "" or why not.
  std::string Start();
  // Op `index` of the list, of device kind `kind` (0..kKinds-1), on worker `thread`.
  void Do(int thread, long index, const Op& op, int kind);
  // A barrier op, before the executor unloads resmem_edu: with release_all everything is closed
  // first. Then nv_p2p_standin is unloaded and reloaded when nothing holds it (the provider at
  // rest first), else the unload must be refused.
  void Barrier(long index, const Op& op, bool release_all);
  // Whether a device file is open (it holds resmem_edu: the unload must be refused).
  bool HoldsEduModule() const;
  // After each epoch: counters of the provider's that only a driver bug raises did not grow.
  void EpochEnd(long index);
  // After the last op: everything closed, the provider at rest.
  void Finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// From the SIGBUS handler: returns to the guarded read that faulted (the page is not GPU memory
// any more); returns when no guarded read is in progress on this thread.
void EscapeGuardedRead();

// After the runs (the parent): the provider at rest, unloaded (nothing may hold it) and loaded
// again with its own parameters and revoke delay. "" or why not.
std::string FinalUnloadReload(const Config& cfg);
// After a failed run (the parent): the provider's own parameters and revoke delay back, as far as
// nothing holds it.
void RestoreSettings(const Config& cfg);

}  // namespace resmem::seq::p2p

#endif  // RESMEM_KMOD_TESTS_RESMEM_SEQ_P2P_H_
