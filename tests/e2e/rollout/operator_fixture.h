// The fixture of the operator e2e suites (tests/e2e/rollout/operator_e2e_test.cc and
// tests/e2e/chaos/): its own namespace, its own booster-operator process watching it, a
// Deployment `web` of N=3 HTTP pods, a sampler of the replicas both Deployments request,
// and waits on the profile's status.
#ifndef BOOSTER_TESTS_E2E_ROLLOUT_OPERATOR_FIXTURE_H_
#define BOOSTER_TESTS_E2E_ROLLOUT_OPERATOR_FIXTURE_H_

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
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/e2e_util.h"
#include "tests/e2e/rollout/rollout_e2e_util.h"

namespace booster::e2e {

inline constexpr int kReplicas = 3;
inline constexpr char kCanary[] = "web-booster";

inline std::string Trim(absl::string_view s) { return std::string(absl::StripAsciiWhitespace(s)); }

inline std::string Profile(const std::string& ns, const std::string& steps,
                    const std::string& step_duration, const std::string& somaxconn = "3001",
                    const std::string& name = "web") {
  return absl::StrCat(R"(
apiVersion: booster.dev/v1alpha1
kind: BoosterProfile
metadata: {name: )",
                      name, ", namespace: ", ns, R"(}
spec:
  targetRef: {kind: Deployment, name: web}
  tuning:
    sysctls: {net.core.somaxconn: ")",
                      somaxconn, R"("}
    runtime:
      go: {gomaxprocs: auto, gomemlimit: auto}
      preload: {listenBacklog: 3000, tcpNoDelay: true}
  rollout:
    steps: )",
                      steps, R"(
    stepDuration: )",
                      step_duration, R"(
    progressDeadline: 5m
    analysis: {mode: Time, interval: 1s}
)");
}

// The Deployment `web` as the API server holds it, and the pod-template-hash of its
// newest ReplicaSet.
struct Snapshot {
  Json tmpl;
  int replicas = -1;
  std::string template_hash;
  Json annotations;
};

inline absl::StatusOr<Snapshot> TakeSnapshot(const std::string& ns) {
  absl::StatusOr<Json> d = GetJson({"-n", ns, "get", "deployment", "web"});
  if (!d.ok()) return d.status();
  Snapshot s;
  s.tmpl = (*d)["spec"]["template"];
  s.replicas = d->value("/spec/replicas"_json_pointer, -1);
  s.annotations = d->value("/metadata/annotations"_json_pointer, Json::object());
  std::string revision = s.annotations.value("deployment.kubernetes.io/revision", std::string());
  absl::StatusOr<Json> rss = GetJson({"-n", ns, "get", "replicasets"});
  if (!rss.ok()) return rss.status();
  for (const Json& rs : (*rss)["items"]) {
    bool owned = false;
    for (const Json& o : rs.value("/metadata/ownerReferences"_json_pointer, Json::array())) {
      owned |= o.value("kind", "") == "Deployment" && o.value("name", "") == "web";
    }
    if (owned && rs.value("/metadata/annotations/deployment.kubernetes.io~1revision"_json_pointer,
                          std::string()) == revision) {
      s.template_hash = rs.value("/metadata/labels/pod-template-hash"_json_pointer, "");
    }
  }
  return s;
}

// When the Deployment's spec.replicas was last written, by its managedFields (RFC 3339,
// whole seconds; "" when no entry owns it), by someone other than the operator (kubectl, or
// the tests' field manager "team") when `others`, by anyone otherwise.
inline std::string ReplicasWrittenAt(const Json& deployment, bool others) {
  std::string latest;
  for (const Json& m : deployment.value("/metadata/managedFields"_json_pointer, Json::array())) {
    const std::string manager = m.value("manager", "");
    const bool other = manager == "team" || manager.rfind("kubectl", 0) == 0;
    if (others && !other) continue;
    if (!m.contains("/fieldsV1/f:spec/f:replicas"_json_pointer)) continue;
    latest = std::max(latest, m.value("time", std::string()));
  }
  return latest;
}

// Samples every 300 ms, from one consistent list, the replicas requested by the target and
// the canary, and the profile's phase, step and weight.
class RolloutSampler {
 public:
  struct Sample {
    int target = 0, canary = 0;
    // The target's count is someone else's write, newer than the canary's count: not a
    // total the operator asked for.
    bool target_by_others = false;
    std::string phase;
    int step = 0, weight = 0;
  };

