// Conditions on .status, after metav1.Condition: one per type, and lastTransitionTime moves
// only when the status changes, so `kubectl get` shows how long a condition has held.
// Includes only types.h and Abseil.
//
//   SetCondition(status.conditions, "Ready", "False", "Progressing", "step 2", gen, now);
//   if (const Condition* c = FindCondition(status.conditions, "Ready")) Use(c->reason);
#ifndef BOOSTER_OPERATOR_ROLLOUT_PROFILE_CONDITIONS_H_
#define BOOSTER_OPERATOR_ROLLOUT_PROFILE_CONDITIONS_H_

#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "operator/rollout/profile/types.h"

namespace booster::rollout {

// Sets the condition of `type` (adding it when absent); lastTransitionTime becomes `now`
// only when the condition is new or its status changes.
void SetCondition(std::vector<Condition>& conditions, absl::string_view type,
                  absl::string_view status, absl::string_view reason, absl::string_view message,
                  int64_t generation, absl::Time now);
// The condition of `type`, or nullptr.
const Condition* FindCondition(const std::vector<Condition>& conditions, absl::string_view type);

}  // namespace booster::rollout

#endif  // BOOSTER_OPERATOR_ROLLOUT_PROFILE_CONDITIONS_H_
