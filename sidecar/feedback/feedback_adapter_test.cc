// The conversions between the agent loop and the operator stream, and the directives the
// stream hands to the loop: values in, values out.
#include "sidecar/feedback/feedback_adapter.h"

#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/feedback/operator_directive_source.h"
#include "sidecar/sample/window_metrics.h"

namespace booster::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Key;
using ::testing::StartsWith;
using ::testing::UnorderedElementsAre;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

// A window in which the kernel's metrics and throughput were measured (throughput a
// measured 0) and the latencies, error rate and CPU per request were not.
WindowRecord Record() {
  WindowRecord r;
  r.identity.template_hash = "9f2c1a";
  r.identity.arm = "canary";
  r.sequence = 4;
  r.generation = 3;
  r.report.start = kT0;
  r.report.end = kT0 + absl::Seconds(10);
  for (absl::string_view name : kWindowMetricNames) {
    r.metrics.metrics.push_back({.name = std::string(name), .missing = "no latency histogram"});
  }
  auto set = [&](absl::string_view name, double v, int64_t samples) {
    for (MetricValue& m : r.metrics.metrics) {
      if (m.name == name) {
        m.value = v;
        m.samples = samples;
        m.missing.clear();
      }
    }
  };
  set("throughput", 0, 0);
  set("runQueueDelay", 0.0125, 10);
  set("cpuThrottling", 0.25, 9);
  set("listenOverflows", 0, 10);
  set("retransmits", 0.001, 10);
  return r;
}

TEST(FeedbackWindowTest, EveryMeasuredMetricWithItsSamplesAndNoMissingOne) {
  FeedbackWindow w = FeedbackWindowFromRecord(Record());
  EXPECT_EQ(w.start, kT0);
  EXPECT_EQ(w.end, kT0 + absl::Seconds(10));
  EXPECT_EQ(w.template_hash, "9f2c1a");
  EXPECT_EQ(w.profile_generation, 3);
  EXPECT_THAT(w.metrics,
              UnorderedElementsAre(Key("throughput"), Key("runQueueDelay"), Key("cpuThrottling"),
                                   Key("listenOverflows"), Key("retransmits")));
  EXPECT_DOUBLE_EQ(w.metrics.at("runQueueDelay").value, 0.0125);
  EXPECT_EQ(w.metrics.at("runQueueDelay").samples, 10);
  EXPECT_DOUBLE_EQ(w.metrics.at("cpuThrottling").value, 0.25);
  EXPECT_EQ(w.metrics.at("cpuThrottling").samples, 9);
  // A measured 0 is sent as 0; a missing metric is not sent at all.
  EXPECT_EQ(w.metrics.at("throughput").value, 0);
  EXPECT_EQ(w.metrics.at("listenOverflows").value, 0);
  for (const char* missing : {"latencyP50", "latencyP99", "latencyP999", "errorRate",
                              "cpuPerRequest", "memoryRss", "goGcCpuShare", "goHeapBytes"}) {
    EXPECT_EQ(w.metrics.count(missing), 0u) << missing;
  }
  // The application's facts unknown: "" and 0, as the proto's defaults.
  EXPECT_EQ(w.go_version, "");
  EXPECT_EQ(w.app_cpus, 0);
  EXPECT_EQ(w.go_default_godebug, "");
  EXPECT_TRUE(ValidateFeedbackWindow(w).ok());
}

TEST(FeedbackWindowTest, ANonFiniteValueIsNoMeasurement) {
  WindowRecord r = Record();
  r.metrics.metrics[0].value = std::numeric_limits<double>::quiet_NaN();
  r.metrics.metrics[1].value = std::numeric_limits<double>::infinity();
  FeedbackWindow w = FeedbackWindowFromRecord(r);
  EXPECT_EQ(w.metrics.count(std::string(kWindowMetricNames[0])), 0u);
  EXPECT_EQ(w.metrics.count(std::string(kWindowMetricNames[1])), 0u);
  EXPECT_TRUE(ValidateFeedbackWindow(w).ok()) << "the client would refuse the whole window";
}

