#include "operator/kube/leader_election.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "operator/kube/api_status.h"
#include "operator/kube/helpers.h"

namespace booster::kube {

LeaseRecord LeaseRecordFromJson(const Json& lease) {
  LeaseRecord r;
  r.holder = JsonString(lease, "/spec/holderIdentity");
  r.lease_duration_seconds = JsonInt(lease, "/spec/leaseDurationSeconds", 0);
  r.transitions = JsonInt(lease, "/spec/leaseTransitions", 0);
  absl::Time t;
  if (ParseRfc3339(JsonString(lease, "/spec/acquireTime"), &t)) r.acquire_time = t;
  if (ParseRfc3339(JsonString(lease, "/spec/renewTime"), &t)) r.renew_time = t;
  return r;
}

void LeaseRecordToJson(const LeaseRecord& r, Json* lease) {
  Json& spec = (*lease)["spec"];
  spec = Json::object();
  spec["holderIdentity"] = r.holder;
  spec["leaseDurationSeconds"] = r.lease_duration_seconds;
  spec["leaseTransitions"] = r.transitions;
  if (r.acquire_time != absl::InfinitePast()) spec["acquireTime"] = Rfc3339Micro(r.acquire_time);
  if (r.renew_time != absl::InfinitePast()) spec["renewTime"] = Rfc3339Micro(r.renew_time);
}

LeaseAction DecideLease(const LeaseRecord& current, absl::string_view identity,
                        absl::Time observed_at, absl::Time now) {
  if (current.holder == identity) return LeaseAction::kRenew;
  if (current.holder.empty()) return LeaseAction::kTakeOver;
  if (observed_at + absl::Seconds(current.lease_duration_seconds) > now) {
    return LeaseAction::kWait;
  }
  return LeaseAction::kTakeOver;
}

LeaseRecord NextLeaseRecord(const LeaseRecord& current, LeaseAction action,
                            absl::string_view identity, absl::Duration lease_duration,
                            absl::Time now) {
  LeaseRecord r = current;
  r.holder = std::string(identity);
  r.lease_duration_seconds = absl::ToInt64Seconds(lease_duration);
  r.renew_time = now;
  if (action == LeaseAction::kTakeOver) {
    r.acquire_time = now;
    r.transitions = current.transitions + 1;
  }
  return r;
}

LeaderElector::LeaderElector(Client* client, LeaderElectionConfig config, Clock* clock)
    : client_(client), config_(std::move(config)), clock_(clock) {}

bool LeaderElector::Stopping() const {
  std::lock_guard<std::mutex> l(mu_);
  return stopping_;
}

void LeaderElector::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
}

bool LeaderElector::Sleep(absl::Duration d) {
  std::unique_lock<std::mutex> l(mu_);
  return WaitUnlessStopped(*clock_, cv_, l, d, [this] { return stopping_; });
}

bool LeaderElector::TryAcquireOrRenew() {
  const absl::Time now = clock_->Now();
  absl::StatusOr<Json> lease = client_->Get(kLeases, config_.ns, config_.name);
  if (absl::IsNotFound(lease.status())) {
    LeaseRecord r = NextLeaseRecord(LeaseRecord{}, LeaseAction::kTakeOver, config_.identity,
                                    config_.lease_duration, now);
    r.transitions = 0;
    Json obj = {{"apiVersion", "coordination.k8s.io/v1"},
                {"kind", "Lease"},
                {"metadata", {{"name", config_.name}, {"namespace", config_.ns}}}};
    LeaseRecordToJson(r, &obj);
    absl::StatusOr<Json> created = client_->Create(kLeases, config_.ns, obj);
    if (!created.ok()) return false;  // lost the race (AlreadyExists) or API trouble
    observed_ = r;
    observed_at_ = now;
    return true;
  }
  if (!lease.ok()) {
    std::fprintf(stderr, "leader election: get lease: %s\n", lease.status().ToString().c_str());
    return false;
  }
  LeaseRecord current = LeaseRecordFromJson(*lease);
  if (!observed_ || !(*observed_ == current)) {
    observed_ = current;
    observed_at_ = now;
  }
  LeaseAction action = DecideLease(current, config_.identity, observed_at_, now);
  if (action == LeaseAction::kWait) return false;
  LeaseRecord next =
      NextLeaseRecord(current, action, config_.identity, config_.lease_duration, now);
  Json obj = *lease;
  LeaseRecordToJson(next, &obj);
  absl::StatusOr<Json> updated = client_->Update(kLeases, config_.ns, obj);
  if (!updated.ok()) return false;  // 409: someone else wrote first
  observed_ = next;
  observed_at_ = now;
  return true;
}

absl::Status LeaderElector::Release() {
  absl::StatusOr<Json> lease = client_->Get(kLeases, config_.ns, config_.name);
  if (!lease.ok()) return lease.status();
  LeaseRecord current = LeaseRecordFromJson(*lease);
  if (current.holder != config_.identity) return absl::OkStatus();
  LeaseRecord released = current;
  released.holder.clear();
  released.lease_duration_seconds = 1;
  released.renew_time = clock_->Now();
  Json obj = *lease;
  LeaseRecordToJson(released, &obj);
  return client_->Update(kLeases, config_.ns, obj).status();
}

void LeaderElector::Run(const std::function<void()>& on_started,
                        const std::function<void()>& on_stopped) {
  // Campaign.
  while (!Stopping()) {
    if (TryAcquireOrRenew()) break;
    if (!Sleep(config_.retry_period)) return;
  }
  if (Stopping()) return;
  leader_.store(true);
  if (on_started) on_started();
  // Renew until told to stop, or until a renew deadline passes without success.
  while (!Stopping()) {
    const absl::Time deadline = clock_->Now() + config_.renew_deadline;
    bool renewed = false;
    while (!Stopping() && clock_->Now() < deadline) {
      // No request outlives the deadline: a leader cut off from the API server must give
      // up before its Lease (lease_duration > renew_deadline + retry_period) can expire
      // and another replica take over, however long a request would otherwise hang.
      RequestDeadline bound(deadline);
      if (TryAcquireOrRenew()) {
        renewed = true;
        break;
      }
      // Never past the deadline: a full retry period after a late failure would keep a
      // leader that cannot renew up to 2 s longer.
      if (!Sleep(std::min(config_.retry_period, deadline - clock_->Now()))) break;
    }
    if (Stopping()) break;
    if (!renewed) {
      std::fprintf(stderr, "leader election: lost lease %s/%s\n", config_.ns.c_str(),
                   config_.name.c_str());
      leader_.store(false);
      if (on_stopped) on_stopped();
      return;
    }
    if (!Sleep(config_.retry_period)) break;
  }
  if (config_.release_on_cancel) {
    absl::Status s = Release();
    if (!s.ok()) std::fprintf(stderr, "leader election: release: %s\n", s.ToString().c_str());
  }
  leader_.store(false);
  if (on_stopped) on_stopped();
}

}  // namespace booster::kube
