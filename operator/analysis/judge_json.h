// The JSON face of the judge, for booster-judge (users replaying past canaries) and tests:
// the input {"analysis": <spec.rollout.analysis as in the CRD>, "baseline": {metric:
// [value per window]}, "canary": {...}} and the decision as JSON. The analysis object goes
// through the operator's own spec parser (rollout::ParseSpec), so defaults and validation
// are exactly the CRD's.
//
//   absl::StatusOr<JudgeInput> in = ParseJudgeInput(text);
//   if (!in.ok()) { std::cerr << in.status().message(); return 2; }
//   std::cout << DecisionToJson(JudgeOnce(*in)).dump(2);
#ifndef BOOSTER_OPERATOR_ANALYSIS_JUDGE_JSON_H_
#define BOOSTER_OPERATOR_ANALYSIS_JUDGE_JSON_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "operator/analysis/judge.h"
#include "operator/rollout/profile/types.h"

namespace booster::analysis {

struct JudgeInput {
  rollout::AnalysisSpec analysis;
  // The values carry no times: every window spans the same first interval, so the arms'
  // time ranges coincide, and no pod is young, so no warm-up applies.
  ArmWindows windows;
};

// kInvalidArgument, with the offending field, when the text is not such an object: not
// JSON, unknown keys, an analysis the CRD would reject, an unknown metric name, a value that
// is not a finite number, or no metrics to judge.
absl::StatusOr<JudgeInput> ParseJudgeInput(absl::string_view text);
absl::StatusOr<JudgeInput> JudgeInputFromJson(const nlohmann::json& input);

// One look with the whole budget: the step is over, so missing data is Inconclusive.
Decision JudgeOnce(const JudgeInput& input);

// {"verdict", "reason", "message", "metrics": [{"name", "verdict", "required", "baseline":
// {"n", "median", "mean"}, "canary": {...}, "changePercent", "pValue", "alpha", "note"}]}.
// Figures that do not exist (no data, a change from a zero baseline) are null.
nlohmann::ordered_json DecisionToJson(const Decision& decision);

}  // namespace booster::analysis

#endif  // BOOSTER_OPERATOR_ANALYSIS_JUDGE_JSON_H_
