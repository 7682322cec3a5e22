#include "engine/transfer/transfer_engine.h"

#include <alloca.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <thread>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "backends/api/median.h"
#include "backends/cuda/cuda_gpu.h"

namespace resmem::transfer {
namespace {

// Why a registration of this mapping was refused, from its facts (FACTS.md, return codes seen on
// the GPU machine; open driver kernel-open/nvidia/os-mlock.c: pin_user_pages needs struct pages).
std::string Reason(const MappingFacts& f, uint32_t flags, const Status& st) {
  if (st.space() == ErrorSpace::kCuda && st.code() == 2)
    return "too large for one call, or more than the host can pin";
  if (f.vm_pfnmap && !(flags & kRegisterIoMemory)) return "pfnmap mapping without IoMemory";
  if (!f.vm_pfnmap && (flags & kRegisterIoMemory)) return "IoMemory on memory with struct pages";
  if (!f.writable && !(flags & kRegisterReadOnly)) return "read-only mapping without ReadOnly";
  if (f.backing == Backing::kFile && f.shared && f.writable)
    return "writable shared mapping of a disk file";
  if (st.space() == ErrorSpace::kResmem && st.code() == kUnavailable) return "not on this backend";
  return "";
}

std::string Refusal(Path p, const MappingFacts& f, uint32_t flags, const Status& st) {
  std::string why = Reason(f, flags, st);
  return std::string(PathName(p)) + " refused: " + st.message() + (why.empty() ? "" : " (" + why + ")");
}

uint32_t BaseFlags(const MappingFacts& f) { return f.writable ? 0u : static_cast<uint32_t>(kRegisterReadOnly); }

// A CPU copy of the staged path (pinned buffer -> host mapping, or host mapping -> pinned
// segment; TransferOptions::staging_nt_fill_below says when the latter streams). With
// `streaming`, 16-byte non-temporal stores (SSE2, every x86-64 has them) write the destination
// around the cache, so the copy does not first read each destination line (no read-for-
// ownership) and leaves no dirty lines behind for a DMA to fetch out of the CPU caches; an
// sfence makes the stores visible before return.
void CpuCopy(uint8_t* dst, const uint8_t* src, uint64_t n, bool streaming) {
#if defined(__x86_64__)
  if (streaming && n >= 4096) {
    uint64_t head = (16 - (reinterpret_cast<uintptr_t>(dst) & 15)) & 15;
    std::memcpy(dst, src, head);
    dst += head, src += head, n -= head;
    for (; n >= 64; dst += 64, src += 64, n -= 64) {
      __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
      __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16));
      __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 32));
      __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 48));
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst), a);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 16), b);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 32), c);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 48), d);
    }
    std::memcpy(dst, src, n);
    _mm_sfence();
    return;
  }
#endif
  (void)streaming;
  std::memcpy(dst, src, n);
}

// CLDEMOTE every cache line of [p, p+n): a hint that moves the lines a fill just wrote from the
// filling core's private caches to the shared last-level cache, where a device's read finds them
// without snooping that core. Encoded in the NOP space: a CPU without it does nothing.
void DemoteLines(const uint8_t* p, uint64_t n) {
#if defined(__x86_64__)
  for (uint64_t at = 0; at < n; at += 64)
    asm volatile(".byte 0x0f, 0x1c, 0x07" : : "D"(p + at) : "memory");  // cldemote (%rdi)
#else
  (void)p, (void)n;
#endif
}

// PREFETCHW every cache line of [p, p+n): the lines come into this core's cache ready to be
// written (the read-for-ownership done ahead of the stores). Encoded in the NOP space on CPUs
// without it.
void PrefetchForWrite(const uint8_t* p, uint64_t n) {
#if defined(__x86_64__)
  for (uint64_t at = 0; at < n; at += 64) asm volatile("prefetchw (%0)" : : "r"(p + at));
#else
  (void)p, (void)n;
#endif
}

// Microseconds since it was made: the time origin of a staged copy's trace.
class MicrosSince {
 public:
  double operator()() const {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0_).count();
  }

 private:
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

}  // namespace

SegmentFill HostToDeviceFill(const TransferOptions& o, uint64_t n, bool in_tail) {
  if (o.staging_demote_fill_from != 0 && n >= o.staging_demote_fill_from)
    return SegmentFill::kCachedDemoted;
  if (n < o.staging_nt_fill_below || (o.staging_nt_tail && in_tail)) return SegmentFill::kNonTemporal;
  return SegmentFill::kCached;
}

// Host to device: n bytes from the mapping into a pinned segment, stored as `fill` says (the
// step every host-to-device pipeline's lanes take per piece).
void FillAs(SegmentFill fill, uint8_t* dst, const uint8_t* src, uint64_t n) {
  CpuCopy(dst, src, n, fill == SegmentFill::kNonTemporal);
  if (fill == SegmentFill::kCachedDemoted) DemoteLines(dst, n);
}

uint64_t NextFrontierDma(uint64_t issued, uint64_t frontier, uint64_t length, int in_flight,
                         int depth, uint64_t min_dma, uint64_t chunk, bool hold) {
  if (in_flight >= depth || frontier <= issued || chunk == 0) return 0;
  const uint64_t waiting = frontier - issued;
  const uint64_t room = chunk - issued % chunk;
  if (waiting < min_dma && frontier < length) return 0;
  if (hold && in_flight > 0 && waiting < room && frontier < length) return 0;
  return std::min(waiting, room);
}

uint64_t FirstRefilledUnit(const std::function<uint64_t(uint64_t)>& word, uint64_t base,
                           uint64_t from, uint64_t to) {
  for (uint64_t u = from; u < to; ++u)
    if (word(u) != base + u) return u;
  return to;
}

double FrontierReachedUs(const StagedTrace& t, uint64_t bytes) {
  if (t.unit_filled_us.empty() || t.unit_bytes == 0) return -1;
  const uint64_t units = std::min<uint64_t>(t.unit_filled_us.size(),
                                            (bytes + t.unit_bytes - 1) / t.unit_bytes);
  double reached = 0;
  for (uint64_t u = 0; u < units; ++u) reached = std::max(reached, t.unit_filled_us[u]);
  return reached;
}

std::string DescribeUnitFills(const StagedTrace& t) {
  const size_t n = t.unit_filled_us.size();
  if (n == 0 || t.unit_begin_us.size() != n || t.unit_bytes == 0) return "";
  std::vector<double> took(n);
  size_t longest = 0;
  double first_began = t.unit_begin_us[0];
  for (size_t u = 0; u < n; ++u) {
    took[u] = t.unit_filled_us[u] - t.unit_begin_us[u];
    if (took[u] > took[longest]) longest = u;
    first_began = std::min(first_began, t.unit_begin_us[u]);
  }
  const uint64_t bytes = t.bytes;
  char line[320];
  std::snprintf(line, sizeof line,
                "%zu units of %s: the first began at %.1f us; the frontier reached 256 KiB at "
                "%.1f, 1 MiB at %.1f, a quarter at %.1f, half at %.1f, all at %.1f; a unit took "
                "%.1f us (median), %.1f at most (unit %zu)",
                n, FormatSize(t.unit_bytes).c_str(), first_began,
                FrontierReachedUs(t, 256 << 10), FrontierReachedUs(t, 1 << 20),
                FrontierReachedUs(t, bytes / 4), FrontierReachedUs(t, bytes / 2),
                FrontierReachedUs(t, bytes), MedianUpper(took), took[longest], longest);
  return line;
}

FrontierShape FrontierShapeOf(uint64_t length, uint64_t unit, uint64_t min_dma) {
  FrontierShape s;
  s.unit = unit;
  while (s.unit > 4096 && s.unit / 2 % 4096 == 0 && s.unit * 64 > length) s.unit /= 2;
  s.min_dma = std::min(min_dma, std::max(s.unit, length / 8 / 4096 * 4096));
  return s;
}

std::vector<uint64_t> DrainSegmentBounds(uint64_t length, uint64_t seg, uint64_t tail) {
  std::vector<uint64_t> b = {0};
  if (seg == 0 || length == 0) {
    b.push_back(length);
    return b;
  }
  // The ramp replaces the copy's last `seg` bytes: seg/2, seg/4, ..., 2 tail, tail, tail.
  std::vector<uint64_t> ramp;
  if (tail != 0 && tail < seg && length >= 2 * seg) {
    for (uint64_t n = seg / 2; n > tail && n >= 4096; n /= 2) ramp.push_back(n / 4096 * 4096);
    uint64_t used = 0;
    for (uint64_t n : ramp) used += n;
    const uint64_t rest = seg - used;  // the last pieces: two of about `tail` bytes
    const uint64_t first = (rest / 2 + 4095) / 4096 * 4096;
    ramp.push_back(first);
    if (rest > first) ramp.push_back(rest - first);
  }
  const uint64_t front = ramp.empty() ? length : length - seg;
  for (uint64_t at = 0; at < front;) {
    at += std::min(seg, front - at);
    b.push_back(at);
  }
  for (uint64_t n : ramp) b.push_back(b.back() + n);
  return b;
}

uint64_t SegmentPiece(uint64_t seg, int lanes, uint64_t min_piece) {
  const uint64_t fillers = 2 * static_cast<uint64_t>(lanes - 1);
  return std::max<uint64_t>((min_piece + 4095) / 4096 * 4096,
                            ((seg + fillers - 1) / fillers + 4095) / 4096 * 4096);
}

const char* PathName(Path p) {
  switch (p) {
    case Path::kRegisteredDirect: return "registered-direct";
    case Path::kRegisteredChunked: return "registered-chunked";
    case Path::kStaged: return "staged";
    case Path::kZeroCopyMapped: return "zero-copy-mapped";
    case Path::kPageableAccess: return "pageable-access";
    case Path::kPageable: return "pageable";
  }
  return "?";
}

std::vector<Path> PathsFastestFirst() {
  return {Path::kRegisteredDirect, Path::kRegisteredChunked, Path::kStaged,
          Path::kZeroCopyMapped,   Path::kPageableAccess,    Path::kPageable};
}

