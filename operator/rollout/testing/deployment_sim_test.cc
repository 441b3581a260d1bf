#include "operator/rollout/testing/deployment_sim.h"

#include <string>

#include "gtest/gtest.h"
#include "operator/rollout/profile/names.h"

namespace booster::rollout::testing {
namespace {

Json Template(const std::string& image = "web:1") {
  return {{"metadata", {{"labels", {{"app", "web"}}}}},
          {"spec", {{"containers", Json::array({{{"name", "web"}, {"image", image}}})}}}};
}

Action TargetPatch(Json body) {
  Action a;
  a.type = ActionType::kScaleTarget;
  a.name = "web";
  a.body = std::move(body);
  return a;
}

Action CreateCanary(const std::string& owner_uid) {
  Action a;
  a.type = ActionType::kCreateCanary;
  a.name = "web-booster";
  a.body = DeploymentObject("web-booster", "shop", "", 1, Template("web:2"));
  a.body["metadata"].erase("uid");
  a.body["metadata"]["ownerReferences"] =
      Json::array({{{"kind", kKind}, {"name", "p"}, {"uid", owner_uid}, {"controller", true}}});
  return a;
}

std::string Rv(const Json& d) { return d["metadata"]["resourceVersion"].get<std::string>(); }
int64_t Generation(const Json& d) { return d["metadata"]["generation"].get<int64_t>(); }

TEST(DeploymentSimTest, SettleReportsEveryPodOfTheSpecUpAtItsGeneration) {
  DeploymentSim sim(DeploymentObject("web", "shop", "target-uid", 4, Template()));
  const Json& t = sim.target();
  EXPECT_EQ(t["spec"]["selector"]["matchLabels"], Json({{"app", "web"}}));
  EXPECT_EQ(t["status"], Json({{"observedGeneration", 1},
                               {"replicas", 4},
                               {"updatedReplicas", 4},
                               {"readyReplicas", 4},
                               {"availableReplicas", 4}}));
  Unsettle(sim.target());
  EXPECT_EQ(t["status"]["availableReplicas"], 0);
  EXPECT_EQ(t["status"]["readyReplicas"], 0);
  EXPECT_EQ(t["status"]["replicas"], 4);
  // A status write is a watch event only when something in it changed.
  EXPECT_TRUE(SetDeploymentStatus(sim.target(), 4, 2));
  EXPECT_FALSE(SetDeploymentStatus(sim.target(), 4, 2));
  EXPECT_EQ(t["status"]["readyReplicas"], 2);
  EXPECT_EQ(SpecReplicas(t), 4);
  EXPECT_EQ(SpecReplicas(nullptr), 0);
}

TEST(DeploymentSimTest, ASpecChangeBumpsTheGenerationAndEveryWriteTheResourceVersion) {
  DeploymentSim sim(DeploymentObject("web", "shop", "target-uid", 4, Template()));
  Json profile = ProfileObject("p", "shop", "p-uid", Json::object());
  std::string rv = Rv(sim.target());
  ASSERT_TRUE(
      sim.Execute(
             TargetPatch(Json::array(
                 {{{"op", "add"}, {"path", "/metadata/annotations"}, {"value", {{"k", "v"}}}}})),
             profile)
          .ok());
  EXPECT_EQ(Generation(sim.target()), 1);
  EXPECT_NE(Rv(sim.target()), rv);
  rv = Rv(sim.target());
  ASSERT_TRUE(sim.Execute(TargetPatch(Json::array(
                              {{{"op", "replace"}, {"path", "/spec/replicas"}, {"value", 3}}})),
                          profile)
                  .ok());
  EXPECT_EQ(Generation(sim.target()), 2);
  EXPECT_NE(Rv(sim.target()), rv);
  // The status follows the new generation only once settled.
  EXPECT_EQ(sim.target()["status"]["observedGeneration"], 1);
  sim.SettleAll();
  EXPECT_EQ(sim.target()["status"]["observedGeneration"], 2);
  EXPECT_EQ(sim.target()["status"]["availableReplicas"], 3);
}

TEST(DeploymentSimTest, APatchWhoseTestFailsIsRefusedAndChangesNothing) {
  DeploymentSim sim(DeploymentObject("web", "shop", "target-uid", 4, Template()));
  Json profile = ProfileObject("p", "shop", "p-uid", Json::object());
  const Json before = sim.target();
  absl::Status stale = sim.Execute(
      TargetPatch(Json::array({{{"op", "test"}, {"path", "/spec/replicas"}, {"value", 5}},
                               {{"op", "replace"}, {"path", "/spec/replicas"}, {"value", 1}}})),
      profile);
  EXPECT_EQ(stale.code(), absl::StatusCode::kAborted) << stale;
  absl::Status bad = sim.Execute(
      TargetPatch(Json::array({{{"op", "replace"}, {"path", "/spec/nothing/here"}, {"value", 1}}})),
      profile);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument) << bad;
  EXPECT_EQ(sim.Execute(TargetPatch(Json::object()), profile).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(sim.target(), before);

  // The profile's claim is a patch with a test too.
  Action claim;
  claim.type = ActionType::kClaimProfile;
  claim.body = Json::array({{{"op", "test"}, {"path", "/metadata/uid"}, {"value", "other"}},
                            {{"op", "add"}, {"path", "/metadata/labels"}, {"value", {}}}});
  const Json profile_before = profile;
  EXPECT_EQ(sim.Execute(claim, profile).code(), absl::StatusCode::kAborted);
  EXPECT_EQ(profile, profile_before);
  claim.body[0]["value"] = "p-uid";
  EXPECT_TRUE(sim.Execute(claim, profile).ok());
  EXPECT_TRUE(profile["metadata"].contains("labels"));

  DeploymentSim none(nullptr);
  EXPECT_EQ(none.Execute(TargetPatch(Json::array()), profile).code(), absl::StatusCode::kNotFound);
}

TEST(DeploymentSimTest, TheCanaryIsCreatedOnceAndDeletedOnlyUnderItsUid) {
  int created = 0;
  DeploymentSim sim(DeploymentObject("web", "shop", "target-uid", 4, Template()),
                    {.canary_uid = [&] { return "canary-" + std::to_string(++created); }});
  Json profile = ProfileObject("p", "shop", "p-uid", Json::object());
  ASSERT_TRUE(sim.Execute(CreateCanary("p-uid"), profile).ok());
  const Json& c = sim.canary();
  EXPECT_EQ(c["metadata"]["uid"], "canary-1");
  EXPECT_EQ(Generation(c), 1);
  EXPECT_EQ(c["status"], Json::object());  // the Deployment controller has not seen it yet
  EXPECT_EQ(ProfileOwnerUid(c), "p-uid");
  EXPECT_EQ(ProfileOwnerUid(sim.target()), "");

  // The name is taken: 409, and the existing canary stays as it is.
  const Json first = sim.canary();
  EXPECT_EQ(sim.Execute(CreateCanary("q-uid"), profile).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(sim.canary(), first);
  EXPECT_EQ(created, 1);

  Action patch;
  patch.type = ActionType::kPatchCanary;
  patch.body = Json::array({{{"op", "test"}, {"path", "/metadata/uid"}, {"value", "canary-1"}},
                            {{"op", "replace"}, {"path", "/spec/replicas"}, {"value", 2}}});
  ASSERT_TRUE(sim.Execute(patch, profile).ok());
  EXPECT_EQ(Generation(sim.canary()), 2);
  EXPECT_EQ(SpecReplicas(sim.canary()), 2);

  Action del;
  del.type = ActionType::kDeleteCanary;
  del.uid = "canary-0";
  EXPECT_EQ(sim.Execute(del, profile).code(), absl::StatusCode::kAborted);
  EXPECT_FALSE(sim.canary().is_null());
  del.uid = "canary-1";
  EXPECT_TRUE(sim.Execute(del, profile).ok());
  EXPECT_TRUE(sim.canary().is_null());
  EXPECT_EQ(sim.Execute(del, profile).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(sim.Execute(patch, profile).code(), absl::StatusCode::kNotFound);
  // Created again, under a new uid.
  ASSERT_TRUE(sim.Execute(CreateCanary("p-uid"), profile).ok());
  EXPECT_EQ(sim.canary()["metadata"]["uid"], "canary-2");
}

TEST(DeploymentSimTest, ProfileActionsTouchOnlyTheProfile) {
  DeploymentSim sim(DeploymentObject("web", "shop", "target-uid", 4, Template()));
  Json profile = ProfileObject("p", "shop", "p-uid", Json::object());
  EXPECT_EQ(profile["metadata"]["finalizers"], Json::array({kFinalizer}));
  profile["metadata"].erase("finalizers");
  const Json target = sim.target();
  Action add;
  add.type = ActionType::kAddFinalizer;
  ASSERT_TRUE(sim.Execute(add, profile).ok());
  EXPECT_EQ(profile["metadata"]["finalizers"], Json::array({kFinalizer}));
  // Removing the finalizer, events and requeues are the caller's to record.
  const Json with_finalizer = profile;
  for (ActionType t :
       {ActionType::kRemoveFinalizer, ActionType::kRecordEvent, ActionType::kRequeueAfter}) {
    Action a;
    a.type = t;
    EXPECT_TRUE(sim.Execute(a, profile).ok());
  }
  EXPECT_EQ(profile, with_finalizer);
  EXPECT_EQ(sim.target(), target);
  EXPECT_TRUE(sim.canary().is_null());
}

}  // namespace
}  // namespace booster::rollout::testing
