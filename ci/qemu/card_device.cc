// The QEMU lane's card: a host process that is the device of backends/card/card_abi.h, writing
// blocks straight into a running guest's reserved RAM (issue 28, item 1b; docs/digitizer.md "In
// the QEMU guest"). The lane boots the guest with its RAM in a shared file,
//   -object memory-backend-file,id=m0,size=5G,mem-path=/dev/shm/F,share=on -machine pc,memory-backend=m0
// and starts this process on the same file; it maps the file and runs CardDmaEngine over a CardBus
// that turns guest-physical addresses into file offsets, on the steady clock, while the guest runs.
//
// Contracts:
//  - It writes nothing until a guest asks through the mailbox (card_abi.h, "Lane extension"): the
//    module's load-time probe writes and reads test words in the range, and other guest cases
//    fill it with their own patterns. Until then it only reads the mailbox.
//  - It writes only inside the reservations it is given (--ranges): an engine asked to write
//    elsewhere (a ring the guest never set up, a register page another case overwrote) fails
//    that access by name and the device powers off; it never writes the guest's kernel memory.
//  - It exits when QEMU exits (--qemu-pidfile: the pid named there is gone), on SIGTERM/SIGINT,
//    and prints its figures: blocks, bytes, MB/s while powered, MB/s while writing, CPU seconds.
//
// Usage: card_device --mem-file /dev/shm/F --ranges 0x40000000:64M,0x44000000:64M
//                    [--mailbox 0x40000800] [--low-mem 3G] [--qemu-pidfile P] [--report FILE]
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backends/api/memory.h"
#include "backends/api/status.h"
#include "backends/card/card_abi.h"
#include "backends/card/card_engine.h"
#include "backends/card/card_fault.h"

namespace resmem::card {
namespace {

static_assert(sizeof(resmem_card_lane_mailbox) == 0x600, "the mailbox is 0x600 bytes (card_abi.h)");
static_assert(RESMEM_CARD_LANE_MAILBOX_OFFSET + sizeof(resmem_card_lane_mailbox) <= RESMEM_CARD_REGS_BYTES,
              "the mailbox fits in the register page above the registers");

constexpr uint64_t kGiB = 1ull << 30;

volatile sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// QEMU's `pc` machine (hw/i386/pc_piix.c): a guest of 3.5 GiB or more gets 3 GiB below 4 GiB and
// the rest from 4 GiB up; a smaller one all of it below. The RAM file holds the low part at offset
// 0 and the high part right after it, so a physical address at or above 4 GiB is at file offset
// physical - (4 GiB - low). Checked in the lane (-m 5G, low 3 GiB): the guest's mailbox request at
// physical 0x40000800 is what this process reads at offset 0x40000800 (every card_* case's power-on),
// and the 2026-11-28 probe in FACTS.md read a host write at offset 0xc0000000 as physical 4 GiB.
uint64_t PcLowMem(uint64_t ram) { return ram >= 0xe0000000ull ? 3 * kGiB : ram; }

struct Range {
  uint64_t lo = 0, hi = 0;  // guest-physical [lo, hi)
};

// The guest's RAM as the card reaches it: guest-physical addresses inside the given reservations,
// each turned into the RAM file's offset. Counts the bytes of block writes and the time they take
// (the device's write rate into the guest).
class GuestRamBus : public CardBus {
 public:
  GuestRamBus(uint8_t* ram, uint64_t ram_bytes, uint64_t low, std::vector<Range> ranges)
      : ram_(ram), ram_bytes_(ram_bytes), low_(low), ranges_(std::move(ranges)) {}

