#include "operator/feedback/reach_tracker.h"

#include <utility>

namespace booster::feedback {

void ReachTracker::StreamClosed(const AgentIdentity& agent) {
  absl::MutexLock l(&mu_);
  if (auto f = facts_.find(agent.profile); f != facts_.end()) {
    f->second.erase(agent.PodKey());
    if (f->second.empty()) facts_.erase(f);
  }
  auto p = canary_.find(agent.profile);
  if (p == canary_.end()) return;
  p->second.erase(agent.PodKey());
  if (p->second.empty()) canary_.erase(p);
}

void ReachTracker::Applied(const AgentIdentity& agent, const AppliedReport& report) {
  if (agent.arm != Arm::kCanary || agent.profile.empty()) return;
  absl::MutexLock l(&mu_);
  canary_[agent.profile][agent.PodKey()] = report.knobs;
}

void ReachTracker::AppFactsReported(const AgentIdentity& agent, const AppFacts& facts) {
  if (agent.profile.empty()) return;
  absl::MutexLock l(&mu_);
  facts_[agent.profile][agent.PodKey()] = facts;
}

std::optional<AppFacts> ReachTracker::Facts(const std::string& profile) const {
  absl::MutexLock l(&mu_);
  auto p = facts_.find(profile);
  if (p == facts_.end() || p->second.empty()) return std::nullopt;
  for (const auto& [pod, f] : p->second) {
    if (!f.go_version.empty()) return f;
  }
  return p->second.begin()->second;
}

ReachSummary ReachTracker::Summary(const std::string& profile) const {
  ReachSummary s;
  absl::MutexLock l(&mu_);
  auto p = canary_.find(profile);
  if (p == canary_.end()) return s;
  std::map<std::string, UnreachedKnob> by_knob;
  for (const auto& [pod, knobs] : p->second) {
    ++s.pods;
    for (const KnobResult& k : knobs) {
      if (k.outcome != KnobOutcome::kFailed && k.outcome != KnobOutcome::kNotReachable) continue;
      UnreachedKnob& u = by_knob[k.name];
      if (u.pods == 0) u = UnreachedKnob{k.name, k.outcome, k.reason, 0};
      ++u.pods;
    }
  }
  for (auto& [name, u] : by_knob) s.not_reached.push_back(std::move(u));
  return s;
}

void FanOutObserver::StreamOpened(const AgentIdentity& a) {
  for (FeedbackObserver* o : observers_) o->StreamOpened(a);
}
void FanOutObserver::StreamClosed(const AgentIdentity& a) {
  for (FeedbackObserver* o : observers_) o->StreamClosed(a);
}
void FanOutObserver::WindowAccepted(const AgentIdentity& a) {
  for (FeedbackObserver* o : observers_) o->WindowAccepted(a);
}
void FanOutObserver::WindowDropped(const AgentIdentity& a, AddResult r) {
  for (FeedbackObserver* o : observers_) o->WindowDropped(a, r);
}
void FanOutObserver::Rejected(RejectReason r, absl::string_view detail) {
  for (FeedbackObserver* o : observers_) o->Rejected(r, detail);
}
void FanOutObserver::Applied(const AgentIdentity& a, const AppliedReport& report) {
  for (FeedbackObserver* o : observers_) o->Applied(a, report);
}
void FanOutObserver::AppFactsReported(const AgentIdentity& a, const AppFacts& facts) {
  for (FeedbackObserver* o : observers_) o->AppFactsReported(a, facts);
}

}  // namespace booster::feedback
