#include "mock/rdma/sim_gpudirect.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <memory>

#include "backends/api/memory.h"

namespace resmem::sim {

SimGpuDirect::SimGpuDirect(std::shared_ptr<Clock> clock, uint64_t seed)
    : clock_(std::move(clock)), seed_(seed) {}

Status SimGpuDirect::Configure(const GpuDirectConfig& config) {
  RESMEM_ASSIGN_OR_RETURN(P2pGpuProfile profile, P2pGpuProfileByName(config.gpu));
  if (config.dma_mask_bits < 24 || config.dma_mask_bits > 64)
    return Status::InvalidArgument("dma_mask " + std::to_string(config.dma_mask_bits) +
                                   " is not a DMA mask width: give 24 to 64 bits");
  if (config.bar1_base) {
    if (*config.bar1_base % profile.bar1_bytes != 0)
      return Status::InvalidArgument("bar1_base " + HexAddress(*config.bar1_base) + " is not aligned to BAR1's size (" +
                                     FormatSize(profile.bar1_bytes) + "), as a PCI BAR must be");
    profile.bar1_base = *config.bar1_base;
  }
  if (config.table_version) profile.page_table_version = config.table_version;
  if (config.link_gbps && *config.link_gbps <= 0)
    return Status::InvalidArgument("link_gbps must be above 0");
  config_ = config;
  PeerDeviceSpec spec;
  spec.dma_mask_bits = config.dma_mask_bits;
  spec.path = config.path;
  spec.iommu = config.iommu;
  spec.link_gbps = config.link_gbps.value_or(profile.link_gbps);
  if (config_.built_against_version == 0) config_.built_against_version = profile.page_table_version;
  nv_ = std::make_unique<SimNvP2p>(profile, seed_);
  device_ = std::make_unique<SimPeerDevice>(spec);
  pins_.clear();
  char line[256];
  std::snprintf(line, sizeof line,
                "setup: %s, BAR1 %s at 0x%" PRIx64 " (%s reserved), IOMMU %s, path %s, %d-bit DMA mask, unpin %s",
                profile.name.c_str(), FormatSize(profile.bar1_bytes).c_str(), profile.bar1_base,
                FormatSize(profile.bar1_reserve).c_str(), config.iommu ? "on" : "off",
                PciePathName(config.path), config.dma_mask_bits, UnpinPolicyName(config.unpin));
  nv_->Log(line);
  return Status::Ok();
}

Status SimGpuDirect::NeedConfigured() const {
  if (!nv_) return Status::InvalidArgument("the P2P path is not set up: add a p2p_setup step first");
  return Status::Ok();
}

Result<uint64_t> SimGpuDirect::AllocGpu(uint64_t length, int context) {
  RESMEM_RETURN_IF_ERROR(NeedConfigured());
  return nv_->Alloc(length, context);
}

Result<P2pTokens> SimGpuDirect::QueryTokens(uint64_t va) {
  RESMEM_RETURN_IF_ERROR(NeedConfigured());
  return nv_->Tokens(va);
}

void SimGpuDirect::OnFreeCallback(uint64_t table_id) {
  auto it = pins_.find(table_id);
  nv_->Log("driver: free_callback for page table " + std::to_string(table_id));
  const bool in_flight = dma_in_flight_ && it != pins_.end() && in_flight_va_ >= it->second.va &&
                         in_flight_va_ < it->second.va + it->second.length;
  if (in_flight) {
    if (config_.callback_waits_for_dma)
      nv_->Log("driver: stops the device and waits for the DMA in flight (guide 3.3)");
    else
      nv_->Log("driver: returns without waiting for the DMA in flight");
  }
  (void)nv_->FreePageTable(table_id);
  if (it == pins_.end()) return;
  if (config_.put_pages_after_callback) {
    nv_->Log("driver: keeps page table " + std::to_string(table_id) + " as if still pinned");
    return;
  }
  it->second.revoked = true;
  nv_->Log("driver: forgets page table " + std::to_string(table_id) + ": no put_pages for it (guide 3.3)");
}

Status SimGpuDirect::FreeGpu(uint64_t va, bool dma_in_flight) {
  RESMEM_RETURN_IF_ERROR(NeedConfigured());
  dma_in_flight_ = dma_in_flight;
  in_flight_va_ = va;
  Status st = nv_->Free(va);
  dma_in_flight_ = false;
  if (st.ok() && dma_in_flight && !config_.callback_waits_for_dma)
    // Guide 4.4: the callback exists so the driver can "wait for DMA to complete"; one that
    // returns earlier lets the device write on into memory the NVIDIA driver has freed.
    nv_->Log("device: kept writing into " + HexAddress(va) + " after the free callback returned, into GPU memory "
             "that is freed (use-after-free by DMA): the callback must wait for pending transfers (guide 4.4)");
  return st;
}

Result<uint64_t> SimGpuDirect::PinAndMap(uint64_t va, uint64_t length, const P2pTokens& tokens, bool cached,
                                         uint64_t* evictions) {
  Result<P2pPageTable> table = Status::Internal("not pinned");
  // The callback's data names the table (the guide's my_state); its id is known once get_pages
  // returns, and the NVIDIA driver calls back only after that (on a later cudaFree).
  auto data = std::make_shared<uint64_t>(0);
  for (;;) {
    table = nv_->GetPages(tokens, va, length, [this, data]() { OnFreeCallback(*data); });
    if (table.ok() || config_.unpin != UnpinPolicy::kLazy || table.status().code() != ENOMEM) break;
    // Guide 2.1: "unpin some of them (for example the least recently used one) ... if pinning a
    // new region failed because of BAR space exhaustion".
    auto lru = pins_.end();
    for (auto it = pins_.begin(); it != pins_.end(); ++it)
      if (it->second.cached && !it->second.revoked && nv_->live(it->first) &&
          (lru == pins_.end() || it->second.last_use < lru->second.last_use))
        lru = it;
    if (lru == pins_.end()) break;
    nv_->Log("driver: BAR1 full: unpins the least recently used page table " + std::to_string(lru->first));
    RESMEM_RETURN_IF_ERROR(nv_->PutPages(lru->second.tokens, lru->second.va, lru->first));
    pins_.erase(lru);
    ++*evictions;
  }
  if (!table.ok()) return table.status();
  const uint64_t id = table->id;
  *data = id;
  pins_[id];  // the record exists before any callback can run
  nv_->Log("driver: page table " + std::to_string(id) + " version " + HexAddress(table->version));
  if (!PageTableVersionCompatible(table->version, config_.built_against_version)) {
    (void)nv_->PutPages(tokens, va, id);
    pins_.erase(id);
    return Status::Errno(EINVAL, "incompatible page table version " + HexAddress(table->version) + ": the driver was "
                                     "built against nv-p2p.h's " + HexAddress(config_.built_against_version) +
                                     " (NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE: same major, minor at "
                                     "least the built one); rebuild it against this GPU driver's nv-p2p.h");
  }
  PinRecord& rec = pins_[id];
  rec.tokens = tokens;
  rec.va = va;
  rec.length = length;
  rec.cached = cached;
  rec.physical = table->physical_addresses;
  if (nv_->profile().has_dma_map_pages) {
    auto bus = nv_->DmaMapPages(id, [this](uint64_t phys, uint64_t len) { return device_->MapResource(phys, len); });
    if (!bus.ok()) {
      (void)nv_->PutPages(tokens, va, id);
      pins_.erase(id);
      return bus.status();
    }
    rec.bus = *bus;
    rec.translated = true;
  } else {
    rec.bus = table->physical_addresses;
    rec.translated = false;
  }
  return id;
}

Result<P2pPageTable> SimGpuDirect::Pin(const P2pTokens& tokens, uint64_t va, uint64_t length) {
  RESMEM_RETURN_IF_ERROR(NeedConfigured());
  uint64_t evictions = 0;
  RESMEM_ASSIGN_OR_RETURN(uint64_t id, PinAndMap(va, length, tokens, false, &evictions));
  const PinRecord& rec = pins_.at(id);
  P2pPageTable out;
  out.id = id;
  out.version = nv_->profile().page_table_version;
  out.page_size = nv_->profile().gpu_page;
  out.physical_addresses = rec.physical;
  return out;
}

Status SimGpuDirect::Unpin(uint64_t id) {
  RESMEM_RETURN_IF_ERROR(NeedConfigured());
  auto it = pins_.find(id);
  if (it == pins_.end())
    return Status::InvalidArgument("the driver holds no page table " + std::to_string(id) + ": pin first");
  if (it->second.revoked) {
    nv_->Log("driver: page table " + std::to_string(id) + " was revoked by the free callback: no "
             "nvidia_p2p_put_pages (guide 3.3)");
    pins_.erase(it);
    return Status::Ok();
  }
  Status st = nv_->PutPages(it->second.tokens, it->second.va, id);
  if (st.ok()) pins_.erase(it);
  return st;
}

Result<P2pDmaStats> SimGpuDirect::Dma(uint64_t va, uint64_t length, uint64_t block, int rounds) {
  RESMEM_RETURN_IF_ERROR(NeedConfigured());
  if (length == 0) return Status::InvalidArgument("a DMA of 0 bytes: give a length");
  if (block == 0) block = length;
  if (rounds < 1) return Status::InvalidArgument("rounds must be at least 1");
  P2pDmaStats stats;
  stats.data = "intact";
  const uint64_t page = nv_->profile().gpu_page;
  for (int r = 0; r < rounds; ++r) {
    for (uint64_t off = 0; off < length; off += block) {
      const uint64_t addr = va + off, len = std::min(block, length - off);
      uint64_t id = 0;
      if (config_.unpin != UnpinPolicy::kAfterEach) {
        for (auto& [tid, rec] : pins_)
          if (rec.cached && !rec.revoked && rec.va == addr && rec.length == len) id = tid;
      }
      if (id) {
        ++stats.hits;
      } else {
        // Guide 2.4: the tokens are queried for every pointer, right before pinning.
        auto tokens = nv_->Tokens(addr);
        if (!tokens.ok())
          return Status::Errno(EINVAL, "transfer " + std::to_string(stats.transfers + 1) + " to " + HexAddress(addr) +
                                           ": " + tokens.status().message() + "; it was freed or never "
                                           "allocated: a range whose GPU memory is freed is revoked, DMA "
                                           "only into memory the program holds");
        auto pinned = PinAndMap(addr, len, *tokens, true, &stats.evictions);
        if (!pinned.ok())
          return pinned.status().WithContext("transfer " + std::to_string(stats.transfers + 1) + " to " + HexAddress(addr));
        id = *pinned;
        ++stats.pins;
      }
      PinRecord& rec = pins_.at(id);
      rec.last_use = ++use_counter_;
      if (nv_->revoked(id))
        nv_->Log("device: writes through page table " + std::to_string(id) + ", which the NVIDIA driver "
                 "revoked and freed: its BAR1 pages may now be someone else's");
      auto written = device_->Write(rec.bus, page, len, rec.translated);
      if (!written.ok()) {
        if (config_.unpin == UnpinPolicy::kAfterEach) {
          (void)nv_->PutPages(rec.tokens, rec.va, id);  // unpinned after the transfer, failed or not
          pins_.erase(id);
        }
        return written.status().WithContext("transfer " + std::to_string(stats.transfers + 1) + " to " +
                                            HexAddress(addr));
      }
      PeerWrite w = *written;
      // The kernel's line during the transfer, then the driver's account of it once it ended (the
      // order the lane's kernel log and driver give them).
      if (!w.fault.empty()) nv_->Log(w.fault);
      if (!rec.translated)
        nv_->Log("driver: the device wrote " + FormatSize(len) + " to bus " + HexAddress(rec.bus.front()) +
                 " (the physical address, given as is: the guide's API): data " + w.data);
      if (nv_->revoked(id)) {
        w.data = "misdirected";
        w.note = "the transfer used page table " + std::to_string(id) + " after the free callback revoked it";
      }
      clock_->Charge(w.seconds);
      stats.seconds += w.seconds;
      stats.bytes += len;
      ++stats.transfers;
      stats.route = w.route;
      if (stats.note.empty() || w.data != "intact") stats.note = w.note;
      if (w.data != "intact") stats.data = w.data;
      if (config_.unpin == UnpinPolicy::kAfterEach) {
        RESMEM_RETURN_IF_ERROR(nv_->PutPages(rec.tokens, rec.va, id));
        pins_.erase(id);
      }
    }
  }
  return stats;
}

std::vector<std::string> SimGpuDirect::Events() const {
  if (!nv_) return {};
  return nv_->events();
}

}  // namespace resmem::sim
