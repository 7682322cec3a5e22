#include "engine/transfer/lane_copy.h"

#include <alloca.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace resmem::transfer {

// A lane's pinned buffers and tickets (lane-major in Staging), and its units in flight, oldest
// first: (unit, buffer), at most nb. The arrays live on the lane's stack (LaneAsync).
struct LaneCopy::LaneBuffers {
  struct InFlight {
    uint64_t unit;
    int buffer;
  };
  cuda::CudaGpu* cuda;
  int nb;
  HostMemory** buf;
  cuda::CudaGpu::CopyTicket* ticket;
  InFlight* ring;
  uint64_t unit, units;
  // Unit u's span of the copy: [*off, +*n).
  void Span(uint64_t u, uint64_t length, uint64_t* off, uint64_t* n) const {
    *off = u * unit;
    *n = std::min(unit, length - *off);
  }
};

Result<CopyOutcome> LaneCopy::Copy(const CopyRequest& c) {
  const uint64_t length = c.length;
  const int lane_count = static_cast<int>(s_.buffers.size()) / s_.buffers_per_lane;
  // Units small enough that every lane gets staging_units_per_lane of them (a 16 MiB block on 16
  // lanes x 2: 512 KiB units), at least staging_min_unit (smaller DMAs lose bandwidth: FACTS.md,
  // pinned 256 KiB copies reach 21 GB/s, 4 MiB 49 GB/s), at most the buffer size.
  const uint64_t parts =
      static_cast<uint64_t>(lane_count) * std::max(1, s_.o.staging_units_per_lane);
  const uint64_t per = (length + parts - 1) / parts;
  const uint64_t unit = std::min(
      s_.o.staging_chunk, std::max<uint64_t>(s_.o.staging_min_unit, (per + 65535) / 65536 * 65536));
  const uint64_t units = (length + unit - 1) / unit;
  int lanes = static_cast<int>(std::min<uint64_t>(lane_count, units));
  const bool async = s_.async && s_.mem.data() != nullptr;
  std::atomic<uint64_t> next{0};
  std::vector<Status> errors(lanes);
  std::vector<double> seconds(lanes, 0);
  s_.lanes->Run(lanes, [&](int lane) {
    if (async) {
      Status st = LaneAsync(lane, c, unit, units, next);
      if (!st.ok()) {
        errors[lane] = st;
        next.store(units);
      }
      return;
    }
    for (uint64_t u; (u = next.fetch_add(1)) < units;) {
      uint64_t off = u * unit;
      uint64_t n = std::min(unit, length - off);
      Status st = StageOne(lane, c, off, n, &seconds[lane]);
      if (!st.ok()) {
        errors[lane] = st;
        next.store(units);
        return;
      }
    }
  });
  for (const auto& st : errors)
    if (!st.ok()) return st;
  CopyOutcome out;
  for (double x : seconds) out.modelled_seconds += x;  // used on a virtual clock only (one lane)
  return out;
}

Status LaneCopy::StageOne(int lane, const CopyRequest& c, uint64_t off, uint64_t n,
                          double* copy_seconds) {
  HostMemory& pinned = *s_.buffers[lane * s_.buffers_per_lane];
  HostMemory& mem = s_.mem;
  const uint64_t host_offset = c.host_offset + off;
  auto host_copy = [&](bool in) -> Status {
    if (mem.data() && pinned.data()) {
      if (in)
        std::memcpy(pinned.data(), mem.data() + host_offset, n);
      else
        std::memcpy(mem.data() + host_offset, pinned.data(), n);
      return Status::Ok();
    }
    std::vector<uint8_t> bounce(n);
    if (in) {
      RESMEM_RETURN_IF_ERROR(mem.Read(host_offset, bounce.data(), n));
      return pinned.Write(0, bounce.data(), n);
    }
    RESMEM_RETURN_IF_ERROR(pinned.Read(0, bounce.data(), n));
    return mem.Write(host_offset, bounce.data(), n);
  };
  if (c.dir == CopyDirection::kHostToDevice) {
    RESMEM_RETURN_IF_ERROR(host_copy(true));
    RESMEM_ASSIGN_OR_RETURN(CopyStats s,
                            s_.gpu.Copy(c.dir, pinned, 0, *c.dev, c.dev_offset + off, n));
    *copy_seconds += s.seconds;
    return Status::Ok();
  }
  RESMEM_ASSIGN_OR_RETURN(CopyStats s,
                          s_.gpu.Copy(c.dir, pinned, 0, *c.dev, c.dev_offset + off, n));
  *copy_seconds += s.seconds;
  return host_copy(false);
}

