// Booster beside a team that ships (docs/rollout.md, "Living beside the team"): the team
// applies its own manifest (client-side and server-side), replaces it, runs `kubectl
// rollout restart`, `kubectl set env` and `kubectl scale`, and a real HorizontalPodAutoscaler
// scales the target, all while a canary runs or after promotion. Each test ends by deleting
// the profile and checking that the Deployment is exactly the team's latest template (as
// the API server makes it of their manifest) with none of Booster's parts.
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "operator/rollout/pod_template.h"
#include "operator/rollout/state_machine.h"
#include "tests/e2e/e2e_util.h"
#include "tests/e2e/rollout/operator_fixture.h"
#include "tests/e2e/rollout/rollout_e2e_util.h"

namespace booster::e2e {
namespace {

using ::testing::HasSubstr;

// The team's manifest of `web`: their image, a RELEASE variable, their replica count.
Json TeamDeployment(const std::string& ns, const std::string& image, const std::string& release,
                    int replicas = kReplicas) {
  Json tmpl = HttpServerTemplate("web");
  tmpl["spec"]["containers"][0]["image"] = image;
  tmpl["spec"]["containers"][0]["env"] = Json::array({{{"name", "RELEASE"}, {"value", release}}});
  return DeploymentObject(ns, "web", replicas, tmpl);
}

// How the team writes their manifest: `kubectl apply` (client-side), `kubectl apply
// --server-side` (as Flux and Argo CD's server-side sync do; Booster owns spec.replicas
// mid-rollout, so it takes --force-conflicts as they do), or `kubectl replace`.
enum class Write { kApply, kServerSideApply, kReplace };

absl::Status TeamWrites(Write how, const Json& manifest) {
  std::vector<std::string> args;
  switch (how) {
    case Write::kApply:
      args = {"apply"};
      break;
    case Write::kServerSideApply:
      args = {"apply", "--server-side", "--force-conflicts", "--field-manager=team"};
      break;
    case Write::kReplace:
      args = {"replace"};
      break;
  }
  args.push_back("-f");
  args.push_back("-");
  return Kubectl(args, manifest.dump()).status();
}

// The pod template the API server makes of the team's manifest (its defaults filled in): a
// server-side dry run of it under another name.
Json ServerTemplate(const Json& manifest) {
  Json m = manifest;
  m["metadata"]["name"] = "web-dry-run";
  absl::StatusOr<std::string> out =
      Kubectl({"create", "--dry-run=server", "-o", "json", "-f", "-"}, m.dump());
  EXPECT_TRUE(out.ok()) << out.status();
  Json d = Json::parse(out.value_or("{}"), nullptr, /*allow_exceptions=*/false);
  return d.is_object() ? d.value("/spec/template"_json_pointer, Json::object()) : Json::object();
}

class CoexistE2eTest : public OperatorE2eTest {
 protected:
  Json Target() {
    absl::StatusOr<Json> d = DeploymentNamed("web");
    EXPECT_TRUE(d.ok()) << d.status();
    return d.value_or(Json::object());
  }
  Json TargetTemplate() { return Target().value("/spec/template"_json_pointer, Json::object()); }

  // The team's part of the target's template: Booster's layer taken off.
  Json TeamPart() { return rollout::TeamTemplate(TargetTemplate(), rollout::MutationOptions{}); }

  // How many times an Event of `reason` was recorded on profile `web` (an identical one
  // bumps the count of the first, as client-go's correlator does).
  int EventCount(const std::string& reason) {
    int n = 0;
    absl::StatusOr<Json> events =
        GetJson({"-n", ns(), "get", "events", "--field-selector",
                 "involvedObject.kind=BoosterProfile,involvedObject.name=web"});
    if (!events.ok()) return n;
    for (const Json& e : (*events)["items"]) {
      if (e.value("reason", "") == reason) n += e.value("count", 1);
    }
    return n;
  }

