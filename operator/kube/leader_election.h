// Leader election on a coordination.k8s.io/v1 Lease, after client-go's leaderelection:
// 15 s lease, 10 s renew deadline, 2 s retry. A candidate takes the lease when it is free,
// released, or has not been renewed for a lease duration *as observed on the candidate's
// own clock* (no cross-machine clock comparison). The leader renews every retry period
// and steps down if it cannot renew within the renew deadline. On graceful shutdown the
// lease is released so a successor need not wait.
//
//   LeaderElector elector(&client, {.ns = "booster-system", .name = "booster-operator",
//                                   .identity = pod_name});
//   elector.Run([&] { StartControllers(); }, [&] { std::exit(1); });  // blocks until Stop()
#ifndef BOOSTER_OPERATOR_KUBE_LEADER_ELECTION_H_
#define BOOSTER_OPERATOR_KUBE_LEADER_ELECTION_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "operator/kube/client.h"

namespace booster::kube {

// The part of a Lease's spec the election reads and writes.
struct LeaseRecord {
  std::string holder;
  int64_t lease_duration_seconds = 0;
  absl::Time acquire_time = absl::InfinitePast();
  absl::Time renew_time = absl::InfinitePast();
  int64_t transitions = 0;

  bool operator==(const LeaseRecord& o) const {
    return holder == o.holder && lease_duration_seconds == o.lease_duration_seconds &&
           acquire_time == o.acquire_time && renew_time == o.renew_time &&
           transitions == o.transitions;
  }
};

LeaseRecord LeaseRecordFromJson(const Json& lease);
// Writes `r` into lease.spec (keeping metadata).
void LeaseRecordToJson(const LeaseRecord& r, Json* lease);

enum class LeaseAction {
  kWait,      // someone else holds a live lease
  kRenew,     // we hold it: renew
  kTakeOver,  // free, released or expired: take it (a transition)
};

// The pure decision. `observed_at` is when this candidate last saw the record change.
LeaseAction DecideLease(const LeaseRecord& current, absl::string_view identity,
                        absl::Time observed_at, absl::Time now);

// The record to write for `action` (kRenew or kTakeOver).
LeaseRecord NextLeaseRecord(const LeaseRecord& current, LeaseAction action,
                            absl::string_view identity, absl::Duration lease_duration,
                            absl::Time now);

struct LeaderElectionConfig {
  std::string ns;
  std::string name;
  std::string identity;
  absl::Duration lease_duration = absl::Seconds(15);
  absl::Duration renew_deadline = absl::Seconds(10);
  absl::Duration retry_period = absl::Seconds(2);
  bool release_on_cancel = true;
};

class LeaderElector {
 public:
  // `client` and `clock` are not owned.
  LeaderElector(Client* client, LeaderElectionConfig config, Clock* clock = &RealClock::Get());

  // Campaigns, calls on_started once leading, renews until Stop() or a lost renewal, then
  // calls on_stopped (only if on_started was called). Blocks; returns after Stop() or
  // after losing the lease.
  void Run(const std::function<void()>& on_started, const std::function<void()>& on_stopped);
  // Thread-safe; makes Run() release the lease (if configured) and return.
  void Stop();
  bool IsLeader() const { return leader_.load(); }

  // One attempt: true if we hold the lease afterwards.
  bool TryAcquireOrRenew();
  // Gives the lease up (holder cleared, duration 1 s) if we hold it.
  absl::Status Release();

 private:
  bool Sleep(absl::Duration d);
  bool Stopping() const;

  Client* const client_;
  const LeaderElectionConfig config_;
  Clock* const clock_;
  std::atomic<bool> leader_{false};

  // The last record seen and when (our clock) it changed.
  std::optional<LeaseRecord> observed_;
  absl::Time observed_at_ = absl::InfinitePast();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace booster::kube

#endif  // BOOSTER_OPERATOR_KUBE_LEADER_ELECTION_H_
