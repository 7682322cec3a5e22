// Time as the backends see it. The simulator runs on virtual time: modelled costs advance the
// clock, so copying 188 GB costs no real time. Real backends run on the steady clock.
#ifndef RESMEM_BACKENDS_API_CLOCK_H_
#define RESMEM_BACKENDS_API_CLOCK_H_

#include <chrono>

namespace resmem {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual double NowSeconds() const = 0;
  // Charges a modelled cost. Virtual clocks move forward; the steady clock ignores it (real work
  // already took real time).
  virtual void Charge(double seconds) = 0;
  virtual bool is_virtual() const = 0;
};

class VirtualClock : public Clock {
 public:
  double NowSeconds() const override { return now_; }
  void Charge(double seconds) override {
    if (seconds > 0) now_ += seconds;
  }
  bool is_virtual() const override { return true; }

 private:
  double now_ = 0;
};

class SteadyClock : public Clock {
 public:
  double NowSeconds() const override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  void Charge(double) override {}
  bool is_virtual() const override { return false; }
};

}  // namespace resmem

#endif  // RESMEM_BACKENDS_API_CLOCK_H_
