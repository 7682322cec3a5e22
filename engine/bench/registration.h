// How long cudaHostRegister takes on a huge range: what a user of a 188 GB reservation waits for at
// start-up (issue 11). For each backing, touched or not, size and piece size, the range is mapped,
// optionally touched (one write per 4 KiB), registered in pieces and unregistered; the wall time
// of each phase is kept. On the CUDA backend the times are measured; on the simulator they are the
// model's (mock/gpu RegisterSeconds), so a scenario of any size says how long start-up takes.
//
// Backings (backends/host):
//   anon        anonymous memory with 4 KiB pages (MADV_NOHUGEPAGE), as malloc of a huge buffer
//   anon-thp    anonymous memory asking for transparent 2 MiB pages (MADV_HUGEPAGE)
//   memfd       shmem (MAP_SHARED), the kind of mapping the module's pages mode gives
//   hugetlb-2m  MAP_HUGETLB, 2 MiB pages (reserve: /proc/sys/vm/nr_hugepages)
//   hugetlb-1g  MAP_HUGETLB|MAP_HUGE_1GB (reserve: .../hugepages-1048576kB/nr_hugepages)
// A case whose memory cannot be had (no huge pages reserved, too little RAM) is a row with the
// reason, not a failure of the run; a refused cudaHostRegister is a row with its error.
#ifndef RESMEM_ENGINE_BENCH_REGISTRATION_H_
#define RESMEM_ENGINE_BENCH_REGISTRATION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "backends/api/clock.h"
#include "backends/api/gpu.h"

namespace resmem::bench {

std::vector<std::string> RegistrationBackings();  // the names above

struct RegistrationOptions {
  std::vector<uint64_t> sizes;         // bytes per range; default 1, 4, 16 GiB
  std::vector<std::string> backings;   // empty: all
  std::vector<uint64_t> chunks;        // piece sizes; 0 = the whole range in one call; default {0}
  std::vector<bool> touched = {false, true};
  int repeats = 1;                     // registrations per case (the median is kept)
};

struct RegistrationRow {
  std::string backing;
  bool touched = false;
  uint64_t size = 0;
  uint64_t chunk = 0;   // 0: one call
  int calls = 0;
  double map_seconds = 0, touch_seconds = 0, register_seconds = 0, unregister_seconds = 0;
  std::string skipped;  // why the case did not run ("" = it ran)
  std::string error;    // the failed cudaHostRegister ("" = registered)
  double RegisterSecondsPerGiB() const {
    return size ? register_seconds / (static_cast<double>(size) / (1ull << 30)) : 0;
  }
};

struct RegistrationResult {
  std::string backend;
  std::vector<RegistrationRow> rows;
  std::string ToTable() const;
  std::string ToJson() const;
};

// Runs every case: backings x touched x sizes x chunks. Fails only on bad options (a size that
// is not a multiple of 2 MiB, an unknown backing, a chunk that is not a multiple of 2 MiB).
Result<RegistrationResult> RunRegistrationBench(Gpu& gpu, Clock& clock, const std::string& backend,
                                                const RegistrationOptions& options);

}  // namespace resmem::bench

#endif  // RESMEM_ENGINE_BENCH_REGISTRATION_H_