  Status Write(uint64_t bus, const void* data, uint64_t len) override {
    RESMEM_ASSIGN_OR_RETURN(uint8_t* p, At(bus, len));
    const double t0 = len >= 4096 ? Now() : 0;
    std::memcpy(p, data, len);
    if (len >= 4096) {
      write_seconds_ += Now() - t0;
      write_bytes_ += len;
    }
    return Status::Ok();
  }
  Status Read(uint64_t bus, void* out, uint64_t len) override {
    RESMEM_ASSIGN_OR_RETURN(uint8_t* p, At(bus, len));
    std::memcpy(out, p, len);
    return Status::Ok();
  }
  Result<uint64_t> Load64(uint64_t bus) override {
    RESMEM_ASSIGN_OR_RETURN(uint8_t* p, Aligned(bus));
    return __atomic_load_n(reinterpret_cast<uint64_t*>(p), __ATOMIC_ACQUIRE);
  }
  Status Store64(uint64_t bus, uint64_t value) override {
    RESMEM_ASSIGN_OR_RETURN(uint8_t* p, Aligned(bus));
    __atomic_store_n(reinterpret_cast<uint64_t*>(p), value, __ATOMIC_RELEASE);
    return Status::Ok();
  }
  // Where [bus, bus + len) is in this process, for a writer that fills guest RAM in place.
  Result<uint8_t*> Span(uint64_t bus, uint64_t len) { return At(bus, len); }
  double write_seconds() const { return write_seconds_; }
  uint64_t write_bytes() const { return write_bytes_; }

 private:
  Result<uint8_t*> Aligned(uint64_t bus) {
    if (bus % 8) return Status::InvalidArgument("card bus: a 64-bit access at " + HexAddress(bus) + " is not aligned");
    return At(bus, 8);
  }
  // [bus, bus + len) must lie in one reservation; then its file offset.
  Result<uint8_t*> At(uint64_t bus, uint64_t len) {
    for (const Range& r : ranges_) {
      if (bus < r.lo || bus >= r.hi || len > r.hi - bus) continue;
      const uint64_t off = bus < 4 * kGiB ? bus : bus - (4 * kGiB - low_);
      if (bus < 4 * kGiB && bus + len > low_)
        return Status::Errno(EFAULT, "card bus: " + HexAddress(bus) + " is in the hole below 4 GiB (RAM ends at " +
                                         HexAddress(low_) + "): no guest RAM there");
      if (off + len > ram_bytes_)
        return Status::Errno(EFAULT, "card bus: " + HexAddress(bus) + " is past the guest's RAM file");
      return ram_ + off;
    }
    return Status::Errno(EFAULT, "card bus: [" + HexAddress(bus) + ", +" + std::to_string(len) +
                                     ") is outside the reservations this device was given (--ranges): refused");
  }
  uint8_t* ram_;
  uint64_t ram_bytes_, low_;
  std::vector<Range> ranges_;
  double write_seconds_ = 0;
  uint64_t write_bytes_ = 0;
};

struct Options {
  std::string mem_file, qemu_pidfile, report;
  std::vector<Range> ranges;
  uint64_t mailbox = 0;  // 0: the first range's start + RESMEM_CARD_LANE_MAILBOX_OFFSET
  uint64_t low_mem = 0;  // 0: QEMU pc's rule for the file's size
  double poll_seconds = 50e-6;
};

constexpr const char* kUsage =
    "usage: card_device --mem-file /dev/shm/F --ranges PHYS:SIZE[,PHYS:SIZE...] [--mailbox BUS] "
    "[--low-mem SIZE] [--qemu-pidfile FILE] [--report FILE] [--poll-us N]";

Result<std::vector<Range>> ParseRanges(const std::string& text) {
  std::vector<Range> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    const size_t colon = item.find(':');
    if (colon == std::string::npos)
      return Status::InvalidArgument("--ranges item '" + item + "' is not PHYS:SIZE (e.g. 0x40000000:64M)");
    RESMEM_ASSIGN_OR_RETURN(uint64_t lo, ParseSize(item.substr(0, colon)));
    RESMEM_ASSIGN_OR_RETURN(uint64_t size, ParseSize(item.substr(colon + 1)));
    if (size == 0 || lo + size < lo) return Status::InvalidArgument("--ranges item '" + item + "' is empty or wraps");
    out.push_back({lo, lo + size});
    pos = comma + 1;
  }
  return out;
}

Result<Options> ParseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return Status::InvalidArgument(a + " needs a value; " + kUsage);
    const std::string v = argv[++i];
    if (a == "--mem-file") o.mem_file = v;
    else if (a == "--qemu-pidfile") o.qemu_pidfile = v;
    else if (a == "--report") o.report = v;
    else if (a == "--ranges") { RESMEM_ASSIGN_OR_RETURN(o.ranges, ParseRanges(v)); }
    else if (a == "--mailbox") { RESMEM_ASSIGN_OR_RETURN(o.mailbox, ParseSize(v)); }
    else if (a == "--low-mem") { RESMEM_ASSIGN_OR_RETURN(o.low_mem, ParseSize(v)); }
    else if (a == "--poll-us") o.poll_seconds = std::atof(v.c_str()) * 1e-6;
    else return Status::InvalidArgument("unknown argument '" + a + "'; " + kUsage);
  }
  if (o.mem_file.empty() || o.ranges.empty())
    return Status::InvalidArgument(std::string("--mem-file and --ranges are required; ") + kUsage);
  if (!o.mailbox) o.mailbox = o.ranges[0].lo + RESMEM_CARD_LANE_MAILBOX_OFFSET;
  if (!(o.poll_seconds > 0)) return Status::InvalidArgument("--poll-us must be > 0");
  return o;
}

