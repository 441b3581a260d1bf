// Chaos on the real cluster (issue 14): what users of canary controllers see go wrong in
// the real world, tried against booster-operator driving real pods. Each test has its own
// namespace, operator process and Deployment `web` of N=3 pods (tests/e2e/rollout/
// operator_fixture.h), samples the replicas both Deployments request all along, and
// checks that a rollout still ends as it would have, never asks for more than N pods, and
// that a rollback restores the template byte for byte:
//
//   - the operator SIGKILLed once in every phase (Enrolling, each step, Promoting,
//     RollingBack), a new process resuming each time;
//   - the operator dying right after a status write, before that status's actions
//     (BOOSTER_TEST_CRASH_AFTER_STATUS, operator/controller/reconciler.cc);
//   - etcd compacted and defragmented, then kube-apiserver stopped for 30 s mid-rollout
//     and restarted: the operator's watches come back through a relist (410) and the
//     rollout carries on;
//   - the kubelet restarted under running canary pods: the pods keep running, the
//     rollout carries on.
#include <sys/stat.h>

#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/e2e_util.h"
#include "tests/e2e/rollout/operator_fixture.h"
#include "tests/e2e/rollout/rollout_e2e_util.h"

namespace booster::e2e {
namespace {

using ::testing::HasSubstr;

class ChaosE2eTest : public OperatorE2eTest {
 protected:
  // Polls the profile every 100 ms until `pred(phase, step)` holds.
  absl::Status WaitState(const std::function<bool(const std::string&, int)>& pred,
                         absl::Duration timeout, std::string* seen = nullptr) {
    const absl::Time deadline = absl::Now() + timeout;
    std::string last;
    while (absl::Now() < deadline) {
      absl::StatusOr<std::string> st = Kubectl(
          {"-n", ns(), "get", "bp", "web", "-o", "jsonpath={.status.phase} {.status.currentStep}"});
      if (st.ok()) {
        last = *st;
        std::vector<std::string> f = absl::StrSplit(*st, ' ');
        int step = 0;
        if (f.size() == 2 && absl::SimpleAtoi(f[1], &step) && pred(f[0], step)) {
          if (seen != nullptr) *seen = last;
          return absl::OkStatus();
        }
        if (f.size() >= 1 && (f[0] == "Failed")) {
          return absl::FailedPreconditionError("profile Failed: " + last);
        }
      }
      usleep(100 * 1000);
    }
    return absl::DeadlineExceededError("last state: " + last);
  }

  // The cluster scripts of tests/e2e/cluster.
  static absl::StatusOr<std::string> Cluster(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {ClusterDir() + "/" + args.front()};
    argv.insert(argv.end(), args.begin() + 1, args.end());
    return RunCommand(argv);
  }