Result<Path> ParsePath(const std::string& name) {
  std::string all;
  for (Path p : PathsFastestFirst()) {
    if (name == PathName(p)) return p;
    all += std::string(all.empty() ? "" : ", ") + PathName(p);
  }
  return Status::InvalidArgument("unknown transfer path '" + name + "': use one of " + all);
}

std::string PathChoice::Describe() const {
  std::string out = std::string("took ") + PathName(path);
  if (!detail.empty()) out += " (" + detail + ")";
  for (const auto& r : refusals) out += "; " + r;
  return out;
}

Result<std::unique_ptr<TransferEngine>> TransferEngine::Open(Gpu& gpu, HostMemory& mem,
                                                             Clock& clock,
                                                             const TransferOptions& options) {
  if (options.staging_lanes < 1 || options.staging_lanes > 1024 || options.staging_chunk < 4096 ||
      options.register_chunk < 4096 || options.staging_buffers < 1 ||
      options.staging_buffers > 16 || options.staging_min_unit < 4096 ||
      options.staging_spin_us < 0)
    return Status::InvalidArgument(
        "transfer options: staging lanes must be 1..1024, buffers per lane 1..16, chunks and the "
        "smallest unit >= 4 KiB, spin time >= 0 us");
  if (options.staging_ramp_first % 4096 || options.staging_edge_segment % 4096 ||
      options.staging_min_segments < 1 || options.staging_min_segments_d2h < 0)
    return Status::InvalidArgument(
        "transfer options: the first segment of a ramp (--ramp-first) and the edge segment "
        "(--edge-segment) must be multiples of 4 KiB (0: none) and segments per copy "
        "(--min-segments) at least 1");
  if (options.staging_frontier_unit < 4096 || options.staging_frontier_unit % 4096)
    return Status::InvalidArgument("transfer options: the fill frontier's unit (--frontier-unit) "
                                   "must be a multiple of 4 KiB, got " +
                                   std::to_string(options.staging_frontier_unit));
  if (!(options.staging_frontier_lead_us >= 0))
    return Status::InvalidArgument(
        "transfer options: the fill frontier's lead (--frontier-lead-us) must be 0 (issue at "
        "once) or more microseconds, got " + std::to_string(options.staging_frontier_lead_us));
  if (!(options.staging_sm_start_us >= 0))
    return Status::InvalidArgument(
        "transfer options: the SM copy's start wait (--sm-start-us) must be 0 (wait as long as "
        "it takes) or more microseconds, got " + std::to_string(options.staging_sm_start_us));
  if (options.staging_sm_blocks < 1)
    return Status::InvalidArgument("transfer options: the SM copy's blocks (--sm-blocks) must be "
                                   "at least 1, got " + std::to_string(options.staging_sm_blocks));
  std::unique_ptr<TransferEngine> e(new TransferEngine(gpu, mem, clock, options));
  std::vector<Path> order = options.allowed.empty() ? PathsFastestFirst() : options.allowed;
  for (Path p : order) {
    Status st = e->TryPath(p);
    if (st.ok()) {
      e->choice_.path = p;
      return e;
    }
  }
  std::string all;
  for (const auto& r : e->choice_.refusals) all += "\n  " + r;
  return Status::Unsupported("no transfer path works for " + mem.Describe() + ":" + all);
}

Status TransferEngine::TryPath(Path p) {
  const MappingFacts& f = mem_.facts();
  auto refuse = [&](uint32_t flags, const Status& st) {
    choice_.refusals.push_back(Refusal(p, f, flags, st));
    return st;
  };
  auto* cuda = dynamic_cast<cuda::CudaGpu*>(&gpu_);
  switch (p) {
    case Path::kRegisteredDirect:
    case Path::kZeroCopyMapped: {
      uint32_t extra = p == Path::kZeroCopyMapped ? static_cast<uint32_t>(kRegisterMapped) : 0u;
      if (p == Path::kZeroCopyMapped && !cuda)
        return refuse(0, Status::Unavailable(gpu_.name() + " cannot launch the copy kernel"));
      std::vector<uint32_t> tries = {BaseFlags(f) | extra};
      if (f.vm_pfnmap) tries.push_back(BaseFlags(f) | extra | kRegisterIoMemory);
      Status last;
      for (uint32_t flags : tries) {
        last = gpu_.Register(mem_, 0, mem_.size(), flags);
        if (last.ok()) {
          registered_.push_back(0);
          choice_.register_flags = flags;
          choice_.detail = "cudaHostRegister " + RegisterFlagsName(flags);
          return last;
        }
        refuse(flags, last);
      }
      return last;
    }
    case Path::kRegisteredChunked: {
      if (mem_.size() <= o_.register_chunk)
        return refuse(0, Status::Unsupported("the span (" + FormatSize(mem_.size()) +
                                             ") fits in one piece of " +
                                             FormatSize(o_.register_chunk) +
                                             ": the same call registered-direct made"));
      uint32_t flags = BaseFlags(f) | (f.vm_pfnmap ? static_cast<uint32_t>(kRegisterIoMemory) : 0u);
      std::vector<uint64_t> pieces;
      Status st = cuda::RegisterInChunks(gpu_, mem_, 0, mem_.size(), flags, o_.register_chunk,
                                         &pieces);
      if (!st.ok()) return refuse(flags, st);
      registered_ = pieces;
      choice_.register_flags = flags;
      choice_.detail = std::to_string(pieces.size()) + " pieces of " + FormatSize(o_.register_chunk);
      return st;
    }
    case Path::kStaged: {
      if (!f.readable)
        return refuse(0, Status::Unsupported("the mapping is not readable by the CPU"));
      // Lanes run concurrently only on real time; a virtual clock (the simulator) runs one lane.
      int lanes = clock_.is_virtual() ? 1 : o_.staging_lanes;
      // Two buffers per lane where copies can be asynchronous (CUDA): one fills while the other
      // is in DMA, so a lane's CPU never waits for the link.
      async_ = cuda != nullptr && !clock_.is_virtual();
      buffers_per_lane_ = async_ ? std::max(2, o_.staging_buffers) : 1;
      segments_ = async_ && o_.staging_segments && lanes >= 2;
      // Segments: one ring of buffers shared by all lanes; lanes: buffers per lane.
      const int buffer_count = segments_ ? buffers_per_lane_ : lanes * buffers_per_lane_;
      for (int i = 0; i < buffer_count; ++i) {
        auto buf = gpu_.AllocPinned(o_.staging_chunk, 0);
        if (!buf.ok()) {
          staging_.clear();
          return refuse(0, buf.status());
        }
        staging_.push_back(std::move(buf).value());
      }
      if (async_) {
        for (size_t i = 0; i < staging_.size(); ++i) {
          auto t = cuda->NewTicket();
          if (!t.ok()) {
            for (auto& made : tickets_) cuda->ReleaseTicket(made);
            tickets_.clear();
            staging_.clear();
            return refuse(0, t.status());
          }
          tickets_.push_back(*t);
        }
      }
      if (segments_ && o_.staging_dma_streams > 1) {
        if (Status st = cuda->EnsureCopyStreams(o_.staging_dma_streams); !st.ok()) {
          for (auto& made : tickets_) cuda->ReleaseTicket(made);
          tickets_.clear();
          staging_.clear();
          return refuse(0, st);
        }
      }
      std::string pipeline_note;
      if (segments_ && o_.staging_signals) {
        auto sig = cuda->NewSignals(2 * buffer_count);
        if (sig.ok()) {
          signals_ = *sig;
          pipeline_note = ", DMAs queued behind stream signals";
        } else {
          pipeline_note = ", event polling (" + sig.status().message() + ")";
        }
      }
      if (segments_ && (o_.staging_sm_copy || o_.staging_sm_copy_upto > 0)) {
        const uint64_t piece = std::max<uint64_t>(4096, o_.staging_sm_piece / 4096 * 4096);
        const uint64_t slots = std::max<uint64_t>(1, buffer_count * o_.staging_chunk / piece);
        auto ring = cuda->NewPieceRing(piece, static_cast<uint32_t>(slots), o_.staging_sm_blocks);
        if (ring.ok()) {
          piece_ring_ = std::move(ring).value();
          pipeline_note += (o_.staging_sm_copy ? std::string(", single copies")
                                               : ", single host-to-device copies up to " +
                                                     FormatSize(o_.staging_sm_copy_upto)) +
                           " moved by the SMs in " + FormatSize(piece) + " pieces (" +
                           std::to_string(piece_ring_.blocks) + " blocks of 512 threads, " +
                           std::to_string(piece_ring_.sms) + " SMs)";
        } else {
          pipeline_note += ", copy-engine DMAs (" + ring.status().message() + ")";
        }
      }
      if (segments_ && o_.staging_frontier) {
        if (o_.staging_chunk % o_.staging_frontier_unit == 0) {
          frontier_unit_ = o_.staging_frontier_unit;
          // One word per 4 KiB of the ring: a short copy's units are smaller (FrontierShapeOf).
          frontier_words_.reset(
              new UnitWord[static_cast<uint64_t>(buffer_count) * o_.staging_chunk / 4096]);
          pipeline_note += ", host-to-device single copies in DMAs sized by the fill frontier (" +
                           FormatSize(frontier_unit_) + " units, DMAs of >= " +
                           FormatSize(o_.staging_frontier_min_dma) + ", two queued)";
        } else {
          pipeline_note += ", no DMAs by the fill frontier (the buffers of " +
                           FormatSize(o_.staging_chunk) + " are no multiple of its unit of " +
                           FormatSize(o_.staging_frontier_unit) + ")";
        }
      }
      LanePoolOptions lo;
      lo.lanes = lanes;
      lo.spin_us = o_.staging_spin_us;
      lo.pin_threads = o_.staging_pin_threads;
      lanes_ = std::make_unique<LanePool>(lo);
      choice_.detail =
          segments_ ? std::to_string(lanes) + " lanes filling " + std::to_string(buffer_count) +
                          " pinned segments of " + FormatSize(o_.staging_chunk) +
                          ", one DMA per segment"
                    : std::to_string(lanes) + " lanes x " + std::to_string(buffers_per_lane_) +
                          " pinned buffers of " + FormatSize(o_.staging_chunk) + ", units >= " +
                          FormatSize(std::min(o_.staging_min_unit, o_.staging_chunk));
      choice_.detail = choice_.detail +
                       (o_.staging_pin_threads ? ", pinned threads" : "") +
                       (o_.staging_stream_to_host ? ", streaming stores to host" : "") +
                       (segments_ && o_.staging_nt_fill_below
                            ? ", non-temporal fill of segments < " +
                                  FormatSize(o_.staging_nt_fill_below)
                            : "") +
                       (segments_ && o_.staging_demote_fill_from
                            ? ", segments >= " + FormatSize(o_.staging_demote_fill_from) +
                                  " filled through the cache and demoted to the LLC"
                            : "") +
                       (segments_ && o_.staging_demote_drain_upto
                            ? ", D2H segments <= " + FormatSize(o_.staging_demote_drain_upto) +
                                  " demoted after draining"
                            : "") +
                       (segments_ && (o_.staging_plan_upto || o_.staging_plan_d2h_from)
                            ? ", single copies cut by plan: H2D " +
                                  (frontier_unit_ ? std::string("never (the fill frontier)")
                                   : o_.staging_plan_upto
                                       ? "up to " + FormatSize(o_.staging_plan_upto)
                                       : std::string("never")) +
                                  ", D2H " +
                                  (o_.staging_plan_d2h_from
                                       ? "from " + FormatSize(o_.staging_plan_d2h_from)
                                       : std::string("never")) +
                                  " (" + o_.staging_costs.Describe() + ")"
                            : "") +
                       pipeline_note;
      return Status::Ok();
    }
    case Path::kPageableAccess: {
      if (!cuda) return refuse(0, Status::Unavailable(gpu_.name() + " cannot launch the copy kernel"));
      auto a = gpu_.Attributes(0);
      if (!a.ok()) return refuse(0, a.status());
      if (!a->pageable_memory_access)
        return refuse(0, Status::Unsupported("the device reports PageableMemoryAccess 0"));
      return Status::Ok();
    }
    case Path::kPageable:
      if (!f.readable)
        return refuse(0, Status::Unsupported("the mapping is not readable by the CPU"));
      return Status::Ok();
  }
  return Status::Internal("unknown path");
}