// The guest's RAM file, mapped shared: what this process writes, the guest reads.
struct RamFile {
  uint8_t* base = nullptr;
  uint64_t bytes = 0;
  ~RamFile() {
    if (base) munmap(base, bytes);
  }
};

Result<std::unique_ptr<RamFile>> MapRamFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDWR);
  if (fd < 0)
    return Status::Errno(errno, "open " + path + ": " + std::strerror(errno) +
                                    " (the guest's RAM file: QEMU's -object memory-backend-file mem-path)");
  struct stat st{};
  fstat(fd, &st);
  auto f = std::make_unique<RamFile>();
  f->bytes = static_cast<uint64_t>(st.st_size);
  void* p = f->bytes ? mmap(nullptr, f->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  const int err = errno;
  close(fd);
  if (p == MAP_FAILED)
    return Status::Errno(f->bytes ? err : EINVAL, "mmap " + path + " (" + std::to_string(f->bytes) +
                                                      " bytes): create it at the guest's RAM size first (truncate -s)");
  f->base = static_cast<uint8_t*>(p);
  return f;
}

// The spray's block writer: block `sequence` straight into guest RAM at `dst`, the same bytes as
// MakeBlock (card_engine.h) without its staging copy. resmem_card_word(seed, s, k) is a per-block
// constant xor a per-word term (card_abi.h), so the payload is `key[k] ^ base` and its checksum
// is taken as it is written: one pass, the device's rate bound by the checksum's multiply chain.
class SprayWriter {
 public:
  SprayWriter(uint64_t seed, uint64_t block) : seed_(seed), block_(block) {
    key_.resize((block - RESMEM_CARD_BLOCK_OVERHEAD) / 8);
    for (uint64_t k = 0; k < key_.size(); ++k) key_[k] = resmem_card_word(0, 0, k) ^ resmem_card_word(0, 0, 0);
  }
  void Write(uint64_t sequence, uint8_t* dst) const {
    const uint64_t n = key_.size();
    // word(seed, s, k) = word(seed, s, 0) ^ (word(0, 0, k) ^ word(0, 0, 0)): the term of k is xor'ed in.
    const uint64_t base = resmem_card_word(seed_, sequence, 0);
    uint64_t* w = reinterpret_cast<uint64_t*>(dst + sizeof(resmem_card_block_header));
    uint64_t h = 0xcbf29ce484222325ull;  // resmem_card_checksum's FNV-1a, word by word
    for (uint64_t k = 0; k < n; ++k) {
      const uint64_t v = key_[k] ^ base;
      w[k] = v;
      h = (h ^ v) * 0x100000001b3ull;
    }
    const resmem_card_block_header hd{RESMEM_CARD_BLOCK_MAGIC, sequence, n * 8, h};
    const resmem_card_block_trailer tr{sequence, RESMEM_CARD_BLOCK_MAGIC};
    std::memcpy(dst, &hd, sizeof hd);
    std::memcpy(dst + block_ - sizeof tr, &tr, sizeof tr);
  }