Status LaneCopy::LaneAsync(int lane, const CopyRequest& c, uint64_t unit, uint64_t units,
                           std::atomic<uint64_t>& next) {
  LaneBuffers r;
  r.cuda = s_.cuda;
  r.nb = s_.buffers_per_lane;
  r.buf = reinterpret_cast<HostMemory**>(alloca(sizeof(HostMemory*) * r.nb));
  r.ticket = &s_.tickets[lane * r.nb];
  for (int b = 0; b < r.nb; ++b) r.buf[b] = s_.buffers[lane * r.nb + b].get();
  r.ring = reinterpret_cast<LaneBuffers::InFlight*>(alloca(sizeof(LaneBuffers::InFlight) * r.nb));
  r.unit = unit;
  r.units = units;
  return c.dir == CopyDirection::kHostToDevice ? LaneToDevice(r, c, next)
                                                : LaneFromDevice(r, c, next);
}

// Buffer k % nb: wait for its previous DMA, fill it, queue its DMA. The fill of one buffer
// overlaps the DMAs of the others.
Status LaneCopy::LaneToDevice(LaneBuffers& r, const CopyRequest& c, std::atomic<uint64_t>& next) {
  const int nb = r.nb;
  int head = 0, count = 0;
  Status st;
  for (uint64_t u; st.ok() && (u = next.fetch_add(1)) < r.units;) {
    if (count == nb) {
      st = r.cuda->WaitKeep(r.ticket[r.ring[head].buffer]);
      head = (head + 1) % nb;
      --count;
      if (!st.ok()) break;
    }
    const int b = (head + count) % nb;
    uint64_t off, n;
    r.Span(u, c.length, &off, &n);
    std::memcpy(r.buf[b]->data(), s_.mem.data() + c.host_offset + off, n);
    st = r.cuda->CopyAsyncInto(r.ticket[b], c.dir, *r.buf[b], 0, *c.dev, c.dev_offset + off, n);
    if (st.ok()) r.ring[(head + count++) % nb] = {u, b};
  }
  for (; count > 0; --count, head = (head + 1) % nb) {
    Status w = r.cuda->WaitKeep(r.ticket[r.ring[head].buffer]);
    if (st.ok()) st = w;
  }
  return st;
}

// Device to host: keep nb DMAs queued; copy the oldest out of its buffer while the rest run.
Status LaneCopy::LaneFromDevice(LaneBuffers& r, const CopyRequest& c,
                                std::atomic<uint64_t>& next) {
  const int nb = r.nb;
  int head = 0, count = 0;
  Status st;
  bool more = true;
  for (;;) {
    while (more && st.ok() && count < nb) {
      uint64_t u = next.fetch_add(1);
      if (u >= r.units) {
        more = false;
        break;
      }
      const int b = (head + count) % nb;
      uint64_t off, n;
      r.Span(u, c.length, &off, &n);
      st = r.cuda->CopyAsyncInto(r.ticket[b], c.dir, *r.buf[b], 0, *c.dev, c.dev_offset + off, n);
      if (st.ok()) r.ring[(head + count++) % nb] = {u, b};
    }
    if (count == 0) return st;
    LaneBuffers::InFlight f = r.ring[head];
    head = (head + 1) % nb;
    --count;
    Status w = r.cuda->WaitKeep(r.ticket[f.buffer]);
    if (!w.ok() || !st.ok()) {
      for (; count > 0; --count, head = (head + 1) % nb)
        r.cuda->WaitKeep(r.ticket[r.ring[head].buffer]);
      return st.ok() ? w : st;
    }
    uint64_t off, n;
    r.Span(f.unit, c.length, &off, &n);
    CpuCopy(s_.mem.data() + c.host_offset + off, r.buf[f.buffer]->data(), n,
            s_.o.staging_stream_to_host);
  }
}

}  // namespace resmem::transfer
