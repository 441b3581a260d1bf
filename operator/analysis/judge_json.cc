#include "operator/analysis/judge_json.h"

#include <cmath>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "operator/rollout/profile/metric_names.h"
#include "operator/rollout/profile/spec.h"

namespace booster::analysis {
namespace {

using Json = nlohmann::json;

absl::Status Invalid(absl::string_view field, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", why));
}

// {metric: [value, ...]} -> windows spanning [epoch, epoch + interval].
absl::Status ParseArm(const Json& arm, absl::string_view field, absl::Duration interval,
                      MetricWindows& out) {
  if (!arm.is_object()) {
    return Invalid(field, absl::StrCat("must be an object of metric name to a list of window "
                                       "values, e.g. {\"latencyP99\": [0.051, 0.049]}, got ",
                                       arm.type_name()));
  }
  const absl::Time start = absl::UnixEpoch();
  for (auto it = arm.begin(); it != arm.end(); ++it) {
    const std::string path = absl::StrCat(field, ".", it.key());
    if (!rollout::IsKnownMetric(it.key())) {
      return Invalid(path, absl::StrCat("is not a metric; expected one of ",
                                        absl::StrJoin(rollout::kMetricNames, ", ")));
    }
    if (!it.value().is_array()) {
      return Invalid(path, absl::StrCat("must be a list of numbers (one per window), got ",
                                        it.value().type_name()));
    }
    std::vector<Window>& windows = out[it.key()];
    for (size_t i = 0; i < it.value().size(); ++i) {
      const Json& v = it.value()[i];
      if (!v.is_number() || !std::isfinite(v.get<double>())) {
        return Invalid(absl::StrCat(path, "[", i, "]"),
                       absl::StrCat("must be a finite number, got ", v.dump()));
      }
      windows.push_back(Window{start, start + interval, v.get<double>(), "", absl::InfinitePast()});
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<JudgeInput> ParseJudgeInput(absl::string_view text) {
  Json input;
  try {
    input = Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("input is not JSON: ", e.what()));
  }
  return JudgeInputFromJson(input);
}

absl::StatusOr<JudgeInput> JudgeInputFromJson(const Json& input) {
  if (!input.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("input must be an object {\"analysis\": ..., \"baseline\": ..., "
                     "\"canary\": ...}, got ",
                     input.type_name()));
  }
  for (auto it = input.begin(); it != input.end(); ++it) {
    if (it.key() != "analysis" && it.key() != "baseline" && it.key() != "canary") {
      return Invalid(it.key(), "unknown field; expected analysis, baseline and canary");
    }
  }
  for (const char* field : {"analysis", "baseline", "canary"}) {
    if (!input.contains(field)) return Invalid(field, "is required");
  }
  // The operator's parser, fed a minimal spec around the analysis: the same defaults and
  // validation as a BoosterProfile. The longest step leaves any valid interval room.
  const Json spec = {{"targetRef", {{"kind", "Deployment"}, {"name", "booster-judge"}}},
                     {"rollout", {{"stepDuration", "24h"}, {"analysis", input["analysis"]}}}};
  absl::StatusOr<rollout::ProfileSpec> parsed = rollout::ParseSpec(spec);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrReplaceAll(parsed.status().message(), {{"spec.rollout.analysis", "analysis"}}));
  }
  JudgeInput out;
  out.analysis = parsed->rollout.analysis;
  if (out.analysis.metrics.empty()) {
    return Invalid("analysis.metrics",
                   "is empty: list the metrics to judge, e.g. [{\"name\": \"latencyP99\"}]");
  }
  if (absl::Status s =
          ParseArm(input["baseline"], "baseline", out.analysis.interval, out.windows.baseline);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ParseArm(input["canary"], "canary", out.analysis.interval, out.windows.canary);
      !s.ok()) {
    return s;
  }
  return out;
}

Decision JudgeOnce(const JudgeInput& input) {
  Look look;
  look.index = 1;
  look.planned = 1;
  look.step_over = true;
  look.step_ends = 1;
  return Judge(input.analysis, input.windows, look);
}

nlohmann::ordered_json DecisionToJson(const Decision& decision) {
  using Ordered = nlohmann::ordered_json;
  Ordered out;
  out["verdict"] = std::string(DecisionKindName(decision.kind));
  out["reason"] = decision.reason;
  out["message"] = decision.message;
  out["metrics"] = Ordered::array();
  auto arm = [](const ArmSummary& s) {
    Ordered a;
    a["n"] = s.n;
    a["median"] = std::isfinite(s.median) ? Ordered(s.median) : Ordered(nullptr);
    a["mean"] = std::isfinite(s.mean) ? Ordered(s.mean) : Ordered(nullptr);
    return a;
  };
  auto figure = [](double v) { return std::isfinite(v) ? Ordered(v) : Ordered(nullptr); };
  for (const MetricEvidence& e : decision.metrics) {
    Ordered m;
    m["name"] = e.name;
    m["verdict"] = std::string(MetricVerdictName(e.verdict));
    m["required"] = e.required;
    m["baseline"] = arm(e.baseline);
    m["canary"] = arm(e.canary);
    m["changePercent"] = figure(e.change_percent);
    m["changeOf"] = std::isnan(e.change_percent) ? Ordered(nullptr)
                                                 : Ordered(e.change_of_means ? "mean" : "median");
    m["pValue"] = figure(e.p_value);
    m["alpha"] = figure(e.alpha);
    m["note"] = e.note;
    out["metrics"].push_back(std::move(m));
  }
  return out;
}

}  // namespace booster::analysis