  // The pods of the canary Deployment: name -> "uid restarts".
  std::map<std::string, std::string> CanaryPods() {
    std::map<std::string, std::string> out;
    absl::StatusOr<Json> pods =
        GetJson({"-n", ns(), "get", "pods", "-l", "booster.dev/arm=canary"});
    if (!pods.ok()) return out;
    for (const Json& p : (*pods)["items"]) {
      int restarts = 0;
      for (const Json& c : p.value("/status/containerStatuses"_json_pointer, Json::array())) {
        restarts += c.value("restartCount", 0);
      }
      out[p.value("/metadata/name"_json_pointer, "")] =
          absl::StrCat(p.value("/metadata/uid"_json_pointer, ""), " ", restarts);
    }
    return out;
  }
};

// One SIGKILL in every phase of a rollout that promotes, then of one that rolls back;
// each time a new process (a new identity, so it waits for the dead one's Lease) resumes.
TEST_F(ChaosE2eTest, OperatorKilledInEveryPhaseEndsAsItWouldHave) {
  RolloutSampler sampler(ns());
  DeployWeb();
  StartOperator();
  ASSERT_TRUE(Apply(Profile(ns(), "[34, 67, 100]", "15s")).ok());
  struct Moment {
    const char* phase;
    int step;  // -1: any
  };
  std::vector<std::string> kills;
  for (const Moment& m : {Moment{"Enrolling", -1}, Moment{"Progressing", 1},
                          Moment{"Progressing", 2}, Moment{"Promoting", -1}}) {
    std::string seen;
    absl::Status at = WaitState(
        [&](const std::string& phase, int step) {
          return phase == m.phase && (m.step < 0 || step == m.step);
        },
        absl::Minutes(4), &seen);
    ASSERT_TRUE(at.ok()) << m.phase << " " << m.step << ": " << at << "\nseen: "
                         << sampler.History();
    ASSERT_TRUE(op_->Kill().ok());
    kills.push_back(seen);
    StartOperator();
  }
  absl::Status s = WaitPhase("Promoted", absl::Minutes(6));
  ASSERT_TRUE(s.ok()) << s << "\nseen: " << sampler.History();
  std::printf("killed at: %s\n", absl::StrJoin(kills, ", ").c_str());
  ASSERT_TRUE(WaitCanaryGone().ok());
  absl::StatusOr<Snapshot> promoted = TakeSnapshot(ns());
  ASSERT_TRUE(promoted.ok()) << promoted.status();
  EXPECT_EQ(promoted->replicas, kReplicas);

  // A second rollout, aborted at its first step; killed while rolling back. The rollback
  // must restore the promoted template byte for byte.
  ASSERT_TRUE(Apply(Profile(ns(), "[34, 67, 100]", "10m", "3002")).ok());
  s = WaitCanaryReadyAt(34, absl::Minutes(4));
  ASSERT_TRUE(s.ok()) << s << "\nseen: " << sampler.History();
  ASSERT_TRUE(
      Kubectl({"-n", ns(), "annotate", "bp", "web", "booster.dev/abort=chaos-1"}).ok());
  std::string seen;
  s = WaitState([](const std::string& phase, int) { return phase == "RollingBack"; },
                absl::Minutes(2), &seen);
  ASSERT_TRUE(s.ok()) << s << "\nseen: " << sampler.History();
  ASSERT_TRUE(op_->Kill().ok());
  StartOperator();
  s = WaitPhase("RolledBack", absl::Minutes(4));
  ASSERT_TRUE(s.ok()) << s << "\nseen: " << sampler.History();
  ASSERT_TRUE(WaitCanaryGone().ok());
  ASSERT_TRUE(WaitRolledOut(ns(), "web", absl::Minutes(3)).ok());
  absl::StatusOr<Snapshot> after = TakeSnapshot(ns());
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->replicas, promoted->replicas);
  EXPECT_EQ(after->tmpl, promoted->tmpl)
      << "before: " << promoted->tmpl.dump() << "\nafter:  " << after->tmpl.dump();
  EXPECT_EQ(after->template_hash, promoted->template_hash)
      << "the Deployment runs another ReplicaSet than before the rollout";
  ExpectNeverAboveN(sampler);
}

// The operator dies right after writing Promoting into the status and before the first
// promotion batch (the status says Promoting, the target still has the old template). The
// next process reads that status and carries out what it implies.
TEST_F(ChaosE2eTest, OperatorDyingRightAfterAStatusWriteResumesFromThatStatus) {
  RolloutSampler sampler(ns());
  DeployWeb();
  const std::string marker = absl::StrCat(::testing::TempDir(), "/crash-", ns());
  unlink(marker.c_str());
  setenv("BOOSTER_TEST_CRASH_AFTER_STATUS", absl::StrCat("Promoting:", marker).c_str(), 1);
  StartOperator();
  unsetenv("BOOSTER_TEST_CRASH_AFTER_STATUS");
  ASSERT_TRUE(Apply(Profile(ns(), "[50, 100]", "8s")).ok());
  absl::StatusOr<int> exited = op_->WaitExit(absl::Minutes(4));
  ASSERT_TRUE(exited.ok()) << exited.status() << "\nseen: " << sampler.History();
  EXPECT_EQ(*exited, 137);
  struct stat st {};
  EXPECT_EQ(stat(marker.c_str(), &st), 0) << "the hook did not fire";
  absl::StatusOr<Json> bp = ProfileObject();
  ASSERT_TRUE(bp.ok());
  EXPECT_EQ(bp->value("/status/phase"_json_pointer, ""), "Promoting");
  StartOperator();
  absl::Status s = WaitPhase("Promoted", absl::Minutes(5));
  ASSERT_TRUE(s.ok()) << s << "\nseen: " << sampler.History();
  ASSERT_TRUE(WaitCanaryGone().ok());
  absl::StatusOr<Snapshot> after = TakeSnapshot(ns());
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->replicas, kReplicas);
  EXPECT_EQ(after->tmpl["metadata"]["labels"].value("booster.dev/arm", ""), "promoted");
  ExpectNeverAboveN(sampler);
  EXPECT_THAT(op_->Logs(), HasSubstr("BOOSTER_TEST_CRASH_AFTER_STATUS: exiting after the "
                                     "Promoting status write"));
}

