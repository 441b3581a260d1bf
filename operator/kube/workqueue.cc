#include "operator/kube/workqueue.h"

#include <chrono>

namespace booster::kube {

WorkQueue::WorkQueue(Clock* clock, std::unique_ptr<RateLimiter> limiter)
    : WorkQueue(clock, std::move(limiter), Options()) {}

WorkQueue::WorkQueue(Clock* clock, std::unique_ptr<RateLimiter> limiter, Options options)
    : clock_(clock), limiter_(std::move(limiter)), options_(options) {
  delay_thread_ = std::thread([this] { DelayLoop(); });
}

WorkQueue::~WorkQueue() {
  ShutDown();
  delay_thread_.join();
}

void WorkQueue::AddLocked(const std::string& key) {
  if (shutting_down_) return;
  if (!dirty_.insert(key).second) return;
  if (processing_.count(key) != 0) return;  // re-queued by Done()
  queue_.push_back(key);
  ready_cv_.notify_one();
}

void WorkQueue::Add(const std::string& key) {
  std::lock_guard<std::mutex> l(mu_);
  AddLocked(key);
}

void WorkQueue::AddAfter(const std::string& key, absl::Duration delay) {
  std::lock_guard<std::mutex> l(mu_);
  if (shutting_down_) return;
  if (delay <= absl::ZeroDuration()) {
    AddLocked(key);
    return;
  }
  const absl::Time at = clock_->Now() + delay;
  auto it = waiting_at_.find(key);
  if (it != waiting_at_.end()) {
    if (it->second <= at) return;
    // Move earlier: drop the old entry.
    auto range = waiting_.equal_range(it->second);
    for (auto w = range.first; w != range.second; ++w) {
      if (w->second == key) {
        waiting_.erase(w);
        break;
      }
    }
    it->second = at;
  } else {
    waiting_at_.emplace(key, at);
  }
  waiting_.emplace(at, key);
  delay_cv_.notify_one();
}

void WorkQueue::AddRateLimited(const std::string& key) {
  AddAfter(key, limiter_ ? limiter_->When(key) : absl::ZeroDuration());
}

void WorkQueue::Forget(const std::string& key) {
  if (limiter_) limiter_->Forget(key);
}

int WorkQueue::NumRequeues(const std::string& key) {
  return limiter_ ? limiter_->NumRequeues(key) : 0;
}

std::optional<std::string> WorkQueue::Get() {
  std::unique_lock<std::mutex> l(mu_);
  ready_cv_.wait(l, [&] { return !queue_.empty() || shutting_down_; });
  if (queue_.empty()) return std::nullopt;
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  processing_.insert(key);
  dirty_.erase(key);
  return key;
}

void WorkQueue::Done(const std::string& key) {
  std::lock_guard<std::mutex> l(mu_);
  processing_.erase(key);
  if (dirty_.count(key) != 0) {
    queue_.push_back(key);
    ready_cv_.notify_one();
  }
}

void WorkQueue::ShutDown() {
  {
    std::lock_guard<std::mutex> l(mu_);
    shutting_down_ = true;
  }
  ready_cv_.notify_all();
  delay_cv_.notify_all();
}

bool WorkQueue::ShuttingDown() const {
  std::lock_guard<std::mutex> l(mu_);
  return shutting_down_;
}

size_t WorkQueue::Len() const {
  std::lock_guard<std::mutex> l(mu_);
  return queue_.size();
}

size_t WorkQueue::DelayedLen() const {
  std::lock_guard<std::mutex> l(mu_);
  return waiting_.size();
}

void WorkQueue::DelayLoop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!shutting_down_) {
    const absl::Time now = clock_->Now();
    while (!waiting_.empty() && waiting_.begin()->first <= now) {
      std::string key = waiting_.begin()->second;
      waiting_.erase(waiting_.begin());
      waiting_at_.erase(key);
      AddLocked(key);
    }
    absl::Duration wait = options_.max_idle_wait;
    if (!waiting_.empty()) wait = std::min(wait, waiting_.begin()->first - now);
    delay_cv_.wait_for(l, absl::ToChronoNanoseconds(wait));
  }
}

}  // namespace booster::kube