  explicit RolloutSampler(std::string ns) : ns_(std::move(ns)) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~RolloutSampler() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::vector<Sample> samples() const {
    std::lock_guard<std::mutex> l(mu_);
    return samples_;
  }
  // The most replicas the operator's own writes requested: samples whose target count is
  // someone else's latest write (a team's apply of their manifest mid-canary, before the
  // operator re-splits it) are not the operator's doing and are left out.
  int MaxTotal() const {
    int m = 0;
    for (const Sample& s : samples()) {
      if (!s.target_by_others) m = std::max(m, s.target + s.canary);
    }
    return m;
  }
  // The distinct (phase, step, weight) states in the order they were seen.
  std::string History() const {
    std::vector<std::string> h;
    for (const Sample& s : samples()) {
      std::string e =
          absl::StrCat(s.phase, "/", s.step, "/", s.weight, "%(", s.target,
                       s.target_by_others ? "*" : "", "+", s.canary, ")");
      if (h.empty() || h.back() != e) h.push_back(e);
    }
    return absl::StrJoin(h, " -> ");
  }
  std::vector<int> Weights() const {
    std::vector<int> w;
    for (const Sample& s : samples()) {
      if (s.phase == "Progressing" && (w.empty() || w.back() != s.weight)) w.push_back(s.weight);
    }
    return w;
  }

 private:
  void Loop() {
    while (!stop_) {
      Sample s;
      absl::StatusOr<Json> deps =
          GetJson({"-n", ns_, "get", "deployments", "--show-managed-fields"});
      if (deps.ok()) {
        std::string others_at, canary_at;
        for (const Json& d : (*deps)["items"]) {
          std::string name = d.value("/metadata/name"_json_pointer, "");
          int r = d.value("/spec/replicas"_json_pointer, 0);
          if (name == "web") {
            s.target = r;
            others_at = ReplicasWrittenAt(d, /*others=*/true);
          }
          if (name == kCanary) canary_at = ReplicasWrittenAt(d, /*others=*/false);
          if (name == kCanary) s.canary = r;
        }
        // Someone else's count on the target written after the canary's last count: their
        // write (a manifest applied mid-canary), which the operator has not re-split yet.
        s.target_by_others = !others_at.empty() && others_at >= canary_at;
        absl::StatusOr<Json> bp = GetJson({"-n", ns_, "get", "boosterprofile", "web"});
        if (bp.ok()) {
          s.phase = bp->value("/status/phase"_json_pointer, "");
          s.step = bp->value("/status/currentStep"_json_pointer, 0);
          s.weight = bp->value("/status/canaryWeight"_json_pointer, 0);
        }
        std::lock_guard<std::mutex> l(mu_);
        samples_.push_back(s);
      }
      for (int i = 0; i < 3 && !stop_; ++i) usleep(100 * 1000);  // sampling period
    }
  }

  std::string ns_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::vector<Sample> samples_;
  std::thread thread_;
};