TEST(FeedbackWindowTest, TheWindowOfTheComputedMetricsGoesThroughUnchanged) {
  // From ComputeWindowMetrics itself, so the adapter follows what it really produces.
  WindowRecord r;
  r.report.start = kT0;
  r.report.end = kT0 + absl::Seconds(10);
  r.report.measured_ticks = 10;
  r.report.measured_seconds = 10;
  r.report.runq_wait_seconds = 0.5;
  r.report.cpu_seconds = 4;
  r.report.rss_ticks = 11;
  r.report.rss_max_bytes = 48 << 20;
  r.report.go_runtime.emplace();
  r.report.go_runtime->seconds = 10;
  r.report.go_runtime->gc_cpu_seconds = 0.2;
  r.report.go_runtime->heap_bytes = 12 << 20;
  r.report.go_version = "go1.26.0";
  r.report.go_default_godebug = "containermaxprocs=0,updatemaxprocs=0";
  r.report.app_cpus = 4;
  r.metrics = ComputeWindowMetrics(r.report);
  FeedbackWindow w = FeedbackWindowFromRecord(r);
  // The kernel's and the Go runtime's figures go; the request-based ones have no scrape.
  EXPECT_THAT(w.metrics, UnorderedElementsAre(Key("runQueueDelay"), Key("memoryRss"),
                                              Key("goGcCpuShare"), Key("goHeapBytes")));
  EXPECT_EQ(w.go_version, "go1.26.0");
  EXPECT_EQ(w.app_cpus, 4);
  EXPECT_EQ(w.go_default_godebug, "containermaxprocs=0,updatemaxprocs=0");
  EXPECT_DOUBLE_EQ(w.metrics.at("memoryRss").value, 48 << 20);
  EXPECT_EQ(w.metrics.at("memoryRss").samples, 11);
  EXPECT_DOUBLE_EQ(w.metrics.at("goGcCpuShare").value, 0.05);  // 0.02 GC cores / 0.4 cores
  EXPECT_DOUBLE_EQ(w.metrics.at("goHeapBytes").value, 12 << 20);
  EXPECT_TRUE(ValidateFeedbackWindow(w).ok());
  for (const MetricValue& m : r.metrics.metrics) {
    if (m.value.has_value()) {
      ASSERT_EQ(w.metrics.count(m.name), 1u) << m.name;
      EXPECT_EQ(w.metrics.at(m.name).value, *m.value) << m.name;
      EXPECT_EQ(w.metrics.at(m.name).samples, m.samples) << m.name;
    } else {
      EXPECT_EQ(w.metrics.count(m.name), 0u) << m.name << " is missing: " << m.missing;
    }
  }
  EXPECT_DOUBLE_EQ(w.metrics.at("runQueueDelay").value, 0.05);
}

TEST(FeedbackWindowTest, TheLatencyHistogramTheQuantilesCameFromGoesWithThem) {
  WindowRecord r = Record();
  EXPECT_TRUE(FeedbackWindowFromRecord(r).latency_buckets.empty()) << "no application scrape";
  r.report.requests.emplace();
  r.report.requests->histogram = "http_request_duration_seconds";
  r.report.requests->latency_buckets = {{0.005, 90}, {0.05, 99}, {INFINITY, 100}};
  r.report.requests->latency_count = 100;
  FeedbackWindow w = FeedbackWindowFromRecord(r);
  EXPECT_EQ(w.latency_buckets, r.report.requests->latency_buckets);
  EXPECT_TRUE(ValidateFeedbackWindow(w).ok());
  // One the operator would refuse is left out, and the window still goes.
  r.report.requests->latency_buckets = {{0.005, 90}, {0.05, 80}, {INFINITY, 100}};
  w = FeedbackWindowFromRecord(r);
  EXPECT_TRUE(w.latency_buckets.empty());
  EXPECT_TRUE(ValidateFeedbackWindow(w).ok());
  w.latency_buckets = {{0.005, 90}, {0.05, 80}, {INFINITY, 100}};
  EXPECT_EQ(ValidateFeedbackWindow(w).message(),
            "the latency histogram is malformed: cumulative counts decrease");
}

// "name=outcome(reason)" per knob, for compact expectations.
std::vector<std::string> Knobs(const FeedbackApplied& a) {
  std::vector<std::string> out;
  for (const FeedbackKnob& k : a.knobs) {
    const char* o = k.outcome == FeedbackKnobOutcome::kApplied        ? "applied"
                    : k.outcome == FeedbackKnobOutcome::kFailed       ? "failed"
                    : k.outcome == FeedbackKnobOutcome::kNotReachable ? "not_reachable"
                                                                      : "unspecified";
    out.push_back(absl::StrCat(k.name, "=", o, k.reason.empty() ? "" : "(" + k.reason + ")"));
  }
  return out;
}

