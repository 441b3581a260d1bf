#include "sidecar/feedback/client/reconnect_backoff.h"

#include <algorithm>

namespace booster::agent {

ReconnectBackoff::ReconnectBackoff(uint64_t seed, ReconnectBackoffOptions options)
    : options_(options), next_(options.initial), rng_(seed) {}

absl::Duration ReconnectBackoff::Next() {
  const absl::Duration d = std::min(next_, options_.max);
  next_ = std::min(d * 2, options_.max);
  const double jitter = std::clamp(options_.jitter, 0.0, 1.0);
  if (jitter == 0) return d;
  std::uniform_real_distribution<double> share(0.0, jitter);
  return d - d * share(rng_);
}

}  // namespace booster::agent
