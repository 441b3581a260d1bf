// The JSON face of the judge, for booster-judge (users replaying past canaries) and tests:
// the input {"analysis": <spec.rollout.analysis as in the CRD>, "baseline": {metric:
// [window, ...]}, "canary": {...}, "stepDuration": "2m", "steps": 1} and the decision as
// JSON. A window is a bare value, or an object with its pod and times (docs/analysis.md).
// The analysis object goes through the operator's own spec parser (rollout::ParseSpec), so
// defaults and validation are exactly the CRD's.
//
//   absl::StatusOr<JudgeInput> in = ParseJudgeInput(text);
//   if (!in.ok()) { std::cerr << in.status().message(); return 2; }
//   std::cout << DecisionToJson(JudgeOnce(*in)).dump(2);
#ifndef BOOSTER_OPERATOR_ANALYSIS_JUDGE_JSON_H_
#define BOOSTER_OPERATOR_ANALYSIS_JUDGE_JSON_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "operator/analysis/judge.h"
#include "operator/rollout/profile/types.h"

namespace booster::analysis {

struct JudgeInput {
  rollout::AnalysisSpec analysis;
  // Each metric's windows are bare values or objects. Bare values carry no times: the i-th
  // of a list spans interval i from the epoch, so the arms' i-th windows are paired, and no
  // pod is young, so no warm-up applies. Objects carry their pod, node, requests and times
  // ("start", "end", "podStart": seconds, read as seconds since the Unix epoch). Either
  // every window of the input has times or none has.
  ArmWindows windows;
  // The rollout around the analysis, for --replay: stepDuration (default the CRD's 2m) and
  // the number of steps the alpha budget is split over (default 1).
  absl::Duration step_duration = rollout::RolloutSpec().step_duration;
  int steps = 1;
};

struct JudgeInputOptions {
  // Go-style duration (booster-judge --step-duration) that overrides "stepDuration".
  std::string step_duration;
  // For a replay the analysis must fit the step, as the CRD requires (interval at most
  // stepDuration). Otherwise the step is not used, and an absent stepDuration is no limit.
  bool replay = false;
};

// kInvalidArgument, with the offending field, when the text is not such an object: not
// JSON, unknown keys, an analysis the CRD would reject, an unknown metric name, a value that
// is not a finite number, a malformed window object, or no metrics to judge.
absl::StatusOr<JudgeInput> ParseJudgeInput(absl::string_view text,
                                           const JudgeInputOptions& options = {});
absl::StatusOr<JudgeInput> JudgeInputFromJson(const nlohmann::json& input,
                                              const JudgeInputOptions& options = {});

// One look with the whole budget: the step is over, so missing data is Inconclusive.
Decision JudgeOnce(const JudgeInput& input);

// {"verdict", "reason", "message", "metrics": [{"name", "verdict", "required", "baseline":
// {"n", "median", "mean"}, "canary": {...}, "changePercent", "pValue", "alpha", "method",
// paired: "intervals", "pods", "podSdPercent", "podSdObservedPercent", "onsetPValue",
// "onsetAlpha"; rate: "events",
// "exposure"; "upperBoundPercent", "passAlpha", "note"}]}.
// Figures that do not exist (no data, a change from a zero baseline) are null.
nlohmann::ordered_json DecisionToJson(const Decision& decision);

}  // namespace booster::analysis

#endif  // BOOSTER_OPERATOR_ANALYSIS_JUDGE_JSON_H_
