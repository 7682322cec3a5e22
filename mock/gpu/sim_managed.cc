// The managed-memory model: residency per 64 KiB chunk, faults grown by the driver's density
// prefetcher, eviction of least recently used 2 MiB blocks, the thrashing heuristic, the advice.
// Rules and figures: ManagedModel (sim_managed.h).
#include "mock/gpu/sim_managed.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>
#include <string>
#include <vector>

namespace resmem::sim {
namespace {

enum class Loc : uint8_t { kNone, kCpu, kGpu };

Loc LocOf(Processor p) { return p == Processor::kGpu ? Loc::kGpu : Loc::kCpu; }

struct Chunk {
  Loc loc = Loc::kNone;
  bool dup = false;  // a read-only copy on the other side too (read-mostly)
  bool read_mostly = false;
  Loc preferred = Loc::kNone;
  bool accessed_by_gpu = false;
  bool gpu_mapped = false;  // the GPU's page tables point at it in system memory
  // The thrashing heuristic's state (uvm_perf_thrashing.c).
  double last_event = -1;
  int events = 0;
  int throttles = 0;
  double pinned_until = -1;
};

struct Allocation {
  uint64_t id = 0;
  uint64_t bytes = 0;
  std::vector<Chunk> chunks;
  std::vector<double> block_use;    // last touch per VA block, for LRU eviction
  std::vector<uint32_t> block_gpu;  // chunks per VA block that take GPU memory
};

std::string Size(uint64_t b) {
  char buf[48];
  if (b >= (1ull << 30) && b % (1ull << 30) == 0) std::snprintf(buf, sizeof buf, "%llu GiB", (unsigned long long)(b >> 30));
  else if (b >= (1ull << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", b / 1048576.0);
  else std::snprintf(buf, sizeof buf, "%llu KiB", (unsigned long long)(b >> 10));
  return buf;
}

class SimManaged : public ManagedMemory {
 public:
  SimManaged(const CudaProfile& profile, const ManagedModel& model, std::shared_ptr<Clock> clock)
      : p_(profile), m_(model), clock_(std::move(clock)) {
    gpu_capacity_ = p_.device_memory / m_.chunk;
  }

  std::string name() const override { return "sim:" + p_.name; }

  Result<ManagedInfo> Info() override {
    ManagedInfo i;
    i.gpu_memory_total = p_.device_memory;
    i.gpu_memory_free = (gpu_capacity_ - std::min(gpu_capacity_, gpu_used_)) * m_.chunk;
    i.concurrent_managed_access = m_.supported ? 1 : 0;
    i.pageable_memory_access = p_.pageable_memory_access;
    return i;
  }

  Status ReserveDevice(uint64_t leave_free) override {
    if (leave_free < m_.va_block)
      return Status::InvalidArgument("leave at least " + Size(m_.va_block) + " of GPU memory free");
    const uint64_t want = leave_free / m_.chunk + gpu_used_;
    if (want < gpu_capacity_) gpu_capacity_ = want;
    return Status::Ok();
  }

  Result<uint64_t> Alloc(uint64_t bytes) override {
    RESMEM_RETURN_IF_ERROR(NeedSupport());
    if (bytes == 0) return Status::Cuda(p_.error_invalid_value, "cudaMallocManaged of 0 bytes");
    Allocation a;
    a.id = next_id_;
    a.bytes = bytes;
    a.chunks.resize((bytes + m_.chunk - 1) / m_.chunk);
    a.block_use.assign((bytes + m_.va_block - 1) / m_.va_block, -1);
    a.block_gpu.assign(a.block_use.size(), 0);
    allocs_[next_id_] = std::move(a);
    return next_id_++;
  }

  Status Free(uint64_t id) override {
    auto it = allocs_.find(id);
    if (it == allocs_.end()) return Status::Cuda(p_.error_invalid_value, "cudaFree of an unknown pointer");
    Allocation& a = it->second;
    for (uint64_t b = 0; b < a.block_gpu.size(); ++b)
      if (a.block_gpu[b]) {
        lru_.erase({a.block_use[b], a.id, b});
        gpu_used_ -= a.block_gpu[b];
      }
    allocs_.erase(it);
    return Status::Ok();
  }

  Result<ManagedStats> Touch(uint64_t id, uint64_t offset, uint64_t length, Processor by, bool write,
                             int rounds) override {
    RESMEM_ASSIGN_OR_RETURN(Allocation * a, Range(id, offset, length));
    ManagedStats s = Begin(length, rounds);
    for (int r = 0; r < rounds; ++r) TouchOnce(*a, id, offset, length, by, write, &s);
    return Finish(&s);
  }

  Result<ManagedStats> PingPong(uint64_t id, uint64_t offset, uint64_t length, int rounds) override {
    RESMEM_ASSIGN_OR_RETURN(Allocation * a, Range(id, offset, length));
    ManagedStats s = Begin(length, rounds);
    for (int r = 0; r < rounds; ++r) {
      TouchOnce(*a, id, offset, length, Processor::kGpu, true, &s);
      TouchOnce(*a, id, offset, length, Processor::kCpu, true, &s);
    }
    return Finish(&s);
  }

  Result<ManagedStats> Prefetch(uint64_t id, uint64_t offset, uint64_t length, Processor to) override {
    RESMEM_ASSIGN_OR_RETURN(Allocation * a, Range(id, offset, length));
    ManagedStats s = Begin(length, 1);
    const Loc dest = LocOf(to);
    t_ += m_.prefetch_call_seconds;
    uint64_t moved = 0;
    for (uint64_t i = offset / m_.chunk; i * m_.chunk < offset + length; ++i) {
      Chunk& c = a->chunks[i];
      const bool there = c.loc == dest || (c.dup && dest == Loc::kGpu && c.loc == Loc::kCpu) ||
                         (c.dup && dest == Loc::kCpu && c.loc == Loc::kGpu);
      if (there) { Use(*a, i); continue; }
      if (dest == Loc::kGpu) MakeRoom(*a, i, &s);
      if (c.loc != Loc::kNone) moved += m_.chunk;
      Place(*a, i, dest, c.read_mostly && c.loc != Loc::kNone);
      Use(*a, i);
    }
    const double link = to == Processor::kGpu ? p_.link_h2d_gbps * m_.prefetch_h2d_efficiency
                                              : p_.link_d2h_gbps * m_.prefetch_d2h_efficiency;
    t_ += moved / (link * 1e9);
    s.migrated += moved;
    return Finish(&s);
  }

  Status Advise(uint64_t id, uint64_t offset, uint64_t length, ManagedAdvice advice,
                Processor target) override {
    RESMEM_ASSIGN_OR_RETURN(Allocation * a, Range(id, offset, length));
    for (uint64_t i = offset / m_.chunk; i * m_.chunk < offset + length; ++i) {
      Chunk& c = a->chunks[i];
      switch (advice) {
        case ManagedAdvice::kReadMostly: c.read_mostly = true; break;
        case ManagedAdvice::kPreferredLocation: c.preferred = LocOf(target); break;
        case ManagedAdvice::kAccessedBy:
          // "the CPU typically cannot access device memory directly" (cudaMemAdvise, CUDA 13.0):
          // accessed-by the CPU changes nothing on a PCIe machine.
          if (target == Processor::kGpu) c.accessed_by_gpu = c.gpu_mapped = true;
          break;
      }
    }
    return Status::Ok();
  }

  Result<ManagedStats> ReadDeviceThroughBar(uint64_t length) override {
    ManagedStats s = Begin(length, 1);
    t_ += length / (m_.bar_read_mbps * 1e6);
    s.events.push_back("CPU loads from a BAR mapping: uncached, no burst reads across PCIe");
    return Finish(&s);
  }

 private:
  Status NeedSupport() const {
    if (!m_.supported)
      return Status::Cuda(p_.error_invalid_value, p_.name + " has no managed memory (cudaMallocManaged came with "
                          "CUDA 6, GPU page faults with Pascal): use cuda-13.0-r580");
    return Status::Ok();
  }
  Result<Allocation*> Range(uint64_t id, uint64_t offset, uint64_t length) {
    RESMEM_RETURN_IF_ERROR(NeedSupport());
    auto it = allocs_.find(id);
    if (it == allocs_.end()) return Status::InvalidArgument("no managed allocation with id " + std::to_string(id));
    if (length == 0 || offset > it->second.bytes || length > it->second.bytes - offset)
      return Status::Cuda(p_.error_invalid_value, "the range [" + std::to_string(offset) + ", +" +
                          std::to_string(length) + ") is empty or runs past the allocation");
    return &it->second;
  }
  ManagedStats Begin(uint64_t length, int rounds) {
    t_ = 0;
    thrash_ = Thrash{};
    ManagedStats s;
    s.bytes = length;
    s.rounds = rounds;
    s.counted = true;
    return s;
  }
  Result<ManagedStats> Finish(ManagedStats* s) {
    if (!thrash_.detected.empty())
      s->events.push_back("uvm: thrashing detected on " + Size(thrash_.detected.size() * m_.chunk) +
                          ", the faulting processor throttled " + std::to_string(thrash_.throttles) + " times");
    if (!thrash_.pinned.empty())
      s->events.push_back("uvm: pinned " + Size(thrash_.pinned.size() * m_.chunk) +
                          " in system memory; the GPU maps it remotely");
    if (!thrash_.unmitigated.empty())
      s->events.push_back("uvm: " + Size(thrash_.unmitigated.size() * m_.chunk) +
                          " keeps thrashing: its preferred location is the GPU, so it is throttled, never pinned");
    s->seconds = t_;
    clock_->Charge(t_);
    return *s;
  }
  double Now() const { return clock_->NowSeconds() + t_; }
  static bool OnGpu(const Chunk& c) {
    return c.loc == Loc::kGpu || (c.loc == Loc::kCpu && c.dup);
  }
  void Use(Allocation& a, uint64_t i) {
    const uint64_t b = i * m_.chunk / m_.va_block;
    if (a.block_gpu[b]) lru_.erase({a.block_use[b], a.id, b});
    a.block_use[b] = Now();
    if (a.block_gpu[b]) lru_.insert({a.block_use[b], a.id, b});
  }
  // Chunk i of `a` starts (+1) or stops (-1) taking GPU memory: the counts and the LRU order.
  void GpuDelta(Allocation& a, uint64_t i, int delta) {
    if (delta == 0) return;
    const uint64_t b = i * m_.chunk / m_.va_block;
    if (delta > 0 && a.block_gpu[b]++ == 0) lru_.insert({a.block_use[b], a.id, b});
    if (delta < 0 && --a.block_gpu[b] == 0) lru_.erase({a.block_use[b], a.id, b});
    gpu_used_ += delta;
  }
  // Moves (or copies, for a read-only duplicate) chunk i to `dest`, keeping the GPU count.
  void Place(Allocation& a, uint64_t i, Loc dest, bool duplicate) {
    Chunk& c = a.chunks[i];
    const int before = OnGpu(c);
    if (duplicate && c.loc != Loc::kNone && c.loc != dest) {
      c.dup = true;
    } else {
      c.loc = dest;
      c.dup = false;
    }
    GpuDelta(a, i, static_cast<int>(OnGpu(c)) - before);
  }

  // Frees GPU memory for one chunk by evicting the least recently used VA block of any
  // allocation, never the block of chunk `keep` of `owner`.
  void MakeRoom(Allocation& owner, uint64_t keep, ManagedStats* s) {
    const uint64_t keep_block = keep * m_.chunk / m_.va_block;
    while (gpu_used_ + 1 > gpu_capacity_) {
      auto it = lru_.begin();
      if (it != lru_.end() && std::get<1>(*it) == owner.id && std::get<2>(*it) == keep_block) ++it;
      if (it == lru_.end()) return;  // nothing else to evict: the GPU holds just this block
      Allocation& victim = allocs_.at(std::get<1>(*it));
      const uint64_t vblock = std::get<2>(*it);
      uint64_t written = 0;
      const uint64_t per = m_.va_block / m_.chunk;
      for (uint64_t i = vblock * per; i < std::min<uint64_t>((vblock + 1) * per, victim.chunks.size()); ++i) {
        Chunk& c = victim.chunks[i];
        if (!OnGpu(c)) continue;
        if (c.loc == Loc::kGpu && !c.dup) written += m_.chunk;  // else a CPU copy holds the data
        c.loc = Loc::kCpu;
        c.dup = false;
        GpuDelta(victim, i, -1);
      }
      t_ += m_.evict_block_seconds + written / (p_.link_d2h_gbps * 1e9);
      s->evicted += written;
    }
  }

  // The chunks one fault at chunk `i` moves to `dest`: the largest aligned subregion of its VA
  // block in which more than prefetch_threshold_pct of the chunks would then be at `dest`
  // (uvm_perf_prefetch.c), or the chunk alone.
  std::pair<uint64_t, uint64_t> FaultExtent(const Allocation& a, uint64_t i, Loc dest) const {
    const uint64_t per = m_.va_block / m_.chunk;
    const uint64_t block = i / per * per;
    std::pair<uint64_t, uint64_t> best{i, i + 1};
    for (uint64_t size = 2; size <= per; size *= 2) {
      const uint64_t start = block + (i - block) / size * size;
      const uint64_t end = std::min<uint64_t>(start + size, a.chunks.size());
      uint64_t at = 1;  // the faulting chunk
      for (uint64_t k = start; k < end; ++k)
        if (k != i && (a.chunks[k].loc == dest || a.chunks[k].dup)) ++at;  // a copy is there too
      if (at * 100 > size * m_.prefetch_threshold_pct) best = {start, end};
    }
    return best;
  }

  // The heuristic's view of one migration of chunk `c` (uvm_perf_thrashing.c).
  // Events carry the time their touch began: the chunks of one touch are serviced in batches that
  // overlap, and a throttled processor naps once per touch, not once per chunk.
  void ThrashEvent(Chunk& c) {
    const double now = touch_start_;
    const double since = c.last_event < 0 ? 1e300 : now - c.last_event;
    c.last_event = now;
    // Once thrashing, a page stays so until an epoch passes without events; before that, only
    // events closer than the lapse count towards detection.
    if (c.events >= m_.thrashing_threshold && since < m_.thrashing_epoch_lapses * m_.thrashing_lapse_seconds) {
      // still thrashing
    } else {
      c.events = since < m_.thrashing_lapse_seconds ? c.events + 1 : 1;
      if (c.events < m_.thrashing_threshold) return;
    }
    throttled_ = true;
    if (c.preferred == Loc::kGpu) {  // throttled at every event, never pinned
      thrash_.unmitigated.insert(&c);
      return;
    }
    thrash_.detected.insert(&c);
    if (++c.throttles >= m_.thrashing_pin_threshold) {
      c.pinned_until = now + m_.thrashing_pin_lapses * m_.thrashing_lapse_seconds;
      c.throttles = 0;
      c.events = 0;
      thrash_.pinned.insert(&c);
    }
  }

  void TouchOnce(Allocation& a, uint64_t id, uint64_t offset, uint64_t length, Processor by, bool write,
                 ManagedStats* s) {
    (void)id;
    const Loc me = LocOf(by);
    const Loc other = by == Processor::kGpu ? Loc::kCpu : Loc::kGpu;
    const double local_gbps = by == Processor::kGpu ? m_.hbm_gbps : write ? m_.cpu_write_gbps : m_.cpu_read_gbps;
    const double remote_gbps = p_.link_h2d_gbps * m_.remote_fraction_of_link;
    if (by == Processor::kGpu) t_ += m_.gpu_launch_seconds;
    touch_start_ = Now();
    throttled_ = false;
    for (uint64_t i = offset / m_.chunk; i * m_.chunk < offset + length; ++i) {
      Chunk& c = a.chunks[i];
      const uint64_t lo = std::max(offset, i * m_.chunk);
      const uint64_t hi = std::min(offset + length, (i + 1) * m_.chunk);
      const uint64_t b = hi - lo;
      Use(a, i);
      // Local already, or a read of a read-only copy here.
      const bool local = c.loc == me || (c.loc == other && c.dup && !write);
      if (local && !(write && c.dup)) {
        t_ += b / (local_gbps * 1e9);
        continue;
      }
      if (local) {  // a write to a duplicated page: the other copies are invalidated
        t_ += (by == Processor::kGpu ? m_.gpu_fault_seconds : m_.cpu_fault_seconds) + b / (local_gbps * 1e9);
        ++s->faults;
        Place(a, i, me, false);
        continue;
      }
      // The GPU reaches system memory through a mapping where one is allowed: accessed-by, a
      // preferred location on the host, a page the thrashing heuristic pinned there.
      if (by == Processor::kGpu && c.loc == Loc::kCpu &&
          (c.accessed_by_gpu || c.preferred == Loc::kCpu || c.pinned_until > Now())) {
        if (!c.gpu_mapped) {  // the first access faults and maps instead of migrating
          t_ += m_.gpu_fault_seconds;
          ++s->faults;
          c.gpu_mapped = true;
        }
        t_ += b / (remote_gbps * 1e9);
        s->remote += b;
        continue;
      }
      // A fault: the chunk and the density prefetcher's subregion move here (or are populated
      // here, on first touch), or, read-mostly, are copied here.
      const auto [from, to] = FaultExtent(a, i, me);
      uint64_t moved = 0;
      for (uint64_t k = from; k < to; ++k) {
        Chunk& m = a.chunks[k];
        if (m.loc == me || m.dup) continue;  // here already, or a read-only copy is
        if (me == Loc::kGpu) MakeRoom(a, k, s);
        const bool had_data = m.loc != Loc::kNone;
        if (had_data) {
          ThrashEvent(m);
          if (me == Loc::kGpu && m.pinned_until > Now()) {  // pinned in system memory: mapped
            m.gpu_mapped = true;
            continue;
          }
          moved += m_.chunk;
        }
        Place(a, k, me, m.read_mostly && !write && had_data);
        if (me == Loc::kCpu) m.gpu_mapped = m.accessed_by_gpu;
      }
      const double link = by == Processor::kGpu ? p_.link_h2d_gbps : p_.link_d2h_gbps;
      t_ += (by == Processor::kGpu ? m_.gpu_fault_seconds : m_.cpu_fault_seconds) + moved / (link * 1e9) +
            b / (local_gbps * 1e9);
      ++s->faults;
      s->migrated += moved;
    }
    if (throttled_) {  // the heuristic's nap for the faulting processor
      t_ += m_.thrashing_nap_lapses * m_.thrashing_lapse_seconds;
      ++thrash_.throttles;
    }
  }

  // What the heuristic did during one operation: the chunks it saw thrashing, pinned, or left
  // thrashing (a preferred location on the GPU), and its throttles.
  struct Thrash {
    std::set<const Chunk*> detected, pinned, unmitigated;
    uint64_t throttles = 0;
  };

  CudaProfile p_;
  ManagedModel m_;
  std::shared_ptr<Clock> clock_;
  std::map<uint64_t, Allocation> allocs_;
  uint64_t next_id_ = 1;
  uint64_t gpu_capacity_ = 0, gpu_used_ = 0;  // in chunks
  std::set<std::tuple<double, uint64_t, uint64_t>> lru_;  // (last use, allocation, block) on the GPU
  double t_ = 0;  // the cost of the operation under way
  double touch_start_ = 0;
  bool throttled_ = false;
  Thrash thrash_;
};

}  // namespace

ManagedModel ManagedModelFor(const CudaProfile& profile) {
  ManagedModel m;
  m.supported = profile.name != "cuda-4.1-r285";
  return m;
}

std::unique_ptr<ManagedMemory> MakeSimManaged(const CudaProfile& profile, const ManagedModel& model,
                                              std::shared_ptr<Clock> clock) {
  return std::make_unique<SimManaged>(profile, model, std::move(clock));
}

}  // namespace resmem::sim