  absl::Status WaitEvents(const std::string& reason, int count) {
    return WaitFor(
        [&]() -> absl::StatusOr<bool> {
          const int n = EventCount(reason);
          if (n >= count) return true;
          return absl::UnavailableError(absl::StrCat(n, " ", reason, " Events"));
        },
        absl::Minutes(2));
  }

  // Waits until the profile is at step `step` of phase Progressing with both arms' pods
  // ready on templates whose team part is `team`.
  absl::Status WaitBothArmsOn(const Json& team, int weight) {
    return WaitFor(
        [&]() -> absl::StatusOr<bool> {
          absl::Status ready = WaitCanaryReadyAt(weight, absl::Seconds(1));
          if (!ready.ok()) return absl::UnavailableError(ready.message());
          absl::StatusOr<Json> canary = DeploymentNamed(kCanary);
          if (!canary.ok()) return absl::UnavailableError(canary.status().message());
          const Json c = rollout::TeamTemplate(
              canary->value("/spec/template"_json_pointer, Json::object()),
              rollout::MutationOptions{});
          Json expect_canary = team;  // the canary carries its own arm label only
          if (c != expect_canary || TeamPart() != team) {
            return absl::UnavailableError("an arm is not on the new revision yet");
          }
          absl::Status rolled = WaitRolledOut(ns(), "web", absl::Seconds(5));
          if (!rolled.ok()) return absl::UnavailableError(rolled.message());
          return true;
        },
        absl::Minutes(3));
  }

  // Deletes the profile and expects the Deployment to be exactly `team` (the template the
  // API server made of the team's latest manifest) with `replicas`, and none of Booster's
  // parts or annotations; the old template's ReplicaSet when nobody changed it.
  void DeleteAndExpectTheTeams(const Json& team, int replicas) {
    absl::StatusOr<std::string> del = Kubectl(
        {"-n", ns(), "delete", "boosterprofile", "web", "--wait=true", "--timeout=120s"});
    ASSERT_TRUE(del.ok()) << del.status();
    absl::Status s = WaitCanaryGone();
    EXPECT_TRUE(s.ok()) << s;
    s = WaitRolledOut(ns(), "web", absl::Minutes(3));
    ASSERT_TRUE(s.ok()) << s << Diagnose(ns());
    const Json d = Target();
    EXPECT_EQ(d.value("/spec/template"_json_pointer, Json::object()), team)
        << "the team's latest: " << team.dump()
        << "\nafter deletion: " << d.value("/spec/template"_json_pointer, Json::object()).dump();
    EXPECT_EQ(d.value("/spec/replicas"_json_pointer, -1), replicas);
    const Json annotations = d.value("/metadata/annotations"_json_pointer, Json::object());
    for (const auto& [key, value] : annotations.items()) {
      EXPECT_FALSE(absl::StartsWith(key, "booster.dev/")) << key << "=" << value.dump();
    }
  }

