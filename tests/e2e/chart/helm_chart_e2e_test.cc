// The Helm chart (charts/booster) on the real cluster: `helm install` with the operator
// image built from this tree; the operator pods become Ready under the chart's RBAC and
// security context, one of them holds the Lease, a BoosterProfile goes to Promoted (which
// exercises every permission the rollout needs), the standby takes over when the leader
// pod is deleted, and `helm uninstall` leaves no cluster-scoped object behind.
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/e2e_util.h"
#include "tests/e2e/rollout/rollout_e2e_util.h"

namespace booster::e2e {
namespace {

using ::testing::HasSubstr;

constexpr char kOperatorImage[] = "booster.local/operator:e2e";

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

absl::StatusOr<std::string> Helm(std::vector<std::string> args) {
  args.insert(args.begin(), Env("BOOSTER_HELM"));
  return RunCommand(args);
}

class HelmChartE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(Env("BOOSTER_HELM").empty()) << "BOOSTER_HELM is not set";
    ASSERT_TRUE(BuildImages().ok());
    absl::StatusOr<std::string> built =
        RunCommand({ClusterDir() + "/image", kOperatorImage, Env("BOOSTER_OPERATOR_BIN")});
    ASSERT_TRUE(built.ok()) << built.status();
    ASSERT_TRUE(system_ns_.status().ok()) << system_ns_.status();
    ASSERT_TRUE(app_ns_.status().ok()) << app_ns_.status();
    // A release name of its own, so nothing of this test collides with a user's install.
    absl::StatusOr<std::string> out = Helm(
        {"install", release_, Env("BOOSTER_CHART"), "--namespace", system_ns_.name(),
         "--set", "operator.image.repository=booster.local/operator",
         "--set", "operator.image.tag=e2e", "--set", "operator.image.pullPolicy=Never",
         "--set", "agent.image.repository=booster.local/agent",
         "--set", "agent.image.tag=e2e", "--set", "agent.image.pullPolicy=Never",
         "--set", "operator.logFormat=text", "--wait", "--timeout", "3m"});
    installed_ = out.ok();
    ASSERT_TRUE(out.ok()) << out.status() << "\n" << Diagnose(system_ns_.name());
  }

  void TearDown() override {
    if (HasFailure()) {
      std::cerr << Diagnose(system_ns_.name()) << Diagnose(app_ns_.name());
      absl::StatusOr<std::string> logs = Kubectl(
          {"-n", system_ns_.name(), "logs", "-l", "app.kubernetes.io/component=operator",
           "--tail=200", "--prefix"});
      std::cerr << (logs.ok() ? *logs : logs.status().ToString());
    }
    // Never leave a profile whose finalizer no operator will remove: its namespace could
    // not go away.
    (void)Kubectl({"-n", app_ns_.name(), "delete", "bp", "--all", "--timeout=60s"});
    (void)Kubectl({"-n", app_ns_.name(), "patch", "bp", "web", "--type=merge", "-p",
                   R"({"metadata":{"finalizers":null}})"});
    if (installed_) (void)Helm({"uninstall", release_, "--namespace", system_ns_.name()});
  }

  std::string Deployment() const { return release_ + "-booster-operator"; }

  absl::StatusOr<std::string> LeaseHolder() {
    return Kubectl({"-n", system_ns_.name(), "get", "lease", "booster-operator", "-o",
                    "jsonpath={.spec.holderIdentity}"});
  }

  absl::StatusOr<std::vector<std::string>> OperatorPods() {
    absl::StatusOr<std::string> names = Kubectl(
        {"-n", system_ns_.name(), "get", "pods", "-l", "app.kubernetes.io/component=operator",
         "--field-selector=status.phase=Running", "-o", "jsonpath={.items[*].metadata.name}"});
    if (!names.ok()) return names.status();
    return std::vector<std::string>(absl::StrSplit(*names, ' ', absl::SkipEmpty()));
  }

  // Waits until a Running operator pod other than `not` holds the Lease; returns it.
  absl::StatusOr<std::string> WaitLeader(const std::string& not_this, absl::Duration timeout) {
    std::string leader;
    absl::Status s = WaitFor(
        [&]() -> absl::StatusOr<bool> {
          absl::StatusOr<std::string> holder = LeaseHolder();
          absl::StatusOr<std::vector<std::string>> pods = OperatorPods();
          if (!holder.ok() || !pods.ok()) return absl::UnavailableError("no lease yet");
          for (const std::string& p : *pods) {
            if (p == *holder && p != not_this) {
              leader = p;
              return true;
            }
          }
          return absl::UnavailableError(absl::StrCat("holder '", *holder, "'"));
        },
        timeout);
    if (!s.ok()) return s;
    return leader;
  }

