// Setting and finding status conditions (conditions.h).
#include "operator/rollout/profile/conditions.h"

#include <string>

namespace booster::rollout {

void SetCondition(std::vector<Condition>& conditions, absl::string_view type,
                  absl::string_view status, absl::string_view reason, absl::string_view message,
                  int64_t generation, absl::Time now) {
  for (Condition& c : conditions) {
    if (c.type != type) continue;
    if (c.status != status) c.last_transition_time = now;
    c.status = std::string(status);
    c.reason = std::string(reason);
    c.message = std::string(message);
    c.observed_generation = generation;
    return;
  }
  conditions.push_back(Condition{std::string(type), std::string(status), std::string(reason),
                                 std::string(message), generation, now});
}

const Condition* FindCondition(const std::vector<Condition>& conditions, absl::string_view type) {
  for (const Condition& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

}  // namespace booster::rollout
