// Controller: N workers draining a rate-limited WorkQueue into a Reconcile function, the
// way controller-runtime runs a reconciler. Reconcile is level-based: it gets a key, reads
// the current state, and returns done, requeue-after, or an error (retried with the
// queue's per-key backoff). A key is never reconciled by two workers at once.
//
//   Controller c(&clock, [&](const std::string& key) -> absl::StatusOr<Result> {
//     ...; return Result::Done();
//   }, {.workers = 2});
//   informer.AddEventHandler(c.EnqueueHandlers());
//   c.Start();
#ifndef BOOSTER_OPERATOR_KUBE_CONTROLLER_H_
#define BOOSTER_OPERATOR_KUBE_CONTROLLER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "operator/kube/workqueue.h"

namespace booster::kube {

struct Result {
  absl::Duration requeue_after = absl::ZeroDuration();  // zero: done
  static Result Done() { return {}; }
  static Result RequeueAfter(absl::Duration d) { return {d}; }
};

using ReconcileFunc = std::function<absl::StatusOr<Result>(const std::string& key)>;

struct ControllerOptions {
  int workers = 1;
  WorkQueue::Options queue;
};

// client-go's retry.RetryOnConflict: runs `fn` (read, modify, write) again while it fails
// with a conflict (HTTP 409, kAborted), up to `attempts` times, sleeping 10 ms, 20 ms, ...
// on `clock` between attempts. Other errors and success return at once.
absl::Status RetryOnConflict(Clock* clock, const std::function<absl::Status()>& fn,
                             int attempts = 5);

class Controller {
 public:
  // The default rate limiter is DefaultControllerRateLimiter(clock). `clock` not owned.
  Controller(Clock* clock, ReconcileFunc reconcile, ControllerOptions options = {},
             std::unique_ptr<RateLimiter> limiter = nullptr);
  ~Controller();

  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  void Start();
  // Shuts the queue down and joins the workers (in-flight reconciles finish).
  void Stop();

  WorkQueue& queue() { return queue_; }
  void Enqueue(const std::string& key) { queue_.Add(key); }

  int64_t Reconciles() const { return reconciles_.load(); }
  int64_t Errors() const { return errors_.load(); }

 private:
  void Worker();

  const ReconcileFunc reconcile_;
  const ControllerOptions options_;
  WorkQueue queue_;
  std::vector<std::thread> workers_;
  std::atomic<int64_t> reconciles_{0};
  std::atomic<int64_t> errors_{0};
};

}  // namespace booster::kube

#endif  // BOOSTER_OPERATOR_KUBE_CONTROLLER_H_