class OperatorE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::Status s = BuildImages();
    ASSERT_TRUE(s.ok()) << s;
    const char* crd = std::getenv("BOOSTER_CRD");
    ASSERT_NE(crd, nullptr);
    absl::StatusOr<std::string> r = Kubectl({"apply", "-f", crd});
    ASSERT_TRUE(r.ok()) << r.status();
    r = Kubectl({"wait", "--for=condition=Established", "--timeout=60s",
                 "crd/boosterprofiles.booster.dev"});
    ASSERT_TRUE(r.ok()) << r.status();
  }

  void SetUp() override {
    ASSERT_TRUE(ns_.status().ok()) << ns_.status();
    op_ = std::make_unique<OperatorProcess>(ns_.name());
  }

  void TearDown() override {
    if (HasFailure()) {
      std::printf("%s\n%s\n", Diagnose(ns_.name()).c_str(), op_->Logs().c_str());
    } else {
      std::printf("operator log: %s\n", op_->log_path().c_str());
    }
    if (op_->Running()) {
      absl::StatusOr<int> code = op_->Stop(absl::Seconds(20));
      EXPECT_TRUE(code.ok() && *code == 0)
          << "SIGTERM: " << (code.ok() ? absl::StrCat("exit ", *code) : code.status().ToString());
    }
    // With no operator left, nothing would remove the finalizer and the namespace would
    // never go away.
    absl::StatusOr<std::string> names =
        Kubectl({"-n", ns_.name(), "get", "boosterprofiles", "-o", "name"});
    for (absl::string_view n : absl::StrSplit(names.value_or(""), '\n', absl::SkipEmpty())) {
      (void)Kubectl({"-n", ns_.name(), "patch", std::string(n), "--type=merge", "-p",
                     R"({"metadata":{"finalizers":null}})"});
    }
  }

  const std::string& ns() const { return ns_.name(); }

  void DeployWeb() {
    absl::Status s = ApplyJson(DeploymentObject(ns(), "web", kReplicas, HttpServerTemplate("web")));
    ASSERT_TRUE(s.ok()) << s;
    s = WaitRolledOut(ns(), "web", absl::Minutes(3));
    ASSERT_TRUE(s.ok()) << s << Diagnose(ns());
  }

  void StartOperator() {
    absl::Status s = op_->Start();
    ASSERT_TRUE(s.ok()) << s << "\n" << op_->Logs();
  }

  absl::StatusOr<Json> ProfileObject(const std::string& name = "web") {
    return GetJson({"-n", ns(), "get", "boosterprofile", name});
  }

  // Waits for status.phase == `phase`; stops early on Failed (unless that is the wish).
  absl::Status WaitPhase(const std::string& phase, absl::Duration timeout,
                         const std::string& name = "web") {
    return WaitFor(
        [&]() -> absl::StatusOr<bool> {
          absl::StatusOr<Json> bp = ProfileObject(name);
          if (!bp.ok()) return absl::UnavailableError(bp.status().message());
          std::string got = bp->value("/status/phase"_json_pointer, "");
          if (got == phase) return true;
          if (got == "Failed" || (got == "RolledBack" && phase != "RolledBack")) {
            return absl::FailedPreconditionError(
                absl::StrCat("phase ", got, ": ", bp->value("status", Json::object()).dump()));
          }
          return absl::UnavailableError(absl::StrCat("phase ", got));
        },
        timeout);
  }

  // Waits until the canary runs at `weight` with all its pods ready.
  absl::Status WaitCanaryReadyAt(int weight, absl::Duration timeout,
                                 const std::string& name = "web") {
    return WaitFor(
        [&]() -> absl::StatusOr<bool> {
          absl::StatusOr<Json> bp = ProfileObject(name);
          if (!bp.ok()) return absl::UnavailableError(bp.status().message());
          int w = bp->value("/status/canaryWeight"_json_pointer, 0);
          std::string phase = bp->value("/status/phase"_json_pointer, "");
          if (phase != "Progressing" || w != weight) {
            return absl::UnavailableError(absl::StrCat(phase, " at ", w, "%"));
          }
          absl::StatusOr<Json> c = GetJson({"-n", ns(), "get", "deployment", kCanary});
          if (!c.ok()) return absl::UnavailableError(c.status().message());
          int want = c->value("/spec/replicas"_json_pointer, 0);
          int ready = c->value("/status/readyReplicas"_json_pointer, 0);
          if (want == 0 || ready != want) {
            return absl::UnavailableError(absl::StrCat("canary ", ready, "/", want, " ready"));
          }
          return true;
        },
        timeout);
  }

  absl::Status WaitCanaryGone() {
    return WaitFor(
        [&]() -> absl::StatusOr<bool> {
          absl::StatusOr<std::string> r = Kubectl(
              {"-n", ns(), "get", "deployment", kCanary, "--ignore-not-found", "-o", "name"});
          if (!r.ok()) return absl::UnavailableError(r.status().message());
          if (!Trim(*r).empty()) return absl::UnavailableError("the canary still exists");
          return true;
        },
        absl::Seconds(60));
  }

  // The Deployment is back to exactly `before`: template, replicas, ReplicaSet, no
  // Booster annotation, no canary.
  void ExpectRestored(const Snapshot& before) {
    absl::Status s = WaitCanaryGone();
    EXPECT_TRUE(s.ok()) << s;
    s = WaitRolledOut(ns(), "web", absl::Minutes(3));
    ASSERT_TRUE(s.ok()) << s;
    absl::StatusOr<Snapshot> after = TakeSnapshot(ns());
    ASSERT_TRUE(after.ok()) << after.status();
    EXPECT_EQ(after->replicas, before.replicas);
    EXPECT_EQ(after->tmpl, before.tmpl)
        << "before: " << before.tmpl.dump() << "\nafter:  " << after->tmpl.dump();
    EXPECT_EQ(after->template_hash, before.template_hash)
        << "the Deployment runs another ReplicaSet than before the profile";
    for (const auto& [key, value] : after->annotations.items()) {
      EXPECT_FALSE(absl::StartsWith(key, "booster.dev/")) << key << "=" << value.dump();
    }
  }

  // The condition `type` of profile `name` as {status, reason, message}, or nulls.
  Json Condition(const std::string& name, const std::string& type) {
    absl::StatusOr<Json> bp = ProfileObject(name);
    if (!bp.ok()) return Json::object();
    for (const Json& c : bp->value("/status/conditions"_json_pointer, Json::array())) {
      if (c.value("type", "") == type) return c;
    }
    return Json::object();
  }

  // Waits for a Warning Event of `reason` on profile `name` and returns its message.
  absl::StatusOr<std::string> WaitWarning(const std::string& name, const std::string& reason) {
    std::string message;
    absl::Status s = WaitFor(
        [&]() -> absl::StatusOr<bool> {
          absl::StatusOr<Json> events = GetJson(
              {"-n", ns(), "get", "events", "--field-selector",
               absl::StrCat("involvedObject.kind=BoosterProfile,involvedObject.name=", name)});
          if (!events.ok()) return absl::UnavailableError(events.status().message());
          for (const Json& e : (*events)["items"]) {
            if (e.value("reason", "") == reason && e.value("type", "") == "Warning") {
              message = e.value("message", "");
              return true;
            }
          }
          return absl::UnavailableError(absl::StrCat("no ", reason, " Event yet"));
        },
        absl::Minutes(1));
    if (!s.ok()) return s;
    return message;
  }

  // Waits for status.lastTransition.reason == `reason` on profile `name`.
  absl::Status WaitTransitionReason(const std::string& name, const std::string& reason) {
    return WaitFor(
        [&]() -> absl::StatusOr<bool> {
          absl::StatusOr<Json> bp = ProfileObject(name);
          if (!bp.ok()) return absl::UnavailableError(bp.status().message());
          if (bp->value("/status/lastTransition/reason"_json_pointer, "") == reason) return true;
          return absl::UnavailableError(bp->value("status", Json::object()).dump());
        },
        absl::Minutes(2));
  }

  absl::StatusOr<Json> DeploymentNamed(const std::string& name) {
    return GetJson({"-n", ns(), "get", "deployment", name});
  }

  // The Deployment `web`, the operator, and profile `web` held at 50% (a 10-minute step)
  // with the canary's pods ready. Returns the Deployment as it was before the profile.
  Snapshot DeployAndHoldAtFifty(const RolloutSampler& sampler) {
    DeployWeb();
    absl::StatusOr<Snapshot> before = TakeSnapshot(ns());
    EXPECT_TRUE(before.ok()) << before.status();
    EXPECT_FALSE(before.value_or(Snapshot{}).template_hash.empty());
    StartOperator();
    EXPECT_TRUE(Apply(Profile(ns(), "[50, 100]", "10m")).ok());
    absl::Status s = WaitCanaryReadyAt(50, absl::Minutes(4));
    EXPECT_TRUE(s.ok()) << s << "\nseen: " << sampler.History();
    return before.value_or(Snapshot{});
  }

  // Deletes profile `name` (waiting until it is gone) and expects the Deployment of before.
  void DeleteAndExpectRestored(const std::string& name, const Snapshot& before) {
    absl::StatusOr<std::string> del = Kubectl(
        {"-n", ns(), "delete", "boosterprofile", name, "--wait=true", "--timeout=120s"});
    ASSERT_TRUE(del.ok()) << del.status();
    ExpectRestored(before);
  }

  static void ExpectNeverAboveN(RolloutSampler& sampler) {
    sampler.Stop();
    std::printf("seen: %s\n", sampler.History().c_str());
    EXPECT_LE(sampler.MaxTotal(), kReplicas) << sampler.History();
  }

  TestNamespace ns_{"rollout-op"};
  std::unique_ptr<OperatorProcess> op_;
};

}  // namespace booster::e2e

#endif  // BOOSTER_TESTS_E2E_ROLLOUT_OPERATOR_FIXTURE_H_
