// The judge's windows (analysis::WindowSource) read from the feedback server's store
// (feedback::WindowStore): the windows the agents of each arm reported for the profile's
// current step since the step's analysis started. A step the store has not opened (yet)
// has no windows; the judge then waits, and calls the step inconclusive once it is over.
//
//   StoreWindowSource source(&window_store);
//   analysis::JudgeVerdictSource verdicts(source);
#ifndef BOOSTER_OPERATOR_CONTROLLER_STORE_WINDOW_SOURCE_H_
#define BOOSTER_OPERATOR_CONTROLLER_STORE_WINDOW_SOURCE_H_

#include "absl/status/statusor.h"
#include "operator/analysis/judge_verdict_source.h"
#include "operator/feedback/window_store.h"

namespace booster::controller {

class StoreWindowSource final : public analysis::WindowSource {
 public:
  // `store` is not owned and must outlive the source.
  explicit StoreWindowSource(const feedback::WindowStore* store) : store_(store) {}
  absl::StatusOr<analysis::ArmWindows> Windows(const analysis::WindowQuery& query) override;

 private:
  const feedback::WindowStore* const store_;
};

// The store's windows of one step as the judge takes them: per arm, per metric, each
// window with its pod, the pod's start (for the warm-up) and the pod's node.
analysis::ArmWindows ToJudgeWindows(const feedback::StepWindows& step);

}  // namespace booster::controller

#endif  // BOOSTER_OPERATOR_CONTROLLER_STORE_WINDOW_SOURCE_H_
