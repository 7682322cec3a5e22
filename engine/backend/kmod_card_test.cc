// The lane's mailbox as the guest writes it (LaneMailbox::Request): a device that sees the magic
// valid sees this request's number and kind, whatever the memory held before; the number is never
// 0 (a device that has answered nothing takes 0 as seen).
#include "engine/backend/kmod_card.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace resmem::engine {
namespace {

using Mailbox = resmem_card_lane_mailbox;
constexpr uint64_t kAt = 0x40000800;

// A device that acts the moment the magic reads valid, as ci/qemu/card_device's Serve may (it
// polls every millisecond, between any two of the guest's stores): it notes the request number
// and kind it would take then, and answers that number at once.
class EagerDeviceBus : public card::SpanBus {
 public:
  explicit EagerDeviceBus(std::vector<uint8_t>& mem) : card::SpanBus(mem.data(), kAt, mem.size()) {}
  Status Store64(uint64_t bus, uint64_t value) override {
    RESMEM_RETURN_IF_ERROR(card::SpanBus::Store64(bus, value));
    RESMEM_ASSIGN_OR_RETURN(uint64_t magic, Load64(kAt + offsetof(Mailbox, magic)));
    if (magic != RESMEM_CARD_LANE_MAGIC || seen) return Status::Ok();
    seen = true;
    RESMEM_ASSIGN_OR_RETURN(seq_seen, Load64(kAt + offsetof(Mailbox, request_seq)));
    RESMEM_ASSIGN_OR_RETURN(request_seen, Load64(kAt + offsetof(Mailbox, request)));
    RESMEM_RETURN_IF_ERROR(card::SpanBus::Store64(kAt + offsetof(Mailbox, ack_status), 0));
    return card::SpanBus::Store64(kAt + offsetof(Mailbox, ack_seq), seq_seen);
  }
  bool seen = false;
  uint64_t seq_seen = 0, request_seen = 0;
};

// What the kmod scenarios leave in the range before the first card case: a pattern, here one
// whose request_seq word is `stale`.
std::vector<uint8_t> Garbage(uint64_t stale) {
  std::vector<uint8_t> mem(sizeof(Mailbox));
  for (size_t i = 0; i < mem.size(); ++i) mem[i] = static_cast<uint8_t>(i * 37 + 11);
  Mailbox m;
  std::memcpy(&m, mem.data(), sizeof m);
  m.request_seq = stale;
  m.magic = 0;
  std::memcpy(mem.data(), &m, sizeof m);
  return mem;
}

TEST(LaneMailbox, TheDeviceSeesTheMagicOnlyWithThisRequestsNumber) {
  auto mem = Garbage(0x1234);
  EagerDeviceBus bus(mem);
  LaneMailbox mailbox(bus, kAt);
  ASSERT_TRUE(mailbox.Request(RESMEM_CARD_LANE_POWER_ON, 1).ok());
  ASSERT_TRUE(bus.seen);
  EXPECT_EQ(bus.seq_seen, 0x1235u) << "the device took a stale request number";
  EXPECT_EQ(bus.request_seen, static_cast<uint64_t>(RESMEM_CARD_LANE_POWER_ON));
}

TEST(LaneMailbox, TheRequestNumberIsNeverZero) {
  auto mem = Garbage(UINT64_MAX);
  EagerDeviceBus bus(mem);
  LaneMailbox mailbox(bus, kAt);
  ASSERT_TRUE(mailbox.Request(RESMEM_CARD_LANE_POWER_OFF, 1).ok());
  EXPECT_EQ(bus.seq_seen, 1u);
}

}  // namespace
}  // namespace resmem::engine