 private:
  uint64_t seed_, block_;
  std::vector<uint64_t> key_;
};

// The device: watches the mailbox, runs the engine while powered, publishes its counters.
class Device {
 public:
  Device(GuestRamBus& bus, const Options& o) : bus_(bus), o_(o), mb_(o.mailbox), started_(Now()) {
    last_seq_ = Field(offsetof(resmem_card_lane_mailbox, request_seq));  // never replay a stale request
  }
  void Loop();
  void PrintFigures() const;

 private:
  uint64_t Field(uint64_t off) {
    auto v = bus_.Load64(mb_ + off);
    return v.ok() ? *v : 0;
  }
  Status SetField(uint64_t off, uint64_t v) { return bus_.Store64(mb_ + off, v); }
  std::string Text();
  void Serve();
  Status Handle(uint64_t request);
  Status PowerOn();
  void PowerOff(const std::string& why);
  Status Step(double now, double* due);
  Status Publish();
  Status Spray();
  void Ack(uint64_t seq, const Status& s);
  bool LeaseExpired(double now);
  bool QemuGone(double now);

  GuestRamBus& bus_;
  Options o_;
  uint64_t mb_;
  double started_;
  std::unique_ptr<CardDmaEngine> engine_;
  uint64_t last_seq_ = 0, lease_ = 0;
  double lease_at_ = 0, powered_since_ = 0, powered_seconds_ = 0;
  CardCounters total_;
  int power_ons_ = 0, faults_ = 0, sprays_ = 0;
  uint64_t spray_bytes_ = 0;
  double spray_seconds_ = 0;
  bool qemu_seen_ = false;
  double qemu_checked_ = 0, qemu_gone_since_ = 0;
};

std::string Device::Text() {
  char t[RESMEM_CARD_LANE_TEXT_BYTES + 1] = {};
  if (!bus_.Read(mb_ + offsetof(resmem_card_lane_mailbox, text), t, RESMEM_CARD_LANE_TEXT_BYTES).ok()) return "";
  return t;
}

// The answer to request `seq`: its status (an errno, the reason in text), then ack_seq last.
void Device::Ack(uint64_t seq, const Status& s) {
  if (!s.ok()) {
    std::string why = s.message().substr(0, RESMEM_CARD_LANE_TEXT_BYTES - 1);
    why.resize(RESMEM_CARD_LANE_TEXT_BYTES, '\0');
    (void)bus_.Write(mb_ + offsetof(resmem_card_lane_mailbox, text), why.data(), why.size());
    std::fprintf(stderr, "card_device: request refused: %s\n", s.message().c_str());
  }
  const int err = s.ok() ? 0 : s.space() == ErrorSpace::kErrno ? s.code() : EINVAL;
  (void)SetField(offsetof(resmem_card_lane_mailbox, ack_status), static_cast<uint64_t>(err));
  (void)SetField(offsetof(resmem_card_lane_mailbox, ack_seq), seq);
}

// One look at the mailbox: a request not seen yet, under the right magic, is done and answered.
void Device::Serve() {
  if (Field(offsetof(resmem_card_lane_mailbox, magic)) != RESMEM_CARD_LANE_MAGIC) return;
  const uint64_t seq = Field(offsetof(resmem_card_lane_mailbox, request_seq));
  if (seq == last_seq_) return;
  last_seq_ = seq;
  const uint64_t request = Field(offsetof(resmem_card_lane_mailbox, request));
  Ack(seq, Handle(request));
}

