#include "sidecar/feedback/feedback_adapter.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace booster::agent {
namespace {

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Every knob of `keys` that has no outcome yet fails because of `bad`: all or nothing.
void NotAppliedBecause(const std::vector<std::string>& keys, const std::vector<std::string>& bad,
                       FeedbackApplied* out) {
  const std::string why =
      absl::StrCat("not applied: a directive is all or nothing and ", absl::StrJoin(bad, ", "), " ",
                   bad.size() == 1 ? "was" : "were", " not");
  for (const std::string& k : keys) {
    if (!Contains(bad, k)) out->knobs.push_back({k, FeedbackKnobOutcome::kFailed, why});
  }
}

}  // namespace

FeedbackWindow FeedbackWindowFromRecord(const WindowRecord& record) {
  FeedbackWindow w;
  w.start = record.report.start;
  w.end = record.report.end;
  for (const MetricValue& m : record.metrics.metrics) {
    // Missing stays absent; a value that is not a number is no measurement either.
    if (!m.value.has_value() || !std::isfinite(*m.value)) continue;
    w.metrics[m.name] = {.value = *m.value, .samples = std::max<int64_t>(m.samples, 0)};
  }
  w.template_hash = record.identity.template_hash;
  w.profile_generation = record.generation;
  w.go_version = record.report.go_version;
  w.app_cpus = std::max(0, record.report.app_cpus);
  w.go_default_godebug = record.report.go_default_godebug;
  // The histogram the latency metrics came from, when it is one the operator can merge.
  if (record.report.requests.has_value() &&
      CheckBuckets(record.report.requests->latency_buckets).empty()) {
    w.latency_buckets = record.report.requests->latency_buckets;
  }
  return w;
}

FeedbackApplied FeedbackAppliedFromStatus(const AppliedStatus& s) {
  FeedbackApplied out;
  out.generation = s.generation;
  if (s.ok) {
    // An applied knob's reason says how it took effect, when the agent has more to say.
    for (const std::string& k : s.knobs) {
      if (auto u = s.unreachable.find(k); u != s.unreachable.end()) {
        out.knobs.push_back({k, FeedbackKnobOutcome::kNotReachable, u->second});
        continue;
      }
      auto note = s.knob_notes.find(k);
      out.knobs.push_back(
          {k, FeedbackKnobOutcome::kApplied, note == s.knob_notes.end() ? "" : note->second});
    }
    return out;
  }
  const std::string why = s.failed.empty() ? std::string("failed") : absl::StrJoin(s.failed, "; ");
  if (s.knobs.empty()) {
    // No setting to blame: a revert that failed, or a directive that could not start.
    const bool directive = s.action == "apply" || s.action == "reject";
    out.knobs.push_back({directive ? "directive" : "revert", FeedbackKnobOutcome::kFailed, why});
    return out;
  }
  std::vector<std::string> blamed;
  for (const std::string& k : s.knobs) {
    if (Contains(s.failed_knobs, k)) blamed.push_back(k);
  }
  if (blamed.empty()) {
    // The failure is the whole directive's (no target, no plan, a revert before it).
    for (const std::string& k : s.knobs)
      out.knobs.push_back({k, FeedbackKnobOutcome::kFailed, why});
    return out;
  }
  for (const std::string& k : blamed) out.knobs.push_back({k, FeedbackKnobOutcome::kFailed, why});
  NotAppliedBecause(s.knobs, blamed, &out);
  return out;
}

FeedbackPod FeedbackPodFromIdentity(const AgentIdentity& id) {
  return {.pod_namespace = id.pod_namespace, .name = id.pod_name, .uid = id.pod_uid};
}

FeedbackTopology FeedbackTopologyFromInfo(const TopologyInfo& t) {
  return {.packages = t.packages,
          .numa_nodes = t.numa_nodes,
          .cores = t.cores,
          .pus = t.pus,
          .cpuset = t.cpuset,
          .cpu_quota_cores = t.cpu_quota_cores,
          .memory_limit_bytes = t.memory_limit_bytes};
}

ConvertedDirective DirectiveFromFeedback(const FeedbackDirective& in) {
  ConvertedDirective out;
  FeedbackApplied& refusal = out.refusal;
  refusal.generation = in.generation;
  std::vector<std::string> keys;
  for (const auto& [key, value] : in.settings) keys.push_back(key);

  Directive d;
  booster_control_init(&d.page);
  d.generation = in.generation;
  std::vector<std::string> bad;  // the knobs that refuse the directive
  switch (in.action) {
    case FeedbackAction::kObserve:
      d.action = Directive::Action::kObserve;
      break;
    case FeedbackAction::kApply:
      d.action = Directive::Action::kApply;
      break;
    case FeedbackAction::kRollback:
      d.action = Directive::Action::kRollback;
      break;
    case FeedbackAction::kUnspecified:
      refusal.knobs.push_back({"action", FeedbackKnobOutcome::kFailed,
                               "an action this agent does not know (observe, apply, rollback): "
                               "nothing was changed"});
      bad.push_back("action");
      break;
  }
  if (in.arm == "baseline" || in.arm == "canary") {
    d.arm = in.arm;
  } else {
    refusal.knobs.push_back({"arm", FeedbackKnobOutcome::kFailed,
                             absl::StrCat("arm \"", in.arm, "\" is not baseline or canary")});
    bad.push_back("arm");
  }
  if (in.action == FeedbackAction::kApply) {
    for (const auto& [key, value] : in.settings) {
      absl::Status s = SetDirectiveSetting(key, value, &d);
      if (s.ok()) continue;
      if (absl::IsNotFound(s)) {
        refusal.knobs.push_back(
            {key, FeedbackKnobOutcome::kNotReachable,
             absl::StrCat(s.message(),
                          ": not a setting this agent applies live (placement, numa, cross_numa, "
                          "migrate_memory, gomemlimit_fraction, sysctl.<name>, runtime.<knob>)")});
      } else {
        refusal.knobs.push_back({key, FeedbackKnobOutcome::kFailed, std::string(s.message())});
      }
      bad.push_back(key);
    }
  }
  if (bad.empty()) {
    out.directive = std::move(d);
    return out;
  }
  if (in.action == FeedbackAction::kApply) NotAppliedBecause(keys, bad, &refusal);
  return out;
}

}  // namespace booster::agent
