#include "common/clock.h"

namespace booster {

RealClock& RealClock::Get() {
  static RealClock* clock = new RealClock();
  return *clock;
}

void FakeClock::SleepFor(absl::Duration d) {
  std::unique_lock<std::mutex> l(mu_);
  const absl::Time deadline = now_ + d;
  ++sleepers_;
  cv_.wait(l, [&] { return now_ >= deadline; });
  --sleepers_;
}

void FakeClock::Advance(absl::Duration d) {
  {
    std::lock_guard<std::mutex> l(mu_);
    now_ += d;
  }
  cv_.notify_all();
}

void FakeClock::SetTime(absl::Time t) {
  {
    std::lock_guard<std::mutex> l(mu_);
    now_ = t;
  }
  cv_.notify_all();
}

}  // namespace booster
