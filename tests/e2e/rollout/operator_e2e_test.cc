// booster-operator on the real cluster (issue 6, section 5): a host process with the admin
// kubeconfig and leader election drives BoosterProfiles over Deployments of real pods.
// Each test has its own namespace, its own operator (watching only that namespace) and a
// Deployment `web` of N=3 HTTP pods, and samples the Deployments' replicas all along:
//
//   - 10% -> 50% -> 100% -> Promoted: the target's template carries the tuning (the sysctl
//     is seen in a promoted pod's network namespace), N replicas, the canary gone;
//   - abort mid-way: N replicas and exactly the pre-profile template (same ReplicaSet
//     pod-template-hash);
//   - SIGKILL mid-step: a new operator process resumes (steps never go back) and promotes;
//   - invalid profiles: rejected by the API server, or InvalidSpec + an Event, and the
//     Deployment untouched; a missing target gets TargetFound=False;
//   - deleting the profile mid-rollout: the Deployment as it was before the profile;
//   - ownership (issue 10): a second profile on the same Deployment waits, naming the
//     holder, touches nothing, and starts by itself once the holder is deleted; a user's
//     Deployment under the canary's name fails the profile before the target loses a
//     replica and survives the profile's deletion untouched;
//   - in every scenario target + canary replicas never exceed N.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "operator/rollout/state_machine.h"
#include "tests/e2e/e2e_util.h"
#include "tests/e2e/rollout/operator_fixture.h"
#include "tests/e2e/rollout/rollout_e2e_util.h"

namespace booster::e2e {
namespace {

using ::testing::HasSubstr;

TEST_F(OperatorE2eTest, ProfileGoesTenFiftyHundredToPromotedWithTheTuningInTheTarget) {
  DeployWeb();
  StartOperator();
  RolloutSampler sampler(ns());
  ASSERT_TRUE(Apply(Profile(ns(), "[10, 50, 100]", "5s")).ok());
  absl::Status s = WaitPhase("Promoted", absl::Minutes(6));
  sampler.Stop();
  ASSERT_TRUE(s.ok()) << s << "\nseen: " << sampler.History();

  std::printf("seen: %s\n", sampler.History().c_str());
  EXPECT_LE(sampler.MaxTotal(), kReplicas) << sampler.History();
  // N=3: 10% -> 1 canary pod, 50% -> 2, 100% -> 3; each step was held and seen.
  EXPECT_THAT(sampler.Weights(), ::testing::IsSupersetOf({10, 50, 100})) << sampler.History();
  std::vector<int> w = sampler.Weights();
  EXPECT_TRUE(std::is_sorted(w.begin(), w.end())) << sampler.History();

  s = WaitCanaryGone();
  EXPECT_TRUE(s.ok()) << s;
  s = WaitRolledOut(ns(), "web", absl::Minutes(3));
  ASSERT_TRUE(s.ok()) << s;
  absl::StatusOr<Json> d = GetJson({"-n", ns(), "get", "deployment", "web"});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->value("/spec/replicas"_json_pointer, -1), kReplicas);
  EXPECT_EQ(d->value("/status/readyReplicas"_json_pointer, -1), kReplicas);
  const Json& tmpl = (*d)["spec"]["template"];
  EXPECT_EQ(tmpl.value("/metadata/labels/booster.dev~1arm"_json_pointer, ""), "promoted");
  EXPECT_THAT(tmpl.value("/spec/securityContext/sysctls"_json_pointer, Json::array()).dump(),
              HasSubstr(R"({"name":"net.core.somaxconn","value":"3001"})"));
  std::string web_env;
  for (const Json& c : tmpl["spec"]["containers"]) {
    if (c.value("name", "") == "web") web_env = c.value("env", Json::array()).dump();
  }
  EXPECT_THAT(web_env, HasSubstr(R"({"name":"BOOSTER_LISTEN_BACKLOG","value":"3000"})"));
  EXPECT_THAT(web_env, HasSubstr(R"({"name":"GOMAXPROCS","value":"1"})"));