TransferEngine::~TransferEngine() {
  lanes_.reset();  // joins the lane threads before their buffers and tickets go
  if (auto* cuda = dynamic_cast<cuda::CudaGpu*>(&gpu_)) {
    for (auto& t : tickets_) cuda->ReleaseTicket(t);
    cuda->FreeSignals(signals_);
    cuda->FreePieceRing(piece_ring_);
  }
  for (uint64_t off : registered_) gpu_.Unregister(mem_, off);
}

Status TransferEngine::StageOne(int lane, CopyDirection dir, uint64_t host_offset,
                                DeviceBuffer& dev, uint64_t dev_offset, uint64_t n,
                                double* copy_seconds) {
  HostMemory& pinned = *staging_[lane * buffers_per_lane_];
  auto host_copy = [&](bool in) -> Status {
    if (mem_.data() && pinned.data()) {
      if (in)
        std::memcpy(pinned.data(), mem_.data() + host_offset, n);
      else
        std::memcpy(mem_.data() + host_offset, pinned.data(), n);
      return Status::Ok();
    }
    std::vector<uint8_t> bounce(n);
    if (in) {
      RESMEM_RETURN_IF_ERROR(mem_.Read(host_offset, bounce.data(), n));
      return pinned.Write(0, bounce.data(), n);
    }
    RESMEM_RETURN_IF_ERROR(pinned.Read(0, bounce.data(), n));
    return mem_.Write(host_offset, bounce.data(), n);
  };
  if (dir == CopyDirection::kHostToDevice) {
    RESMEM_RETURN_IF_ERROR(host_copy(true));
    RESMEM_ASSIGN_OR_RETURN(CopyStats s, gpu_.Copy(dir, pinned, 0, dev, dev_offset, n));
    *copy_seconds += s.seconds;
    return Status::Ok();
  }
  RESMEM_ASSIGN_OR_RETURN(CopyStats s, gpu_.Copy(dir, pinned, 0, dev, dev_offset, n));
  *copy_seconds += s.seconds;
  return host_copy(false);
}

Status TransferEngine::LaneAsync(int lane, CopyDirection dir, uint64_t host_offset,
                                 DeviceBuffer& dev, uint64_t dev_offset, uint64_t length,
                                 uint64_t unit, uint64_t units, std::atomic<uint64_t>& next) {
  auto* cuda = static_cast<cuda::CudaGpu*>(&gpu_);
  const int nb = buffers_per_lane_;
  HostMemory** buf = reinterpret_cast<HostMemory**>(alloca(sizeof(HostMemory*) * nb));
  cuda::CudaGpu::CopyTicket* ticket = &tickets_[lane * nb];
  for (int b = 0; b < nb; ++b) buf[b] = staging_[lane * nb + b].get();
  auto span = [&](uint64_t u, uint64_t* off, uint64_t* n) {
    *off = u * unit;
    *n = std::min(unit, length - *off);
  };
  // Units this lane has in flight, oldest first: (unit, buffer). At most nb.
  struct InFlight { uint64_t unit; int buffer; };
  InFlight* ring = reinterpret_cast<InFlight*>(alloca(sizeof(InFlight) * nb));
  int head = 0, count = 0;
  Status st;
  if (dir == CopyDirection::kHostToDevice) {
    // Buffer k % nb: wait for its previous DMA, fill it, queue its DMA. The fill of one buffer
    // overlaps the DMAs of the others.
    for (uint64_t u; st.ok() && (u = next.fetch_add(1)) < units;) {
      if (count == nb) {
        st = cuda->WaitKeep(ticket[ring[head].buffer]);
        head = (head + 1) % nb;
        --count;
        if (!st.ok()) break;
      }
      const int b = (head + count) % nb;
      uint64_t off, n;
      span(u, &off, &n);
      std::memcpy(buf[b]->data(), mem_.data() + host_offset + off, n);
      st = cuda->CopyAsyncInto(ticket[b], dir, *buf[b], 0, dev, dev_offset + off, n);
      if (st.ok()) ring[(head + count++) % nb] = {u, b};
    }
    for (; count > 0; --count, head = (head + 1) % nb) {
      Status w = cuda->WaitKeep(ticket[ring[head].buffer]);
      if (st.ok()) st = w;
    }
    return st;
  }
  // Device to host: keep nb DMAs queued; copy the oldest out of its buffer while the rest run.
  bool more = true;
  for (;;) {
    while (more && st.ok() && count < nb) {
      uint64_t u = next.fetch_add(1);
      if (u >= units) {
        more = false;
        break;
      }
      const int b = (head + count) % nb;
      uint64_t off, n;
      span(u, &off, &n);
      st = cuda->CopyAsyncInto(ticket[b], dir, *buf[b], 0, dev, dev_offset + off, n);
      if (st.ok()) ring[(head + count++) % nb] = {u, b};
    }
    if (count == 0) return st;
    InFlight f = ring[head];
    head = (head + 1) % nb;
    --count;
    Status w = cuda->WaitKeep(ticket[f.buffer]);
    if (!w.ok() || !st.ok()) {
      for (; count > 0; --count, head = (head + 1) % nb) cuda->WaitKeep(ticket[ring[head].buffer]);
      return st.ok() ? w : st;
    }
    uint64_t off, n;
    span(f.unit, &off, &n);
    CpuCopy(mem_.data() + host_offset + off, buf[f.buffer]->data(), n,
               o_.staging_stream_to_host);
  }
}

namespace {
// The lane-side fields of a trace: when the filling lanes (1..) entered the job and the first of
// them started a piece; `returned_us` when the lane pool returned.
void FinishTrace(StagedTrace* t, double returned_us, const std::vector<double>& lane_enter,
                 const std::vector<double>& lane_first) {
  t->returned_us = returned_us;
  t->first_piece_us = -1;
  t->lane_enter_min_us = t->lane_enter_max_us = lane_enter.empty() ? 0 : lane_enter[0];
  for (size_t l = 1; l < lane_enter.size(); ++l) {
    t->lane_enter_min_us = l == 1 ? lane_enter[l] : std::min(t->lane_enter_min_us, lane_enter[l]);
    t->lane_enter_max_us = std::max(t->lane_enter_max_us, lane_enter[l]);
    if (lane_first[l] >= 0 && (t->first_piece_us < 0 || lane_first[l] < t->first_piece_us))
      t->first_piece_us = lane_first[l];
  }
}

// Words of stream signals and piece rings compare cyclically, as the driver's
// CU_STREAM_WAIT_VALUE_GEQ does.
inline bool Reached(const volatile uint32_t* word, uint32_t value) {
  return static_cast<int32_t>(*word - value) >= 0;
}

}  // namespace

void TransferEngine::RunLanes(int lanes, const std::function<void(int)>& job) {
  if (o_.staging_elastic) lanes_->RunElastic(lanes, job);
  else lanes_->Run(lanes, job);
}

void TransferEngine::ParkLanes() {
  if (lanes_) lanes_->Park();
}

uint64_t TransferEngine::lane_sleeps() const { return lanes_ ? lanes_->sleeps() : 0; }

