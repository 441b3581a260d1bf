// The agent loop in-process against a real child process: a directive applies, the
// reports flow, a rollback directive and the shutdown revert restore the affinity, and
// a journal left by a dead agent is reverted at start-up.
#include "sidecar/loop/agent_loop.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <deque>
#include <optional>
#include <thread>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/feedback/feedback_adapter.h"
#include "sidecar/loop/directive_from_tuning.h"
#include "sidecar/sample/http_get.h"
#include "sidecar/testing/test_app_server.h"
#include "sidecar/topology/cpu_list.h"

namespace booster::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<int> Affinity(int pid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(pid, sizeof(set), &set) != 0) return {};
  std::vector<int> out;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) out.push_back(c);
  }
  return out;
}

// Hands out scripted directives, one per Poll.
class ScriptedDirectives : public DirectiveSource {
 public:
  std::deque<std::optional<Directive>> script;
  absl::StatusOr<std::optional<Directive>> Poll() override {
    if (script.empty()) return std::optional<Directive>();
    std::optional<Directive> d = script.front();
    script.pop_front();
    return d;
  }
};

class RecordingReporter : public Reporter {
 public:
  explicit RecordingReporter(pid_t watched) : watched_(watched) {}
  void Hello(const HelloInfo& info) override { hellos.push_back(info); }
  void Applied(const AppliedStatus& s) override {
    applied.push_back(s);
    affinity_at_applied.push_back(Affinity(watched_));
  }
  void Report(const WindowRecord& r) override {
    reports.push_back(r.report);
    records.push_back(r);
    arms.push_back(r.identity.arm);
  }
  std::vector<HelloInfo> hellos;
  std::vector<AppliedStatus> applied;
  std::vector<std::vector<int>> affinity_at_applied;
  std::vector<WindowReport> reports;
  std::vector<WindowRecord> records;
  std::vector<std::string> arms;

 private:
  pid_t watched_;
};

class AgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Affinity(0).size() < 2) GTEST_SKIP() << "machine: needs two CPUs";
    char tmpl[] = "/tmp/booster-agent-XXXXXX";
    dir_ = mkdtemp(tmpl);
    child_ = fork();
    if (child_ == 0) {
      while (true) pause();
    }
    config_.journal_path = dir_ + "/agent.journal";
    config_.control_path = dir_ + "/control";
    config_.selector.pids = {child_};
    config_.tick = absl::Milliseconds(10);
    config_.window = absl::Milliseconds(30);
    config_.identity.pod_name = "test-pod";
    config_.identity.incarnation = "inc-1";
  }
  void TearDown() override {
    if (child_ > 0) {
      kill(child_, SIGKILL);
      waitpid(child_, nullptr, 0);
    }
    std::system(("rm -rf " + dir_).c_str());
  }
  Directive Apply(int64_t gen) {
    Directive d = *ParseDirective(
        "action = apply\narm = canary\nplacement = true\n"
        "runtime.listen_backlog = 1024\n");
    d.generation = gen;
    d.policy.max_cpus = 1;  // the child has no quota: ask for one CPU so affinity changes
    return d;
  }
  std::string dir_;
  pid_t child_ = -1;
  AgentConfig config_;
};

// The pod's tuning (BOOSTER_TUNING) as the initial directive: applied once the target
// is found, from outside on a program without libbooster.so, with the CPU limit given
// as the pod's (500m: one CPU), and said per process in the knob's note.
TEST_F(AgentTest, TheInitialTuningPinsTheTargetWithinItsCpuLimit) {
  absl::StatusOr<std::optional<Directive>> initial =
      DirectiveFromTuning(R"({"cpu":{"placement":"pinned","numa":"preferred"}})", "canary");
  ASSERT_TRUE(initial.ok() && initial->has_value());
  config_.initial_directive = **initial;
  config_.target_cpu_limit_millis = 500;
  config_.max_ticks = 3;
  RecordingReporter reporter(child_);
  Agent agent(config_, &RealClock::Get(), nullptr, &reporter, nullptr);
  std::atomic<bool> stop{false};
  ASSERT_TRUE(agent.Run(stop).ok());
  ASSERT_GE(reporter.applied.size(), 2u);  // the initial directive, then the shutdown revert
  AppliedStatus a = reporter.applied[0];
  EXPECT_TRUE(a.ok) << absl::StrJoin(a.failed, "; ");
  EXPECT_EQ(a.generation, 0);
  EXPECT_EQ(reporter.affinity_at_applied[0].size(), 1u) << "500m: one CPU, the thread pinned";
  ASSERT_TRUE(a.plan.has_value());
  EXPECT_EQ(a.plan->gomaxprocs, 1);
  EXPECT_THAT(a.knob_notes["placement"], HasSubstr("sched_setaffinity from outside on 1 threads"));
  EXPECT_THAT(a.knob_notes["placement"], HasSubstr("libbooster.so not loaded"));
  EXPECT_THAT(a.knob_notes["numa"],
              HasSubstr("memory policy not reached: Linux sets it only from inside"));
  EXPECT_EQ(Affinity(child_), Affinity(0)) << "reverted on stop";
}