TEST(FeedbackAppliedTest, EveryCaseOfADirectivesResult) {
  struct Case {
    const char* what;
    AppliedStatus status;
    std::vector<std::string> knobs;
  };
  AppliedStatus ok{.generation = 5, .arm = "canary", .action = "apply", .ok = true};
  ok.knobs = {"placement", "sysctl.net.core.somaxconn"};
  AppliedStatus sysctl_failed = ok;
  sysctl_failed.ok = false;
  sysctl_failed.failed = {"PERMISSION_DENIED: write /proc/sys/net/core/somaxconn"};
  sysctl_failed.failed_knobs = {"sysctl.net.core.somaxconn"};
  AppliedStatus no_target = ok;
  no_target.ok = false;
  no_target.failed = {"FAILED_PRECONDITION: no target process matches the selector"};
  AppliedStatus runtime_failed = ok;
  runtime_failed.knobs = {"placement", "runtime.tcp_nodelay", "runtime.listen_backlog"};
  runtime_failed.ok = false;
  runtime_failed.failed = {"FAILED_PRECONDITION: runtime settings need --control-file"};
  runtime_failed.failed_knobs = {"runtime.tcp_nodelay", "runtime.listen_backlog"};
  AppliedStatus rollback{.generation = 6, .arm = "canary", .action = "rollback", .ok = true};
  AppliedStatus shutdown_failed{.generation = 6, .action = "shutdown", .ok = false};
  shutdown_failed.failed = {"INTERNAL: restore affinity", "INTERNAL: restore sysctl"};
  AppliedStatus rejected{.generation = 0, .action = "reject", .ok = false};
  rejected.failed = {"INVALID_ARGUMENT: directive line 2: unknown key foo"};

  const Case cases[] = {
      {"all applied", ok, {"placement=applied", "sysctl.net.core.somaxconn=applied"}},
      {"one setting failed: it says why, the others that they went with it",
       sysctl_failed,
       {"sysctl.net.core.somaxconn=failed(PERMISSION_DENIED: write /proc/sys/net/core/"
        "somaxconn)",
        "placement=failed(not applied: a directive is all or nothing and "
        "sysctl.net.core.somaxconn was not)"}},
      {"a failure of the whole directive",
       no_target,
       {"placement=failed(FAILED_PRECONDITION: no target process matches the selector)",
        "sysctl.net.core.somaxconn=failed(FAILED_PRECONDITION: no target process matches the "
        "selector)"}},
      {"one step, several settings",
       runtime_failed,
       {"runtime.tcp_nodelay=failed(FAILED_PRECONDITION: runtime settings need --control-file)",
        "runtime.listen_backlog=failed(FAILED_PRECONDITION: runtime settings need "
        "--control-file)",
        "placement=failed(not applied: a directive is all or nothing and runtime.tcp_nodelay, "
        "runtime.listen_backlog were not)"}},
      {"a rollback: nothing in force", rollback, {}},
      {"a revert that failed",
       shutdown_failed,
       {"revert=failed(INTERNAL: restore affinity; INTERNAL: restore sysctl)"}},
      {"a directive that could not be read",
       rejected,
       {"directive=failed(INVALID_ARGUMENT: directive line 2: unknown key foo)"}},
  };
  for (const Case& c : cases) {
    FeedbackApplied a = FeedbackAppliedFromStatus(c.status);
    EXPECT_EQ(a.generation, c.status.generation) << c.what;
    EXPECT_EQ(Knobs(a), c.knobs) << c.what;
  }
}

