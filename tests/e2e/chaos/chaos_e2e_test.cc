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
//     rollout carries on;
//   - the leader cut off from the API server (its packets dropped) while the standby
//     still reaches it: the leader's process exits before the standby takes the Lease;
//   - a canary pod's agent SIGKILLed between a durable journal entry and the change it
//     announces, and (killed from the host, then again by BOOSTER_TEST_CRASH_AT) halfway
//     through the revert its restart begins with: the next agent finishes the revert before
//     it applies anything, so the app's threads are journaled at their original CPUs
//     again and end placed once.
#include <signal.h>
#include <sys/stat.h>

#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "operator/rollout/pod_template.h"
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

// One replica cut off from the API server while the others still reach it: packets from
// processes of group `gid` to the API server's port on 127.0.0.1 are dropped (iptables,
// `-m owner --gid-owner`), so requests hang as in a real partition, not refused. Removed
// on Heal() or destruction; a rule a crashed run left behind is removed first.
class ApiServerPartition {
 public:
  ApiServerPartition(int port, gid_t gid)
      : rule_{"OUTPUT", "-p", "tcp", "-d", "127.0.0.1", "--dport", absl::StrCat(port), "-m",
              "owner", "--gid-owner", absl::StrCat(gid), "-m", "comment", "--comment",
              "booster-e2e-chaos", "-j", "DROP"} {
    while (Iptables("-D").ok()) {
    }
    status_ = Iptables("-I");
    on_ = status_.ok();
  }
  ~ApiServerPartition() { Heal(); }
  const absl::Status& status() const { return status_; }
  void Heal() {
    if (on_) {
      EXPECT_TRUE(Iptables("-D").ok());
    }
    on_ = false;
  }

 private:
  absl::Status Iptables(const std::string& op) {
    std::vector<std::string> argv = {"iptables", "-w", op};
    argv.insert(argv.end(), rule_.begin(), rule_.end());
    return RunCommand(argv).status();
  }
  std::vector<std::string> rule_;
  absl::Status status_;
  bool on_ = false;
};

// The journal's affinity entries: thread id -> the CPUs it had before the change.
std::map<int, std::string> JournaledOriginals(const std::string& journal) {
  std::map<int, std::string> out;
  for (absl::string_view line : absl::StrSplit(journal, '\n', absl::SkipEmpty())) {
    std::vector<std::string> f = absl::StrSplit(line, ' ');
    int tid = 0;
    // affinity <pid> <pid start> <tid> <tid start> <cpus>
    if (f.size() == 6 && f[0] == "affinity" && absl::SimpleAtoi(f[3], &tid)) out[tid] = f[5];
  }
  return out;
}

// Each thread of host process `pid` by its id in the pod (what the agent journals) ->
// Cpus_allowed_list.
std::map<int, std::string> ThreadCpus(pid_t pid) {
  std::map<int, std::string> out;
  for (const ThreadView& t : Threads(pid)) {
    if (t.pod_tid > 0) out[t.pod_tid] = t.cpus;
  }
  return out;
}

