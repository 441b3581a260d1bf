#include "operator/analysis/judge_replay.h"

#include <algorithm>
#include <string>
#include <utility>

#include "operator/analysis/judge_verdict_source.h"
#include "operator/rollout/profile/time_text.h"
#include "operator/rollout/verdict.h"

namespace booster::analysis {
namespace {

absl::Time EarliestStart(const ArmWindows& windows) {
  absl::Time earliest = absl::InfiniteFuture();
  for (const MetricWindows* arm : {&windows.baseline, &windows.canary}) {
    for (const auto& [metric, ws] : *arm) {
      for (const Window& w : ws) earliest = std::min(earliest, w.start);
    }
  }
  return earliest == absl::InfiniteFuture() ? absl::UnixEpoch() : earliest;
}

}  // namespace

StepReplay ReplayStep(const JudgeInput& input, const JudgeOptions& options) {
  StepReplay out;
  out.step_start = EarliestStart(input.windows);
  out.looks_per_step = LooksPerStep(input.analysis, input.step_duration);
  out.planned = PlannedLooks(input.analysis, input.steps, input.step_duration);

  rollout::VerdictRequest request;
  request.step = 1;
  request.steps = input.steps;
  request.analysis_start = out.step_start;
  request.extensions = 0;
  request.step_duration = input.step_duration;
  request.analysis = &input.analysis;
  // Before the first interval has ended the operator waits without judging.
  request.now = out.step_start + input.analysis.interval;
  for (;;) {
    const Look look = LookFor(request, input.steps);
    ReplayLook& r = out.looks.emplace_back();
    r.look = look;
    r.at = request.now - out.step_start;
    r.extensions = request.extensions;
    r.decision = JudgeLook(request, look, input.windows, options);
    const DecisionKind kind = r.decision.kind;
    if (kind == DecisionKind::kFail) {
      out.first_fail = out.looks.size() - 1;
      break;
    }
    if (kind == DecisionKind::kPass) break;
    if (kind == DecisionKind::kInconclusive) {
      if (request.extensions >= input.analysis.max_extensions) break;
      ++request.extensions;
    }
    const absl::Time next = NextLookTime(request);
    if (next <= request.now) break;  // a step-end look that did not decide: nothing follows
    request.now = next;
  }
  return out;
}

nlohmann::ordered_json ReplayToJson(const JudgeInput& input, const StepReplay& replay) {
  using Ordered = nlohmann::ordered_json;
  Ordered out =
      replay.looks.empty() ? Ordered::object() : DecisionToJson(replay.looks.back().decision);
  out["stepStart"] = absl::ToDoubleSeconds(replay.step_start - absl::UnixEpoch());
  out["stepDuration"] = rollout::FormatGoDuration(input.step_duration);
  out["interval"] = rollout::FormatGoDuration(input.analysis.interval);
  out["steps"] = input.steps;
  out["looksPerStep"] = replay.looks_per_step;
  out["plannedLooks"] = replay.planned;
  out["looks"] = Ordered::array();
  for (const ReplayLook& r : replay.looks) {
    Ordered l;
    l["look"] = r.look.index;
    l["at"] = absl::ToDoubleSeconds(r.at);
    l["stepOver"] = r.look.step_over;
    l["extensions"] = r.extensions;
    l["verdict"] = std::string(DecisionKindName(r.decision.kind));
    l["reason"] = r.decision.reason;
    l["message"] = r.decision.message;
    out["looks"].push_back(std::move(l));
  }
  if (replay.first_fail) {
    const ReplayLook& f = replay.looks[*replay.first_fail];
    out["firstFail"] = Ordered{{"look", f.look.index}, {"at", absl::ToDoubleSeconds(f.at)}};
  } else {
    out["firstFail"] = nullptr;
  }
  return out;
}

}  // namespace booster::analysis
