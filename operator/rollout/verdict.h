// The verdict source: what decides whether a canary step passes. The state machine asks it
// only while a step is Progressing with both arms ready, never while paused, so a source
// never has to know about pauses. Shipped here: TimeVerdictSource (pass once the step has
// been observed for stepDuration, extensions included) and ScriptedVerdictSource (a test
// double). The metric-driven judge (operator/analysis) implements the same interface.
//
//   TimeVerdictSource time_source;
//   Verdict v = time_source.Judge(request);   // kWait with recheck_after, then kPass
#ifndef BOOSTER_OPERATOR_ROLLOUT_VERDICT_H_
#define BOOSTER_OPERATOR_ROLLOUT_VERDICT_H_

#include <deque>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "operator/rollout/profile/types.h"

namespace booster::rollout {

enum class VerdictKind {
  kWait,          // not enough evidence yet; ask again after recheck_after
  kPass,          // the canary is no worse: advance
  kFail,          // the canary is worse: roll back
  kInconclusive,  // the step ended without a clear answer: extend or apply onInconclusive
};

absl::string_view VerdictName(VerdictKind kind);

struct VerdictRequest {
  std::string profile_namespace;
  std::string profile_name;
  int step = 0;                                      // 1-based
  int steps = 0;                                     // spec.rollout.steps.size()
  int weight = 0;                                    // percent of N on the canary
  // Pods of the step's fresh baseline (status.baselineReplicas); 0 = the canary is compared
  // with the target's pods (analysis.baseline Target, or none could be had).
  int baseline_replicas = 0;
  absl::Time analysis_start = absl::InfinitePast();  // both arms ready since
  int extensions = 0;                                // already granted in this step
  absl::Duration step_duration;
  const AnalysisSpec* analysis = nullptr;  // never null when asked by the state machine
  absl::Time now;
};

struct Verdict {
  VerdictKind kind = VerdictKind::kWait;
  std::string reason;                           // CamelCase, for the Event and status.lastDecision
  std::string message;                          // one sentence for a human
  std::map<std::string, std::string> evidence;  // figures behind the decision
  absl::Duration recheck_after = absl::Seconds(10);  // for kWait
};

class VerdictSource {
 public:
  virtual ~VerdictSource() = default;
  // Must be cheap and must not block: it runs inside a reconcile.
  virtual Verdict Judge(const VerdictRequest& request) = 0;
};

// Advances after each step's duration (plus one duration per extension) measured from the
// moment both arms were ready. Stateless: everything comes from the request, so an
// operator restarted mid-step keeps the same deadline (it is in status).
class TimeVerdictSource final : public VerdictSource {
 public:
  Verdict Judge(const VerdictRequest& request) override;
};

// Test double: returns queued verdicts in order (the last one repeats) and records every
// request it was asked.
class ScriptedVerdictSource final : public VerdictSource {
 public:
  ScriptedVerdictSource() = default;
  explicit ScriptedVerdictSource(std::vector<Verdict> script);
  void Push(Verdict v) { script_.push_back(std::move(v)); }
  Verdict Judge(const VerdictRequest& request) override;
  const std::vector<VerdictRequest>& requests() const { return requests_; }

 private:
  std::deque<Verdict> script_;
  Verdict last_;
  std::vector<VerdictRequest> requests_;
};

Verdict MakeVerdict(VerdictKind kind, std::string reason = "", std::string message = "");

}  // namespace booster::rollout

#endif  // BOOSTER_OPERATOR_ROLLOUT_VERDICT_H_
