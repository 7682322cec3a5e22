// The host kinds as the simulator has them: the facts a mapping of each kind shows, without the
// build machine's hugetlb pool, disk or RAM (docs/build.md, "Hermetic tests").
#ifndef RESMEM_BACKENDS_HOST_MODELLED_MEMORY_H_
#define RESMEM_BACKENDS_HOST_MODELLED_MEMORY_H_

#include <cstdint>
#include <memory>

#include "backends/api/memory.h"
#include "backends/api/status.h"
#include "backends/host/host_region.h"

namespace resmem::host {

// The facts /proc/self/smaps shows for a mapping MapHostMemory(kind, bytes, o) makes on Linux
// (smaps_facts.cc reads them on a real host): anon private anonymous (VM_HUGEPAGE where
// o.transparent_huge is 1), memfd and shm shared shmem, hugetlb o.huge_page_size pages (2 MiB when
// 0; VmFlags "ht"), file and file-private a disk file shared or private; resident where every page
// was written (o.populate on a writable mapping). origin "modelled".
MappingFacts ModelledFacts(HostKind kind, uint64_t bytes, const HostMapOptions& o = {});

// `bytes` of this process's private anonymous memory (real bytes: copies and checks run on them)
// that reports ModelledFacts(kind, bytes, o): what a benchmark on a virtual clock maps, so a row of
// any kind runs on any build machine. Mapped with MAP_NORESERVE and not touched (pages cost RAM
// only where written). Errors: the mmap's errno, with the size.
Result<std::unique_ptr<HostMemory>> MapModelledMemory(HostKind kind, uint64_t bytes,
                                                      const HostMapOptions& o = {});

}  // namespace resmem::host

#endif  // RESMEM_BACKENDS_HOST_MODELLED_MEMORY_H_
