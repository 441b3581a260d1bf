#include "operator/rollout/state_machine.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "operator/rollout/profile/conditions.h"
#include "operator/rollout/profile/names.h"
#include "operator/rollout/profile/spec.h"
#include "operator/rollout/profile/status_codec.h"
#include "operator/rollout/testing/deployment_sim.h"

namespace booster::rollout {
namespace {

using ::testing::HasSubstr;

Json OriginalTemplate() {
  return Json::parse(R"json({
    "metadata": {"labels": {"app": "web"}},
    "spec": {"containers": [{"name": "web", "image": "web:1",
                             "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}}],
             "dnsPolicy": "ClusterFirst"}})json");
}

Json SpecJson() {
  return Json::parse(R"json({
    "targetRef": {"kind": "Deployment", "name": "web"},
    "tuning": {"sysctls": {"net.core.somaxconn": "4096"},
               "runtime": {"go": {"gomaxprocs": "auto"},
                           "preload": {"listenBacklog": 4096, "tcpNoDelay": true}}},
    "rollout": {"steps": [10, 50, 100], "stepDuration": "1m", "progressDeadline": "5m",
                "analysis": {"mode": "Time"}}})json");
}

// One profile over the simulated API server and Deployment controller
// (testing/deployment_sim.h), with what the informers and the window store would tell the
// state machine about it. Every write is checked for what a single profile must never see
// refused: only a patch whose test no longer holds may be.
class Sim {
 public:
  explicit Sim(int32_t replicas, Json spec = SpecJson())
      : n_(replicas),
        profile_(testing::ProfileObject("web-profile", "shop", "profile-uid", spec)),
        api_(testing::DeploymentObject("web", "shop", "target-uid", replicas, OriginalTemplate())) {
  }

  int32_t n() const { return n_; }
  Json& profile() { return profile_; }
  Json& target() { return api_.target(); }
  const Json& target() const { return api_.target(); }
  Json& canary() { return api_.canary(); }
  const Json& canary() const { return api_.canary(); }
  Json& baseline() { return api_.baseline(); }
  const Json& baseline() const { return api_.baseline(); }
  std::string& hpa() { return hpa_; }
  // The HPA's minReplicas (Observations::hpa_min_replicas) while hpa() is set.
  int32_t hpa_min = 1;
  // The HPA's status.desiredReplicas (Observations::hpa_desired_replicas); 0 = not known.
  int32_t hpa_desired = 0;
  // Observations::analysis_template.
  std::optional<AnalysisTemplateStatus> analysis_template;
  void SetAnnotationOnTarget(const std::string& key, const std::string& value) {
    target()["metadata"]["annotations"][key] = value;
  }
  // What the window store says about the current step (Observations::arms).
  std::optional<ArmsReport> arms;
  // Pods the kubelet refused (Observations::rejected_pods).
  std::vector<RejectedPod> rejected;
  // What the canary's agents applied (Observations::reach).
  std::optional<ReachReport> reach;
  // Why the namespace may not be tuned (Observations::namespace_refusal).
  std::string namespace_refusal;
  // What the agents read of the program, and the arms' memory peaks (Observations::go,
  // ::memory).
  std::optional<GoFacts> go;
  std::optional<MemoryPeaks> memory;
  absl::Time& now() { return now_; }
  absl::Time time() const { return now_; }
  bool profile_gone() const { return gone_; }
  const std::vector<Action>& events() const { return events_; }
  RolloutStatus status() const { return ParseProfile(profile_)->status; }
  Phase phase() const { return status().phase; }
  // A copy: status() is a temporary.
  Condition Cond(const char* type) const {
    RolloutStatus s = status();
    const Condition* c = FindCondition(s.conditions, type);
    return c == nullptr ? Condition{"<absent>"} : *c;
  }

  void SetAnnotation(const std::string& key, const std::string& value) {
    profile_["metadata"]["annotations"][key] = value;
  }
  void RemoveAnnotation(const std::string& key) {
    if (profile_["metadata"].contains("annotations")) {
      profile_["metadata"]["annotations"].erase(key);
    }
  }
  void EditSpec(const std::function<void(Json&)>& edit) {
    edit(profile_["spec"]);
    profile_["metadata"]["generation"] = profile_["metadata"]["generation"].get<int64_t>() + 1;
  }

  Plan Plan1(VerdictSource& verdicts) const {
    absl::StatusOr<Profile> p = ParseProfile(profile_);
    EXPECT_TRUE(p.ok()) << p.status();
    Observations obs{ObserveDeployment(target()), ObserveDeployment(canary()), hpa_};
    obs.hpa_min_replicas = hpa_.empty() ? 0 : hpa_min;
    obs.hpa_desired_replicas = hpa_.empty() ? 0 : hpa_desired;
    obs.analysis_template = analysis_template;
    obs.arms = arms;
    obs.rejected_pods = rejected;
    obs.reach = reach;
    obs.namespace_refusal = namespace_refusal;
    obs.baseline = ObserveDeployment(baseline());
    obs.go = go;
    obs.memory = memory;
    return Reconcile(*p, obs, verdicts, now_, opts_);
  }

  // One reconcile: status written first, then the first `execute` actions (all by
  // default; fewer simulates an operator killed mid-way). `check` runs after every action.
  // A write refused by the API server (a failed JSON-patch test: the object changed since
  // the observation) ends the pass, as in the reconciler. `before` runs before every action
  // (someone else's change landing between two of the operator's writes).
  Plan Step(VerdictSource& verdicts, bool settle = true, size_t execute = SIZE_MAX,
            const std::function<void()>& check = nullptr,
            const std::function<void()>& before = nullptr) {
    Plan plan = Plan1(verdicts);
    profile_["status"] = StatusToJson(plan.status);
    for (size_t i = 0; i < plan.actions.size() && i < execute; ++i) {
      if (before) before();
      if (!Execute(plan.actions[i])) {
        ++refused;
        break;
      }
      if (check) check();
    }
    if (settle) SettleAll();
    return plan;
  }
  int refused = 0;

  // The API server refuses any patch that does not apply (422); only a test that changes
  // the objects between two writes (stale_writes) expects that of anything but a test op.
  bool stale_writes = false;

  // Carries out one action: false when the API server refused it.
  bool Execute(const Action& a) {
    if (a.type == ActionType::kCreateCanary || a.type == ActionType::kCreateBaseline) {
      EXPECT_EQ(testing::ProfileOwnerUid(a.body), "profile-uid");
    } else if ((a.type == ActionType::kPatchCanary || a.type == ActionType::kDeleteCanary) &&
               !canary().is_null()) {
      EXPECT_EQ(testing::ProfileOwnerUid(canary()), "profile-uid");
    } else if ((a.type == ActionType::kPatchBaseline || a.type == ActionType::kDeleteBaseline) &&
               !baseline().is_null()) {
      EXPECT_EQ(testing::ProfileOwnerUid(baseline()), "profile-uid");
    }
    const absl::Status s = api_.Execute(a, profile_);
    if (a.type == ActionType::kRemoveFinalizer) gone_ = true;
    if (a.type == ActionType::kRecordEvent) events_.push_back(a);
    if (s.ok()) return true;
    const bool patch = a.type == ActionType::kClaimProfile || a.type == ActionType::kEnrollTarget ||
                       a.type == ActionType::kScaleTarget ||
                       a.type == ActionType::kPromoteTemplate ||
                       a.type == ActionType::kRestoreTemplate;
    const bool stale = absl::IsAborted(s) || (stale_writes && absl::IsInvalidArgument(s));
    if (!patch || !stale) ADD_FAILURE() << DescribeAction(a) << ": " << s << "\n" << a.body.dump();
    return false;
  }

  void SettleAll() { api_.SettleAll(); }
  // Pods of the current template are up but not available yet.
  void Unsettle(Json& d) { testing::Unsettle(d); }

  int32_t TargetReplicas() const { return testing::SpecReplicas(target()); }
  int32_t CanaryReplicas() const { return testing::SpecReplicas(canary()); }
  int32_t BaselineReplicas() const { return testing::SpecReplicas(baseline()); }
  int32_t Total() const { return TargetReplicas() + CanaryReplicas() + BaselineReplicas(); }

  MutationOptions opts_;

 private:
  int32_t n_;
  Json profile_;
  testing::DeploymentSim api_;
  std::string hpa_;
  absl::Time now_ = absl::FromUnixSeconds(1'800'000'000);
  bool gone_ = false;
  std::vector<Action> events_;
};

std::vector<ActionType> Types(const Plan& plan) {
  std::vector<ActionType> out;
  for (const Action& a : plan.actions) out.push_back(a.type);
  return out;
}

bool Has(const Plan& plan, ActionType t) {
  for (const Action& a : plan.actions) {
    if (a.type == t) return true;
  }
  return false;
}

const Action* Find(const Plan& plan, ActionType t) {
  for (const Action& a : plan.actions) {
    if (a.type == t) return &a;
  }
  return nullptr;
}

std::vector<std::string> Reasons(const std::vector<Action>& events) {
  std::vector<std::string> out;
  for (const Action& e : events) out.push_back(e.reason);
  return out;
}

// Drives the simulation until `done` or `limit` reconciles, moving time by `tick`.
void Drive(Sim& sim, VerdictSource& verdicts, const std::function<bool()>& done, int limit = 200,
           absl::Duration tick = absl::Seconds(10)) {
  for (int i = 0; i < limit && !done(); ++i) {
    sim.Step(verdicts);
    sim.now() += tick;
  }
  ASSERT_TRUE(done()) << "stuck in " << PhaseName(sim.phase());
}

Json Promoted(const Sim& sim) {
  absl::StatusOr<ProfileSpec> spec = ParseSpec(SpecJson());
  (void)sim;
  return *TunedTemplate(OriginalTemplate(), spec->tuning, kArmPromoted,
                        EnrollContextFor("shop", "web-profile", *spec), MutationOptions{});
}

// A Deployment a user created under the canary's name: not owned by any profile.
Json ForeignDeployment(const std::string& uid = "user-uid") {
  Json d = testing::DeploymentObject("web-booster", "shop", uid, 2,
                                     {{"metadata", {{"labels", {{"app", "users-own"}}}}}});
  testing::Settle(d);
  return d;
}

// --- the happy path, step by step ----------------------------------------------------------

TEST(ReconcileTest, StatusShowsWhatTheAgentsOfEachArmReportedForTheCurrentStep) {
  Sim sim(10);
  TimeVerdictSource verdicts;
  Drive(sim, verdicts, [&] { return sim.phase() == Phase::kProgressing; });
  // No window store: nothing is claimed.
  sim.Step(verdicts);
  EXPECT_FALSE(sim.status().arms.has_value());
  sim.arms = ArmsReport{.step = 1, .baseline = {.pods = 9, .windows = 27}, .canary = {1, 3}};
  Plan plan = sim.Step(verdicts);
  ASSERT_TRUE(sim.status().arms.has_value());
  EXPECT_EQ(*sim.status().arms, *sim.arms);
  // Waiting in a step, it looks again within one window so the counts follow the windows.
  ASSERT_FALSE(plan.actions.empty());
  EXPECT_EQ(plan.actions.back().type, ActionType::kRequeueAfter);
  EXPECT_LE(plan.actions.back().delay, absl::Seconds(30));
  // The store still on another step (it opens the new one after this reconcile): zeros,
  // never the other step's figures.
  sim.arms->step = 2;
  sim.Step(verdicts);
  EXPECT_EQ(*sim.status().arms, ArmsReport{.step = 1});
  // Gone once the rollout ends.
  sim.arms.reset();
  Drive(sim, verdicts, [&] { return sim.phase() == Phase::kPromoted; });
  EXPECT_FALSE(sim.status().arms.has_value());
}

TEST(ReconcileTest, HappyPathEnrollsStepsPromotes) {
  Sim sim(10);
  TimeVerdictSource verdicts;
  std::vector<std::pair<int32_t, int32_t>> splits;  // (target, canary) at each step
  Phase last = sim.phase();
  std::vector<Phase> phases = {last};
  for (int i = 0; i < 200 && sim.phase() != Phase::kPromoted; ++i) {
    sim.Step(verdicts, true, SIZE_MAX, [&] { EXPECT_LE(sim.Total(), 10); });
    RolloutStatus s = sim.status();
    if (s.phase != last || (s.phase == Phase::kProgressing &&
                            (splits.empty() || splits.back().second != s.canary_replicas))) {
      if (s.phase == Phase::kProgressing) splits.push_back({s.stable_replicas, s.canary_replicas});
      if (s.phase != last) phases.push_back(s.phase);
      last = s.phase;
    }
    sim.now() += absl::Seconds(10);
  }
  EXPECT_EQ(phases, (std::vector<Phase>{Phase::kPending, Phase::kEnrolling, Phase::kProgressing,
                                        Phase::kPromoting, Phase::kPromoted}));
  EXPECT_EQ(splits, (std::vector<std::pair<int32_t, int32_t>>{{9, 1}, {5, 5}, {0, 10}}));

  // The target carries the tuning on all replicas; the canary is gone.
  EXPECT_TRUE(sim.canary().is_null());
  EXPECT_EQ(sim.TargetReplicas(), 10);
  EXPECT_EQ(TemplateMarker(sim.target()["spec"]["template"]), TemplateMarker(Promoted(sim)));
  EXPECT_EQ(TemplateArm(sim.target()["spec"]["template"]), kArmPromoted);
  // No copy of the template is kept: the layer comes off whatever the template is then.
  EXPECT_FALSE(sim.target()["metadata"]["annotations"].contains(kLegacyOriginalTemplateAnnotation));
  EXPECT_EQ(TeamTemplate(sim.target()["spec"]["template"], MutationOptions{}), OriginalTemplate());

  RolloutStatus s = sim.status();
  EXPECT_EQ(s.total_replicas, 10);
  EXPECT_EQ(s.original_replicas, 10);
  EXPECT_EQ(s.current_step, 3);
  ASSERT_TRUE(s.last_decision.has_value());
  EXPECT_EQ(s.last_decision->verdict, "Pass");
  EXPECT_EQ(s.last_decision->step, 3);
  EXPECT_EQ(s.last_decision->evidence.at("judge"), "time");
  const Condition* ready = FindCondition(s.conditions, kConditionReady);
  ASSERT_NE(ready, nullptr);
  EXPECT_EQ(ready->status, "True");
  EXPECT_EQ(FindCondition(s.conditions, kConditionInvalidSpec)->status, "False");
  EXPECT_EQ(FindCondition(s.conditions, kConditionTargetFound)->status, "True");
  EXPECT_EQ(Reasons(sim.events()),
            (std::vector<std::string>{"Enrolling", "StepStarted", "StepPassed", "StepPassed",
                                      "StepPassed", "Promoted"}));

  // At rest: nothing more to do.
  Plan quiet = sim.Plan1(verdicts);
  EXPECT_FALSE(quiet.status_changed);
  EXPECT_TRUE(quiet.actions.empty()) << DescribeAction(quiet.actions[0]);
}

TEST(ReconcileTest, EachStepWaitsForItsDurationAfterThePodsAreReady) {
  Sim sim(4);
  TimeVerdictSource verdicts;
  Drive(sim, verdicts, [&] { return sim.phase() == Phase::kProgressing; });
  // Pods not ready: no clock runs for the step.
  sim.Step(verdicts, /*settle=*/false);
  sim.Unsettle(sim.canary());
  sim.now() += absl::Minutes(3);
  Plan p = sim.Step(verdicts, /*settle=*/false);
  EXPECT_EQ(sim.status().current_step, 1);
  EXPECT_EQ(sim.status().analysis_start_time, absl::InfinitePast());
  sim.SettleAll();
  sim.Step(verdicts);  // analysis starts now
  const absl::Time start = sim.now();
  EXPECT_EQ(sim.status().analysis_start_time, start);
  sim.now() = start + absl::Seconds(59);
  p = sim.Step(verdicts);
  EXPECT_EQ(sim.status().current_step, 1);
  const Action* requeue = Find(p, ActionType::kRequeueAfter);
  ASSERT_NE(requeue, nullptr);
  EXPECT_EQ(requeue->delay, absl::Seconds(1));
  sim.now() = start + absl::Minutes(1);
  sim.Step(verdicts);
  EXPECT_EQ(sim.status().current_step, 2);
}

TEST(ReconcileTest, AddsTheFinalizerBeforeTouchingAnything) {
  Sim sim(3);
  sim.profile()["metadata"].erase("finalizers");
  TimeVerdictSource verdicts;
  Plan p = sim.Step(verdicts);
  EXPECT_EQ(Types(p),
            (std::vector<ActionType>{ActionType::kAddFinalizer, ActionType::kRequeueAfter}));
  EXPECT_EQ(sim.phase(), Phase::kPending);
  p = sim.Step(verdicts);
  EXPECT_EQ(sim.phase(), Phase::kEnrolling);
  EXPECT_TRUE(Has(p, ActionType::kEnrollTarget));
}

TEST(ReconcileTest, MissingTargetWaitsInPending) {
  Sim sim(3);
  sim.target() = nullptr;
  TimeVerdictSource verdicts;
  Plan p = sim.Step(verdicts);
  EXPECT_EQ(sim.phase(), Phase::kPending);
  const Condition found = sim.Cond(kConditionTargetFound);
  EXPECT_EQ(found.status, "False");
  EXPECT_THAT(found.message, HasSubstr("Deployment web not found in namespace shop"));
  ASSERT_NE(Find(p, ActionType::kRequeueAfter), nullptr);
  EXPECT_EQ(Find(p, ActionType::kRequeueAfter)->delay, absl::Seconds(30));
}

TEST(ReconcileTest, EveryTargetPatchTestsTheUid) {
  Sim sim(5);
  TimeVerdictSource verdicts;
  for (int i = 0; i < 100 && sim.phase() != Phase::kPromoted; ++i) {
    Plan p = sim.Plan1(verdicts);
    for (const Action& a : p.actions) {
      if (a.type == ActionType::kEnrollTarget || a.type == ActionType::kScaleTarget ||
          a.type == ActionType::kPromoteTemplate || a.type == ActionType::kRestoreTemplate) {
        ASSERT_GE(a.body.size(), 2u);
        EXPECT_EQ(a.body[0], Json::parse(R"({"op": "test", "path": "/metadata/uid",
                                              "value": "target-uid"})"));
      }
    }
    sim.Step(verdicts);
    sim.now() += absl::Seconds(20);
  }
  EXPECT_EQ(sim.phase(), Phase::kPromoted);
}

// --- rollback, abort, promote-now, pause -------------------------------------------------

// The Deployment as it was before the profile: same spec (template and replicas) and no
// Booster annotation left on it.
void ExpectAsBefore(const Sim& sim, const Json& before) {
  EXPECT_EQ(sim.target()["spec"], before["spec"]);
  EXPECT_EQ(sim.target()["metadata"].value("annotations", Json::object()),
            before["metadata"].value("annotations", Json::object()));
}

TEST(ReconcileTest, FailedVerdictRestoresReplicasAndTheOriginalTemplate) {
  Sim sim(10);
  const Json before = sim.target();
  ScriptedVerdictSource verdicts(
      {MakeVerdict(VerdictKind::kPass, "Ok", "fine"),
       MakeVerdict(VerdictKind::kFail, "LatencyRegressed", "p99 12% worse")});
  Drive(sim, verdicts, [&] { return sim.status().current_step == 2; });
  ASSERT_TRUE(IsEnrolled(sim.target()["spec"]["template"]));
  Plan p = sim.Step(verdicts, /*settle=*/false);  // step 2 verdict: Fail
  EXPECT_EQ(sim.phase(), Phase::kRollingBack);
  EXPECT_EQ(sim.status().baseline_tuning, "") << "nothing was promoted before: unenroll";
  // Canary deleted first, then the original template and all N replicas in one patch.
  EXPECT_EQ(Types(p)[0], ActionType::kDeleteCanary);
  const Action* restore = Find(p, ActionType::kRestoreTemplate);
  ASSERT_NE(restore, nullptr);
  EXPECT_EQ(restore->replicas, 10);
  Drive(sim, verdicts, [&] { return sim.phase() == Phase::kRolledBack; });
  EXPECT_TRUE(sim.canary().is_null());
  EXPECT_EQ(sim.TargetReplicas(), 10);
  // Byte for byte the template of before: the Deployment controller scales the old
  // ReplicaSet back up instead of creating a new one.
  EXPECT_EQ(sim.target()["spec"]["template"], OriginalTemplate());
  ExpectAsBefore(sim, before);
  RolloutStatus s = sim.status();
  ASSERT_TRUE(s.last_decision.has_value());
  EXPECT_EQ(s.last_decision->verdict, "Fail");
  EXPECT_EQ(s.last_decision->reason, "LatencyRegressed");
  EXPECT_THAT(s.last_transition->message, HasSubstr("p99 12% worse"));
  EXPECT_EQ(FindCondition(s.conditions, kConditionReady)->status, "False");
  bool warned = false;
  for (const Action& e : sim.events()) {
    if (e.reason == "AnalysisFailed") warned = e.event_type == "Warning";
  }
  EXPECT_TRUE(warned);
}

// A rollback whose pods never come up is announced once as stalled (the condition stays
// while it does), and each transition's Event says which phase it moved to: what the
// notifications (operator/notify) tell apart.
TEST(ReconcileTest, AStalledRollbackIsAnnouncedOnceAndTransitionsNameTheirPhase) {
  Sim sim(4);
  ScriptedVerdictSource verdicts({MakeVerdict(VerdictKind::kFail, "LatencyRegressed", "p99 worse")});
  Drive(sim, verdicts, [&] { return sim.status().current_step == 1 && sim.CanaryReplicas() > 0; });
  sim.Step(verdicts, /*settle=*/false);
  ASSERT_EQ(sim.phase(), Phase::kRollingBack);
  for (int i = 0; i < 12; ++i) {
    sim.now() += absl::Minutes(1);
    sim.Unsettle(sim.target());
    sim.Step(verdicts, /*settle=*/false);
  }
  ASSERT_EQ(sim.phase(), Phase::kRollingBack);
  std::vector<Action> stalled;
  std::string rolling_back_to;
  for (const Action& e : sim.events()) {
    if (e.reason == "RollbackStalled") stalled.push_back(e);
    if (e.reason == "AnalysisFailed") rolling_back_to = e.transition_to;
    if (e.reason == "RollbackStalled" || e.reason == "StepExtended") {
      EXPECT_EQ(e.transition_to, "") << e.reason << " is not a transition";
    }
  }
  ASSERT_EQ(stalled.size(), 1u);
  EXPECT_EQ(stalled[0].event_type, "Warning");
  EXPECT_THAT(stalled[0].message, HasSubstr("has not settled within"));
  EXPECT_EQ(rolling_back_to, "RollingBack");
  EXPECT_EQ(FindCondition(sim.status().conditions, kConditionProgressing)->reason,
            "RollbackStalled");
  Drive(sim, verdicts, [&] { return sim.phase() == Phase::kRolledBack; });
  bool rolled_back = false;
  for (const Action& e : sim.events()) {
    if (e.reason == "RolledBack") rolled_back = e.transition_to == "RolledBack";
  }
  EXPECT_TRUE(rolled_back);
}

TEST(ReconcileTest, AbortRestoresTheExactReplicaCountAndTemplate) {
  for (int32_t n : {1, 2, 3, 7, 10, 33}) {
    Sim sim(n);
    const Json before = sim.target();
    TimeVerdictSource verdicts;
    Drive(sim, verdicts, [&] { return sim.status().current_step == 2; });
    sim.SetAnnotation(kAnnotationAbort, "incident-42");
    Plan p = sim.Step(verdicts);
    EXPECT_EQ(sim.phase(), Phase::kRollingBack) << n;
    // The canary goes first, then the target gets its pods back.
    std::vector<ActionType> types = Types(p);
    auto del = std::find(types.begin(), types.end(), ActionType::kDeleteCanary);
    auto restore = std::find(types.begin(), types.end(), ActionType::kRestoreTemplate);
    ASSERT_NE(del, types.end());
    ASSERT_NE(restore, types.end());
    EXPECT_LT(del, restore);
    Drive(sim, verdicts, [&] { return sim.phase() == Phase::kRolledBack; });
    EXPECT_EQ(sim.TargetReplicas(), n);
    EXPECT_TRUE(sim.canary().is_null());
    ExpectAsBefore(sim, before);
    // RolledBack is terminal: time passing changes nothing.
    sim.now() += absl::Hours(1);
    Plan quiet = sim.Plan1(verdicts);
    EXPECT_EQ(quiet.status.phase, Phase::kRolledBack);
    EXPECT_TRUE(quiet.actions.empty());
    EXPECT_EQ(sim.status().handled.abort, "incident-42");
    // The same annotation does not abort the next rollout.
    sim.EditSpec([](Json& s) { s["tuning"]["runtime"]["preload"]["listenBacklog"] = 2048; });
    Drive(sim, verdicts, [&] { return sim.phase() == Phase::kProgressing; });
  }
}

TEST(ReconcileTest, AbortDuringEnrollmentRestoresTheOriginalTemplate) {
  Sim sim(4);
  TimeVerdictSource verdicts;
  sim.Step(verdicts, /*settle=*/false);
  ASSERT_EQ(sim.phase(), Phase::kEnrolling);
  sim.Step(verdicts, /*settle=*/false);
  ASSERT_TRUE(IsEnrolled(sim.target()["spec"]["template"]));
  sim.SetAnnotation(kAnnotationAbort, "1");
  Drive(sim, verdicts, [&] { return sim.phase() == Phase::kRolledBack; });
  EXPECT_EQ(sim.target()["spec"]["template"], OriginalTemplate());
  EXPECT_FALSE(sim.target()["metadata"].contains("annotations"));
}

TEST(ReconcileTest, PromoteNowSkipsTheRemainingSteps) {
  Sim sim(10);
  TimeVerdictSource verdicts;
  Drive(sim, verdicts, [&] { return sim.phase() == Phase::kProgressing; });
  sim.SetAnnotation(kAnnotationPromoteNow, "go");
  sim.Step(verdicts);
  EXPECT_EQ(sim.phase(), Phase::kPromoting);
  Drive(
      sim, verdicts, [&] { return sim.phase() == Phase::kPromoted; }, 200, absl::Seconds(1));
  EXPECT_EQ(sim.TargetReplicas(), 10);
  EXPECT_TRUE(sim.canary().is_null());
  EXPECT_EQ(TemplateArm(sim.target()["spec"]["template"]), kArmPromoted);
  EXPECT_EQ(sim.status().handled.promote_now, "go");
}

TEST(ReconcileTest, PromotionHandsPodsOverInBatchesWithinN) {
  Sim sim(8);
  TimeVerdictSource verdicts;
  Drive(
      sim, verdicts, [&] { return sim.phase() == Phase::kPromoting; }, 300);
  std::vector<int32_t> target_counts;
  for (int i = 0; i < 50 && sim.phase() == Phase::kPromoting; ++i) {
    sim.Step(verdicts, true, SIZE_MAX, [&] { EXPECT_LE(sim.Total(), 8); });
    target_counts.push_back(sim.TargetReplicas());
    EXPECT_EQ(sim.Total(), 8);
  }
  EXPECT_EQ(sim.phase(), Phase::kPromoted);
  // The promoted template lands at 0 replicas (the 100% step), then 2 -> 4 -> 6 -> 8.
  EXPECT_EQ(target_counts, (std::vector<int32_t>{2, 4, 6, 8, 8}));
}

// Mode Time: the soak of the step starts again at resume.
TEST(ReconcileTest, PauseHoldsTheStepAndResumeRestartsItsWindow) {
  Sim sim(10);
  TimeVerdictSource verdicts;
  Drive(sim, verdicts, [&] { return sim.status().current_step == 2; });
  sim.EditSpec([](Json& s) { s["rollout"]["paused"] = true; });
  sim.Step(verdicts);
  EXPECT_EQ(sim.phase(), Phase::kPaused);
  sim.now() += absl::Hours(5);  // no deadline, no verdict while paused
  Plan p = sim.Step(verdicts);
  EXPECT_EQ(sim.phase(), Phase::kPaused);
  EXPECT_EQ(sim.status().current_step, 2);
  EXPECT_EQ(sim.CanaryReplicas(), 5);
  sim.EditSpec([](Json& s) { s["rollout"]["paused"] = false; });
  sim.Step(verdicts);
  EXPECT_EQ(sim.phase(), Phase::kProgressing);
  EXPECT_EQ(sim.status().step_start_time, sim.now());
  // The annotation pauses too.
  sim.SetAnnotation(kAnnotationPaused, "true");
  sim.Step(verdicts);
  EXPECT_EQ(sim.phase(), Phase::kPaused);
  EXPECT_THAT(sim.status().last_transition->message, HasSubstr("booster.dev/paused"));
}

TEST(ReconcileTest, PausedProfileEnrollsButStartsNoCanary) {
  Json spec = SpecJson();
  spec["rollout"]["paused"] = true;
  Sim sim(6, spec);
  TimeVerdictSource verdicts;
  Drive(sim, verdicts, [&] { return sim.phase() == Phase::kPaused; });
  EXPECT_EQ(sim.status().current_step, 0);
  EXPECT_TRUE(sim.canary().is_null());
  EXPECT_TRUE(IsEnrolled(sim.target()["spec"]["template"]));
  EXPECT_EQ(sim.TargetReplicas(), 6);
  sim.EditSpec([](Json& s) { s["rollout"]["paused"] = false; });
  sim.Step(verdicts);
  EXPECT_EQ(sim.phase(), Phase::kProgressing);
  // The canary is created empty; the next pass moves a replica over.
  EXPECT_FALSE(sim.canary().is_null());
  EXPECT_EQ(sim.CanaryReplicas(), 0);
  EXPECT_EQ(sim.TargetReplicas(), 6);
  sim.Step(verdicts);
  EXPECT_EQ(sim.CanaryReplicas(), 1);
  EXPECT_EQ(sim.TargetReplicas(), 5);
}

TEST(ReconcileTest, InconclusiveExtendsThenRollsBackByDefault) {
  Sim sim(4);
  ScriptedVerdictSource verdicts({MakeVerdict(VerdictKind::kInconclusive, "FewSamples", "n=3")});
  Drive(sim, verdicts, [&] { return sim.phase() == Phase::kProgressing; });
  Drive(sim, verdicts, [&] { return sim.phase() == Phase::kRollingBack; });
  EXPECT_EQ(sim.status().extensions, 2);
  EXPECT_EQ(sim.status().last_transition->reason, "AnalysisInconclusive");
  std::vector<std::string> reasons = Reasons(sim.events());
  EXPECT_EQ(std::count(reasons.begin(), reasons.end(), "StepExtended"), 2);
}

TEST(ReconcileTest, InconclusiveCanPromoteWhenAsked) {
  Json spec = SpecJson();
  spec["rollout"]["analysis"] = {
      {"mode", "Time"}, {"maxExtensions", 0}, {"onInconclusive", "Promote"}};
  Sim sim(4, spec);
  ScriptedVerdictSource verdicts({MakeVerdict(VerdictKind::kInconclusive)});
  Drive(sim, verdicts, [&] { return sim.phase() == Phase::kPromoted; });
}

// --- analysis.dryRun ----------------------------------------------------------------------

Json DryRunSpec(bool dry_run, Json analysis = Json::object()) {
  Json spec = SpecJson();
  analysis["dryRun"] = dry_run;
  if (!analysis.contains("mode")) analysis["mode"] = "Time";
  spec["rollout"]["analysis"] = analysis;
  return spec;
}

// A verdict source that is a function of the request.
class FnVerdictSource final : public VerdictSource {
 public:
  explicit FnVerdictSource(std::function<Verdict(const VerdictRequest&)> fn) : fn_(std::move(fn)) {}
  Verdict Judge(const VerdictRequest& request) override { return fn_(request); }

