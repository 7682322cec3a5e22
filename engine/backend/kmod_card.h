// The card on the kmod backend: in the QEMU lane's guest the card is a device process on the host
// (ci/qemu/card_device.cc) writing into the guest's reserved RAM; here, inside the guest, only the
// driver runs (BusCardPort without an engine), over the real module's mapping of /dev/resmemN at
// the range's physical addresses. The guest powers the device on, gives it the scenario's faults
// and tells it of a release through the lane's mailbox (backends/card/card_abi.h, "Lane
// extension"); the device's counters come back the same way, so the card scenario files run
// unchanged (docs/digitizer.md "In the QEMU guest").
#ifndef RESMEM_ENGINE_BACKEND_KMOD_CARD_H_
#define RESMEM_ENGINE_BACKEND_KMOD_CARD_H_

#include <cstdint>
#include <memory>
#include <string>

#include "backends/api/card.h"
#include "backends/api/status.h"
#include "backends/card/card_abi.h"
#include "backends/card/card_engine.h"

namespace resmem::engine {

// A range the module serves, mapped shared: a CardBus at its physical addresses. Open picks, of
// the devices matching `dev_glob`, the one whose range holds `window` (the first when 0).
// Errors: Unavailable when no device matches (load the module), InvalidArgument when none holds
// the window, the open/ioctl/mmap errno otherwise, each naming the device.
class KmodCardBus : public card::SpanBus {
 public:
  static Result<std::unique_ptr<KmodCardBus>> Open(const std::string& dev_glob, uint64_t window);
  ~KmodCardBus() override;
  uint64_t lo() const { return lo_; }
  uint64_t hi() const { return hi_; }
  const std::string& device() const { return device_; }

 private:
  KmodCardBus(uint8_t* base, uint64_t phys, uint64_t size, std::string device)
      : card::SpanBus(base, phys, size), base_(base), lo_(phys), hi_(phys + size), device_(std::move(device)) {}
  uint8_t* base_;
  uint64_t lo_, hi_;
  std::string device_;
};

// The lane's mailbox as the guest's driver uses it. Request writes the request, then request_seq
// + 1 (never 0), then the magic, and waits up to `ack_seconds` for the device's ack: Unavailable when none
// comes (no device process: the lane starts ci/qemu/card_device beside QEMU), the device's errno
// and reason when it refused.
class LaneMailbox {
 public:
  LaneMailbox(card::CardBus& bus, uint64_t at) : bus_(bus), at_(at) {}
  Status Set(uint64_t field_offset, uint64_t value) { return bus_.Store64(at_ + field_offset, value); }
  Result<uint64_t> Get(uint64_t field_offset) { return bus_.Load64(at_ + field_offset); }
  Status SetText(const std::string& text);
  Status Request(uint64_t request, double ack_seconds);
  // Tells the device the guest is still there (it powers a silent guest's card off).
  Status BumpLease();
  uint64_t at() const { return at_; }

 private:
  card::CardBus& bus_;
  uint64_t at_;
};

// The kmod backend's card part. `mailbox`: its bus address; 0: 0x800 into the first page of the
// range the card's window is in (where the lane's device looks: kmod_lane.sh --mailbox).
std::unique_ptr<CardPort> MakeKmodCardPort(std::string dev_glob, uint64_t mailbox);

}  // namespace resmem::engine

#endif  // RESMEM_ENGINE_BACKEND_KMOD_CARD_H_