// A canary pod whose agent places the app's threads (cpu.placement: pinned; the app has a
// 500m limit, so one CPU) and is killed at a BOOSTER_TEST_CRASH_AT point: what the test
// reads of it.
class AgentChaosE2eTest : public ChaosE2eTest {
 protected:
  // The operator gives its canary agents `point` (common/crash_hook.h), with the marker on
  // the pod's volume so that each pod's agent is killed there once.
  void StartRollout(const std::string& point) {
    DeployWeb();
    absl::StatusOr<Snapshot> original = TakeSnapshot(ns());
    ASSERT_TRUE(original.ok()) << original.status();
    original_ = *original;
    setenv("BOOSTER_TEST_AGENT_CRASH_AT", absl::StrCat(point, ":/booster/.chaos-", point).c_str(),
           1);
    StartOperator();
    unsetenv("BOOSTER_TEST_AGENT_CRASH_AT");
    ASSERT_TRUE(Apply(absl::StrCat(R"(
apiVersion: booster.dev/v1alpha1
kind: BoosterProfile
metadata: {name: web, namespace: )",
                                   ns(), R"(}
spec:
  targetRef: {kind: Deployment, name: web}
  tuning:
    cpu: {placement: pinned}
  rollout:
    steps: [34, 100]
    stepDuration: 10m
    progressDeadline: 5m
    analysis: {mode: Time, interval: 1s}
)"))
                    .ok());
    absl::Status s = WaitCanaryReadyAt(34, absl::Minutes(4));
    ASSERT_TRUE(s.ok()) << s;
    absl::StatusOr<std::string> pod = Kubectl({"-n", ns(), "get", "pods", "-l",
                                               "booster.dev/arm=canary", "-o",
                                               "jsonpath={.items[0].metadata.name}"});
    ASSERT_TRUE(pod.ok()) << pod.status();
    pod_ = Trim(*pod);
    ASSERT_FALSE(pod_.empty());
  }

  // The agent's and the app's restart counts and the agent's last termination's exit code.
  struct Restarts {
    int agent = -1;
    int app = -1;
    int agent_last_exit = -1;
  };
  Restarts ContainerRestarts() {
    Restarts r;
    absl::StatusOr<Json> p = GetJson({"-n", ns(), "get", "pod", pod_});
    if (!p.ok()) return r;
    for (const Json& c : p->value("/status/containerStatuses"_json_pointer, Json::array())) {
      if (c.value("name", "") == rollout::kAgentContainer) {
        r.agent = c.value("restartCount", -1);
        r.agent_last_exit = c.value("/lastState/terminated/exitCode"_json_pointer, -1);
      } else if (c.value("name", "") == "web") {
        r.app = c.value("restartCount", -1);
      }
    }
    return r;
  }

  std::string AgentLogs(bool previous = false) {
    std::vector<std::string> args = {"-n", ns(), "logs", pod_, "-c", rollout::kAgentContainer};
    if (previous) args.push_back("--previous");
    return Kubectl(args).value_or("");
  }

  // The agent's Applied for `action` ("apply", "recover") in its current logs, if any.
  std::optional<Json> AgentApplied(const std::string& action) {
    for (absl::string_view line : absl::StrSplit(AgentLogs(), '\n')) {
      Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (!j.is_discarded() && j.value("type", "") == "applied" && j.value("action", "") == action) {
        return j;
      }
    }
    return std::nullopt;
  }

  // Waits until the agent has restarted `restarts` times and its current run has applied
  // the pod's tuning.
  absl::Status WaitAgentRunApplied(int restarts) {
    return WaitFor(
        [&]() -> absl::StatusOr<bool> {
          Restarts r = ContainerRestarts();
          if (r.agent < restarts) return absl::UnavailableError(absl::StrCat("agent restarts ", r.agent));
          if (!AgentApplied("apply").has_value()) return absl::UnavailableError("no Applied yet");
          return true;
        },
        absl::Seconds(120));
  }

  // Waits for the agent's run after `restarts` restarts to apply the pod's tuning, checks
  // that the run before was SIGKILLed at `point`, and gives this run's recovery (its
  // Applied `recover`, which must be ok) in `recover`.
  void KilledAtThenRecovered(const std::string& point, int restarts, Json* recover) {
    absl::Status s = WaitAgentRunApplied(restarts);
    ASSERT_TRUE(s.ok()) << s << "\n" << AgentLogs() << Diagnose(ns());
    EXPECT_THAT(AgentLogs(/*previous=*/true), HasSubstr("BOOSTER_TEST_CRASH_AT: killed at " + point));
    Restarts r = ContainerRestarts();
    EXPECT_EQ(r.agent, restarts) << "the agent keeps dying";
    EXPECT_EQ(r.agent_last_exit, 137) << "not a SIGKILL";
    std::optional<Json> applied = AgentApplied("recover");
    ASSERT_TRUE(applied.has_value()) << "no recovery of the journal\n" << AgentLogs();
    EXPECT_TRUE(applied->value("ok", false)) << applied->dump();
    *recover = *applied;
  }

  // The journal the running agent keeps on the pod's volume, read through its root.
  std::string AgentJournal() {
    absl::StatusOr<pid_t> agent = ContainerPid(ns(), pod_, rollout::kAgentContainer);
    if (!agent.ok()) return "";
    return ReadFile(absl::StrCat("/proc/", *agent, "/root/booster/agent.journal")).value_or("");
  }

  // Every thread of the app ends on the plan's one CPU, the app was never restarted, and
  // the journal holds each live thread of `originals` (what the first agent journaled: the
  // thread's CPUs before the agent changed them) with those same CPUs: the restarted agent
  // put everything back before placing again. A thread left placed would be "already
  // placed" (not journaled) or journaled with the placed CPU. (The CPUs before are not the
  // pod's pool: libbooster.so pins the app's threads round-robin from their start, before
  // the agent's plan reaches them.)
  void ExpectPlacedOnceFromTheOriginalCpus(const std::map<int, std::string>& originals) {
    std::optional<Json> applied = AgentApplied("apply");
    ASSERT_TRUE(applied.has_value()) << AgentLogs();
    const std::vector<int> plan = (*applied)["plan"].value("cpus", std::vector<int>{});
    ASSERT_EQ(plan.size(), 1u) << applied->dump();
    const std::string cpu = absl::StrCat(plan[0]);
    absl::StatusOr<pid_t> app = ContainerPid(ns(), pod_, "web");
    ASSERT_TRUE(app.ok()) << app.status();
    std::map<int, std::string> threads;
    absl::Status settled = WaitFor(
        [&]() -> absl::StatusOr<bool> {
          threads = ThreadCpus(*app);
          for (const auto& [tid, cpus] : threads) {
            if (cpus != cpu) return absl::UnavailableError(absl::StrCat(tid, " on ", cpus));
          }
          return !threads.empty();
        },
        absl::Seconds(30));
    EXPECT_TRUE(settled.ok()) << settled;
    const std::map<int, std::string> journaled = JournaledOriginals(AgentJournal());
    const std::map<int, std::string> live = ThreadCpus(*app);
    int compared = 0;
    for (const auto& [tid, before] : originals) {
      if (live.count(tid) == 0) continue;  // exited since
      ++compared;
      auto it = journaled.find(tid);
      if (it == journaled.end()) {
        ADD_FAILURE() << "thread " << tid << " is not journaled: it was left placed\n"
                      << AgentJournal();
      } else {
        EXPECT_EQ(it->second, before) << "thread " << tid << " was not put back first";
      }
    }
    EXPECT_GE(compared, 1) << "no thread of the first agent's journal is left to compare";
    Restarts r = ContainerRestarts();
    EXPECT_EQ(r.app, 0) << "the app was restarted";
    std::printf("app threads on CPU %s; %d threads journaled again at their CPUs before (%s)\n",
                cpu.c_str(), compared, before_cpus(originals).c_str());
  }

  // The CPUs before of the first journaled thread ("" when none).
  static std::string before_cpus(const std::map<int, std::string>& originals) {
    return originals.empty() ? "" : originals.begin()->second;
  }

  // "affinity of thread T restored to CPUS" in an Applied's list: T -> CPUS.
  static std::map<int, std::string> RestoredThreads(const Json& applied) {
    std::map<int, std::string> out;
    for (const Json& line : applied.value("applied", Json::array())) {
      const std::string text = line.is_string() ? line.get<std::string>() : "";
      absl::string_view l = text;
      int tid = 0;
      if (!absl::ConsumePrefix(&l, "affinity of thread ")) continue;
      std::vector<std::string> f = absl::StrSplit(l, " restored to ");
      if (f.size() == 2 && absl::SimpleAtoi(f[0], &tid)) out[tid] = f[1];
    }
    return out;
  }

  // Aborts the rollout: RolledBack, the Deployment's template as before, never above N.
  void AbortAndExpectRestored(RolloutSampler& sampler) {
    const Snapshot& original = original_;
    ASSERT_TRUE(Kubectl({"-n", ns(), "annotate", "bp", "web", "booster.dev/abort=agent-chaos"}).ok());
    absl::Status s = WaitPhase("RolledBack", absl::Minutes(3));
    ASSERT_TRUE(s.ok()) << s << "\nseen: " << sampler.History();
    ASSERT_TRUE(WaitCanaryGone().ok());
    ASSERT_TRUE(WaitRolledOut(ns(), "web", absl::Minutes(3)).ok());
    absl::StatusOr<Snapshot> after = TakeSnapshot(ns());
    ASSERT_TRUE(after.ok()) << after.status();
    EXPECT_EQ(after->tmpl, original.tmpl);
    EXPECT_EQ(after->replicas, original.replicas);
    ExpectNeverAboveN(sampler);
  }

  std::string pod_;
  Snapshot original_;  // the Deployment before the profile
};

// The agent dies with its first journal entry durable and the change it announces not
// made. Its successor reverts that entry (a no-op: nothing was changed) before anything
// else, then places the threads once.
TEST_F(AgentChaosE2eTest, KilledBetweenItsJournalAndTheChange) {
  RolloutSampler sampler(ns());
  StartRollout("journal-append");
  if (HasFatalFailure()) return;
  Json recover;
  KilledAtThenRecovered("journal-append", 1, &recover);
  if (HasFatalFailure()) return;
  EXPECT_FALSE(recover["applied"].empty()) << recover.dump();
  std::printf("recovered: %s\n", recover.dump().c_str());
  ExpectPlacedOnceFromTheOriginalCpus(RestoredThreads(recover));
  AbortAndExpectRestored(sampler);
}

// The agent is SIGKILLed from the host with the threads placed; its successor is killed
// again halfway through the revert it starts with (one thread put back, the journal still
// whole). The third agent reverts the rest — and the one already reverted, harmlessly —
// then places the threads once, from their original CPUs.
TEST_F(AgentChaosE2eTest, KilledHalfwayThroughTheRevertAfterARestart) {
  RolloutSampler sampler(ns());
  StartRollout("revert");
  if (HasFatalFailure()) return;
  absl::Status s = WaitAgentRunApplied(0);
  ASSERT_TRUE(s.ok()) << s << "\n" << AgentLogs() << Diagnose(ns());
  const std::map<int, std::string> before = JournaledOriginals(AgentJournal());
  ASSERT_GE(before.size(), 2u) << "too little journaled to stop halfway\n" << AgentJournal();
  absl::StatusOr<pid_t> agent = ContainerPid(ns(), pod_, rollout::kAgentContainer);
  ASSERT_TRUE(agent.ok()) << agent.status();
  ASSERT_EQ(kill(*agent, SIGKILL), 0);
  Json recover;
  KilledAtThenRecovered("revert", 2, &recover);
  if (HasFatalFailure()) return;
  // Every thread journaled before the kills was restored (or is gone) by the third agent.
  const std::string restored = recover["applied"].dump();
  for (const auto& [tid, cpus] : before) {
    EXPECT_TRUE(absl::StrContains(restored, absl::StrCat("thread ", tid, " restored to ", cpus)) ||
                absl::StrContains(restored, absl::StrCat("thread ", tid, ": gone")))
        << "thread " << tid << " not restored: " << restored;
  }
  std::printf("journaled before the kills: %zu threads; recovered: %s\n", before.size(),
              restored.c_str());
  ExpectPlacedOnceFromTheOriginalCpus(before);
  AbortAndExpectRestored(sampler);
}

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
  EXPECT_THAT(op_->Logs(), HasSubstr("BOOSTER_TEST_CRASH_AFTER_STATUS: killed at Promoting"));
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

// The leader is cut off from the API server while the standby still reaches it. The
// leader must stop — the whole process, so nothing it holds can still be written — before
// the standby takes the Lease over (renew deadline 10 s + retry 2 s < lease 15 s); the
// standby then carries the rollout on. Before requests were bounded by the renew deadline,
// a cut-off leader's renewal could hang for the client's 30 s timeout.
TEST_F(ChaosE2eTest, ALeaderCutOffFromTheApiServerStopsBeforeTheStandbyLeads) {
  constexpr gid_t kCutOff = 64011;  // a group no process of this machine uses
  absl::StatusOr<std::string> server =
      Kubectl({"config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"});
  ASSERT_TRUE(server.ok()) << server.status();
  int port = 0;
  ASSERT_TRUE(absl::SimpleAtoi(server->substr(server->rfind(':') + 1), &port)) << *server;
  RolloutSampler sampler(ns());
  DeployWeb();
  const std::string leader = ns() + "-leader";
  const std::string standby_id = ns() + "-standby";
  op_ = std::make_unique<OperatorProcess>(ns(), std::vector<std::string>{"--identity=" + leader});
  op_->set_group(kCutOff);
  StartOperator();
  auto lease = [&]() -> Json {
    return GetJson({"-n", ns(), "get", "lease", "booster-operator"}).value_or(Json::object());
  };
  auto holder = [&]() { return lease().value("/spec/holderIdentity"_json_pointer, std::string()); };
  auto wait_holder = [&](const std::string& id) {
    return WaitFor(
        [&]() -> absl::StatusOr<bool> {
          if (holder() == id) return true;
          return absl::UnavailableError("holder " + holder());
        },
        absl::Seconds(60));
  };
  ASSERT_TRUE(wait_holder(leader).ok());
  OperatorProcess standby(ns(), {"--identity=" + standby_id});
  ASSERT_TRUE(standby.Start().ok()) << standby.Logs();
  ASSERT_TRUE(Apply(Profile(ns(), "[34, 67, 100]", "15s")).ok());
  absl::Status s = WaitCanaryReadyAt(34, absl::Minutes(4));
  ASSERT_TRUE(s.ok()) << s << "\nseen: " << sampler.History();

  ApiServerPartition cut(port, kCutOff);
  ASSERT_TRUE(cut.status().ok()) << cut.status();
  const absl::Time cut_at = absl::Now();
  absl::StatusOr<int> exited = op_->WaitExit(absl::Seconds(60));
  const absl::Time stopped = absl::Now();  // at most 50 ms after the exit
  ASSERT_TRUE(exited.ok()) << exited.status() << "\n" << op_->Logs();
  EXPECT_EQ(*exited, 1);
  s = wait_holder(standby_id);
  ASSERT_TRUE(s.ok()) << s << "\n" << standby.Logs();
  const Json taken = lease();
  absl::Time acquired;
  std::string err;
  const std::string acquire_time = taken.value("/spec/acquireTime"_json_pointer, std::string());
  ASSERT_TRUE(absl::ParseTime("%Y-%m-%dT%H:%M:%E*SZ", acquire_time, &acquired, &err))
      << acquire_time << ": " << err;
  EXPECT_LT(stopped, acquired) << "the cut-off leader was still running when the standby "
                                  "took the Lease (acquireTime "
                               << acquire_time << ")";
  std::printf("cut off at 0 s; the leader exited at %.1f s; the standby took the Lease at "
              "%.1f s (transitions %d)\n",
              absl::ToDoubleSeconds(stopped - cut_at), absl::ToDoubleSeconds(acquired - cut_at),
              taken.value("/spec/leaseTransitions"_json_pointer, -1));
  EXPECT_THAT(op_->Logs(), HasSubstr("leadership lost; exiting at once"));
  cut.Heal();
  s = WaitPhase("Promoted", absl::Minutes(5));
  ASSERT_TRUE(s.ok()) << s << "\nseen: " << sampler.History();
  ASSERT_TRUE(WaitCanaryGone().ok());
  ExpectNeverAboveN(sampler);
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
