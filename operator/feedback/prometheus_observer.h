// FeedbackObserver that exports the feedback server's activity as Prometheus metrics
// (prometheus-cpp), for the operator's /metrics:
//
//   booster_operator_agent_streams{arm}                  gauge    open authenticated streams
//   booster_operator_agent_windows_total{arm}            counter  reports stored
//   booster_operator_agent_windows_dropped_total{reason} counter  reports not stored
//                                                                 (duplicate, no_step,
//                                                                 before_step,
//                                                                 stale_template,
//                                                                 invalid_report)
//   booster_operator_agent_rejected_total{reason}        counter  streams refused
//
// Every label value is created up front at 0, so rates and alerts work from the start.
//
//   auto registry = std::make_shared<prometheus::Registry>();
//   PrometheusFeedbackObserver metrics(*registry);
//   FeedbackServer::Start(options, {..., .observer = &metrics});
#ifndef BOOSTER_OPERATOR_FEEDBACK_PROMETHEUS_OBSERVER_H_
#define BOOSTER_OPERATOR_FEEDBACK_PROMETHEUS_OBSERVER_H_

#include <array>
#include <map>

#include "operator/feedback/observer.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace booster::feedback {

class PrometheusFeedbackObserver final : public FeedbackObserver {
 public:
  // Registers the families in `registry`, which must outlive the observer.
  explicit PrometheusFeedbackObserver(prometheus::Registry& registry);

  void StreamOpened(const AgentIdentity& agent) override;
  void StreamClosed(const AgentIdentity& agent) override;
  void WindowAccepted(const AgentIdentity& agent) override;
  void WindowDropped(const AgentIdentity& agent, AddResult result) override;
  void Rejected(RejectReason reason, absl::string_view detail) override;

 private:
  // prometheus-cpp series are thread-safe; the maps are filled in the constructor only.
  std::array<prometheus::Gauge*, kArmCount> streams_{};
  std::array<prometheus::Counter*, kArmCount> windows_{};
  std::map<AddResult, prometheus::Counter*> dropped_;
  std::map<RejectReason, prometheus::Counter*> rejected_;
};

}  // namespace booster::feedback

#endif  // BOOSTER_OPERATOR_FEEDBACK_PROMETHEUS_OBSERVER_H_