// etcd compacted (and defragmented) under the operator's open watches, then the API server
// down for 30 s mid-step and back. The operator (no leader election here, so that it is
// the same process before and after; with it, a leader that cannot renew exits and is
// restarted, see OperatorKilledInEveryPhaseEndsAsItWouldHave) relists and carries on.
TEST_F(ChaosE2eTest, ApiServerDownForThirtySecondsAfterACompactionMidRollout) {
  op_ = std::make_unique<OperatorProcess>(ns(), std::vector<std::string>{"--leader-elect=false"});
  RolloutSampler sampler(ns());
  DeployWeb();
  StartOperator();
  ASSERT_TRUE(Apply(Profile(ns(), "[34, 100]", "20s")).ok());
  absl::Status s = WaitCanaryReadyAt(34, absl::Minutes(4));
  ASSERT_TRUE(s.ok()) << s << "\nseen: " << sampler.History();
  absl::StatusOr<std::string> rev = Cluster({"etcd-compact"});
  ASSERT_TRUE(rev.ok()) << rev.status();
  std::printf("etcd compacted at revision %s", rev->c_str());  // ends with a newline
  const absl::Time down = absl::Now();
  absl::StatusOr<std::string> restarted = Cluster({"restart", "kube-apiserver", "--down", "30"});
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  std::printf("API server back after %s\n", absl::FormatDuration(absl::Now() - down).c_str());
  ASSERT_TRUE(op_->Running());
  s = WaitPhase("Promoted", absl::Minutes(5));
  ASSERT_TRUE(s.ok()) << s << "\nseen: " << sampler.History() << "\n" << op_->Logs();
  EXPECT_TRUE(op_->Running()) << "the operator survived the outage";
  ASSERT_TRUE(WaitCanaryGone().ok());
  ExpectNeverAboveN(sampler);
  // Its watches failed while the server was down, and came back through a relist: their
  // resourceVersions were compacted away (410 Gone).
  EXPECT_THAT(op_->Logs(), HasSubstr("watch failed")) << "the outage was not seen";
  absl::StatusOr<std::string> metrics = op_->Metrics();
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  double relists = 0;
  for (absl::string_view line : absl::StrSplit(*metrics, '\n')) {
    double v = 0;
    if (absl::StartsWith(line, "booster_operator_informer_relists{") &&
        absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &v)) {
      relists += v;
    }
  }
  std::printf("informer relists after the outage: %g\n", relists);
  EXPECT_GE(relists, 1) << *metrics;
}

// The kubelet restarted under the running canary pods: they keep running (same pods, no
// container restart), and the rollout carries on to Promoted.
TEST_F(ChaosE2eTest, KubeletRestartedUnderRunningCanaryPods) {
  RolloutSampler sampler(ns());
  DeployWeb();
  StartOperator();
  ASSERT_TRUE(Apply(Profile(ns(), "[34, 100]", "30s")).ok());
  absl::Status s = WaitCanaryReadyAt(34, absl::Minutes(4));
  ASSERT_TRUE(s.ok()) << s << "\nseen: " << sampler.History();
  const std::map<std::string, std::string> before = CanaryPods();
  ASSERT_FALSE(before.empty());
  absl::StatusOr<std::string> restarted = Cluster({"restart", "kubelet", "--down", "10"});
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  // Still the same pods, not restarted, until the rollout moves them on.
  EXPECT_EQ(CanaryPods(), before);
  s = WaitPhase("Promoted", absl::Minutes(5));
  ASSERT_TRUE(s.ok()) << s << "\nseen: " << sampler.History();
  ASSERT_TRUE(WaitCanaryGone().ok());
  ExpectNeverAboveN(sampler);
}

}  // namespace
}  // namespace booster::e2e