 private:
  std::function<Verdict(const VerdictRequest&)> fn_;
};

std::vector<Action> EventsOf(const Sim& sim, absl::string_view reason) {
  std::vector<Action> out;
  for (const Action& e : sim.events()) {
    if (e.reason == reason) out.push_back(e);
  }
  return out;
}

// Drives `sim` to a resting phase; every step that ends must have run `step` from its
// analysis start, and the phases seen are returned.
std::vector<Phase> DriveDryRun(Sim& sim, VerdictSource& verdicts, absl::Duration step) {
  std::vector<Phase> phases = {sim.phase()};
  for (int i = 0; i < 300 && sim.phase() != Phase::kPromoted && sim.phase() != Phase::kRolledBack;
       ++i) {
    const RolloutStatus before = sim.status();
    sim.Step(verdicts);
    const RolloutStatus after = sim.status();
    if (after.phase != phases.back()) phases.push_back(after.phase);
    if (before.phase == Phase::kProgressing && after.phase != Phase::kRollingBack &&
        (after.phase != Phase::kProgressing || after.current_step != before.current_step)) {
      EXPECT_GE(sim.time() - before.analysis_start_time, step)
          << "step " << before.current_step << " ended early";
    }
    sim.now() += absl::Seconds(10);
  }
  return phases;
}

TEST(DryRunTest, AJudgeThatFailsMidStepAndAtTheEndIsReportedAndTheRolloutStillPromotes) {
  Sim sim(10, DryRunSpec(true));
  ScriptedVerdictSource verdicts(
      {MakeVerdict(VerdictKind::kFail, "LatencyRegressed", "p99 12% worse")});
  Drive(sim, verdicts, [&] { return !verdicts.requests().empty(); });
  // The first look, mid-step: recorded and announced, and the step goes on.
  RolloutStatus s = sim.status();
  EXPECT_EQ(s.phase, Phase::kProgressing);
  EXPECT_EQ(s.current_step, 1);
  ASSERT_TRUE(s.last_decision.has_value());
  EXPECT_EQ(s.last_decision->verdict, "Fail");
  EXPECT_EQ(s.last_decision->reason, "LatencyRegressed");
  EXPECT_TRUE(s.last_decision->dry_run);
  EXPECT_EQ(s.last_decision->message, "dry run: would have rolled back: p99 12% worse");
  ASSERT_EQ(EventsOf(sim, "DryRunAnalysisFailed").size(), 1u);
  const Action first = EventsOf(sim, "DryRunAnalysisFailed")[0];
  EXPECT_EQ(first.event_type, "Warning");
  EXPECT_EQ(first.message,
            "dry run: would have rolled back: step 1 failed: p99 12% worse; the step runs on "
            "for 1m");

  const std::vector<Phase> phases = DriveDryRun(sim, verdicts, absl::Minutes(1));
  EXPECT_EQ(phases, (std::vector<Phase>{Phase::kProgressing, Phase::kPromoting, Phase::kPromoted}));
  // Every look was still judged, though none ended a step early.
  EXPECT_GT(verdicts.requests().size(), 12u);
  // No rollback: the tuning is on every replica, the canary is gone.
  EXPECT_TRUE(sim.canary().is_null());
  EXPECT_EQ(sim.TargetReplicas(), 10);
  EXPECT_EQ(TemplateArm(sim.target()["spec"]["template"]), kArmPromoted);
  // Per step: the first Fail mid-step, and the Fail at its end that advanced it.
  EXPECT_EQ(Reasons(sim.events()),
            (std::vector<std::string>{"Enrolling", "StepStarted", "DryRunAnalysisFailed",
                                      "DryRunAnalysisFailed", "DryRunAnalysisFailed",
                                      "DryRunAnalysisFailed", "DryRunAnalysisFailed",
                                      "DryRunAnalysisFailed", "Promoted"}));
  const std::vector<Action> spared = EventsOf(sim, "DryRunAnalysisFailed");
  for (const Action& e : spared) {
    EXPECT_EQ(e.event_type, "Warning");
    EXPECT_THAT(e.message, ::testing::StartsWith(kDryRunPrefix));
  }
  ASSERT_GE(spared.size(), 2u);
  EXPECT_THAT(spared[1].message,
              HasSubstr("step 1 failed: p99 12% worse; step 2 of 3: 50% on the canary"));
  s = sim.status();
  ASSERT_TRUE(s.last_decision.has_value());
  EXPECT_EQ(s.last_decision->step, 3);
  EXPECT_EQ(s.last_decision->verdict, "Fail");
  EXPECT_TRUE(s.last_decision->dry_run);
  EXPECT_EQ(StatusToJson(s)["lastDecision"]["dryRun"], true);
}

TEST(DryRunTest, WithoutDryRunTheSameJudgeRollsBackAtStepOne) {
  Sim sim(10, DryRunSpec(false));
  ScriptedVerdictSource verdicts(
      {MakeVerdict(VerdictKind::kFail, "LatencyRegressed", "p99 12% worse")});
  DriveDryRun(sim, verdicts, absl::ZeroDuration());
  EXPECT_EQ(sim.phase(), Phase::kRolledBack);
  EXPECT_EQ(sim.target()["spec"]["template"], OriginalTemplate());
  RolloutStatus s = sim.status();
  EXPECT_EQ(s.last_transition->reason, "RolledBack");
  ASSERT_TRUE(s.last_decision.has_value());
  EXPECT_EQ(s.last_decision->step, 1);
  EXPECT_FALSE(s.last_decision->dry_run);
  EXPECT_EQ(s.last_decision->message, "p99 12% worse");
  EXPECT_EQ(EventsOf(sim, "AnalysisFailed").size(), 1u);
  EXPECT_TRUE(EventsOf(sim, "DryRunAnalysisFailed").empty());
}

TEST(DryRunTest, TurnedOffMidStepTheNextFailRollsBackWithinTheSameStep) {
  Sim sim(10, DryRunSpec(true));
  ScriptedVerdictSource verdicts(
      {MakeVerdict(VerdictKind::kFail, "LatencyRegressed", "p99 12% worse")});
  Drive(sim, verdicts, [&] { return !verdicts.requests().empty(); });
  const RolloutStatus shadowed = sim.status();
  ASSERT_EQ(shadowed.phase, Phase::kProgressing);
  ASSERT_TRUE(shadowed.last_decision.has_value() && shadowed.last_decision->dry_run);
  // The team trusts the judge now: dryRun off, nothing else changed. The step keeps its
  // analysis start (no restart) and the next look's Fail rolls back.
  sim.EditSpec([](Json& s) { s["rollout"]["analysis"]["dryRun"] = false; });
  sim.now() += absl::Seconds(10);
  sim.Step(verdicts);
  RolloutStatus s = sim.status();
  EXPECT_EQ(s.phase, Phase::kRollingBack);
  EXPECT_EQ(s.current_step, 1);
  ASSERT_TRUE(s.last_decision.has_value());
  EXPECT_FALSE(s.last_decision->dry_run);
  EXPECT_EQ(s.last_decision->verdict, "Fail");
  EXPECT_EQ(EventsOf(sim, "AnalysisFailed").size(), 1u);
  EXPECT_TRUE(EventsOf(sim, "StepRestarted").empty());
  EXPECT_TRUE(EventsOf(sim, "RolloutRestarted").empty());
  Drive(sim, verdicts, [&] { return sim.phase() == Phase::kRolledBack; });
  EXPECT_EQ(sim.target()["spec"]["template"], OriginalTemplate());
}

TEST(DryRunTest, AFailEarlyInAStepIsAnnouncedOnceAndStaysInTheMessageOfItsPass) {
  Sim sim(10, DryRunSpec(true));
  TimeVerdictSource time;
  // Worse for the first 30s of every step (three looks), then shown within the tolerance.
  FnVerdictSource verdicts([&](const VerdictRequest& r) {
    if (r.now < r.analysis_start + absl::Seconds(30)) {
      return MakeVerdict(VerdictKind::kFail, "LatencyRegressed", "p99 12% worse");
    }
    return time.Judge(r);
  });
  DriveDryRun(sim, verdicts, absl::Minutes(1));
  EXPECT_EQ(sim.phase(), Phase::kPromoted);
  EXPECT_EQ(Reasons(sim.events()),
            (std::vector<std::string>{"Enrolling", "StepStarted", "DryRunAnalysisFailed",
                                      "StepPassed", "DryRunAnalysisFailed", "StepPassed",
                                      "DryRunAnalysisFailed", "StepPassed", "Promoted"}));
  ASSERT_FALSE(EventsOf(sim, "StepPassed").empty());
  EXPECT_THAT(EventsOf(sim, "StepPassed")[0].message,
              HasSubstr("; earlier in the step, dry run: would have rolled back: p99 12% worse"));
  RolloutStatus s = sim.status();
  ASSERT_TRUE(s.last_decision.has_value());
  EXPECT_EQ(s.last_decision->verdict, "Pass");
  EXPECT_FALSE(s.last_decision->dry_run);
}

TEST(DryRunTest, AnInconclusiveThatWouldRollBackRunsItsExtensionsAndAdvances) {
  for (bool dry_run : {true, false}) {
    SCOPED_TRACE(dry_run ? "dry run" : "not dry run");
    Sim sim(4, DryRunSpec(dry_run, {{"maxExtensions", 1}}));
    ScriptedVerdictSource verdicts({MakeVerdict(VerdictKind::kInconclusive, "FewSamples", "n=3")});
    // One extension: a step ends two durations after its analysis started.
    DriveDryRun(sim, verdicts, absl::Minutes(2));
    const size_t extended = EventsOf(sim, "StepExtended").size();
    const std::vector<Action> spared = EventsOf(sim, "DryRunAnalysisInconclusive");
    if (!dry_run) {
      EXPECT_EQ(sim.phase(), Phase::kRolledBack);
      EXPECT_EQ(extended, 1u);
      EXPECT_TRUE(spared.empty());
      continue;
    }
    EXPECT_EQ(sim.phase(), Phase::kPromoted);
    EXPECT_EQ(extended, 3u);
    ASSERT_EQ(spared.size(), 6u);  // per step: mid-step, then at its end
    EXPECT_EQ(spared[0].event_type, "Warning");
    EXPECT_THAT(spared[1].message,
                HasSubstr("dry run: would have rolled back: step 1 still inconclusive after 1 "
                          "extensions: n=3; step 2 of 3"));
    EXPECT_TRUE(EventsOf(sim, "AnalysisInconclusive").empty());
    ASSERT_TRUE(sim.status().last_decision.has_value());
    EXPECT_EQ(sim.status().last_decision->verdict, "Inconclusive");
    EXPECT_TRUE(sim.status().last_decision->dry_run);
  }
}

// --- deadlines -----------------------------------------------------------------------------

TEST(ReconcileTest, EnrollmentPastTheDeadlineRestoresTheOriginal) {
  Sim sim(3);
  TimeVerdictSource verdicts;
  sim.Step(verdicts, false);
  sim.Step(verdicts, false);  // enrolled template written; pods never become available
  sim.Unsettle(sim.target());
  sim.now() += absl::Minutes(5) + absl::Seconds(1);
  sim.Step(verdicts, false);
  EXPECT_EQ(sim.phase(), Phase::kRollingBack);
  EXPECT_EQ(sim.status().baseline_tuning, "");
  EXPECT_EQ(sim.status().last_transition->reason, "ProgressDeadlineExceeded");
  Drive(sim, verdicts, [&] { return sim.phase() == Phase::kRolledBack; });
  EXPECT_EQ(sim.target()["spec"]["template"], OriginalTemplate());
}

TEST(ReconcileTest, CanaryPastTheDeadlineRollsBack) {
  Sim sim(10);
  TimeVerdictSource verdicts;
  Drive(sim, verdicts, [&] { return sim.phase() == Phase::kProgressing; });
  for (int i = 0; i < 40 && sim.phase() == Phase::kProgressing; ++i) {
    sim.Step(verdicts, false);
    if (!sim.canary().is_null()) sim.Unsettle(sim.canary());
    sim.now() += absl::Seconds(10);
  }
  EXPECT_EQ(sim.phase(), Phase::kRollingBack);
  EXPECT_THAT(sim.status().last_transition->message, HasSubstr("not ready within 5m"));
}

TEST(ReconcileTest, ACanaryPodTheKubeletRefusesRollsBackAtOnceWithACondition) {
  Sim sim(10);
  const Json before = sim.target();
  TimeVerdictSource verdicts;
  Drive(sim, verdicts, [&] { return sim.phase() == Phase::kProgressing; });
  sim.Unsettle(sim.canary());
  // A refused pod of the baseline arm is not the tuning's doing: the step waits on.
  sim.rejected = {{"web-abc", std::string(kArmBaseline), "SysctlForbidden", "nope"}};
  sim.Step(verdicts, false);
  EXPECT_EQ(sim.phase(), Phase::kProgressing);
  sim.rejected = {{"web-booster-canary-x1", std::string(kArmCanary), "SysctlForbidden",
                   "Pod forbidden sysctl: \"kernel.shmmax\" not allowlisted"}};
  sim.now() += absl::Seconds(5);  // long before the 5m progress deadline
  sim.Step(verdicts, false);
  EXPECT_EQ(sim.phase(), Phase::kRollingBack);
  EXPECT_EQ(sim.status().last_transition->reason, "SysctlForbidden");
  const Condition c = sim.Cond(kConditionTuningRejected);
  EXPECT_EQ(c.status, "True");
  EXPECT_EQ(c.reason, "SysctlForbidden");
  EXPECT_THAT(c.message, HasSubstr("web-booster-canary-x1"));
  EXPECT_THAT(c.message, HasSubstr("kernel.shmmax"));
  EXPECT_THAT(c.message, HasSubstr("--allowed-unsafe-sysctls"));
  sim.rejected.clear();  // the canary's pods go with it
  Drive(sim, verdicts, [&] { return sim.phase() == Phase::kRolledBack; });
  EXPECT_TRUE(sim.canary().is_null());
  EXPECT_EQ(sim.TargetReplicas(), 10);
  EXPECT_EQ(sim.target()["spec"]["template"], OriginalTemplate());
  ExpectAsBefore(sim, before);
  // The next rollout starts with the condition cleared.
  sim.EditSpec([](Json& spec) { spec["tuning"]["sysctls"] = Json::object(); });
  Drive(sim, verdicts, [&] { return sim.phase() == Phase::kProgressing; });
  EXPECT_EQ(sim.Cond(kConditionTuningRejected).status, "False");
}

TEST(ReconcileTest, KnobsTheCanaryAgentsCouldNotApplyAreAConditionAndOneWarning) {
  Sim sim(10);
  TimeVerdictSource verdicts;
  Drive(sim, verdicts, [&] { return sim.phase() == Phase::kProgressing; });
  EXPECT_EQ(sim.Cond(kConditionTuningReached).status, "Unknown");
  sim.reach = ReachReport{.pods = 2,
                          .not_reached = {{"placement", "NotReachable",
                                           "static binary: threads placed from outside only", 2}}};
  auto warnings = [&] {
    int n = 0;
    for (const Action& e : sim.events()) n += e.reason == "KnobsNotReached";
    return n;
  };
  sim.Step(verdicts);
  Condition c = sim.Cond(kConditionTuningReached);
  EXPECT_EQ(c.status, "False");
  EXPECT_EQ(c.reason, "NotReached");
  EXPECT_EQ(c.message,
            "placement not reached in 2 of 2 canary pods: static binary: threads placed from "
            "outside only");
  EXPECT_EQ(warnings(), 1);
  sim.Step(verdicts);
  EXPECT_EQ(warnings(), 1) << "the same news is not announced twice";
  // It informs; it does not decide: the rollout goes on.
  EXPECT_EQ(sim.phase(), Phase::kProgressing);
  sim.reach = ReachReport{.pods = 3, .not_reached = {}};
  sim.Step(verdicts);
  EXPECT_EQ(sim.Cond(kConditionTuningReached).status, "True");
  // No report (say, a new leader that has not heard from the agents yet) changes nothing.
  sim.reach = ReachReport{};
  sim.Step(verdicts);
  EXPECT_EQ(sim.Cond(kConditionTuningReached).status, "True");
  Drive(sim, verdicts, [&] { return sim.phase() == Phase::kPromoted; });
}

TEST(ObserveRejectedPodTest, AnOomKilledContainerNowOrBeforeAPodBeingDeletedIsNot) {
  Json pod = Json::parse(R"({"metadata": {"name": "c1", "labels": {"booster.dev/arm": "canary"}},
      "status": {"phase": "Running", "containerStatuses": [
        {"name": "booster-agent", "state": {"running": {}}},
        {"name": "app", "restartCount": 1, "state": {"running": {}},
         "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}})");
  std::optional<RejectedPod> r = ObserveRejectedPod(pod);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->reason, "OOMKilled");
  EXPECT_EQ(r->arm, "canary");
  EXPECT_THAT(r->message, HasSubstr("container app was OOM-killed"));
  Json now = pod;
  now["status"]["containerStatuses"][1]["state"] = now["status"]["containerStatuses"][1]["lastState"];
  now["status"]["containerStatuses"][1].erase("lastState");
  EXPECT_TRUE(ObserveRejectedPod(now).has_value());
  Json going = pod;
  going["metadata"]["deletionTimestamp"] = "2026-12-05T12:00:00Z";
  EXPECT_FALSE(ObserveRejectedPod(going).has_value());
  Json error = pod;
  error["status"]["containerStatuses"][1]["lastState"]["terminated"]["reason"] = "Error";
  EXPECT_FALSE(ObserveRejectedPod(error).has_value());
}

TEST(ReconcileTest, AnOomKilledCanaryPodRollsBackAtOnce) {
  Sim sim(4);
  TimeVerdictSource verdicts;
  Drive(sim, verdicts, [&] { return sim.phase() == Phase::kProgressing; });
  sim.rejected = {{"web-booster-x1", std::string(kArmCanary), "OOMKilled",
                   "container app was OOM-killed: it reached its memory limit"}};
  sim.now() += absl::Seconds(5);
  sim.Step(verdicts, false);
  EXPECT_EQ(sim.phase(), Phase::kRollingBack);
  EXPECT_EQ(sim.status().last_transition->reason, "OOMKilled");
  EXPECT_THAT(sim.Cond(kConditionTuningRejected).message, HasSubstr("raise the memory limit"));
  sim.rejected.clear();
  Drive(sim, verdicts, [&] { return sim.phase() == Phase::kRolledBack; });
  EXPECT_EQ(sim.TargetReplicas(), 4);
}

TEST(ReconcileTest, ACanaryNearItsMemoryLimitRollsBackAtOnceUnlessTheBaselineIsAsNear) {
  Sim sim(4);  // the app's limit: 1Gi
  TimeVerdictSource verdicts;
  Drive(sim, verdicts, [&] { return sim.phase() == Phase::kProgressing; });
  const double gib = 1024.0 * 1024 * 1024;
  // Both arms at 95%: the team's own sizing, not the tuning's doing.
  sim.memory = MemoryPeaks{ArmMemoryPeak{"web-b1", 0.95 * gib}, ArmMemoryPeak{"web-c1", 0.96 * gib}};
  sim.now() += absl::Seconds(5);
  sim.Step(verdicts, false);
  EXPECT_EQ(sim.phase(), Phase::kProgressing);
  // The canary under the share: nothing.
  sim.memory = MemoryPeaks{ArmMemoryPeak{"web-b1", 0.3 * gib}, ArmMemoryPeak{"web-c1", 0.89 * gib}};
  sim.now() += absl::Seconds(5);
  sim.Step(verdicts, false);
  EXPECT_EQ(sim.phase(), Phase::kProgressing);
  // The canary at 92% while the baseline peaks at 30%: rolled back now, said why.
  sim.memory = MemoryPeaks{ArmMemoryPeak{"web-b1", 0.3 * gib}, ArmMemoryPeak{"web-c1", 0.92 * gib}};
  sim.now() += absl::Seconds(5);
  sim.Step(verdicts, false);
  EXPECT_EQ(sim.phase(), Phase::kRollingBack);
  EXPECT_EQ(sim.status().last_transition->reason, "MemoryNearLimit");
  const Condition c = sim.Cond(kConditionTuningRejected);
  EXPECT_EQ(c.reason, "MemoryNearLimit");
  EXPECT_THAT(c.message, HasSubstr("canary pod web-c1 reached a resident set of 942.1 MiB, 92% of "
                                   "its memory limit 1024.0 MiB (the baseline's peak: 307.2 MiB)"));
  sim.memory.reset();
  Drive(sim, verdicts, [&] { return sim.phase() == Phase::kRolledBack; });
  EXPECT_EQ(sim.TargetReplicas(), 4);
}

TEST(ReconcileTest, NoMemoryLimitNoMemoryGuardrail) {
  Json spec = SpecJson();
  Sim sim(4, spec);
  sim.target()["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"].erase("memory");
  TimeVerdictSource verdicts;
  Drive(sim, verdicts, [&] { return sim.phase() == Phase::kProgressing; });
  sim.memory = MemoryPeaks{std::nullopt, ArmMemoryPeak{"web-c1", 64.0 * 1024 * 1024 * 1024}};
  sim.now() += absl::Seconds(5);
  sim.Step(verdicts, false);
  EXPECT_EQ(sim.phase(), Phase::kProgressing);
}

TEST(ReconcileTest, AGomaxprocsGoAlreadyRunsWithIsReportedAsANoOp) {
  Sim sim(10);  // gomaxprocs auto under a limit of 2 CPUs: GOMAXPROCS=2
  TimeVerdictSource verdicts;
  Drive(sim, verdicts, [&] { return sim.phase() == Phase::kProgressing; });
  // Go 1.24 on a 4-CPU node runs 4: the knob changes something.
  sim.go = GoFacts{.version = "go1.24.3", .cpus = 4};
  sim.Step(verdicts);
  EXPECT_EQ(sim.Cond(kConditionTuningReached).status, "Unknown");
  // Go 1.26 sets 2 from the limit itself.
  sim.go = GoFacts{.version = "go1.26.0", .cpus = 4};
  sim.Step(verdicts);
  Condition c = sim.Cond(kConditionTuningReached);
  EXPECT_EQ(c.status, "False");
  EXPECT_EQ(c.reason, "NoOp");
  EXPECT_THAT(c.message, HasSubstr("runtime.go.gomaxprocs: GOMAXPROCS 2 is what the go1.26.0 "
                                   "program already runs with in container web (Go 1.25+ sets it "
                                   "from the CPU limit 2000m"));
  int warnings = 0;
  for (const Action& e : sim.events()) warnings += e.reason == "KnobsNoOp";
  EXPECT_EQ(warnings, 1);
  // A knob the agents could not apply comes first; the no-op is named with it.
  sim.reach = ReachReport{.pods = 1, .not_reached = {{"placement", "NotReachable", "static", 1}}};
  sim.Step(verdicts);
  c = sim.Cond(kConditionTuningReached);
  EXPECT_EQ(c.reason, "NotReached");
  EXPECT_THAT(c.message, HasSubstr("placement not reached in 1 of 1 canary pods: static; "
                                   "runtime.go.gomaxprocs: GOMAXPROCS 2"));
  EXPECT_EQ(sim.phase(), Phase::kProgressing) << "it informs; the judge decides";
}

TEST(ObserveRejectedPodTest, OnlyAFailedPodTheKubeletRefusedForASysctl) {
  Json pod = Json::parse(R"({"metadata": {"name": "p", "labels": {"booster.dev/arm": "canary"}},
      "status": {"phase": "Failed", "reason": "SysctlForbidden",
                 "message": "Pod forbidden sysctl: \"kernel.shmmax\" not allowlisted"}})");
  std::optional<RejectedPod> r = ObserveRejectedPod(pod);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->name, "p");
  EXPECT_EQ(r->arm, "canary");
  EXPECT_EQ(r->reason, "SysctlForbidden");
  EXPECT_THAT(r->message, HasSubstr("kernel.shmmax"));
  Json evicted = pod;
  evicted["status"]["reason"] = "Evicted";
  EXPECT_FALSE(ObserveRejectedPod(evicted).has_value());
  Json pending = pod;
  pending["status"]["phase"] = "Pending";
  EXPECT_FALSE(ObserveRejectedPod(pending).has_value());
  for (const char* bad : {"null", "[]", "{}", R"({"status": 3})",
                          R"({"status": {"phase": "Failed", "reason": "SysctlForbidden"},
                              "metadata": {"labels": [1]}})"}) {
    std::optional<RejectedPod> b = ObserveRejectedPod(Json::parse(bad));
    if (b) {
      EXPECT_EQ(b->arm, "") << bad;
    }
  }
}

TEST(ReconcileTest, PromotionPastTheDeadlineWritesTheOriginalBack) {
  Sim sim(4);
  const Json before = sim.target();
  TimeVerdictSource verdicts;
  Drive(
      sim, verdicts, [&] { return sim.phase() == Phase::kPromoting; }, 300);
  ASSERT_EQ(TemplateArm(sim.target()["spec"]["template"]), kArmPromoted);
  sim.Step(verdicts, false);  // first batch asked for; the promoted pods never come up
  sim.Unsettle(sim.target());
  sim.now() += absl::Minutes(6);
  sim.Step(verdicts, false);
  EXPECT_EQ(sim.phase(), Phase::kRollingBack);
  EXPECT_EQ(sim.status().baseline_tuning, "");
  Drive(sim, verdicts, [&] { return sim.phase() == Phase::kRolledBack; });
  EXPECT_TRUE(sim.canary().is_null());
  ExpectAsBefore(sim, before);
}

// A target a previous rollout promoted: a later rollout that fails gives it back the
// promoted template it had when that rollout started, not the pre-Booster one.
TEST(ReconcileTest, RollbackOfALaterRolloutRestoresThePreviouslyPromotedTemplate) {
  for (int where = 0; where < 3; ++where) {  // abort while Enrolling, Progressing, Promoting
    SCOPED_TRACE(where);
    Sim sim(4);
    TimeVerdictSource verdicts;
    Drive(
        sim, verdicts, [&] { return sim.phase() == Phase::kPromoted; }, 300);
    const Json promoted = sim.target();
    const std::string first_tuning = TemplateTuning(promoted["spec"]["template"])->dump();
    sim.EditSpec([](Json& s) { s["tuning"]["runtime"]["preload"]["listenBacklog"] = 1024; });
    const Phase stop = where == 0   ? Phase::kEnrolling
                       : where == 1 ? Phase::kProgressing
                                    : Phase::kPromoting;
    Drive(
        sim, verdicts, [&] { return sim.phase() == stop; }, 300);
    // The tuning promoted before is the new rollout's baseline, and what a rollback keeps.
    EXPECT_EQ(sim.status().baseline_tuning, first_tuning);
    if (stop == Phase::kPromoting) {
      sim.Step(verdicts);  // the new promoted template is written
      ASSERT_NE(TemplateMarker(sim.target()["spec"]["template"]),
                TemplateMarker(promoted["spec"]["template"]));
    }
    sim.SetAnnotation(kAnnotationAbort, absl::StrCat("a", where));
    Drive(sim, verdicts, [&] { return sim.phase() == Phase::kRolledBack; });
    EXPECT_EQ(sim.target()["spec"]["template"], promoted["spec"]["template"]);
    EXPECT_EQ(sim.TargetReplicas(), 4);
    EXPECT_TRUE(sim.canary().is_null());
    EXPECT_EQ(TeamTemplate(sim.target()["spec"]["template"], MutationOptions{}),
              OriginalTemplate());
  }
}

TEST(ReconcileTest, TuningChangedDuringPromotionRollsBackThenStartsANewRollout) {
  Sim sim(4);
  TimeVerdictSource verdicts;
  Drive(
      sim, verdicts, [&] { return sim.phase() == Phase::kPromoting; }, 300);
  sim.EditSpec([](Json& s) { s["tuning"]["runtime"]["preload"]["listenBacklog"] = 1024; });
  sim.Step(verdicts);
  EXPECT_EQ(sim.phase(), Phase::kRollingBack);
  EXPECT_EQ(sim.status().last_transition->reason, "SpecChanged");
  std::vector<Phase> seen = {sim.phase()};
  for (int i = 0; i < 100 && sim.status().current_step != 1; ++i) {
    sim.Step(verdicts);
    if (seen.empty() || seen.back() != sim.phase()) seen.push_back(sim.phase());
    sim.now() += absl::Seconds(10);
  }
  EXPECT_EQ(seen, (std::vector<Phase>{Phase::kRollingBack, Phase::kRolledBack, Phase::kPending,
                                      Phase::kEnrolling, Phase::kProgressing}));
}

// --- the target changes under the rollout --------------------------------------------------

// The team's image, env or `kubectl rollout restart` lands mid-canary: the new revision is
// kept, the canary is rebuilt on it, and the analysis starts again at step 1.
// Their manifest applied (`kubectl apply`: merged into the live template by name, so
// Booster's entries stay): a new image and a new env entry.
void NewRelease(Sim& sim, const std::string& image) {
  Json& c = sim.target()["spec"]["template"]["spec"]["containers"][0];
  c["image"] = image;
  Json& env = c["env"];
  for (auto it = env.begin(); it != env.end(); ++it) {
    if ((*it)["name"] == "RELEASE") {
      env.erase(it);
      break;
    }
  }
  env.push_back({{"name", "RELEASE"}, {"value", image}});
  sim.target()["metadata"]["generation"] = sim.target()["metadata"]["generation"].get<int64_t>() + 1;
}

TEST(NewRevisionTest, MidCanaryRestartsTheCanaryOnItAtStepOne) {
  Sim sim(10);
  TimeVerdictSource verdicts;
  Drive(sim, verdicts, [&] { return sim.status().current_step == 2; });
  NewRelease(sim, "web:2");
  Plan p = sim.Step(verdicts);
  RolloutStatus s = sim.status();
  EXPECT_EQ(s.phase, Phase::kProgressing);
  EXPECT_EQ(s.current_step, 1);
  EXPECT_EQ(s.last_transition->reason, "NewRevision");
  EXPECT_THAT(s.last_transition->message, HasSubstr("new revision, restarting"));
  EXPECT_EQ(sim.Cond(kConditionTargetModified).reason, "NewRevision");
  EXPECT_THAT(Reasons(sim.events()), ::testing::Contains("NewRevision"));
  // Both arms run the new revision; the target keeps the team's edit and the canary is it
  // plus the tuning.
  for (const Json* d : {&sim.target(), &sim.canary()}) {
    const Json& c = (*d)["spec"]["template"]["spec"]["containers"][0];
    EXPECT_EQ(c["image"], "web:2");
  }
  EXPECT_EQ(TemplateArm(sim.canary()["spec"]["template"]), kArmCanary);
  EXPECT_EQ(sim.CanaryReplicas(), 1);
  EXPECT_EQ(sim.TargetReplicas(), 9);
  // And it goes on to promote the tuning on the new revision.
  Drive(
      sim, verdicts, [&] { return sim.phase() == Phase::kPromoted; }, 300);
  const Json team = TeamTemplate(sim.target()["spec"]["template"], MutationOptions{});
  EXPECT_EQ(team["spec"]["containers"][0]["image"], "web:2");
  EXPECT_EQ(TemplateArm(sim.target()["spec"]["template"]), kArmPromoted);
}

TEST(NewRevisionTest, ARestartAnnotationIsANewRevisionToo) {
  Sim sim(4);
  TimeVerdictSource verdicts;
  Drive(sim, verdicts, [&] { return sim.status().current_step == 2; });
  sim.target()["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"] =
      "2026-12-02T10:00:00Z";
  sim.Step(verdicts);
  EXPECT_EQ(sim.status().current_step, 1);
  EXPECT_EQ(sim.status().last_transition->reason, "NewRevision");
  EXPECT_EQ(sim.canary()["spec"]["template"]["metadata"]["annotations"].value(
                "kubectl.kubernetes.io/restartedAt", ""),
            "2026-12-02T10:00:00Z");
}

TEST(NewRevisionTest, DuringPromotionGoesBackToTheCanaryOnTheNewRevision) {
  Sim sim(4);
  TimeVerdictSource verdicts;
  Drive(
      sim, verdicts, [&] { return sim.phase() == Phase::kPromoting; }, 300);
  sim.Step(verdicts);  // the promoted template is written
  ASSERT_EQ(TemplateArm(sim.target()["spec"]["template"]), kArmPromoted);
  NewRelease(sim, "web:3");
  sim.Step(verdicts, true, SIZE_MAX, [&] { EXPECT_LE(sim.Total(), 4); });
  EXPECT_EQ(sim.phase(), Phase::kProgressing);
  EXPECT_EQ(sim.status().current_step, 1);
  // The target is the baseline again (the tuning never ran untested on the new revision).
  EXPECT_EQ(TemplateArm(sim.target()["spec"]["template"]), kArmBaseline);
  EXPECT_EQ(sim.target()["spec"]["template"]["spec"]["containers"][0]["image"], "web:3");
  EXPECT_EQ(sim.canary()["spec"]["template"]["spec"]["containers"][0]["image"], "web:3");
  Drive(
      sim, verdicts, [&] { return sim.phase() == Phase::kPromoted; }, 300);
  EXPECT_EQ(sim.target()["spec"]["template"]["spec"]["containers"][0]["image"], "web:3");
}

TEST(NewRevisionTest, AReplaceMidCanaryIsANewRevisionAndTheBaselineIsEnrolledAgain) {
  Sim sim(4);
  TimeVerdictSource verdicts;
  Drive(sim, verdicts, [&] { return sim.status().current_step == 2; });
  // `kubectl replace`: the team's template, none of Booster's parts, on the target.
  Json theirs = OriginalTemplate();
  theirs["spec"]["containers"][0]["image"] = "web:9";
  sim.target()["spec"]["template"] = theirs;
  sim.target()["metadata"]["annotations"].erase(kHolderUidAnnotation);
  sim.target()["metadata"]["annotations"].erase(kScaledToAnnotation);
  sim.Step(verdicts, true, SIZE_MAX, [&] { EXPECT_LE(sim.Total(), 4 + 2); });
  EXPECT_EQ(sim.status().current_step, 1);
  EXPECT_EQ(sim.status().last_transition->reason, "NewRevision");
  // The baseline arm gets its agent back (so both arms are measured), on their template.
  EXPECT_TRUE(IsEnrolled(sim.target()["spec"]["template"]));
  EXPECT_EQ(TeamTemplate(sim.target()["spec"]["template"], MutationOptions{}), theirs);
  EXPECT_EQ(sim.target()["metadata"]["annotations"][kHolderUidAnnotation], "profile-uid");
  Drive(
      sim, verdicts, [&] { return sim.phase() == Phase::kPromoted; }, 300);
  EXPECT_EQ(TeamTemplate(sim.target()["spec"]["template"], MutationOptions{}), theirs);
}

TEST(NewRevisionTest, OnNewRevisionRollbackRollsBackAndKeepsTheRevisionWithoutTheLayer) {
  Json spec = SpecJson();
  spec["rollout"]["onNewRevision"] = "Rollback";
  Sim sim(10, spec);
  TimeVerdictSource verdicts;
  Drive(sim, verdicts, [&] { return sim.status().current_step == 2; });
  NewRelease(sim, "web:2");
  sim.Step(verdicts);
  EXPECT_EQ(sim.phase(), Phase::kRollingBack);
  const Condition c = sim.Cond(kConditionTargetModified);
  EXPECT_EQ(c.status, "True");
  EXPECT_THAT(c.message, HasSubstr("changed by someone else"));
  Drive(sim, verdicts, [&] { return sim.phase() == Phase::kRolledBack; });
  // The user's edit stays; Booster's layer is gone.
  Json want = OriginalTemplate();
  want["spec"]["containers"][0]["image"] = "web:2";
  want["spec"]["containers"][0]["env"] = Json::array({{{"name", "RELEASE"}, {"value", "web:2"}}});
  EXPECT_EQ(sim.target()["spec"]["template"], want);
  EXPECT_EQ(sim.TargetReplicas(), 10);
  // A retry starts from the edited template.
  sim.SetAnnotation(kAnnotationRetry, "again");
  Drive(sim, verdicts, [&] { return sim.phase() == Phase::kProgressing; });
  EXPECT_EQ(sim.canary()["spec"]["template"]["spec"]["containers"][0]["image"], "web:2");
  EXPECT_EQ(TeamTemplate(sim.target()["spec"]["template"], MutationOptions{}), want);
}

TEST(NewRevisionTest, AfterPromotionTheTuningStaysOnANewRelease) {
  Sim sim(4);
  TimeVerdictSource verdicts;
  Drive(
      sim, verdicts, [&] { return sim.phase() == Phase::kPromoted; }, 300);
  // The team's apply merges into the tuned template: their image, Booster's layer kept.
  NewRelease(sim, "web:2");
  sim.SetAnnotationOnTarget("deployment.kubernetes.io/revision", "3");
  Plan p = sim.Step(verdicts);
  EXPECT_EQ(sim.phase(), Phase::kPromoted);
  EXPECT_FALSE(Has(p, ActionType::kPromoteTemplate));
  EXPECT_FALSE(Has(p, ActionType::kRestoreTemplate));
  EXPECT_THAT(Reasons(sim.events()), ::testing::Contains("NewRevision"));
  EXPECT_EQ(sim.Cond(kConditionLayerIntact).status, "True");
  // Deleting the profile gives back the team's latest template, not the one of before.
  const Json latest = TeamTemplate(sim.target()["spec"]["template"], MutationOptions{});
  ASSERT_EQ(latest["spec"]["containers"][0]["image"], "web:2");
  sim.profile()["metadata"]["deletionTimestamp"] = "2027-01-01T00:00:00Z";
  for (int i = 0; i < 20 && !sim.profile_gone(); ++i) sim.Step(verdicts);
  ASSERT_TRUE(sim.profile_gone());
  EXPECT_EQ(sim.target()["spec"]["template"], latest);
  EXPECT_EQ(sim.target()["metadata"]["annotations"],
            Json({{"deployment.kubernetes.io/revision", "3"}}));
}

TEST(NewRevisionTest, AReplaceThatTookTheLayerOffIsReportedAndNotPutBack) {
  Sim sim(4);
  TimeVerdictSource verdicts;
  Drive(
      sim, verdicts, [&] { return sim.phase() == Phase::kPromoted; }, 300);
  // `kubectl replace` with the team's manifest: their template, none of Booster's parts.
  sim.target()["spec"]["template"] = OriginalTemplate();
  Plan p = sim.Step(verdicts);
  EXPECT_EQ(sim.phase(), Phase::kPromoted);
  EXPECT_FALSE(Has(p, ActionType::kPromoteTemplate));
  const Condition layer = sim.Cond(kConditionLayerIntact);
  EXPECT_EQ(layer.status, "False");
  EXPECT_EQ(layer.reason, "RemovedByOthers");
  EXPECT_THAT(layer.message, HasSubstr("container booster-agent is missing"));
  EXPECT_THAT(layer.message, HasSubstr("sysctl net.core.somaxconn is missing"));
  EXPECT_EQ(sim.Cond(kConditionReady).status, "False");
  int warnings = 0;
  for (const Action& e : sim.events()) warnings += e.reason == "LayerRemoved";
  sim.Step(verdicts);
  int again = 0;
  for (const Action& e : sim.events()) again += e.reason == "LayerRemoved";
  EXPECT_EQ(warnings, 1);
  EXPECT_EQ(again, 1) << "one Event per change, not per pass";
  // A retry sends the tuning out as a canary again.
  sim.SetAnnotation(kAnnotationRetry, "r1");
  Drive(sim, verdicts, [&] { return sim.status().current_step == 1; });
  EXPECT_EQ(sim.status().baseline_tuning, "");
  EXPECT_EQ(TemplateArm(sim.target()["spec"]["template"]), kArmBaseline);
}

TEST(NewRevisionTest, ReverifySendsTheTuningOutAgainOnEveryNewRevision) {
  Json spec = SpecJson();
  spec["rollout"]["onNewRevision"] = "Reverify";
  Sim sim(4, spec);
  TimeVerdictSource verdicts;
  Drive(
      sim, verdicts, [&] { return sim.phase() == Phase::kPromoted; }, 300);
  NewRelease(sim, "web:2");
  sim.Step(verdicts);
  EXPECT_EQ(sim.phase(), Phase::kEnrolling);
  EXPECT_EQ(sim.status().last_transition->reason, "NewRevision");
  EXPECT_EQ(sim.status().baseline_tuning, "") << "the baseline is the new revision untuned";
  Drive(sim, verdicts, [&] { return sim.status().current_step == 1; });
  EXPECT_EQ(TemplateArm(sim.target()["spec"]["template"]), kArmBaseline);
  EXPECT_EQ(sim.target()["spec"]["template"]["spec"]["containers"][0]["image"], "web:2");
  EXPECT_EQ(sim.canary()["spec"]["template"]["spec"]["containers"][0]["image"], "web:2");
  Drive(
      sim, verdicts, [&] { return sim.phase() == Phase::kPromoted; }, 300);
}

TEST(ReconcileTest, TargetDeletedMidRolloutFailsAndDeletesTheCanary) {
  Sim sim(4);
  TimeVerdictSource verdicts;
  Drive(sim, verdicts, [&] { return sim.status().current_step == 1; });
  sim.target() = nullptr;
  Plan p = sim.Step(verdicts);
  EXPECT_EQ(sim.phase(), Phase::kFailed);
  EXPECT_EQ(sim.status().last_transition->reason, "TargetDeleted");
  EXPECT_TRUE(Has(p, ActionType::kDeleteCanary));
  EXPECT_TRUE(sim.canary().is_null());
  EXPECT_EQ(sim.Cond(kConditionTargetFound).status, "False");
}

TEST(ReconcileTest, TargetRecreatedUnderTheSameNameIsNotTouched) {
  Sim sim(4);
  TimeVerdictSource verdicts;
  Drive(sim, verdicts, [&] { return sim.status().current_step == 1; });
  sim.target()["metadata"]["uid"] = "someone-elses";
  Plan p = sim.Step(verdicts);
  EXPECT_EQ(sim.phase(), Phase::kFailed);
  EXPECT_FALSE(Has(p, ActionType::kScaleTarget));
  EXPECT_FALSE(Has(p, ActionType::kRestoreTemplate));
  EXPECT_EQ(sim.Cond(kConditionTargetFound).reason, "Replaced");
}

// --- HPA policies --------------------------------------------------------------------------

TEST(ReconcileTest, HpaFollowTakesTheHpasNumberAsTheTotal) {
  Sim sim(10);
  sim.hpa() = "web-hpa";
  sim.hpa_min = 1;
  TimeVerdictSource verdicts;
  Drive(sim, verdicts, [&] { return sim.status().current_step == 2; });
  ASSERT_EQ(sim.TargetReplicas(), 5);
  // The HPA counts the canary's pods too (they carry the app's labels): 8 is the total it
  // wants, written through the scale subresource (annotations untouched).
  sim.target()["spec"]["replicas"] = 8;
  Plan p = sim.Step(verdicts, true, SIZE_MAX, [&] { EXPECT_LE(sim.Total(), 8 + 5); });
  RolloutStatus s = sim.status();
  EXPECT_EQ(s.total_replicas, 8);
  EXPECT_EQ(s.canary_replicas, 4);  // ceil(8 * 50%)
  EXPECT_EQ(s.stable_replicas, 4);
  EXPECT_EQ(sim.Total(), 8) << "never inflated by the canary";
  EXPECT_EQ(FindCondition(s.conditions, kConditionHpaDetected)->status, "True");
  // Settled: the next reconcile changes nothing (no fight with the HPA).
  Plan quiet = sim.Plan1(verdicts);
  EXPECT_FALSE(Has(quiet, ActionType::kScaleTarget));
  EXPECT_FALSE(Has(quiet, ActionType::kCreateCanary));
  EXPECT_FALSE(Has(quiet, ActionType::kPatchCanary));
  // Pinned at its maxReplicas, an HPA writes its number on every sync while the target has
  // less: written again, the target keeps it and the canary comes on top (no fight).
  sim.target()["spec"]["replicas"] = 8;
  sim.Step(verdicts);
  EXPECT_EQ(sim.status().target_floor, 8);
  EXPECT_EQ(sim.TargetReplicas(), 8);
  EXPECT_EQ(sim.CanaryReplicas(), 1);
  EXPECT_THAT(Reasons(sim.events()), ::testing::Contains("HPAHoldsTarget"));
  EXPECT_FALSE(Has(sim.Plan1(verdicts), ActionType::kScaleTarget));
  // Down again: obeyed, re-split.
  sim.target()["spec"]["replicas"] = 3;
  sim.Step(verdicts);
  EXPECT_EQ(sim.status().total_replicas, 3);
  EXPECT_EQ(sim.status().target_floor, 0);
  EXPECT_EQ(sim.Total(), 3);
  // Rolled back, the target gets the whole current total.
  sim.SetAnnotation(kAnnotationAbort, "x");
  Drive(sim, verdicts, [&] { return sim.phase() == Phase::kRolledBack; });
  EXPECT_EQ(sim.TargetReplicas(), 3);
}

TEST(ReconcileTest, AnHpasMinimumStaysOnTheTargetAndTheCanaryGivesWay) {
  Sim sim(4);
  sim.hpa() = "web-hpa";
  sim.hpa_min = 3;
  TimeVerdictSource verdicts;
  Drive(sim, verdicts, [&] { return sim.status().current_step == 2; });  // 50%
  // ceil(4 * 50%) = 2 would leave the target 2 < minReplicas 3, and the HPA would scale it
  // back up on every sync: the canary gets the one pod above the floor.
  EXPECT_EQ(sim.TargetReplicas(), 3);
  EXPECT_EQ(sim.CanaryReplicas(), 1);
  Drive(sim, verdicts, [&] { return sim.status().current_step == 3; });  // 100%
  EXPECT_EQ(sim.TargetReplicas(), 3);
  EXPECT_EQ(sim.CanaryReplicas(), 1);
  sim.hpa_min = 4;  // the whole total: one canary pod on top (N + 1)
  sim.Step(verdicts, true, SIZE_MAX, [&] { EXPECT_LE(sim.Total(), 5); });
  sim.Step(verdicts, true, SIZE_MAX, [&] { EXPECT_LE(sim.Total(), 5); });
  EXPECT_LE(sim.Total(), 5);
  EXPECT_GE(sim.TargetReplicas(), 4);
}

// Load gone, a real HPA stepped down 4 -> 3 -> 2 (its minReplicas). It wrote 3, which the
// rollout split 2 + 1 (its minimum stays on the target); its 2 is then no change for the
// target, so it writes nothing, and only its status says 2.
TEST(ReconcileTest, AnHpaSettledAtItsMinimumWithoutAWriteIsTheTotal) {
  Sim sim(4);
  sim.hpa() = "web-hpa";
  sim.hpa_min = 2;
  sim.hpa_desired = 4;
  TimeVerdictSource verdicts;
  Drive(sim, verdicts, [&] { return sim.status().current_step == 1; });  // 10%: 3 + 1
  sim.target()["spec"]["replicas"] = 3;
  sim.hpa_desired = 3;
  sim.Step(verdicts);
  ASSERT_EQ(sim.status().total_replicas, 3);
  ASSERT_EQ(sim.TargetReplicas(), 2);
  ASSERT_EQ(sim.CanaryReplicas(), 1);
  // Its status still says 3 (or it is not known): nothing to follow.
  EXPECT_FALSE(Has(sim.Plan1(verdicts), ActionType::kScaleTarget));
  sim.hpa_desired = 2;
  Plan p = sim.Step(verdicts);
  EXPECT_EQ(sim.status().total_replicas, 2);
  EXPECT_EQ(sim.status().stable_replicas, 2);
  EXPECT_EQ(sim.status().canary_replicas, 1);
  EXPECT_FALSE(Has(p, ActionType::kScaleTarget)) << "no pod moves";
  EXPECT_THAT(sim.events().back().message, HasSubstr("settled at its minReplicas 2"));
  EXPECT_FALSE(Has(sim.Plan1(verdicts), ActionType::kScaleTarget));
  // Rolled back, the target gets the HPA's 2, not the 3 it passed through.
  sim.SetAnnotation(kAnnotationAbort, "x");
  Drive(sim, verdicts, [&] { return sim.phase() == Phase::kRolledBack; });
  EXPECT_EQ(sim.TargetReplicas(), 2);
}

TEST(ReconcileTest, TheAnalysisTemplateUsedIsRecordedWhileTheSpecIsValid) {
  Sim sim(4);
  TimeVerdictSource verdicts;
  sim.analysis_template = AnalysisTemplateStatus{"BoosterClusterAnalysisTemplate", "slo", 2};
  Drive(sim, verdicts, [&] { return sim.status().current_step == 1; });
  EXPECT_EQ(sim.status().analysis_template, sim.analysis_template);
  sim.analysis_template->generation = 3;  // the template edited
  sim.Step(verdicts);
  EXPECT_EQ(sim.status().analysis_template->generation, 3);
  sim.analysis_template.reset();  // templateRef removed from the profile
  sim.Step(verdicts);
  EXPECT_FALSE(sim.status().analysis_template.has_value());
}

TEST(ReconcileTest, ScaledByAPersonUpDownAndToZero) {
  Sim sim(4);
  TimeVerdictSource verdicts;
  Drive(sim, verdicts, [&] { return sim.status().current_step == 1; });  // 10%: 3 + 1
  ASSERT_EQ(sim.Total(), 4);
  // `kubectl scale --replicas=6`: the app's total is 6.
  sim.target()["spec"]["replicas"] = 6;
  sim.Step(verdicts);
  EXPECT_EQ(sim.status().total_replicas, 6);
  EXPECT_EQ(sim.Total(), 6);
  EXPECT_EQ(sim.CanaryReplicas(), 1);
  EXPECT_THAT(Reasons(sim.events()), ::testing::Contains("ReplicasFollowed"));
  sim.target()["spec"]["replicas"] = 2;
  sim.Step(verdicts);
  EXPECT_EQ(sim.Total(), 2);
  // To zero: everything goes to zero and the rollout holds, however long.
  sim.target()["spec"]["replicas"] = 0;
  sim.Step(verdicts);
  EXPECT_EQ(sim.Total(), 0);
  EXPECT_EQ(sim.phase(), Phase::kProgressing);
  EXPECT_THAT(Reasons(sim.events()), ::testing::Contains("ScaledToZero"));
  for (int i = 0; i < 10; ++i) {
    sim.now() += absl::Minutes(10);
    sim.Step(verdicts);
  }
  EXPECT_EQ(sim.phase(), Phase::kProgressing);
  EXPECT_EQ(sim.status().current_step, 1);
  EXPECT_EQ(sim.Total(), 0);
  EXPECT_THAT(sim.Cond(kConditionProgressing).message, HasSubstr("held"));
  // Pods again: the step's window starts over on them.
  sim.target()["spec"]["replicas"] = 3;
  sim.Step(verdicts);
  EXPECT_EQ(sim.Total(), 3);
  EXPECT_EQ(sim.CanaryReplicas(), 1);
  EXPECT_EQ(sim.status().step_start_time, sim.time());
  Drive(
      sim, verdicts, [&] { return sim.phase() == Phase::kPromoted; }, 300);
  EXPECT_EQ(sim.TargetReplicas(), 3);
}

TEST(ReconcileTest, HpaFixedScalesTheTargetBack) {
  Json spec = SpecJson();
  spec["rollout"]["hpaPolicy"] = "Fixed";
  Sim sim(10, spec);
  TimeVerdictSource verdicts;
  Drive(sim, verdicts, [&] { return sim.status().current_step == 2; });
  sim.target()["spec"]["replicas"] = 8;
  Plan p = sim.Step(verdicts);
  EXPECT_EQ(sim.status().total_replicas, 10);
  EXPECT_EQ(sim.TargetReplicas(), 5);
  const Action* scale = Find(p, ActionType::kScaleTarget);
  ASSERT_NE(scale, nullptr);
  EXPECT_EQ(scale->replicas, 5);
}

TEST(ReconcileTest, HpaPausePausesWhileTheHpaExists) {
  Json spec = SpecJson();
  spec["rollout"]["hpaPolicy"] = "Pause";
  Sim sim(10, spec);
  TimeVerdictSource verdicts;
  Drive(sim, verdicts, [&] { return sim.status().current_step == 1; });
  sim.hpa() = "web-hpa";
  sim.Step(verdicts);
  EXPECT_EQ(sim.phase(), Phase::kPaused);
  EXPECT_THAT(sim.status().last_transition->message, HasSubstr("HorizontalPodAutoscaler web-hpa"));
  sim.hpa().clear();
  sim.Step(verdicts);
  EXPECT_EQ(sim.phase(), Phase::kProgressing);
}

// --- spec problems and changes -------------------------------------------------------------

TEST(ReconcileTest, InvalidSpecFailsBeforeAnythingIsTouched) {
  Json spec = SpecJson();
  spec["tuning"]["sysctls"]["vm.swappiness"] = "1";
  Sim sim(3, spec);
  TimeVerdictSource verdicts;
  Plan p = sim.Step(verdicts);
  EXPECT_EQ(sim.phase(), Phase::kFailed);
  const Condition c = sim.Cond(kConditionInvalidSpec);
  EXPECT_EQ(c.status, "True");
  EXPECT_THAT(c.message, HasSubstr("vm.swappiness"));
  for (const Action& a : p.actions) {
    EXPECT_TRUE(a.type == ActionType::kRecordEvent || a.type == ActionType::kRequeueAfter)
        << DescribeAction(a);
  }
  EXPECT_EQ(sim.events().size(), 1u);
  EXPECT_EQ(sim.events()[0].event_type, "Warning");
  // Reconciling again neither transitions nor repeats the Event.
  p = sim.Step(verdicts);
  EXPECT_FALSE(p.status_changed);
  EXPECT_EQ(sim.events().size(), 1u);
  // Fixed: a new rollout starts.
  sim.EditSpec([](Json& s) { s["tuning"]["sysctls"].erase("vm.swappiness"); });
  sim.Step(verdicts);
  EXPECT_EQ(sim.phase(), Phase::kPending);
  sim.Step(verdicts);
  EXPECT_EQ(sim.phase(), Phase::kEnrolling);
}

TEST(ReconcileTest, ANamespaceThatHasNotOptedInIsNeverTouched) {
  Sim sim(3);
  const Json before = sim.target();
  TimeVerdictSource verdicts;
  sim.namespace_refusal = "namespace shop has not opted in to Booster: label it";
  for (int i = 0; i < 3; ++i) {
    Plan p = sim.Step(verdicts);
    for (const Action& a : p.actions) {
      EXPECT_TRUE(a.type == ActionType::kAddFinalizer || a.type == ActionType::kRecordEvent ||
                  a.type == ActionType::kRequeueAfter)
          << DescribeAction(a);
    }
  }
  EXPECT_EQ(sim.phase(), Phase::kFailed);
  EXPECT_EQ(sim.status().last_transition->reason, "NamespaceNotEnabled");
  const Condition c = sim.Cond(kConditionNamespaceEnabled);
  EXPECT_EQ(c.status, "False");
  EXPECT_EQ(c.reason, "NotOptedIn");
  EXPECT_EQ(sim.target(), before);
  // Opted in: a new rollout starts by itself.
  sim.namespace_refusal.clear();
  Drive(sim, verdicts, [&] { return sim.phase() == Phase::kProgressing; });
  EXPECT_EQ(sim.Cond(kConditionNamespaceEnabled).status, "True");
}

TEST(ReconcileTest, ANamespaceThatOptsOutMidRolloutHoldsItThenContinues) {
  Sim sim(10);
  TimeVerdictSource verdicts;
  Drive(sim, verdicts, [&] { return sim.status().current_step == 2; });
  const Json target = sim.target();
  const Json canary = sim.canary();
  sim.namespace_refusal = "namespace shop has not opted in to Booster";
  const size_t events = sim.events().size();
  for (int i = 0; i < 5; ++i) {
    sim.now() += absl::Minutes(1);
    sim.Step(verdicts);
  }
  EXPECT_EQ(sim.phase(), Phase::kProgressing);
  EXPECT_EQ(sim.status().current_step, 2);
  EXPECT_EQ(sim.target(), target) << "held: nothing touched";
  EXPECT_EQ(sim.canary(), canary);
  EXPECT_EQ(sim.events().size(), events + 1) << "one Warning, not one per pass";
  EXPECT_EQ(sim.events().back().reason, "NamespaceNotEnabled");
  sim.namespace_refusal.clear();
  Drive(sim, verdicts, [&] { return sim.phase() == Phase::kPromoted; });
}

TEST(ReconcileTest, InvalidSpecMidRolloutHoldsThenContinues) {
  Sim sim(10);
  TimeVerdictSource verdicts;
  Drive(sim, verdicts, [&] { return sim.status().current_step == 2; });
  sim.EditSpec([](Json& s) { s["rollout"]["steps"] = Json::array({10, 50}); });
  for (int i = 0; i < 20; ++i) {
    Plan p = sim.Step(verdicts);
    for (const Action& a : p.actions) {
      EXPECT_TRUE(a.type == ActionType::kRecordEvent || a.type == ActionType::kRequeueAfter)
          << DescribeAction(a);
    }
    sim.now() += absl::Minutes(1);
  }
  EXPECT_EQ(sim.phase(), Phase::kProgressing);
  EXPECT_EQ(sim.CanaryReplicas(), 5);
  sim.EditSpec([](Json& s) { s["rollout"]["steps"] = Json::array({10, 50, 100}); });
  Drive(
      sim, verdicts, [&] { return sim.phase() == Phase::kPromoted; }, 300);
}

TEST(ReconcileTest, TuningChangedMidRolloutRestartsAtStepOne) {
  Sim sim(10);
  TimeVerdictSource verdicts;
  Drive(sim, verdicts, [&] { return sim.status().current_step == 2; });
  const std::string old_marker = TemplateMarker(sim.canary()["spec"]["template"]);
  sim.EditSpec([](Json& s) { s["tuning"]["runtime"]["preload"]["listenBacklog"] = 1024; });
  sim.Step(verdicts);
  EXPECT_EQ(sim.phase(), Phase::kProgressing);
  EXPECT_EQ(sim.status().current_step, 1);
  EXPECT_EQ(sim.CanaryReplicas(), 1);
  EXPECT_NE(TemplateMarker(sim.canary()["spec"]["template"]), old_marker);
  EXPECT_EQ(sim.status().last_transition->reason, "RolloutRestarted");
}

TEST(ReconcileTest, ChangingTheTuningAfterPromotionStartsANewRolloutFromThePromotedBaseline) {
  Sim sim(4);
  TimeVerdictSource verdicts;
  Drive(
      sim, verdicts, [&] { return sim.phase() == Phase::kPromoted; }, 300);
  const Json promoted = sim.target()["spec"]["template"];
  sim.EditSpec([](Json& s) { s["tuning"]["runtime"]["preload"]["listenBacklog"] = 1024; });
  Drive(sim, verdicts, [&] { return sim.status().current_step == 1; });
  // The baseline keeps running the promoted tuning; the canary compares the new one.
  EXPECT_EQ(sim.target()["spec"]["template"], promoted);
  EXPECT_EQ(TeamTemplate(sim.canary()["spec"]["template"], MutationOptions{}), OriginalTemplate());
  Drive(
      sim, verdicts, [&] { return sim.phase() == Phase::kPromoted; }, 300);
  const Json& env = sim.target()["spec"]["template"]["spec"]["containers"][0]["env"];
  bool found = false;
  for (const Json& e : env) {
    if (e["name"] == "BOOSTER_LISTEN_BACKLOG") found = e["value"] == "1024";
  }
  EXPECT_TRUE(found);
}

TEST(ReconcileTest, ContainerMissingFromTheTargetFailsWithoutWriting) {
  Json spec = SpecJson();
  spec["targetRef"]["containers"] = Json::array({"sidecar"});
  Sim sim(3, spec);
  TimeVerdictSource verdicts;
  sim.Step(verdicts);
  sim.Step(verdicts);
  EXPECT_EQ(sim.phase(), Phase::kFailed);
  EXPECT_EQ(sim.status().last_transition->reason, "TemplateMismatch");
  EXPECT_EQ(sim.target()["spec"]["template"], OriginalTemplate());
}

// --- deletion (finalizer) ------------------------------------------------------------------

TEST(ReconcileTest, DeletingTheProfileMidRolloutRestoresTheDeploymentExactly) {
  for (Phase stop : {Phase::kEnrolling, Phase::kProgressing, Phase::kPromoting, Phase::kPromoted,
                     Phase::kRolledBack}) {
    Sim sim(10);
    const Json before = sim.target();
    ScriptedVerdictSource verdicts(
        {MakeVerdict(stop == Phase::kRolledBack ? VerdictKind::kFail : VerdictKind::kPass)});
    Drive(
        sim, verdicts, [&] { return sim.phase() == stop; }, 300);
    sim.profile()["metadata"]["deletionTimestamp"] = "2027-01-01T00:00:00Z";
    for (int i = 0; i < 20 && !sim.profile_gone(); ++i) {
      sim.Step(verdicts, true, SIZE_MAX, [&] { EXPECT_LE(sim.Total(), 10); });
    }
    EXPECT_TRUE(sim.profile_gone()) << PhaseName(stop);
    EXPECT_TRUE(sim.canary().is_null());
    EXPECT_EQ(sim.target()["spec"], before["spec"]) << PhaseName(stop);
    EXPECT_EQ(sim.target()["metadata"].value("annotations", Json::object()), Json::object())
        << PhaseName(stop);
  }
}

// --- ownership: foreign objects ------------------------------------------------------------

TEST(OwnershipTest, ACanaryNameTakenByAUsersDeploymentFailsBeforeAnythingIsTouched) {
  Sim sim(4);
  sim.canary() = ForeignDeployment();
  const Json target_before = sim.target();
  const Json foreign = sim.canary();
  ScriptedVerdictSource pass({MakeVerdict(VerdictKind::kPass)});
  for (int i = 0; i < 5; ++i) sim.Step(pass);
  EXPECT_EQ(sim.phase(), Phase::kFailed);
  EXPECT_EQ(sim.status().last_transition->reason, "CanaryNameTaken");
  const Condition c = sim.Cond(kConditionConflict);
  EXPECT_EQ(c.status, "True");
  EXPECT_EQ(c.reason, "CanaryNameTaken");
  EXPECT_THAT(c.message, HasSubstr("web-booster"));
  EXPECT_THAT(c.message, HasSubstr("no owner"));
  EXPECT_THAT(c.message, HasSubstr("Rename or delete"));
  EXPECT_THAT(Reasons(sim.events()), ::testing::Contains("CanaryNameTaken"));
  EXPECT_EQ(sim.target(), target_before);  // not a replica, not an annotation
  EXPECT_EQ(sim.canary(), foreign);
  // Deleting the profile leaves the user's Deployment and the target as they were.
  sim.profile()["metadata"]["deletionTimestamp"] = "2027-01-01T00:00:00Z";
  for (int i = 0; i < 5 && !sim.profile_gone(); ++i) sim.Step(pass);
  EXPECT_TRUE(sim.profile_gone());
  EXPECT_EQ(sim.canary(), foreign);
  EXPECT_EQ(sim.target(), target_before);
}

TEST(OwnershipTest, TheRolloutStartsByItselfOnceTheNameIsFree) {
  Sim sim(4);
  sim.canary() = ForeignDeployment();
  ScriptedVerdictSource pass({MakeVerdict(VerdictKind::kPass)});
  for (int i = 0; i < 3; ++i) sim.Step(pass);
  ASSERT_EQ(sim.phase(), Phase::kFailed);
  sim.canary() = nullptr;  // the user renamed or deleted it
  Drive(sim, pass, [&] { return sim.phase() == Phase::kPromoted; });
  EXPECT_THAT(Reasons(sim.events()), ::testing::Contains("ConflictResolved"));
  EXPECT_EQ(sim.Cond(kConditionConflict).status, "False");
}

TEST(OwnershipTest, ACanaryReplacedByAForeignDeploymentMidRolloutIsLeftAloneAndTheTargetRestored) {
  Sim sim(10);
  const Json before = sim.target();
  ScriptedVerdictSource wait({MakeVerdict(VerdictKind::kWait)});
  Drive(sim, wait, [&] { return sim.phase() == Phase::kProgressing && !sim.canary().is_null(); });
  sim.Step(wait);
  ASSERT_EQ(sim.TargetReplicas(), 9);
  // Someone deletes our canary and creates their own Deployment under its name.
  sim.canary() = ForeignDeployment();
  const Json foreign = sim.canary();
  Drive(sim, wait, [&] { return sim.phase() == Phase::kRolledBack; });
  EXPECT_EQ(sim.canary(), foreign);
  EXPECT_EQ(sim.target()["spec"], before["spec"]);
  EXPECT_EQ(sim.target()["metadata"].value("annotations", Json::object()), Json::object());
}

TEST(OwnershipTest, TheCanaryOfAnotherProfileThatIsLettingGoIsWaitedFor) {
  Sim sim(4);
  sim.canary() = ForeignDeployment();
  sim.canary()["metadata"]["ownerReferences"] = Json::array(
      {{{"apiVersion", kApiVersion}, {"kind", kKind}, {"name", "old"}, {"uid", "old-uid"},
        {"controller", true}}});
  ScriptedVerdictSource pass({MakeVerdict(VerdictKind::kPass)});
  sim.Step(pass);
  sim.Step(pass);
  EXPECT_EQ(sim.phase(), Phase::kPending);
  EXPECT_THAT(sim.Cond(kConditionConflict).message, HasSubstr("BoosterProfile old"));
  sim.canary() = nullptr;  // the garbage collector took it
  Drive(sim, pass, [&] { return sim.phase() == Phase::kPromoted; });
}

TEST(OwnershipTest, EveryCanaryWriteIsConditionalOnItsUid) {
  Sim sim(10);
  ScriptedVerdictSource pass({MakeVerdict(VerdictKind::kPass)});
  std::vector<Action> writes;
  for (int i = 0; i < 200 && sim.phase() != Phase::kPromoted; ++i) {
    Plan p = sim.Step(pass);
    for (const Action& a : p.actions) {
      if (a.type == ActionType::kPatchCanary || a.type == ActionType::kDeleteCanary ||
          a.type == ActionType::kCreateCanary) {
        writes.push_back(a);
      }
    }
    sim.now() += absl::Seconds(30);
  }
  ASSERT_EQ(sim.phase(), Phase::kPromoted);
  int patched = 0, deleted = 0, created = 0;
  for (const Action& a : writes) {
    if (a.type == ActionType::kPatchCanary) {
      ++patched;
      EXPECT_EQ(a.body[0], Json({{"op", "test"}, {"path", "/metadata/uid"}, {"value", "canary-uid"}}));
    } else if (a.type == ActionType::kDeleteCanary) {
      ++deleted;
      EXPECT_EQ(a.uid, "canary-uid");
    } else {
      ++created;
    }
  }
  EXPECT_EQ(created, 1);
  EXPECT_GE(patched, 2);  // scaled up step by step, then down during promotion
  EXPECT_EQ(deleted, 1);
}

// --- ownership: one Deployment, one rollout ------------------------------------------------

// Several profiles over one target and one canary name, as the API server would hold them:
// every write conditional as the reconciler sends it (a failed test or precondition ends
// that reconcile), and checks on every write that nobody touches what it does not own.
class World {
 public:
  explicit World(int32_t n)
      : n_(n),
        api_(testing::DeploymentObject("web", "shop", "target-uid", n, OriginalTemplate()),
             {.canary_uid = [this] { return absl::StrCat("canary-", ++uids_); }}) {}

