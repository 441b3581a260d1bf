// The BoosterProfile parser: metadata, targetRef, rollout and analysis (spec.h); the
// tuning has its own parser (tuning.cc).
#include "operator/rollout/profile/spec.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "operator/rollout/profile/json_fields.h"
#include "operator/rollout/profile/metric_names.h"
#include "operator/rollout/profile/names.h"
#include "operator/notify/notification.h"
#include "operator/prometheus/query.h"
#include "operator/rollout/profile/search_spec.h"
#include "operator/rollout/profile/spec_fields.h"
#include "operator/rollout/profile/status_codec.h"
#include "operator/rollout/profile/time_text.h"
#include "operator/rollout/profile/tuning.h"

namespace booster::rollout {
namespace {

using profile_internal::AsInt;
using profile_internal::CheckObject;
using profile_internal::Field;
using profile_internal::FieldPath;
using profile_internal::GetBool;
using profile_internal::GetDuration;
using profile_internal::GetEnum;
using profile_internal::GetInt;
using profile_internal::GetNumber;
using profile_internal::GetString;
using profile_internal::IntAt;
using profile_internal::ParseSearch;
using profile_internal::ParseTuning;
using profile_internal::SpecErrors;
using profile_internal::StringAt;

bool IsDnsLabel(absl::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool alnum = absl::ascii_islower(c) || absl::ascii_isdigit(c);
    if (!alnum && !(c == '-' && i != 0 && i + 1 != s.size())) return false;
  }
  return true;
}

bool IsDnsSubdomain(absl::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  for (absl::string_view label : absl::StrSplit(s, '.')) {
    if (!IsDnsLabel(label)) return false;
  }
  return true;
}

void ParseTargetRef(const Json* j, TargetRef& out, SpecErrors& errors) {
  const std::string p = "spec.targetRef";
  if (j == nullptr) {
    errors.Add(p, "is required: the Deployment to tune, e.g. {kind: Deployment, name: checkout}");
    return;
  }
  if (!CheckObject(*j, p, {"apiVersion", "kind", "name", "containers"}, errors)) return;
  if (auto v = GetString(*j, "apiVersion", p, errors)) {
    if (*v != "apps/v1") errors.Add(FieldPath(p, "apiVersion"), "must be apps/v1");
  }
  if (auto k = GetEnum(*j, "kind", p, {"Deployment"}, errors)) {
    out.kind = "Deployment";
  } else if (Field(*j, "kind") == nullptr) {
    errors.Add(FieldPath(p, "kind"), "is required; only Deployment is supported");
  }
  std::optional<std::string> name = GetString(*j, "name", p, errors);
  if (!name) {
    if (Field(*j, "name") == nullptr) errors.Add(FieldPath(p, "name"), "is required");
  } else if (name->size() > 245 || !IsDnsSubdomain(*name)) {
    errors.Add(FieldPath(p, "name"),
               absl::StrCat("\"", *name,
                            "\" is not a valid Deployment name (lower-case DNS subdomain of at "
                            "most 245 characters, so that <name>-booster is valid too)"));
  } else {
    out.name = *name;
  }
  if (const Json* c = Field(*j, "containers")) {
    const std::string cp = FieldPath(p, "containers");
    if (!c->is_array()) {
      errors.Add(cp, "must be a list of container names");
    } else if (c->size() > 16) {
      errors.Add(cp, "must list at most 16 containers");
    } else {
      std::set<std::string> seen;
      for (const Json& e : *c) {
        if (!e.is_string() || !IsDnsLabel(e.get<std::string>())) {
          errors.Add(cp, absl::StrCat("entry ", e.dump(), " is not a container name"));
          continue;
        }
        if (!seen.insert(e.get<std::string>()).second) {
          errors.Add(cp, absl::StrCat("lists \"", e.get<std::string>(), "\" twice"));
          continue;
        }
        out.containers.push_back(e.get<std::string>());
      }
    }
  }
}

// spec.rollout.analysis.source: the same rules as the agent's BOOSTER_APP_METRICS, so a
// profile the operator accepts never leaves agents failing on it.
void ParseAppSource(const Json& j, const std::string& p, AnalysisSpec& out, SpecErrors& errors) {
  if (!CheckObject(
          j, p, {"port", "path", "latencyHistogram", "requestCounter", "errorLabel", "errorMatch"},
          errors)) {
    return;
  }
  Json src = Json::object();
  if (auto v = GetInt(j, "port", p, 1, 65535, errors)) src["port"] = *v;
  if (auto v = GetString(j, "path", p, errors)) {
    if (v->empty() || (*v)[0] != '/' || v->size() > 256) {
      errors.Add(FieldPath(p, "path"),
                 absl::StrCat("must start with '/' (e.g. /metrics), got \"", *v, "\""));
    } else {
      src["path"] = *v;
    }
  }
  static const std::regex kMetricName("[a-zA-Z_:][a-zA-Z0-9_:]*");
  static const std::regex kLabelName("[a-zA-Z_][a-zA-Z0-9_]*");
  for (const auto& [key, re, what] :
       {std::tuple{"latencyHistogram", &kMetricName, "a Prometheus metric name"},
        std::tuple{"requestCounter", &kMetricName, "a Prometheus metric name"},
        std::tuple{"errorLabel", &kLabelName, "a Prometheus label name"}}) {
    if (auto v = GetString(j, key, p, errors)) {
      if (v->size() > 200 || !std::regex_match(*v, *re)) {
        errors.Add(FieldPath(p, key), absl::StrCat("must be ", what, ", got \"", *v, "\""));
      } else {
        src[key] = *v;
      }
    }
  }
  if (auto v = GetString(j, "errorMatch", p, errors)) {
    try {
      std::regex check(*v, std::regex::ECMAScript);
      src["errorMatch"] = *v;
    } catch (const std::regex_error&) {
      errors.Add(FieldPath(p, "errorMatch"),
                 absl::StrCat("is not a regular expression: \"", *v, "\" (e.g. \"5..\")"));
    }
  }
  out.source = std::move(src);
}

// A metrics entry's name and where its values come from: one of the agent's metrics (the
// name from the table, no direction), or a Prometheus metric (a name of the team's, a
// direction, a query whose placeholders are known). False when the entry is unusable.
bool ParseMetricSource(const Json& e, const std::string& ep, MetricSpec& metric,
                       SpecErrors& errors) {
  const Json* prom = Field(e, "prometheus");
  const Json* name = Field(e, "name");
  if (name == nullptr) {
    errors.Add(FieldPath(ep, "name"), "is required");
    return false;
  }
  if (prom == nullptr) {
    if (Field(e, "direction") != nullptr) {
      errors.Add(FieldPath(ep, "direction"),
                 "is only for a prometheus metric: an agent metric's direction is fixed");
    }
    if (!GetEnum(e, "name", ep, kMetricNames, errors)) return false;
    metric.name = name->get<std::string>();
    return true;
  }
  std::optional<std::string> n = GetString(e, "name", ep, errors);
  if (!n) return false;
  bool ok = true;
  if (IsKnownMetric(*n)) {
    errors.Add(FieldPath(ep, "name"),
               absl::StrCat("\"", *n, "\" is one of the agent's metrics; a prometheus "
                            "metric needs a name of its own (e.g. checkoutLatency)"));
    ok = false;
  } else if (n->empty() || n->size() > 63 || !absl::ascii_isalpha((*n)[0]) ||
             !std::all_of(n->begin(), n->end(),
                          [](char c) { return absl::ascii_isalnum(c) || c == '_'; })) {
    errors.Add(FieldPath(ep, "name"),
               absl::StrCat("\"", *n, "\" is not a metric name: a letter, then letters, digits "
                            "or _, at most 63"));
    ok = false;
  }
  metric.name = *n;
  if (auto d = GetEnum(e, "direction", ep, {"LowerIsBetter", "HigherIsBetter"}, errors)) {
    metric.direction = *d == 0 ? Direction::kLowerIsBetter : Direction::kHigherIsBetter;
  } else if (Field(e, "direction") == nullptr) {
    errors.Add(FieldPath(ep, "direction"),
               "is required with prometheus: LowerIsBetter or HigherIsBetter");
    ok = false;
  } else {
    ok = false;
  }
  const std::string pp = FieldPath(ep, "prometheus");
  if (!CheckObject(*prom, pp, {"query"}, errors)) return false;
  std::optional<std::string> q = GetString(*prom, "query", pp, errors);
  if (!q) {
    if (Field(*prom, "query") == nullptr) errors.Add(FieldPath(pp, "query"), "is required");
    return false;
  }
  if (q->size() > 4096) {
    errors.Add(FieldPath(pp, "query"), "must be at most 4096 characters");
    return false;
  }
  if (absl::Status checked = promql::CheckQueryTemplate(*q); !checked.ok()) {
    errors.Add(FieldPath(pp, "query"), std::string(checked.message()));
    return false;
  }
  metric.prometheus_query = *q;
  return ok;
}

}  // namespace