// Segments (see TransferOptions::staging_segments). Lane 0 drives the DMAs; lanes 1.. move the
// bytes between the host mapping and the pinned segment buffers in pieces claimed from a
// per-segment counter, so a lane that finishes early helps with the next segment.
//   host to device: PumpSegments with one block.
//   device to host: lane 0 queues the DMAs of segments 0..S-1, lets the lanes copy a segment
//     out once its DMA finished, and reuses its buffer for segment i + S once they drained it.
Status TransferEngine::CopySegments(CopyDirection dir, uint64_t host_offset, DeviceBuffer& dev,
                                    uint64_t dev_offset, uint64_t length) {
  // Segments: at least staging_min_segments per copy where they can be >= staging_min_unit (so
  // the first fill and the last DMA, which do not overlap, stay short), at most the buffer size.
  const int min_segments = dir == CopyDirection::kDeviceToHost && o_.staging_min_segments_d2h > 0
                               ? o_.staging_min_segments_d2h
                               : o_.staging_min_segments;
  const uint64_t parts = static_cast<uint64_t>(std::max(1, min_segments));
  const uint64_t share = ((length + parts - 1) / parts + 4095) / 4096 * 4096;
  const uint64_t seg = std::min(o_.staging_chunk, std::max(o_.staging_min_unit, share));
  if (piece_ring_.ring && length % 16 == 0 &&
      (o_.staging_sm_copy ||
       (dir == CopyDirection::kHostToDevice && length <= o_.staging_sm_copy_upto))) {
    RESMEM_ASSIGN_OR_RETURN(const bool moved, CopyPieces(dir, host_offset, dev, dev_offset, length));
    if (moved) return Status::Ok();
    // The kernel had not started: a program's kernel holds the SMs. The DMAs copy it all.
    const double launched_us = trace_.launched_us, returned_us = trace_.returned_us;
    Status st = CopySegmentsByDma(dir, host_offset, dev, dev_offset, length, seg,
                                  /*cached_plan_only=*/true);
    if (o_.staging_trace) {
      trace_.sm_given_to_dmas = true;
      trace_.launched_us = launched_us;
      trace_.sm_abandoned_us = returned_us;
    }
    return st;
  }
  return CopySegmentsByDma(dir, host_offset, dev, dev_offset, length, seg);
}

Status TransferEngine::CopySegmentsByDma(CopyDirection dir, uint64_t host_offset,
                                         DeviceBuffer& dev, uint64_t dev_offset, uint64_t length,
                                         uint64_t seg, bool cached_plan_only) {
  if (dir == CopyDirection::kHostToDevice && frontier_unit_ > 0)
    return CopyFrontier(host_offset, dev, dev_offset, length);
  if (signals_.host != nullptr)
    return CopySignalled(dir, host_offset, dev, dev_offset, length, seg);
  if (o_.staging_trace) trace_ = StagedTrace();
  const bool planned = (dir == CopyDirection::kHostToDevice
                            ? length <= o_.staging_plan_upto
                            : o_.staging_plan_d2h_from != 0 && length >= o_.staging_plan_d2h_from) &&
                       (!cached_plan_only ||
                        plans_.count({dir == CopyDirection::kHostToDevice ? 0 : 1, length}));
  const std::vector<uint64_t>* plan = planned ? &PlanOf(dir, length) : nullptr;
  if (dir == CopyDirection::kHostToDevice) {
    bool handed = false;
    return PumpSegments(
        plan ? *std::max_element(plan->begin(), plan->end()) : seg,
        [&](QueuedBlock* b) -> Result<QueuePoll> {
          if (handed) return QueuePoll::kEnd;
          handed = true;
          *b = QueuedBlock{host_offset, &dev, dev_offset, length, 0};
          return QueuePoll::kBlock;
        },
        [](const QueuedBlock&) { return Status::Ok(); }, plan);
  }
  auto* cuda = static_cast<cuda::CudaGpu*>(&gpu_);
  const int nbuf = static_cast<int>(staging_.size());
  const int lanes = lanes_->size();
  std::vector<uint64_t> bounds;
  if (plan) {
    bounds.push_back(0);
    for (uint64_t n : *plan) bounds.push_back(bounds.back() + n);
  } else {
    bounds = DrainSegmentBounds(length, seg, o_.staging_d2h_tail);
  }
  const uint64_t nseg = bounds.size() - 1;
  auto seg_off = [&](uint64_t i) { return bounds[i]; };
  auto seg_len = [&](uint64_t i) { return bounds[i + 1] - bounds[i]; };
  std::unique_ptr<std::atomic<uint64_t>[]> claimed(new std::atomic<uint64_t>[nseg]);
  std::unique_ptr<std::atomic<uint64_t>[]> moved(new std::atomic<uint64_t>[nseg]);
  for (uint64_t i = 0; i < nseg; ++i) claimed[i].store(0), moved[i].store(0);
  std::atomic<uint64_t> ready{0};  // segments the lanes may work on: [0, ready)
  std::atomic<bool> abort{false};
  Status driver_status;
  uint8_t* host = mem_.data() + host_offset;
  // Trace (device to host): filled_us = the segment drained into the host mapping.
  const bool tracing = o_.staging_trace;
  const MicrosSince us;
  std::unique_ptr<std::atomic<double>[]> drained_us(tracing ? new std::atomic<double>[nseg] : nullptr);
  std::vector<double> lane_enter(tracing ? lanes : 0, 0), lane_first(tracing ? lanes : 0, -1);
  if (tracing) {
    trace_.bytes = length;
    trace_.segment_bytes = seg;
    trace_.lanes = lanes;
    trace_.segments = static_cast<int>(nseg);
    for (auto* v : {&trace_.filled_us, &trace_.issue_begin_us, &trace_.issued_us, &trace_.done_us})
      v->assign(nseg, 0);
    for (uint64_t i = 0; i < nseg; ++i) drained_us[i].store(0);
  }

  auto driver = [&]() -> Status {
    auto issue = [&](uint64_t i) {
      if (tracing) trace_.issue_begin_us[i] = us();
      Status st = cuda->CopyAsyncInto(tickets_[i % nbuf], dir, *staging_[i % nbuf], 0, dev,
                                      dev_offset + seg_off(i), seg_len(i), DmaStream(i));
      if (tracing) trace_.issued_us[i] = us();
      return st;
    };
    auto filled = [&](uint64_t i) {
      return moved[i].load(std::memory_order_acquire) >= seg_len(i);
    };
    // Polls rather than blocks, so the lanes copy a segment out the moment its DMA finished.
    uint64_t issued = 0, finished = 0;
    // Device to host: the first nbuf DMAs at once; segment i + nbuf once segment i is drained.
    for (; issued < std::min<uint64_t>(nbuf, nseg); ++issued) RESMEM_RETURN_IF_ERROR(issue(issued));
    while (finished < nseg) {
      if (finished < issued) {
        RESMEM_ASSIGN_OR_RETURN(bool done, cuda->Done(tickets_[finished % nbuf]));
        if (done) {
          if (tracing) trace_.done_us[finished] = us();
          ++finished;
          ready.store(finished, std::memory_order_release);
          continue;
        }
      }
      if (issued < nseg && filled(issued - nbuf)) {
        RESMEM_RETURN_IF_ERROR(issue(issued));
        ++issued;
        continue;
      }
      CpuRelax();
    }
    // The lanes still copy the last segments out; Run returns once they have.
    return Status::Ok();
  };

  // Lanes 1.. (and lane 0 once its DMAs are done) copy each segment out once its DMA finished.
  // With staging_prefetch_dst a lane claims its piece before the segment's DMA is done and
  // prefetches the piece's destination lines for writing while it waits.
  const bool prefetch_dst = o_.staging_prefetch_dst;
  auto drain = [&](int lane) {
    for (uint64_t i = 0; i < nseg; ++i) {
      auto wait_ready = [&] {
        while (ready.load(std::memory_order_acquire) <= i) {
          if (abort.load(std::memory_order_relaxed)) return false;
          CpuRelax();
        }
        return true;
      };
      if (!prefetch_dst && !wait_ready()) return;
      uint8_t* buf = staging_[i % nbuf]->data();
      const uint64_t n = seg_len(i);
      const uint64_t piece = SegmentPiece(n, lanes, o_.staging_min_piece);
      const uint64_t pieces = (n + piece - 1) / piece;
      const bool demote_drain =
          o_.staging_demote_drain_upto != 0 && n <= o_.staging_demote_drain_upto;
      for (uint64_t k; (k = claimed[i].fetch_add(1)) < pieces;) {
        const uint64_t at = k * piece;
        if (at >= n) break;
        const uint64_t len = std::min(piece, n - at);
        if (prefetch_dst) {
          PrefetchForWrite(host + seg_off(i) + at, len);
          if (!wait_ready()) return;
        }
        if (tracing && lane_first[lane] < 0) lane_first[lane] = us();
        CpuCopy(host + seg_off(i) + at, buf + at, len, o_.staging_stream_to_host);
        if (demote_drain) DemoteLines(buf + at, len);
        if (moved[i].fetch_add(len, std::memory_order_acq_rel) + len == n && tracing)
          drained_us[i].store(us(), std::memory_order_relaxed);
      }
    }
  };
  // Elastic: lane 0 returns only once every piece is drained (it drains the rest itself and
  // waits for pieces still being copied), so a lane the OS has not scheduled yet is not waited for.
  RunLanes(lanes, [&](int lane) {
    if (tracing) lane_enter[lane] = us();
    if (lane != 0) return drain(lane);
    driver_status = driver();
    if (!driver_status.ok()) {
      abort.store(true);
      return;
    }
    drain(0);
    for (uint64_t i = 0; i < nseg; ++i)
      while (moved[i].load(std::memory_order_acquire) < seg_len(i)) CpuRelax();
  });
  if (tracing) {
    for (uint64_t i = 0; i < nseg; ++i) trace_.filled_us[i] = drained_us[i].load();
    FinishTrace(&trace_, us(), lane_enter, lane_first);
  }
  return driver_status;
}

const std::vector<uint64_t>& TransferEngine::PlanOf(CopyDirection dir, uint64_t length) {
  const bool h2d = dir == CopyDirection::kHostToDevice;
  if (plans_.size() >= 64 && !plans_.count({h2d ? 0 : 1, length})) plans_.clear();
  auto [it, added] = plans_.try_emplace({h2d ? 0 : 1, length});
  if (added)
    it->second = PlanSegments(h2d ? PlanDirection::kHostToDevice : PlanDirection::kDeviceToHost,
                              length, o_.staging_chunk, o_.staging_costs)
                     .segments;
  return it->second;
}