  int Add(const std::string& name, bool with_finalizer = true) {
    Json p = testing::ProfileObject(name, "shop", absl::StrCat(name, "-uid-", ++uids_), SpecJson());
    if (!with_finalizer) p["metadata"].erase("finalizers");
    profiles_.push_back(p);
    gone_.push_back(false);
    return static_cast<int>(profiles_.size()) - 1;
  }
  Json& target() { return api_.target(); }
  Json& canary() { return api_.canary(); }
  Json& profile(int i) { return profiles_[i]; }
  bool gone(int i) const { return gone_[i]; }
  absl::Time& now() { return now_; }
  RolloutStatus status(int i) const { return ParseProfile(profiles_[i])->status; }
  Phase phase(int i) const { return status(i).phase; }
  std::string uid(int i) const { return profiles_[i]["metadata"]["uid"].get<std::string>(); }
  int32_t n() const { return n_; }
  void Delete(int i) { profiles_[i]["metadata"]["deletionTimestamp"] = "2027-01-01T00:00:00Z"; }
  // Replicas requested by the target and by a canary some profile owns.
  int32_t Requested() const {
    const Json& c = api_.canary();
    return testing::SpecReplicas(api_.target()) +
           (c.is_null() || Owner(c).empty() ? 0 : testing::SpecReplicas(c));
  }

