// Dispatcher: delivers a profile's notifications off the reconcile path. Enqueue() only
// renders and queues (the reconciler never waits on a webhook); one background thread
// sends what is due, reads the channel's Secret at each attempt (so a Secret created or
// fixed after the fact is used), and retries on RetryDelay's schedule until delivered,
// refused (4xx) or kGiveUpAfter old. Deliveries of one channel go out in order. The queue
// lives in the leader's memory: what is queued when the process stops is not sent.
//
//   Dispatcher d(&poster, &secrets, &clock, &observer);
//   d.Start();
//   d.Enqueue(profile, {.type = "Warning", .reason = "RolledBack", ...});
//   d.Stop();
#ifndef BOOSTER_OPERATOR_NOTIFY_DISPATCHER_H_
#define BOOSTER_OPERATOR_NOTIFY_DISPATCHER_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "operator/notify/notification.h"

namespace booster::notify {

struct PostAnswer {
  int status = 0;
  std::string retry_after;  // the Retry-After header, "" if none
  std::string body;
};

// The one seam to HTTP (http_poster.h on cpprestsdk; a fake in tests).
class Poster {
 public:
  virtual ~Poster() = default;
  // POSTs `body` (application/json) to `url`. A status is an answer; an error is a
  // connection that failed (refused, timed out, TLS).
  virtual absl::StatusOr<PostAnswer> Post(const std::string& url, const std::string& body) = 0;
};

// Where webhook URLs come from (a Secret's key, through the Kubernetes API).
class SecretReader {
 public:
  virtual ~SecretReader() = default;
  // The value of `key` in Secret `ns`/`name`, decoded.
  virtual absl::StatusOr<std::string> Read(const std::string& ns, const std::string& name,
                                           const std::string& key) = 0;
};

// One delivery's fate; called from the dispatcher's thread.
struct DeliveryReport {
  std::string ns, profile, channel;
  Provider provider = Provider::kWebhook;
  Kind kind = Kind::kPromoted;
  int attempts = 0;
  Json profile_ref;    // apiVersion, kind and metadata of the profile (for an Event on it)
  absl::Status error;  // the last attempt's; ok when delivered
  bool final = false;  // delivered, refused or given up: no more attempts
  absl::Duration retry_in = absl::ZeroDuration();  // when not final
};
class DeliveryObserver {
 public:
  virtual ~DeliveryObserver() = default;
  virtual void Delivered(const DeliveryReport& r) = 0;
  // Every failed attempt; r.final when it will not be tried again.
  virtual void Failed(const DeliveryReport& r) = 0;
};

class Dispatcher {
 public:
  // Nothing is owned; all must outlive the dispatcher. `observer` may be null.
  Dispatcher(Poster* poster, SecretReader* secrets, Clock* clock, DeliveryObserver* observer);
  ~Dispatcher();  // Stop()s

  // Queues one message per channel of the profile's spec.notifications that wants this
  // Event's kind. Returns the channels' parse error (nothing is queued then); cheap and
  // never blocks on I/O.
  absl::Status Enqueue(const Json& profile, const EventFacts& event);

  // Makes every attempt due at the clock's now, in queue order (one channel's deliveries
  // in order: a channel whose head waits holds the rest). Returns when the next is due
  // (InfiniteFuture when nothing is queued). The thread calls it; tests call it directly.
  absl::Time RunDue();

  void Start();  // the background thread; idempotent
  void Stop();   // ends it after the attempt in flight; idempotent
  size_t Pending() const;

  static constexpr size_t kMaxQueued = 1000;  // beyond it the oldest is dropped

 private:
  struct Delivery {
    uint64_t id = 0;
    std::string channel_key;  // ns/profile/channel: its deliveries go out in order
    DeliveryReport report;
    std::string secret_name, secret_key, body;
    absl::Time first_attempt = absl::InfiniteFuture();
    absl::Time next_at = absl::InfinitePast();
  };
  // A copy of the delivery to try now (the first due one whose channel has nothing earlier
  // queued); it stays queued until its attempt's outcome is known.
  bool NextDue(absl::Time now, Delivery* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Attempt(Delivery d);
  void Loop();

  Poster* const poster_;
  SecretReader* const secrets_;
  Clock* const clock_;
  DeliveryObserver* const observer_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Delivery> queue_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::thread thread_;
};

}  // namespace booster::notify

#endif  // BOOSTER_OPERATOR_NOTIFY_DISPATCHER_H_
