// The judge as the rollout state machine's VerdictSource: it turns a VerdictRequest (step,
// analysis start, extensions, now) into a Look, asks a WindowSource for the step's windows,
// runs Judge and maps the Decision to a rollout::Verdict with its evidence. Stateless like
// TimeVerdictSource: everything comes from the request and the windows, so a restarted
// operator judges the same look the same way. Profiles in mode Time are delegated to
// TimeVerdictSource, so one source serves both modes.
//
// A look is one analysis interval: look k of a step sees the windows that ended within k
// intervals of the analysis start, so the many reconciles of one interval repeat one test on
// the same data rather than spending alpha on each. The pieces of a look (LookFor,
// JudgeLook, NextLookTime) are public so booster-judge --replay judges through them too.
//
//   JudgeVerdictSource verdicts(window_store);   // request.steps sizes the alpha budget
//   Plan plan = Reconcile(profile, obs, verdicts, clock.Now());
#ifndef BOOSTER_OPERATOR_ANALYSIS_JUDGE_VERDICT_SOURCE_H_
#define BOOSTER_OPERATOR_ANALYSIS_JUDGE_VERDICT_SOURCE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "operator/analysis/judge.h"
#include "operator/rollout/verdict.h"

namespace booster::analysis {

struct WindowQuery {
  std::string profile_namespace;
  std::string profile_name;
  int step = 0;  // 1-based
  // Windows that start at or after this (the step's analysis start).
  absl::Time since = absl::InfinitePast();
};

// Where the windows come from (the store the agents' reports land in). Implementations must
// be cheap and must not block: the source is asked inside a reconcile.
class WindowSource {
 public:
  virtual ~WindowSource() = default;
  // The windows each arm reported for the profile's step since query.since, by metric
  // name. kUnavailable when they cannot be read now (the judge then waits, or calls the step
  // inconclusive once it is over).
  virtual absl::StatusOr<ArmWindows> Windows(const WindowQuery& query) = 0;
};

struct JudgeSourceOptions {
  // Steps of the profile's rollout, for the alpha budget, when the request does not say
  // (VerdictRequest::steps 0). A request for a later step counts that many instead.
  int steps = 3;
  JudgeOptions judge;
  // Time after an interval boundary for the windows that ended at it to arrive.
  absl::Duration report_grace = absl::Seconds(2);
};

class JudgeVerdictSource final : public rollout::VerdictSource {
 public:
  // `windows` is not owned and must outlive this source.
  explicit JudgeVerdictSource(WindowSource& windows,
                              JudgeSourceOptions options = JudgeSourceOptions());
  rollout::Verdict Judge(const rollout::VerdictRequest& request) override;

 private:
  WindowSource& windows_;
  JudgeSourceOptions options_;
  rollout::TimeVerdictSource time_;
};

// The look a request is: index = (step - 1) * LooksPerStep + completed intervals since the
// analysis start (at least 1, at most LooksPerStep); planned = PlannedLooks(steps).
Look LookFor(const rollout::VerdictRequest& request, int steps);

// When request's step ends: its analysis start plus stepDuration for the step and each
// extension already granted. From then on a look decides (step_over).
absl::Time StepEnd(const rollout::VerdictRequest& request);

// The interval boundary of request's look: the analysis start plus the intervals completed
// by request.now. The look judges the windows that ended by it.
absl::Time LookBoundary(const rollout::VerdictRequest& request);

// When the next look is due after request's: the next interval boundary, or the step's end
// when that comes first. A Wait asks to be rechecked then (plus the report grace).
absl::Time NextLookTime(const rollout::VerdictRequest& request);

// The judge's options for spec: `base` with spec.warmup when the spec sets one.
JudgeOptions OptionsFor(const rollout::AnalysisSpec& spec, JudgeOptions base = JudgeOptions());

// The decision of `look` (LookFor(request, ...)) over the step's windows, those reported
// since its analysis start: Judge on the windows that ended by LookBoundary(request), with
// OptionsFor(spec, options). JudgeVerdictSource judges every look through it, and so does
// booster-judge --replay (judge_replay.h), so a replay decides as the operator did.
Decision JudgeLook(const rollout::VerdictRequest& request, const Look& look, ArmWindows windows,
                   const JudgeOptions& options = JudgeOptions());

// Decision -> Verdict: the same kind, reason and message; evidence with the figures per
// metric ("latencyP99.verdict", ".baseline", ".canary", ".changePercent", ".pValue") and the
// look's alpha.
rollout::Verdict ToVerdict(const Decision& decision);

// The metrics that say why a tuning won or lost without being judged unless listed: the app's
// resident set and, for Go programs that export them, the GC's CPU share and the heap.
inline constexpr const char* kContextMetrics[] = {"memoryRss", "goGcCpuShare", "goHeapBytes"};

// Adds to `v`'s evidence, for each context metric the step's windows measured and the
// analysis does not judge, "<metric>.baseline" / ".canary" ("n=<windows> median=<value>"),
// ".changePercent" (of the medians) and ".verdict" NotJudged, so `explain` and the search's
// trials show them beside the judged metrics.
void AddContextEvidence(const ArmWindows& windows, rollout::Verdict& v);

}  // namespace booster::analysis

#endif  // BOOSTER_OPERATOR_ANALYSIS_JUDGE_VERDICT_SOURCE_H_