std::vector<MetricSpec> DefaultMetrics() {
  return {
      {.name = "latencyP99", .max_regression_percent = 10, .required = false},
      {.name = "throughput", .max_regression_percent = 10, .required = false},
      {.name = "errorRate", .max_regression_percent = 20, .required = false},
      {.name = "cpuThrottling", .max_regression_percent = 100, .required = false},
      {.name = "listenOverflows", .max_regression_percent = 0, .required = true},
  };
}

namespace {

void ParseAnalysis(const Json& j, AnalysisSpec& out, absl::Duration step_duration,
                   SpecErrors& errors) {
  const std::string p = "spec.rollout.analysis";
  if (!CheckObject(j, p,
                   {"mode", "interval", "warmup", "minSamples", "confidence", "maxExtensions",
                    "onInconclusive", "dryRun", "baseline", "metrics", "source",
                    // Resolved before parsing (analysis_template.h); checked there.
                    "templateRef"},
                   errors)) {
    return;
  }
  if (const Json* src = Field(j, "source")) {
    ParseAppSource(*src, FieldPath(p, "source"), out, errors);
  }
  if (auto v = GetEnum(j, "mode", p, {"Time", "Metrics"}, errors)) {
    out.mode = static_cast<AnalysisMode>(*v);
  }
  if (auto v = GetDuration(j, "interval", p, absl::Seconds(1), absl::Hours(1), errors)) {
    out.interval = *v;
  }
  if (auto v = GetDuration(j, "warmup", p, absl::ZeroDuration(), absl::Hours(1), errors)) {
    out.warmup = *v;
  }
  if (auto v = GetInt(j, "minSamples", p, 1, 100000, errors)) out.min_samples = *v;
  if (auto v = GetNumber(j, "confidence", p, 0.5, 0.9999, errors)) out.confidence = *v;
  if (auto v = GetInt(j, "maxExtensions", p, 0, 20, errors)) out.max_extensions = *v;
  if (auto v = GetEnum(j, "onInconclusive", p, {"Rollback", "Promote"}, errors)) {
    out.on_inconclusive = static_cast<InconclusivePolicy>(*v);
  }
  if (auto v = GetBool(j, "dryRun", p, errors)) out.dry_run = *v;
  if (auto v = GetEnum(j, "baseline", p, {"Fresh", "Target"}, errors)) {
    out.baseline = static_cast<BaselinePolicy>(*v);
  }
  if (const Json* m = Field(j, "metrics")) {
    out.metrics.clear();  // the default set is for profiles that list none
    const std::string mp = FieldPath(p, "metrics");
    if (!m->is_array()) {
      errors.Add(mp, "must be a list");
    } else if (m->size() > 16) {
      errors.Add(mp, "must have at most 16 entries");
    } else {
      std::set<std::string> seen;
      for (size_t i = 0; i < m->size(); ++i) {
        const Json& e = (*m)[i];
        const std::string ep = absl::StrCat(mp, "[", i, "]");
        if (!CheckObject(e, ep,
                         {"name", "maxRegressionPercent", "minImprovementPercent", "required",
                          "direction", "prometheus"},
                         errors)) {
          continue;
        }
        MetricSpec metric;
        if (!ParseMetricSource(e, ep, metric, errors)) continue;
        if (!seen.insert(metric.name).second) {
          errors.Add(ep, absl::StrCat("metric ", metric.name, " is listed twice"));
          continue;
        }
        if (auto v = GetNumber(e, "maxRegressionPercent", ep, 0, 1000, errors)) {
          metric.max_regression_percent = *v;
        }
        metric.min_improvement_percent = GetNumber(e, "minImprovementPercent", ep, 0, 1000, errors);
        if (auto v = GetBool(e, "required", ep, errors)) metric.required = *v;
        out.metrics.push_back(metric);
      }
    }
  }
  if (out.mode == AnalysisMode::kTime && Field(j, "metrics") == nullptr) {
    out.metrics.clear();  // mode Time judges nothing
  } else if (out.mode == AnalysisMode::kMetrics && out.metrics.empty()) {
    errors.Add(FieldPath(p, "metrics"),
               "mode Metrics needs at least one metric, e.g. [{name: latencyP99}]; leave "
               "metrics out for the default set");
  }
  if (Field(j, "interval") == nullptr && out.interval > step_duration) {
    // The default 30s window does not fit a shorter step: shrink it to the step.
    out.interval = step_duration;
  } else if (out.interval > step_duration) {
    errors.Add(FieldPath(p, "interval"),
               absl::StrCat(FormatGoDuration(out.interval), " is longer than stepDuration (",
                            FormatGoDuration(step_duration),
                            "): a step would end before its first window"));
  }
}

void ParseRollout(const Json& j, RolloutSpec& out, SpecErrors& errors) {
  const std::string p = "spec.rollout";
  if (!CheckObject(j, p,
                   {"steps", "stepDuration", "progressDeadline", "paused", "hpaPolicy",
                    "onNewRevision", "analysis"},
                   errors)) {
    return;
  }
  if (const Json* s = Field(j, "steps")) {
    const std::string sp = FieldPath(p, "steps");
    if (!s->is_array()) {
      errors.Add(sp, "must be a list of percentages, e.g. [10, 50, 100]");
    } else if (s->empty() || s->size() > 20) {
      errors.Add(sp, "must have between 1 and 20 entries, e.g. [10, 50, 100]");
    } else {
      std::vector<int> steps;
      bool ok = true;
      for (const Json& e : *s) {
        std::optional<int64_t> w = AsInt(e);
        if (!w || *w < 1 || *w > 100) {
          errors.Add(sp, absl::StrCat("entry ", e.dump(), " is not a percentage from 1 to 100"));
          ok = false;
          continue;
        }
        steps.push_back(static_cast<int>(*w));
      }
      if (ok) {
        for (size_t i = 1; i < steps.size(); ++i) {
          if (steps[i] <= steps[i - 1]) {
            errors.Add(sp, absl::StrCat("must strictly ascend, but ", steps[i], " follows ",
                                        steps[i - 1], "; e.g. [10, 50, 100]"));
            ok = false;
            break;
          }
        }
        if (steps.back() != 100) {
          errors.Add(sp, absl::StrCat("must end at 100 (the whole Deployment on the tuning), "
                                      "but ends at ",
                                      steps.back()));
          ok = false;
        }
      }
      if (ok) out.steps = std::move(steps);
    }
  }
  if (auto v = GetDuration(j, "stepDuration", p, absl::Seconds(1), absl::Hours(24), errors)) {
    out.step_duration = *v;
  }
  if (auto v = GetDuration(j, "progressDeadline", p, absl::Seconds(10), absl::Hours(24), errors)) {
    out.progress_deadline = *v;
  }
  if (auto v = GetBool(j, "paused", p, errors)) out.paused = *v;
  if (auto v = GetEnum(j, "hpaPolicy", p, {"Follow", "Pause", "Fixed"}, errors)) {
    out.hpa_policy = static_cast<HpaPolicy>(*v);
  }
  if (auto v = GetEnum(j, "onNewRevision", p, {"Restart", "Rollback", "Reverify"}, errors)) {
    out.on_new_revision = static_cast<NewRevisionPolicy>(*v);
  }
  if (const Json* a = Field(j, "analysis")) {
    ParseAnalysis(*a, out.analysis, out.step_duration, errors);
  } else if (out.analysis.interval > out.step_duration) {
    // The default 30s window does not fit a shorter step: shrink it to the step.
    out.analysis.interval = out.step_duration;
  }
}

}  // namespace

