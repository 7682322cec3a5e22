#include "engine/stream/soak.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <thread>

#include "backends/cuda/block_pattern.h"
#include "backends/host/host_region.h"
#include "engine/transfer/gpu_backend.h"
#include "mock/fuse/fuse_device.h"
#include "mock/fuse/memory_region_provider.h"

namespace resmem::stream {
namespace {

// Bits of SoakChecker::state_.
constexpr uint8_t kProduced = 1, kIntact = 2, kWrong = 4, kLost = 8, kTwice = 16;

// The producer's block: word 0 the sequence number, payload words from (seed, seq), the last word
// FNV-1a 64 of the bytes before it.
void MakeBlock(uint64_t seed, uint64_t seq, uint8_t* out, uint64_t bytes) {
  const uint64_t words = bytes / 8;
  uint64_t w = seq;
  std::memcpy(out, &w, 8);
  const uint64_t base = pattern::Mix(seed ^ (seq * 0x9e3779b97f4a7c15ull));
  for (uint64_t k = 1; k + 1 < words; ++k) {
    w = base ^ (k * 0xff51afd7ed558ccdull);
    std::memcpy(out + 8 * k, &w, 8);
  }
  w = Fnv1a64(out, bytes - 8);
  std::memcpy(out + bytes - 8, &w, 8);
}

// Why the staging buffer does not hold block seq whole ("" when it does).
std::string StagingProblem(const uint8_t* b, uint64_t bytes, uint64_t seq) {
  uint64_t head, trailer;
  std::memcpy(&head, b, 8);
  std::memcpy(&trailer, b + bytes - 8, 8);
  if (head != seq)
    return "the slot holds block " + std::to_string(head) + ", not " + std::to_string(seq);
  if (trailer != Fnv1a64(b, bytes - 8)) return "the block's checksum does not match its bytes";
  return "";
}

// A ring that cannot be reached at all any more: the FUSE connection is gone (ENOTCONN,
// ECONNABORTED; fs/fuse/dev.c fuse_abort_conn), or the device went away (ENODEV).
bool RingGone(const Status& st) {
  return st.space() == ErrorSpace::kErrno &&
         (st.code() == ENOTCONN || st.code() == ECONNABORTED || st.code() == ENODEV);
}

void SleepFor(double seconds) {
  if (seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

// A ring read and written with pread/pwrite on an open file (a FUSE device file opened with direct
// I/O: each call is one request to the daemon). Not addressable.
class FileRing : public HostMemory {
 public:
  FileRing(std::string path, int fd, uint64_t size) : path_(std::move(path)), fd_(fd) {
    facts_.length = size;
    facts_.writable = true;
    facts_.origin = "fuse-direct-io";
  }
  ~FileRing() override { close(fd_); }
  uint64_t size() const override { return facts_.length; }
  const MappingFacts& facts() const override { return facts_; }
  uint64_t address() const override { return 0; }
  Status Read(uint64_t offset, void* out, uint64_t len) override {
    return Io("pread", pread(fd_, out, len, static_cast<off_t>(offset)), len);
  }
  Status Write(uint64_t offset, const void* in, uint64_t len) override {
    return Io("pwrite", pwrite(fd_, in, len, static_cast<off_t>(offset)), len);
  }
  std::string Describe() const override { return path_ + " (direct I/O)"; }

 private:
  Status Io(const char* what, ssize_t n, uint64_t len) const {
    if (n < 0) {
      const int err = errno;
      return Status::Errno(err, std::string(what) + " " + path_ + ": " + std::strerror(err) +
                                    (err == ENOTCONN ? " (the FUSE daemon is gone)" : ""));
    }
    if (static_cast<uint64_t>(n) != len)
      return Status::Errno(EIO, std::string(what) + " " + path_ + ": " + std::to_string(n) +
                                    " of " + std::to_string(len) + " bytes");
    return Status::Ok();
  }
  std::string path_;
  int fd_;
  MappingFacts facts_;
};

struct SimGpuSide {
  std::shared_ptr<FaultInjector> faults;
  transfer::GpuBackend backend;  // the CUDA model, consulting `faults`
};

Result<SimGpuSide> MakeSimSide(const SoakSetup& setup) {
  SimGpuSide side;
  side.faults = std::make_shared<FaultInjector>(setup.stream.seed);
  for (const FaultRule& r : SoakFaultMix(setup.fault_probability, setup.fault_delay_seconds))
    RESMEM_RETURN_IF_ERROR(side.faults->AddRule(r));
  RESMEM_ASSIGN_OR_RETURN(side.backend,
                          transfer::MakeGpuBackend("sim", setup.stream.seed, side.faults));
  return side;
}

}  // namespace

Result<SoakResult> RunSimSoak(const SoakSetup& setup) {
  RESMEM_ASSIGN_OR_RETURN(SimGpuSide side, MakeSimSide(setup));
  RESMEM_ASSIGN_OR_RETURN(auto ring, host::MapHostMemory(host::HostKind::kMemfd,
                                                         setup.ring_slots * setup.stream.block_bytes));
  return RunSoak(*side.backend.gpu, *side.faults, *ring, setup.stream);
}

Result<SoakResult> RunFuseSoak(const FuseSoakSetup& f) {
  const SoakSetup& setup = f.soak;
  RESMEM_ASSIGN_OR_RETURN(SimGpuSide side, MakeSimSide(setup));
  const uint64_t ring_bytes = setup.ring_slots * setup.stream.block_bytes;
  fuse_emu::MemoryDeviceSpec spec;
  spec.size = (ring_bytes + 4095) / 4096 * 4096;
  RESMEM_ASSIGN_OR_RETURN(auto backing, fuse_emu::MakeMemoryRegionProvider({spec}));
  RESMEM_ASSIGN_OR_RETURN(auto mount, fuse_emu::FuseDevice::Mount(*backing));
  // Direct I/O for the opens that follow (FOPEN_DIRECT_IO): no page cache between the stream
  // and the daemon.
  RESMEM_RETURN_IF_ERROR(mount->Control("refuse-mmap resmem0"));
  const std::string path = mount->DevicePath("resmem0");
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return Status::Errno(errno, "open " + path + ": " + std::strerror(errno));
  FileRing ring(path, fd, ring_bytes);
  const uint64_t bytes = setup.stream.block_bytes;
  Status control;
  SoakOptions o = setup.stream;
  if (f.delay_us)  // slot 1 is slow for the whole run
    control = mount->Control("delay resmem0 " + std::to_string(bytes) + " " +
                             std::to_string(bytes) + " " + std::to_string(f.delay_us));
  if (!control.ok()) return control;
  o.before_block = [&](uint64_t seq) {
    if (setup.stream.before_block) setup.stream.before_block(seq);
    if (f.eio_blocks && seq == f.eio_from)  // slot 2 fails for a stretch of blocks
      control = mount->Control("eio resmem0 " + std::to_string(2 * bytes) + " " +
                               std::to_string(bytes));
    if (f.eio_blocks && seq == f.eio_from + f.eio_blocks) control = mount->Control("clear resmem0");
    if (f.die_at && seq == f.die_at) control = mount->Control("die");
  };
  auto r = RunSoak(*side.backend.gpu, *side.faults, ring, o);
  if (!control.ok()) return control.WithContext("soak: the control file");
  return r;
}

void SoakChecker::Produced(uint64_t seq, uint64_t fnv) {
  if (seq >= record_.size()) return;
  record_[seq] = fnv;
  state_[seq] |= kProduced;
}

void SoakChecker::Delivered(uint64_t seq, uint64_t device_fnv) {
  if (seq >= state_.size()) return;
  uint8_t& s = state_[seq];
  if (s & (kIntact | kWrong | kLost)) s |= kTwice;
  s |= ((s & kProduced) && device_fnv == record_[seq]) ? kIntact : kWrong;
}

void SoakChecker::ReportedLost(uint64_t seq) {
  if (seq >= state_.size()) return;
  uint8_t& s = state_[seq];
  if (s & (kIntact | kWrong | kLost)) s |= kTwice;
  s |= kLost;
}

SoakVerdict SoakChecker::Finish() const {
  SoakVerdict v;
  for (uint64_t seq = 0; seq < state_.size(); ++seq) {
    const uint8_t s = state_[seq];
    v.produced += (s & kProduced) != 0;
    bool silent = false;
    if (s & kTwice) {
      ++v.duplicated;
      silent = true;
    } else if (s & kWrong) {
      ++v.silently_corrupted;
      silent = true;
    } else if (s & kIntact) {
      ++v.delivered_intact;
    } else if (s & kLost) {
      ++v.reported_lost;
    } else {
      ++v.silently_lost;
      silent = true;
    }
    if (silent && v.examples.size() < 10) v.examples.push_back(seq);
  }
  return v;
}

std::vector<FaultRule> SoakFaultMix(double p, double delay_seconds) {
  std::vector<FaultRule> rules;
  for (const char* point : {"stream.block", "host.memcpy", "gpu.copy"}) {
    for (FaultEffect e : {FaultEffect::kError, FaultEffect::kShortCopy, FaultEffect::kCorrupt,
                          FaultEffect::kDelay}) {
      FaultRule r;
      r.point = point;
      r.trigger = FaultTrigger::kProbability;
      r.probability = p;
      r.effect = e;
      r.error = Status::Errno(EIO, std::string("injected at ") + point);
      r.delay_seconds = delay_seconds;
      r.short_fraction = 0.5;
      rules.push_back(r);
    }
  }
  return rules;
}

namespace {

// soak: block_bytes a multiple of 8 and at least 32 (the sequence word, payload, the checksum
// word), a ring of at least 2 blocks, at least one copy attempt.
Status CheckSoakShape(const HostMemory& ring, const SoakOptions& o) {
  const uint64_t bytes = o.block_bytes;
  if (bytes < 32 || bytes % 8)
    return Status::InvalidArgument("soak: block_bytes must be a multiple of 8, at least 32");
  if (ring.size() / bytes < 2)
    return Status::InvalidArgument("soak: the ring (" + FormatSize(ring.size()) +
                                   ") must hold at least 2 blocks of " + FormatSize(bytes));
  if (o.copy_attempts < 1) return Status::InvalidArgument("soak: copy_attempts must be >= 1");
  return Status::Ok();
}

// What the phases of one soak share: the options, the GPU and its faults, the ring, the buffers
// a block passes through, the checker and the result being filled in.
struct SoakRun {
  SoakRun(Gpu& g, FaultInjector& f, HostMemory& rg, const SoakOptions& opts)
      : o(opts), gpu(g), faults(f), ring(rg), bytes(opts.block_bytes),
        slots(rg.size() / opts.block_bytes), stage(bytes), block(bytes), checker(opts.blocks) {
    r.blocks = opts.blocks;
  }
  const SoakOptions& o;
  Gpu& gpu;
  FaultInjector& faults;
  HostMemory& ring;
  const uint64_t bytes;  // one block
  const uint64_t slots;  // blocks the ring holds
  std::unique_ptr<HostMemory> staging;  // pinned, one block
  std::unique_ptr<DeviceBuffer> dev;    // one block
  // The consumer's host copy of a block; written into the pinned buffer (simulated memory may
  // not be addressable) before the copy to the device.
  std::vector<uint8_t> stage;
  std::vector<uint8_t> block;  // the producer's block
  SoakChecker checker;
  SoakResult r;

  // Blocks first..last reported lost for `why`: told to the checker, and merged into the last
  // range of r.lost when it ends right before with the same reason.
  void Lose(uint64_t first, uint64_t last, const std::string& why) {
    for (uint64_t s = first; s <= last; ++s) checker.ReportedLost(s);
    r.reported_lost += last - first + 1;
    if (!r.lost.empty() && r.lost.back().last + 1 == first && r.lost.back().reason == why)
      r.lost.back().last = last;
    else
      r.lost.push_back(LostRange{first, last, why});
  }
};

// The producer: the device's DMA of block seq into the ring at `at`, through the
// "stream.block" fault point (an error writes nothing, a short copy part of it, a corruption
// one flipped byte after it). Returns the ring's write status (ok when nothing was written).
Status ProduceBlock(SoakRun& run, uint64_t seq, uint64_t at) {
  const uint64_t bytes = run.bytes;
  std::vector<uint8_t>& block = run.block;
  MakeBlock(run.o.seed, seq, block.data(), bytes);
  run.checker.Produced(seq, Fnv1a64(block.data(), bytes));
  const FaultOutcome dma = run.faults.Check("stream.block", run.ring.address() + at, bytes);
  Status wrote;
  if (!(dma.fired && (dma.effect == FaultEffect::kError || dma.effect == FaultEffect::kSignal))) {
    const uint64_t n =
        dma.fired && dma.effect == FaultEffect::kShortCopy ? dma.short_length : bytes;
    wrote = run.ring.Write(at, block.data(), n);
    if (wrote.ok() && dma.fired && dma.effect == FaultEffect::kCorrupt) {
      uint8_t b = block[dma.corrupt_offset % bytes] ^ dma.corrupt_xor;
      wrote = run.ring.Write(at + dma.corrupt_offset % bytes, &b, 1);
    }
    if (dma.fired && dma.effect == FaultEffect::kDelay) SleepFor(dma.delay_seconds);
  }
  return wrote;
}

// What the consumer's copy of a block from the ring into run.stage came to.
struct StagedBlock {
  bool staged = false;  // run.stage holds the block whole (or unchecked, without verify)
  bool gone = false;    // the ring cannot be read any more
  std::string problem;  // why not staged ("" when staged)
};

// The consumer's first step: ring -> run.stage (a host memcpy through the "host.memcpy" fault
// point), checked, up to copy_attempts times. `wrote` is the producer's write status.
StagedBlock StageBlock(SoakRun& run, uint64_t seq, uint64_t at, const Status& wrote) {
  const uint64_t bytes = run.bytes;
  uint8_t* stage = run.stage.data();
  StagedBlock b;
  b.problem = wrote.ok() ? "" : "the producer's write failed: " + wrote.ToString();
  for (int attempt = 0; attempt < run.o.copy_attempts && !b.staged; ++attempt) {
    if (attempt) ++run.r.retried_copies;
    const FaultOutcome mc = run.faults.Check("host.memcpy", run.staging->address(), bytes);
    if (mc.fired && (mc.effect == FaultEffect::kError || mc.effect == FaultEffect::kSignal)) {
      b.problem = "host memcpy failed: " + mc.status.ToString();
      continue;
    }
    const uint64_t n = mc.fired && mc.effect == FaultEffect::kShortCopy ? mc.short_length : bytes;
    Status read = run.ring.Read(at, stage, n);
    if (!read.ok()) {
      b.problem = "reading the ring failed: " + read.ToString();
      if (RingGone(read)) {
        b.gone = true;
        break;
      }
      continue;
    }
    if (mc.fired && mc.effect == FaultEffect::kCorrupt) stage[mc.corrupt_offset % bytes] ^= mc.corrupt_xor;
    if (mc.fired && mc.effect == FaultEffect::kDelay) SleepFor(mc.delay_seconds);
    b.problem = run.o.verify ? StagingProblem(stage, bytes, seq) : "";
    b.staged = b.problem.empty();
  }
  return b;
}

// The consumer's second step: run.stage -> the pinned buffer -> the device, checked against
// the device's checksum (with verify), up to copy_attempts times. Returns whether the block
// arrived; `problem` says why not. An error writing the pinned buffer ends the soak.
Result<bool> DeliverBlock(SoakRun& run, std::string& problem) {
  const uint64_t bytes = run.bytes;
  const uint64_t want = Fnv1a64(run.stage.data(), bytes);
  RESMEM_RETURN_IF_ERROR(run.staging->Write(0, run.stage.data(), bytes));
  bool arrived = false;
  for (int attempt = 0; attempt < run.o.copy_attempts && !arrived; ++attempt) {
    if (attempt) ++run.r.retried_copies;
    auto copy = run.gpu.Copy(CopyDirection::kHostToDevice, *run.staging, 0, *run.dev, 0, bytes);
    if (!copy.ok()) {
      problem = "copy to the device failed: " + copy.status().ToString();
      continue;
    }
    if (!run.o.verify) {
      arrived = true;
      break;
    }
    auto sum = run.gpu.DeviceChecksum(*run.dev, 0, bytes);
    if (!sum.ok()) {
      problem = "device checksum failed: " + sum.status().ToString();
      continue;
    }
    arrived = *sum == want;
    if (!arrived) problem = "the device's checksum differs from the staging buffer's";
  }
  return arrived;
}

// One block through the stream: produced, staged, delivered, and told to the checker; a loss
// is reported in run.r. Returns whether the stream goes on (false: the ring is gone, and every
// block from seq on is reported lost).
Result<bool> SoakBlock(SoakRun& run, uint64_t seq) {
  const SoakOptions& o = run.o;
  if (o.before_block) o.before_block(seq);
  const uint64_t at = (seq % run.slots) * run.bytes;
  const Status wrote = ProduceBlock(run, seq, at);
  if (!wrote.ok() && RingGone(wrote)) {
    run.r.ended = "block " + std::to_string(seq) + ": the producer cannot write the ring: " +
                  wrote.ToString();
    run.Lose(seq, o.blocks - 1, "the ring is gone: " + wrote.ToString());
    return false;
  }
  StagedBlock staged = StageBlock(run, seq, at, wrote);
  if (staged.gone) {
    run.r.ended = "block " + std::to_string(seq) + ": " + staged.problem;
    run.Lose(seq, o.blocks - 1, "the ring is gone: " + staged.problem);
    return false;
  }
  if (!staged.staged) {
    run.Lose(seq, seq, staged.problem);
    return true;
  }
  RESMEM_ASSIGN_OR_RETURN(const bool arrived, DeliverBlock(run, staged.problem));
  if (!arrived) {
    run.Lose(seq, seq, staged.problem);
    return true;
  }
  ++run.r.delivered;
  // The checker's own look at what the device holds.
  RESMEM_ASSIGN_OR_RETURN(uint64_t device_fnv, run.gpu.DeviceChecksum(*run.dev, 0, run.bytes));
  run.checker.Delivered(seq, device_fnv);
  if (o.progress_every && (seq + 1) % o.progress_every == 0)
    std::fprintf(stderr, "soak: %llu/%llu blocks, %llu reported lost\n",
                 (unsigned long long)seq + 1, (unsigned long long)o.blocks,
                 (unsigned long long)run.r.reported_lost);
  return true;
}

// The faults that fired, counted per "POINT effect" (from each rule's description), in name
// order.
std::vector<std::pair<std::string, uint64_t>> FiredFaultCounts(const FaultInjector& faults) {
  std::map<std::string, uint64_t> fired;
  for (const FiredFault& f : faults.fired()) {  // "POINT effect=E" from the rule's description
    const size_t e = f.rule.find("effect=");
    const std::string effect = e == std::string::npos ? "" : f.rule.substr(e + 7);
    ++fired[f.point + " " + effect.substr(0, effect.find(' '))];
  }
  return {fired.begin(), fired.end()};
}

}  // namespace

Result<SoakResult> RunSoak(Gpu& gpu, FaultInjector& faults, HostMemory& ring,
                           const SoakOptions& o) {
  RESMEM_RETURN_IF_ERROR(CheckSoakShape(ring, o));
  SoakRun run(gpu, faults, ring, o);
  RESMEM_ASSIGN_OR_RETURN(run.staging, gpu.AllocPinned(run.bytes, 0));
  RESMEM_ASSIGN_OR_RETURN(run.dev, gpu.AllocDevice(run.bytes));
  const auto t0 = std::chrono::steady_clock::now();
  for (uint64_t seq = 0; seq < o.blocks; ++seq) {
    RESMEM_ASSIGN_OR_RETURN(const bool goes_on, SoakBlock(run, seq));
    if (!goes_on) break;
  }
  SoakResult& r = run.r;
  r.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.verdict = run.checker.Finish();
  r.faults_fired = FiredFaultCounts(faults);
  return std::move(r);
}

std::string SoakResult::Summary(const std::string& title) const {
  std::string s;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%s: %llu blocks in %.1f s\n"
                "  delivered %llu, reported lost %llu, silently lost %llu, silently corrupted %llu, "
                "duplicated %llu (checker: %llu intact, %llu reported lost)\n"
                "  copies retried %llu",
                title.c_str(), (unsigned long long)blocks, wall_seconds,
                (unsigned long long)delivered, (unsigned long long)reported_lost,
                (unsigned long long)verdict.silently_lost,
                (unsigned long long)verdict.silently_corrupted,
                (unsigned long long)verdict.duplicated,
                (unsigned long long)verdict.delivered_intact,
                (unsigned long long)verdict.reported_lost, (unsigned long long)retried_copies);
  s += buf;
  // The stream's own error can be long (a path description, a refusal): appended, not formatted
  // into the fixed buffer above.
  if (!ended.empty()) s += "; stream ended early: " + ended;
  s += "\n";
  s += "  faults fired:";
  for (const auto& [what, n] : faults_fired) s += " [" + what + "] " + std::to_string(n) + ";";
  s += "\n  reported lost (first 8 of " + std::to_string(lost.size()) + " ranges):\n";
  for (size_t i = 0; i < lost.size() && i < 8; ++i)
    s += "    blocks " + std::to_string(lost[i].first) +
         (lost[i].last != lost[i].first ? "-" + std::to_string(lost[i].last) : "") + ": " +
         lost[i].reason + "\n";
  if (!verdict.examples.empty()) {
    s += "  SILENT examples (sequence numbers):";
    for (uint64_t e : verdict.examples) s += " " + std::to_string(e);
    s += "\n";
  }
  return s;
}

}  // namespace resmem::stream