Status Device::Handle(uint64_t request) {
  switch (request) {
    case RESMEM_CARD_LANE_POWER_ON:
      return PowerOn();
    case RESMEM_CARD_LANE_POWER_OFF:
      PowerOff("the guest asked");
      return Status::Ok();
    case RESMEM_CARD_LANE_FAULT: {
      if (!engine_) return Status::Errno(ENODEV, "a fault for a card that is off: power it on first (card_start)");
      RESMEM_ASSIGN_OR_RETURN(std::vector<CardFault> faults, ParseCardFaults(Text()));
      for (auto& f : faults) engine_->AddFault(f, Now());
      faults_ += static_cast<int>(faults.size());
      return Status::Ok();
    }
    case RESMEM_CARD_LANE_RELEASED:
      if (engine_) engine_->HostReleased(Now());
      return Status::Ok();
    case RESMEM_CARD_LANE_SPRAY:
      return Spray();
    default:
      return Status::Errno(EINVAL, "unknown mailbox request " + std::to_string(request) +
                                       ": the lane's device knows POWER_ON 1, POWER_OFF 2, FAULT 3, RELEASED 4, SPRAY 5");
  }
}

// POWER_ON: a new engine at the mailbox's window with its seed, flags and fault script. PowerOn
// zeroes the register page; when the mailbox sits in it, the mailbox is put back.
Status Device::PowerOn() {
  if (engine_) PowerOff("powered on again");
  CardConfig c;
  c.window_bus = Field(offsetof(resmem_card_lane_mailbox, window));
  c.seed = Field(offsetof(resmem_card_lane_mailbox, seed));
  c.write_payload = !(Field(offsetof(resmem_card_lane_mailbox, flags)) & RESMEM_CARD_LANE_FLAG_MODEL_PAYLOAD);
  if (c.window_bus % 4096)
    return Status::Errno(EINVAL, "card window " + HexAddress(c.window_bus) + " is not 4 KiB aligned");
  RESMEM_ASSIGN_OR_RETURN(c.faults, ParseCardFaults(Text()));
  std::vector<uint8_t> keep(sizeof(resmem_card_lane_mailbox));
  const bool same_page = (mb_ & ~4095ull) == c.window_bus;
  if (same_page) RESMEM_RETURN_IF_ERROR(bus_.Read(mb_, keep.data(), keep.size()));
  auto engine = std::make_unique<CardDmaEngine>(bus_, c);
  RESMEM_RETURN_IF_ERROR(engine->PowerOn(Now()).WithContext("card window " + HexAddress(c.window_bus)));
  if (same_page) RESMEM_RETURN_IF_ERROR(bus_.Write(mb_, keep.data(), keep.size()));
  engine_ = std::move(engine);
  ++power_ons_;
  powered_since_ = lease_at_ = Now();
  lease_ = Field(offsetof(resmem_card_lane_mailbox, lease));
  std::fprintf(stderr, "card_device: powered on at %s (seed %llu, %zu faults)\n", HexAddress(c.window_bus).c_str(),
               static_cast<unsigned long long>(c.seed), c.faults.size());
  return Publish();
}

// The engine stops at once; its counters join the totals; nothing more is written.
void Device::PowerOff(const std::string& why) {
  if (!engine_) return;
  (void)Publish();
  const CardCounters& c = engine_->counters();
  total_.blocks += c.blocks;
  total_.bytes += c.bytes;
  total_.overruns += c.overruns;
  total_.torn += c.torn;
  total_.timeouts += c.timeouts;
  total_.after_release += c.after_release;
  powered_seconds_ += Now() - powered_since_;
  std::fprintf(stderr, "card_device: powered off (%s): %llu blocks, %llu bytes this time\n", why.c_str(),
               static_cast<unsigned long long>(c.blocks), static_cast<unsigned long long>(c.bytes));
  engine_.reset();
  (void)SetField(offsetof(resmem_card_lane_mailbox, powered), 0);
}

