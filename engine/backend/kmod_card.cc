#include "engine/backend/kmod_card.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <thread>
#include <vector>

#include "backends/api/clock.h"
#include "backends/api/memory.h"
#include "backends/card/card_fault.h"
#include "backends/card/card_port.h"
#include "engine/backend/backend_factory.h"
#include "resmem_ioctl.h"

namespace resmem::engine {
namespace {

using Mailbox = resmem_card_lane_mailbox;
constexpr double kAckSeconds = 5;  // a device that is there answers within milliseconds

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::vector<std::string> Devices(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t g{};
  if (glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) out.push_back(g.gl_pathv[i]);
  globfree(&g);
  return out;
}

Result<resmem_info> Info(const std::string& path, int fd) {
  resmem_info info{};
  if (ioctl(fd, RESMEM_IOC_INFO, &info) != 0)
    return Status::Errno(errno, "RESMEM_IOC_INFO on " + path + ": " + std::strerror(errno) + " (not a resmem device?)");
  return info;
}

}  // namespace

Result<std::unique_ptr<KmodCardBus>> KmodCardBus::Open(const std::string& dev_glob, uint64_t window) {
  const std::vector<std::string> devices = Devices(dev_glob);
  if (devices.empty())
    return Status::Unavailable("no " + dev_glob + " device: the card writes into a range the module serves; load it "
                               "(insmod resmem.ko ranges=64M$0x40000000, docs/kmod.md) or run the QEMU lane");
  std::string ranges;
  for (const std::string& path : devices) {
    const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return Status::Errno(errno, "open " + path + ": " + std::strerror(errno));
    auto info = Info(path, fd);
    if (!info.ok() || (window && (window < info->phys_addr || window - info->phys_addr >= info->size))) {
      if (info.ok()) ranges += " " + path + " [" + HexAddress(info->phys_addr) + ", +" + FormatSize(info->size) + ")";
      close(fd);
      if (!info.ok()) return info.status();
      continue;
    }
    void* p = mmap(nullptr, info->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    const int err = errno;
    close(fd);
    if (p == MAP_FAILED) return Status::Errno(err, "mmap " + path + " for the card: " + std::strerror(err));
    return std::unique_ptr<KmodCardBus>(new KmodCardBus(static_cast<uint8_t*>(p), info->phys_addr, info->size, path));
  }
  return Status::InvalidArgument("card window " + HexAddress(window) + " is in no range the module serves:" + ranges +
                                 "; give a window inside one");
}

KmodCardBus::~KmodCardBus() { munmap(base_, hi_ - lo_); }

Status LaneMailbox::SetText(const std::string& text) {
  if (text.size() >= RESMEM_CARD_LANE_TEXT_BYTES)
    return Status::InvalidArgument("card fault script of " + std::to_string(text.size()) + " bytes: the lane's mailbox takes " +
                                   std::to_string(RESMEM_CARD_LANE_TEXT_BYTES - 1) + "; give it in several card_fault steps");
  std::string padded = text;
  padded.resize(RESMEM_CARD_LANE_TEXT_BYTES, '\0');
  return bus_.Write(at_ + offsetof(Mailbox, text), padded.data(), padded.size());
}

Status LaneMailbox::BumpLease() {
  RESMEM_ASSIGN_OR_RETURN(uint64_t lease, Get(offsetof(Mailbox, lease)));
  return Set(offsetof(Mailbox, lease), lease + 1);
}

Status LaneMailbox::Request(uint64_t request, double ack_seconds) {
  // The mailbox may hold anything before the boot's first request (the kmod scenarios write their
  // patterns over this range): the magic goes in last, so a device that sees it valid also sees
  // this request's number, and never 0 (a device that has answered nothing yet takes 0 as seen).
  // With the magic first, the device once took a stale number between the two stores, began the
  // power-on, and put the mailbox it had read back over the new number: the guest waited its 5 s
  // for an answer to a request the device had lost (the fresh clone of 686c49e, 2026-11-30).
  RESMEM_ASSIGN_OR_RETURN(uint64_t seq, Get(offsetof(Mailbox, request_seq)));
  if (++seq == 0) ++seq;
  RESMEM_RETURN_IF_ERROR(Set(offsetof(Mailbox, request), request));
  RESMEM_RETURN_IF_ERROR(BumpLease());
  RESMEM_RETURN_IF_ERROR(Set(offsetof(Mailbox, request_seq), seq));
  RESMEM_RETURN_IF_ERROR(Set(offsetof(Mailbox, magic), RESMEM_CARD_LANE_MAGIC));
  const double deadline = Now() + ack_seconds;
  for (;;) {
    RESMEM_ASSIGN_OR_RETURN(uint64_t ack, Get(offsetof(Mailbox, ack_seq)));
    if (ack == seq) break;
    if (Now() > deadline)
      return Status::Unavailable("no card device answered the mailbox at " + HexAddress(at_) + " within " +
                                 std::to_string(static_cast<int>(ack_seconds)) +
                                 " s: on the kmod backend the card is the QEMU lane's device process "
                                 "(ci/qemu/card_device, started beside QEMU by ci/qemu/kmod_lane.sh)");
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  RESMEM_ASSIGN_OR_RETURN(uint64_t status, Get(offsetof(Mailbox, ack_status)));
  if (status == 0) return Status::Ok();
  char why[RESMEM_CARD_LANE_TEXT_BYTES + 1] = {};
  RESMEM_RETURN_IF_ERROR(bus_.Read(at_ + offsetof(Mailbox, text), why, RESMEM_CARD_LANE_TEXT_BYTES));
  return Status::Errno(static_cast<int>(status), std::string("the card device refused: ") + why);
}

namespace {

// The CardPort: BusCardPort's driver over the module's mapping, the device told through the mailbox.
class KmodCardPort : public CardPort {
 public:
  KmodCardPort(std::string dev_glob, uint64_t mailbox) : glob_(std::move(dev_glob)), mailbox_at_(mailbox) {}
  ~KmodCardPort() override { PowerOff(); }

  Status Start(const CardSetup& setup) override;
  Status Run(double seconds) override;
  Status AddFault(const std::string& line) override;
  Status Stop(bool wait, double wait_seconds) override;
  Status Release(double then_seconds) override;
  Status Reset(double wait_seconds) override;
  CardReport Report() const override;

 private:
  Status Started() const {
    if (!port_) return card::CardNotStarted();
    return Status::Ok();
  }
  Status CheckMailboxClear(const CardSetup& setup, const KmodCardBus& bus, uint64_t mailbox);
  void PowerOff();

  std::string glob_;
  uint64_t mailbox_at_;
  KmodCardBus* bus_ = nullptr;  // owned by port_
  std::unique_ptr<LaneMailbox> mailbox_;
  std::unique_ptr<card::BusCardPort> port_;
};

// The mailbox's page must hold no ring entry and no block (LayOut's: the register page first,
// the ring and the slots after it).
Status KmodCardPort::CheckMailboxClear(const CardSetup& setup, const KmodCardBus& bus, uint64_t mailbox) {
  RESMEM_ASSIGN_OR_RETURN(card::CardLayout l, card::LayOut(setup, bus.lo(), bus.hi()));
  const uint64_t page = mailbox & ~4095ull, end = l.targets.back() + setup.block_bytes;
  if (page == l.window || page + 4096 <= l.ring || page >= end) return Status::Ok();
  return Status::InvalidArgument("card window " + HexAddress(l.window) + " puts its ring or blocks over the lane's mailbox at " +
                                 HexAddress(mailbox) + ": give a window at " + HexAddress(page) + " or after " +
                                 HexAddress(page + 4096));
}

// The lane's device process runs one engine: a duplicate_target fault's second card cannot run
// there. Refused by name rather than sent and ignored; other scripts are only parsed (by line).
Status RefuseSecondCard(const std::string& script) {
  RESMEM_ASSIGN_OR_RETURN(std::vector<card::CardFault> faults, card::ParseCardFaults(script));
  for (const auto& f : faults)
    if (f.kind == card::FaultKind::kDuplicateTarget)
      return Status::Unsupported("card fault '" + f.text + "': the QEMU lane's device process runs one card engine, "
                                 "and a duplicate target needs a second on the same bus: run it on --backend sim "
                                 "or cuda (docs/digitizer.md)");
  return Status::Ok();
}

Status KmodCardPort::Start(const CardSetup& setup) {
  PowerOff();
  port_.reset();
  RESMEM_ASSIGN_OR_RETURN(std::unique_ptr<KmodCardBus> bus, KmodCardBus::Open(glob_, setup.window));
  const uint64_t at = mailbox_at_ ? mailbox_at_ : bus->lo() + RESMEM_CARD_LANE_MAILBOX_OFFSET;
  if (at < bus->lo() || at + sizeof(Mailbox) > bus->hi())
    return Status::InvalidArgument("the card's mailbox " + HexAddress(at) + " is outside " + bus->device() +
                                   "; give --option card_mailbox inside it");
  RESMEM_RETURN_IF_ERROR(CheckMailboxClear(setup, *bus, at));
  RESMEM_RETURN_IF_ERROR(RefuseSecondCard(setup.faults));  // a bad script fails here, by line
  auto mailbox = std::make_unique<LaneMailbox>(*bus, at);
  const uint64_t window = setup.window ? setup.window : bus->lo();
  RESMEM_RETURN_IF_ERROR(mailbox->Set(offsetof(Mailbox, window), window));
  RESMEM_RETURN_IF_ERROR(mailbox->Set(offsetof(Mailbox, seed), setup.seed));
  RESMEM_RETURN_IF_ERROR(
      mailbox->Set(offsetof(Mailbox, flags), setup.model_payload ? RESMEM_CARD_LANE_FLAG_MODEL_PAYLOAD : 0));
  RESMEM_RETURN_IF_ERROR(mailbox->SetText(setup.faults));
  RESMEM_RETURN_IF_ERROR(mailbox->Request(RESMEM_CARD_LANE_POWER_ON, kAckSeconds).WithContext("card power-on"));
  const std::vector<std::pair<uint64_t, uint64_t>> ranges{{bus->lo(), bus->hi()}};
  bus_ = bus.get();
  mailbox_ = std::move(mailbox);
  port_ = std::make_unique<card::BusCardPort>(std::move(bus), std::make_shared<SteadyClock>(), ranges,
                                              /*with_engine=*/false);
  CardSetup driver = setup;
  driver.faults.clear();  // the device has them
  return port_->Start(driver);
}

// In pieces of a second at most, the lease bumped between: the device powers a silent guest off.
Status KmodCardPort::Run(double seconds) {
  RESMEM_RETURN_IF_ERROR(Started());
  const double until = Now() + seconds;
  for (double left = seconds; left > 0; left = until - Now()) {
    RESMEM_RETURN_IF_ERROR(mailbox_->BumpLease());
    RESMEM_RETURN_IF_ERROR(port_->Run(std::min(left, 1.0)));
  }
  return Status::Ok();
}

Status KmodCardPort::AddFault(const std::string& line) {
  RESMEM_RETURN_IF_ERROR(Started());
  RESMEM_RETURN_IF_ERROR(RefuseSecondCard(line));
  RESMEM_RETURN_IF_ERROR(mailbox_->SetText(line));
  return mailbox_->Request(RESMEM_CARD_LANE_FAULT, kAckSeconds).WithContext("card_fault '" + line + "'");
}

Status KmodCardPort::Stop(bool wait, double wait_seconds) {
  RESMEM_RETURN_IF_ERROR(Started());
  RESMEM_RETURN_IF_ERROR(mailbox_->BumpLease());
  return port_->Stop(wait, wait_seconds);
}

// The RESET goes through the register page, as on a card: the device process's engine reads the
// same page and acknowledges by clearing the bit; nothing goes through the mailbox.
Status KmodCardPort::Reset(double wait_seconds) {
  RESMEM_RETURN_IF_ERROR(Started());
  RESMEM_RETURN_IF_ERROR(mailbox_->BumpLease());
  return port_->Reset(wait_seconds);
}

// The device is told first (it counts what it writes from then on), then the driver fills the
// targets with canaries, waits, and counts what was overwritten.
Status KmodCardPort::Release(double then_seconds) {
  RESMEM_RETURN_IF_ERROR(Started());
  RESMEM_RETURN_IF_ERROR(mailbox_->Request(RESMEM_CARD_LANE_RELEASED, kAckSeconds).WithContext("card release"));
  return port_->Release(then_seconds);
}

// The driver's side from the driver, the card's side from the counters the device published.
CardReport KmodCardPort::Report() const {
  if (!port_) return CardReport{};
  CardReport r = port_->Report();
  auto get = [this](size_t off) {
    auto v = mailbox_->Get(off);
    return v.ok() ? *v : 0;
  };
  r.card_blocks = get(offsetof(Mailbox, blocks));
  r.card_overruns = get(offsetof(Mailbox, overruns));
  r.card_timeouts = get(offsetof(Mailbox, timeouts));
  r.card_torn = get(offsetof(Mailbox, torn));
  r.after_release = get(offsetof(Mailbox, after_release));
  r.out_of_order = get(offsetof(Mailbox, out_of_order));
  r.register_writes_lost = get(offsetof(Mailbox, register_writes_lost));
  r.link_down_seconds = get(offsetof(Mailbox, link_down_us)) / 1e6;
  return r;
}

// The device stops writing before the mapping goes; the mailbox is left without magic.
void KmodCardPort::PowerOff() {
  if (!mailbox_) return;
  (void)mailbox_->Request(RESMEM_CARD_LANE_POWER_OFF, 1.0);
  (void)mailbox_->Set(offsetof(Mailbox, magic), 0);
  mailbox_.reset();
}

// --option card_devices=GLOB (default /dev/resmem[0-9]*), card_mailbox=BUS (default: 0x800 into the
// window's range). Opens nothing until card_start, which names what is missing.
const bool kKmodCard = RegisterCardPart("kmod", [](PartContext& ctx) -> Result<std::unique_ptr<CardPort>> {
  const std::string glob = ctx.options.count("card_devices") ? ctx.options.at("card_devices") : "/dev/resmem[0-9]*";
  uint64_t mailbox = 0;
  if (ctx.options.count("card_mailbox")) {
    RESMEM_ASSIGN_OR_RETURN(mailbox, ParseSize(ctx.options.at("card_mailbox")));
  }
  return MakeKmodCardPort(glob, mailbox);
});

}  // namespace

std::unique_ptr<CardPort> MakeKmodCardPort(std::string dev_glob, uint64_t mailbox) {
  return std::make_unique<KmodCardPort>(std::move(dev_glob), mailbox);
}

}  // namespace resmem::engine
