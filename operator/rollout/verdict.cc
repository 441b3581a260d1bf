#include "operator/rollout/verdict.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "operator/rollout/profile/time_text.h"

namespace booster::rollout {

absl::string_view VerdictName(VerdictKind kind) {
  switch (kind) {
    case VerdictKind::kWait:
      return "Wait";
    case VerdictKind::kPass:
      return "Pass";
    case VerdictKind::kFail:
      return "Fail";
    case VerdictKind::kInconclusive:
      return "Inconclusive";
  }
  return "Wait";
}

Verdict MakeVerdict(VerdictKind kind, std::string reason, std::string message) {
  Verdict v;
  v.kind = kind;
  v.reason = std::move(reason);
  v.message = std::move(message);
  return v;
}

Verdict TimeVerdictSource::Judge(const VerdictRequest& r) {
  Verdict v;
  absl::Duration window = r.step_duration * (1 + r.extensions);
  absl::Duration observed =
      r.analysis_start == absl::InfinitePast() ? absl::ZeroDuration() : r.now - r.analysis_start;
  v.evidence["judge"] = "time";
  v.evidence["observed"] = FormatGoDuration(absl::Trunc(observed, absl::Seconds(1)));
  v.evidence["required"] = FormatGoDuration(window);
  if (r.analysis_start == absl::InfinitePast() || observed < window) {
    v.kind = VerdictKind::kWait;
    v.reason = "StepInProgress";
    v.recheck_after =
        r.analysis_start == absl::InfinitePast() ? r.step_duration : window - observed;
    v.message = absl::StrCat("step ", r.step, " (", r.weight, "%) observed for ",
                             v.evidence["observed"], " of ", v.evidence["required"]);
    return v;
  }
  v.kind = VerdictKind::kPass;
  v.reason = "StepDurationElapsed";
  v.message = absl::StrCat("step ", r.step, " (", r.weight, "%) ran for ", v.evidence["observed"],
                           " with both arms ready");
  return v;
}

ScriptedVerdictSource::ScriptedVerdictSource(std::vector<Verdict> script)
    : script_(script.begin(), script.end()) {}

Verdict ScriptedVerdictSource::Judge(const VerdictRequest& request) {
  requests_.push_back(request);
  if (!script_.empty()) {
    last_ = std::move(script_.front());
    script_.pop_front();
  }
  return last_;
}

}  // namespace booster::rollout