// The engine's counters into the mailbox, for the guest's report.
Status Device::Publish() {
  const CardCounters& c = engine_->counters();
  const uint64_t v[] = {c.blocks,  c.bytes,     c.overruns,  c.timeouts,
                        c.torn,    c.after_release, c.duplicate, c.out_of_order,
                        c.register_writes_lost, static_cast<uint64_t>(c.link_down_seconds * 1e6)};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; ++i)
    RESMEM_RETURN_IF_ERROR(SetField(offsetof(resmem_card_lane_mailbox, blocks) + 8 * i, v[i]));
  RESMEM_RETURN_IF_ERROR(SetField(offsetof(resmem_card_lane_mailbox, powered), 1));
  return SetField(offsetof(resmem_card_lane_mailbox, heartbeat), Field(offsetof(resmem_card_lane_mailbox, heartbeat)) + 1);
}

// The engine's work due by `now`; `due`: when it next has some.
Status Device::Step(double now, double* due) {
  RESMEM_ASSIGN_OR_RETURN(*due, engine_->Advance(now));
  return Publish();
}

// SPRAY: blocks round robin into the slots, flat out, for spray_ms: the device's rate into the
// guest's RAM with nobody holding it back. Refused while the engine runs (they would share slots).
Status Device::Spray() {
  if (engine_) return Status::Errno(EBUSY, "SPRAY while the card is powered on: power it off first");
  const uint64_t target = Field(offsetof(resmem_card_lane_mailbox, spray_target));
  const uint64_t block = Field(offsetof(resmem_card_lane_mailbox, spray_block));
  const uint64_t slots = Field(offsetof(resmem_card_lane_mailbox, spray_slots));
  const uint64_t ms = Field(offsetof(resmem_card_lane_mailbox, spray_ms));
  const uint64_t seed = Field(offsetof(resmem_card_lane_mailbox, seed));
  if (block < 64 || block % 8 || block > (64ull << 20) || slots == 0 || slots > 4096 || ms == 0 || ms > 60000)
    return Status::Errno(EINVAL, "SPRAY: block " + std::to_string(block) + ", slots " + std::to_string(slots) + ", ms " +
                                     std::to_string(ms) + ": give a block of 64 B to 64 MiB (multiple of 8), 1-4096 slots, 1-60000 ms");
  const uint64_t page = mb_ & ~4095ull, end = target + block * slots;
  if (target < page + 4096 && end > page)
    return Status::Errno(EINVAL, "SPRAY: [" + HexAddress(target) + ", " + HexAddress(end) + ") covers the mailbox's page " +
                                     HexAddress(page) + ": start after it");
  std::vector<uint8_t*> dst(slots);
  for (uint64_t i = 0; i < slots; ++i) {
    RESMEM_ASSIGN_OR_RETURN(dst[i], bus_.Span(target + i * block, block));
  }
  const SprayWriter writer(seed, block);
  uint64_t seq = 0;
  const double t0 = Now(), until = t0 + ms / 1e3;
  for (; Now() < until; ++seq) writer.Write(seq, dst[seq % slots]);
  const double seconds = Now() - t0;
  ++sprays_;
  spray_bytes_ += seq * block;
  spray_seconds_ += seconds;
  RESMEM_RETURN_IF_ERROR(SetField(offsetof(resmem_card_lane_mailbox, spray_bytes), seq * block));
  RESMEM_RETURN_IF_ERROR(SetField(offsetof(resmem_card_lane_mailbox, spray_ns), static_cast<uint64_t>(seconds * 1e9)));
  return SetField(offsetof(resmem_card_lane_mailbox, spray_last_sequence), seq ? seq - 1 : 0);
}

// A guest that stopped bumping its lease (a scenario that crashed) gets its card powered off.
bool Device::LeaseExpired(double now) {
  const uint64_t lease = Field(offsetof(resmem_card_lane_mailbox, lease));
  if (lease != lease_) {
    lease_ = lease;
    lease_at_ = now;
  }
  return now - lease_at_ > RESMEM_CARD_LANE_LEASE_SECONDS;
}