// Host to device through the segment ring, for one block (Copy) or a queue of them (CopyQueue).
// Segments are numbered across blocks: segment g fills pinned buffer g % S (S buffers) once the
// DMA of segment g - S finished, so the lanes fill block k+1 while block k's DMAs drain. Lane 0
// (the driver) pulls blocks, cuts them into segments of at most seg_limit bytes, publishes each
// segment's descriptor in a small ring, issues a segment's DMA the moment its last piece is in,
// and polls the oldest DMA's event. Lanes 1.. claim pieces of a segment with a compare-and-swap
// on a word that carries the segment's number, so a lane that arrives after the segment was
// finished and its ring slot reused claims nothing.
Status TransferEngine::PumpSegments(uint64_t seg_limit,
                                    const std::function<Result<QueuePoll>(QueuedBlock*)>& next,
                                    const std::function<Status(const QueuedBlock&)>& arrived,
                                    const std::vector<uint64_t>* plan) {
  auto* cuda = static_cast<cuda::CudaGpu*>(&gpu_);
  const int nbuf = static_cast<int>(staging_.size());
  const int lanes = lanes_->size();
  const bool tracing = o_.staging_trace;
  const MicrosSince us;
  // Published segments not yet finished never exceed S (<= 16 buffers), so 64 slots suffice.
  constexpr uint64_t kRing = 64;
  constexpr int kPieceBits = 24;
  constexpr uint64_t kPieceMask = (1ull << kPieceBits) - 1;
  struct Desc {  // written by the driver before the segment is published, read by the lanes
    std::atomic<const uint8_t*> host{nullptr};
    std::atomic<uint64_t> len{0}, piece{0}, pieces{0};
    std::atomic<SegmentFill> fill{SegmentFill::kCached};
    DeviceBuffer* dev = nullptr;  // driver only
    uint64_t dev_offset = 0;      // driver only
    bool last_of_block = false;   // driver only
  };
  std::unique_ptr<Desc[]> desc(new Desc[kRing]);
  std::unique_ptr<std::atomic<uint64_t>[]> claimed(new std::atomic<uint64_t>[kRing]);
  std::unique_ptr<std::atomic<uint64_t>[]> moved(new std::atomic<uint64_t>[kRing]);
  for (uint64_t i = 0; i < kRing; ++i) claimed[i].store(~0ull), moved[i].store(0);
  std::atomic<uint64_t> ready{0};      // segments the lanes may fill: [0, ready)
  std::atomic<uint64_t> end{~0ull};    // number of segments, once the queue closed
  std::atomic<bool> abort{false};
  std::vector<double> lane_enter(tracing ? lanes : 0, 0), lane_first(tracing ? lanes : 0, -1);
  if (tracing) {
    trace_ = StagedTrace();
    trace_.segment_bytes = seg_limit;
    trace_.lanes = lanes;
  }
  Status driver_status;

  // Lane `lane` copies pieces of published segment g, claimed one at a time, until none is left
  // or it has copied `limit` of them. Any lane may, the driving lane too. Returns how many it
  // copied.
  auto fill_segment = [&](int lane, uint64_t g, uint64_t limit) -> uint64_t {
    const uint64_t slot = g % kRing;
    Desc& d = desc[slot];
    const uint8_t* src = d.host.load(std::memory_order_acquire);
    const uint64_t n = d.len.load(std::memory_order_acquire);
    const uint64_t piece = d.piece.load(std::memory_order_acquire);
    const uint64_t pieces = d.pieces.load(std::memory_order_acquire);
    const SegmentFill fill = d.fill.load(std::memory_order_acquire);
    uint8_t* buf = staging_[g % nbuf]->data();
    uint64_t v = claimed[slot].load(std::memory_order_acquire);
    uint64_t copied = 0;
    while (copied < limit) {
      // Another number in the slot: segment g is finished (and the slot reused); the
      // descriptor read above may then be stale, and is not used.
      if ((v >> kPieceBits) != g) break;
      const uint64_t k = v & kPieceMask;
      if (k >= pieces) break;
      if (!claimed[slot].compare_exchange_weak(v, v + 1, std::memory_order_acq_rel,
                                               std::memory_order_acquire))
        continue;
      const uint64_t at = k * piece;
      const uint64_t len = std::min(piece, n - at);
      if (tracing && lane_first[lane] < 0) lane_first[lane] = us();
      FillAs(fill, buf + at, src + at, len);
      moved[slot].fetch_add(len, std::memory_order_acq_rel);
      ++copied;
      v = claimed[slot].load(std::memory_order_acquire);
    }
    return copied;
  };

  auto driver = [&]() -> Status {
    uint64_t known = 0, issued = 0, finished = 0;
    bool closed = false, have_block = false;
    QueuedBlock cur;
    uint64_t cur_done = 0;
    std::deque<QueuedBlock> in_flight;  // blocks with segments published, oldest first
    auto publish_ready = [&] {
      ready.store(std::min(known, finished + nbuf), std::memory_order_release);
    };
    for (;;) {
      bool progress = false;
      // Publish segments while a buffer could take them.
      while (!closed && known < finished + nbuf) {
        if (!have_block) {
          QueuedBlock b;
          RESMEM_ASSIGN_OR_RETURN(QueuePoll p, next(&b));
          if (p == QueuePoll::kWait) break;
          if (p == QueuePoll::kEnd) {
            closed = true;
            end.store(known, std::memory_order_release);
            break;
          }
          if (b.dev == nullptr || b.length == 0)
            return Status::InvalidArgument("staged queue: a block needs a device buffer and a "
                                           "length > 0 (tag " + std::to_string(b.tag) + ")");
          RESMEM_RETURN_IF_ERROR(CheckSpan(mem_, b.host_offset, b.length, "staged queue"));
          cur = b;
          cur_done = 0;
          have_block = true;
          in_flight.push_back(b);
          if (tracing) trace_.bytes += b.length;
        }
        uint64_t n = std::min(seg_limit, cur.length - cur_done);
        if (plan && known < plan->size()) n = std::min(n, (*plan)[known]);
        else if (o_.staging_ramp_first && known < 32)
          n = std::min(n, std::max<uint64_t>(4096, o_.staging_ramp_first << known));
        const uint64_t slot = known % kRing;
        const uint64_t piece = SegmentPiece(n, lanes, o_.staging_min_piece);
        Desc& d = desc[slot];
        // First close the slot to the segment that used it last (tag `known`, no piece open),
        // then rewrite its descriptor (release stores). A lane 64 segments behind that read a
        // field of the new descriptor while about to claim from the old segment cannot then win
        // its compare-and-swap on the old tag: the close came first. So a claim that succeeds
        // used its own segment's descriptor (fill_segment reads it with acquire loads).
        claimed[slot].store((known << kPieceBits) | kPieceMask, std::memory_order_release);
        d.host.store(mem_.data() + cur.host_offset + cur_done, std::memory_order_release);
        d.len.store(n, std::memory_order_release);
        d.piece.store(piece, std::memory_order_release);
        d.pieces.store((n + piece - 1) / piece, std::memory_order_release);
        // By this segment's own size (the short last segment of a large copy and ramp
        // segments too: a cached fill that is not demoted leaves lines the DMA must snoop out
        // of the lanes' caches); the tail is the block's last B segments.
        d.fill.store(HostToDeviceFill(o_, n, cur.length - cur_done <= nbuf * n),
                     std::memory_order_release);
        d.dev = cur.dev;
        d.dev_offset = cur.dev_offset + cur_done;
        cur_done += n;
        d.last_of_block = cur_done == cur.length;
        if (d.last_of_block) have_block = false;
        moved[slot].store(0, std::memory_order_relaxed);
        claimed[slot].store(known << kPieceBits, std::memory_order_release);
        ++known;
        publish_ready();
        progress = true;
        if (tracing) {
          for (auto* v : {&trace_.filled_us, &trace_.issue_begin_us, &trace_.issued_us,
                          &trace_.done_us})
            v->push_back(0);
        }
      }
      // Issue the next segment's DMA once all its bytes are in.
      if (issued < known) {
        const uint64_t slot = issued % kRing;
        const uint64_t n = desc[slot].len.load(std::memory_order_relaxed);
        if (moved[slot].load(std::memory_order_acquire) >= n) {
          if (tracing) trace_.filled_us[issued] = trace_.issue_begin_us[issued] = us();
          RESMEM_RETURN_IF_ERROR(cuda->CopyAsyncInto(tickets_[issued % nbuf],
                                                     CopyDirection::kHostToDevice,
                                                     *staging_[issued % nbuf], 0, *desc[slot].dev,
                                                     desc[slot].dev_offset, n, DmaStream(issued)));
          if (tracing) trace_.issued_us[issued] = us();
          ++issued;
          continue;
        }
      }
      // Retire the oldest DMA: its buffer goes back to the lanes.
      if (finished < issued) {
        RESMEM_ASSIGN_OR_RETURN(bool done, cuda->Done(tickets_[finished % nbuf]));
        if (done) {
          if (tracing) trace_.done_us[finished] = us();
          const bool last = desc[finished % kRing].last_of_block;
          ++finished;
          publish_ready();
          if (last) {
            QueuedBlock b = in_flight.front();
            in_flight.pop_front();
            RESMEM_RETURN_IF_ERROR(arrived(b));
          }
          continue;
        }
      }
      if (closed && finished == known) return Status::Ok();
      // Until the first DMA is issued the driving lane has nothing else to do: it fills pieces of
      // the first segment beside the lanes, which are still entering (TransferOptions::
      // staging_driver_fills), one piece at a time so it issues the DMA the moment the last
      // piece is in.
      if (!progress && issued == 0 && known > 0 && o_.staging_driver_fills &&
          fill_segment(0, 0, 1) > 0) {
        if (tracing) ++trace_.driver_pieces;
        continue;
      }
      if (!progress) CpuRelax();
    }
  };

  // Elastic: the driver returns only once every DMA finished, so every fill is done; a lane the
  // OS has not scheduled by then is not waited for.
  RunLanes(lanes, [&](int lane) {
    if (tracing) lane_enter[lane] = us();
    if (lane == 0) {
      driver_status = driver();
      if (!driver_status.ok()) abort.store(true, std::memory_order_release);
      return;
    }
    uint64_t polls = 0;
    for (uint64_t g = 0;; ++g) {
      while (ready.load(std::memory_order_acquire) <= g) {
        if (g >= end.load(std::memory_order_acquire) || abort.load(std::memory_order_relaxed))
          return;
        CpuRelax();
        if (++polls % 4096 == 0) std::this_thread::yield();  // a queue waiting on its producer
      }
      fill_segment(lane, g, ~0ull);
    }
  });
  if (tracing) {
    trace_.segments = static_cast<int>(trace_.filled_us.size());
    FinishTrace(&trace_, us(), lane_enter, lane_first);
  }
  return driver_status;
}

