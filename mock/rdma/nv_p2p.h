// NVIDIA's side of GPUDirect RDMA, simulated: GPU memory in per-context virtual address spaces,
// the P2P tokens, and nvidia_p2p_get_pages / put_pages / free_page_table / dma_map_pages over a
// simulated BAR1, with the free callback's order of events on cudaFree.
//
// Each rule cites where it comes from: the guide is NVIDIA's "Developing a Linux Kernel Module
// using RDMA for GPUDirect" (TB-06712-001 v5.5, July 2013, ../shared/seeds/003_*.txt); nv-p2p.h
// and nv-p2p.c are kernel-open/nvidia/ of NVIDIA's open GPU kernel modules; "RM" is the same
// tree's resource manager p2p code (_rmP2PGetPages, _isSpaceAvailableForBar1P2PMapping); the
// H100 figures are FACTS.md's.
#ifndef RESMEM_MOCK_RDMA_NV_P2P_H_
#define RESMEM_MOCK_RDMA_NV_P2P_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "backends/api/memory.h"
#include "backends/api/p2p.h"
#include "backends/api/status.h"

namespace resmem::sim {

// nv-p2p.h: NVIDIA_P2P_PAGE_TABLE_VERSION of the open driver (r580's era) and of the guide (4.3).
inline constexpr uint32_t kPageTableVersionOpenDriver = 0x00010002;
inline constexpr uint32_t kPageTableVersionGuide = 0x00010001;
// nv-p2p.h NVIDIA_P2P_VERSION_COMPATIBLE: the major halves match and the table's minor is at least
// the one the reader was built against.
bool PageTableVersionCompatible(uint32_t table_version, uint32_t built_against);


// A GPU as the P2P path sees it. Where each figure comes from is in nv_p2p.cc's profile table.
struct P2pGpuProfile {
  std::string name;
  std::string description;
  uint64_t bar1_bytes = 0;
  uint64_t bar1_reserve = 0;     // BAR1 the driver keeps for itself; never given to P2P
  uint64_t bar1_base = 0;        // BAR1's bus address (the default; a scenario may move it)
  uint64_t gpu_page = 0;         // GPU page size: the page table's page_size
  uint64_t memory_bytes = 0;     // GPU memory; 0: not limited by the model
  uint32_t page_table_version = 0;
  bool randomized_p2p_token = false;  // guide 2.4; false: p2pToken 0 (the H100, FACTS.md)
  uint32_t va_space_token = 0;        // context 0's; 0: context index + 1 (guide 2.4's example)
  bool tokens_required = false;       // p2pToken 0 refused (the guide's driver) or looked up by address
  bool has_dma_map_pages = false;     // nvidia_p2p_dma_map_pages exists (not in the 2013 guide)
  bool free_page_table_is_noop = false;  // nv-p2p.c: "This function is a no-op"
  double link_gbps = 0;               // the peer's write rate over a good path, GB/s
};
Result<P2pGpuProfile> P2pGpuProfileByName(const std::string& name);
std::vector<std::string> P2pGpuProfileNames();

class SimNvP2p {
 public:
  // Called by the NVIDIA driver when it revokes a pin (guide 4.4: synchronously).
  using FreeCallback = std::function<void()>;
  // The kernel's dma_map_resource for the peer device: bus address of [phys, phys+len), or the
  // error the peer's DMA mask or IOMMU gives.
  using MapResource = std::function<Result<uint64_t>(uint64_t phys, uint64_t len)>;

  SimNvP2p(P2pGpuProfile profile, uint64_t seed);
  const P2pGpuProfile& profile() const { return profile_; }

  // cudaMalloc in `context`: 2 MiB-aligned addresses (FACTS.md: cuMemAlloc pointers are "64 KiB
  // (in fact 2 MiB) aligned"), a freed range handed out again first (guide 2.4: "The CUDA driver
  // is free (although not guaranteed) to reuse the VA, even on a different GPU").
  Result<uint64_t> Alloc(uint64_t length, int context);
  // cudaFree: every live page table over the allocation is revoked in nv-p2p.c's order (the
  // device driver's callback first, then the NVIDIA driver frees the table), then the memory goes.
  Status Free(uint64_t va);
  // cuPointerGetAttribute(P2P_TOKENS): the tokens of the context that holds `va`; EINVAL-space
  // error (cuda 1, cudaErrorInvalidValue) for an address no allocation holds.
  Result<P2pTokens> Tokens(uint64_t va) const;

  // nvidia_p2p_get_pages / put_pages / free_page_table / dma_map_pages. Errors are the errnos
  // nv-p2p.c returns (nvidia_p2p_map_status), with a message naming the problem and the way out.
  Result<P2pPageTable> GetPages(const P2pTokens& tokens, uint64_t va, uint64_t length,
                                FreeCallback free_callback);
  Status PutPages(const P2pTokens& tokens, uint64_t va, uint64_t table_id);
  Status FreePageTable(uint64_t table_id);
  Result<std::vector<uint64_t>> DmaMapPages(uint64_t table_id, const MapResource& map_resource);

  bool live(uint64_t table_id) const;           // pinned and not revoked nor put
  bool revoked(uint64_t table_id) const;        // freed by the NVIDIA driver after a free callback
  uint64_t bar1_mapped() const { return bar1_mapped_pages_ * profile_.gpu_page; }
  uint64_t bar1_free_for_p2p() const;           // what one more pin may take now
  // The allocation holding `va` is still there (cudaFree not yet called on it).
  bool allocated(uint64_t va) const;

  void Log(const std::string& line) { events_.push_back(line); }
  const std::vector<std::string>& events() const { return events_; }

 private:
  struct Allocation {
    uint64_t va = 0, length = 0;
    int context = 0;
  };
  struct Table {
    uint64_t va = 0, length = 0;
    int context = 0;
    std::vector<uint64_t> pages;  // GPU page index (va / page) of each entry
    FreeCallback callback;
    enum class State { kLive, kPut, kRevoked } state = State::kLive;
  };
  const Allocation* FindAllocation(uint64_t va, uint64_t length) const;
  P2pTokens ContextTokens(int context) const;
  uint64_t Bar1Address(uint64_t gpu_page) const;
  void ReleasePages(Table& t);

  P2pGpuProfile profile_;
  uint64_t seed_;
  uint64_t next_va_;
  std::vector<Allocation> allocations_;
  std::vector<std::pair<uint64_t, uint64_t>> free_ranges_;  // (va, length) for reuse
  uint64_t allocated_bytes_ = 0;
  std::map<uint64_t, Table> tables_;
  uint64_t next_table_ = 1;
  // BAR1: one slot per GPU page; a GPU page pinned by several tables maps once (RM reuses an
  // existing mapping extent, _rmP2PGetPages -> RmP2PValidateAddressRangeOrGetPages "bFound").
  struct Bar1Slot {
    uint64_t slot = 0;
    int refs = 0;
  };
  std::map<uint64_t, Bar1Slot> bar1_by_page_;
  std::vector<uint64_t> free_slots_;
  uint64_t next_slot_ = 0;
  uint64_t bar1_mapped_pages_ = 0;
  std::vector<std::string> events_;
};

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_RDMA_NV_P2P_H_
