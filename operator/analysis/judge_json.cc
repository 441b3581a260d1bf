#include "operator/analysis/judge_json.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "operator/analysis/judge_verdict_source.h"
#include "operator/rollout/profile/metric_names.h"
#include "operator/rollout/profile/spec.h"
#include "operator/rollout/profile/time_text.h"

namespace booster::analysis {
namespace {

using Json = nlohmann::json;

absl::Status Invalid(absl::string_view field, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", why));
}

constexpr char kWindowFields[] = "pod, node, start, end, podStart, value, requests, buckets";

// Where the input's first window with times and first without are, for the error that
// forbids mixing them: a bare value sits at the epoch, far from any recorded time, so the
// arms' time ranges would not overlap.
struct Timing {
  std::string timed;
  std::string untimed;
};

// Seconds since the Unix epoch (a double) -> a finite time.
absl::StatusOr<absl::Time> Seconds(const Json& v, absl::string_view path) {
  if (v.is_number() && std::isfinite(v.get<double>())) {
    const absl::Time t = absl::UnixEpoch() + absl::Seconds(v.get<double>());
    if (t != absl::InfiniteFuture() && t != absl::InfinitePast()) return t;
  }
  return Invalid(path, absl::StrCat("must be a finite number of seconds, got ", v.dump()));
}

// The time an untimed window (a bare value, or an object without start and end) is given:
// the i-th of its list spans interval i from the epoch, so the i-th windows of the two arms
// are judged as measured over the same interval.
absl::Time UntimedStart(size_t i, absl::Duration interval) {
  return absl::UnixEpoch() + interval * static_cast<int64_t>(i);
}

// [[upper bound or "+Inf", cumulative count], ...] -> a latency histogram CheckBuckets takes.
absl::StatusOr<Buckets> ParseBuckets(const Json& v, const std::string& path) {
  constexpr char kShape[] =
      "must be [[upper bound in seconds, cumulative count], ...] ending with [\"+Inf\", total]";
  if (!v.is_array()) return Invalid(path, absl::StrCat(kShape, ", got ", v.dump()));
  Buckets out;
  for (const Json& b : v) {
    if (!b.is_array() || b.size() != 2 || !b[1].is_number()) {
      return Invalid(path, absl::StrCat(kShape, ", got ", b.dump()));
    }
    double bound = 0;
    if (b[0].is_string() && b[0].get<std::string>() == "+Inf") {
      bound = std::numeric_limits<double>::infinity();
    } else if (b[0].is_number()) {
      bound = b[0].get<double>();
    } else {
      return Invalid(path, absl::StrCat(kShape, ", got ", b.dump()));
    }
    out.emplace_back(bound, b[1].get<double>());
  }
  if (std::string why = CheckBuckets(out); !why.empty()) return Invalid(path, why);
  return out;
}

// {"pod", "node", "start", "end", "podStart", "value", "requests", "buckets"} -> a Window.
// Without start and end it is the index-th window of its list, like a bare value.
absl::StatusOr<Window> ParseWindowObject(const Json& o, const std::string& path, size_t index,
                                         absl::Duration interval, Timing& timing) {
  for (auto it = o.begin(); it != o.end(); ++it) {
    const absl::string_view key = it.key();
    if (key != "pod" && key != "node" && key != "start" && key != "end" && key != "podStart" &&
        key != "value" && key != "requests" && key != "buckets") {
      return Invalid(absl::StrCat(path, ".", key),
                     absl::StrCat("unknown field; expected ", kWindowFields));
    }
  }
  Window w;
  if (!o.contains("pod")) return Invalid(path + ".pod", "is required (the pod that reported it)");
  if (!o["pod"].is_string() || o["pod"].get<std::string>().empty()) {
    return Invalid(path + ".pod", absl::StrCat("must be a pod name, got ", o["pod"].dump()));
  }
  w.pod = o["pod"].get<std::string>();
  if (o.contains("node")) {
    if (!o["node"].is_string()) {
      return Invalid(path + ".node", absl::StrCat("must be a node name, got ", o["node"].dump()));
    }
    w.node = o["node"].get<std::string>();
  }
  if (!o.contains("value")) return Invalid(path + ".value", "is required");
  if (!o["value"].is_number() || !std::isfinite(o["value"].get<double>())) {
    return Invalid(path + ".value",
                   absl::StrCat("must be a finite number, got ", o["value"].dump()));
  }
  w.value = o["value"].get<double>();
  if (o.contains("requests")) {
    const Json& r = o["requests"];
    if (!r.is_number_unsigned()) {
      return Invalid(path + ".requests",
                     absl::StrCat("must be a whole number of requests >= 0, got ", r.dump()));
    }
    if (r.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Invalid(path + ".requests", absl::StrCat("is too large: ", r.dump()));
    }
    w.requests = static_cast<int64_t>(r.get<uint64_t>());
  }
  if (o.contains("buckets")) {
    absl::StatusOr<Buckets> buckets = ParseBuckets(o["buckets"], path + ".buckets");
    if (!buckets.ok()) return buckets.status();
    w.buckets = std::make_shared<const Buckets>(*std::move(buckets));
  }
  const bool has_start = o.contains("start");
  const bool has_end = o.contains("end");
  if (has_start != has_end) {
    return Invalid(absl::StrCat(path, has_start ? ".end" : ".start"),
                   absl::StrCat("is required with ", has_start ? "start" : "end",
                                " (seconds, e.g. Unix seconds)"));
  }
  if (!has_start) {
    if (o.contains("podStart")) return Invalid(path + ".podStart", "needs start and end");
    w.start = UntimedStart(index, interval);
    w.end = w.start + interval;
    if (timing.untimed.empty()) timing.untimed = path;
    return w;
  }
  absl::StatusOr<absl::Time> start = Seconds(o["start"], path + ".start");
  if (!start.ok()) return start.status();
  absl::StatusOr<absl::Time> end = Seconds(o["end"], path + ".end");
  if (!end.ok()) return end.status();
  if (*end <= *start) {
    return Invalid(path + ".end", absl::StrCat("must be after start (", o["end"].dump(),
                                               " <= ", o["start"].dump(), ")"));
  }
  w.start = *start;
  w.end = *end;
  if (o.contains("podStart")) {
    absl::StatusOr<absl::Time> pod_start = Seconds(o["podStart"], path + ".podStart");
    if (!pod_start.ok()) return pod_start.status();
    w.pod_start = *pod_start;
  }
  if (timing.timed.empty()) timing.timed = path;
  return w;
}

// {metric: [value, ...]} -> window i spanning interval i from the epoch; {metric: [{window},
// ...]} -> the windows as described.
absl::Status ParseArm(const Json& arm, absl::string_view field, absl::Duration interval,
                      MetricWindows& out, Timing& timing) {
  if (!arm.is_object()) {
    return Invalid(field, absl::StrCat("must be an object of metric name to a list of windows, "
                                       "e.g. {\"latencyP99\": [0.051, 0.049]}, got ",
                                       arm.type_name()));
  }
  for (auto it = arm.begin(); it != arm.end(); ++it) {
    const std::string path = absl::StrCat(field, ".", it.key());
    if (!rollout::IsKnownMetric(it.key())) {
      return Invalid(path, absl::StrCat("is not a metric; expected one of ",
                                        absl::StrJoin(rollout::kMetricNames, ", ")));
    }
    if (!it.value().is_array()) {
      return Invalid(path, absl::StrCat("must be a list of windows (numbers, or objects with "
                                        "pod, start, end and value), got ",
                                        it.value().type_name()));
    }
    std::vector<Window>& windows = out[it.key()];
    const bool objects = !it.value().empty() && it.value()[0].is_object();
    for (size_t i = 0; i < it.value().size(); ++i) {
      const Json& v = it.value()[i];
      const std::string at = absl::StrCat(path, "[", i, "]");
      if (v.is_object() != objects && (v.is_object() || v.is_number())) {
        return Invalid(
            at, absl::StrCat("is ", v.is_object() ? "a window object" : "a number", ", but ", path,
                             "[0] is ", objects ? "a window object" : "a number",
                             ": a list holds numbers or window objects, not both"));
      }
      if (objects && !v.is_object()) {
        return Invalid(at, absl::StrCat("must be a window object {\"pod\", \"start\", \"end\", "
                                        "\"value\"}, got ",
                                        v.dump()));
      }
      if (v.is_object()) {
        absl::StatusOr<Window> w = ParseWindowObject(v, at, i, interval, timing);
        if (!w.ok()) return w.status();
        windows.push_back(*std::move(w));
        continue;
      }
      if (!v.is_number() || !std::isfinite(v.get<double>())) {
        return Invalid(at, absl::StrCat("must be a finite number or a window object {\"pod\", "
                                        "\"start\", \"end\", \"value\"}, got ",
                                        v.dump()));
      }
      const absl::Time start = UntimedStart(i, interval);
      windows.push_back(Window{start, start + interval, v.get<double>(), "", absl::InfinitePast()});
      if (timing.untimed.empty()) timing.untimed = at;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<JudgeInput> ParseJudgeInput(absl::string_view text,
                                           const JudgeInputOptions& options) {
  Json input;
  try {
    input = Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("input is not JSON: ", e.what()));
  }
  return JudgeInputFromJson(input, options);
}

absl::StatusOr<JudgeInput> JudgeInputFromJson(const Json& input, const JudgeInputOptions& options) {
  if (!input.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("input must be an object {\"analysis\": ..., \"baseline\": ..., "
                     "\"canary\": ...}, got ",
                     input.type_name()));
  }
  for (auto it = input.begin(); it != input.end(); ++it) {
    if (it.key() != "analysis" && it.key() != "baseline" && it.key() != "canary" &&
        it.key() != "stepDuration" && it.key() != "steps") {
      return Invalid(it.key(),
                     "unknown field; expected analysis, baseline, canary, stepDuration, steps");
    }
  }
  for (const char* field : {"analysis", "baseline", "canary"}) {
    if (!input.contains(field)) return Invalid(field, "is required");
  }
  JudgeInput out;
  if (input.contains("steps")) {
    const Json& s = input["steps"];
    if (!s.is_number_integer() || s.get<int64_t>() < 1 || s.get<int64_t>() > 20) {
      return Invalid("steps", absl::StrCat("must be a whole number from 1 to 20 (the rollout's "
                                           "steps, which share the alpha budget), got ",
                                           s.dump()));
    }
    out.steps = static_cast<int>(s.get<int64_t>());
  }
  // The operator's parser, fed a minimal spec around the analysis: the same defaults and
  // validation as a BoosterProfile, the step's duration included. Without a step to fit,
  // the longest step leaves any valid interval room.
  const bool flag = !options.step_duration.empty();
  const bool given = flag || input.contains("stepDuration");
  Json step = "24h";
  if (flag) {
    step = options.step_duration;
  } else if (input.contains("stepDuration")) {
    step = input["stepDuration"];
  } else if (options.replay) {
    step = rollout::FormatGoDuration(rollout::RolloutSpec().step_duration);
  }
  const Json spec = {{"targetRef", {{"kind", "Deployment"}, {"name", "booster-judge"}}},
                     {"rollout", {{"stepDuration", step}, {"analysis", input["analysis"]}}}};
  absl::StatusOr<rollout::ProfileSpec> parsed = rollout::ParseSpec(spec);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrReplaceAll(
        parsed.status().message(),
        {{"spec.rollout.analysis", "analysis"},
         {"spec.rollout.stepDuration", flag ? "--step-duration" : "stepDuration"}}));
  }
  out.analysis = parsed->rollout.analysis;
  if (given || options.replay) out.step_duration = parsed->rollout.step_duration;
  if (out.analysis.metrics.empty()) {
    return Invalid("analysis.metrics",
                   "is empty: list the metrics to judge, e.g. [{\"name\": \"latencyP99\"}]");
  }
  Timing timing;
  if (absl::Status s = ParseArm(input["baseline"], "baseline", out.analysis.interval,
                                out.windows.baseline, timing);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ParseArm(input["canary"], "canary", out.analysis.interval, out.windows.canary, timing);
      !s.ok()) {
    return s;
  }
  if (!timing.timed.empty() && !timing.untimed.empty()) {
    return Invalid(timing.untimed,
                   absl::StrCat("has no start and end, but ", timing.timed,
                                " has: give every window its times, or none (windows without "
                                "times sit at the epoch, apart from any recorded time)"));
  }
  return out;
}

Decision JudgeOnce(const JudgeInput& input) {
  Look look;
  look.index = 1;
  look.planned = 1;
  look.step_over = true;
  look.step_ends = 1;
  return Judge(input.analysis, input.windows, look, OptionsFor(input.analysis));
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
                 : Ordered(e.method == "histogram" ? "quantile"
                           : e.change_of_means        ? "mean"
                                                      : "median");
    m["pValue"] = figure(e.p_value);
    m["alpha"] = figure(e.alpha);
    m["method"] = e.method.empty() ? Ordered(nullptr) : Ordered(e.method);
    const Ordered pods{{"baseline", e.baseline_pods},
                       {"canary", e.canary_pods},
                       {"leftOut", e.pods_left_out}};
    if (e.method == "paired" || e.method == "histogram") {
      m["intervals"] = e.intervals;
      m["pods"] = pods;
      m["podSdPercent"] = figure(e.pod_sd_percent);
      m["podSdObservedPercent"] = figure(e.pod_sd_observed_percent);
      m["onsetPValue"] = figure(e.onset_p_value);
      m["onsetAlpha"] = figure(e.onset_alpha);
      m["late"] = e.late_intervals > 0 ? Ordered{{"intervals", e.late_intervals},
                                                 {"changePercent", figure(e.late_change_percent)}}
                                       : Ordered(nullptr);
    } else if (e.method == "rate") {
      m["pods"] = pods;
      m["events"] = Ordered{{"baseline", e.baseline_events}, {"canary", e.canary_events}};
      m["exposure"] = Ordered{{"baseline", e.baseline_exposure}, {"canary", e.canary_exposure}};
    }
    m["upperBoundPercent"] = figure(e.upper_bound_percent);
    m["passAlpha"] = figure(e.pass_alpha);
    m["note"] = e.note;
    out["metrics"].push_back(std::move(m));
  }
  return out;
}

}  // namespace booster::analysis