// Host to device by the fill frontier (TransferOptions::staging_frontier). The ring is the staging
// buffers end to end (B x chunk bytes): copy byte x lives at ring position x % ring. Every lane
// claims units in order from one counter, waits until the DMA that last read the unit's ring
// space is done (copy bytes before x + n - ring retired), fills the unit (FillAs) and sets the
// ring unit's word to the unit's number. Lane 0 advances the frontier over those words,
// retires the DMAs in order and issues the next one (NextFrontierDma, at most two queued); while
// no DMA runs it fills units too (staging_driver_fills).
Status TransferEngine::CopyFrontier(uint64_t host_offset, DeviceBuffer& dev, uint64_t dev_offset,
                                    uint64_t length) {
  if (length == 0) return Status::Ok();
  // Two DMAs queued: one runs while the next is set up (dyn-run2: one queued lost 2-9 points,
  // three 1.6-4.5; docs/hil/2026-11-24-h100-staged8).
  constexpr int kDepth = 2;
  auto* cuda = static_cast<cuda::CudaGpu*>(&gpu_);
  const uint64_t chunk = o_.staging_chunk;
  const uint64_t nbuf = staging_.size();
  const uint64_t ring = chunk * nbuf;
  const FrontierShape shape = FrontierShapeOf(length, frontier_unit_, o_.staging_frontier_min_dma);
  const uint64_t unit = shape.unit;
  const uint64_t units = (length + unit - 1) / unit;
  // Non-temporal stores for copies under staging_nt_fill_below, cached and CLDEMOTEd from there
  // (dyn-run1: NT ahead at 1 MiB, 67.7% against 58.6, and 4 MiB, 76.6 against 74.4; 10-21
  // points behind from 16 MiB). By the copy's length: its DMAs are not known when it starts.
  const SegmentFill fill_as = length < o_.staging_nt_fill_below ? SegmentFill::kNonTemporal
                                                                 : SegmentFill::kCachedDemoted;
  const uint64_t base = frontier_seq_;
  frontier_seq_ += units + 1;
  const int depth = static_cast<int>(std::min<uint64_t>(kDepth, nbuf));
  const uint8_t* src = mem_.data() + host_offset;
  const int lanes = lanes_->size();
  std::atomic<uint64_t> next{0};     // units claimed
  std::atomic<uint64_t> retired{0};  // copy bytes whose DMA is done (a prefix)
  std::atomic<bool> abort{false};
  const bool tracing = o_.staging_trace;
  const MicrosSince us;
  std::vector<double> lane_enter(tracing ? lanes : 0, 0), lane_first(tracing ? lanes : 0, -1);
  if (tracing) {
    trace_ = StagedTrace();
    trace_.bytes = length;
    trace_.segment_bytes = unit;
    trace_.lanes = lanes;
    trace_.unit_bytes = unit;
    trace_.unit_begin_us.assign(units, 0);
    trace_.unit_filled_us.assign(units, 0);
  }
  auto space_free = [&](uint64_t u) {
    const uint64_t end = std::min(length, (u + 1) * unit);
    return end <= ring || retired.load(std::memory_order_acquire) >= end - ring;
  };
  auto fill = [&](int lane, uint64_t u) {
    const uint64_t at = u * unit, n = std::min(unit, length - at), r = at % ring;
    uint8_t* dst = staging_[r / chunk]->data() + r % chunk;
    if (tracing) {
      trace_.unit_begin_us[u] = us();  // each unit is one lane's: no two write one element
      if (lane_first[lane] < 0) lane_first[lane] = trace_.unit_begin_us[u];
    }
    FillAs(fill_as, dst, src + at, n);
    if (tracing) trace_.unit_filled_us[u] = us();
    frontier_words_[r / unit].v.store(base + u, std::memory_order_release);
  };
  auto unit_word = [&](uint64_t u) {
    return frontier_words_[(u * unit % ring) / unit].v.load(std::memory_order_acquire);
  };
  // Unit u's ring space holds `word` (a later unit's number) `when` it must still hold u.
  auto ring_broken = [&](uint64_t u, uint64_t word, const char* when) {
    return Status::Internal("fill frontier: the ring space of unit " + std::to_string(u) +
                            " (copy offset " + std::to_string(u * unit) + ") was refilled by unit " +
                            std::to_string(word - base) + " " + when +
                            ": a lane broke the ring's order; the copy's data on the device is "
                            "not whole");
  };
  Status status;
  // The late issue (staging_frontier_lead_us): when the queued DMAs are projected to end, from
  // the link's rate (bytes per us) measured by the earlier DMAs of 1 MiB and more.
  const double lead_us = o_.staging_frontier_lead_us;
  const double per_dma_us = o_.staging_costs.per_dma_us;
  double link_bpus =
      frontier_link_bpus_ > 0 ? frontier_link_bpus_ : o_.staging_costs.dma_gbps * 1e3;
  auto driver = [&]() -> Status {
    uint64_t frontier = 0, issued = 0, dmas = 0;
    struct Queued {
      uint64_t end, dma;  // copy end, DMA number
      double issued_us;
    };
    std::deque<Queued> flight;  // oldest first
    double queued_end_us = 0, last_done_us = 0;
    auto project = [&](double now) {  // the queued DMAs' end, after a retirement
      queued_end_us = now;
      uint64_t from = retired.load(std::memory_order_relaxed);
      for (const Queued& q : flight) {
        queued_end_us += static_cast<double>(q.end - from) / link_bpus + per_dma_us;
        from = q.end;
      }
    };
    while (retired.load(std::memory_order_relaxed) < length) {
      // Each unit's word is stamped with its number in this copy (base + u). A lane refills a
      // unit's ring space only once the DMA that read it is done, which the driver issues only
      // after seeing the word: a word already past base + u was refilled by a later lap before
      // its data went out. That breaks the ring's rule; the copy fails, naming the unit, rather
      // than waiting for a word that will never come.
      while (frontier < length) {
        const uint64_t want = base + frontier / unit;
        const uint64_t word = unit_word(frontier / unit);
        if (word != want) {
          if (word > want) return ring_broken(frontier / unit, word, "before its DMA was issued");
          break;
        }
        frontier = std::min(length, frontier + unit);
      }
      if (!flight.empty()) {
        RESMEM_ASSIGN_OR_RETURN(bool done, cuda->Done(tickets_[flight.front().dma % nbuf]));
        if (done) {
          const double now = us();
          if (tracing) trace_.done_us[flight.front().dma] = now;
          // Before the DMA's ring space is freed, none of its units may have been refilled.
          const uint64_t end = flight.front().end;
          const uint64_t was = retired.load(std::memory_order_relaxed);
          const uint64_t from = was / unit;
          const uint64_t to = (end + unit - 1) / unit;
          const uint64_t bad = FirstRefilledUnit(unit_word, base, from, to);
          if (bad < to) return ring_broken(bad, unit_word(bad), "while its DMA still read it");
          // The link's rate from this DMA's run: from its issue, or the DMA before it ending.
          const double ran = now - std::max(flight.front().issued_us, last_done_us) - per_dma_us;
          if (end - was >= (1u << 20) && ran > 0)
            link_bpus = 0.5 * link_bpus + 0.5 * static_cast<double>(end - was) / ran;
          last_done_us = now;
          retired.store(end, std::memory_order_release);
          flight.pop_front();
          project(now);
          continue;
        }
      }
      const bool hold = lead_us > 0 && !flight.empty() && us() < queued_end_us - lead_us;
      const uint64_t n = NextFrontierDma(issued, frontier, length, static_cast<int>(flight.size()),
                                         depth, shape.min_dma, chunk, hold);
      if (n > 0) {
        const uint64_t r = issued % ring;
        if (tracing) {
          trace_.filled_us.push_back(us());
          trace_.issue_begin_us.push_back(trace_.filled_us.back());
        }
        RESMEM_RETURN_IF_ERROR(cuda->CopyAsyncInto(tickets_[dmas % nbuf],
                                                   CopyDirection::kHostToDevice,
                                                   *staging_[r / chunk], r % chunk, dev,
                                                   dev_offset + issued, n, DmaStream(dmas)));
        if (tracing) {
          trace_.issued_us.push_back(us());
          trace_.done_us.push_back(0);
          trace_.dma_bytes.push_back(n);
        }
        const double now = us();
        queued_end_us = std::max(queued_end_us, now) + static_cast<double>(n) / link_bpus +
                        per_dma_us;
        flight.push_back({issued + n, dmas, now});
        issued += n;
        ++dmas;
        continue;
      }
      // Nothing to issue or retire, and no DMA running (the link idles: the first fill, or lanes
      // still waking up): fill the next unit (staging_driver_fills) if its ring space is free
      // already. Not while a DMA runs: with every lane filling, a unit takes a lane ~13 us on
      // the H100 host (16 lanes share ~40 GB/s), which the next DMA would wait for.
      uint64_t u = next.load(std::memory_order_relaxed);
      if (flight.empty() && o_.staging_driver_fills && u < units && space_free(u) &&
          next.compare_exchange_strong(u, u + 1, std::memory_order_relaxed)) {
        fill(0, u);
        if (tracing) ++trace_.driver_pieces;
        continue;
      }
      CpuRelax();
    }
    return Status::Ok();
  };
  RunLanes(lanes, [&](int lane) {
    if (tracing) lane_enter[lane] = us();
    if (lane == 0) {
      status = driver();
      if (!status.ok()) {
        abort.store(true, std::memory_order_release);
        // The DMAs already queued still read the ring: let them finish before it is refilled.
        for (auto& t : tickets_) (void)cuda->WaitKeep(t);
      }
      return;
    }
    for (uint64_t u; !abort.load(std::memory_order_relaxed) &&
                     (u = next.fetch_add(1, std::memory_order_relaxed)) < units;) {
      while (!space_free(u)) {
        if (abort.load(std::memory_order_relaxed)) return;
        CpuRelax();
      }
      fill(lane, u);
    }
  });
  if (status.ok()) frontier_link_bpus_ = link_bpus;
  if (tracing) {
    trace_.segments = static_cast<int>(trace_.filled_us.size());
    FinishTrace(&trace_, us(), lane_enter, lane_first);
  }
  return status;
}