absl::StatusOr<ProfileSpec> ParseSpec(const Json& spec) {
  SpecErrors errors;
  ProfileSpec out;
  out.rollout.analysis.metrics = DefaultMetrics();  // mode Metrics (the default), none listed
  if (!CheckObject(spec, "spec", {"targetRef", "tuning", "rollout", "search", "notifications"},
                   errors)) {
    return absl::InvalidArgumentError(errors.Joined());
  }
  ParseTargetRef(Field(spec, "targetRef"), out.target_ref, errors);
  if (const Json* t = Field(spec, "tuning")) ParseTuning(*t, out.tuning, errors);
  if (const Json* r = Field(spec, "rollout")) ParseRollout(*r, out.rollout, errors);
  if (const Json* s = Field(spec, "search")) {
    out.search.emplace();
    ParseSearch(*s, out.tuning, out.rollout.analysis, *out.search, errors);
  }
  // Read by the notifications (operator/notify), not by the rollout: only checked here.
  if (const Json* n = Field(spec, "notifications")) {
    absl::Status channels = notify::ParseChannels(*n).status();
    if (!channels.ok()) {
      const std::string m(channels.message());
      const size_t colon = m.find(": ");
      errors.Add(m.substr(0, colon), colon == std::string::npos ? "" : m.substr(colon + 2));
    }
  }
  if (!errors.empty()) return absl::InvalidArgumentError(errors.Joined());
  return out;
}

