// ReachTracker: which knobs of a profile's tuning took effect in its canary pods, from the
// agents' Applied messages. A FeedbackObserver, so the server feeds it as Applied messages
// arrive; the reconciler reads a profile's summary once per pass (status condition
// TuningReached, docs/crd.md). Only the latest Applied of each pod with an open stream
// counts: a pod whose stream ends (it was deleted, or its agent reconnects to another
// leader) is forgotten until it reports again, so the summary never speaks for pods that
// are gone. Thread-safe.
//
//   ReachTracker reach;                       // FeedbackServerDeps::observer (or a fan-out)
//   ReachSummary s = reach.Summary("shop/web-profile");
//   // s.pods == 2, s.not_reached == {{"placement", kNotReachable, "static binary ...", 2}}
#ifndef BOOSTER_OPERATOR_FEEDBACK_REACH_TRACKER_H_
#define BOOSTER_OPERATOR_FEEDBACK_REACH_TRACKER_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "operator/feedback/observer.h"

namespace booster::feedback {

// A knob that did not take effect in some canary pods.
struct UnreachedKnob {
  std::string knob;  // the directive setting key: "placement", "runtime.listen_backlog", ...
  KnobOutcome outcome = KnobOutcome::kNotReachable;  // kFailed or kNotReachable
  std::string reason;                                // the first pod's words
  int pods = 0;                                      // canary pods that reported it so
};

struct ReachSummary {
  int pods = 0;  // canary pods with an open stream whose Applied reached the operator
  std::vector<UnreachedKnob> not_reached;  // by knob name
};

class ReachTracker final : public FeedbackObserver {
 public:
  void StreamClosed(const AgentIdentity& agent) override;
  void Applied(const AgentIdentity& agent, const AppliedReport& report) override;

  void AppFactsReported(const AgentIdentity& agent, const AppFacts& facts) override;

  // The canary pods of profile `profile` ("namespace/name").
  ReachSummary Summary(const std::string& profile) const;

  // What the agents of `profile`'s pods (any arm, open streams) last said of the
  // application's program: the facts of the first pod (by name) that knows its Go version,
  // else of the first that reported any; nullopt when none did.
  std::optional<AppFacts> Facts(const std::string& profile) const;

 private:
  mutable absl::Mutex mu_;
  // profile -> pod "namespace/name" -> the knobs of its latest Applied (canary pods only)
  std::map<std::string, std::map<std::string, std::vector<KnobResult>>> canary_
      ABSL_GUARDED_BY(mu_);
  // profile -> pod "namespace/name" -> its latest facts (every arm)
  std::map<std::string, std::map<std::string, AppFacts>> facts_ ABSL_GUARDED_BY(mu_);
};

// Calls every observer in turn (the server takes one).
class FanOutObserver final : public FeedbackObserver {
 public:
  explicit FanOutObserver(std::vector<FeedbackObserver*> observers)
      : observers_(std::move(observers)) {}
  void StreamOpened(const AgentIdentity& a) override;
  void StreamClosed(const AgentIdentity& a) override;
  void WindowAccepted(const AgentIdentity& a) override;
  void WindowDropped(const AgentIdentity& a, AddResult r) override;
  void Rejected(RejectReason r, absl::string_view detail) override;
  void Applied(const AgentIdentity& a, const AppliedReport& report) override;
  void AppFactsReported(const AgentIdentity& a, const AppFacts& facts) override;

 private:
  std::vector<FeedbackObserver*> observers_;
};

}  // namespace booster::feedback

#endif  // BOOSTER_OPERATOR_FEEDBACK_REACH_TRACKER_H_
