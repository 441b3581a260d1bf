// Clock: the one source of time for every component, after Envoy's TimeSource.
// Production code takes a `Clock&`; tests pass a FakeClock and move time by hand, so
// backoff, lease renewal and analysis windows are tested without sleeping.
//
//   booster::FakeClock clock;
//   Backoff backoff(&clock);
//   clock.Advance(absl::Seconds(2));
#ifndef BOOSTER_COMMON_CLOCK_H_
#define BOOSTER_COMMON_CLOCK_H_

#include <algorithm>
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

// Waits on `cv` (with `lock` held) until `d` of `clock`'s time has passed, returning
// true, or until `stopped()` holds, returning false. The clock is re-read at least every
// 50 ms of real time, so a FakeClock advanced by another thread wakes the waiter too.
// For loops that sleep between retries but must stop promptly on shutdown:
//
//   std::unique_lock<std::mutex> l(mu_);
//   if (!WaitUnlessStopped(*clock_, cv_, l, backoff, [&] { return stopping_; })) return;
template <typename StopFn>
bool WaitUnlessStopped(const Clock& clock, std::condition_variable& cv,
                       std::unique_lock<std::mutex>& lock, absl::Duration d, StopFn stopped) {
  const absl::Time deadline = clock.Now() + d;
  while (!stopped()) {
    const absl::Duration left = deadline - clock.Now();
    if (left <= absl::ZeroDuration()) return true;
    cv.wait_for(lock, absl::ToChronoNanoseconds(std::min(left, absl::Milliseconds(50))));
  }
  return false;
}

}  // namespace booster

#endif  // BOOSTER_COMMON_CLOCK_H_