// Pieces moved by the SMs (TransferOptions::staging_sm_copy, staging_sm_copy_upto). Piece p of
// the copy is numbered t = base + p + 1 and lives in ring slot p % slots. Lane 0 launches the
// kernel and watches it; every lane (lane 0 once the launch returned) claims pieces in order:
//   host to device: wait until the kernel consumed the slot's previous piece (p >= slots), fill
//                   the slot (cached stores, CLDEMOTEd), set the CPU word of the slot to t;
//   device to host: wait until the kernel set the slot's word to t, drain the slot into the
//                   mapping (CLDEMOTE the ring's lines), set the CPU word to t.
// The copy is done when the kernel's done word reads base + n and every piece was moved.
Result<bool> TransferEngine::CopyPieces(CopyDirection dir, uint64_t host_offset,
                                        DeviceBuffer& dev, uint64_t dev_offset, uint64_t length) {
  auto* cuda = static_cast<cuda::CudaGpu*>(&gpu_);
  cuda::CudaGpu::PieceRing& r = piece_ring_;
  const uint64_t piece = r.piece;
  const uint32_t slots = r.slots;
  const uint64_t n = (length + piece - 1) / piece;
  const uint32_t base = piece_seq_;
  piece_seq_ += static_cast<uint32_t>(n) + 1;
  constexpr uint32_t kStride = cuda::kWordStride;
  volatile uint32_t* cpu_words = r.words.host;
  volatile uint32_t* gpu_words = r.words.host + slots * kStride;
  volatile uint32_t* done_word = r.words.host + 2 * slots * kStride;
  volatile uint32_t* started_word = r.words.host + (2 * slots + 3) * kStride;
  volatile uint32_t* intent_word = r.words.host + (2 * slots + 4) * kStride;
  volatile uint32_t* verdict_word = r.words.host + (2 * slots + 5) * kStride;
  const bool h2d = dir == CopyDirection::kHostToDevice;
  uint8_t* host = mem_.data() + host_offset;
  uint8_t* ring = r.ring->data();
  std::atomic<uint64_t> next{0}, moved{0};
  std::atomic<bool> abort{false};
  Status status;
  bool given_to_dmas = false;
  const int lanes = lanes_->size();
  // Claims pieces in order and moves each between the mapping and its slot.
  auto move_pieces = [&]() {
    for (uint64_t p; !abort.load(std::memory_order_relaxed) &&
                     (p = next.fetch_add(1, std::memory_order_relaxed)) < n;) {
      const uint32_t slot = static_cast<uint32_t>(p % slots);
      const uint32_t t = base + static_cast<uint32_t>(p) + 1;
      const uint32_t want = h2d ? t - slots : t;
      if (!h2d || p >= slots) {
        while (!Reached(gpu_words + slot * kStride, want)) {
          if (abort.load(std::memory_order_relaxed)) return;
          CpuRelax();
        }
      }
      std::atomic_thread_fence(std::memory_order_acquire);
      const uint64_t at = p * piece;
      const uint64_t len = std::min(piece, length - at);
      uint8_t* buf = ring + static_cast<uint64_t>(slot) * piece;
      if (h2d) CpuCopy(buf, host + at, len, false);
      else CpuCopy(host + at, buf, len, o_.staging_stream_to_host);
      DemoteLines(buf, len);
      std::atomic_thread_fence(std::memory_order_release);
      cpu_words[slot * kStride] = t;
      moved.fetch_add(1, std::memory_order_acq_rel);
    }
  };
  const bool tracing = o_.staging_trace;
  const MicrosSince us;
  if (tracing) {
    trace_ = StagedTrace();
    trace_.bytes = length;
    trace_.segment_bytes = piece;
    trace_.lanes = lanes;
    trace_.sm_pieces = n;
  }
  auto job = [&](int lane) {
    if (lane != 0) return move_pieces();
    status = cuda->LaunchPieceCopy(r, dir, dev, dev_offset, length, base);
    if (status.ok()) {
      const double launched = us();
      if (tracing) trace_.launched_us = launched;
      // Go if the kernel runs within staging_sm_start_us of its launch. Else write the intent
      // to give the copy to the DMAs, fence, and look once more: a kernel not started by then
      // reads the intent and leaves whenever it runs; one that started meanwhile gives its
      // verdict, which decides (kernels.h, PieceCopyArgs). The other lanes fill meanwhile; on
      // the DMAs' way the pieces they filled are lost.
      bool go = true;
      if (o_.staging_sm_start_us > 0) {
        while (*started_word != base && us() - launched < o_.staging_sm_start_us) CpuRelax();
        if (*started_word != base) {
          *intent_word = base;
          std::atomic_thread_fence(std::memory_order_seq_cst);
          if (*started_word == base) {
            for (uint64_t polls = 1; !Reached(verdict_word, base); ++polls) {
              if (polls % 1024 == 0 && !(status = cuda->PieceStreamError(r)).ok()) break;
              CpuRelax();
            }
            go = status.ok() && *verdict_word == base;
          } else {
            go = false;
          }
        }
        if (tracing && go) trace_.sm_started_us = us();
      }
      if (status.ok() && !go) {
        given_to_dmas = true;
        abort.store(true);
        return;
      }
      if (status.ok()) move_pieces();  // the launching lane moves pieces too, once it decided
      bool all_moved = false;
      for (uint64_t polls = 1; status.ok(); ++polls) {
        if (!all_moved && moved.load(std::memory_order_acquire) == n) {
          all_moved = true;
          if (tracing) trace_.pieces_moved_us = us();
        }
        if (all_moved && Reached(done_word, base + static_cast<uint32_t>(n))) {
          // The blocks the kernel ran with, which it wrote before the done word.
          if (tracing) trace_.sm_blocks = static_cast<int>(done_word[2 * kStride]);
          break;
        }
        if (polls % 1024 == 0) {
          status = cuda->PieceStreamError(r);
          if (!status.ok()) break;
        }
        CpuRelax();
      }
    }
    if (!status.ok()) {
      abort.store(true);
      done_word[kStride] = base;  // a kernel still waiting for pieces gives up
      (void)cuda->SyncPieceStream(r);
    }
  };
  RunLanes(lanes, job);
  if (tracing) trace_.returned_us = us();
  RESMEM_RETURN_IF_ERROR(status);
  if (given_to_dmas) ++sm_given_to_dmas_;
  return !given_to_dmas;
}