// Library knobs on a program that does not load libbooster.so (here a plain process;
// in a pod a static binary): published all the same, and reported as not reachable, with
// the process named, so the operator can say so on the profile.
TEST_F(AgentTest, SocketKnobsOnAProgramWithoutTheLibraryAreReportedNotReachable) {
  absl::StatusOr<std::optional<Directive>> initial = DirectiveFromTuning(
      R"({"runtime":{"preload":{"listenBacklog":1024,"tcpNoDelay":true}}})", "canary");
  ASSERT_TRUE(initial.ok() && initial->has_value());
  config_.initial_directive = **initial;
  config_.max_ticks = 3;
  RecordingReporter reporter(child_);
  Agent agent(config_, &RealClock::Get(), nullptr, &reporter, nullptr);
  std::atomic<bool> stop{false};
  ASSERT_TRUE(agent.Run(stop).ok());
  ASSERT_GE(reporter.applied.size(), 1u);
  AppliedStatus a = reporter.applied[0];
  EXPECT_TRUE(a.ok) << absl::StrJoin(a.failed, "; ");
  EXPECT_THAT(a.knobs, ElementsAre("runtime.listen_backlog", "runtime.tcp_nodelay"));
  for (const char* k : {"runtime.listen_backlog", "runtime.tcp_nodelay"}) {
    EXPECT_THAT(a.unreachable[k], HasSubstr("libbooster.so is not loaded in "));
    EXPECT_THAT(a.unreachable[k], HasSubstr(absl::StrCat("(pid ", child_, ")")));
  }
  FeedbackApplied sent = FeedbackAppliedFromStatus(a);
  ASSERT_EQ(sent.knobs.size(), 2u);
  EXPECT_EQ(sent.knobs[0].outcome, FeedbackKnobOutcome::kNotReachable);
  EXPECT_THAT(sent.knobs[0].reason, HasSubstr("a statically linked program ignores LD_PRELOAD"));
}

TEST_F(AgentTest, AppliesReportsRollsBackAndRevertsOnStop) {
  std::vector<int> original = Affinity(child_);
  ScriptedDirectives directives;
  directives.script = {Apply(1), std::nullopt, std::nullopt, std::nullopt, std::nullopt};
  Directive rollback;
  rollback.generation = 2;
  rollback.action = Directive::Action::kRollback;
  directives.script.push_back(rollback);
  directives.script.push_back(Apply(3));
  RecordingReporter reporter(child_);
  config_.max_ticks = 12;
  Agent agent(config_, &RealClock::Get(), &directives, &reporter, nullptr);
  std::atomic<bool> stop{false};
  ASSERT_TRUE(agent.Run(stop).ok());

  ASSERT_EQ(reporter.hellos.size(), 1u);
  // apply(1); revert before rollback; rollback(2); apply(3); shutdown revert.
  std::vector<std::string> actions;
  for (const AppliedStatus& s : reporter.applied) actions.push_back(s.action);
  EXPECT_THAT(actions,
              ElementsAre("apply", "revert-before-rollback", "rollback", "apply", "shutdown"));
  ASSERT_TRUE(reporter.applied[0].ok) << reporter.applied[0].failed.front();
  ASSERT_TRUE(reporter.applied[0].plan.has_value());
  EXPECT_EQ(reporter.applied[0].plan->cpus.size(), 1u);
  EXPECT_EQ(reporter.affinity_at_applied[0], reporter.applied[0].plan->cpus);
  EXPECT_EQ(reporter.affinity_at_applied[2], original);  // after rollback
  EXPECT_EQ(reporter.affinity_at_applied[3], reporter.applied[3].plan->cpus);
  EXPECT_EQ(Affinity(child_), original);  // after shutdown
  EXPECT_TRUE(Journal::Open(config_.journal_path)->empty());
  ASSERT_FALSE(reporter.reports.empty());
  EXPECT_EQ(reporter.reports.front().processes, 1);
  EXPECT_EQ(reporter.arms.back(), "canary");
}

