// Host memory as the rest of the system sees it: a span a process can address (a mapping of the
// reserved region, a malloc buffer, a pinned buffer), together with the facts the kernel and the
// CUDA driver decide by. The same facts come from a simulated machine, or are read from a real
// mapping (/proc/self/smaps, the driver's info ioctl), so a simulated GPU can judge a real mapping.
#ifndef RESMEM_BACKENDS_API_MEMORY_H_
#define RESMEM_BACKENDS_API_MEMORY_H_

#include <cstdint>
#include <optional>
#include <string>

#include "backends/api/status.h"

namespace resmem {

// Effective CPU memory type of a physical range (MTRR combined with PAT).
enum class MemoryType { kWriteBack, kWriteCombining, kUncached, kUncachedMinus, kUnknown };
const char* MemoryTypeName(MemoryType t);  // "WB", "WC", "UC", "UC-", "?"
// Parses "wb", "WB", "write-back", "wc", "uc", "uc-" ... ; nullopt when unknown.
std::optional<MemoryType> ParseMemoryType(const std::string& s);

// What backs a mapping.
enum class Backing {
  kAnonymous,    // malloc/new, mmap(MAP_ANONYMOUS)
  kPinnedHost,   // cudaMallocHost / cudaHostAlloc
  kShmem,        // memfd, /dev/shm (tmpfs, shared)
  kHugetlb,      // MAP_HUGETLB, hugetlbfs file
  kFile,         // a regular file on a disk filesystem (ext4, ...)
  kDevicePfn,    // device memory mapped by remap_pfn_range: no struct pages (VM_IO|VM_PFNMAP)
  kDevicePages,  // device memory with struct pages (ZONE_DEVICE style, vm_insert_page/VM_MIXEDMAP)
  kFuse,         // a file served by a FUSE daemon
  kUnknown,
};
const char* BackingName(Backing b);
std::optional<Backing> ParseBacking(const std::string& s);

// Facts about one mapping (one VMA), as the kernel holds them.
struct MappingFacts {
  uint64_t length = 0;
  bool readable = true;
  bool writable = true;
  bool shared = false;        // MAP_SHARED
  bool vm_io = false;         // VM_IO ("io" in smaps VmFlags)
  bool vm_pfnmap = false;     // VM_PFNMAP ("pf")
  bool vm_mixedmap = false;   // VM_MIXEDMAP ("mm")
  bool locked = false;        // VM_LOCKED ("lo")
  Backing backing = Backing::kUnknown;
  MemoryType memory_type = MemoryType::kWriteBack;
  uint64_t page_size = 4096;  // base page size of the mapping (4 KiB, 2 MiB hugetlb)
  bool physically_contiguous = false;
  std::optional<uint64_t> phys_addr;  // physical address of byte 0, where known
  bool resident = false;      // every page present when the facts were read (smaps Rss)
  bool transparent_huge = false;  // VM_HUGEPAGE ("hg"): faults take 2 MiB pages where they can
  bool pinned = false;        // already page-locked by its allocator (cudaMallocHost)
  int pinned_context = -1;    // the GPU context that allocated/registered it, -1 if none
  bool portable = false;      // pinned with the Portable flag: usable from every context
  std::string origin;         // where these facts came from ("sim", "smaps", "driver info")

  // "shared rw pf io WB backing=device-pfn 188 GiB"
  std::string Describe() const;
};

// A span of host memory. Offsets are bytes from the start of the span. Implementations:
// simulated mappings (sparse, not addressable), real mmaps, malloc buffers, pinned buffers.
class HostMemory {
 public:
  virtual ~HostMemory() = default;
  virtual uint64_t size() const = 0;
  virtual const MappingFacts& facts() const = 0;
  // The virtual address of byte 0 in this process, or 0 for memory this process cannot address
  // directly (simulated). Stable for the life of the object; never dereference an address from
  // a simulated span.
  virtual uint64_t address() const = 0;
  // A direct pointer when the memory is real and addressable here, else nullptr.
  virtual uint8_t* data() { return nullptr; }
  // The regular file this span's bytes are, when the span is a MAP_SHARED mapping of one (a memfd,
  // a /dev/shm file) and Read/Write do nothing but move bytes: its descriptor (owned by this
  // object's provider, valid while this object lives) and the file offset of byte 0. Lets the FUSE
  // daemon hand the file to the kernel (FUSE passthrough, docs/fuse.md). Null otherwise.
  struct FileSpan {
    int fd = -1;
    uint64_t offset = 0;
    // What the file is and the page size its pages come in, with the reason (the FUSE daemon's
    // control file shows it: docs/fuse.md "Cold read"). Empty when the provider does not say.
    std::string backing;
  };
  virtual std::optional<FileSpan> file_span() const { return std::nullopt; }
  // CPU access through the mapping. May fail the way the hardware does: a signal status
  // (SIGBUS past a truncated remap, SIGKILL on a corrupted page table) or a fault point.
  virtual Status Read(uint64_t offset, void* out, uint64_t len) = 0;
  virtual Status Write(uint64_t offset, const void* in, uint64_t len) = 0;
  // Human name: "/dev/resmem0 [0x100000000+188 GiB] mapped at 0x7f..".
  virtual std::string Describe() const = 0;
};

// Bounds check shared by implementations: offset+len inside [0,size) without overflow.
Status CheckSpan(const HostMemory& mem, uint64_t offset, uint64_t len, const char* what);

// Byte-size helpers. ParseSize accepts "188G", "64M", "4096", "0x1000", "1.5G", "16MiB", "8GB";
// K/M/G/T are binary (as on the kernel command line).
Result<uint64_t> ParseSize(const std::string& text);
std::string FormatSize(uint64_t bytes);  // "188 GiB", "16 MiB", "4 KiB", "123 B"

// The unsigned number `digits` spells in `base` (10 or 16): digits of that base only, at least
// one (no sign, prefix, space or '_': strtoull would take a sign and wrap "-1" round to 2^64-1).
// `digits_only` false where another character (or none) is there; `fits` false past 2^64-1.
struct DigitsRead {
  bool digits_only = false;
  bool fits = false;
  uint64_t value = 0;  // when both hold
};
DigitsRead ReadDigits(const std::string& digits, int base);

// "0x1f0000": addresses, tokens and versions as the kernel and the NVIDIA driver print them.
std::string HexAddress(uint64_t value);

}  // namespace resmem

#endif  // RESMEM_BACKENDS_API_MEMORY_H_