TEST(FeedbackHelloTest, PodAndTopologyAsFound) {
  AgentIdentity id;
  id.pod_namespace = "shop";
  id.pod_name = "web-1";
  id.pod_uid = "uid-1";
  FeedbackPod pod = FeedbackPodFromIdentity(id);
  EXPECT_EQ(pod.pod_namespace, "shop");
  EXPECT_EQ(pod.name, "web-1");
  EXPECT_EQ(pod.uid, "uid-1");
  FeedbackTopology t = FeedbackTopologyFromInfo({.packages = 2,
                                                 .numa_nodes = 4,
                                                 .cores = 32,
                                                 .pus = 64,
                                                 .cpuset = "0-7",
                                                 .cpu_quota_cores = 3.5,
                                                 .memory_limit_bytes = 1 << 30});
  EXPECT_EQ(t.packages, 2);
  EXPECT_EQ(t.numa_nodes, 4);
  EXPECT_EQ(t.cores, 32);
  EXPECT_EQ(t.pus, 64);
  EXPECT_EQ(t.cpuset, "0-7");
  EXPECT_DOUBLE_EQ(t.cpu_quota_cores, 3.5);
  EXPECT_EQ(t.memory_limit_bytes, 1 << 30);
}

FeedbackDirective FromOperator(int64_t generation, FeedbackAction action,
                               std::vector<std::pair<std::string, std::string>> settings = {}) {
  return {.generation = generation,
          .action = action,
          .arm = "canary",
          .profile = "shop/web-boost",
          .settings = std::move(settings)};
}

TEST(DirectiveFromFeedbackTest, ASettingsListTheAgentKnowsBecomesItsDirective) {
  ConvertedDirective c = DirectiveFromFeedback(FromOperator(7, FeedbackAction::kApply,
                                                            {{"placement", "true"},
                                                             {"sysctl.net.core.somaxconn", "4096"},
                                                             {"runtime.listen_backlog", "4096"},
                                                             {"cross_numa", "false"}}));
  ASSERT_TRUE(c.directive.has_value()) << ::testing::PrintToString(Knobs(c.refusal));
  const Directive& d = *c.directive;
  EXPECT_EQ(d.generation, 7);
  EXPECT_EQ(d.action, Directive::Action::kApply);
  EXPECT_EQ(d.arm, "canary");
  EXPECT_EQ(d.placement, PlacementMode::kSpread);
  EXPECT_FALSE(d.policy.allow_cross_numa);
  ASSERT_EQ(d.sysctls.size(), 1u);
  EXPECT_EQ(d.sysctls[0].first, "net.core.somaxconn");
  EXPECT_TRUE(d.runtime);
  EXPECT_EQ(d.page.listen_backlog, 4096);
  EXPECT_EQ(d.page.magic, BOOSTER_CONTROL_MAGIC) << "a page the runtime library accepts";
  EXPECT_THAT(d.keys, ElementsAre("placement", "sysctl.net.core.somaxconn",
                                  "runtime.listen_backlog", "cross_numa"));

  // The same text through the file parser gives the same directive.
  absl::StatusOr<Directive> file = ParseDirective(
      "generation = 7\naction = apply\narm = canary\nplacement = true\n"
      "sysctl.net.core.somaxconn = 4096\nruntime.listen_backlog = 4096\ncross_numa = false\n");
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file->keys, d.keys);
  EXPECT_EQ(file->page.features, d.page.features);
}

TEST(DirectiveFromFeedbackTest, ObserveAndRollbackCarryNoSettings) {
  for (FeedbackAction a : {FeedbackAction::kObserve, FeedbackAction::kRollback}) {
    ConvertedDirective c = DirectiveFromFeedback(FromOperator(8, a, {{"jvm.heap", "2g"}}));
    ASSERT_TRUE(c.directive.has_value());
    EXPECT_EQ(c.directive->action, a == FeedbackAction::kObserve ? Directive::Action::kObserve
                                                                 : Directive::Action::kRollback);
    EXPECT_THAT(c.directive->keys, IsEmpty());
  }
}

