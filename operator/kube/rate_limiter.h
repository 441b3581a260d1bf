// Rate limiters after client-go's util/workqueue and util/flowcontrol:
//  - TokenBucket: `qps` tokens per second, at most `burst` saved up. Used for the REST
//    client's client-side limit and as the work queue's overall limit.
//  - RateLimiter: per-item requeue delay for the work queue; ItemExponentialRateLimiter
//    (base * 2^failures, capped), BucketRateLimiter (one token bucket for all items) and
//    MaxOfRateLimiter (the longest of several).
// Time comes from an injected Clock, so every limiter is tested without sleeping.
//
//   auto limiter = DefaultControllerRateLimiter(&clock);  // 5ms*2^n..1000s, 10qps/100
//   absl::Duration wait = limiter->When("ns/name");
#ifndef BOOSTER_OPERATOR_KUBE_RATE_LIMITER_H_
#define BOOSTER_OPERATOR_KUBE_RATE_LIMITER_H_

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace booster::kube {

class TokenBucket {
 public:
  // qps <= 0 disables limiting. `clock` is not owned and must outlive the bucket.
  TokenBucket(double qps, int burst, Clock* clock);

  // Takes one token, now or in the future, and returns how long the caller must wait
  // before using it (zero if a token was available). Never fails: callers queue up.
  absl::Duration Reserve();
  // Takes a token only if one is available now.
  bool TryAccept();
  // Reserve() and then sleep on the clock.
  void Wait();

 private:
  void Refill(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const double qps_;
  const int burst_;
  Clock* const clock_;
  std::mutex mu_;
  double tokens_ ABSL_GUARDED_BY(mu_);
  absl::Time last_ ABSL_GUARDED_BY(mu_);
};

// Per-item delay policy of a rate-limited work queue. Thread-safe.
class RateLimiter {
 public:
  virtual ~RateLimiter() = default;
  // How long to wait before processing `item` again; counts a failure.
  virtual absl::Duration When(const std::string& item) = 0;
  // Forget the failures of `item` (it succeeded).
  virtual void Forget(const std::string& item) = 0;
  virtual int NumRequeues(const std::string& item) = 0;
};

// base * 2^(failures), capped at max.
class ItemExponentialRateLimiter final : public RateLimiter {
 public:
  ItemExponentialRateLimiter(absl::Duration base, absl::Duration max) : base_(base), max_(max) {}
  absl::Duration When(const std::string& item) override;
  void Forget(const std::string& item) override;
  int NumRequeues(const std::string& item) override;

 private:
  const absl::Duration base_;
  const absl::Duration max_;
  std::mutex mu_;
  std::unordered_map<std::string, int> failures_ ABSL_GUARDED_BY(mu_);
};

// One token bucket shared by every item: bounds the overall retry rate.
class BucketRateLimiter final : public RateLimiter {
 public:
  BucketRateLimiter(double qps, int burst, Clock* clock) : bucket_(qps, burst, clock) {}
  absl::Duration When(const std::string&) override { return bucket_.Reserve(); }
  void Forget(const std::string&) override {}
  int NumRequeues(const std::string&) override { return 0; }

 private:
  TokenBucket bucket_;
};

// The longest delay of its parts.
class MaxOfRateLimiter final : public RateLimiter {
 public:
  explicit MaxOfRateLimiter(std::vector<std::unique_ptr<RateLimiter>> parts)
      : parts_(std::move(parts)) {}
  absl::Duration When(const std::string& item) override;
  void Forget(const std::string& item) override;
  int NumRequeues(const std::string& item) override;

 private:
  std::vector<std::unique_ptr<RateLimiter>> parts_;
};

// controller-runtime's default: max(5ms * 2^n capped at 1000s, 10 qps / 100 burst).
std::unique_ptr<RateLimiter> DefaultControllerRateLimiter(Clock* clock);

}  // namespace booster::kube

#endif  // BOOSTER_OPERATOR_KUBE_RATE_LIMITER_H_