  // What the informers show every profile: the one target and the one canary name.
  Observations Observe(int) const {
    return Observations{ObserveDeployment(api_.target()), ObserveDeployment(api_.canary()), ""};
  }
  Plan PlanFor(int i, const Observations& obs, VerdictSource& verdicts) const {
    absl::StatusOr<Profile> p = ParseProfile(profiles_[i]);
    EXPECT_TRUE(p.ok()) << p.status();
    return Reconcile(*p, obs, verdicts, now_, MutationOptions{});
  }
  // Status first, then up to `execute` actions; stops at the first refused write.
  // Returns whether every action went through.
  bool Run(int i, const Plan& plan, size_t execute = SIZE_MAX) {
    if (gone_[i]) return true;
    profiles_[i]["status"] = StatusToJson(plan.status);
    for (size_t k = 0; k < plan.actions.size() && k < execute; ++k) {
      if (!Execute(i, plan.actions[k])) return false;
      EXPECT_LE(Requested(), n()) << DescribeAction(plan.actions[k]);
    }
    return true;
  }
  bool Step(int i, VerdictSource& verdicts, size_t execute = SIZE_MAX) {
    return Run(i, PlanFor(i, Observe(i), verdicts), execute);
  }
  void Settle() { api_.SettleAll(); }

  static std::string Owner(const Json& d) { return testing::ProfileOwnerUid(d); }
  std::string Holder() const {
    return api_.target()["metadata"]
        .value("annotations", Json::object())
        .value(kHolderUidAnnotation, "");
  }

