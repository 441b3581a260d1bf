// Prometheus metrics' queries as the operator reports them (metric_queries.h).
#include "operator/controller/metric_queries.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "operator/controller/log.h"
#include "operator/kube/json.h"
#include "operator/rollout/pod_template.h"
#include "operator/rollout/profile/time_text.h"

namespace booster::controller {

promql::ArmPods ArmPodsOf(const kube::Store& pods, const std::string& ns,
                          const std::string& marker) {
  promql::ArmPods out;
  if (marker.empty()) return out;
  for (const kube::ObjectPtr& p : pods.ByIndex(kube::kNamespaceIndex, ns)) {
    if (p == nullptr) continue;
    const kube::Json& meta = p->value("metadata", kube::Json::object());
    if (meta.contains("deletionTimestamp")) continue;
    const kube::Json& annotations = meta.value("annotations", kube::Json::object());
    auto a = annotations.find(rollout::kTemplateHashAnnotation);
    if (a == annotations.end() || !a->is_string() || a->get<std::string>() != marker) continue;
    if (kube::JsonString(*p, "/status/phase") != "Running") continue;
    out.names.push_back(meta.value("name", ""));
    std::string started = kube::JsonString(*p, "/status/startTime");
    if (started.empty()) started = meta.value("creationTimestamp", "");
    out.newest_start =
        std::max(out.newest_start, rollout::ParseTimeOr(started, absl::InfinitePast()));
  }
  std::sort(out.names.begin(), out.names.end());
  return out;
}

std::string QueryFailureMessage(const promql::QueryReport& r) {
  std::string query = r.query;
  if (query.size() > kQueryInEvent) query = absl::StrCat(query.substr(0, kQueryInEvent), "...");
  return absl::StrCat("metric ", r.metric, ", ", r.arm,
                      " arm: ", promql::QueryOutcomeName(r.result.outcome), ": ", r.result.message,
                      "; query: ", query);
}

MetricQueries::MetricQueries(prometheus::Registry& registry, kube::EventRecorder* events,
                             const kube::Store* profiles)
    : family_(prometheus::BuildCounter()
                  .Name("booster_operator_metric_queries_total")
                  .Help("Queries of the profiles' Prometheus metrics (spec.rollout.analysis."
                        "metrics[].prometheus), one per arm per analysis interval, by result: "
                        "value, or why there is none (empty, multiple, not_finite, error)")
                  .Register(registry)),
      events_(events),
      profiles_(profiles) {}

void MetricQueries::Answered(const promql::QueryReport& r) {
  const bool ok = r.result.outcome == promql::QueryOutcome::kValue;
  std::string result;
  switch (r.result.outcome) {
    case promql::QueryOutcome::kValue:
      result = "value";
      break;
    case promql::QueryOutcome::kEmpty:
      result = "empty";
      break;
    case promql::QueryOutcome::kMultiple:
      result = "multiple";
      break;
    case promql::QueryOutcome::kNotFinite:
      result = "not_finite";
      break;
    case promql::QueryOutcome::kError:
      result = "error";
      break;
  }
  family_
      .Add({{"namespace", r.ns},
            {"profile", r.profile},
            {"metric", r.metric},
            {"arm", r.arm},
            {"result", result}})
      .Increment();
  if (!ok) {
    Log(Level::kWarning, "prometheus metric has no value",
        {{"profile", r.ns + "/" + r.profile},
         {"metric", r.metric},
         {"arm", r.arm},
         {"at", rollout::FormatRfc3339(r.at)},
         {"result", result},
         {"error", r.result.message},
         {"query", r.query}});
  }
  if (!r.changed || (ok && !r.recovered) || events_ == nullptr || profiles_ == nullptr) return;
  kube::ObjectPtr profile = profiles_->Get(r.ns + "/" + r.profile);
  if (profile == nullptr) return;
  const std::string message =
      ok ? absl::StrCat("metric ", r.metric, ", ", r.arm, " arm: answered again")
         : QueryFailureMessage(r);
  absl::Status s = events_->Event(*profile, ok ? "Normal" : "Warning",
                                  ok ? "MetricQueryAnswered" : "MetricQueryFailed", message);
  if (!s.ok()) {
    Log(Level::kWarning, "event not recorded",
        {{"profile", r.ns + "/" + r.profile}, {"error", s.ToString()}});
  }
}

}  // namespace booster::controller
