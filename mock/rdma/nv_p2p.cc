#include "mock/rdma/nv_p2p.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>

#include "backends/api/memory.h"

namespace resmem::sim {
namespace {

constexpr uint64_t kKiB = 1ull << 10;
constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;

// The kernel's ENOTSUPP (include/linux/errno.h, 524): nv-p2p.c returns it; user space has no name.
constexpr int kEnotsupp = 524;

// SplitMix64: a randomized p2pToken per context, fixed by the run's seed.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The profiles. Every figure and where it comes from:
// | field | h100 | kepler-guide |
// |---|---|---|
// | BAR1 | 128 GiB: FACTS.md "nvidia-smi: BAR1 total 131072 MiB" | 256 MiB: guide 2.3 "The smallest available BAR size on Kepler class GPUs is 256 MB" |
// | reserve | 36 MiB: RM CLI_THIRD_PARTY_P2P_BAR1_RESERVE (36 << 20), "reserve at least 32MB ... Pad this reservation by 4MB" | 32 MiB: guide 2.3 "Of that, 32MB are reserved for internal use" |
// | BAR1 base | 128 GiB: a BAR is aligned to its size, so a 128 GiB one lies above 4 GiB (the address itself is not measured) | 0xd0000000: below 4 GiB, in the 32-bit PCI window (chosen; not measured) |
// | GPU page | 64 KiB: nv-p2p.c nv_p2p_get_pages page_size = NVRM_P2P_PAGESIZE_BIG_64K | 64 KiB: guide 4.1 "the GPU pages on Kepler-class GPUs are 64KB" |
// | memory | 80 GiB: FACTS.md "H100 80GB HBM3" (the usable figure was not recorded) | not limited (the guide gives none) |
// | page table version | 0x00010002: nv-p2p.h | 0x00010001: guide 4.3 |
// | tokens | p2pToken 0, vaSpaceToken 0xfe00: FACTS.md (cuPointerGetAttribute on cuMemAlloc memory); other contexts are assumed alike (one was measured) | p2pToken randomized (guide 2.4 "The 64bit p2pToken is randomized"), vaSpaceToken 1, 2, ... per context (guide 2.4's example) |
// | p2pToken 0 | looked up by address: RM _rmP2PGetPages "if (0 != p2pToken) ... else RmP2PGetInfoWithoutToken" | refused: guide 2.4, the tokens "are necessary to uniquely identify a GPU VA space" |
// | dma_map_pages | yes: nv-p2p.h nvidia_p2p_dma_map_pages | no: not in the guide's kernel API (4.3) |
// | free_page_table | a no-op: nv-p2p.c "This function is a no-op" | frees the table: guide 3.3's callback calls it |
// | link | 54.5 GB/s: FACTS.md cudaMallocHost 16 MiB H2D on the H100's PCIe Gen5 x16, as the link's ceiling | 5.69 GB/s: seed 000's pinned H2D (mock/gpu/cuda_profile.cc), the corpus's one figure of that era |
std::vector<P2pGpuProfile> Profiles() {
  P2pGpuProfile h100;
  h100.name = "h100";
  h100.description = "H100 80GB HBM3, open driver 580 (FACTS.md)";
  h100.bar1_bytes = 128 * kGiB;
  h100.bar1_reserve = 36 * kMiB;
  h100.bar1_base = 128 * kGiB;
  h100.gpu_page = 64 * kKiB;
  h100.memory_bytes = 80 * kGiB;
  h100.page_table_version = kPageTableVersionOpenDriver;
  h100.randomized_p2p_token = false;
  h100.va_space_token = 0xfe00;
  h100.tokens_required = false;
  h100.has_dma_map_pages = true;
  h100.free_page_table_is_noop = true;
  h100.link_gbps = 54.5;

  P2pGpuProfile kepler;
  kepler.name = "kepler-guide";
  kepler.description = "a Kepler GPU with the smallest BAR1, as NVIDIA's 2013 guide describes it";
  kepler.bar1_bytes = 256 * kMiB;
  kepler.bar1_reserve = 32 * kMiB;
  kepler.bar1_base = 0xd0000000;
  kepler.gpu_page = 64 * kKiB;
  kepler.memory_bytes = 0;
  kepler.page_table_version = kPageTableVersionGuide;
  kepler.randomized_p2p_token = true;
  kepler.va_space_token = 0;
  kepler.tokens_required = true;
  kepler.has_dma_map_pages = false;
  kepler.free_page_table_is_noop = false;
  kepler.link_gbps = 5.69;
  return {h100, kepler};
}

}  // namespace

bool PageTableVersionCompatible(uint32_t table_version, uint32_t built_against) {
  return (table_version >> 16) == (built_against >> 16) &&
         (table_version & 0xffff) >= (built_against & 0xffff);
}

Result<P2pGpuProfile> P2pGpuProfileByName(const std::string& name) {
  for (const auto& p : Profiles())
    if (p.name == name) return p;
  std::string names;
  for (const auto& n : P2pGpuProfileNames()) names += (names.empty() ? "" : ", ") + n;
  return Status::InvalidArgument("no GPU profile '" + name + "' for the P2P path; use one of " + names);
}

std::vector<std::string> P2pGpuProfileNames() {
  std::vector<std::string> out;
  for (const auto& p : Profiles()) out.push_back(p.name);
  return out;
}

SimNvP2p::SimNvP2p(P2pGpuProfile profile, uint64_t seed)
    : profile_(std::move(profile)), seed_(seed), next_va_(0x7f4a00000000ull) {}

P2pTokens SimNvP2p::ContextTokens(int context) const {
  P2pTokens t;
  t.p2p_token = profile_.randomized_p2p_token ? (Mix(seed_ * 131 + static_cast<uint64_t>(context)) | 1) : 0;
  t.va_space_token = profile_.va_space_token ? profile_.va_space_token : static_cast<uint32_t>(context + 1);
  return t;
}

Result<uint64_t> SimNvP2p::Alloc(uint64_t length, int context) {
  if (length == 0) return Status::Cuda(1, "cudaMalloc of 0 bytes: give a length");
  if (context < 0) return Status::InvalidArgument("context must be 0 or more");
  const uint64_t rounded = (length + 2 * kMiB - 1) / (2 * kMiB) * (2 * kMiB);
  if (profile_.memory_bytes && allocated_bytes_ + rounded > profile_.memory_bytes)
    return Status::Cuda(2, "cudaMalloc of " + FormatSize(length) + ": the " + profile_.name + " has " +
                               FormatSize(profile_.memory_bytes - allocated_bytes_) +
                               " of GPU memory left; free buffers first");
  uint64_t va = 0;
  auto fit = std::find_if(free_ranges_.begin(), free_ranges_.end(),
                          [&](const auto& r) { return r.second >= rounded; });
  if (fit != free_ranges_.end()) {
    va = fit->first;
    if (fit->second == rounded) free_ranges_.erase(fit);
    else *fit = {fit->first + rounded, fit->second - rounded};
  } else {
    va = next_va_;
    next_va_ += rounded;
  }
  allocations_.push_back({va, rounded, context});
  allocated_bytes_ += rounded;
  Log("cuda: cudaMalloc(" + FormatSize(length) + ") in context " + std::to_string(context) + " -> " + HexAddress(va));
  return va;
}

const SimNvP2p::Allocation* SimNvP2p::FindAllocation(uint64_t va, uint64_t length) const {
  for (const auto& a : allocations_)
    if (va >= a.va && va - a.va < a.length && length <= a.length - (va - a.va)) return &a;
  return nullptr;
}

bool SimNvP2p::allocated(uint64_t va) const { return FindAllocation(va, 1) != nullptr; }

Result<P2pTokens> SimNvP2p::Tokens(uint64_t va) const {
  const Allocation* a = FindAllocation(va, 1);
  // Guide 4.2: cuPointerGetAttribute returns "anything else if pointer points to CPU memory"; the
  // driver API answers an unknown pointer with CUDA_ERROR_INVALID_VALUE (1).
  if (!a) return Status::Cuda(1, "cuPointerGetAttribute(P2P_TOKENS): " + HexAddress(va) + " is not GPU memory");
  return ContextTokens(a->context);
}

uint64_t SimNvP2p::Bar1Address(uint64_t gpu_page) const {
  return profile_.bar1_base + bar1_by_page_.at(gpu_page).slot * profile_.gpu_page;
}

uint64_t SimNvP2p::bar1_free_for_p2p() const {
  const uint64_t used = bar1_mapped() + profile_.bar1_reserve;
  return profile_.bar1_bytes > used ? profile_.bar1_bytes - used : 0;
}

Result<P2pPageTable> SimNvP2p::GetPages(const P2pTokens& tokens, uint64_t va, uint64_t length,
                                        FreeCallback free_callback) {
  // nv-p2p.c nvidia_p2p_get_pages: "if (free_callback == NULL) return -EINVAL" (a NULL callback
  // asks for persistent pages, which is nvidia_p2p_get_pages_persistent's job).
  if (!free_callback)
    return Status::Errno(EINVAL, "nvidia_p2p_get_pages: free_callback is NULL: pass the callback that "
                                 "stops the device's DMA (guide 3.3)");
  // nv-p2p.c nv_p2p_get_pages: address and length must be multiples of NVRM_P2P_PAGESIZE_BIG_64K,
  // else -EINVAL and the driver prints the line below.
  const uint64_t page = profile_.gpu_page;
  if (va % page != 0 || length % page != 0) {
    char line[160];
    std::snprintf(line, sizeof line,
                  "NVRM: Invalid argument in nv_p2p_get_pages,address or length are not aligned "
                  "address=0x%" PRIx64 ", length=0x%" PRIx64, va, length);
    Log(line);
    return Status::Errno(EINVAL, std::string(line) + ": pin whole " + FormatSize(page) +
                                     " GPU pages: round the address down and the length up to " +
                                     FormatSize(page) + " (cudaMalloc's pointers are aligned; an "
                                     "offset into a buffer may not be)");
  }
  if (length == 0)
    return Status::Errno(EINVAL, "nvidia_p2p_get_pages: length 0: pin at least one " + FormatSize(page) + " page");
  // RM _rmP2PGetPages: a p2pToken names the VA space's owner; 0 looks the address up in the
  // calling process (RmP2PGetInfoWithoutToken). A vaSpaceToken, when given, must name that
  // owner's VA space. A token that names nothing, or an address outside the named space, is
  // NV_ERR_OBJECT_NOT_FOUND / NV_ERR_INVALID_ARGUMENT: -EINVAL (nvidia_p2p_map_status).
  const Allocation* a = FindAllocation(va, length);
  const std::string fresh = "query the tokens with cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_P2P_TOKENS) "
                            "for every pointer, right before pinning (guide 2.4)";
  if (tokens.p2p_token == 0 && profile_.tokens_required)
    return Status::Errno(EINVAL, "nvidia_p2p_get_pages: p2pToken 0: this driver (" + profile_.name +
                                     ") identifies the VA space only by its tokens; " + fresh);
  if (!a)
    return Status::Errno(EINVAL, "nvidia_p2p_get_pages: no GPU allocation holds [" + HexAddress(va) + ", " +
                                     HexAddress(va + length) + "): pin memory the program allocated with "
                                     "cudaMalloc and has not freed");
  const P2pTokens owner = ContextTokens(a->context);
  if ((tokens.p2p_token != 0 && tokens.p2p_token != owner.p2p_token) ||
      (tokens.va_space_token != 0 && tokens.va_space_token != owner.va_space_token))
    return Status::Errno(EINVAL, "nvidia_p2p_get_pages: invalid token: " + DescribeTokens(tokens) +
                                     " do not name the VA space that holds " + HexAddress(va) + " (" +
                                     DescribeTokens(owner) + "): a freed address can come back in "
                                     "another context with other tokens; " + fresh);
  // RM _isSpaceAvailableForBar1P2PMapping: BAR1 minus what P2P has mapped must hold the reserve
  // plus the new length, else NV_ERR_INSUFFICIENT_RESOURCES ("no space for BAR1 mappings"),
  // -ENOMEM. Pages some live table already maps are reused and cost nothing.
  uint64_t new_pages = 0;
  for (uint64_t p = va / page; p < (va + length) / page; ++p)
    if (!bar1_by_page_.count(p)) ++new_pages;
  const uint64_t need = new_pages * page;
  if (profile_.bar1_bytes < bar1_mapped() + profile_.bar1_reserve + need) {
    Log("NVRM: no space for BAR1 mappings, length: " + HexAddress(need));
    return Status::Errno(ENOMEM, "nvidia_p2p_get_pages: BAR1 is full: " + FormatSize(bar1_mapped()) +
                                     " of " + FormatSize(profile_.bar1_bytes) + " mapped, " +
                                     FormatSize(profile_.bar1_reserve) + " reserved for the driver, " +
                                     FormatSize(need) + " asked: unpin ranges no transfer needs now "
                                     "(lazy unpinning gives back the least recently used, guide 2.1)");
  }
  Table t;
  t.va = va;
  t.length = length;
  t.context = a->context;
  t.callback = std::move(free_callback);
  P2pPageTable out;
  out.version = profile_.page_table_version;  // nv-p2p.c: (*page_table)->version = NVIDIA_P2P_PAGE_TABLE_VERSION
  out.page_size = page;
  for (uint64_t p = va / page; p < (va + length) / page; ++p) {
    auto it = bar1_by_page_.find(p);
    if (it == bar1_by_page_.end()) {
      uint64_t slot;
      if (!free_slots_.empty()) {
        slot = free_slots_.back();
        free_slots_.pop_back();
      } else {
        slot = next_slot_++;
      }
      it = bar1_by_page_.emplace(p, Bar1Slot{slot, 0}).first;
      ++bar1_mapped_pages_;
    }
    ++it->second.refs;
    t.pages.push_back(p);
    out.physical_addresses.push_back(Bar1Address(p));
  }
  out.id = next_table_++;
  tables_.emplace(out.id, std::move(t));
  Log("nvidia: get_pages [" + HexAddress(va) + ", " + HexAddress(va + length) + ") -> page table " + std::to_string(out.id) +
      " (" + std::to_string(out.physical_addresses.size()) + " pages of " + FormatSize(page) + " at BAR1 " +
      HexAddress(out.physical_addresses.front()) + ")");
  return out;
}

void SimNvP2p::ReleasePages(Table& t) {
  for (uint64_t p : t.pages) {
    auto it = bar1_by_page_.find(p);
    if (it == bar1_by_page_.end()) continue;
    if (--it->second.refs == 0) {
      free_slots_.push_back(it->second.slot);
      bar1_by_page_.erase(it);
      --bar1_mapped_pages_;
    }
  }
  t.pages.clear();
}

Status SimNvP2p::PutPages(const P2pTokens& tokens, uint64_t va, uint64_t table_id) {
  auto it = tables_.find(table_id);
  if (it == tables_.end())
    return Status::Errno(EINVAL, "nvidia_p2p_put_pages: page table " + std::to_string(table_id) +
                                     " was never returned by nvidia_p2p_get_pages");
  Table& t = it->second;
  if (t.state == Table::State::kRevoked) {
    // nv-p2p.c nv_p2p_put_pages: RM no longer knows the table (NV_ERR_OBJECT_NOT_FOUND), which a
    // non-persistent put treats as success, so the call returns 0; but the table it was handed
    // was freed when the free callback returned (nv_p2p_mem_info_free_callback ->
    // nv_p2p_free_platform_data), so the caller passed freed memory.
    Log("nvidia: put_pages on page table " + std::to_string(table_id) +
        ", which the NVIDIA driver freed after the free callback: returns 0, but the driver handed it "
        "freed memory (use-after-free); after the callback, never call nvidia_p2p_put_pages (guide 3.3)");
    return Status::Ok();
  }
  if (t.state == Table::State::kPut)
    return Status::Errno(EINVAL, "nvidia_p2p_put_pages: page table " + std::to_string(table_id) +
                                     " was already put: call it once per get_pages");
  if (va != t.va)
    return Status::Errno(EINVAL, "nvidia_p2p_put_pages: address " + HexAddress(va) + " is not the pinned range's start " +
                                     HexAddress(t.va) + ": pass the address given to get_pages");
  const P2pTokens owner = ContextTokens(t.context);
  if ((tokens.p2p_token != 0 && tokens.p2p_token != owner.p2p_token) ||
      (tokens.va_space_token != 0 && tokens.va_space_token != owner.va_space_token))
    return Status::Errno(EINVAL, "nvidia_p2p_put_pages: " + DescribeTokens(tokens) +
                                     " are not the tokens the range was pinned with: pass those");
  ReleasePages(t);
  t.state = Table::State::kPut;
  t.callback = nullptr;
  Log("nvidia: put_pages page table " + std::to_string(table_id));
  return Status::Ok();
}

Status SimNvP2p::FreePageTable(uint64_t table_id) {
  if (!tables_.count(table_id))
    return Status::Errno(EINVAL, "nvidia_p2p_free_page_table: page table " + std::to_string(table_id) + " is unknown");
  Log(profile_.free_page_table_is_noop
          ? "driver: nvidia_p2p_free_page_table(" + std::to_string(table_id) + ") (a no-op in the open driver, nv-p2p.c)"
          : "driver: nvidia_p2p_free_page_table(" + std::to_string(table_id) + ")");
  return Status::Ok();
}

Result<std::vector<uint64_t>> SimNvP2p::DmaMapPages(uint64_t table_id, const MapResource& map_resource) {
  if (!profile_.has_dma_map_pages)
    return Status::Errno(kEnotsupp, "nvidia_p2p_dma_map_pages: not in the " + profile_.name +
                                        " driver's API: the device uses the page table's physical addresses");
  auto it = tables_.find(table_id);
  // nv-p2p.c nvidia_p2p_dma_map_pages: a NULL or unknown table is -EINVAL.
  if (it == tables_.end() || it->second.state != Table::State::kLive)
    return Status::Errno(EINVAL, "nvidia_p2p_dma_map_pages: page table " + std::to_string(table_id) +
                                     " is not pinned (put, revoked or never returned)");
  std::vector<uint64_t> out;
  for (uint64_t p : it->second.pages) {
    // nv-dma.c nv_dma_map_peer -> nv_dma_map_mmio -> dma_map_resource, per page; a mapping error
    // is NV_ERR_OPERATING_SYSTEM, which nvidia_p2p_map_status does not list: -EIO.
    auto bus = map_resource(Bar1Address(p), profile_.gpu_page);
    if (!bus.ok()) return Status::Errno(EIO, "nvidia_p2p_dma_map_pages: " + bus.status().message());
    out.push_back(*bus);
  }
  Log("nvidia: dma_map_pages page table " + std::to_string(table_id) + " -> " + std::to_string(out.size()) +
      " DMA addresses from " + HexAddress(out.front()));
  return out;
}

bool SimNvP2p::live(uint64_t table_id) const {
  auto it = tables_.find(table_id);
  return it != tables_.end() && it->second.state == Table::State::kLive;
}

bool SimNvP2p::revoked(uint64_t table_id) const {
  auto it = tables_.find(table_id);
  return it != tables_.end() && it->second.state == Table::State::kRevoked;
}

Status SimNvP2p::Free(uint64_t va) {
  auto a = std::find_if(allocations_.begin(), allocations_.end(), [&](const Allocation& x) { return x.va == va; });
  if (a == allocations_.end())
    return Status::Cuda(1, "cudaFree(" + HexAddress(va) + "): not the start of a GPU allocation");
  const Allocation gone = *a;
  Log("cuda: cudaFree(" + HexAddress(va) + ")");
  for (auto& [id, t] : tables_) {
    if (t.state != Table::State::kLive || t.va + t.length <= gone.va || t.va >= gone.va + gone.length) continue;
    // nv-p2p.c nv_p2p_mem_info_free_callback: the device driver's callback runs first, while the
    // table is still valid (guide 4.4: "This callback occurs synchronously"); then the NVIDIA
    // driver frees the table and its DMA mappings (nv_p2p_free_platform_data).
    Log("nvidia: revokes page table " + std::to_string(id) + ": calls free_callback(data)");
    FreeCallback cb = std::move(t.callback);
    t.callback = nullptr;
    if (cb) cb();
    ReleasePages(t);
    t.state = Table::State::kRevoked;
    Log("nvidia: frees page table " + std::to_string(id) + " and its DMA mappings");
  }
  allocated_bytes_ -= gone.length;
  free_ranges_.push_back({gone.va, gone.length});
  std::sort(free_ranges_.begin(), free_ranges_.end());
  allocations_.erase(std::find_if(allocations_.begin(), allocations_.end(), [&](const Allocation& x) { return x.va == va; }));
  Log("cuda: GPU memory at " + HexAddress(va) + " freed");
  return Status::Ok();
}

}  // namespace resmem::sim
