// A CardPort (backends/api/card.h) over a CardBus: the card's window and its block slots laid out
// in a range the bus reaches, the driver reading them, and - where the card runs in this process -
// the engine writing them. On a virtual clock (the simulator) both run on one time line; on the
// steady clock (the GPU machine) the engine is a thread writing at its rate while the driver
// polls; without an engine (the QEMU lane) a device process elsewhere writes, and only the driver
// runs here.
#ifndef RESMEM_BACKENDS_CARD_CARD_PORT_H_
#define RESMEM_BACKENDS_CARD_CARD_PORT_H_

#include <atomic>
#include <functional>
#include <string>
#include <memory>
#include <optional>
#include <thread>

#include "backends/api/card.h"
#include "backends/api/clock.h"
#include "backends/card/card_driver.h"
#include "backends/card/card_engine.h"

namespace resmem::card {

// Where things go in [lo, hi): the register page at `window` (lo when 0), the ring after it, the
// block slots from the next 4 KiB boundary. Errors say what does not fit and what would.
// `second_card`: room after the blocks for a second card's register page and ring (a
// duplicate_target fault's), at second_window.
struct CardLayout {
  uint64_t window = 0, ring = 0;
  std::vector<uint64_t> targets;
  uint64_t second_window = 0;
};
Result<CardLayout> LayOut(const CardSetup& s, uint64_t lo, uint64_t hi, bool second_card = false);

// What every card step but card_start answers before the card is started (each CardPort's).
Status CardNotStarted();

class BusCardPort : public CardPort {
 public:
  // `ranges`: the reserved ranges [lo, hi) the card may use; card_start's window picks one (the
  // first by default).
  BusCardPort(std::unique_ptr<CardBus> bus, std::shared_ptr<Clock> clock, std::vector<std::pair<uint64_t, uint64_t>> ranges,
              bool with_engine);
  BusCardPort(std::unique_ptr<CardBus> bus, std::shared_ptr<Clock> clock, uint64_t lo, uint64_t hi, bool with_engine)
      : BusCardPort(std::move(bus), std::move(clock), {{lo, hi}}, with_engine) {}
  ~BusCardPort() override;

  Status Start(const CardSetup& setup) override;
  Status Run(double seconds) override;
  Status AddFault(const std::string& line) override;
  Status Stop(bool wait, double wait_seconds) override;
  Status Release(double then_seconds) override;
  Status Reset(double wait_seconds) override;
  CardReport Report() const override;

 private:
  Status StepOnce();
  Status WaitFor(double deadline, const std::function<Result<bool>()>& done, const std::string& what);
  Status RunCardAlone(double until);
  void StartEngineThread();
  void StopEngineThread();
  Status Started() const;
  Status StartSecondCard(const CardFault& f, const CardLayout& l);

  std::unique_ptr<CardBus> bus_;
  std::shared_ptr<Clock> clock_;
  std::vector<std::pair<uint64_t, uint64_t>> ranges_;
  bool with_engine_;
  CardSetup setup_;
  double started_at_ = 0;
  std::unique_ptr<CardDmaEngine> engine_;
  std::unique_ptr<CardDmaEngine> second_;  // a duplicate_target fault's card, writing into our targets
  std::unique_ptr<CardDriver> driver_;
  std::thread engine_thread_;
  std::atomic<bool> engine_stop_{false};
  Status engine_status_;
};

}  // namespace resmem::card

#endif  // RESMEM_BACKENDS_CARD_CARD_PORT_H_
