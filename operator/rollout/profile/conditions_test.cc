// Setting and finding conditions (conditions.h).
#include "operator/rollout/profile/conditions.h"

#include <vector>

#include "gtest/gtest.h"

namespace booster::rollout {
namespace {

TEST(ConditionTest, TransitionTimeMovesOnlyWhenStatusChanges) {
  std::vector<Condition> conds;
  absl::Time t0 = absl::FromUnixSeconds(100);
  SetCondition(conds, "Ready", "False", "Pending", "", 1, t0);
  SetCondition(conds, "Ready", "False", "Enrolling", "m", 2, t0 + absl::Seconds(5));
  ASSERT_EQ(conds.size(), 1u);
  EXPECT_EQ(conds[0].last_transition_time, t0);
  EXPECT_EQ(conds[0].reason, "Enrolling");
  EXPECT_EQ(conds[0].observed_generation, 2);
  SetCondition(conds, "Ready", "True", "Promoted", "", 2, t0 + absl::Seconds(9));
  EXPECT_EQ(conds[0].last_transition_time, t0 + absl::Seconds(9));
  EXPECT_NE(FindCondition(conds, "Ready"), nullptr);
  EXPECT_EQ(FindCondition(conds, "Nope"), nullptr);
}

}  // namespace
}  // namespace booster::rollout
