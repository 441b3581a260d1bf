// WorkQueue: client-go's rate-limited work queue. Keys ("namespace/name") are
// deduplicated while waiting, a key is never handed to two workers at once (a key added
// while being processed is queued again when Done() is called), and keys can be added
// after a delay or after a per-key backoff from a RateLimiter.
//
//   WorkQueue q(&clock, DefaultControllerRateLimiter(&clock));
//   q.Add("default/web");
//   while (auto key = q.Get()) {        // blocks; nullopt after ShutDown()
//     if (Reconcile(*key).ok()) q.Forget(*key); else q.AddRateLimited(*key);
//     q.Done(*key);
//   }
#ifndef BOOSTER_OPERATOR_KUBE_WORKQUEUE_H_
#define BOOSTER_OPERATOR_KUBE_WORKQUEUE_H_

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "operator/kube/rate_limiter.h"

namespace booster::kube {

class WorkQueue {
 public:
  struct Options {
    // Longest real-time wait of the delay thread before it re-reads the clock. With a
    // RealClock this only bounds idle wake-ups; with a FakeClock it is how quickly an
    // Advance() is noticed.
    absl::Duration max_idle_wait = absl::Seconds(1);
  };

  // `clock` is not owned. `limiter` may be null (AddRateLimited then adds at once).
  WorkQueue(Clock* clock, std::unique_ptr<RateLimiter> limiter);
  WorkQueue(Clock* clock, std::unique_ptr<RateLimiter> limiter, Options options);
  ~WorkQueue();

  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues `key` unless it is already waiting. Ignored after ShutDown().
  void Add(const std::string& key);
  // Adds `key` once `delay` has passed on the clock (at once if delay <= 0). A key
  // already waiting for a later time is moved earlier, never later.
  void AddAfter(const std::string& key, absl::Duration delay);
  // Adds after the rate limiter's delay for this key (counts a failure).
  void AddRateLimited(const std::string& key);
  // Clears the key's failure history (call after a success).
  void Forget(const std::string& key);
  int NumRequeues(const std::string& key);

  // Blocks until a key is ready; the caller owns it until Done(key). nullopt once the
  // queue is shut down and empty.
  std::optional<std::string> Get();
  void Done(const std::string& key);

  // Stops accepting keys and wakes every Get(). Keys already queued are still handed out
  // (drain) until none remain.
  void ShutDown();
  bool ShuttingDown() const;

  // Keys ready to be handed out (not counting delayed or in-process keys).
  size_t Len() const;
  // Keys waiting for a delay.
  size_t DelayedLen() const;

 private:
  void AddLocked(const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DelayLoop();

  Clock* const clock_;
  const std::unique_ptr<RateLimiter> limiter_;
  const Options options_;

  mutable std::mutex mu_;
  std::condition_variable ready_cv_;
  std::condition_variable delay_cv_;
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);
  std::unordered_set<std::string> dirty_ ABSL_GUARDED_BY(mu_);
  std::unordered_set<std::string> processing_ ABSL_GUARDED_BY(mu_);
  // Delayed keys: ready time -> keys, and key -> its ready time (for moving earlier).
  std::multimap<absl::Time, std::string> waiting_ ABSL_GUARDED_BY(mu_);
  std::unordered_map<std::string, absl::Time> waiting_at_ ABSL_GUARDED_BY(mu_);
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  std::thread delay_thread_;
};

}  // namespace booster::kube

#endif  // BOOSTER_OPERATOR_KUBE_WORKQUEUE_H_
