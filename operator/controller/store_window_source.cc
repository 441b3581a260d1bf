#include "operator/controller/store_window_source.h"

#include <optional>
#include <string>
#include <vector>

namespace booster::controller {

analysis::ArmWindows ToJudgeWindows(const feedback::StepWindows& step) {
  analysis::ArmWindows out;
  for (feedback::Arm arm : feedback::kArms) {
    analysis::MetricWindows& to = arm == feedback::Arm::kCanary ? out.canary : out.baseline;
    for (const auto& [metric, points] : step.arm(arm).metrics) {
      std::vector<analysis::Window>& ws = to[metric];
      ws.reserve(points.size());
      for (const feedback::MetricPoint& p : points) {
        ws.push_back(analysis::Window{.start = p.start,
                                      .end = p.end,
                                      .value = p.value,
                                      .pod = p.pod,
                                      .pod_start = p.pod_created,
                                      .requests = p.samples,
                                      .node = p.node,
                                      .buckets = p.latency_buckets});
      }
    }
  }
  return out;
}

absl::StatusOr<analysis::ArmWindows> StoreWindowSource::Windows(
    const analysis::WindowQuery& query) {
  const std::string profile = query.profile_namespace + "/" + query.profile_name;
  std::optional<feedback::StepId> current = store_->CurrentStep(profile);
  if (!current || current->step != query.step) return analysis::ArmWindows{};
  absl::StatusOr<feedback::StepWindows> step =
      store_->Query(profile, *current, feedback::QueryOptions{.not_before = query.since});
  if (!step.ok()) return analysis::ArmWindows{};  // forgotten between the two calls
  return ToJudgeWindows(*step);
}

}  // namespace booster::controller
