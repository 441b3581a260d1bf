#include "operator/analysis/judge_verdict_source.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace booster::analysis {
namespace {

using rollout::AnalysisMode;
using rollout::Verdict;
using rollout::VerdictKind;
using rollout::VerdictRequest;

std::string Num(double v) {
  if (std::isnan(v)) return "-";
  return absl::StrFormat("%.4g", v);
}

std::string Arm(const ArmSummary& s) { return absl::StrCat("n=", s.n, " median=", Num(s.median)); }

VerdictKind KindOf(DecisionKind kind) {
  switch (kind) {
    case DecisionKind::kWait:
      return VerdictKind::kWait;
    case DecisionKind::kPass:
      return VerdictKind::kPass;
    case DecisionKind::kFail:
      return VerdictKind::kFail;
    case DecisionKind::kInconclusive:
      return VerdictKind::kInconclusive;
  }
  return VerdictKind::kWait;
}

// Analysis intervals completed since the step's analysis started.
int64_t CompletedIntervals(const VerdictRequest& request) {
  const absl::Duration interval = request.analysis->interval;
  if (interval <= absl::ZeroDuration()) return 0;
  const absl::Duration elapsed =
      std::max(absl::ZeroDuration(), request.now - request.analysis_start);
  absl::Duration rest;
  return absl::IDivDuration(elapsed, interval, &rest);
}

}  // namespace

JudgeVerdictSource::JudgeVerdictSource(WindowSource& windows, JudgeSourceOptions options)
    : windows_(windows), options_(std::move(options)) {}

absl::Time StepEnd(const VerdictRequest& request) {
  return request.analysis_start + request.step_duration * (1 + std::max(0, request.extensions));
}

absl::Time LookBoundary(const VerdictRequest& request) {
  return request.analysis_start + request.analysis->interval * CompletedIntervals(request);
}

absl::Time NextLookTime(const VerdictRequest& request) {
  return std::min(LookBoundary(request) + request.analysis->interval, StepEnd(request));
}

JudgeOptions OptionsFor(const rollout::AnalysisSpec& spec, JudgeOptions base) {
  if (spec.warmup) base.warmup = *spec.warmup;
  return base;
}

Decision JudgeLook(const VerdictRequest& request, const Look& look, ArmWindows windows,
                   const JudgeOptions& options) {
  // One look, one data set: only the windows that ended by this look's interval boundary.
  const absl::Time boundary = LookBoundary(request);
  for (MetricWindows* arm : {&windows.baseline, &windows.canary}) {
    for (auto& [metric, ws] : *arm) {
      ws.erase(
          std::remove_if(ws.begin(), ws.end(), [&](const Window& w) { return w.end > boundary; }),
          ws.end());
    }
  }
  return analysis::Judge(*request.analysis, windows, look, OptionsFor(*request.analysis, options));
}

Look LookFor(const VerdictRequest& request, int steps) {
  const rollout::AnalysisSpec& spec = *request.analysis;
  const int step = std::max(1, request.step);
  const int per_step = LooksPerStep(spec, request.step_duration);
  Look look;
  look.planned = PlannedLooks(spec, std::max(steps, step), request.step_duration);
  const int64_t completed = CompletedIntervals(request);
  look.index =
      (step - 1) * per_step + static_cast<int>(std::clamp<int64_t>(completed, 1, per_step));
  look.step_over = request.now >= StepEnd(request);
  look.step_ends = 1 + std::max(0, spec.max_extensions);
  look.per_step = per_step;
  return look;
}

Verdict JudgeVerdictSource::Judge(const VerdictRequest& request) {
  if (request.analysis == nullptr) {
    return rollout::MakeVerdict(VerdictKind::kInconclusive, "NoAnalysisSpec",
                                "the verdict request carries no analysis spec");
  }
  const rollout::AnalysisSpec& spec = *request.analysis;
  if (spec.mode == AnalysisMode::kTime) return time_.Judge(request);
  if (request.weight >= 100 && request.baseline_replicas == 0) {
    // The whole Deployment runs the canary and no fresh baseline runs beside it: no
    // baseline pod is left to compare with, so the last step is a soak of stepDuration,
    // judged by time (docs/analysis.md). With a fresh baseline it is judged like any other.
    Verdict v = time_.Judge(request);
    v.evidence["judge"] = "time";
    v.evidence["note"] = "no baseline at 100%: the last step is judged by time";
    if (v.kind == VerdictKind::kPass) {
      v.message = absl::StrCat("no baseline left at 100% to compare with; ", v.message);
    }
    return v;
  }
  if (request.analysis_start == absl::InfinitePast()) {
    Verdict v = rollout::MakeVerdict(VerdictKind::kWait, kReasonNotEnoughWindows,
                                     "the step's analysis has not started");
    v.recheck_after = spec.interval;
    return v;
  }
  const Look look = LookFor(request, request.steps > 0 ? request.steps : options_.steps);
  auto recheck = [&] {
    return std::max(NextLookTime(request) - request.now, absl::ZeroDuration()) +
           options_.report_grace;
  };

  if (CompletedIntervals(request) == 0 && !look.step_over) {
    Verdict v = rollout::MakeVerdict(
        VerdictKind::kWait, kReasonNotEnoughWindows,
        absl::StrCat("step ", request.step, ": the first analysis window has not ended yet"));
    v.recheck_after = recheck();
    return v;
  }
  absl::StatusOr<ArmWindows> windows = windows_.Windows(WindowQuery{
      request.profile_namespace, request.profile_name, request.step, request.analysis_start});
  if (!windows.ok()) {
    // Never a Fail on missing data; once the step is over, an Inconclusive keeps the rollout
    // moving towards its extensions and onInconclusive instead of waiting forever.
    Verdict v = rollout::MakeVerdict(
        look.step_over ? VerdictKind::kInconclusive : VerdictKind::kWait, "WindowsUnavailable",
        absl::StrCat("the analysis windows could not be read: ", windows.status().message()));
    v.recheck_after = recheck();
    return v;
  }
  const ArmWindows context = *windows;
  Verdict v = ToVerdict(JudgeLook(request, look, *std::move(windows), options_.judge));
  AddContextEvidence(context, v);
  v.evidence["look"] = absl::StrCat(look.index, "/", look.planned);
  if (v.kind == VerdictKind::kWait) v.recheck_after = recheck();
  return v;
}

