// GPUDirect RDMA: a third-party PCIe device (a frame grabber, an FPGA) DMAs straight into GPU
// memory that its kernel driver pinned through NVIDIA's P2P API (nvidia_p2p_get_pages & co.,
// kernel-open/nvidia/nv-p2p.h). This seam is what that driver offers user space, one call per
// operation a program asks of it; the simulator (mock/rdma) answers with the NVIDIA driver's rules
// and the device's limits, a real side would answer through the driver's ioctls.
//
// Contract of every call: errors are values. An errno-space Status carries the errno the real
// call returns (-EINVAL from nvidia_p2p_get_pages is Errno(EINVAL, ...)); its message names the
// problem and the way out. Addresses are GPU virtual addresses (what cudaMalloc returns).
#ifndef RESMEM_BACKENDS_API_P2P_H_
#define RESMEM_BACKENDS_API_P2P_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backends/api/status.h"

namespace resmem {

// What lies on the PCIe path between the device and the GPU (NVIDIA, "Developing a Linux Kernel
// Module using RDMA for GPUDirect", TB-06712-001 v5.5, 2.2 "Supported Systems").
enum class PciePath {
  kSameSwitch,   // PCIe switches only
  kThroughCpu,   // a single CPU/IOH (the root complex)
  kCrossSocket,  // CPU/IOH <-> QPI/HT <-> CPU/IOH
};
const char* PciePathName(PciePath path);  // "same-switch", "through-cpu", "cross-socket"

// When the third-party driver unpins what it pinned for a transfer.
enum class UnpinPolicy {
  kAfterEach,  // pin before each transfer, unpin right after (the guide's 2.1 "straightforward")
  kNever,      // keep every pin for reuse, never give one back
  kLazy,       // keep pins for reuse; unpin the least recently used when BAR1 is full (2.1)
};
const char* UnpinPolicyName(UnpinPolicy policy);  // "after-each", "never", "lazy"

// The machine around the path: which GPU (a profile name the implementation knows), whether an
// IOMMU translates the device's addresses, and the third-party device and its driver.
struct GpuDirectConfig {
  std::string gpu = "h100";               // GPU profile: BAR1 size and reserve, page size, tokens
  std::optional<uint64_t> bar1_base;      // BAR1's bus address; none: the profile's
  bool iommu = false;
  PciePath path = PciePath::kSameSwitch;
  int dma_mask_bits = 64;                 // the device's DMA mask (dma_set_mask), 24 to 64
  std::optional<double> link_gbps;        // the device's peer-write rate (GB/s); none: the profile's
  UnpinPolicy unpin = UnpinPolicy::kLazy;
  // The third-party driver's free callback: waits for its DMA to finish before it returns (the
  // guide, 3.3), and forgets the page table so it never calls put_pages on it afterwards.
  bool callback_waits_for_dma = true;
  bool put_pages_after_callback = false;
  // NVIDIA_P2P_PAGE_TABLE_VERSION the driver was built against; 0: the GPU driver's own.
  uint32_t built_against_version = 0;
  // The version of the page tables the GPU driver hands out; 0: the profile's. A driver older or
  // newer than the header a third-party driver was built against (nv-p2p.h's
  // NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE decides).
  uint32_t table_version = 0;
};

// CU_POINTER_ATTRIBUTE_P2P_TOKENS (guide 4.2).
struct P2pTokens {
  uint64_t p2p_token = 0;
  uint32_t va_space_token = 0;
};
std::string DescribeTokens(const P2pTokens& tokens);  // "p2pToken 0x0 vaSpaceToken 0xfe00"

// A page table nvidia_p2p_get_pages returned (struct nvidia_p2p_page_table): its version, GPU page
// size in bytes, and the bus address of each page in BAR1.
struct P2pPageTable {
  uint64_t id = 0;  // names it in later calls (the real API passes the pointer)
  uint32_t version = 0;
  uint64_t page_size = 0;
  std::vector<uint64_t> physical_addresses;
};

// What one DMA run did: the transfers, how the driver's pins served them, and the time on the
// backend's clock.
struct P2pDmaStats {
  uint64_t bytes = 0;
  uint64_t transfers = 0;
  uint64_t pins = 0;       // nvidia_p2p_get_pages calls that succeeded
  uint64_t hits = 0;       // transfers served by a pin kept from before (lazy unpinning)
  uint64_t evictions = 0;  // pins given back to make room in BAR1
  double seconds = 0;
  std::string route;       // how the writes reached the GPU: "same-switch", "through-cpu", ...
  std::string data;        // "intact", or "misdirected" when they landed elsewhere
  std::string note;        // what the model says about the route (the guide's words)
};

class GpuDirect {
 public:
  virtual ~GpuDirect() = default;
  virtual std::string name() const = 0;

  // Sets up the machine, the GPU and the device; forgets every allocation and pin. Must come
  // before the other calls; InvalidArgument names an unknown profile or a mask outside 24-64.
  virtual Status Configure(const GpuDirectConfig& config) = 0;

  // cudaMalloc on the GPU in `context` (0, 1, ...); returns the GPU virtual address. A freed
  // address may be handed out again, in another context too (guide 2.4).
  virtual Result<uint64_t> AllocGpu(uint64_t length, int context) = 0;
  // cudaFree of an allocation. Pinned ranges in it are revoked: the NVIDIA driver calls the
  // device driver's free callback and then frees the page table (nv-p2p.c). `dma_in_flight`: the
  // device is writing into the range when the program frees it.
  virtual Status FreeGpu(uint64_t va, bool dma_in_flight) = 0;
  // cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_P2P_TOKENS) on `va`.
  virtual Result<P2pTokens> QueryTokens(uint64_t va) = 0;

  // The driver pins [va, va+length) with nvidia_p2p_get_pages and these tokens, and checks the
  // table's version as it was built to. Pins explicitly (not through its reuse cache).
  virtual Result<P2pPageTable> Pin(const P2pTokens& tokens, uint64_t va, uint64_t length) = 0;
  // The driver unpins the table `id` (nvidia_p2p_put_pages), or, when the free callback has
  // revoked it, does what the driver was written to do then.
  virtual Status Unpin(uint64_t id) = 0;

  // The device writes [va, va+length) in transfers of `block` bytes, `rounds` times over, each
  // transfer pinned and mapped for the device by the driver as its UnpinPolicy says.
  virtual Result<P2pDmaStats> Dma(uint64_t va, uint64_t length, uint64_t block, int rounds) = 0;

  // What happened so far, in order, one line per event ("nvidia: calls free_callback(data)").
  virtual std::vector<std::string> Events() const = 0;
};

}  // namespace resmem

#endif  // RESMEM_BACKENDS_API_P2P_H_
