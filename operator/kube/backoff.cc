#include "operator/kube/backoff.h"

#include <algorithm>

namespace booster::kube {

absl::Duration Backoff::Next() {
  absl::Duration d = next_;
  next_ = std::min(max_, next_ * factor_);
  if (jitter_ > 0) {
    std::uniform_real_distribution<double> dist(0.0, jitter_);
    d += d * dist(rng_);
  }
  return d;
}

}  // namespace booster::kube