  // A promoted pod really runs with the sysctl in its own network namespace.
  absl::StatusOr<std::string> pod = Kubectl(
      {"-n", ns(), "get", "pods", "-l", "app=web,booster.dev/arm=promoted", "--field-selector",
       "status.phase=Running", "-o", "jsonpath={.items[0].metadata.name}"});
  ASSERT_TRUE(pod.ok()) << pod.status();
  absl::StatusOr<pid_t> pid = ContainerPid(ns(), Trim(*pod), "web");
  ASSERT_TRUE(pid.ok()) << pid.status();
  absl::StatusOr<std::string> somaxconn = RunCommand(
      {"nsenter", "-t", absl::StrCat(*pid), "-n", "cat", "/proc/sys/net/core/somaxconn"});
  EXPECT_EQ(Trim(somaxconn.value_or("")), "3001");

  absl::StatusOr<double> promoted =
      op_->Metric(absl::StrCat("booster_operator_profile_phase{namespace=\"", ns(),
                               "\",phase=\"Promoted\",profile=\"web\"}"));
  if (!promoted.ok()) {  // label order is the library's; accept any order
    absl::StatusOr<std::string> text = op_->Metrics();
    ASSERT_TRUE(text.ok()) << text.status();
    EXPECT_THAT(*text, HasSubstr("booster_operator_profile_phase{")) << *text;
    EXPECT_THAT(*text, HasSubstr("phase=\"Promoted\"")) << *text;
  } else {
    EXPECT_EQ(*promoted, 1);
  }
  absl::StatusOr<double> leader = op_->Metric("booster_operator_leader");
  EXPECT_TRUE(leader.ok() && *leader == 1) << leader.status();
}

TEST_F(OperatorE2eTest, AbortMidwayRestoresTheReplicaCountAndTheTemplate) {
  RolloutSampler sampler(ns());
  // A long step: the rollout holds at 50% (2 canary + 1 target) until the abort.
  const Snapshot before = DeployAndHoldAtFifty(sampler);
  if (HasFailure()) return;
  ASSERT_TRUE(
      Kubectl({"-n", ns(), "annotate", "boosterprofile", "web", "booster.dev/abort=e2e-1"}).ok());
  absl::Status s = WaitPhase("RolledBack", absl::Minutes(4));
  ASSERT_TRUE(s.ok()) << s << "\nseen: " << sampler.History();
  ExpectRestored(before);
  sampler.Stop();
  std::printf("seen: %s\n", sampler.History().c_str());
  EXPECT_LE(sampler.MaxTotal(), kReplicas) << sampler.History();
  absl::StatusOr<Json> bp = ProfileObject();
  ASSERT_TRUE(bp.ok());
  EXPECT_EQ(bp->value("/status/handled/abort"_json_pointer, ""), "e2e-1");
}

// kernel.shmmax passes the operator's validation (a namespaced sysctl), but this node's
// kubelet allows only the safe sysctls and net.*: it refuses every canary pod with
// SysctlForbidden. The rollout rolls back at once, long before the 5m progress deadline,
// with the TuningRejected condition and a Warning naming the pod and the fix.
TEST_F(OperatorE2eTest, ASysctlTheKubeletRefusesRollsBackAtOnceWithACondition) {
  RolloutSampler sampler(ns());
  DeployWeb();
  absl::StatusOr<Snapshot> before = TakeSnapshot(ns());
  ASSERT_TRUE(before.ok()) << before.status();
  StartOperator();
  std::string profile = Profile(ns(), "[50, 100]", "10m");
  profile = absl::StrReplaceAll(profile, {{"sysctls: {net.core.somaxconn: \"3001\"}",
                                           "sysctls: {kernel.shmmax: \"4294967296\"}"},
                                          {"listenBacklog: 3000, ", ""}});
  ASSERT_THAT(profile, HasSubstr("kernel.shmmax"));
  const absl::Time applied = absl::Now();
  ASSERT_TRUE(Apply(profile).ok());
  absl::Status s = WaitPhase("RolledBack", absl::Minutes(3));
  ASSERT_TRUE(s.ok()) << s << "\nseen: " << sampler.History();
  const absl::Duration took = absl::Now() - applied;
  std::printf("applied to RolledBack: %s\n", absl::FormatDuration(took).c_str());
  EXPECT_LT(took, absl::Minutes(2)) << "the rollback waited for the progress deadline";
  const Json cond = Condition("web", rollout::kConditionTuningRejected);
  EXPECT_EQ(cond.value("status", ""), "True") << cond.dump();
  EXPECT_EQ(cond.value("reason", ""), "SysctlForbidden") << cond.dump();
  EXPECT_THAT(cond.value("message", ""), HasSubstr("kernel.shmmax"));
  absl::StatusOr<std::string> warning = WaitWarning("web", "SysctlForbidden");
  ASSERT_TRUE(warning.ok()) << warning.status();
  EXPECT_THAT(*warning, HasSubstr("--allowed-unsafe-sysctls"));
  ExpectRestored(*before);
  ExpectNeverAboveN(sampler);
}

TEST_F(OperatorE2eTest, OperatorKilledMidStepResumesAndPromotes) {
  DeployWeb();
  StartOperator();
  RolloutSampler sampler(ns());
  ASSERT_TRUE(Apply(Profile(ns(), "[10, 50, 100]", "8s")).ok());
  absl::Status s = WaitCanaryReadyAt(50, absl::Minutes(4));
  ASSERT_TRUE(s.ok()) << s << "\nseen: " << sampler.History();
  ASSERT_TRUE(op_->Kill().ok());
  absl::StatusOr<Json> at_kill = ProfileObject();
  ASSERT_TRUE(at_kill.ok());
  const int step_at_kill = at_kill->value("/status/currentStep"_json_pointer, 0);
  // A new process, a new identity: it takes the Lease once the dead one's expires.
  StartOperator();
  s = WaitPhase("Promoted", absl::Minutes(6));
  sampler.Stop();
  ASSERT_TRUE(s.ok()) << s << "\nseen: " << sampler.History();
  std::printf("seen: %s\n", sampler.History().c_str());
  EXPECT_LE(sampler.MaxTotal(), kReplicas) << sampler.History();
  // Resumed, not restarted: the step never went back below the one at the kill.
  bool after_kill = false;
  int last_step = 0;
  for (const RolloutSampler::Sample& x : sampler.samples()) {
    if (x.phase != "Progressing") continue;
    EXPECT_GE(x.step, last_step) << sampler.History();
    last_step = std::max(last_step, x.step);
    after_kill |= x.step >= step_at_kill;
  }
  EXPECT_TRUE(after_kill);
  s = WaitCanaryGone();
  EXPECT_TRUE(s.ok()) << s;
  absl::StatusOr<Json> d = GetJson({"-n", ns(), "get", "deployment", "web"});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->value("/spec/replicas"_json_pointer, -1), kReplicas);
  EXPECT_THAT(op_->Logs(), HasSubstr("=== SIGKILL"));
}