  std::string release_ = "chart-e2e";
  TestNamespace system_ns_{"booster-chart"};
  TestNamespace app_ns_{"chart-app"};
  bool installed_ = false;
};

TEST_F(HelmChartE2eTest, InstalledOperatorLeadsPromotesAProfileAndFailsOver) {
  // Both replicas Ready (their /readyz passed) and one of them leads.
  absl::StatusOr<std::string> ready = Kubectl(
      {"-n", system_ns_.name(), "get", "deploy", Deployment(), "-o",
       "jsonpath={.status.readyReplicas}"});
  ASSERT_TRUE(ready.ok()) << ready.status();
  EXPECT_EQ(*ready, "2");
  absl::StatusOr<std::string> leader = WaitLeader("", absl::Seconds(60));
  ASSERT_TRUE(leader.ok()) << leader.status();

  // A profile over a real Deployment is rolled out by the in-cluster operator: this needs
  // every permission of the chart's ClusterRole (profiles and their status and finalizer,
  // Deployments incl. create/delete of the canary, ReplicaSets, pods, HPAs, Events).
  const std::string& ns = app_ns_.name();
  ASSERT_TRUE(ApplyJson(DeploymentObject(ns, "web", 2, HttpServerTemplate("web"))).ok());
  ASSERT_TRUE(WaitRolledOut(ns, "web", absl::Minutes(3)).ok()) << Diagnose(ns);
  ASSERT_TRUE(Apply(absl::StrCat(R"(
apiVersion: booster.dev/v1alpha1
kind: BoosterProfile
metadata: {name: web, namespace: )", ns, R"(}
spec:
  targetRef: {kind: Deployment, name: web}
  tuning:
    runtime:
      go: {gomaxprocs: auto}
      preload: {listenBacklog: 1024, tcpNoDelay: true}
  rollout:
    steps: [50, 100]
    stepDuration: 5s
    progressDeadline: 3m
    analysis: {interval: 1s}
)")).ok());
  absl::Status promoted = WaitFor(
      [&]() -> absl::StatusOr<bool> {
        absl::StatusOr<std::string> phase =
            Kubectl({"-n", ns, "get", "bp", "web", "-o", "jsonpath={.status.phase}"});
        if (!phase.ok()) return phase.status();
        if (*phase == "Failed" || *phase == "RolledBack") {
          return absl::FailedPreconditionError("profile ended " + *phase);
        }
        if (*phase != "Promoted") return absl::UnavailableError("phase " + *phase);
        return true;
      },
      absl::Minutes(6), absl::Seconds(1));
  ASSERT_TRUE(promoted.ok()) << promoted;
  absl::StatusOr<std::string> env = Kubectl(
      {"-n", ns, "get", "deploy", "web", "-o",
       "jsonpath={.spec.template.spec.containers[?(@.name==\"web\")].env}"});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_THAT(*env, HasSubstr("GOMAXPROCS"));

  // The leader's pod goes away: the standby takes the Lease (15 s lease + 2 s retry).
  ASSERT_TRUE(Kubectl({"-n", system_ns_.name(), "delete", "pod", *leader, "--grace-period=0",
                       "--force", "--wait=false"})
                  .ok());
  absl::StatusOr<std::string> next = WaitLeader(*leader, absl::Seconds(45));
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_NE(*next, *leader);

  // The new leader serves the profile: deleting it unenrolls the target (original
  // template back, no Booster annotation) and removes the finalizer.
  ASSERT_TRUE(Kubectl({"-n", ns, "delete", "bp", "web", "--timeout=90s"}).ok())
      << Diagnose(ns);
  absl::StatusOr<std::string> annotations = Kubectl(
      {"-n", ns, "get", "deploy", "web", "-o", "jsonpath={.metadata.annotations}"});
  ASSERT_TRUE(annotations.ok()) << annotations.status();
  EXPECT_THAT(*annotations, ::testing::Not(HasSubstr("booster.dev/")));

  // Uninstall leaves no cluster-scoped object of the release (the CRD stays, by design).
  ASSERT_TRUE(Helm({"uninstall", release_, "--namespace", system_ns_.name(), "--wait"}).ok());
  installed_ = false;
  absl::StatusOr<std::string> roles = Kubectl(
      {"get", "clusterroles,clusterrolebindings", "-l",
       "app.kubernetes.io/instance=" + release_, "-o", "name"});
  ASSERT_TRUE(roles.ok()) << roles.status();
  EXPECT_EQ(*roles, "");
  EXPECT_TRUE(Kubectl({"get", "crd", "boosterprofiles.booster.dev"}).ok());
}

}  // namespace
}  // namespace booster::e2e
