#include "operator/kube/events.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "operator/kube/api_status.h"
#include "operator/kube/helpers.h"

namespace booster::kube {

EventCorrelator::EventCorrelator(Clock* clock, Options options)
    : clock_(clock), options_(options) {}

EventDecision EventCorrelator::Observe(const std::string& object_key,
                                       const std::string& event_key) {
  std::lock_guard<std::mutex> l(mu_);
  EventDecision d;
  auto b = buckets_.find(object_key);
  if (b == buckets_.end()) {
    if (buckets_.size() >= options_.max_entries && !bucket_lru_.empty()) {
      buckets_.erase(bucket_lru_.front());
      bucket_lru_.pop_front();
    }
    b = buckets_
            .emplace(object_key,
                     std::make_unique<TokenBucket>(1.0 / absl::ToDoubleSeconds(options_.refill),
                                                   options_.burst, clock_))
            .first;
    bucket_lru_.push_back(object_key);
  }
  if (!b->second->TryAccept()) {
    d.kind = EventDecision::kDrop;
    return d;
  }
  auto s = seen_.find(event_key);
  if (s != seen_.end()) {
    d.kind = EventDecision::kPatch;
    d.existing_name = s->second.name;
    d.count = s->second.count + 1;
    d.first_seen = s->second.first_seen;
    return d;
  }
  d.kind = EventDecision::kCreate;
  d.first_seen = clock_->Now();
  return d;
}

void EventCorrelator::Recorded(const std::string& event_key, const std::string& name,
                               int64_t count, absl::Time first_seen) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = seen_.find(event_key);
  if (it == seen_.end()) {
    if (seen_.size() >= options_.max_entries && !seen_lru_.empty()) {
      seen_.erase(seen_lru_.front());
      seen_lru_.pop_front();
    }
    seen_.emplace(event_key, Seen{name, count, first_seen});
    seen_lru_.push_back(event_key);
  } else {
    it->second = Seen{name, count, first_seen};
  }
}

EventRecorder::EventRecorder(Client* client, std::string component, Clock* clock,
                             std::string instance)
    : client_(client), component_(std::move(component)), clock_(clock),
      instance_(std::move(instance)), correlator_(clock) {}

int64_t EventRecorder::Dropped() const {
  std::lock_guard<std::mutex> l(mu_);
  return dropped_;
}

absl::Status EventRecorder::Event(const Json& object, absl::string_view type,
                                  absl::string_view reason, absl::string_view message,
                                  absl::string_view id) {
  const std::string ns_obj = JsonString(object, "/metadata/namespace");
  const std::string ns = ns_obj.empty() ? "default" : ns_obj;
  const std::string name = JsonString(object, "/metadata/name");
  const std::string uid = JsonString(object, "/metadata/uid");
  const std::string kind = JsonString(object, "/kind");
  const std::string object_key = absl::StrCat(component_, "\x1f", kind, "\x1f", ns_obj, "\x1f",
                                              name, "\x1f", uid);
  const std::string event_key =
      absl::StrCat(object_key, "\x1f", type, "\x1f", reason, "\x1f", message);
  EventDecision d = correlator_.Observe(object_key, event_key);
  const absl::Time now = clock_->Now();
  if (d.kind == EventDecision::kDrop) {
    std::lock_guard<std::mutex> l(mu_);
    ++dropped_;
    return absl::OkStatus();
  }
  if (d.kind == EventDecision::kPatch) {
    Json patch = {{"count", d.count}, {"lastTimestamp", Rfc3339(now)}};
    absl::StatusOr<Json> r =
        client_->Patch(kEvents, ns, d.existing_name, PatchType::kMerge, patch);
    if (r.ok()) {
      correlator_.Recorded(event_key, d.existing_name, d.count, d.first_seen);
      return absl::OkStatus();
    }
    if (!absl::IsNotFound(r.status())) return r.status();
    // The Event expired on the server: start a new series.
    d.first_seen = now;
  }
  uint64_t seq;
  {
    std::lock_guard<std::mutex> l(mu_);
    seq = ++seq_;
  }
  // client-go names events <object>.<unix nanos in hex>; add a sequence so two events in
  // the same nanosecond do not collide.
  std::string event_name = id.empty()
                               ? absl::StrFormat("%s.%x%x", name, absl::ToUnixNanos(now), seq)
                               : absl::StrCat(name, ".", id);
  Json involved = {{"apiVersion", JsonString(object, "/apiVersion")},
                   {"kind", kind},
                   {"name", name},
                   {"uid", uid}};
  if (!ns_obj.empty()) involved["namespace"] = ns_obj;
  std::string rv = JsonString(object, "/metadata/resourceVersion");
  if (!rv.empty()) involved["resourceVersion"] = rv;
  Json ev = {{"apiVersion", "v1"},
             {"kind", "Event"},
             {"metadata", {{"name", event_name}, {"namespace", ns}}},
             {"involvedObject", involved},
             {"type", type},
             {"reason", reason},
             {"message", message},
             {"source", {{"component", component_}}},
             {"reportingComponent", component_},
             {"reportingInstance", instance_},
             {"firstTimestamp", Rfc3339(d.first_seen)},
             {"lastTimestamp", Rfc3339(now)},
             {"count", 1}};
  absl::StatusOr<Json> r = client_->Create(kEvents, ns, ev);
  // 409 for a named one: an earlier attempt created it and its answer was lost.
  if (!r.ok() && !(!id.empty() && absl::IsAlreadyExists(r.status()))) return r.status();
  correlator_.Recorded(event_key, event_name, 1, d.first_seen);
  return absl::OkStatus();
}

}  // namespace booster::kube
