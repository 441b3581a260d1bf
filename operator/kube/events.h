// EventRecorder: writes core/v1 Events about objects, with client-go's correlator in
// front: an identical event (same object, type, reason, message) within the cache bumps
// the existing Event's count instead of creating a new one, and a per-object token bucket
// (burst 25, one token per 5 minutes) drops the rest of an event storm.
//
//   EventRecorder events(&client, "booster-operator");
//   events.Event(profile, "Warning", "RolledBack", "canary p99 latency +18%");
#ifndef BOOSTER_OPERATOR_KUBE_EVENTS_H_
#define BOOSTER_OPERATOR_KUBE_EVENTS_H_

#include <list>
#include <memory>
#include <mutex>
#include <string>
#include "absl/strings/string_view.h"
#include <unordered_map>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "operator/kube/client.h"
#include "operator/kube/rate_limiter.h"

namespace booster::kube {

struct EventDecision {
  enum Kind { kCreate, kPatch, kDrop } kind = kCreate;
  std::string existing_name;  // kPatch: the Event to bump
  int64_t count = 1;          // kPatch: the new count
  absl::Time first_seen;      // kPatch: first timestamp of the series
};

// The pure part: decides create / patch / drop. Thread-safe.
class EventCorrelator {
 public:
  struct Options {
    int burst = 25;
    absl::Duration refill = absl::Minutes(5);  // one token per
    size_t max_entries = 4096;                 // LRU bound of both caches
  };
  explicit EventCorrelator(Clock* clock) : EventCorrelator(clock, Options()) {}
  EventCorrelator(Clock* clock, Options options);

  // `object_key` identifies the involved object (and source); `event_key` additionally
  // type, reason and message.
  EventDecision Observe(const std::string& object_key, const std::string& event_key);
  // Tells the correlator the Event `name` now stands for `event_key`.
  void Recorded(const std::string& event_key, const std::string& name, int64_t count,
                absl::Time first_seen);

 private:
  struct Seen {
    std::string name;
    int64_t count;
    absl::Time first_seen;
  };
  Clock* const clock_;
  const Options options_;
  std::mutex mu_;
  std::unordered_map<std::string, std::unique_ptr<TokenBucket>> buckets_ ABSL_GUARDED_BY(mu_);
  std::list<std::string> bucket_lru_ ABSL_GUARDED_BY(mu_);
  std::unordered_map<std::string, Seen> seen_ ABSL_GUARDED_BY(mu_);
  std::list<std::string> seen_lru_ ABSL_GUARDED_BY(mu_);
};

class EventRecorder {
 public:
  // `client` and `clock` not owned.
  EventRecorder(Client* client, std::string component, Clock* clock = &RealClock::Get(),
                std::string instance = "");

  // Records an event about `object` (a full object: apiVersion, kind, metadata). `type` is
  // "Normal" or "Warning". Returns OK when dropped by the spam filter. With an `id`, a new
  // Event is named after it (not after the time), so retrying a call whose answer was lost
  // finds it created (409) and records nothing twice.
  absl::Status Event(const Json& object, absl::string_view type, absl::string_view reason,
                     absl::string_view message, absl::string_view id = "");

  int64_t Dropped() const;

 private:
  Client* const client_;
  const std::string component_;
  Clock* const clock_;
  const std::string instance_;
  EventCorrelator correlator_;
  mutable std::mutex mu_;
  int64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t seq_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace booster::kube

#endif  // BOOSTER_OPERATOR_KUBE_EVENTS_H_