TEST_F(AgentTest, RecoversTheJournalOfADeadAgent) {
  std::vector<int> original = Affinity(child_);
  {
    // A "dead" agent: applied and never reverted.
    absl::StatusOr<Journal> j = Journal::Open(config_.journal_path);
    Appliers a(&*j);
    ASSERT_TRUE(a.SetAffinity({child_}, {original[0]}).ok());
  }
  ASSERT_THAT(Affinity(child_), ElementsAre(original[0]));
  RecordingReporter reporter(child_);
  config_.max_ticks = 1;
  Agent agent(config_, &RealClock::Get(), nullptr, &reporter, nullptr);
  std::atomic<bool> stop{false};
  ASSERT_TRUE(agent.Run(stop).ok());
  ASSERT_FALSE(reporter.applied.empty());
  EXPECT_EQ(reporter.applied[0].action, "recover");
  EXPECT_EQ(reporter.affinity_at_applied[0], original);
  EXPECT_EQ(Affinity(child_), original);
}

TEST_F(AgentTest, FailedDirectiveLeavesNothingBehind) {
  std::vector<int> original = Affinity(child_);
  Directive d = Apply(1);
  ASSERT_TRUE(SetDirectiveSetting("sysctl.net.ipv4.this_key_does_not_exist", "1", &d).ok());
  ScriptedDirectives directives;
  directives.script = {d};
  RecordingReporter reporter(child_);
  config_.max_ticks = 2;
  Agent agent(config_, &RealClock::Get(), &directives, &reporter, nullptr);
  std::atomic<bool> stop{false};
  ASSERT_TRUE(agent.Run(stop).ok());
  ASSERT_FALSE(reporter.applied.empty());
  EXPECT_FALSE(reporter.applied[0].ok);
  EXPECT_THAT(reporter.applied[0].failed.front(), HasSubstr("this_key_does_not_exist"));
  // Which setting failed, for the operator's Applied: the sysctl, not the others.
  EXPECT_THAT(reporter.applied[0].knobs, ElementsAre("placement", "runtime.listen_backlog",
                                                     "sysctl.net.ipv4.this_key_does_not_exist"));
  EXPECT_THAT(reporter.applied[0].failed_knobs,
              ElementsAre("sysctl.net.ipv4.this_key_does_not_exist"));
  EXPECT_EQ(reporter.affinity_at_applied[0], original);
  EXPECT_TRUE(Journal::Open(config_.journal_path)->empty());
}

// Keeps the window records; read from the test thread while the agent runs.
class WindowRecorder : public Reporter {
 public:
  void Hello(const HelloInfo& h) override {
    absl::MutexLock l(&mu_);
    hello_ = h;
  }
  void Applied(const AppliedStatus&) override {}
  void Report(const WindowRecord& r) override {
    absl::MutexLock l(&mu_);
    records_.push_back(r);
  }
  std::vector<WindowRecord> records() {
    absl::MutexLock l(&mu_);
    return records_;
  }
  HelloInfo hello() {
    absl::MutexLock l(&mu_);
    return hello_;
  }

 private:
  absl::Mutex mu_;
  HelloInfo hello_;
  std::vector<WindowRecord> records_;
};

bool Measured(const WindowRecord& r, absl::string_view metric) {
  const MetricValue* m = r.metrics.Find(metric);
  return m != nullptr && m->value.has_value();
}

