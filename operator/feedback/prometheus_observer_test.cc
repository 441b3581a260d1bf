#include "operator/feedback/prometheus_observer.h"

#include <string>

#include "gtest/gtest.h"
#include "prometheus/registry.h"

namespace booster::feedback {
namespace {

// The value of the series of `family` whose label `label` is `value`; -1 when absent.
double Value(prometheus::Registry& registry, const std::string& family, const std::string& label,
             const std::string& value) {
  for (const prometheus::MetricFamily& f : registry.Collect()) {
    if (f.name != family) continue;
    for (const prometheus::ClientMetric& m : f.metric) {
      for (const prometheus::ClientMetric::Label& l : m.label) {
        if (l.name == label && l.value == value) {
          return f.type == prometheus::MetricType::Gauge ? m.gauge.value : m.counter.value;
        }
      }
    }
  }
  return -1;
}

TEST(PrometheusFeedbackObserverTest, CountsStreamsWindowsAndRefusals) {
  prometheus::Registry registry;
  PrometheusFeedbackObserver observer(registry);
  // Every series exists at 0 before anything happened.
  EXPECT_EQ(Value(registry, "booster_operator_agent_streams", "arm", "canary"), 0);
  EXPECT_EQ(Value(registry, "booster_operator_agent_windows_total", "arm", "baseline"), 0);
  for (RejectReason r : kRejectReasons) {
    EXPECT_EQ(Value(registry, "booster_operator_agent_rejected_total", "reason",
                    std::string(RejectReasonName(r))),
              0)
        << RejectReasonName(r);
  }
  EXPECT_EQ(
      Value(registry, "booster_operator_agent_windows_dropped_total", "reason", "stale_template"),
      0);

  AgentIdentity canary;
  canary.arm = Arm::kCanary;
  AgentIdentity baseline;
  baseline.arm = Arm::kBaseline;
  observer.StreamOpened(canary);
  observer.StreamOpened(canary);
  observer.StreamOpened(baseline);
  observer.StreamClosed(canary);
  observer.WindowAccepted(canary);
  observer.WindowAccepted(canary);
  observer.WindowAccepted(baseline);
  observer.WindowDropped(canary, AddResult::kDuplicate);
  observer.Rejected(RejectReason::kNotEnrolled, "pod x is not enrolled");
  observer.Rejected(RejectReason::kNotEnrolled, "pod y is not enrolled");
  observer.Rejected(RejectReason::kMissingToken, "");

  EXPECT_EQ(Value(registry, "booster_operator_agent_streams", "arm", "canary"), 1);
  EXPECT_EQ(Value(registry, "booster_operator_agent_streams", "arm", "baseline"), 1);
  EXPECT_EQ(Value(registry, "booster_operator_agent_windows_total", "arm", "canary"), 2);
  EXPECT_EQ(Value(registry, "booster_operator_agent_windows_total", "arm", "baseline"), 1);
  EXPECT_EQ(Value(registry, "booster_operator_agent_windows_dropped_total", "reason", "duplicate"),
            1);
  EXPECT_EQ(Value(registry, "booster_operator_agent_rejected_total", "reason", "not_enrolled"), 2);
  EXPECT_EQ(Value(registry, "booster_operator_agent_rejected_total", "reason", "missing_token"), 1);
  EXPECT_EQ(Value(registry, "booster_operator_agent_rejected_total", "reason", "unauthenticated"),
            0);
}

}  // namespace
}  // namespace booster::feedback
