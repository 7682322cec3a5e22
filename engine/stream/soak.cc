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

Result<SoakResult> RunSoak(Gpu& gpu, FaultInjector& faults, HostMemory& ring,
                           const SoakOptions& o) {
  const uint64_t bytes = o.block_bytes;
  if (bytes < 32 || bytes % 8)
    return Status::InvalidArgument("soak: block_bytes must be a multiple of 8, at least 32");
  if (ring.size() / bytes < 2)
    return Status::InvalidArgument("soak: the ring (" + FormatSize(ring.size()) +
                                   ") must hold at least 2 blocks of " + FormatSize(bytes));
  if (o.copy_attempts < 1) return Status::InvalidArgument("soak: copy_attempts must be >= 1");
  const uint64_t slots = ring.size() / bytes;
  RESMEM_ASSIGN_OR_RETURN(auto staging, gpu.AllocPinned(bytes, 0));
  RESMEM_ASSIGN_OR_RETURN(auto dev, gpu.AllocDevice(bytes));
  // The consumer's host copy of a block; written into the pinned buffer (simulated memory may
  // not be addressable) before the copy to the device.
  std::vector<uint8_t> stage_bytes(bytes);
  uint8_t* stage = stage_bytes.data();
  std::vector<uint8_t> block(bytes);
  SoakChecker checker(o.blocks);
  SoakResult r;
  r.blocks = o.blocks;
  auto lose = [&](uint64_t first, uint64_t last, const std::string& why) {
    for (uint64_t s = first; s <= last; ++s) checker.ReportedLost(s);
    r.reported_lost += last - first + 1;
    if (!r.lost.empty() && r.lost.back().last + 1 == first && r.lost.back().reason == why)
      r.lost.back().last = last;
    else
      r.lost.push_back(LostRange{first, last, why});
  };
  const auto t0 = std::chrono::steady_clock::now();
  for (uint64_t seq = 0; seq < o.blocks; ++seq) {
    if (o.before_block) o.before_block(seq);
    const uint64_t at = (seq % slots) * bytes;
    // ---- producer: the device's DMA into the ring ----
    MakeBlock(o.seed, seq, block.data(), bytes);
    checker.Produced(seq, Fnv1a64(block.data(), bytes));
    const FaultOutcome dma = faults.Check("stream.block", ring.address() + at, bytes);
    Status wrote;
    if (!(dma.fired && (dma.effect == FaultEffect::kError || dma.effect == FaultEffect::kSignal))) {
      const uint64_t n =
          dma.fired && dma.effect == FaultEffect::kShortCopy ? dma.short_length : bytes;
      wrote = ring.Write(at, block.data(), n);
      if (wrote.ok() && dma.fired && dma.effect == FaultEffect::kCorrupt) {
        uint8_t b = block[dma.corrupt_offset % bytes] ^ dma.corrupt_xor;
        wrote = ring.Write(at + dma.corrupt_offset % bytes, &b, 1);
      }
      if (dma.fired && dma.effect == FaultEffect::kDelay) SleepFor(dma.delay_seconds);
    }
    if (!wrote.ok() && RingGone(wrote)) {
      r.ended = "block " + std::to_string(seq) + ": the producer cannot write the ring: " +
                wrote.ToString();
      lose(seq, o.blocks - 1, "the ring is gone: " + wrote.ToString());
      break;
    }
    // ---- consumer: ring -> staging (host memcpy), checked; staging -> device, checked ----
    std::string problem = wrote.ok() ? "" : "the producer's write failed: " + wrote.ToString();
    bool gone = false, staged = false;
    for (int attempt = 0; attempt < o.copy_attempts && !staged; ++attempt) {
      if (attempt) ++r.retried_copies;
      const FaultOutcome mc = faults.Check("host.memcpy", staging->address(), bytes);
      if (mc.fired && (mc.effect == FaultEffect::kError || mc.effect == FaultEffect::kSignal)) {
        problem = "host memcpy failed: " + mc.status.ToString();
        continue;
      }
      const uint64_t n = mc.fired && mc.effect == FaultEffect::kShortCopy ? mc.short_length : bytes;
      Status read = ring.Read(at, stage, n);
      if (!read.ok()) {
        problem = "reading the ring failed: " + read.ToString();
        if (RingGone(read)) {
          gone = true;
          break;
        }
        continue;
      }
      if (mc.fired && mc.effect == FaultEffect::kCorrupt) stage[mc.corrupt_offset % bytes] ^= mc.corrupt_xor;
      if (mc.fired && mc.effect == FaultEffect::kDelay) SleepFor(mc.delay_seconds);
      problem = o.verify ? StagingProblem(stage, bytes, seq) : "";
      staged = problem.empty();
    }
    if (gone) {
      r.ended = "block " + std::to_string(seq) + ": " + problem;
      lose(seq, o.blocks - 1, "the ring is gone: " + problem);
      break;
    }
    if (!staged) {
      lose(seq, seq, problem);
      continue;
    }
    const uint64_t want = Fnv1a64(stage, bytes);
    RESMEM_RETURN_IF_ERROR(staging->Write(0, stage, bytes));
    bool arrived = false;
    for (int attempt = 0; attempt < o.copy_attempts && !arrived; ++attempt) {
      if (attempt) ++r.retried_copies;
      auto copy = gpu.Copy(CopyDirection::kHostToDevice, *staging, 0, *dev, 0, bytes);
      if (!copy.ok()) {
        problem = "copy to the device failed: " + copy.status().ToString();
        continue;
      }
      if (!o.verify) {
        arrived = true;
        break;
      }
      auto sum = gpu.DeviceChecksum(*dev, 0, bytes);
      if (!sum.ok()) {
        problem = "device checksum failed: " + sum.status().ToString();
        continue;
      }
      arrived = *sum == want;
      if (!arrived) problem = "the device's checksum differs from the staging buffer's";
    }
    if (!arrived) {
      lose(seq, seq, problem);
      continue;
    }
    ++r.delivered;
    // The checker's own look at what the device holds.
    RESMEM_ASSIGN_OR_RETURN(uint64_t device_fnv, gpu.DeviceChecksum(*dev, 0, bytes));
    checker.Delivered(seq, device_fnv);
    if (o.progress_every && (seq + 1) % o.progress_every == 0)
      std::fprintf(stderr, "soak: %llu/%llu blocks, %llu reported lost\n",
                   (unsigned long long)seq + 1, (unsigned long long)o.blocks,
                   (unsigned long long)r.reported_lost);
  }
  r.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.verdict = checker.Finish();
  std::map<std::string, uint64_t> fired;
  for (const FiredFault& f : faults.fired()) {  // "POINT effect=E" from the rule's description
    const size_t e = f.rule.find("effect=");
    const std::string effect = e == std::string::npos ? "" : f.rule.substr(e + 7);
    ++fired[f.point + " " + effect.substr(0, effect.find(' '))];
  }
  r.faults_fired.assign(fired.begin(), fired.end());
  return r;
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
