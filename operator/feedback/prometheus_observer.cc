#include "operator/feedback/prometheus_observer.h"

#include <string>

namespace booster::feedback {

PrometheusFeedbackObserver::PrometheusFeedbackObserver(prometheus::Registry& registry) {
  auto& streams = prometheus::BuildGauge()
                      .Name("booster_operator_agent_streams")
                      .Help("Authenticated agent streams open now, per arm")
                      .Register(registry);
  auto& windows = prometheus::BuildCounter()
                      .Name("booster_operator_agent_windows_total")
                      .Help("Agent measurement windows stored for analysis, per arm")
                      .Register(registry);
  auto& dropped = prometheus::BuildCounter()
                      .Name("booster_operator_agent_windows_dropped_total")
                      .Help("Agent measurement windows not stored, per reason")
                      .Register(registry);
  auto& rejected = prometheus::BuildCounter()
                       .Name("booster_operator_agent_rejected_total")
                       .Help("Agent streams refused, per reason")
                       .Register(registry);
  for (Arm arm : kArms) {
    const std::string name(ArmName(arm));
    streams_[static_cast<int>(arm)] = &streams.Add({{"arm", name}});
    windows_[static_cast<int>(arm)] = &windows.Add({{"arm", name}});
  }
  for (AddResult r : {AddResult::kDuplicate, AddResult::kNoStep, AddResult::kBeforeStep,
                      AddResult::kStaleTemplate,
                      AddResult::kInvalid}) {
    dropped_[r] = &dropped.Add({{"reason", std::string(AddResultName(r))}});
  }
  for (RejectReason r : kRejectReasons) {
    rejected_[r] = &rejected.Add({{"reason", std::string(RejectReasonName(r))}});
  }
}

void PrometheusFeedbackObserver::StreamOpened(const AgentIdentity& agent) {
  streams_[static_cast<int>(agent.arm)]->Increment();
}

void PrometheusFeedbackObserver::StreamClosed(const AgentIdentity& agent) {
  streams_[static_cast<int>(agent.arm)]->Decrement();
}

void PrometheusFeedbackObserver::WindowAccepted(const AgentIdentity& agent) {
  windows_[static_cast<int>(agent.arm)]->Increment();
}

void PrometheusFeedbackObserver::WindowDropped(const AgentIdentity&, AddResult result) {
  auto it = dropped_.find(result);
  if (it != dropped_.end()) it->second->Increment();
}

void PrometheusFeedbackObserver::Rejected(RejectReason reason, absl::string_view) {
  auto it = rejected_.find(reason);
  if (it != rejected_.end()) it->second->Increment();
}

}  // namespace booster::feedback
