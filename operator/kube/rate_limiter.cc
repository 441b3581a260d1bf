#include "operator/kube/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace booster::kube {

TokenBucket::TokenBucket(double qps, int burst, Clock* clock)
    : qps_(qps), burst_(std::max(1, burst)), clock_(clock), tokens_(std::max(1, burst)),
      last_(clock->Now()) {}

void TokenBucket::Refill(absl::Time now) {
  if (now > last_) {
    tokens_ = std::min<double>(burst_, tokens_ + absl::ToDoubleSeconds(now - last_) * qps_);
    last_ = now;
  }
}

absl::Duration TokenBucket::Reserve() {
  if (qps_ <= 0) return absl::ZeroDuration();
  std::lock_guard<std::mutex> l(mu_);
  Refill(clock_->Now());
  tokens_ -= 1;
  if (tokens_ >= 0) return absl::ZeroDuration();
  // A negative balance is a queue of reservations; the last one waits the longest.
  return absl::Seconds(-tokens_ / qps_);
}

bool TokenBucket::TryAccept() {
  if (qps_ <= 0) return true;
  std::lock_guard<std::mutex> l(mu_);
  Refill(clock_->Now());
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

void TokenBucket::Wait() {
  absl::Duration d = Reserve();
  if (d > absl::ZeroDuration()) clock_->SleepFor(d);
}

absl::Duration ItemExponentialRateLimiter::When(const std::string& item) {
  int n;
  {
    std::lock_guard<std::mutex> l(mu_);
    n = failures_[item]++;
  }
  // 2^n overflows long before it matters; the cap is reached by n = 40 for any sane base.
  if (n > 62) return max_;
  double d = absl::ToDoubleSeconds(base_) * std::ldexp(1.0, n);
  if (d >= absl::ToDoubleSeconds(max_)) return max_;
  return absl::Seconds(d);
}

void ItemExponentialRateLimiter::Forget(const std::string& item) {
  std::lock_guard<std::mutex> l(mu_);
  failures_.erase(item);
}

int ItemExponentialRateLimiter::NumRequeues(const std::string& item) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = failures_.find(item);
  return it == failures_.end() ? 0 : it->second;
}

absl::Duration MaxOfRateLimiter::When(const std::string& item) {
  absl::Duration d = absl::ZeroDuration();
  for (auto& p : parts_) d = std::max(d, p->When(item));
  return d;
}

void MaxOfRateLimiter::Forget(const std::string& item) {
  for (auto& p : parts_) p->Forget(item);
}

int MaxOfRateLimiter::NumRequeues(const std::string& item) {
  int n = 0;
  for (auto& p : parts_) n = std::max(n, p->NumRequeues(item));
  return n;
}

std::unique_ptr<RateLimiter> DefaultControllerRateLimiter(Clock* clock) {
  std::vector<std::unique_ptr<RateLimiter>> parts;
  parts.push_back(std::make_unique<ItemExponentialRateLimiter>(absl::Milliseconds(5),
                                                               absl::Seconds(1000)));
  parts.push_back(std::make_unique<BucketRateLimiter>(10, 100, clock));
  return std::make_unique<MaxOfRateLimiter>(std::move(parts));
}

}  // namespace booster::kube
