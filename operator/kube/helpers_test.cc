#include "operator/kube/helpers.h"

#include "gtest/gtest.h"

namespace booster::kube {
namespace {

Json Owner(const std::string& uid) {
  return {{"apiVersion", "booster.dev/v1alpha1"},
          {"kind", "BoosterProfile"},
          {"metadata", {{"name", "p"}, {"uid", uid}}}};
}

TEST(OwnerReferenceTest, ControllerReference) {
  Json obj = {{"metadata", {{"name", "d"}}}};
  ASSERT_TRUE(SetControllerReference(Owner("u1"), &obj).ok());
  ASSERT_TRUE(SetControllerReference(Owner("u1"), &obj).ok()) << "idempotent";
  EXPECT_EQ(obj["metadata"]["ownerReferences"].size(), 1u);
  EXPECT_EQ(ControllerUid(obj), "u1");
  EXPECT_TRUE(IsOwnedBy(obj, "u1"));
  EXPECT_EQ(obj["metadata"]["ownerReferences"][0]["blockOwnerDeletion"], true);
  EXPECT_TRUE(absl::IsAlreadyExists(SetControllerReference(Owner("u2"), &obj)));
  ASSERT_TRUE(AddOwnerReference(Owner("u2"), &obj).ok());
  ASSERT_TRUE(AddOwnerReference(Owner("u2"), &obj).ok());
  EXPECT_EQ(obj["metadata"]["ownerReferences"].size(), 2u);
  EXPECT_TRUE(IsOwnedBy(obj, "u2"));
  EXPECT_FALSE(IsOwnedBy(obj, "u3"));
  EXPECT_TRUE(absl::IsInvalidArgument(SetControllerReference(Json::object(), &obj)));
}

TEST(FinalizerTest, AddRemove) {
  Json obj = {{"metadata", {{"name", "p"}}}};
  EXPECT_FALSE(HasFinalizer(obj, "booster.dev/cleanup"));
  EXPECT_TRUE(AddFinalizer(&obj, "booster.dev/cleanup"));
  EXPECT_FALSE(AddFinalizer(&obj, "booster.dev/cleanup"));
  EXPECT_TRUE(AddFinalizer(&obj, "other"));
  EXPECT_TRUE(RemoveFinalizer(&obj, "booster.dev/cleanup"));
  EXPECT_FALSE(RemoveFinalizer(&obj, "booster.dev/cleanup"));
  EXPECT_EQ(obj["metadata"]["finalizers"], Json::array({"other"}));
  EXPECT_FALSE(IsBeingDeleted(obj));
  obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
  EXPECT_TRUE(IsBeingDeleted(obj));
}

TEST(ConditionTest, TransitionTimeMovesOnlyOnStatusChange) {
  Json obj = {{"metadata", {{"name", "p"}, {"generation", 3}}}};
  absl::Time t0 = absl::FromUnixSeconds(1000);
  EXPECT_TRUE(SetCondition(&obj, {"Ready", "False", "Starting", "wait"}, t0));
  EXPECT_FALSE(SetCondition(&obj, {"Ready", "False", "Starting", "wait"}, t0 + absl::Seconds(5)));
  EXPECT_TRUE(SetCondition(&obj, {"Ready", "False", "Analysing", "step 1"}, t0 + absl::Seconds(9)));
  EXPECT_EQ(obj["status"]["conditions"][0]["lastTransitionTime"], Rfc3339(t0));
  EXPECT_TRUE(SetCondition(&obj, {"Ready", "True", "Done", ""}, t0 + absl::Seconds(20)));
  EXPECT_EQ(obj["status"]["conditions"][0]["lastTransitionTime"], Rfc3339(t0 + absl::Seconds(20)));
  EXPECT_EQ(obj["status"]["conditions"][0]["observedGeneration"], 3);
  EXPECT_TRUE(IsConditionTrue(obj, "Ready"));
  EXPECT_FALSE(IsConditionTrue(obj, "Degraded"));
  EXPECT_EQ(FindCondition(obj, "Ready")->reason, "Done");
  EXPECT_EQ(obj["status"]["conditions"].size(), 1u);
}

TEST(GenerationTest, ObservedGeneration) {
  Json obj = {{"metadata", {{"generation", 5}}}};
  EXPECT_EQ(Generation(obj), 5);
  EXPECT_EQ(ObservedGeneration(obj), 0);
  SetObservedGeneration(&obj);
  EXPECT_EQ(ObservedGeneration(obj), 5);
}

TEST(TimeTest, Rfc3339RoundTrip) {
  absl::Time t = absl::FromUnixMicros(1764443791123456);
  EXPECT_EQ(Rfc3339(t), "2025-11-29T19:16:31Z");
  EXPECT_EQ(Rfc3339Micro(t), "2025-11-29T19:16:31.123456Z");
  absl::Time back;
  ASSERT_TRUE(ParseRfc3339(Rfc3339Micro(t), &back));
  EXPECT_EQ(back, t);
  EXPECT_FALSE(ParseRfc3339("yesterday", &back));
}

}  // namespace
}  // namespace booster::kube
