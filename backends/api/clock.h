// Time as the backends see it. The simulator runs on virtual time: modelled costs advance the
// clock, so copying 188 GB costs no real time. Real backends run on the steady clock.
#ifndef RESMEM_BACKENDS_API_CLOCK_H_
#define RESMEM_BACKENDS_API_CLOCK_H_

#include <atomic>
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

// Thread-safe: one world's clock is charged from several threads at once (the FUSE daemon's
// worker threads serving writes to simulated memory, the stream's producer and consumer); a plain
// `now_ += seconds` there was a data race (ThreadSanitizer, docs/reliability.md "tsan"). Charges
// from one thread add up exactly as before.
class VirtualClock : public Clock {
 public:
  double NowSeconds() const override { return now_.load(std::memory_order_relaxed); }
  void Charge(double seconds) override {
    if (!(seconds > 0)) return;
    double now = now_.load(std::memory_order_relaxed);
    while (!now_.compare_exchange_weak(now, now + seconds, std::memory_order_relaxed)) {
    }
  }
  bool is_virtual() const override { return true; }

 private:
  std::atomic<double> now_{0};
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
