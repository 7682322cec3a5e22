#include "engine/transfer/transfer_engine.h"

#include <algorithm>
#include <cstring>

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

uint32_t BaseFlags(const MappingFacts& f) { return f.writable ? 0 : kRegisterReadOnly; }

}  // namespace

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
  if (options.staging_lanes < 1 || options.staging_chunk < 4096 || options.register_chunk < 4096)
    return Status::InvalidArgument(
        "transfer options: staging_lanes must be >= 1 and chunks >= 4 KiB");
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
      uint32_t extra = p == Path::kZeroCopyMapped ? kRegisterMapped : 0;
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
      uint32_t flags = BaseFlags(f) | (f.vm_pfnmap ? kRegisterIoMemory : 0);
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
      buffers_per_lane_ = async_ ? 2 : 1;
      for (int i = 0; i < lanes * buffers_per_lane_; ++i) {
        auto buf = gpu_.AllocPinned(o_.staging_chunk, 0);
        if (!buf.ok()) {
          staging_.clear();
          return refuse(0, buf.status());
        }
        staging_.push_back(std::move(buf).value());
      }
      for (int i = 1; i < lanes; ++i)
        workers_.emplace_back([this, i] {
          uint64_t seen = 0;
          for (;;) {
            std::function<void(int)> job;
            {
              std::unique_lock<std::mutex> l(mu_);
              cv_.wait(l, [&] { return stop_ || generation_ != seen; });
              if (stop_) return;
              seen = generation_;
              if (i >= job_lanes_) continue;
              job = job_;
            }
            job(i);
            std::lock_guard<std::mutex> l(mu_);
            if (--pending_ == 0) cv_.notify_all();
          }
        });
      choice_.detail = std::to_string(lanes) + " lanes x " + std::to_string(buffers_per_lane_) +
                       " pinned buffers of " + FormatSize(o_.staging_chunk);
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
  StopLanes();
  for (uint64_t off : registered_) gpu_.Unregister(mem_, off);
}

void TransferEngine::StopLanes() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

void TransferEngine::RunOnLanes(int lanes, const std::function<void(int)>& job) {
  if (lanes > 1) {
    std::lock_guard<std::mutex> l(mu_);
    job_ = job;
    job_lanes_ = lanes;
    pending_ = lanes - 1;
    ++generation_;
  }
  cv_.notify_all();
  job(0);
  if (lanes > 1) {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return pending_ == 0; });
  }
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
  HostMemory* buf[2] = {staging_[lane * 2].get(), staging_[lane * 2 + 1].get()};
  using Ticket = cuda::CudaGpu::CopyTicket;
  auto span = [&](uint64_t u, uint64_t* off, uint64_t* n) {
    *off = u * unit;
    *n = std::min(unit, length - *off);
  };
  if (dir == CopyDirection::kHostToDevice) {
    Ticket pending[2];
    int k = 0;
    Status st;
    for (uint64_t u; st.ok() && (u = next.fetch_add(1)) < units; ++k) {
      const int b = k & 1;
      if (pending[b].event) st = cuda->Wait(pending[b]);
      if (!st.ok()) break;
      uint64_t off, n;
      span(u, &off, &n);
      std::memcpy(buf[b]->data(), mem_.data() + host_offset + off, n);
      auto t = cuda->CopyAsync(dir, *buf[b], 0, dev, dev_offset + off, n);
      if (!t.ok()) st = t.status(); else pending[b] = *t;
    }
    for (auto& p : pending)
      if (p.event) {
        Status w = cuda->Wait(p);
        if (st.ok()) st = w;
      }
    return st;
  }
  // Device to host: the DMA of the next unit runs while this one is copied out.
  uint64_t cur = next.fetch_add(1);
  if (cur >= units) return Status::Ok();
  uint64_t off, n;
  span(cur, &off, &n);
  RESMEM_ASSIGN_OR_RETURN(Ticket cur_t, cuda->CopyAsync(dir, *buf[0], 0, dev, dev_offset + off, n));
  int b = 0;
  for (;;) {
    uint64_t nxt = next.fetch_add(1);
    Ticket nxt_t;
    if (nxt < units) {
      uint64_t noff, nn;
      span(nxt, &noff, &nn);
      auto t = cuda->CopyAsync(dir, *buf[1 - b], 0, dev, dev_offset + noff, nn);
      if (!t.ok()) {
        cuda->Wait(cur_t);
        return t.status();
      }
      nxt_t = *t;
    }
    Status w = cuda->Wait(cur_t);
    if (!w.ok()) {
      if (nxt_t.event) cuda->Wait(nxt_t);
      return w;
    }
    span(cur, &off, &n);
    std::memcpy(mem_.data() + host_offset + off, buf[b]->data(), n);
    if (nxt >= units) return Status::Ok();
    cur = nxt;
    cur_t = nxt_t;
    b = 1 - b;
  }
}

Result<CopyStats> TransferEngine::CopyStaged(CopyDirection dir, uint64_t host_offset,
                                             DeviceBuffer& dev, uint64_t dev_offset,
                                             uint64_t length) {
  const int lane_count = static_cast<int>(staging_.size()) / buffers_per_lane_;
  // Units small enough that every lane gets two (a 16 MiB block on 16 lanes: 512 KiB units),
  // at least 256 KiB (smaller DMAs lose bandwidth), at most the buffer size.
  const uint64_t per = (length + 2 * lane_count - 1) / (2 * lane_count);
  const uint64_t unit =
      std::min(o_.staging_chunk, std::max<uint64_t>(256 << 10, (per + 65535) / 65536 * 65536));
  const uint64_t units = (length + unit - 1) / unit;
  int lanes = static_cast<int>(std::min<uint64_t>(lane_count, units));
  const bool async = async_ && mem_.data() != nullptr;
  std::atomic<uint64_t> next{0};
  std::vector<Status> errors(lanes);
  std::vector<double> seconds(lanes, 0);
  RunOnLanes(lanes, [&](int lane) {
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
