// Host stand-ins for the reserved-memory device, for machines where the kernel module cannot load
// (the GPU machine: no module loading, no /dev/mem; FACTS.md "The GPU machine"). Each kind is an
// ordinary kind of memory whose mapping the CUDA driver treats differently:
//   memfd      memfd_create + MAP_SHARED (shmem)            registers (FACTS.md: 0)
//   hugetlb    MAP_HUGETLB anonymous, 2 MiB pages           registers (FACTS.md: 0)
//   shm        a file in /dev/shm, MAP_SHARED (tmpfs)        registers (FACTS.md: 0)
//   file       a disk file, MAP_SHARED writable              refused: 1 (FACTS.md, "ext4 file")
//   file-private  the same file, MAP_PRIVATE                 registers (FACTS.md: 0)
//   anon       MAP_ANONYMOUS|MAP_PRIVATE, as malloc           registers (FACTS.md: 0)
// Mapping facts are read back from /proc/self/smaps, never assumed.
#ifndef RESMEM_BACKENDS_HOST_HOST_REGION_H_
#define RESMEM_BACKENDS_HOST_HOST_REGION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/api/memory.h"
#include "backends/api/region.h"

namespace resmem::host {

enum class HostKind { kMemfd, kHugetlb, kShm, kFile, kFilePrivate, kAnonymous };
const char* HostKindName(HostKind k);  // "memfd", "hugetlb", "shm", "file", "file-private", "anon"
// Accepts the names above; the error lists them.
Result<HostKind> ParseHostKind(const std::string& name);
std::vector<HostKind> AllHostKinds();

struct HostMapOptions {
  bool writable = true;      // PROT_WRITE (PROT_READ alone otherwise)
  bool noreserve = false;    // MAP_NORESERVE: reserve address space only (huge-size cases)
  bool populate = false;     // touch every page once after mapping
  // hugetlb: the huge page size, 2 MiB (0 or 2 MiB) or 1 GiB (MAP_HUGE_1GB; reserve them in
  // /sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages).
  uint64_t huge_page_size = 0;
  // anon: 1 asks for transparent huge pages (MADV_HUGEPAGE), 0 forbids them (MADV_NOHUGEPAGE:
  // 4 KiB pages whatever /sys/kernel/mm/transparent_hugepage/enabled says), -1 leaves the default.
  int transparent_huge = -1;
  // Where the disk-file kinds create their file; empty: DefaultFileDir().
  std::string file_dir;
};

// Where the disk-file kinds create their file by default: /var/tmp (on a disk where /tmp is
// tmpfs, so the file is a disk file), or, under a Bazel test, the test's own TEST_TMPDIR (under
// Bazel's output base, on a disk too): a test, the simulator's included, writes nothing into the
// machine's /var/tmp, which may be missing or read-only there (docs/build.md, "Hermetic tests";
// Bazel's test encyclopedia: TEST_TMPDIR is the test's private writable directory).
std::string DefaultFileDir();

// Maps `bytes` of memory of `kind`. The file behind memfd/shm/file kinds is unlinked at once (the
// mapping keeps it). A MAP_HUGETLB failure names /proc/sys/vm/nr_hugepages as the way out.
Result<std::unique_ptr<HostMemory>> MapHostMemory(HostKind kind, uint64_t bytes,
                                                  const HostMapOptions& options = {});

// Wraps an existing mapping this process did not make (e.g. the kernel's [vvar] page, a
// VM_IO|VM_PFNMAP mapping like remap_pfn_range makes). Facts are read from smaps. Not unmapped
// when destroyed.
Result<std::unique_ptr<HostMemory>> WrapForeignMapping(uint64_t address, uint64_t length,
                                                       const std::string& describe);

// MemTotal of this machine from /proc/meminfo, in bytes; 0 when it cannot be read.
uint64_t MemTotalBytes();

// MemAvailable (the kernel's estimate of what can be had now without swapping), the same way.
uint64_t MemAvailableBytes();

// The reserved-memory device as the GPU machine can stand it in (it loads no module; FACTS.md
// "The GPU machine"). The device itself (its name, size, mode, and any refusal to open it) is
// the one `devices` describes (the scenario's simulated driver); only the memory behind a
// mapping is stood in for, by what carries the phenomenon on real hardware:
//   mode pfnmap, a mapping that fits in the [vvar] VMA: the [vvar] mapping itself, the one
//     VM_IO|VM_PFNMAP mapping every process has (FACTS.md: cudaHostRegister flags 0 -> 1,
//     IoMemory -> 0 on it). It is the kernel's read-only clock page: a writable mapping is
//     refused with EACCES, and its bytes change every tick.
//   any other mapping: ordinary memory of the mapping's length; memfd (shmem, MAP_SHARED like
//     the module's mapping) up to MemTotal, anonymous MAP_NORESERVE beyond it (calibrate's
//     huge-size stand-in: FACTS.md 126 GiB and more on a 128 GiB host -> 2 at once). A pfnmap
//     device mapped longer than [vvar] therefore stands in its size, not its VM flags: the
//     mapping's facts (read from smaps) say so, and a vm_flags expectation catches it.
Result<std::unique_ptr<RegionProvider>> MakeStandinRegionProvider(
    std::shared_ptr<RegionProvider> devices);

// A RegionProvider whose devices are the kinds: "host:memfd", "host:hugetlb", "host:shm",
// "host:file", "host:file-private", "host:anon". Each device is `size` bytes; Map honours offset,
// length and protections like the module's mmap (bounds checked, page aligned).
class HostRegionProvider : public RegionProvider {
 public:
  explicit HostRegionProvider(uint64_t size, HostMapOptions options = {})
      : size_(size), options_(std::move(options)) {}
  std::string name() const override { return "host"; }
  Result<std::vector<std::string>> List() override;
  Result<std::unique_ptr<RegionHandle>> Open(const OpenRequest& request) override;

 private:
  uint64_t size_;
  HostMapOptions options_;
};

}  // namespace resmem::host

#endif  // RESMEM_BACKENDS_HOST_HOST_REGION_H_
