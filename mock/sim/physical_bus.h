// The card's bus on the simulator: the simulated machine's physical memory (sparse; holes read
// zeros and drop writes, as a DMA into a hole goes nowhere). The simulator runs the card and the
// driver on one thread, so 64-bit accesses are plain.
#ifndef RESMEM_MOCK_SIM_PHYSICAL_BUS_H_
#define RESMEM_MOCK_SIM_PHYSICAL_BUS_H_

#include <memory>

#include "backends/card/card_engine.h"
#include "backends/card/card_port.h"
#include "mock/sim/sim_world.h"

namespace resmem::sim {

class PhysicalMemoryBus : public card::CardBus {
 public:
  explicit PhysicalMemoryBus(std::shared_ptr<SimWorld> world) : world_(std::move(world)) {}
  Status Write(uint64_t bus, const void* data, uint64_t len) override {
    world_->memory.Write(bus, data, len);
    return Status::Ok();
  }
  Status Read(uint64_t bus, void* out, uint64_t len) override {
    world_->memory.Read(bus, out, len);
    return Status::Ok();
  }
  Result<uint64_t> Load64(uint64_t bus) override {
    uint64_t v = 0;
    world_->memory.Read(bus, &v, 8);
    return v;
  }
  Status Store64(uint64_t bus, uint64_t value) override { return Write(bus, &value, 8); }
  Status Load64s(uint64_t base, const uint64_t* offsets, uint64_t* values, size_t n) override {
    world_->memory.ReadWords(base, offsets, values, n);
    return Status::Ok();
  }
  Status Store64s(uint64_t base, const uint64_t* offsets, const uint64_t* values, size_t n) override {
    world_->memory.WriteWords(base, offsets, values, n);
    return Status::Ok();
  }

 private:
  std::shared_ptr<SimWorld> world_;
};

// The simulator's card: its engine and driver on the world's clock, in the machine's reserved
// ranges (the sim and fuse backends' card part).
inline std::unique_ptr<CardPort> MakeSimCard(std::shared_ptr<SimWorld> world, std::shared_ptr<Clock> clock) {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto& r : world->kernel.reservations) ranges.push_back({r.start, r.end});
  return std::make_unique<card::BusCardPort>(std::make_unique<PhysicalMemoryBus>(world), std::move(clock), ranges,
                                             /*with_engine=*/true);
}

}  // namespace resmem::sim

#endif  // RESMEM_MOCK_SIM_PHYSICAL_BUS_H_
