// The operator's side of the Prometheus metrics (operator/prometheus/source.h): the arms'
// pods from the pods informer's store, and what becomes of each query: the counter
// booster_operator_metric_queries_total{namespace,profile,metric,arm,result}, a Warning Event
// MetricQueryFailed on the profile when a metric and arm's answers turn into a failure (an
// error, an empty or non-finite result, several series) with the query as sent, and a Normal
// MetricQueryAnswered when they recover; a log line for each failure.
//
//   MetricQueries reports(registry, &recorder, &profiles_store);
//   promql::PrometheusWindows windows(querier, [&](auto& ns, auto& marker) {
//     return ArmPodsOf(pods_store, ns, marker); }, &reports, clock);
#ifndef BOOSTER_OPERATOR_CONTROLLER_METRIC_QUERIES_H_
#define BOOSTER_OPERATOR_CONTROLLER_METRIC_QUERIES_H_

#include <string>

#include "operator/kube/events.h"
#include "operator/kube/store.h"
#include "operator/prometheus/source.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/registry.h"

namespace booster::controller {

// The running pods of `ns` (not being deleted) whose template marker
// (rollout::kTemplateHashAnnotation) is `marker`, and the newest start among them
// (status.startTime, else the creation time).
promql::ArmPods ArmPodsOf(const kube::Store& pods, const std::string& ns,
                          const std::string& marker);

// The longest query an Event quotes; the log line has it whole.
inline constexpr size_t kQueryInEvent = 600;

class MetricQueries final : public promql::QueryObserver {
 public:
  // Nothing owned. `events` may be null (no Events); `profiles` is where the profile object
  // an Event is about is read from.
  MetricQueries(prometheus::Registry& registry, kube::EventRecorder* events,
                const kube::Store* profiles);
  void Answered(const promql::QueryReport& report) override;

 private:
  prometheus::Family<prometheus::Counter>& family_;
  kube::EventRecorder* const events_;
  const kube::Store* const profiles_;
};

// "metric checkoutLatency, canary arm: <outcome>: <message>; query: <query>" (the query cut at
// kQueryInEvent characters), the Event's message.
std::string QueryFailureMessage(const promql::QueryReport& report);

}  // namespace booster::controller

#endif  // BOOSTER_OPERATOR_CONTROLLER_METRIC_QUERIES_H_