  int writes_refused = 0;

 private:
  // Any write the API server refuses (a failed test op or precondition, a name taken, an
  // object gone) ends the pass; a delete of what is already gone is done.
  bool Execute(int i, const Action& a) {
    const std::string me = uid(i);
    const std::string holder_before = Holder();
    const std::string canary_owner = canary().is_null() ? "" : Owner(canary());
    const absl::Status s = api_.Execute(a, profiles_[i]);
    if (a.type == ActionType::kDeleteCanary && absl::IsNotFound(s)) return true;  // 404
    if (!s.ok()) {
      ++writes_refused;
      return false;
    }
    switch (a.type) {
      case ActionType::kRemoveFinalizer:
        gone_[i] = true;
        break;
      case ActionType::kEnrollTarget:
      case ActionType::kScaleTarget:
      case ActionType::kPromoteTemplate:
      case ActionType::kRestoreTemplate:
        // Only the holder writes the target, or a profile claiming a target nobody holds.
        EXPECT_TRUE(holder_before.empty() || holder_before == me)
            << DescribeAction(a) << " by " << me << " on a target held by " << holder_before;
        EXPECT_TRUE(Holder().empty() || Holder() == me) << DescribeAction(a);
        break;
      case ActionType::kCreateCanary:
        testing::Settle(canary());
        EXPECT_EQ(Owner(canary()), me);
        EXPECT_EQ(Holder(), me) << "a canary created for a target its profile does not hold";
        break;
      case ActionType::kPatchCanary:
        EXPECT_EQ(canary_owner, me) << "wrote a canary that is not its own";
        break;
      case ActionType::kDeleteCanary:
        EXPECT_EQ(canary_owner, me) << "deleted a canary that is not its own";
        break;
      default:
        break;
    }
    return true;
  }