TEST_F(OperatorE2eTest, InvalidProfilesAreRejectedOrMarkedInvalidSpecWithAnEvent) {
  DeployWeb();
  absl::StatusOr<Snapshot> before = TakeSnapshot(ns());
  ASSERT_TRUE(before.ok()) << before.status();
  StartOperator();

  // Rejected by the API server's schema.
  absl::Status s = Apply(absl::StrCat(R"(
apiVersion: booster.dev/v1alpha1
kind: BoosterProfile
metadata: {name: no-target, namespace: )",
                                      ns(), R"(}
spec:
  tuning: {sysctls: {net.core.somaxconn: "4096"}}
)"));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("spec.targetRef: Required value"));
  s = Apply(absl::StrCat(R"(
apiVersion: booster.dev/v1alpha1
kind: BoosterProfile
metadata: {name: bad-steps, namespace: )",
                         ns(), R"(}
spec:
  targetRef: {kind: Deployment, name: web}
  rollout: {steps: [10, 50]}
)"));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("100"));

  // Accepted by the schema, refused by the operator: a sysctl Booster does not set.
  ASSERT_TRUE(Apply(absl::StrCat(R"(
apiVersion: booster.dev/v1alpha1
kind: BoosterProfile
metadata: {name: web, namespace: )",
                                 ns(), R"(}
spec:
  targetRef: {kind: Deployment, name: web}
  tuning: {sysctls: {net.core.rmem_max: "16777216"}}
  rollout: {steps: [50, 100], stepDuration: 5s, analysis: {interval: 1s}}
)"))
                  .ok());
  s = WaitFor(
      [&]() -> absl::StatusOr<bool> {
        absl::StatusOr<Json> bp = ProfileObject();
        if (!bp.ok()) return absl::UnavailableError(bp.status().message());
        for (const Json& c : bp->value("/status/conditions"_json_pointer, Json::array())) {
          if (c.value("type", "") == "InvalidSpec" && c.value("status", "") == "True") {
            EXPECT_THAT(c.value("message", ""), HasSubstr("net.core.rmem_max"));
            return true;
          }
        }
        return absl::UnavailableError(bp->value("status", Json::object()).dump());
      },
      absl::Minutes(1));
  ASSERT_TRUE(s.ok()) << s;
  s = WaitFor(
      [&]() -> absl::StatusOr<bool> {
        absl::StatusOr<Json> events =
            GetJson({"-n", ns(), "get", "events", "--field-selector",
                     "involvedObject.kind=BoosterProfile,involvedObject.name=web"});
        if (!events.ok()) return absl::UnavailableError(events.status().message());
        for (const Json& e : (*events)["items"]) {
          if (absl::StrContains(e.value("message", ""), "net.core.rmem_max")) return true;
        }
        return absl::UnavailableError(absl::StrCat("no Event yet: ", events->dump()));
      },
      absl::Minutes(1));
  EXPECT_TRUE(s.ok()) << s;
  // Nothing was rolled out.
  absl::StatusOr<Snapshot> after = TakeSnapshot(ns());
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->tmpl, before->tmpl);
  EXPECT_EQ(after->replicas, kReplicas);
  absl::StatusOr<std::string> canary =
      Kubectl({"-n", ns(), "get", "deployment", kCanary, "--ignore-not-found", "-o", "name"});
  EXPECT_EQ(Trim(canary.value_or("?")), "");

  // A target that does not exist: TargetFound=False, and no rollout.
  ASSERT_TRUE(Apply(absl::StrCat(R"(
apiVersion: booster.dev/v1alpha1
kind: BoosterProfile
metadata: {name: ghost, namespace: )",
                                 ns(), R"(}
spec:
  targetRef: {kind: Deployment, name: ghost}
  rollout: {steps: [50, 100], stepDuration: 5s, analysis: {interval: 1s}}
)"))
                  .ok());
  s = WaitFor(
      [&]() -> absl::StatusOr<bool> {
        absl::StatusOr<Json> bp = ProfileObject("ghost");
        if (!bp.ok()) return absl::UnavailableError(bp.status().message());
        for (const Json& c : bp->value("/status/conditions"_json_pointer, Json::array())) {
          if (c.value("type", "") == "TargetFound" && c.value("status", "") == "False") {
            return true;
          }
        }
        return absl::UnavailableError(bp->value("status", Json::object()).dump());
      },
      absl::Minutes(1));
  EXPECT_TRUE(s.ok()) << s;
}

TEST_F(OperatorE2eTest, DeletingTheProfileMidRolloutLeavesTheDeploymentAsBefore) {
  RolloutSampler sampler(ns());
  const Snapshot before = DeployAndHoldAtFifty(sampler);
  if (HasFailure()) return;
  DeleteAndExpectRestored("web", before);
  ExpectNeverAboveN(sampler);
}

// Issue 10, story 1: two profiles naming one Deployment. The second waits, says who holds
// it, writes nothing (the canary is not fought over), and starts by itself once the
// holder is deleted; deleting each profile leaves the Deployment as it was.
TEST_F(OperatorE2eTest, ASecondProfileOnTheSameDeploymentWaitsAndStartsWhenTheHolderIsDeleted) {
  RolloutSampler sampler(ns());
  const Snapshot before = DeployAndHoldAtFifty(sampler);
  if (HasFailure()) return;

  ASSERT_TRUE(Apply(Profile(ns(), "[50, 100]", "10m", "3002", "web-2")).ok());
  absl::Status s = WaitTransitionReason("web-2", "TargetHeld");
  ASSERT_TRUE(s.ok()) << s;
  absl::StatusOr<std::string> warning = WaitWarning("web-2", "TargetHeld");
  ASSERT_TRUE(warning.ok()) << warning.status();
  EXPECT_THAT(*warning, HasSubstr("held by BoosterProfile web "));
  Json conflict = Condition("web-2", "Conflict");
  EXPECT_EQ(conflict.value("status", ""), "True") << conflict.dump();
  EXPECT_EQ(conflict.value("reason", ""), "TargetHeld");
  absl::StatusOr<Json> web2 = ProfileObject("web-2");
  ASSERT_TRUE(web2.ok());
  EXPECT_EQ(web2->value("/status/phase"_json_pointer, ""), "Pending");

  // Nobody fights over the canary or the target: their generations stay put while both
  // profiles are reconciled (the holder's 10-minute step keeps it still).
  absl::StatusOr<Json> canary = DeploymentNamed(kCanary);
  absl::StatusOr<Json> target = DeploymentNamed("web");
  ASSERT_TRUE(canary.ok() && target.ok());
  const int64_t canary_gen = canary->value("/metadata/generation"_json_pointer, int64_t{0});
  const int64_t target_gen = target->value("/metadata/generation"_json_pointer, int64_t{0});
  ASSERT_TRUE(
      Kubectl({"-n", ns(), "annotate", "boosterprofile", "web-2", "nudge=1", "--overwrite"}).ok());
  absl::SleepFor(absl::Seconds(10));  // an observation window, not a synchronisation
  canary = DeploymentNamed(kCanary);
  target = DeploymentNamed("web");
  ASSERT_TRUE(canary.ok() && target.ok());
  EXPECT_EQ(canary->value("/metadata/generation"_json_pointer, int64_t{0}), canary_gen);
  EXPECT_EQ(target->value("/metadata/generation"_json_pointer, int64_t{0}), target_gen);

  // Deleting the waiting profile changes nothing of the holder's rollout.
  absl::StatusOr<std::string> del =
      Kubectl({"-n", ns(), "delete", "boosterprofile", "web-2", "--wait=true", "--timeout=60s"});
  ASSERT_TRUE(del.ok()) << del.status();
  canary = DeploymentNamed(kCanary);
  target = DeploymentNamed("web");
  ASSERT_TRUE(canary.ok() && target.ok()) << "the holder's canary is gone";
  EXPECT_EQ(canary->value("/metadata/generation"_json_pointer, int64_t{0}), canary_gen);
  EXPECT_EQ(target->value("/metadata/generation"_json_pointer, int64_t{0}), target_gen);
  absl::StatusOr<Json> web = ProfileObject("web");
  ASSERT_TRUE(web.ok());
  EXPECT_EQ(web->value("/status/phase"_json_pointer, ""), "Progressing");

  // A new second profile waits again; deleting the holder hands the Deployment over.
  ASSERT_TRUE(Apply(Profile(ns(), "[50, 100]", "10m", "3002", "web-2")).ok());
  s = WaitTransitionReason("web-2", "TargetHeld");
  ASSERT_TRUE(s.ok()) << s;
  del = Kubectl({"-n", ns(), "delete", "boosterprofile", "web", "--wait=true", "--timeout=120s"});
  ASSERT_TRUE(del.ok()) << del.status();
  s = WaitCanaryReadyAt(50, absl::Minutes(5), "web-2");
  ASSERT_TRUE(s.ok()) << s << "\n" << Diagnose(ns());
  target = DeploymentNamed("web");
  ASSERT_TRUE(target.ok());
  EXPECT_EQ(target->value("/metadata/annotations/booster.dev~1holder"_json_pointer, ""), "web-2");
  canary = DeploymentNamed(kCanary);
  ASSERT_TRUE(canary.ok());
  EXPECT_EQ(canary->value("/metadata/ownerReferences/0/name"_json_pointer, ""), "web-2");

  DeleteAndExpectRestored("web-2", before);
  ExpectNeverAboveN(sampler);
}

// Issue 10, story 2: a Deployment the user created under the canary's name. The profile
// fails before the target loses a replica, says how to fix it, and deleting the profile
// leaves the user's Deployment; once the name is free, a profile starts by itself.
TEST_F(OperatorE2eTest, AUsersDeploymentUnderTheCanarysNameIsNeverTouched) {
  DeployWeb();
  absl::Status s =
      ApplyJson(DeploymentObject(ns(), kCanary, 1, HttpServerTemplate(kCanary)));
  ASSERT_TRUE(s.ok()) << s;
  s = WaitRolledOut(ns(), kCanary, absl::Minutes(3));
  ASSERT_TRUE(s.ok()) << s << Diagnose(ns());
  absl::StatusOr<Snapshot> before = TakeSnapshot(ns());
  ASSERT_TRUE(before.ok()) << before.status();
  absl::StatusOr<Json> users = DeploymentNamed(kCanary);
  ASSERT_TRUE(users.ok());
  absl::StatusOr<Json> target = DeploymentNamed("web");
  ASSERT_TRUE(target.ok());
  StartOperator();
  ASSERT_TRUE(Apply(Profile(ns(), "[50, 100]", "10m")).ok());
  s = WaitTransitionReason("web", "CanaryNameTaken");
  ASSERT_TRUE(s.ok()) << s;
  absl::StatusOr<Json> bp = ProfileObject();
  ASSERT_TRUE(bp.ok());
  EXPECT_EQ(bp->value("/status/phase"_json_pointer, ""), "Failed");
  Json conflict = Condition("web", "Conflict");
  EXPECT_EQ(conflict.value("status", ""), "True") << conflict.dump();
  EXPECT_THAT(conflict.value("message", ""), HasSubstr("Deployment web-booster"));
  EXPECT_THAT(conflict.value("message", ""), HasSubstr("Rename or delete"));
  absl::StatusOr<std::string> warning = WaitWarning("web", "CanaryNameTaken");
  ASSERT_TRUE(warning.ok()) << warning.status();
  EXPECT_THAT(*warning, HasSubstr("web-booster"));

  auto unchanged = [&](const char* when) {
    absl::StatusOr<Json> u = DeploymentNamed(kCanary);
    ASSERT_TRUE(u.ok()) << when << ": the user's Deployment is gone";
    EXPECT_EQ(u->value("/metadata/uid"_json_pointer, ""), users->value("/metadata/uid"_json_pointer, ""));
    EXPECT_EQ(u->value("/metadata/generation"_json_pointer, int64_t{0}),
              users->value("/metadata/generation"_json_pointer, int64_t{0}))
        << when;
    EXPECT_EQ((*u)["spec"]["template"], (*users)["spec"]["template"]) << when;
    absl::StatusOr<Json> t = DeploymentNamed("web");
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->value("/metadata/generation"_json_pointer, int64_t{0}),
              target->value("/metadata/generation"_json_pointer, int64_t{0}))
        << when << ": the target was written";
    EXPECT_EQ(t->value("/spec/replicas"_json_pointer, 0), kReplicas) << when;
  };
  unchanged("after the conflict");

  absl::StatusOr<std::string> del =
      Kubectl({"-n", ns(), "delete", "boosterprofile", "web", "--wait=true", "--timeout=60s"});
  ASSERT_TRUE(del.ok()) << del.status();
  unchanged("after the profile's deletion");

  // Once the name is free, the profile starts by itself.
  ASSERT_TRUE(Apply(Profile(ns(), "[50, 100]", "10m")).ok());
  s = WaitTransitionReason("web", "CanaryNameTaken");
  ASSERT_TRUE(s.ok()) << s;
  del = Kubectl({"-n", ns(), "delete", "deployment", kCanary, "--wait=true", "--timeout=60s"});
  ASSERT_TRUE(del.ok()) << del.status();
  s = WaitCanaryReadyAt(50, absl::Minutes(5));
  ASSERT_TRUE(s.ok()) << s << "\n" << Diagnose(ns());
  DeleteAndExpectRestored("web", *before);
}

}  // namespace
}  // namespace booster::e2e