// A real HTTP application with a real histogram, served on loopback: while requests flow,
// the agent's windows carry its latency quantiles, throughput, error rate and CPU per
// request, numbered 1, 2, 3, ... under one incarnation.
TEST_F(AgentTest, ScoresTheApplicationsRequestsEveryWindow) {
  TestAppServer app;
  ASSERT_TRUE(app.Start(0));
  config_.selector.pids = {app.pid()};
  config_.app_metrics.port = app.app_port();
  config_.tick = absl::Milliseconds(20);
  config_.window = absl::Milliseconds(200);
  config_.identity.arm = "canary";
  WindowRecorder reporter;
  AgentMetrics metrics("test-pod");
  Agent agent(config_, &RealClock::Get(), nullptr, &reporter, &metrics);
  std::atomic<bool> stop{false};
  absl::Status run_status;
  std::thread runner([&] { run_status = agent.Run(stop); });

  // Load, bounded in count and time, until a window has seen both kinds of request.
  std::optional<WindowRecord> scored;
  absl::Time deadline = absl::Now() + absl::Seconds(30);
  for (int i = 0; i < 20000 && absl::Now() < deadline && !scored.has_value(); ++i) {
    HttpGet(app.url(i % 10 == 0 ? "/fail" : "/"), absl::Seconds(2)).IgnoreError();
    if (i % 20 != 0) continue;
    for (const WindowRecord& r : reporter.records()) {
      if (Measured(r, "latencyP99") && Measured(r, "errorRate") &&
          r.metrics.Find("errorRate")->value > 0) {
        scored = r;
      }
    }
  }
  stop = true;
  runner.join();
  ASSERT_TRUE(run_status.ok()) << run_status;
  ASSERT_TRUE(scored.has_value()) << "no window measured the application's requests";

  const WindowMetrics& m = scored->metrics;
  double p50 = *m.Find("latencyP50")->value, p99 = *m.Find("latencyP99")->value;
  EXPECT_GT(p50, 0);
  EXPECT_LE(p50, p99);
  EXPECT_LE(p99, *m.Find("latencyP999")->value);
  EXPECT_LE(p99, 1.0);  // the highest finite bound of the server's buckets
  EXPECT_GT(*m.Find("throughput")->value, 0);
  EXPECT_GT(m.Find("throughput")->samples, 0);
  EXPECT_EQ(m.Find("latencyP99")->samples, m.Find("throughput")->samples);
  double error_rate = *m.Find("errorRate")->value;
  EXPECT_GT(error_rate, 0);
  EXPECT_LT(error_rate, 0.5);  // 1 in 10 requests fails; /metrics itself is not counted
  ASSERT_TRUE(Measured(*scored, "cpuPerRequest")) << m.Find("cpuPerRequest")->missing;
  EXPECT_GT(*m.Find("cpuPerRequest")->value, 0);
  EXPECT_TRUE(Measured(*scored, "runQueueDelay"));
  EXPECT_EQ(scored->identity.arm, "canary");
  EXPECT_EQ(scored->identity.incarnation, "inc-1");
  EXPECT_EQ(scored->identity.pod_name, "test-pod");
  EXPECT_EQ(scored->report.requests->histogram, "http_request_duration_seconds");
  EXPECT_EQ(scored->report.requests->request_source, "http_requests_total");

  std::vector<WindowRecord> all = reporter.records();
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i].sequence, i + 1);
  EXPECT_EQ(reporter.hello().identity.incarnation, "inc-1");
  EXPECT_EQ(reporter.hello().identity.arm, "canary");
}

// Without the application's metrics the request-based metrics are missing, never 0,
// while the kernel's are measured.
TEST_F(AgentTest, NoApplicationMetricsMeansMissingNotZero) {
  // 20 ticks of 10 ms for windows of 30 ms: about six windows, so a loaded machine (an
  // ASan build beside other builds gave one window of 8 ticks) still closes the two the test
  // needs.
  config_.max_ticks = 20;
  config_.tick = absl::Milliseconds(10);
  config_.window = absl::Milliseconds(30);
  WindowRecorder reporter;
  Agent agent(config_, &RealClock::Get(), nullptr, &reporter, nullptr);
  std::atomic<bool> stop{false};
  ASSERT_TRUE(agent.Run(stop).ok());
  std::vector<WindowRecord> all = reporter.records();
  ASSERT_GE(all.size(), 2u);
  const WindowRecord& r = all.back();
  for (const char* name :
       {"latencyP50", "latencyP99", "latencyP999", "throughput", "errorRate", "cpuPerRequest"}) {
    const MetricValue* m = r.metrics.Find(name);
    EXPECT_FALSE(m->value.has_value()) << name;
    EXPECT_THAT(m->missing, HasSubstr("BOOSTER_APP_METRICS")) << name;
  }
  EXPECT_TRUE(Measured(r, "runQueueDelay")) << r.metrics.Find("runQueueDelay")->missing;
}

}  // namespace
}  // namespace booster::agent