  int32_t n_;
  int uids_ = 0;
  testing::DeploymentSim api_;
  absl::Time now_ = absl::FromUnixSeconds(1'800'000'000);
  std::vector<Json> profiles_;
  std::vector<bool> gone_;
};

TEST(OwnershipTest, ASecondProfileOnAHeldTargetWaitsAndStartsWhenTheHolderIsDeleted) {
  World w(4);
  const Json original = w.target();
  const int a = w.Add("first");
  ScriptedVerdictSource pass({MakeVerdict(VerdictKind::kPass)});
  for (int i = 0; i < 3; ++i, w.Settle()) w.Step(a, pass);
  ASSERT_EQ(w.phase(a), Phase::kProgressing);
  EXPECT_EQ(w.Holder(), w.uid(a));
  const int b = w.Add("second");
  for (int i = 0; i < 200 && w.phase(a) != Phase::kPromoted; ++i, w.Settle()) {
    w.Step(b, pass);
    w.Step(a, pass);
    w.now() += absl::Seconds(30);
  }
  ASSERT_EQ(w.phase(a), Phase::kPromoted);
  // B did nothing and says why, naming the holder.
  EXPECT_EQ(w.phase(b), Phase::kPending);
  RolloutStatus sb = w.status(b);
  const Condition* c = FindCondition(sb.conditions, kConditionConflict);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->reason, "TargetHeld");
  EXPECT_THAT(c->message, HasSubstr("BoosterProfile first"));
  EXPECT_THAT(c->message, HasSubstr(w.uid(a)));
  EXPECT_EQ(sb.last_transition->reason, "TargetHeld");
  // Deleting B changes nothing of A's.
  const Json promoted = w.target();
  w.Delete(b);
  for (int i = 0; i < 5 && !w.gone(b); ++i) w.Step(b, pass);
  EXPECT_TRUE(w.gone(b));
  EXPECT_EQ(w.target(), promoted);
  // A new B waits again; deleting A gives the target back, and B starts by itself.
  const int b2 = w.Add("second");
  w.Step(b2, pass);
  w.Step(b2, pass);
  EXPECT_EQ(w.phase(b2), Phase::kPending);
  w.Delete(a);
  for (int i = 0; i < 10 && !w.gone(a); ++i, w.Settle()) w.Step(a, pass);
  ASSERT_TRUE(w.gone(a));
  EXPECT_EQ(w.target()["spec"], original["spec"]);
  for (int i = 0; i < 200 && w.phase(b2) != Phase::kPromoted; ++i, w.Settle()) {
    w.Step(b2, pass);
    w.now() += absl::Seconds(30);
  }
  EXPECT_EQ(w.phase(b2), Phase::kPromoted);
  EXPECT_EQ(w.Holder(), w.uid(b2));
  w.Delete(b2);
  for (int i = 0; i < 10 && !w.gone(b2); ++i, w.Settle()) w.Step(b2, pass);
  EXPECT_EQ(w.target()["spec"], original["spec"]);
  EXPECT_EQ(w.target()["metadata"].value("annotations", Json::object()), Json::object());
  EXPECT_TRUE(w.canary().is_null());
}

TEST(OwnershipTest, TwoProfilesClaimingAtOnceLeaveOneHolderAndTheOtherBacksOff) {
  World w(4);
  const int a = w.Add("a", /*with_finalizer=*/false);
  const int b = w.Add("b", /*with_finalizer=*/false);
  ScriptedVerdictSource wait({MakeVerdict(VerdictKind::kWait)});
  // Both finalizers first, so the next pass of each goes for the target.
  w.Step(a, wait);
  w.Step(b, wait);
  // Both plan on the same view of an unheld target, then both write.
  Plan pa = w.PlanFor(a, w.Observe(a), wait);
  Plan pb = w.PlanFor(b, w.Observe(b), wait);
  ASSERT_EQ(pa.status.phase, Phase::kEnrolling);
  ASSERT_EQ(pb.status.phase, Phase::kEnrolling);
  EXPECT_TRUE(w.Run(a, pa));
  EXPECT_FALSE(w.Run(b, pb));  // its claim tests a resourceVersion that moved on
  EXPECT_EQ(w.Holder(), w.uid(a));
  // B's next pass sees the holder and goes back to Pending without a write.
  w.Settle();
  EXPECT_TRUE(w.Step(b, wait));
  EXPECT_EQ(w.phase(b), Phase::kPending);
  EXPECT_EQ(w.Holder(), w.uid(a));
}

TEST(OwnershipTest, ChangingTheTargetGivesTheOldOneBackFirst) {
  Sim sim(4);
  const Json before = sim.target();
  ScriptedVerdictSource wait({MakeVerdict(VerdictKind::kWait)});
  Drive(sim, wait, [&] { return sim.phase() == Phase::kProgressing && !sim.canary().is_null(); });
  sim.Step(wait);
  ASSERT_EQ(sim.TargetReplicas(), 3);
  // spec.targetRef now names a Deployment that does not exist yet: the old target must not
  // stay enrolled, scaled down and held.
  sim.EditSpec([](Json& s) { s["targetRef"]["name"] = "api"; });
  for (int i = 0; i < 5; ++i) {
    Plan p = sim.Plan1(wait);
    absl::StatusOr<Profile> prof = ParseProfile(sim.profile());
    Observations obs{ObserveDeployment(nullptr), ObserveDeployment(sim.canary()), ""};
    obs.previous_target = ObserveDeployment(sim.target());
    p = Reconcile(*prof, obs, wait, sim.now(), MutationOptions{});
    sim.profile()["status"] = StatusToJson(p.status);
    for (const Action& a : p.actions) sim.Execute(a);
    sim.SettleAll();
  }
  EXPECT_TRUE(sim.canary().is_null());
  EXPECT_EQ(sim.target()["spec"], before["spec"]);
  EXPECT_EQ(sim.target()["metadata"].value("annotations", Json::object()), Json::object());
  RolloutStatus s = sim.status();
  EXPECT_EQ(s.phase, Phase::kPending);
  EXPECT_EQ(s.target_name, "");
  EXPECT_THAT(Reasons(sim.events()), ::testing::Contains("TargetChanged"));
}

TEST(OwnershipTest, AProfileThatNeverEnrolledLeavesTheHoldersTargetAloneWhenDeleted) {
  World w(4);
  const int a = w.Add("a");
  ScriptedVerdictSource pass({MakeVerdict(VerdictKind::kPass)});
  for (int i = 0; i < 6; ++i, w.Settle()) w.Step(a, pass);
  ASSERT_NE(w.Holder(), "");
  const int b = w.Add("b");
  w.Delete(b);  // deleted before it ever ran: no status, no target uid
  const Json target = w.target(), canary = w.canary();
  for (int i = 0; i < 5 && !w.gone(b); ++i) w.Step(b, pass);
  EXPECT_TRUE(w.gone(b));
  EXPECT_EQ(w.target(), target);
  EXPECT_EQ(w.canary(), canary);
}

// --- the table: every phase x every kind of observation ------------------------------------

enum class Obs {
  kSteady,
  kTargetDeleted,
  kTargetReplaced,
  kTemplateEdited,
  kExternalScale,
  kInvalidSpec,
  kDeleting,
  kAbort,
  kPromoteNow,
  kPause,
  kDeadlinePassed,
  kHeldByOther,
  kForeignCanary,
  kTemplateReplaced,
  kScaledToZero,
};

constexpr Phase kAllPhases[] = {Phase::kPending,     Phase::kEnrolling,  Phase::kProgressing,
                                Phase::kPaused,      Phase::kPromoting,  Phase::kPromoted,
                                Phase::kRollingBack, Phase::kRolledBack, Phase::kFailed};

// A simulation resting in `phase`: transitional phases with their actions carried out but
// the pods not yet available; Progressing and Paused at step 1 with the pods ready.
Sim SimIn(Phase phase) {
  Json spec = SpecJson();
  if (phase == Phase::kFailed) spec["targetRef"]["containers"] = Json::array({"nope"});
  Sim sim(10, spec);
  ScriptedVerdictSource pass({MakeVerdict(VerdictKind::kPass)});
  ScriptedVerdictSource wait({MakeVerdict(VerdictKind::kWait)});
  ScriptedVerdictSource fail({MakeVerdict(VerdictKind::kFail)});
  switch (phase) {
    case Phase::kPending:
      break;
    case Phase::kEnrolling:
      sim.Step(wait, false);
      sim.Step(wait, false);
      sim.Unsettle(sim.target());
      break;
    case Phase::kProgressing:
      Drive(sim, wait, [&] { return sim.phase() == Phase::kProgressing; });
      sim.Step(wait);
      break;
    case Phase::kPaused:
      Drive(sim, wait, [&] { return sim.phase() == Phase::kProgressing; });
      sim.SetAnnotation(kAnnotationPaused, "true");
      sim.Step(wait);
      break;
    case Phase::kPromoting:
      Drive(sim, pass, [&] { return sim.phase() == Phase::kPromoting; });
      sim.Step(wait, false);
      sim.Unsettle(sim.target());
      break;
    case Phase::kPromoted:
      Drive(sim, pass, [&] { return sim.phase() == Phase::kPromoted; });
      break;
    case Phase::kRollingBack:
      Drive(sim, wait, [&] { return sim.phase() == Phase::kProgressing; });
      sim.Step(wait);
      sim.Step(fail, false);  // rollback actions carried out, pods not back yet
      sim.Unsettle(sim.target());
      break;
    case Phase::kRolledBack:
      Drive(sim, fail, [&] { return sim.phase() == Phase::kRolledBack; });
      break;
    case Phase::kFailed:
      Drive(sim, wait, [&] { return sim.phase() == Phase::kFailed; });
      break;
  }
  EXPECT_EQ(sim.phase(), phase) << "fixture for " << PhaseName(phase);
  return sim;
}

void Observe(Sim& sim, Obs obs) {
  switch (obs) {
    case Obs::kSteady:
      break;
    case Obs::kTargetDeleted:
      sim.target() = nullptr;
      break;
    case Obs::kTargetReplaced:
      sim.target()["metadata"]["uid"] = "new-uid";
      break;
    case Obs::kTemplateEdited:
      sim.target()["spec"]["template"]["spec"]["containers"][0]["image"] = "web:2";
      break;
    case Obs::kExternalScale:
      sim.target()["spec"]["replicas"] = sim.TargetReplicas() + 5;
      break;
    case Obs::kInvalidSpec:
      sim.EditSpec([](Json& s) { s["rollout"]["steps"] = Json::array({50, 10}); });
      break;
    case Obs::kDeleting:
      sim.profile()["metadata"]["deletionTimestamp"] = "2027-01-01T00:00:00Z";
      break;
    case Obs::kAbort:
      sim.SetAnnotation(kAnnotationAbort, "t1");
      break;
    case Obs::kPromoteNow:
      sim.SetAnnotation(kAnnotationPromoteNow, "t1");
      break;
    case Obs::kPause:
      sim.SetAnnotation(kAnnotationPaused, "true");
      break;
    case Obs::kDeadlinePassed:
      sim.now() += absl::Minutes(6);
      sim.Unsettle(sim.target());
      if (!sim.canary().is_null()) sim.Unsettle(sim.canary());
      break;
    case Obs::kHeldByOther:
      sim.target()["metadata"]["annotations"][kHolderAnnotation] = "other";
      sim.target()["metadata"]["annotations"][kHolderUidAnnotation] = "other-uid";
      break;
    case Obs::kForeignCanary:
      sim.canary() = ForeignDeployment();
      break;
    case Obs::kTemplateReplaced: {
      // `kubectl replace` with the team's manifest: their template without Booster's layer.
      Json theirs = OriginalTemplate();
      theirs["spec"]["containers"][0]["image"] = "web:9";
      sim.target()["spec"]["template"] = theirs;
      break;
    }
    case Obs::kScaledToZero:
      sim.target()["spec"]["replicas"] = 0;
      break;
  }
}

bool InFlightPhase(Phase p) {
  return p == Phase::kEnrolling || p == Phase::kProgressing || p == Phase::kPaused ||
         p == Phase::kPromoting || p == Phase::kRollingBack;
}

bool InFlightForTest(Phase p) {
  return p == Phase::kEnrolling || p == Phase::kProgressing || p == Phase::kPaused ||
         p == Phase::kPromoting || p == Phase::kRollingBack;
}

struct Row {
  Obs obs;
  const char* name;
  // Expected phase after one reconcile, in the order of kAllPhases.
  Phase next[9];
};

// clang-format off
constexpr Phase P = Phase::kPending, E = Phase::kEnrolling, G = Phase::kProgressing,
                U = Phase::kPaused, M = Phase::kPromoting, D = Phase::kPromoted,
                R = Phase::kRollingBack, B = Phase::kRolledBack, F = Phase::kFailed;

//                                     Pending Enroll Progr Paused Promoting Promoted RollingB RolledB Failed
const Row kTable[] = {
    {Obs::kSteady, "Steady",           {E, E, G, U, M, D, R, B, F}},
    {Obs::kTargetDeleted, "Deleted",   {P, F, F, F, F, D, F, B, F}},
    {Obs::kTargetReplaced, "Replaced", {E, F, F, F, F, D, F, B, F}},
    {Obs::kTemplateEdited, "Edited",   {E, E, G, U, G, D, R, B, P}},
    {Obs::kExternalScale, "Scaled",    {E, E, G, U, M, D, R, B, F}},
    {Obs::kInvalidSpec, "Invalid",     {F, E, G, U, M, F, R, F, F}},
    {Obs::kDeleting, "Deleting",       {P, E, G, U, M, D, R, B, F}},
    {Obs::kAbort, "Abort",             {E, R, R, R, R, D, R, B, F}},
    {Obs::kPromoteNow, "PromoteNow",   {E, E, M, M, M, D, R, B, F}},
    {Obs::kPause, "Pause",             {E, E, U, U, M, D, R, B, F}},
    {Obs::kDeadlinePassed, "Deadline", {E, R, R, U, R, D, R, B, F}},
    {Obs::kHeldByOther, "HeldByOther", {P, P, F, F, F, D, F, B, F}},
    {Obs::kForeignCanary, "ForeignCanary", {F, R, R, R, R, D, R, B, F}},
    {Obs::kTemplateReplaced, "Replaced by the team", {E, E, G, U, G, D, R, B, P}},
    {Obs::kScaledToZero, "ScaledToZero", {E, E, G, U, M, D, R, B, F}},
};
// clang-format on

TEST(ReconcileTableTest, EveryPhaseUnderEveryObservation) {
  for (const Row& row : kTable) {
    for (size_t i = 0; i < 9; ++i) {
      const Phase from = kAllPhases[i];
      SCOPED_TRACE(absl::StrCat(PhaseName(from), " x ", row.name));
      Sim sim = SimIn(from);
      const RolloutStatus before = sim.status();
      Observe(sim, row.obs);
      ScriptedVerdictSource wait({MakeVerdict(VerdictKind::kWait)});
      Plan p = sim.Plan1(wait);
      EXPECT_EQ(PhaseName(p.status.phase), PhaseName(row.next[i]));
      EXPECT_EQ(p.status.observed_generation,
                sim.profile()["metadata"]["generation"].get<int64_t>());
      // A transition is recorded with a reason and announced by an Event.
      if (p.status.phase != before.phase) {
        ASSERT_TRUE(p.status.last_transition.has_value());
        EXPECT_EQ(p.status.last_transition->to, PhaseName(p.status.phase));
        EXPECT_FALSE(p.status.last_transition->reason.empty());
        EXPECT_TRUE(Has(p, ActionType::kRecordEvent));
        EXPECT_TRUE(p.status_changed);
      }
      // The profile is never dropped while the target still carries Booster parts.
      if (Has(p, ActionType::kRemoveFinalizer)) {
        EXPECT_TRUE(sim.target().is_null() || !IsEnrolled(sim.target()["spec"]["template"]));
        EXPECT_TRUE(sim.canary().is_null());
      }
      // Invalid spec mid-rollout, and a deleted target, change nothing on the target.
      // (A Pending profile has not met its target yet: any uid is the right one.)
      if ((row.obs == Obs::kInvalidSpec && InFlightForTest(from)) ||
          row.obs == Obs::kTargetDeleted ||
          (row.obs == Obs::kTargetReplaced && from != Phase::kPending)) {
        EXPECT_FALSE(Has(p, ActionType::kScaleTarget));
        EXPECT_FALSE(Has(p, ActionType::kEnrollTarget));
        EXPECT_FALSE(Has(p, ActionType::kPromoteTemplate));
      }
      // Ownership: a target held by another profile is never written; a Deployment at
      // the canary's name that is not ours is never written or deleted.
      if (row.obs == Obs::kHeldByOther) {
        for (const Action& a : p.actions) {
          EXPECT_TRUE(a.type == ActionType::kRecordEvent || a.type == ActionType::kRequeueAfter ||
                      a.type == ActionType::kDeleteCanary || a.type == ActionType::kAddFinalizer)
              << DescribeAction(a);
        }
        const Condition* c = FindCondition(p.status.conditions, kConditionConflict);
        EXPECT_EQ(c == nullptr ? "<absent>" : c->reason, "TargetHeld");
      }
      if (row.obs == Obs::kForeignCanary) {
        EXPECT_FALSE(Has(p, ActionType::kCreateCanary));
        EXPECT_FALSE(Has(p, ActionType::kPatchCanary));
        EXPECT_FALSE(Has(p, ActionType::kDeleteCanary));
        const Condition* c = FindCondition(p.status.conditions, kConditionConflict);
        EXPECT_EQ(c == nullptr ? "<absent>" : c->reason, "CanaryNameTaken");
      }
      if (row.obs == Obs::kDeleting && from != Phase::kPending) {
        EXPECT_TRUE(Has(p, ActionType::kRestoreTemplate) || Has(p, ActionType::kDeleteCanary) ||
                    Has(p, ActionType::kRemoveFinalizer));
      }
      // Executing the plan never asks for more than the total. (A user's Deployment at the
      // canary's name runs the user's pods, not the rollout's.)
      const int32_t users = row.obs == Obs::kForeignCanary ? sim.CanaryReplicas() : 0;
      const int32_t limit = std::max(p.status.total_replicas, sim.Total() - users);
      for (const Action& a : p.actions) {
        sim.Execute(a);
        if (!sim.target().is_null()) {
          EXPECT_LE(sim.Total() - users, limit) << DescribeAction(a);
        }
      }
    }
  }
}

// --- properties over random rollouts, with crashes -----------------------------------------

struct Scenario {
  int32_t n;
  std::vector<int> steps;
  uint32_t seed;
};

std::vector<int> RandomSteps(std::mt19937& rng) {
  std::uniform_int_distribution<int> count(0, 4), weight(1, 99);
  std::vector<int> steps;
  int k = count(rng);
  while (static_cast<int>(steps.size()) < k) {
    int w = weight(rng);
    if (std::find(steps.begin(), steps.end(), w) == steps.end()) steps.push_back(w);
  }
  std::sort(steps.begin(), steps.end());
  steps.push_back(100);
  return steps;
}

// Random verdicts, pauses, aborts, promote-nows, slow pods and operator crashes between
// the status write and the actions. Invariants: the requested total never exceeds N (N + 1
// with a fresh baseline), every resting step splits N as ceil(N*w/100) + rest (with a
// fresh baseline: SplitWithBaseline), and every rollout ends Promoted or RolledBack with N
// replicas on the target and no canary or baseline; RolledBack with the original template
// verbatim and no Booster annotation on the Deployment.
struct CrashFigures {
  int promoted = 0, rolled_back = 0, crashes = 0, spared = 0, fresh_steps = 0, beyond_n = 0;
};
void RunCrashProperty(uint32_t seed, int scenarios, bool fresh_baseline, CrashFigures& f) {
  std::mt19937 rng(seed);
  int& promoted = f.promoted;
  int& rolled_back = f.rolled_back;
  int& crashes = f.crashes;
  int& spared = f.spared;
  for (int scenario = 0; scenario < scenarios; ++scenario) {
    std::uniform_int_distribution<int32_t> nd(0, 25);
    const int32_t n = nd(rng);
    Json spec = SpecJson();
    spec["rollout"]["steps"] = RandomSteps(rng);
    // One scenario in four in dry run: its Fails and Inconclusives never roll back.
    const bool dry_run = scenario % 4 == 3;
    spec["rollout"]["analysis"] = {{"mode", "Time"}, {"maxExtensions", 1}, {"dryRun", dry_run}};
    if (fresh_baseline) {
      spec["rollout"]["analysis"]["mode"] = "Metrics";
      spec["rollout"]["analysis"]["metrics"] = Json::parse(R"([{"name": "latencyP99"}])");
    }
    const int32_t bound = fresh_baseline ? n + 1 : n;
    Sim sim(n, spec);
    SCOPED_TRACE(absl::StrCat("scenario ", scenario, " n=", n,
                              " steps=", spec["rollout"]["steps"].dump(), " dryRun=", dry_run));
    std::uniform_real_distribution<double> u(0, 1);
    ScriptedVerdictSource verdicts;
    int token = 0;
    bool paused = false;
    bool went_on = false;  // past a verdict that would have rolled back
    for (int i = 0; i < 400; ++i) {
      const Phase ph = sim.phase();
      if ((ph == Phase::kPromoted || ph == Phase::kRolledBack) && sim.canary().is_null() &&
          sim.baseline().is_null() && sim.Plan1(verdicts).actions.empty()) {
        break;
      }
      double r = u(rng);
      verdicts.Push(MakeVerdict(r < 0.3    ? VerdictKind::kWait
                                : r < 0.88 ? VerdictKind::kPass
                                : r < 0.97 ? VerdictKind::kInconclusive
                                           : VerdictKind::kFail));
      if (paused && (i > 250 || u(rng) < 0.2)) {  // short pauses; every scenario finishes
        sim.RemoveAnnotation(kAnnotationPaused);
        paused = false;
      } else if (!paused && u(rng) < 0.03) {
        paused = true;
        sim.SetAnnotation(kAnnotationPaused, "true");
      }
      if (u(rng) < 0.005) sim.SetAnnotation(kAnnotationAbort, absl::StrCat(++token));
      if (u(rng) < 0.005) sim.SetAnnotation(kAnnotationPromoteNow, absl::StrCat(++token));
      // An app of 0 replicas holds its rollout (nothing to judge) until it has pods again or
      // someone aborts: late in the scenario, someone does.
      if (n == 0 && i == 300) sim.SetAnnotation(kAnnotationAbort, "no-pods");
      const bool crash = u(rng) < 0.2;
      size_t execute = SIZE_MAX;
      if (crash) {
        Plan peek = sim.Plan1(verdicts);
        execute = peek.actions.empty() ? 0 : rng() % peek.actions.size();
        ++crashes;
      }
      const bool settle = u(rng) < 0.8;
      Plan p = sim.Step(verdicts, settle, execute, [&] { ASSERT_LE(sim.Total(), bound); });
      if (::testing::Test::HasFatalFailure()) return;
      RolloutStatus s = sim.status();
      if (s.last_transition) {
        const std::string& why = s.last_transition->reason;
        if (dry_run) {
          ASSERT_NE(why, "AnalysisFailed");
          ASSERT_NE(why, "AnalysisInconclusive");
        } else {
          ASSERT_FALSE(absl::StartsWith(why, "DryRun")) << why;
        }
      }
      if (s.last_decision && s.last_decision->dry_run) {
        ASSERT_TRUE(dry_run);
        went_on = true;
      }
      if (s.phase != Phase::kPending && s.phase != Phase::kFailed) {
        ASSERT_EQ(s.total_replicas, n);
        const int32_t all = s.stable_replicas + s.canary_replicas + s.baseline_replicas;
        // With a fresh baseline a step (and the start of a promotion that takes its pods
        // back) may hold one pod beyond N.
        ASSERT_GE(all, n) << PhaseName(s.phase);
        ASSERT_LE(all, bound) << PhaseName(s.phase);
      }
      if (!fresh_baseline) {
        ASSERT_EQ(s.baseline_replicas, 0);
      }
      // (A pass that created the canary or the baseline created it empty; the split follows
      // on the next.)
      if (!crash && (s.phase == Phase::kProgressing || s.phase == Phase::kPaused) &&
          s.current_step > 0 && !Has(p, ActionType::kCreateCanary) &&
          !Has(p, ActionType::kCreateBaseline)) {
        ASSERT_EQ(s.canary_weight, spec["rollout"]["steps"][s.current_step - 1].get<int>());
        ASSERT_EQ(s.canary_replicas, CanaryReplicas(n, s.canary_weight));
        if (fresh_baseline) {
          const ArmSplit want = SplitWithBaseline(n, s.canary_weight, 0);
          ASSERT_EQ(s.baseline_replicas, want.baseline);
          ASSERT_EQ(s.stable_replicas, want.stable);
          ASSERT_EQ(sim.BaselineReplicas(), s.baseline_replicas);
          if (n > 0) {
            ASSERT_GT(s.baseline_replicas, 0) << "a step without a baseline";
          }
          ++f.fresh_steps;
          if (want.stable + want.canary + want.baseline > n) ++f.beyond_n;
        } else {
          ASSERT_EQ(s.stable_replicas + s.canary_replicas, n);
        }
        ASSERT_EQ(sim.TargetReplicas(), s.stable_replicas);
        ASSERT_EQ(sim.CanaryReplicas(), s.canary_replicas);
      }
      sim.now() += absl::Seconds(20);
    }
    spared += went_on;
    const Phase end = sim.phase();
    ASSERT_TRUE(end == Phase::kPromoted || end == Phase::kRolledBack) << PhaseName(end);
    EXPECT_TRUE(sim.canary().is_null());
    EXPECT_TRUE(sim.baseline().is_null());
    EXPECT_EQ(sim.TargetReplicas(), n);
    if (end == Phase::kPromoted) {
      ++promoted;
      EXPECT_EQ(TemplateArm(sim.target()["spec"]["template"]), kArmPromoted);
    } else {
      ++rolled_back;
      // Exactly the Deployment of before: its template and no Booster annotation.
      EXPECT_EQ(sim.target()["spec"]["template"], OriginalTemplate());
      EXPECT_EQ(sim.target()["metadata"].value("annotations", Json::object()), Json::object());
    }
  }
}

TEST(ReconcilePropertyTest, ReplicasNeverExceedNorDriftAcrossCrashes) {
  CrashFigures f;
  RunCrashProperty(20261129, 120, /*fresh_baseline=*/false, f);
  if (HasFatalFailure()) return;
  // The generator exercises both endings and many crashes.
  EXPECT_GT(f.promoted, 20);
  EXPECT_GT(f.rolled_back, 20);
  EXPECT_GT(f.crashes, 300);
  EXPECT_GT(f.spared, 2) << "dry-run scenarios past a verdict that would have rolled back";
  std::printf(
      "property: %d promoted, %d rolled back, %d crashed reconciles; %d dry-run "
      "scenarios went on past a verdict that would have rolled back\n",
      f.promoted, f.rolled_back, f.crashes, f.spared);
}

// The same with a fresh baseline (mode Metrics, analysis.baseline Fresh): a third
// Deployment at every step, never more than N + 1 pods requested, none left behind.
TEST(ReconcilePropertyTest, FreshBaselineKeepsTheReplicaBoundAndLeavesNothingBehind) {
  CrashFigures f;
  RunCrashProperty(20261203, 60, /*fresh_baseline=*/true, f);
  if (HasFatalFailure()) return;
  EXPECT_GT(f.promoted, 10);
  EXPECT_GT(f.rolled_back, 10);
  EXPECT_GT(f.fresh_steps, 100);
  EXPECT_GT(f.beyond_n, 10) << "steps whose baseline took the pod beyond N";
  std::printf(
      "fresh baseline property: %d promoted, %d rolled back, %d crashed reconciles; %d settled "
      "steps with a baseline, %d of them one pod beyond N\n",
      f.promoted, f.rolled_back, f.crashes, f.fresh_steps, f.beyond_n);
}

// The team owns the Deployment: at random points (between two reconciles, or between two
// of the operator's writes in one) they apply a new release (merged into the live template,
// as `kubectl apply` does), run `kubectl rollout restart`, replace the whole Deployment with
// their manifest (`kubectl replace`: no Booster part left), or scale it (a person, an HPA,
// to 0 too), and the operator crashes between its status write and its actions.
// Invariants: the team's template is never lost (the target's template minus Booster's
// layer is always their latest), no write of the operator's takes the pods requested above
// the app's total + 1, no rollout is stuck once they stop, and deleting the profile leaves
// exactly their latest template and their latest replica count.
// The team's releases, restarts, whole-manifest replaces and scales (and their HPA's) land
// at random in every phase, some between two writes of one pass; stale writes are refused.
// `fresh_baseline`: mode Metrics, so every step runs the fresh baseline beside the canary.
void RunTeamEditsProperty(uint32_t seed, int scenarios, bool fresh_baseline) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  const MutationOptions opts;
  int edits = 0, restarts = 0, replaces = 0, scales = 0, refused = 0, promoted = 0,
      rolled_back = 0, mid_pass = 0, with_baseline = 0;
  for (int scenario = 0; scenario < scenarios; ++scenario) {
    const int32_t n = static_cast<int32_t>(rng() % 9);
    Json spec = SpecJson();
    spec["rollout"]["steps"] = RandomSteps(rng);
    spec["rollout"]["analysis"] = {{"mode", "Time"}, {"maxExtensions", 1}};
    if (fresh_baseline) {
      spec["rollout"]["analysis"]["mode"] = "Metrics";
      spec["rollout"]["analysis"]["metrics"] = Json::parse(R"([{"name": "latencyP99"}])");
    }
    const double policy = u(rng);
    spec["rollout"]["onNewRevision"] = policy < 0.6 ? "Restart" : policy < 0.8 ? "Rollback"
                                                                               : "Reverify";
    Sim sim(n, spec);
    sim.stale_writes = true;
    if (u(rng) < 0.3) {
      sim.hpa() = "web-hpa";
      sim.hpa_min = 1 + static_cast<int32_t>(rng() % 3);
    }
    SCOPED_TRACE(absl::StrCat("scenario ", scenario, " n=", n, " steps=",
                              spec["rollout"]["steps"].dump(), " ",
                              spec["rollout"]["onNewRevision"].get<std::string>(), " hpa ",
                              sim.hpa().empty() ? 0 : sim.hpa_min));
    Json theirs = OriginalTemplate();  // the team's latest template
    int32_t total = n;                 // the team's (or their HPA's) latest count
    int release = 0;
    // One change of the team's to the live Deployment (and to their own copy). Between two
    // writes of one pass only template changes land: a count changed there races with the
    // operator's next write, planned on the count before (the pass after re-splits it).
    auto act = [&](bool between_writes) {
      if (sim.target().is_null()) return;
      const double r = between_writes ? 0.62 * u(rng) : u(rng);
      Json& live = sim.target()["spec"]["template"];
      if (r < 0.35) {
        ++release;
        ++edits;
        const std::string image = absl::StrCat("web:", release + 1);
        for (Json* t : {&theirs, &live}) {
          Json& c = (*t)["spec"]["containers"][0];
          c["image"] = image;
          Json& env = c["env"];
          if (!env.is_array()) env = Json::array();
          bool found = false;
          for (Json& e : env) {
            if (e["name"] == "RELEASE") {
              e["value"] = image;
              found = true;
            }
          }
          if (!found) env.push_back({{"name", "RELEASE"}, {"value", image}});
        }
      } else if (r < 0.5) {
        ++restarts;
        const std::string at = absl::StrCat("2026-12-02T10:", 10 + (++release % 50), ":00Z");
        for (Json* t : {&theirs, &live}) {
          (*t)["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"] = at;
        }
      } else if (r < 0.62) {
        ++replaces;
        // Their manifest, whole: the template they keep, their count, their annotations.
        // (Between two writes: their template alone, as a self-heal of the template does.)
        live = theirs;
        if (!between_writes) {
          sim.target()["metadata"].erase("annotations");
          sim.target()["spec"]["replicas"] = total;
        }
      } else {
        // A count equal to the target's own is no change at all for the API server: no
        // one, Booster included, can see it (docs/rollout.md, HPA).
        const int32_t want = static_cast<int32_t>(rng() % 9);
        if (want == sim.TargetReplicas()) return;
        ++scales;
        total = want;
        sim.target()["spec"]["replicas"] = total;
      }
      sim.target()["metadata"]["generation"] =
          sim.target()["metadata"]["generation"].get<int64_t>() + 1;
    };
    ScriptedVerdictSource verdicts;
    int i = 0;
    for (; i < 600; ++i) {
      const bool team_active = i < 250;
      if (i == 250 && total == 0) {
        // At 0 a rollout holds by design (nothing to judge): the app gets pods back.
        total = sim.TargetReplicas() == 2 ? 3 : 2;
        sim.target()["spec"]["replicas"] = total;
      }
      const Phase ph = sim.phase();
      if (!team_active && (ph == Phase::kPromoted || ph == Phase::kRolledBack) &&
          sim.canary().is_null() && sim.Plan1(verdicts).actions.empty()) {
        break;
      }
      const double r = u(rng);
      verdicts.Push(MakeVerdict(r < 0.3 ? VerdictKind::kWait
                                : r < 0.9 ? VerdictKind::kPass
                                          : VerdictKind::kInconclusive));
      if (team_active && u(rng) < 0.08) act(false);
      // Promoted, RolledBack: a retry now and then, so changes land in every phase.
      if (team_active && (ph == Phase::kPromoted || ph == Phase::kRolledBack) && u(rng) < 0.05) {
        sim.SetAnnotation(kAnnotationRetry, absl::StrCat("r", i));
      }
      size_t execute = SIZE_MAX;
      if (u(rng) < 0.15) {
        Plan peek = sim.Plan1(verdicts);
        execute = peek.actions.empty() ? 0 : rng() % peek.actions.size();
      }
      const int32_t seen_total = total;
      int32_t requested_before = sim.Total();
      const int before_refused = sim.refused;
      sim.Step(
          verdicts, u(rng) < 0.8, execute,
          [&] {
            // The operator's write never asks for more than it saw the app should have,
            // plus one, unless the count was higher already.
            const int32_t bound = std::max({requested_before, seen_total + 1, total + 1});
            ASSERT_LE(sim.Total(), bound)
                << PhaseName(sim.phase()) << " status total " << sim.status().total_replicas
                << " stable " << sim.status().stable_replicas << " canary "
                << sim.status().canary_replicas << "; target " << sim.TargetReplicas()
                << " canary " << sim.CanaryReplicas() << "; team total " << total
                << " seen " << seen_total << "; transition "
                << (sim.status().last_transition ? sim.status().last_transition->message : "");
            requested_before = sim.Total();
            ASSERT_EQ(TeamTemplate(sim.target()["spec"]["template"], opts), theirs)
                << "the team's template was lost";
            if (!sim.baseline().is_null()) ++with_baseline;
          },
          [&] {
            if (team_active && u(rng) < 0.03) {
              ++mid_pass;
              act(true);
              requested_before = sim.Total();
            }
          });
      if (::testing::Test::HasFatalFailure()) return;
      refused += sim.refused - before_refused;
      ASSERT_EQ(TeamTemplate(sim.target()["spec"]["template"], opts), theirs);
      sim.now() += absl::Seconds(20);
    }
    const Phase end = sim.phase();
    ASSERT_TRUE(end == Phase::kPromoted || end == Phase::kRolledBack)
        << "stuck in " << PhaseName(end) << " after " << i << " passes, team total " << total
        << " status total " << sim.status().total_replicas << ": "
        << sim.profile()["status"].dump() << "\ntarget " << sim.target().dump() << "\ncanary "
        << sim.canary().dump();
    EXPECT_TRUE(sim.canary().is_null());
    EXPECT_TRUE(sim.baseline().is_null()) << "the fresh baseline outlived the rollout";
    EXPECT_EQ(sim.TargetReplicas(), total)
        << PhaseName(end) << " status total " << sim.status().total_replicas << " last "
        << sim.status().last_transition->message;
    (end == Phase::kPromoted ? promoted : rolled_back)++;
    // Deleting the profile: exactly their latest template and count, none of Booster's
    // annotations.
    sim.profile()["metadata"]["deletionTimestamp"] = "2027-01-01T00:00:00Z";
    for (int k = 0; k < 20 && !sim.profile_gone(); ++k) sim.Step(verdicts);
    ASSERT_TRUE(sim.profile_gone());
    EXPECT_EQ(sim.target()["spec"]["template"], theirs);
    EXPECT_EQ(sim.TargetReplicas(), total);
    EXPECT_EQ(sim.target()["metadata"].value("annotations", Json::object()), Json::object());
  }
  // Scaled to the scenarios (the figures of 100).
  auto at_least = [&](int of_100) { return of_100 * scenarios / 100; };
  EXPECT_GT(edits, at_least(100));
  EXPECT_GT(replaces, at_least(30));
  EXPECT_GT(scales, at_least(80));
  EXPECT_GT(mid_pass, at_least(20));
  EXPECT_GT(refused, at_least(10))
      << "writes planned on a view someone changed meanwhile are refused";
  EXPECT_GT(promoted, at_least(20));
  EXPECT_GT(rolled_back, at_least(10));
  if (fresh_baseline) {
    EXPECT_GT(with_baseline, at_least(500));
  }
  std::printf(
      "team: %d releases, %d restarts, %d replaces, %d scales (%d between two writes), %d writes "
      "refused; %d promoted, %d rolled back; %d actions with a fresh baseline running\n",
      edits, restarts, replaces, scales, mid_pass, refused, promoted, rolled_back, with_baseline);
}

TEST(ReconcilePropertyTest, SomeoneElsesEditsScalesAndReplacementsAreNeverLost) {
  RunTeamEditsProperty(20261202, 100, /*fresh_baseline=*/false);
}

// The same with the fresh baseline running at every step: never more than N + 1 pods asked
// for, the team's template and count never lost, no baseline left behind.
TEST(ReconcilePropertyTest, SomeoneElsesEditsUnderAFreshBaselineAreNeverLost) {
  RunTeamEditsProperty(20261204, 40, /*fresh_baseline=*/true);
}

// Two or three profiles over one Deployment, a user's Deployment appearing under the
// canary's name and going away, profiles deleted and re-created, reconciles of different
// profiles planned on the same view and then written (two workers), crashes between the
// status write and the actions. Invariants, on every write: only the holder writes the
// target (or a profile claims one nobody holds), only a canary's owner writes or deletes
// it, the user's Deployment is never changed, and at most N pods are requested. At the
// end no rollout is stuck, every waiting profile waits for a live holder, and deleting
// every profile gives back the Deployment exactly as it was.
TEST(ReconcilePropertyTest, CompetingProfilesAndForeignObjectsNeverTouchWhatTheyDoNotOwn) {
  std::mt19937 rng(20261201);
  std::uniform_real_distribution<double> u(0, 1);
  int races = 0, foreign_episodes = 0, deletions = 0, handovers = 0;
  for (int scenario = 0; scenario < 60; ++scenario) {
    const int32_t n = 1 + static_cast<int32_t>(rng() % 12);
    World w(n);
    const Json original = w.target();
    SCOPED_TRACE(absl::StrCat("scenario ", scenario, " n=", n));
    std::vector<int> live = {w.Add("p"), w.Add("q")};
    if (u(rng) < 0.5) live.push_back(w.Add("r"));
    Json foreign = nullptr;
    ScriptedVerdictSource verdicts;
    std::string last_holder;
    for (int i = 0; i < 300; ++i) {
      if (foreign.is_null() && w.canary().is_null() && u(rng) < 0.03) {
        w.canary() = ForeignDeployment(absl::StrCat("user-", scenario, "-", i));
        foreign = w.canary();
        ++foreign_episodes;
      } else if (!foreign.is_null() && u(rng) < 0.05) {
        ASSERT_EQ(w.canary(), foreign) << "the user's Deployment was changed";
        w.canary() = nullptr;
        foreign = nullptr;
      }
      if (u(rng) < 0.01 && !live.empty()) {
        const int victim = live[rng() % live.size()];
        w.Delete(victim);
        ++deletions;
      }
      if (u(rng) < 0.01 && live.size() < 3) live.push_back(w.Add("s"));
      live.erase(std::remove_if(live.begin(), live.end(), [&](int k) { return w.gone(k); }),
                 live.end());
      if (live.empty()) live.push_back(w.Add("t"));
      double r = u(rng);
      verdicts.Push(MakeVerdict(r < 0.3 ? VerdictKind::kWait
                                : r < 0.9 ? VerdictKind::kPass
                                          : VerdictKind::kFail));
      const int x = live[rng() % live.size()];
      if (live.size() > 1 && u(rng) < 0.4) {
        // Two workers: both plan on the same view, then both write.
        int y = live[rng() % live.size()];
        if (y == x) y = live[(std::find(live.begin(), live.end(), x) - live.begin() + 1) % live.size()];
        Plan px = w.PlanFor(x, w.Observe(x), verdicts);
        Plan py = w.PlanFor(y, w.Observe(y), verdicts);
        const bool ok_x = w.Run(x, px);
        const bool ok_y = w.Run(y, py);
        races += !ok_x || !ok_y;
      } else {
        size_t execute = SIZE_MAX;
        if (u(rng) < 0.2) execute = rng() % 4;  // killed after the status write
        w.Step(x, verdicts, execute);
      }
      if (HasFailure()) return;
      if (!foreign.is_null()) {
        ASSERT_EQ(w.canary(), foreign) << "the user's Deployment was changed";
      }
      int moving = 0;
      for (int k : live) {
        const Phase ph = w.phase(k);
        const bool deleting = w.profile(k)["metadata"].contains("deletionTimestamp");
        if (!deleting &&
            (ph == Phase::kProgressing || ph == Phase::kPaused || ph == Phase::kPromoting)) {
          ++moving;
          EXPECT_EQ(w.Holder(), w.uid(k)) << "a rollout under way on a target it does not hold";
        }
      }
      ASSERT_LE(moving, 1) << "two rollouts on one Deployment";
      if (!w.Holder().empty() && w.Holder() != last_holder) {
        handovers += !last_holder.empty();  // held by one profile, later by another
        last_holder = w.Holder();
      }
      if (u(rng) < 0.8) w.Settle();
      w.now() += absl::Seconds(20);
    }
    // The user's Deployment goes away; everything settles with passing verdicts.
    if (!foreign.is_null()) w.canary() = nullptr;
    ScriptedVerdictSource pass({MakeVerdict(VerdictKind::kPass)});
    for (int i = 0; i < 200; ++i, w.Settle(), w.now() += absl::Seconds(20)) {
      for (int k : live) w.Step(k, pass);
    }
    for (int k : live) {
      if (w.gone(k)) continue;
      const Phase ph = w.phase(k);
      EXPECT_FALSE(InFlightPhase(ph)) << "stuck in " << PhaseName(ph);
      if (ph == Phase::kPending) {
        // Waiting, and only for a holder that is still there.
        bool holder_alive = false;
        for (int h : live) holder_alive |= !w.gone(h) && w.uid(h) == w.Holder();
        EXPECT_TRUE(holder_alive) << "waits for a holder that is gone";
      }
    }
    for (int k : live) w.Delete(k);
    for (int i = 0; i < 20; ++i, w.Settle()) {
      for (int k : live) w.Step(k, pass);
    }
    for (int k : live) EXPECT_TRUE(w.gone(k));
    EXPECT_TRUE(w.canary().is_null());
    EXPECT_EQ(w.target()["spec"], original["spec"]);
    EXPECT_EQ(w.target()["metadata"].value("annotations", Json::object()), Json::object());
  }
  // The generator exercises what it claims to.
  EXPECT_GT(races, 20);
  EXPECT_GT(foreign_episodes, 20);
  EXPECT_GT(deletions, 20);
  EXPECT_GT(handovers, 20);
  std::printf("competing: %d refused races, %d foreign Deployments, %d deletions, %d handovers\n",
              races, foreign_episodes, deletions, handovers);
}

// A crash after the status write and before any action: the next reconcile, from the
// persisted status alone, re-emits the same world-changing actions.
TEST(ReconcilePropertyTest, ActionsAreRecomputedFromThePersistedStatus) {
  Sim sim(10);
  ScriptedVerdictSource verdicts({MakeVerdict(VerdictKind::kPass)});
  for (int i = 0; i < 100 && sim.phase() != Phase::kPromoted; ++i) {
    Plan first = sim.Step(verdicts, false, /*execute=*/0);  // status written, then killed
    Plan again = sim.Plan1(verdicts);
    auto world = [](const Plan& p) {
      std::vector<std::string> out;
      for (const Action& a : p.actions) {
        if (a.type != ActionType::kRecordEvent && a.type != ActionType::kRequeueAfter) {
          out.push_back(DescribeAction(a) + a.body.dump());
        }
      }
      return out;
    };
    EXPECT_EQ(world(first), world(again)) << PhaseName(sim.phase());
    for (const Action& a : again.actions) sim.Execute(a);
    sim.SettleAll();
    sim.now() += absl::Seconds(30);
  }
  EXPECT_EQ(sim.phase(), Phase::kPromoted);
}

TEST(ReplicaMathTest, CanaryIsCeilAndTotalStaysN) {
  for (int32_t n = 0; n <= 200; ++n) {
    for (int w = 0; w <= 100; ++w) {
      int32_t c = CanaryReplicas(n, w);
      ASSERT_GE(c, 0);
      ASSERT_LE(c, n);
      ASSERT_GE(static_cast<int64_t>(c) * 100, static_cast<int64_t>(n) * w);
      ASSERT_LT((static_cast<int64_t>(c) - 1) * 100, static_cast<int64_t>(n) * w + (w ? 0 : 100));
    }
  }
  EXPECT_EQ(CanaryReplicas(10, 10), 1);
  EXPECT_EQ(CanaryReplicas(3, 10), 1);
  EXPECT_EQ(CanaryReplicas(3, 50), 2);
  EXPECT_EQ(CanaryReplicas(1, 1), 1);
  EXPECT_EQ(CanaryReplicas(INT32_MAX, 99), 2126008811);  // ceil(2126008810.53)
  EXPECT_EQ(PromotionBatch(1), 1);
  EXPECT_EQ(PromotionBatch(8), 2);
  EXPECT_EQ(PromotionBatch(10), 3);
}

TEST(ReplicaMathTest, AFreshBaselineIsAsLargeAsTheCanaryAndNeverTakesMoreThanOnePodBeyondN) {
  struct Case {
    int32_t n;
    int weight;
    int32_t floor;
    ArmSplit want;
  };
  const Case cases[] = {
      {10, 10, 0, {8, 1, 1}},   // from the target's share
      {4, 25, 0, {2, 1, 1}},
      {4, 50, 0, {0, 2, 2}},    // the target gives all it has
      {3, 50, 0, {0, 2, 2}},    // one from the target, one beyond N
      {1, 50, 0, {0, 1, 1}},    // N = 1: the pod beyond N
      {4, 100, 0, {0, 4, 1}},   // a 100% step: the target has nothing to give
      {4, 10, 3, {3, 1, 1}},    // an HPA's minimum stays on the target: one beyond N
      {4, 10, 4, {4, 1, 0}},    // the minimum takes N and the canary the pod beyond it
      {0, 50, 0, {0, 0, 0}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(SplitWithBaseline(c.n, c.weight, c.floor), c.want)
        << "n=" << c.n << " w=" << c.weight << " floor=" << c.floor;
  }
  for (int32_t n = 0; n <= 60; ++n) {
    for (int w = 1; w <= 100; ++w) {
      for (int32_t floor : {0, 1, n / 2, n}) {
        const ArmSplit a = SplitWithBaseline(n, w, floor);
        const Split plain = SplitReplicas(n, w, floor);
        ASSERT_EQ(a.canary, plain.canary);  // the canary's share does not change
        ASSERT_LE(a.stable + a.canary + a.baseline, n + 1);
        ASSERT_GE(a.stable, std::min(floor, n));  // an HPA's minimum stays on the target
        ASSERT_LE(a.baseline, a.canary);
        if (floor == 0) {  // the target's share and the pod beyond N, as far as needed
          ASSERT_EQ(a.baseline, std::min(a.canary, n - a.canary + 1));
        }
      }
    }
  }
}

// A Metrics profile with the default baseline: a Deployment of the untuned template beside
// the canary at every step, created empty with it, as large as the canary, waited for
// before the step is judged, its windows alone the baseline arm's; deleted before the
// target takes its pods back at promotion, and on rollback.
Json FreshSpec() {
  Json spec = SpecJson();
  spec["rollout"]["steps"] = {25, 50, 100};
  spec["rollout"]["analysis"] = {{"mode", "Metrics"},
                                 {"metrics", Json::parse(R"([{"name": "latencyP99"}])")}};
  return spec;
}

TEST(FreshBaselineTest, RunsBesideTheCanaryAtEveryStepAndGoesBeforePromotion) {
  Sim sim(4, FreshSpec());
  ScriptedVerdictSource wait({MakeVerdict(VerdictKind::kWait)});
  // The pass that creates the canary creates the baseline too, both empty.
  Plan create;
  for (int i = 0; i < 10 && !Has(create, ActionType::kCreateCanary); ++i) create = sim.Step(wait);
  ASSERT_TRUE(Has(create, ActionType::kCreateCanary));
  const Action* b = Find(create, ActionType::kCreateBaseline);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->replicas, 0);
  EXPECT_EQ(b->body["metadata"]["name"], "web-booster-baseline");
  EXPECT_EQ(testing::ProfileOwnerUid(b->body), "profile-uid");
  EXPECT_EQ(b->body["spec"]["selector"]["matchLabels"][kFreshBaselineLabel], "true");
  EXPECT_EQ(b->body["spec"]["selector"]["matchLabels"][kArmLabel], kArmBaseline);
  EXPECT_FALSE(Has(create, ActionType::kScaleTarget));
  EXPECT_FALSE(Has(create, ActionType::kEnrollTarget));
  // Then the split: 4 at 25% is 2 + 1 + 1, the target lowered before the others grow.
  Plan split = sim.Step(wait);
  RolloutStatus s = sim.status();
  EXPECT_EQ(s.stable_replicas, 2);
  EXPECT_EQ(s.canary_replicas, 1);
  EXPECT_EQ(s.baseline_replicas, 1);
  EXPECT_EQ(sim.BaselineReplicas(), 1);
  ASSERT_FALSE(split.actions.empty());
  EXPECT_TRUE(split.actions[0].type == ActionType::kEnrollTarget ||
              split.actions[0].type == ActionType::kScaleTarget)
      << DescribeAction(split.actions[0]);
  // Its template: the target's arm, labelled, near the canary, with a marker of its own.
  const Json& bt = sim.baseline()["spec"]["template"];
  EXPECT_EQ(TemplateArm(bt), kArmBaseline);
  EXPECT_EQ(bt["metadata"]["labels"][kFreshBaselineLabel], "true");
  EXPECT_NE(TemplateMarker(bt), TemplateMarker(sim.target()["spec"]["template"]));
  EXPECT_EQ(bt["spec"]["affinity"]["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
              [0]["podAffinityTerm"]["labelSelector"]["matchLabels"][kArmLabel],
            kArmCanary);
  // The step is not judged while the baseline's pods are not available.
  testing::Unsettle(sim.baseline());
  ScriptedVerdictSource pass({MakeVerdict(VerdictKind::kPass)});
  const size_t asked = pass.requests().size();
  sim.Step(pass, /*settle=*/false);
  EXPECT_EQ(pass.requests().size(), asked);
  EXPECT_EQ(sim.status().analysis_start_time, absl::InfinitePast());
  sim.SettleAll();
  // Step 2 (50%): 0 + 2 + 2; never more than N + 1 requested on the way.
  Drive(sim, pass, [&] { return sim.status().current_step == 2; });
  for (int i = 0; i < 3; ++i) {
    sim.Step(wait, true, SIZE_MAX, [&] { ASSERT_LE(sim.Total(), 5); });
  }
  s = sim.status();
  EXPECT_EQ(s.stable_replicas, 0);
  EXPECT_EQ(s.canary_replicas, 2);
  EXPECT_EQ(s.baseline_replicas, 2);
  EXPECT_EQ(sim.BaselineReplicas(), 2);
  // Step 3 (100%): 0 + 4 + 1, the pod beyond N.
  Drive(sim, pass, [&] { return sim.status().current_step == 3; });
  for (int i = 0; i < 3; ++i) sim.Step(wait);
  EXPECT_EQ(sim.BaselineReplicas(), 1);
  EXPECT_EQ(sim.CanaryReplicas(), 4);
  // Promotion: the baseline is deleted before the target grows, and its pod goes to the
  // target (so the app never has fewer than N pods).
  Plan promote = sim.Step(pass, true, SIZE_MAX, [&] { ASSERT_LE(sim.Total(), 5); });
  ASSERT_EQ(sim.phase(), Phase::kPromoting);
  EXPECT_EQ(sim.status().baseline_replicas, 0);
  EXPECT_EQ(sim.status().stable_replicas, 1);  // the baseline's pod, back on the target
  ASSERT_FALSE(promote.actions.empty());
  EXPECT_EQ(promote.actions[0].type, ActionType::kDeleteBaseline)
      << DescribeAction(promote.actions[0]);
  EXPECT_EQ(promote.actions[0].uid, "baseline-uid");
  EXPECT_TRUE(sim.baseline().is_null());
  Drive(sim, pass, [&] { return sim.phase() == Phase::kPromoted; });
  EXPECT_TRUE(sim.baseline().is_null());
  EXPECT_EQ(sim.TargetReplicas(), 4);
}

TEST(FreshBaselineTest, ARollbackDeletesItAndGivesTheTargetEveryReplica) {
  Sim sim(4, FreshSpec());
  ScriptedVerdictSource wait({MakeVerdict(VerdictKind::kWait)});
  Drive(sim, wait, [&] { return sim.BaselineReplicas() == 1 && sim.CanaryReplicas() == 1; });
  ScriptedVerdictSource fail({MakeVerdict(VerdictKind::kFail, "Regression", "p99 +80%")});
  Drive(sim, fail, [&] { return sim.phase() == Phase::kRolledBack; });
  EXPECT_TRUE(sim.baseline().is_null());
  EXPECT_TRUE(sim.canary().is_null());
  EXPECT_EQ(sim.TargetReplicas(), 4);
  EXPECT_EQ(sim.target()["spec"]["template"], OriginalTemplate());
}

TEST(FreshBaselineTest, TimeModeAndBaselineTargetRunNone) {
  for (const char* mode : {"time", "target"}) {
    SCOPED_TRACE(mode);
    Json spec = FreshSpec();
    if (std::string(mode) == "time") {
      spec["rollout"]["analysis"] = {{"mode", "Time"}};
    } else {
      spec["rollout"]["analysis"]["baseline"] = "Target";
    }
    Sim sim(4, spec);
    ScriptedVerdictSource pass({MakeVerdict(VerdictKind::kPass)});
    for (int i = 0; i < 200 && sim.phase() != Phase::kPromoted; ++i) {
      Plan p = sim.Step(pass);
      ASSERT_FALSE(Has(p, ActionType::kCreateBaseline));
      ASSERT_EQ(sim.status().baseline_replicas, 0);
      ASSERT_LE(sim.Total(), 4);
      sim.now() += absl::Seconds(10);
    }
    EXPECT_EQ(sim.phase(), Phase::kPromoted);
  }
}

// A Deployment of someone else's under the baseline's name: never written or deleted; the
// steps compare with the target's pods and the Conflict condition says why.
TEST(FreshBaselineTest, ANameTakenBySomeoneElseFallsBackToTheTargetAndSaysSo) {
  Sim sim(4, FreshSpec());
  sim.baseline() = ForeignDeployment();
  sim.baseline()["metadata"]["name"] = "web-booster-baseline";
  const Json theirs = sim.baseline();
  ScriptedVerdictSource pass({MakeVerdict(VerdictKind::kPass)});
  for (int i = 0; i < 200 && sim.phase() != Phase::kPromoted; ++i) {
    Plan p = sim.Step(pass);
    for (const Action& a : p.actions) {
      ASSERT_NE(a.type, ActionType::kCreateBaseline);
      ASSERT_NE(a.type, ActionType::kPatchBaseline);
      ASSERT_NE(a.type, ActionType::kDeleteBaseline);
    }
    ASSERT_EQ(sim.status().baseline_replicas, 0);
    ASSERT_LE(sim.TargetReplicas() + sim.CanaryReplicas(), 4);
    sim.now() += absl::Seconds(10);
  }
  EXPECT_EQ(sim.phase(), Phase::kPromoted);
  EXPECT_EQ(sim.baseline()["spec"], theirs["spec"]);
  Condition c = sim.Cond(kConditionConflict);
  EXPECT_EQ(c.status, "True");
  EXPECT_EQ(c.reason, "BaselineNameTaken");
  EXPECT_THAT(c.message, HasSubstr("web-booster-baseline"));
  EXPECT_THAT(Reasons(sim.events()), ::testing::Contains("BaselineNameTaken"));
}

// An edit of the agents' window (or metrics source, mode, baseline) mid-step: windows of
// before and after are not one experiment, so both arms take the new settings and the step
// starts over; a threshold edit is not such a change.
TEST(ExperimentTest, AnIntervalEditMidStepRestartsTheStepOnBothArms) {
  Sim sim(4, FreshSpec());
  ScriptedVerdictSource wait({MakeVerdict(VerdictKind::kWait)});
  Drive(sim, wait, [&] {
    return sim.phase() == Phase::kProgressing &&
           sim.status().analysis_start_time != absl::InfinitePast();
  });
  sim.now() += absl::Seconds(30);
  sim.Step(wait);
  const RolloutStatus before = sim.status();
  ASSERT_EQ(before.current_step, 1);
  // A threshold: the step goes on.
  sim.EditSpec([](Json& s) { s["rollout"]["analysis"]["metrics"][0]["maxRegressionPercent"] = 20; });
  sim.now() += absl::Seconds(5);
  sim.Step(wait);
  EXPECT_EQ(sim.status().step_start_time, before.step_start_time);
  EXPECT_EQ(sim.status().analysis_start_time, before.analysis_start_time);
  // The interval: step 1 again, from now, both arms re-templated with the new window.
  sim.EditSpec([](Json& s) { s["rollout"]["analysis"]["interval"] = "10s"; });
  sim.now() += absl::Seconds(5);
  sim.Step(wait);
  RolloutStatus after = sim.status();
  EXPECT_EQ(after.current_step, 1);
  EXPECT_EQ(after.step_start_time, sim.time());
  EXPECT_EQ(after.last_transition->reason, "StepRestarted");
  EXPECT_THAT(after.last_transition->message, HasSubstr("step 1 starts over"));
  auto window = [](const Json& deployment) {
    for (const Json& c : deployment["spec"]["template"]["spec"]["containers"]) {
      if (c.value("name", "") != kAgentContainer) continue;
      for (const Json& e : c.value("env", Json::array())) {
        if (e.value("name", "") == "BOOSTER_WINDOW") return e.value("value", "");
      }
    }
    return std::string("<unset>");
  };
  for (int i = 0; i < 3; ++i) sim.Step(wait);
  EXPECT_EQ(window(sim.canary()), "10s");
  EXPECT_EQ(window(sim.baseline()), "10s");
  EXPECT_EQ(window(sim.target()), "10s");
  EXPECT_EQ(sim.status().current_step, 1);
  EXPECT_NE(sim.status().analysis_start_time, absl::InfinitePast());
  EXPECT_GT(sim.status().analysis_start_time, before.analysis_start_time);
}

// Mode Metrics: a pause and a resume keep the step's analysis (its windows, pause
// included, and the looks spent); a pause over which the experiment changed starts the
// step again at resume.
TEST(ReadinessTest, PauseAndResumeKeepAJudgedStepsAnalysis) {
  Json spec = FreshSpec();
  spec["rollout"]["stepDuration"] = "20m";
  for (const bool edit : {false, true}) {
    SCOPED_TRACE(edit ? "interval edited while paused" : "nothing edited");
    Sim sim(4, spec);
    ScriptedVerdictSource wait({MakeVerdict(VerdictKind::kWait)});
    Drive(sim, wait, [&] {
      return sim.phase() == Phase::kProgressing &&
             sim.status().analysis_start_time != absl::InfinitePast();
    });
    const RolloutStatus before = sim.status();
    sim.now() += absl::Minutes(3);
    sim.Step(wait);
    sim.SetAnnotation(kAnnotationPaused, "true");
    sim.Step(wait);
    ASSERT_EQ(sim.phase(), Phase::kPaused);
    const size_t asked = wait.requests().size();
    sim.now() += absl::Minutes(4);
    sim.Step(wait);
    EXPECT_EQ(wait.requests().size(), asked) << "no verdict while paused";
    if (edit) sim.EditSpec([](Json& s) { s["rollout"]["analysis"]["interval"] = "10s"; });
    sim.RemoveAnnotation(kAnnotationPaused);
    sim.Step(wait);
    ASSERT_EQ(sim.phase(), Phase::kProgressing);
    EXPECT_EQ(sim.status().last_transition->reason, "Resumed");
    EXPECT_EQ(sim.status().current_step, before.current_step);
    if (!edit) {
      EXPECT_EQ(sim.status().step_start_time, before.step_start_time);
      EXPECT_EQ(sim.status().analysis_start_time, before.analysis_start_time);
      EXPECT_THAT(sim.status().last_transition->message, HasSubstr("windows of the pause"));
      EXPECT_EQ(sim.CanaryReplicas(), before.canary_replicas);
      sim.Step(wait);
      ASSERT_GT(wait.requests().size(), asked);
      EXPECT_EQ(wait.requests().back().analysis_start, before.analysis_start_time)
          << "judged on the step's windows since its start";
    } else {
      EXPECT_EQ(sim.status().step_start_time, sim.now());
      EXPECT_EQ(sim.status().analysis_start_time, absl::InfinitePast());
    }
  }
}

// A pod of a judged step restarts late in a long step: the analysis goes on where it was
// (its windows and looks stay), no verdict is asked while it is down, and the progress
// deadline counts from the blip, not from the step's start.
TEST(ReadinessTest, ABlipMidStepKeepsTheAnalysisAndTheDeadlineCountsFromIt) {
  Json spec = FreshSpec();
  spec["rollout"]["stepDuration"] = "20m";
  for (const bool recovers : {true, false}) {
    SCOPED_TRACE(recovers ? "the pod recovers" : "the pod stays down");
    Sim sim(4, spec);
    ScriptedVerdictSource wait({MakeVerdict(VerdictKind::kWait)});
    Drive(sim, wait, [&] {
      return sim.phase() == Phase::kProgressing &&
             sim.status().analysis_start_time != absl::InfinitePast();
    });
    const absl::Time start = sim.status().analysis_start_time;
    sim.now() += absl::Minutes(8);  // past progressDeadline (5m) from the step's start
    sim.Step(wait);
    sim.Unsettle(sim.canary());
    const absl::Time blip = sim.now();
    const size_t asked = wait.requests().size();
    sim.Step(wait, /*settle=*/false);
    ASSERT_EQ(sim.phase(), Phase::kProgressing);
    EXPECT_EQ(sim.status().analysis_start_time, start);
    EXPECT_EQ(sim.status().not_ready_since, blip);
    sim.now() += absl::Minutes(4);
    sim.Step(wait, /*settle=*/false);
    ASSERT_EQ(sim.phase(), Phase::kProgressing);
    EXPECT_EQ(wait.requests().size(), asked) << "no verdict while a pod is down";
    if (recovers) {
      sim.SettleAll();
      sim.Step(wait);
      EXPECT_EQ(sim.phase(), Phase::kProgressing);
      EXPECT_EQ(sim.status().analysis_start_time, start);
      EXPECT_EQ(sim.status().not_ready_since, absl::InfinitePast());
      EXPECT_GT(wait.requests().size(), asked);
      EXPECT_EQ(wait.requests().back().analysis_start, start);
    } else {
      sim.now() += absl::Minutes(2);  // 6 minutes since the blip
      sim.Step(wait, /*settle=*/false);
      EXPECT_EQ(sim.phase(), Phase::kRollingBack);
      EXPECT_EQ(sim.status().last_transition->reason, "ProgressDeadlineExceeded");
    }
  }
}

TEST(BaselineDeploymentTest, IsOwnedByTheProfileAndSelectsOnlyItsOwnPods) {
  ProfileMeta meta;
  meta.name = "p";
  meta.namespace_ = "shop";
  meta.uid = "puid";
  DeploymentView t = ObserveDeployment(Json::parse(R"({
    "metadata": {"name": "web", "uid": "t"},
    "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": {}}})"));
  Json d = BaselineDeployment(meta, t, Json::object(), 1);
  EXPECT_EQ(d["metadata"]["name"], "web-booster-baseline");
  EXPECT_EQ(d["metadata"]["labels"][kArmLabel], kArmBaseline);
  EXPECT_EQ(d["metadata"]["ownerReferences"][0]["uid"], "puid");
  // The target's own pods (arm baseline, no fresh label) are never this Deployment's.
  EXPECT_EQ(d["spec"]["selector"]["matchLabels"],
            Json::parse(R"({"app": "web", "booster.dev/arm": "baseline",
                            "booster.dev/fresh-baseline": "true"})"));
  EXPECT_EQ(BaselineName("web"), "web-booster-baseline");
}

TEST(StepBaselineMarkerTest, TheFreshBaselinesWhileTheStepHasOneAndNeverTheTargetsThen) {
  Observations obs;
  obs.target = ObserveDeployment(Json::parse(R"({"metadata": {"name": "web"},
      "spec": {"template": {"metadata": {"annotations": {"booster.dev/template-hash": "t"}}}}})"));
  RolloutStatus s;
  EXPECT_EQ(StepBaselineMarker(s, obs), "t");  // analysis.baseline Target, or Time mode
  s.baseline_replicas = 2;
  EXPECT_EQ(StepBaselineMarker(s, obs), kNoFreshBaselineYet);  // not created yet
  obs.baseline = ObserveDeployment(Json::parse(R"({"metadata": {"name": "web-booster-baseline"},
      "spec": {"template": {"metadata": {"annotations": {"booster.dev/template-hash": "f"}}}}})"));
  EXPECT_EQ(StepBaselineMarker(s, obs), "f");
  s.baseline_replicas = 0;  // a step that falls back to the target
  EXPECT_EQ(StepBaselineMarker(s, obs), "t");
}

TEST(CanaryDeploymentTest, IsOwnedByTheProfileAndSelectsOnlyCanaryPods) {
  ProfileMeta meta;
  meta.name = "p";
  meta.namespace_ = "shop";
  meta.uid = "puid";
  DeploymentView t = ObserveDeployment(Json::parse(R"({
    "metadata": {"name": "web", "uid": "t"},
    "spec": {"replicas": 3, "minReadySeconds": 5,
             "selector": {"matchLabels": {"app": "web"},
                          "matchExpressions": [{"key": "tier", "operator": "Exists"}]},
             "strategy": {"type": "RollingUpdate"}, "template": {}}})"));
  Json d = CanaryDeployment(meta, t, Json::object(), 2);
  EXPECT_EQ(d["metadata"]["name"], "web-booster");
  EXPECT_EQ(d["metadata"]["namespace"], "shop");
  EXPECT_EQ(d["metadata"]["ownerReferences"][0]["kind"], "BoosterProfile");
  EXPECT_EQ(d["metadata"]["ownerReferences"][0]["controller"], true);
  EXPECT_EQ(d["spec"]["selector"]["matchLabels"],
            Json::parse(R"({"app": "web", "booster.dev/arm": "canary"})"));
  EXPECT_EQ(d["spec"]["selector"]["matchExpressions"][0]["key"], "tier");
  EXPECT_EQ(d["spec"]["minReadySeconds"], 5);
  EXPECT_EQ(d["spec"]["strategy"]["type"], "RollingUpdate");
  EXPECT_EQ(d["spec"]["replicas"], 2);
}

TEST(ObserveDeploymentTest, ReadsWhatTheMachineNeeds) {
  DeploymentView v = ObserveDeployment(Json::parse(R"({
    "metadata": {"name": "web", "uid": "u", "generation": 4,
                 "annotations": {"booster.dev/scaled-to": "3", "n": 5}},
    "spec": {"replicas": 3, "template": {"metadata": {}}},
    "status": {"observedGeneration": 4, "replicas": 4, "updatedReplicas": 3,
               "readyReplicas": 3, "availableReplicas": 2}})"));
  EXPECT_TRUE(v.exists);
  EXPECT_EQ(v.generation, 4);
  EXPECT_EQ(v.observed_generation, 4);
  EXPECT_EQ(v.spec_replicas, 3);
  EXPECT_EQ(v.replicas, 4);
  EXPECT_EQ(v.updated_replicas, 3);
  EXPECT_EQ(v.available_replicas, 2);
  EXPECT_EQ(v.annotations.at(kScaledToAnnotation), "3");
  EXPECT_EQ(v.annotations.count("n"), 0u);
  EXPECT_FALSE(ObserveDeployment(nullptr).exists);
  EXPECT_FALSE(ObserveDeployment(Json::array()).exists);
}

}  // namespace
}  // namespace booster::rollout
