#include "operator/kube/controller.h"

#include <algorithm>
#include <cstdio>

namespace booster::kube {

absl::Status RetryOnConflict(Clock* clock, const std::function<absl::Status()>& fn,
                             int attempts) {
  absl::Duration delay = absl::Milliseconds(10);
  absl::Status s;
  for (int i = 0; i < std::max(1, attempts); ++i) {
    s = fn();
    if (!absl::IsAborted(s)) return s;
    if (i + 1 < attempts) clock->SleepFor(delay);
    delay *= 2;
  }
  return s;
}

Controller::Controller(Clock* clock, ReconcileFunc reconcile, ControllerOptions options,
                       std::unique_ptr<RateLimiter> limiter)
    : reconcile_(std::move(reconcile)), options_(options),
      queue_(clock, limiter ? std::move(limiter) : DefaultControllerRateLimiter(clock),
             options.queue) {}

Controller::~Controller() { Stop(); }

void Controller::Start() {
  if (!workers_.empty()) return;
  for (int i = 0; i < std::max(1, options_.workers); ++i) {
    workers_.emplace_back([this] { Worker(); });
  }
}

void Controller::Stop() {
  queue_.ShutDown();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
}

void Controller::Worker() {
  while (std::optional<std::string> key = queue_.Get()) {
    absl::StatusOr<Result> r;
    try {
      r = reconcile_(*key);
    } catch (const std::exception& e) {
      r = absl::InternalError(std::string("reconcile threw: ") + e.what());
    }
    reconciles_.fetch_add(1);
    if (!r.ok()) {
      errors_.fetch_add(1);
      std::fprintf(stderr, "reconcile %s: %s\n", key->c_str(), r.status().ToString().c_str());
      queue_.AddRateLimited(*key);
    } else {
      queue_.Forget(*key);
      if (r->requeue_after > absl::ZeroDuration()) queue_.AddAfter(*key, r->requeue_after);
    }
    queue_.Done(*key);
  }
}

}  // namespace booster::kube
