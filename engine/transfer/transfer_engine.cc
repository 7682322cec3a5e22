#include "engine/transfer/transfer_engine.h"

#include <algorithm>
#include <string>
#include <thread>

#include "engine/transfer/copy_strategy.h"
#include "engine/transfer/direct_copy.h"
#include "engine/transfer/segment_pump.h"
#include "engine/transfer/staged_path.h"
#include "engine/transfer/staging.h"

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

// "transfer options: <what> (<option>) must be <rule>, got <value>": a refused option's message.
Status Refused(const std::string& what, const std::string& rule, const std::string& got) {
  return Status::InvalidArgument("transfer options: " + what + " must be " + rule + ", got " + got);
}

// Every option TransferEngine::Open refuses, checked in the order the help lists them; the
// message names the option and the value.
Status CheckOptions(const TransferOptions& o) {
  using std::to_string;
  if (o.staging_lanes < 1 || o.staging_lanes > 1024)
    return Refused("staging lanes (--lanes)", "1..1024", to_string(o.staging_lanes));
  if (o.staging_chunk < 4096)
    return Refused("the pinned buffer (--chunk)", "at least 4 KiB", to_string(o.staging_chunk));
  if (o.staging_chunk_h2d % 4096)
    return Refused("the host-to-device segment (--chunk-h2d)",
                   "a multiple of 4 KiB, or 0 for the buffer size (--chunk)",
                   to_string(o.staging_chunk_h2d));
  if (o.staging_buffers < 2 || o.staging_buffers > 16)
    return Refused("the pinned buffers (--buffers)",
                   "2..16 (one fills while another is in DMA)", to_string(o.staging_buffers));
  if (o.staging_min_unit < 4096)
    return Refused("the smallest unit (--min-unit)", "at least 4 KiB",
                   to_string(o.staging_min_unit));
  if (o.staging_spin_us < 0)
    return Refused("the lanes' spin (--spin-us)", ">= 0 us", to_string(o.staging_spin_us));
  if (o.staging_min_segments < 1)
    return Refused("segments per copy (--min-segments)", "at least 1",
                   to_string(o.staging_min_segments));
  if (o.staging_ramp_first % 4096)
    return Refused("the first segment of a ramp (--ramp-first)", "a multiple of 4 KiB (0: none)",
                   to_string(o.staging_ramp_first));
  if (o.staging_min_segments_d2h < 0)
    return Refused("segments per device-to-host copy (--min-segments-d2h)",
                   "0 (--min-segments) or more", to_string(o.staging_min_segments_d2h));
  if (o.staging_edge_segment % 4096)
    return Refused("the edge segment (--edge-segment)", "a multiple of 4 KiB (0: none)",
                   to_string(o.staging_edge_segment));
  if (o.staging_sm_piece < 4096 || o.staging_sm_piece % 4096)
    return Refused("the SM copy's piece (--sm-piece)", "a multiple of 4 KiB",
                   to_string(o.staging_sm_piece));
  if (o.staging_sm_blocks < 1)
    return Refused("the SM copy's blocks (--sm-blocks)", "at least 1",
                   to_string(o.staging_sm_blocks));
  if (!(o.staging_sm_start_us >= 0))
    return Refused("the SM copy's start wait (--sm-start-us)",
                   "0 (wait as long as it takes) or more microseconds",
                   to_string(o.staging_sm_start_us));
  if (o.staging_frontier_unit < 4096 || o.staging_frontier_unit % 4096)
    return Refused("the fill frontier's unit (--frontier-unit)", "a multiple of 4 KiB",
                   to_string(o.staging_frontier_unit));
  if (!(o.staging_frontier_lead_us >= 0))
    return Refused("the fill frontier's lead (--frontier-lead-us)",
                   "0 (issue at once) or more microseconds", to_string(o.staging_frontier_lead_us));
  if (o.register_chunk < 4096)
    return Refused("registered-chunked's piece (register_chunk)", "at least 4 KiB",
                   to_string(o.register_chunk));
  return Status::Ok();
}

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
  RESMEM_RETURN_IF_ERROR(CheckOptions(options));
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

TransferEngine::TransferEngine(Gpu& gpu, HostMemory& mem, Clock& clock, TransferOptions o)
    : gpu_(gpu), mem_(mem), clock_(clock), o_(std::move(o)) {}

Status TransferEngine::TryPath(Path p) {
  const MappingFacts& f = mem_.facts();
  const Refuse refuse = [&](uint32_t flags, const Status& st) {
    choice_.refusals.push_back(Refusal(p, f, flags, st));
    return st;
  };
  if (p != Path::kStaged) {
    RESMEM_ASSIGN_OR_RETURN(strategy_, DirectCopy::Open(p, gpu_, mem_, o_, refuse, &choice_));
    return Status::Ok();
  }
  RESMEM_ASSIGN_OR_RETURN(StagedPath staged,
                          OpenStagedPath(gpu_, mem_, clock_.is_virtual(), o_, refuse));
  staging_ = std::move(staged.staging);
  strategy_ = std::move(staged.strategy);
  queue_ = staged.queue;
  choice_.detail = staged.detail;
  return Status::Ok();
}

TransferEngine::~TransferEngine() {
  if (staging_) staging_->StopLanes();  // joins the lane threads before what they use goes
  strategy_.reset();  // unregisters (direct paths), frees signals and the piece ring (staged)
  staging_.reset();   // releases the tickets, then frees the pinned buffers
}

void TransferEngine::ParkLanes() {
  if (staging_ && staging_->lanes) staging_->lanes->Park();
}

uint64_t TransferEngine::lane_sleeps() const {
  return staging_ && staging_->lanes ? staging_->lanes->sleeps() : 0;
}

const StagedTrace& TransferEngine::last_trace() const {
  static const StagedTrace kNone;
  return staging_ ? staging_->trace : kNone;
}

uint64_t TransferEngine::sm_copies_given_to_dmas() const {
  return staging_ ? staging_->sm_given_to_dmas : 0;
}

Status TransferEngine::CopyQueue(const std::function<Result<QueuePoll>(QueuedBlock*)>& next,
                                 const std::function<Status(const QueuedBlock&)>& arrived) {
  if (queue_ && mem_.data() != nullptr) return queue_->Queue(next, arrived);
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

Result<CopyStats> TransferEngine::Copy(CopyDirection dir, uint64_t host_offset, DeviceBuffer& dev,
                                       uint64_t dev_offset, uint64_t length) {
  RESMEM_RETURN_IF_ERROR(CheckSpan(mem_, host_offset, length, "transfer"));
  RESMEM_RETURN_IF_ERROR(CheckDeviceSpan(dev, dev_offset, length, "transfer"));
  double t0 = clock_.NowSeconds();
  CopyStats out;
  out.bytes = length;
  CopyRequest c;
  c.dir = dir;
  c.host_offset = host_offset;
  c.dev = &dev;
  c.dev_offset = dev_offset;
  c.length = length;
  RESMEM_ASSIGN_OR_RETURN(const CopyOutcome moved, strategy_->Copy(c));
  double wall = clock_.NowSeconds() - t0;
  // Real time when the clock is real; on a virtual clock the modelled time (the sim may or may
  // not charge the shared clock, so the larger of the two is the copy's cost).
  out.seconds = clock_.is_virtual() ? std::max(wall, moved.modelled_seconds) : wall;
  out.path = PathName(choice_.path);
  return out;
}

}  // namespace resmem::transfer