// QEMU is gone when the pid in its pidfile has not been alive for 3 s (a retried boot writes a new
// one at once). Looked at twice a second.
bool Device::QemuGone(double now) {
  if (o_.qemu_pidfile.empty() || now - qemu_checked_ < 0.5) return false;
  qemu_checked_ = now;
  std::ifstream f(o_.qemu_pidfile);
  long pid = 0;
  const bool alive = (f >> pid) && pid > 0 && kill(static_cast<pid_t>(pid), 0) == 0;
  if (alive) {
    qemu_seen_ = true;
    qemu_gone_since_ = 0;
    return false;
  }
  if (!qemu_seen_) return false;
  if (qemu_gone_since_ == 0) qemu_gone_since_ = now;
  return now - qemu_gone_since_ > 3;
}

void Device::Loop() {
  while (!g_stop) {
    const double now = Now();
    if (QemuGone(now)) break;
    Serve();
    double wait = 1e-3;  // off: the mailbox is read every millisecond
    if (engine_) {
      double due = CardDmaEngine::kIdle;
      Status s = Step(now, &due);
      if (!s.ok()) PowerOff("the engine failed: " + s.message());
      else if (LeaseExpired(now)) PowerOff("the guest's lease ran out (no card step for 30 s)");
      else wait = std::max(0.0, std::min(due - Now(), o_.poll_seconds));
    }
    if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
  }
  PowerOff(g_stop ? "signal" : "QEMU exited");
}

// The figures, on stderr and in --report: what the device wrote, how fast, at what CPU cost.
void Device::PrintFigures() const {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
  char line[1024];
  std::snprintf(line, sizeof line,
                "card_device: figures: %d power-ons, %llu blocks, %llu bytes, %llu overruns, %llu torn, %llu timeouts, "
                "%llu after release; %.1f s powered, %.1f MB/s while powered; block writes %.1f MB/s while writing "
                "(%llu bytes in %.3f s); %d sprays, %llu bytes at %.1f MB/s; %d faults by mailbox; CPU %.2f s in %.1f s\n",
                power_ons_, static_cast<unsigned long long>(total_.blocks), static_cast<unsigned long long>(total_.bytes),
                static_cast<unsigned long long>(total_.overruns), static_cast<unsigned long long>(total_.torn),
                static_cast<unsigned long long>(total_.timeouts), static_cast<unsigned long long>(total_.after_release),
                powered_seconds_, powered_seconds_ > 0 ? total_.bytes / powered_seconds_ / 1e6 : 0.0,
                bus_.write_seconds() > 0 ? bus_.write_bytes() / bus_.write_seconds() / 1e6 : 0.0,
                static_cast<unsigned long long>(bus_.write_bytes()), bus_.write_seconds(), sprays_,
                static_cast<unsigned long long>(spray_bytes_), spray_seconds_ > 0 ? spray_bytes_ / spray_seconds_ / 1e6 : 0.0,
                faults_, cpu, Now() - started_);
  std::fputs(line, stderr);
  if (!o_.report.empty()) std::ofstream(o_.report) << line;
}

}  // namespace
}  // namespace resmem::card

int main(int argc, char** argv) {
  using namespace resmem::card;
  auto o = ParseOptions(argc, argv);
  if (!o.ok()) {
    std::fprintf(stderr, "card_device: %s\n", o.status().message().c_str());
    return 2;
  }
  auto ram = MapRamFile(o->mem_file);
  if (!ram.ok()) {
    std::fprintf(stderr, "card_device: %s\n", ram.status().message().c_str());
    return 2;
  }
  const uint64_t low = o->low_mem ? o->low_mem : PcLowMem((*ram)->bytes);
  GuestRamBus bus((*ram)->base, (*ram)->bytes, low, o->ranges);
  signal(SIGTERM, OnSignal);
  signal(SIGINT, OnSignal);
  std::fprintf(stderr, "card_device: %s, %s of guest RAM (%s below 4 GiB), mailbox at %s; waiting for a guest\n",
               o->mem_file.c_str(), resmem::FormatSize((*ram)->bytes).c_str(), resmem::FormatSize(low).c_str(),
               resmem::HexAddress(o->mailbox).c_str());
  Device device(bus, *o);
  device.Loop();
  device.PrintFigures();
  return 0;
}