  void ExpectPromotedWithLayer(const Json& team) {
    absl::StatusOr<Json> bp = ProfileObject();
    ASSERT_TRUE(bp.ok()) << bp.status();
    EXPECT_EQ(bp->value("/status/phase"_json_pointer, ""), "Promoted");
    EXPECT_EQ(Condition("web", rollout::kConditionLayerIntact).value("status", ""),
              "True");
    const Json live = TargetTemplate();
    EXPECT_TRUE(rollout::IsEnrolled(live));
    EXPECT_EQ(rollout::TemplateArm(live), rollout::kArmPromoted);
    EXPECT_TRUE(rollout::TemplateTuning(live).has_value());
    EXPECT_EQ(TeamPart(), team) << "the team's template inside the tuned one";
  }
};

// Promoted, then three releases of the team: their manifest applied client-side, then
// server-side, then a `kubectl replace` that takes Booster's layer off. The tuning stays
// through the applies; the replace is reported and not undone; deleting the profile
// leaves their latest.
TEST_F(CoexistE2eTest, APromotedTuningStaysThroughTheTeamsReleasesAndDeletionLeavesTheirLatest) {
  ASSERT_TRUE(ApplyJson(TeamDeployment(ns(), kAppImage, "v1")).ok());
  ASSERT_TRUE(WaitRolledOut(ns(), "web", absl::Minutes(3)).ok()) << Diagnose(ns());
  StartOperator();
  ASSERT_TRUE(Apply(Profile(ns(), "[100]", "3s")).ok());
  absl::Status s = WaitPhase("Promoted", absl::Minutes(4));
  ASSERT_TRUE(s.ok()) << s;

  const Json v2 = TeamDeployment(ns(), kAppImageV2, "v2");
  ASSERT_TRUE(TeamWrites(Write::kApply, v2).ok());
  s = WaitRolledOut(ns(), "web", absl::Minutes(3));
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(WaitEvents("NewRevision", 1).ok());
  ExpectPromotedWithLayer(ServerTemplate(v2));

  Json v3 = TeamDeployment(ns(), kAppImageV2, "v3");
  ASSERT_TRUE(TeamWrites(Write::kServerSideApply, v3).ok());
  s = WaitRolledOut(ns(), "web", absl::Minutes(3));
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(WaitEvents("NewRevision", 2).ok());
  ExpectPromotedWithLayer(ServerTemplate(v3));

  // A replace puts their manifest in place whole: Booster's parts are gone. Booster says
  // so, and leaves it.
  const Json v4 = TeamDeployment(ns(), kAppImage, "v4");
  ASSERT_TRUE(TeamWrites(Write::kReplace, v4).ok());
  absl::StatusOr<std::string> warning = WaitWarning("web", "LayerRemoved");
  ASSERT_TRUE(warning.ok()) << warning.status();
  EXPECT_THAT(*warning, HasSubstr("container booster-agent is missing"));
  EXPECT_THAT(*warning, HasSubstr("sysctl net.core.somaxconn is missing"));
  const Json layer = Condition("web", rollout::kConditionLayerIntact);
  EXPECT_EQ(layer.value("status", ""), "False");
  EXPECT_EQ(layer.value("reason", ""), "RemovedByOthers");
  s = WaitRolledOut(ns(), "web", absl::Minutes(3));
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_FALSE(rollout::IsEnrolled(TargetTemplate())) << "the tuning was put back untested";
  absl::StatusOr<Snapshot> replaced = TakeSnapshot(ns());
  ASSERT_TRUE(replaced.ok());

  DeleteAndExpectTheTeams(ServerTemplate(v4), kReplicas);
  absl::StatusOr<Snapshot> after = TakeSnapshot(ns());
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->template_hash, replaced->template_hash) << "a new ReplicaSet for nothing";
}

// Their new release applied server-side mid-canary: kept, the canary rebuilt on it, the
// analysis back at step 1 with both arms on it, and the tuning promoted with it.
TEST_F(CoexistE2eTest, ANewReleaseMidCanaryRestartsTheCanaryOnItAndIsPromotedWithIt) {
  RolloutSampler sampler(ns());
  ASSERT_TRUE(ApplyJson(TeamDeployment(ns(), kAppImage, "v1")).ok());
  ASSERT_TRUE(WaitRolledOut(ns(), "web", absl::Minutes(3)).ok()) << Diagnose(ns());
  StartOperator();
  ASSERT_TRUE(Apply(Profile(ns(), "[50, 100]", "40s")).ok());
  absl::Status s = WaitCanaryReadyAt(50, absl::Minutes(3));
  ASSERT_TRUE(s.ok()) << s << "\nseen: " << sampler.History();

  const Json v2 = TeamDeployment(ns(), kAppImageV2, "v2");
  ASSERT_TRUE(TeamWrites(Write::kServerSideApply, v2).ok());
  s = WaitTransitionReason("web", "NewRevision");
  ASSERT_TRUE(s.ok()) << s;
  absl::StatusOr<Json> bp = ProfileObject();
  ASSERT_TRUE(bp.ok());
  EXPECT_EQ(bp->value("/status/currentStep"_json_pointer, 0), 1);
  EXPECT_THAT(bp->value("/status/lastTransition/message"_json_pointer, ""),
              HasSubstr("new revision, restarting"));
  EXPECT_EQ(Condition("web", "TargetModified").value("reason", ""), "NewRevision");
  s = WaitBothArmsOn(ServerTemplate(v2), 50);
  ASSERT_TRUE(s.ok()) << s << "\nseen: " << sampler.History();
  EXPECT_EQ(rollout::TemplateArm(TargetTemplate()), rollout::kArmBaseline);

  s = WaitPhase("Promoted", absl::Minutes(4));
  ASSERT_TRUE(s.ok()) << s << "\nseen: " << sampler.History();
  ExpectPromotedWithLayer(ServerTemplate(v2));
  ExpectNeverAboveN(sampler);
  DeleteAndExpectTheTeams(ServerTemplate(v2), kReplicas);
}

// `kubectl rollout restart`, then their manifest applied client-side, both mid-canary:
// each is a new revision that restarts the analysis; deleting the profile mid-canary
// leaves their latest (the restart's annotation included).
TEST_F(CoexistE2eTest, RolloutRestartAndAnApplyMidCanaryEachRestartTheAnalysis) {
  ASSERT_TRUE(ApplyJson(TeamDeployment(ns(), kAppImage, "v1")).ok());
  ASSERT_TRUE(WaitRolledOut(ns(), "web", absl::Minutes(3)).ok()) << Diagnose(ns());
  StartOperator();
  ASSERT_TRUE(Apply(Profile(ns(), "[50, 100]", "10m")).ok());
  absl::Status s = WaitCanaryReadyAt(50, absl::Minutes(3));
  ASSERT_TRUE(s.ok()) << s;

  ASSERT_TRUE(Kubectl({"-n", ns(), "rollout", "restart", "deployment/web"}).ok());
  s = WaitEvents("NewRevision", 1);
  ASSERT_TRUE(s.ok()) << s;
  const std::string restarted =
      TargetTemplate().value("/metadata/annotations/kubectl.kubernetes.io~1restartedAt"_json_pointer,
                             "");
  ASSERT_FALSE(restarted.empty());
  Json team = ServerTemplate(TeamDeployment(ns(), kAppImage, "v1"));
  team["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"] = restarted;
  s = WaitBothArmsOn(team, 50);
  ASSERT_TRUE(s.ok()) << s;

  const Json v2 = TeamDeployment(ns(), kAppImageV2, "v2");
  ASSERT_TRUE(TeamWrites(Write::kApply, v2).ok());
  s = WaitEvents("NewRevision", 2);
  ASSERT_TRUE(s.ok()) << s;
  team = ServerTemplate(v2);
  team["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"] = restarted;
  s = WaitBothArmsOn(team, 50);
  ASSERT_TRUE(s.ok()) << s;
  absl::StatusOr<Json> bp = ProfileObject();
  ASSERT_TRUE(bp.ok());
  EXPECT_EQ(bp->value("/status/phase"_json_pointer, ""), "Progressing");
  EXPECT_EQ(bp->value("/status/currentStep"_json_pointer, 0), 1);

  DeleteAndExpectTheTeams(team, kReplicas);
}

// A new revision while the tuning is being promoted: back to the canary on the new
// revision (the target is the untuned baseline again), then promoted with it.
TEST_F(CoexistE2eTest, ANewRevisionDuringPromotionGoesBackToTheCanaryOnIt) {
  Json v1 = TeamDeployment(ns(), kAppImage, "v1");
  // Each promotion batch waits 6 s for its pods to count as available: a window to act in.
  v1["spec"]["minReadySeconds"] = 6;
  ASSERT_TRUE(ApplyJson(v1).ok());
  ASSERT_TRUE(WaitRolledOut(ns(), "web", absl::Minutes(3)).ok()) << Diagnose(ns());
  StartOperator();
  ASSERT_TRUE(Apply(Profile(ns(), "[50, 100]", "2s")).ok());
  absl::Status s = WaitFor(
      [&]() -> absl::StatusOr<bool> {
        absl::StatusOr<Json> bp = ProfileObject();
        const std::string phase = bp.ok() ? bp->value("/status/phase"_json_pointer, "") : "";
        if (phase == "Promoted") return absl::FailedPreconditionError("promoted already");
        if (phase != "Promoting") return absl::UnavailableError(phase);
        return true;
      },
      absl::Minutes(4), absl::Milliseconds(200));
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(Kubectl({"-n", ns(), "set", "env", "deployment/web", "RELEASE=v2"}).ok());
  s = WaitTransitionReason("web", "NewRevision");
  ASSERT_TRUE(s.ok()) << s;
  absl::StatusOr<Json> bp = ProfileObject();
  ASSERT_TRUE(bp.ok());
  EXPECT_EQ(bp->value("/status/lastTransition/from"_json_pointer, ""), "Promoting");
  EXPECT_EQ(bp->value("/status/currentStep"_json_pointer, 0), 1);

  Json v2 = v1;
  v2["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] = "v2";
  const Json team = ServerTemplate(v2);
  s = WaitPhase("Promoted", absl::Minutes(5));
  ASSERT_TRUE(s.ok()) << s;
  ExpectPromotedWithLayer(team);
  DeleteAndExpectTheTeams(team, kReplicas);
}

// `kubectl scale` up, down, to 0 and back mid-canary: the number is the app's total,
// re-split at the step's weight; at 0 the rollout holds; deleting the profile leaves their
// count and their template (the ReplicaSet of before).
TEST_F(CoexistE2eTest, ScalingMidCanaryUpDownAndToZeroIsTheAppsTotal) {
  RolloutSampler sampler(ns());
  const Snapshot before = DeployAndHoldAtFifty(sampler);
  auto split = [&](int total, int target, int canary) -> absl::Status {
    return WaitFor(
        [&]() -> absl::StatusOr<bool> {
          absl::StatusOr<Json> bp = ProfileObject();
          absl::StatusOr<Json> t = DeploymentNamed("web");
          absl::StatusOr<Json> c = DeploymentNamed(kCanary);
          if (!bp.ok() || !t.ok() || !c.ok()) return absl::UnavailableError("reading");
          const int st = bp->value("/status/totalReplicas"_json_pointer, -1);
          const int tr = t->value("/spec/replicas"_json_pointer, -1);
          const int cr = c->value("/spec/replicas"_json_pointer, -1);
          if (st == total && tr == target && cr == canary) return true;
          return absl::UnavailableError(absl::StrCat("total ", st, ": ", tr, " + ", cr));
        },
        absl::Minutes(1), absl::Milliseconds(200));
  };
  auto scale = [&](int n) {
    ASSERT_TRUE(Kubectl({"-n", ns(), "scale", "deployment/web", absl::StrCat("--replicas=", n)})
                    .ok());
  };
  scale(5);  // 50% of 5: 3 on the canary
  absl::Status s = split(5, 2, 3);
  ASSERT_TRUE(s.ok()) << s << "\nseen: " << sampler.History();
  scale(1);  // the target had 2: 1 is a change, the app's total is 1
  s = split(1, 0, 1);
  ASSERT_TRUE(s.ok()) << s << "\nseen: " << sampler.History();
  scale(2);
  s = split(2, 1, 1);
  ASSERT_TRUE(s.ok()) << s << "\nseen: " << sampler.History();
  scale(0);
  s = split(0, 0, 0);
  ASSERT_TRUE(s.ok()) << s << "\nseen: " << sampler.History();
  ASSERT_TRUE(WaitEvents("ScaledToZero", 1).ok());
  absl::StatusOr<Json> bp = ProfileObject();
  ASSERT_TRUE(bp.ok());
  EXPECT_EQ(bp->value("/status/phase"_json_pointer, ""), "Progressing");
  EXPECT_THAT(Condition("web", "Progressing").value("message", ""), HasSubstr("held"));
  scale(3);
  s = split(3, 1, 2);
  ASSERT_TRUE(s.ok()) << s << "\nseen: " << sampler.History();
  s = WaitCanaryReadyAt(50, absl::Minutes(2));
  ASSERT_TRUE(s.ok()) << s;
  sampler.Stop();
  std::printf("seen: %s\n", sampler.History().c_str());

  DeleteAndExpectRestored("web", before);
}

// A real HPA (metrics-server, CPU) scales the target up under load and down without it
// while a canary runs: Booster takes its number as the app's total, keeps its minReplicas
// on the target, and at no poll are more pods requested than the HPA wants plus one.
TEST_F(CoexistE2eTest, ARealHpaScalingMidCanaryIsObeyedAndNeverInflated) {
  Json web = TeamDeployment(ns(), kAppImage, "v1", 2);
  // Requests 100m, limit 200m: spinning, a pod runs at 200% of its request.
  web["spec"]["template"]["spec"]["containers"][0]["resources"] =
      Json::parse(R"({"requests": {"cpu": "100m", "memory": "32Mi"},
                      "limits": {"cpu": "200m", "memory": "64Mi"}})");
  ASSERT_TRUE(ApplyJson(web).ok());
  ASSERT_TRUE(WaitRolledOut(ns(), "web", absl::Minutes(3)).ok()) << Diagnose(ns());
  const Json team = ServerTemplate(web);
  ASSERT_TRUE(Apply(FastCpuHpaYaml(ns(), "web", 2, 4)).ok());
  StartOperator();
  // One canary pod at 25% of up to 4; the HPA's minimum (2) stays on the target.
  ASSERT_TRUE(Apply(Profile(ns(), "[25, 100]", "10m")).ok());
  absl::Status s = WaitCanaryReadyAt(25, absl::Minutes(3));
  ASSERT_TRUE(s.ok()) << s;

  // Every 300 ms: both Deployments and the HPA's wish, from one list call.
  struct Poll {
    int target = 0, canary = 0, desired = -1;
  };
  std::vector<Poll> polls;
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::thread poller([&] {
    while (!stop) {
      absl::StatusOr<Json> all = GetJson({"-n", ns(), "get", "deployments,hpa"});
      if (all.ok()) {
        Poll p;
        for (const Json& o : (*all)["items"]) {
          const std::string kind = o.value("kind", ""), name = o.value("/metadata/name"_json_pointer, "");
          if (kind == "Deployment" && name == "web") p.target = o.value("/spec/replicas"_json_pointer, 0);
          if (kind == "Deployment" && name == kCanary) p.canary = o.value("/spec/replicas"_json_pointer, 0);
          if (kind == "HorizontalPodAutoscaler") {
            p.desired = o.value("/status/desiredReplicas"_json_pointer, -1);
          }
        }
        std::lock_guard<std::mutex> l(mu);
        polls.push_back(p);
      }
      absl::SleepFor(absl::Milliseconds(300));
    }
  });
  auto total_is = [&](int total) {
    return WaitFor(
        [&]() -> absl::StatusOr<bool> {
          absl::StatusOr<Json> bp = ProfileObject();
          absl::StatusOr<HpaStatus> hpa = GetHpaStatus(ns(), "web");
          const int got = bp.ok() ? bp->value("/status/totalReplicas"_json_pointer, -1) : -1;
          if (got == total) return true;
          return absl::UnavailableError(absl::StrCat(
              "total ", got, "; HPA desired ", hpa.ok() ? hpa->desired_replicas : -1,
              " utilization ", hpa.ok() ? hpa->utilization : -1, "%"));
        },
        absl::Minutes(4), absl::Seconds(1));
  };
  absl::StatusOr<std::string> ips = Kubectl(
      {"-n", ns(), "get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].status.podIP}"});
  ASSERT_TRUE(ips.ok()) << ips.status();
  std::vector<std::unique_ptr<CpuLoad>> load;
  for (absl::string_view ip : absl::StrSplit(Trim(*ips), ' ', absl::SkipEmpty())) {
    load.push_back(std::make_unique<CpuLoad>(absl::StrCat("http://", ip, ":8080/work?ms=1000")));
  }
  s = total_is(4);
  EXPECT_TRUE(s.ok()) << s;
  absl::StatusOr<Json> bp = ProfileObject();
  ASSERT_TRUE(bp.ok());
  EXPECT_EQ(bp->value("/status/canaryReplicas"_json_pointer, -1), 1);  // ceil(4 * 25%)
  // Pinned at maxReplicas 4 under this load, the HPA writes 4 on every sync while the target
  // has 3: written again, the target keeps its 4 and the canary's pod comes on top, and the
  // two stop trading pods.
  s = WaitEvents("HPAHoldsTarget", 1);
  EXPECT_TRUE(s.ok()) << s;
  absl::Time held = absl::Now();
  int changes = 0, last = -1;
  s = WaitFor(
      [&]() -> absl::StatusOr<bool> {
        absl::StatusOr<Json> t = DeploymentNamed("web");
        const int n = t.ok() ? t->value("/spec/replicas"_json_pointer, -1) : -1;
        if (last >= 0 && n != last) ++changes;
        last = n;
        // Three of the HPA's syncs (every 5 s on this cluster).
        if (absl::Now() - held < absl::Seconds(16)) return absl::UnavailableError("watching");
        return true;
      },
      absl::Seconds(30), absl::Milliseconds(300));
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(changes, 0) << "the target's count moved while the HPA held it";
  EXPECT_EQ(last, 4);
  bp = ProfileObject();
  ASSERT_TRUE(bp.ok());
  EXPECT_EQ(bp->value("/status/stableReplicas"_json_pointer, -1), 4);
  EXPECT_EQ(bp->value("/status/canaryReplicas"_json_pointer, -1), 1);
  for (auto& l : load) l->Stop();
  s = total_is(2);  // idle again: the HPA's minimum
  EXPECT_TRUE(s.ok()) << s;
  s = WaitCanaryReadyAt(25, absl::Minutes(2));
  EXPECT_TRUE(s.ok()) << s;
  stop = true;
  poller.join();

  // The HPA writes the target's scale before its own status, and a poll lists the
  // Deployments before the HPA: one poll may see the new count beside the previous
  // desiredReplicas. The HPA's wish at a poll is therefore taken as the highest of the
  // desired counts published at it, just before and just after it.
  int worst = 0, prev_desired = -1;
  std::vector<std::string> path;
  for (size_t i = 0; i < polls.size(); ++i) {
    const Poll& p = polls[i];
    if (p.desired <= 0) continue;  // the HPA has not computed a count yet
    const int next_desired = i + 1 < polls.size() ? polls[i + 1].desired : -1;
    const int allowed = std::max({p.desired, prev_desired, next_desired}) + 1;
    worst = std::max(worst, p.target + p.canary - allowed);
    EXPECT_LE(p.target + p.canary, allowed)
        << "target " << p.target << " + canary " << p.canary << " with the HPA at " << p.desired;
    const std::string e = absl::StrCat(p.target, "+", p.canary, "/", p.desired);
    if (path.empty() || path.back() != e) path.push_back(e);
    if (p.desired > 0) prev_desired = p.desired;
  }
  std::printf("hpa polls (target+canary/desired): %s; %zu polls, worst over desired+1: %d\n",
              absl::StrJoin(path, " -> ").c_str(), polls.size(), worst);
  EXPECT_GT(polls.size(), 20u);

  DeleteAndExpectTheTeams(team, 2);
  // The HPA owns the count again.
  absl::StatusOr<HpaStatus> hpa = GetHpaStatus(ns(), "web");
  ASSERT_TRUE(hpa.ok());
  EXPECT_EQ(hpa->desired_replicas, 2);
}

}  // namespace
}  // namespace booster::e2e
