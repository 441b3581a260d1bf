// ReconnectBackoff: the delays between the agent's attempts to (re)open its stream to the
// operator — 1 s doubling to 30 s, each shortened by a random share of up to `jitter`, so
// that the agents of a cluster, all cut off at once by an operator restart or a leader
// change, do not come back in lockstep. Pure: the caller waits on its own Clock.
//
//   ReconnectBackoff backoff(/*seed=*/42);
//   clock.SleepFor(backoff.Next());  // in [0.8 s, 1 s], then [1.6 s, 2 s], ... [24 s, 30 s]
//   backoff.Reset();                 // after a stream that worked
#ifndef BOOSTER_SIDECAR_FEEDBACK_CLIENT_RECONNECT_BACKOFF_H_
#define BOOSTER_SIDECAR_FEEDBACK_CLIENT_RECONNECT_BACKOFF_H_

#include <cstdint>
#include <random>

#include "absl/time/time.h"

namespace booster::agent {

struct ReconnectBackoffOptions {
  absl::Duration initial = absl::Seconds(1);
  absl::Duration max = absl::Seconds(30);
  // Each delay is uniform in [(1 - jitter) * d, d] for the un-jittered d; in [0, 1).
  // Jitter only ever shortens a delay, so `max` is a true bound.
  double jitter = 0.2;
};

class ReconnectBackoff {
 public:
  explicit ReconnectBackoff(uint64_t seed, ReconnectBackoffOptions options = {});

  // The delay before the next attempt.
  absl::Duration Next();
  // Back to `initial`.
  void Reset() { next_ = options_.initial; }
  // The un-jittered delay Next() would draw from.
  absl::Duration Peek() const { return next_; }

 private:
  const ReconnectBackoffOptions options_;
  absl::Duration next_;
  std::mt19937_64 rng_;
};

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_FEEDBACK_CLIENT_RECONNECT_BACKOFF_H_