TEST(DirectiveFromFeedbackTest, WhatCannotBeAppliedLiveIsRefusedWholeAndSaysWhy) {
  // Nothing of it is a live setting of this agent.
  ConvertedDirective c = DirectiveFromFeedback(
      FromOperator(9, FeedbackAction::kApply, {{"jvm.heap", "2g"}, {"env.GOMAXPROCS", "4"}}));
  EXPECT_FALSE(c.directive.has_value());
  EXPECT_EQ(c.refusal.generation, 9);
  ASSERT_EQ(c.refusal.knobs.size(), 2u);
  for (const FeedbackKnob& k : c.refusal.knobs) {
    EXPECT_EQ(k.outcome, FeedbackKnobOutcome::kNotReachable) << k.name;
    EXPECT_THAT(k.reason, HasSubstr("not a setting this agent applies live")) << k.name;
  }
  EXPECT_THAT(c.refusal.knobs[0].reason, StartsWith("unknown key jvm.heap"));

  // A bad value and an unknown key among good settings: all or nothing.
  c = DirectiveFromFeedback(
      FromOperator(10, FeedbackAction::kApply,
                   {{"placement", "true"}, {"sysctl.vm.swappiness", "1"}, {"runtime.bogus", "1"}}));
  EXPECT_FALSE(c.directive.has_value());
  EXPECT_THAT(
      Knobs(c.refusal),
      ElementsAre(StartsWith("sysctl.vm.swappiness=failed(sysctl vm.swappiness is not namespaced"),
                  StartsWith("runtime.bogus=not_reachable(unknown runtime setting bogus: "),
                  "placement=failed(not applied: a directive is all or nothing and "
                  "sysctl.vm.swappiness, runtime.bogus were not)"));
}

TEST(DirectiveFromFeedbackTest, AnActionOrArmTheAgentDoesNotKnowIsRefused) {
  ConvertedDirective c =
      DirectiveFromFeedback(FromOperator(11, FeedbackAction::kUnspecified, {{"placement", "1"}}));
  EXPECT_FALSE(c.directive.has_value());
  EXPECT_THAT(Knobs(c.refusal), ElementsAre(StartsWith("action=failed(an action this agent")));

  FeedbackDirective promoted = FromOperator(12, FeedbackAction::kApply, {{"placement", "true"}});
  promoted.arm = "promoted";
  c = DirectiveFromFeedback(promoted);
  EXPECT_FALSE(c.directive.has_value());
  EXPECT_THAT(Knobs(c.refusal),
              ElementsAre("arm=failed(arm \"promoted\" is not baseline or canary)",
                          "placement=failed(not applied: a directive is all or nothing and arm "
                          "was not)"));
}

TEST(OperatorDirectivesTest, TheNewestGenerationWaitsForTheLoopOlderOnesAreIgnored) {
  OperatorDirectives inbox;
  EXPECT_FALSE(inbox.Poll()->has_value());
  EXPECT_EQ(inbox.Offer(FromOperator(2, FeedbackAction::kApply, {{"placement", "true"}})).result,
            OperatorDirectives::Result::kQueued);
  // A newer one before the loop polled replaces it.
  EXPECT_EQ(inbox.Offer(FromOperator(3, FeedbackAction::kRollback)).result,
            OperatorDirectives::Result::kQueued);
  absl::StatusOr<std::optional<Directive>> d = inbox.Poll();
  ASSERT_TRUE(d.ok() && d->has_value());
  EXPECT_EQ((*d)->generation, 3);
  EXPECT_EQ((*d)->action, Directive::Action::kRollback);
  EXPECT_FALSE(inbox.Poll()->has_value()) << "handed out once";

  // Not above the last: the protocol says ignore it (e.g. sent again on a new stream).
  OperatorDirectives::Offered again = inbox.Offer(FromOperator(3, FeedbackAction::kApply));
  EXPECT_EQ(again.result, OperatorDirectives::Result::kStale);
  EXPECT_FALSE(again.answer.has_value());
  EXPECT_EQ(inbox.Offer(FromOperator(1, FeedbackAction::kApply)).result,
            OperatorDirectives::Result::kStale);
  EXPECT_FALSE(inbox.Poll()->has_value());

  // Refused: answered at once, nothing for the loop; its generation counts as handled.
  OperatorDirectives::Offered refused =
      inbox.Offer(FromOperator(4, FeedbackAction::kApply, {{"jvm.heap", "2g"}}));
  EXPECT_EQ(refused.result, OperatorDirectives::Result::kRefused);
  ASSERT_TRUE(refused.answer.has_value());
  EXPECT_EQ(refused.answer->generation, 4);
  EXPECT_FALSE(inbox.Poll()->has_value());
  EXPECT_EQ(inbox.Offer(FromOperator(4, FeedbackAction::kApply)).result,
            OperatorDirectives::Result::kStale);
  EXPECT_EQ(inbox.Offer(FromOperator(5, FeedbackAction::kObserve)).result,
            OperatorDirectives::Result::kQueued);
  EXPECT_EQ((*inbox.Poll())->generation, 5);
}

}  // namespace
}  // namespace booster::agent