// Signalled segments. The copy is cut into segments (small at the exposed end, see
// TransferOptions::staging_edge_segment); segment i uses buffer b = i % B and number t_i. Lane 0
// queues, for every segment at once, on its stream:
//   host to device: wait lane word b >= t_i; DMA buffer b -> device; stream word b = t_i
//   device to host: wait lane word b >= t_{i-B} (i >= B); DMA device -> buffer b; stream word b = t_i
// and then watches the stream words (and the stream's errors). Lanes 1.. move segment i's bytes
// once its buffer is free (host to device: stream word b >= t_{i-B}) or full (device to host:
// stream word b >= t_i) and the lane that completes the segment sets lane word b = t_i. On an
// error lane 0 stops the lanes and releases every wait it queued, so the stream always drains.
Status TransferEngine::CopySignalled(CopyDirection dir, uint64_t host_offset, DeviceBuffer& dev,
                                     uint64_t dev_offset, uint64_t length, uint64_t seg_limit) {
  auto* cuda = static_cast<cuda::CudaGpu*>(&gpu_);
  const bool h2d = dir == CopyDirection::kHostToDevice;
  const int nbuf = static_cast<int>(staging_.size());
  const int lanes = lanes_->size();
  const bool tracing = o_.staging_trace;
  // The segments: equal ones of seg_limit, the exposed end ramped up from staging_edge_segment.
  std::vector<uint64_t> seg_off, seg_len;
  {
    std::vector<uint64_t> sizes;
    uint64_t left = length, edge = o_.staging_edge_segment;
    while (left > 0) {
      uint64_t n = std::min(seg_limit, left);
      if (edge != 0 && edge < seg_limit) {
        n = std::min(n, edge);
        edge *= 2;
      }
      sizes.push_back(n);
      left -= n;
    }
    if (!h2d) std::reverse(sizes.begin(), sizes.end());
    uint64_t at = 0;
    for (uint64_t n : sizes) seg_off.push_back(at), seg_len.push_back(n), at += n;
  }
  const uint64_t nseg = seg_len.size();
  const uint32_t base = signal_seq_ + 1;  // t_i = base + i
  signal_seq_ += static_cast<uint32_t>(nseg);
  auto token = [&](uint64_t i) { return static_cast<uint32_t>(base + i); };
  volatile uint32_t* lane_word = signals_.host;
  volatile uint32_t* stream_word = signals_.host + nbuf;
  const MicrosSince us;
  if (tracing) {
    trace_ = StagedTrace();
    trace_.bytes = length;
    trace_.segment_bytes = seg_limit;
    trace_.lanes = lanes;
    trace_.segments = static_cast<int>(nseg);
    for (auto* v : {&trace_.filled_us, &trace_.issue_begin_us, &trace_.issued_us, &trace_.done_us})
      v->assign(nseg, 0);
  }
  std::unique_ptr<std::atomic<uint64_t>[]> claimed(new std::atomic<uint64_t>[nseg]);
  std::unique_ptr<std::atomic<uint64_t>[]> moved(new std::atomic<uint64_t>[nseg]);
  for (uint64_t i = 0; i < nseg; ++i) claimed[i].store(0), moved[i].store(0);
  std::atomic<bool> abort{false};
  std::vector<double> lane_enter(tracing ? lanes : 0, 0), lane_first(tracing ? lanes : 0, -1);
  uint8_t* host = mem_.data() + host_offset;
  Status driver_status;

  auto driver = [&]() -> Status {
    RESMEM_RETURN_IF_ERROR(cuda->BindThread());
    uint64_t queued = 0, seen = 0;
    Status st;
    for (; queued < nseg; ++queued) {
      const uint64_t i = queued;
      const int b = static_cast<int>(i % nbuf);
      // The lane word this segment's DMA needs: filled (host to device) or, for a reused buffer,
      // drained (device to host).
      const bool needs = h2d || i >= static_cast<uint64_t>(nbuf);
      const uint32_t need = h2d ? token(i) : token(i - nbuf);
      if (needs && !o_.staging_gpu_waits) {
        // Host-driven: queue the DMA once the lanes are done with the buffer. A stream wait that
        // the GPU finds unsatisfied costs ~60 us before it looks again (H100, r580:
        // docs/hil/2026-11-23-h100-staged3), more than the ~3 us of queueing it now.
        for (uint64_t polls = 0; !Reached(&lane_word[b], need);) {
          if (++polls % 256 == 0 && !(st = cuda->StreamError()).ok()) break;
          CpuRelax();
        }
        if (!st.ok()) break;
      }
      if (tracing) trace_.issue_begin_us[i] = us();
      if (needs && o_.staging_gpu_waits) st = cuda->WaitSignalAsync(signals_, b, need);
      if (st.ok())
        st = cuda->EnqueueCopy(dir, *staging_[b], 0, dev, dev_offset + seg_off[i], seg_len[i]);
      if (st.ok()) st = cuda->SetSignalAsync(signals_, nbuf + b, token(i));
      if (!st.ok()) break;
      if (tracing) trace_.issued_us[i] = us();
    }
    // Watch the stream's words; query the stream now and then for an error that would leave a
    // word unwritten.
    for (uint64_t polls = 0; st.ok() && seen < queued;) {
      if (Reached(&stream_word[seen % nbuf], token(seen))) {
        if (tracing) trace_.done_us[seen] = us();
        ++seen;
        continue;
      }
      if (++polls % 256 == 0) {
        st = cuda->StreamError();
        if (!st.ok()) break;
      }
      CpuRelax();
    }
    if (!st.ok()) {
      // Stop the lanes, then release every wait queued on the stream so it drains.
      abort.store(true, std::memory_order_release);
      for (int b = 0; b < nbuf; ++b) lane_word[b] = token(nseg - 1);
      Status sync = cuda->SyncStream();
      (void)sync;  // the first error is the one reported
      return st;
    }
    return cuda->SyncStream();
  };

  lanes_->Run(lanes, [&](int lane) {
    if (tracing) lane_enter[lane] = us();
    if (lane == 0) {
      driver_status = driver();
      return;
    }
    for (uint64_t g = 0; g < nseg; ++g) {
      const int b = static_cast<int>(g % nbuf);
      // Wait for the buffer: free (host to device) or full (device to host).
      if (h2d ? g >= static_cast<uint64_t>(nbuf) : true) {
        const uint32_t want = h2d ? token(g - nbuf) : token(g);
        while (!Reached(&stream_word[b], want)) {
          if (abort.load(std::memory_order_relaxed)) return;
          CpuRelax();
        }
      }
      const uint64_t n = seg_len[g];
      const uint64_t piece = SegmentPiece(n, lanes, o_.staging_min_piece);
      const uint64_t pieces = (n + piece - 1) / piece;
      // Host to device: HostToDeviceFill, the tail being the copy's last B segments.
      const SegmentFill fill = HostToDeviceFill(o_, n, g + nbuf >= nseg);
      uint8_t* buf = staging_[b]->data();
      uint8_t* at_host = host + seg_off[g];
      for (uint64_t k; (k = claimed[g].fetch_add(1, std::memory_order_relaxed)) < pieces;) {
        const uint64_t at = k * piece;
        const uint64_t len = std::min(piece, n - at);
        if (tracing && lane_first[lane] < 0) lane_first[lane] = us();
        if (h2d) {
          FillAs(fill, buf + at, at_host + at, len);
        } else {
          CpuCopy(at_host + at, buf + at, len, o_.staging_stream_to_host);
          if (o_.staging_demote_drain_upto != 0 && n <= o_.staging_demote_drain_upto)
            DemoteLines(buf + at, len);
        }
        if (moved[g].fetch_add(len, std::memory_order_acq_rel) + len == n) {
          // The last piece in: publish the segment to the stream (x86 keeps this store after
          // the other lanes' bytes, which the acq_rel add ordered before it).
          std::atomic_thread_fence(std::memory_order_seq_cst);
          lane_word[b] = token(g);
          if (tracing) trace_.filled_us[g] = us();
        }
      }
    }
  });
  if (tracing) FinishTrace(&trace_, us(), lane_enter, lane_first);
  return driver_status;
}

Status TransferEngine::CopyQueue(const std::function<Result<QueuePoll>(QueuedBlock*)>& next,
                                 const std::function<Status(const QueuedBlock&)>& arrived) {
  if (choice_.path == Path::kStaged && segments_ && mem_.data() != nullptr)
    return PumpSegments(o_.staging_queue_segment ? std::min(o_.staging_queue_segment,
                                                            o_.staging_chunk)
                                                 : o_.staging_chunk,
                        next, arrived);
  // Any other path: one Copy after another.
  for (;;) {
    QueuedBlock b;
    RESMEM_ASSIGN_OR_RETURN(QueuePoll p, next(&b));
    if (p == QueuePoll::kEnd) return Status::Ok();
    if (p == QueuePoll::kWait) {
      std::this_thread::yield();
      continue;
    }
    if (b.dev == nullptr)
      return Status::InvalidArgument("queue: block " + std::to_string(b.tag) +
                                     " has no device buffer");
    RESMEM_RETURN_IF_ERROR(
        Copy(CopyDirection::kHostToDevice, b.host_offset, *b.dev, b.dev_offset, b.length)
            .status());
    RESMEM_RETURN_IF_ERROR(arrived(b));
  }
}

Result<CopyStats> TransferEngine::CopyStaged(CopyDirection dir, uint64_t host_offset,
                                             DeviceBuffer& dev, uint64_t dev_offset,
                                             uint64_t length) {
  if (segments_ && mem_.data() != nullptr)
    RESMEM_RETURN_IF_ERROR(CopySegments(dir, host_offset, dev, dev_offset, length));
  if (segments_) {
    CopyStats s;
    s.bytes = length;
    if (mem_.data() != nullptr) return s;
    return Status::InvalidArgument("staged segments need an addressable mapping: " +
                                   mem_.Describe());
  }
  const int lane_count = static_cast<int>(staging_.size()) / buffers_per_lane_;
  // Units small enough that every lane gets staging_units_per_lane of them (a 16 MiB block on 16
  // lanes x 2: 512 KiB units), at least staging_min_unit (smaller DMAs lose bandwidth: FACTS.md,
  // pinned 256 KiB copies reach 21 GB/s, 4 MiB 49 GB/s), at most the buffer size.
  const uint64_t parts = static_cast<uint64_t>(lane_count) * std::max(1, o_.staging_units_per_lane);
  const uint64_t per = (length + parts - 1) / parts;
  const uint64_t unit = std::min(
      o_.staging_chunk, std::max<uint64_t>(o_.staging_min_unit, (per + 65535) / 65536 * 65536));
  const uint64_t units = (length + unit - 1) / unit;
  int lanes = static_cast<int>(std::min<uint64_t>(lane_count, units));
  const bool async = async_ && mem_.data() != nullptr;
  std::atomic<uint64_t> next{0};
  std::vector<Status> errors(lanes);
  std::vector<double> seconds(lanes, 0);
  lanes_->Run(lanes, [&](int lane) {
    if (async) {
      Status st = LaneAsync(lane, dir, host_offset, dev, dev_offset, length, unit, units, next);
      if (!st.ok()) {
        errors[lane] = st;
        next.store(units);
      }
      return;
    }
    for (uint64_t u; (u = next.fetch_add(1)) < units;) {
      uint64_t off = u * unit;
      uint64_t n = std::min(unit, length - off);
      Status st = StageOne(lane, dir, host_offset + off, dev, dev_offset + off, n, &seconds[lane]);
      if (!st.ok()) {
        errors[lane] = st;
        next.store(units);
        return;
      }
    }
  });
  for (const auto& st : errors)
    if (!st.ok()) return st;
  CopyStats s;
  s.bytes = length;
  for (double x : seconds) s.seconds += x;  // used on a virtual clock only (one lane)
  return s;
}

Result<CopyStats> TransferEngine::Copy(CopyDirection dir, uint64_t host_offset, DeviceBuffer& dev,
                                       uint64_t dev_offset, uint64_t length) {
  RESMEM_RETURN_IF_ERROR(CheckSpan(mem_, host_offset, length, "transfer"));
  double t0 = clock_.NowSeconds();
  CopyStats out;
  out.bytes = length;
  double modelled = 0;
  switch (choice_.path) {
    case Path::kRegisteredChunked: {
      // Split at piece boundaries: one DMA never spans two registrations.
      for (uint64_t done = 0; done < length;) {
        uint64_t at = host_offset + done;
        uint64_t piece_end = (at / o_.register_chunk + 1) * o_.register_chunk;
        uint64_t n = std::min(length - done, piece_end - at);
        RESMEM_ASSIGN_OR_RETURN(CopyStats s, gpu_.Copy(dir, mem_, at, dev, dev_offset + done, n));
        modelled += s.seconds;
        done += n;
      }
      break;
    }
    case Path::kStaged: {
      RESMEM_ASSIGN_OR_RETURN(CopyStats s, CopyStaged(dir, host_offset, dev, dev_offset, length));
      modelled = s.seconds;
      break;
    }
    case Path::kZeroCopyMapped:
    case Path::kPageableAccess: {
      auto* cuda = dynamic_cast<cuda::CudaGpu*>(&gpu_);
      RESMEM_ASSIGN_OR_RETURN(CopyStats s,
                              cuda->CopyMapped(dir, mem_, host_offset, dev, dev_offset, length));
      modelled = s.seconds;
      break;
    }
    default: {
      RESMEM_ASSIGN_OR_RETURN(CopyStats s,
                              gpu_.Copy(dir, mem_, host_offset, dev, dev_offset, length));
      modelled = s.seconds;
    }
  }
  double wall = clock_.NowSeconds() - t0;
  // Real time when the clock is real; on a virtual clock the modelled time (the sim may or may
  // not charge the shared clock, so the larger of the two is the copy's cost).
  out.seconds = clock_.is_virtual() ? std::max(wall, modelled) : wall;
  out.path = PathName(choice_.path);
  return out;
}

}  // namespace resmem::transfer
