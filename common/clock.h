// Clock: the one source of time for every component, after Envoy's TimeSource.
// Production code takes a `Clock&`; tests pass a FakeClock and move time by hand, so
// backoff, lease renewal and analysis windows are tested without sleeping.
//
//   booster::FakeClock clock;
//   Backoff backoff(&clock);
//   clock.Advance(absl::Seconds(2));
#ifndef BOOSTER_COMMON_CLOCK_H_
#define BOOSTER_COMMON_CLOCK_H_

#include <condition_variable>
#include <mutex>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace booster {

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock time, for timestamps written to the API server.
  virtual absl::Time Now() const = 0;
  // Blocks the caller for `d` of this clock's time. FakeClock returns once time has
  // been advanced far enough by another thread.
  virtual void SleepFor(absl::Duration d) = 0;
};

// The real clock. Process-wide singleton; never destroyed.
class RealClock final : public Clock {
 public:
  static RealClock& Get();
  absl::Time Now() const override { return absl::Now(); }
  void SleepFor(absl::Duration d) override { absl::SleepFor(d); }
};

// A clock that moves only when told. Thread-safe: sleepers wake when Advance() passes
// their deadline.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1'700'000'000)) : now_(start) {}

  absl::Time Now() const override {
    std::lock_guard<std::mutex> l(mu_);
    return now_;
  }
  void SleepFor(absl::Duration d) override;
  void Advance(absl::Duration d);
  void SetTime(absl::Time t);
  // Number of threads currently blocked in SleepFor; lets a test wait until a worker
  // is parked before advancing time.
  int Sleepers() const {
    std::lock_guard<std::mutex> l(mu_);
    return sleepers_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  absl::Time now_;  // guarded by mu_
  int sleepers_ = 0;  // guarded by mu_
};

}  // namespace booster

#endif  // BOOSTER_COMMON_CLOCK_H_