absl::StatusOr<Profile> ParseProfile(const Json& object) {
  if (!object.is_object()) return absl::InvalidArgumentError("a BoosterProfile is a JSON object");
  if (std::string kind = StringAt(object, "kind"); !kind.empty() && kind != kKind) {
    return absl::InvalidArgumentError(absl::StrCat("expected kind ", kKind, ", got ", kind));
  }
  Profile p;
  const Json* meta = Field(object, "metadata");
  if (meta == nullptr || !meta->is_object() || StringAt(*meta, "name").empty()) {
    return absl::InvalidArgumentError("a BoosterProfile needs metadata.name");
  }
  p.meta.name = StringAt(*meta, "name");
  p.meta.namespace_ = StringAt(*meta, "namespace");
  p.meta.uid = StringAt(*meta, "uid");
  p.meta.resource_version = StringAt(*meta, "resourceVersion");
  p.meta.generation = IntAt(*meta, "generation");
  p.meta.deleting = !StringAt(*meta, "deletionTimestamp").empty();
  if (const Json* a = Field(*meta, "annotations"); a != nullptr && a->is_object()) {
    for (auto it = a->begin(); it != a->end(); ++it) {
      if (it.value().is_string()) p.meta.annotations[it.key()] = it.value().get<std::string>();
    }
  }
  if (const Json* f = Field(*meta, "finalizers"); f != nullptr && f->is_array()) {
    for (const Json& e : *f) {
      if (e.is_string()) p.meta.finalizers.push_back(e.get<std::string>());
    }
  }
  const Json* spec = Field(object, "spec");
  p.spec = spec == nullptr ? absl::InvalidArgumentError("spec: is required") : ParseSpec(*spec);
  if (const Json* s = Field(object, "status")) p.status = ParseStatus(*s);
  return p;
}

}  // namespace booster::rollout