void AddContextEvidence(const ArmWindows& windows, Verdict& v) {
  for (const char* name : kContextMetrics) {
    if (v.evidence.count(absl::StrCat(name, ".verdict")) > 0) continue;  // judged: already there
    auto median = [&](const MetricWindows& arm) -> std::pair<int, double> {
      auto it = arm.find(name);
      if (it == arm.end() || it->second.empty()) return {0, kNaN};
      std::vector<double> values;
      for (const Window& w : it->second) values.push_back(w.value);
      std::sort(values.begin(), values.end());
      const size_t n = values.size();
      return {static_cast<int>(n), n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2};
    };
    const auto [nb, mb] = median(windows.baseline);
    const auto [nc, mc] = median(windows.canary);
    if (nb == 0 && nc == 0) continue;
    v.evidence[absl::StrCat(name, ".verdict")] = "NotJudged";
    v.evidence[absl::StrCat(name, ".baseline")] = absl::StrCat("n=", nb, " median=", Num(mb));
    v.evidence[absl::StrCat(name, ".canary")] = absl::StrCat("n=", nc, " median=", Num(mc));
    if (nb > 0 && nc > 0 && mb != 0) {
      v.evidence[absl::StrCat(name, ".changePercent")] = Num(100 * (mc - mb) / std::fabs(mb));
    }
  }
}

Verdict ToVerdict(const Decision& decision) {
  Verdict v;
  v.kind = KindOf(decision.kind);
  v.reason = decision.reason;
  v.message = decision.message;
  v.evidence["judge"] = "metrics";
  v.evidence["alpha"] = Num(decision.alpha_look);
  for (const MetricEvidence& e : decision.metrics) {
    v.evidence[e.name + ".verdict"] = std::string(MetricVerdictName(e.verdict));
    v.evidence[e.name + ".baseline"] = Arm(e.baseline);
    v.evidence[e.name + ".canary"] = Arm(e.canary);
    v.evidence[e.name + ".changePercent"] = std::isinf(e.change_percent)
                                                ? (e.change_percent > 0 ? "+inf" : "-inf")
                                                : Num(e.change_percent);
    v.evidence[e.name + ".pValue"] = Num(e.p_value);
    // What the level test's p was held to at this look (0 between level looks, with
    // JudgeOptions::level_looks).
    if (!std::isnan(e.alpha)) v.evidence[e.name + ".alpha"] = Num(e.alpha);
    if (!e.method.empty()) v.evidence[e.name + ".method"] = e.method;
    if (e.baseline_pods > 0 || e.canary_pods > 0) {
      v.evidence[e.name + ".pods"] =
          absl::StrCat("baseline ", e.baseline_pods, ", canary ", e.canary_pods,
                       e.pods_left_out > 0
                           ? absl::StrCat(", ", e.pods_left_out, " of another age left out")
                           : "");
    }
    // What the level test's standard error allowed for the pods (the floor, or the arms' own
    // pods' spread when larger) and what the pods showed.
    if (!std::isnan(e.pod_sd_percent)) v.evidence[e.name + ".podSdPercent"] = Num(e.pod_sd_percent);
    if (!std::isnan(e.pod_sd_observed_percent)) {
      v.evidence[e.name + ".podSdObservedPercent"] = Num(e.pod_sd_observed_percent);
    }
    if (e.late_intervals > 0 && std::isfinite(e.late_change_percent)) {
      v.evidence[e.name + ".late"] = absl::StrFormat("%+.1f%% over the last %d intervals",
                                                     e.late_change_percent, e.late_intervals);
    }
    if (!std::isnan(e.upper_bound_percent)) {
      v.evidence[e.name + ".passAlpha"] = Num(e.pass_alpha);
      v.evidence[e.name + ".atWorstPercent"] =
          std::isinf(e.upper_bound_percent) ? "+inf" : Num(e.upper_bound_percent);
    }
  }
  return v;
}

}  // namespace booster::analysis
