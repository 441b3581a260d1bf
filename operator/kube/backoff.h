// Backoff: exponential delays with optional jitter, for retrying failed list/watch calls
// (client-go's reflector: 800 ms doubling to 30 s) and leader-election attempts. Pure: the
// caller sleeps on its own Clock.
//
//   Backoff b(absl::Milliseconds(800), absl::Seconds(30));
//   clock.SleepFor(b.Next());   // 800ms, 1.6s, 3.2s, ... 30s, 30s
//   b.Reset();                  // after a success
#ifndef BOOSTER_OPERATOR_KUBE_BACKOFF_H_
#define BOOSTER_OPERATOR_KUBE_BACKOFF_H_

#include <cstdint>
#include <random>

#include "absl/time/time.h"

namespace booster::kube {

class Backoff {
 public:
  // `jitter` in [0, 1]: each delay is stretched by a uniform factor in [1, 1 + jitter],
  // so that many clients failing together do not retry together.
  Backoff(absl::Duration initial, absl::Duration max, double factor = 2.0, double jitter = 0.0,
          uint64_t seed = 0x5eed)
      : initial_(initial), max_(max), factor_(factor), jitter_(jitter), next_(initial),
        rng_(seed) {}

  // The delay before the next attempt; grows geometrically up to `max`.
  absl::Duration Next();
  // Back to `initial` (call after a success).
  void Reset() { next_ = initial_; }
  // The delay Next() would return without jitter.
  absl::Duration Peek() const { return next_; }

 private:
  absl::Duration initial_;
  absl::Duration max_;
  double factor_;
  double jitter_;
  absl::Duration next_;
  std::mt19937_64 rng_;
};

}  // namespace booster::kube

#endif  // BOOSTER_OPERATOR_KUBE_BACKOFF_H_
