#include "operator/analysis/judge_verdict_source.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "absl/strings/numbers.h"
#include "gtest/gtest.h"

namespace booster::analysis {
namespace {

using rollout::AnalysisSpec;
using rollout::Verdict;
using rollout::VerdictKind;
using rollout::VerdictRequest;
using ::testing::HasSubstr;

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);
constexpr absl::Duration kInterval = absl::Seconds(30);

class FakeWindowSource final : public WindowSource {
 public:
  absl::StatusOr<ArmWindows> Windows(const WindowQuery& query) override {
    queries.push_back(query);
    if (!status.ok()) return status;
    return windows;
  }
  ArmWindows windows;
  absl::Status status = absl::OkStatus();
  std::vector<WindowQuery> queries;
};

AnalysisSpec MetricsSpec() {
  AnalysisSpec s;
  s.mode = rollout::AnalysisMode::kMetrics;
  s.interval = kInterval;
  s.min_samples = 6;
  s.confidence = 0.95;
  s.max_extensions = 1;
  rollout::MetricSpec m;
  m.name = "latencyP99";
  s.metrics.push_back(m);
  return s;
}

VerdictRequest Request(const AnalysisSpec& spec, absl::Duration elapsed, int step = 1,
                       int extensions = 0) {
  VerdictRequest r;
  r.profile_namespace = "shop";
  r.profile_name = "checkout";
  r.step = step;
  r.weight = 10;
  r.analysis_start = kStart;
  r.extensions = extensions;
  r.step_duration = absl::Minutes(2);  // 4 intervals; with 1 extension 8 looks per step
  r.analysis = &spec;
  r.now = kStart + elapsed;
  return r;
}

// Three pods per arm, one window each per interval from the analysis start, for `intervals`
// intervals; the canary's values scaled by `factor`.
ArmWindows Reports(int intervals, double factor) {
  ArmWindows w;
  const double base[] = {100, 97, 103, 99, 101, 98, 102, 96, 104, 100.5, 99.5, 101.5};
  int v = 0;
  for (int i = 0; i < intervals; ++i) {
    for (int pod = 0; pod < 3; ++pod, ++v) {
      const absl::Time start = kStart + kInterval * i;
      const double value = base[v % 12] + 0.01 * v;
      const std::string name = "p" + std::to_string(pod);
      w.baseline["latencyP99"].push_back(
          Window{start, start + kInterval, value, "b-" + name, kStart - absl::Hours(1)});
      w.canary["latencyP99"].push_back(Window{start, start + kInterval, value * factor + 0.001,
                                              "c-" + name, kStart - absl::Hours(1)});
    }
  }
  return w;
}

TEST(LookForTest, CountsCompletedIntervalsAcrossSteps) {
  const AnalysisSpec spec = MetricsSpec();
  Look look = LookFor(Request(spec, absl::Seconds(95), 2), 3);
  EXPECT_EQ(look.index, 8 + 3);  // step 1's 8 looks, then 3 intervals done
  EXPECT_EQ(look.planned, 24);   // 3 steps x ceil(2 x 2m / 30s)
  EXPECT_FALSE(look.step_over);
  EXPECT_EQ(look.step_ends, 2);
  look = LookFor(Request(spec, absl::Minutes(2), 2), 3);
  EXPECT_TRUE(look.step_over);
  EXPECT_EQ(look.index, 12);
  // An extension moves the step's end; the look index never leaves the step's range.
  EXPECT_FALSE(LookFor(Request(spec, absl::Minutes(3), 1, 1), 3).step_over);
  EXPECT_EQ(LookFor(Request(spec, absl::Minutes(30), 1, 1), 3).index, 8);
  // A step beyond the configured count still gets a budget.
  EXPECT_EQ(LookFor(Request(spec, absl::Minutes(1), 5), 3).planned, 40);
}

TEST(JudgeVerdictSourceTest, WaitsForTheFirstWindowWithoutAskingTheStore) {
  FakeWindowSource store;
  JudgeVerdictSource source(store);
  const AnalysisSpec spec = MetricsSpec();
  Verdict v = source.Judge(Request(spec, absl::Seconds(10)));
  EXPECT_EQ(v.kind, VerdictKind::kWait);
  EXPECT_EQ(v.reason, "NotEnoughWindows");
  EXPECT_EQ(v.recheck_after, absl::Seconds(20) + absl::Seconds(2));
  EXPECT_TRUE(store.queries.empty());
}

TEST(JudgeVerdictSourceTest, FailsARegressionMidStepWithEvidence) {
  FakeWindowSource store;
  store.windows = Reports(6, 1.3);
  JudgeVerdictSource source(store);
  const AnalysisSpec spec = MetricsSpec();
  Verdict v = source.Judge(Request(spec, absl::Seconds(185)));
  ASSERT_EQ(store.queries.size(), 1u);
  EXPECT_EQ(store.queries[0].profile_name, "checkout");
  EXPECT_EQ(store.queries[0].step, 1);
  EXPECT_EQ(store.queries[0].since, kStart);
  EXPECT_EQ(v.kind, VerdictKind::kFail);
  EXPECT_EQ(v.reason, "AnalysisFailed");
  EXPECT_THAT(v.message, HasSubstr("latencyP99 is worse (+30.0%"));
  EXPECT_EQ(v.evidence["judge"], "metrics");
  EXPECT_EQ(v.evidence["look"], "6/24");
  EXPECT_EQ(v.evidence["latencyP99.verdict"], "Fail");
  EXPECT_EQ(v.evidence["latencyP99.baseline"], "n=18 median=100.1");
  EXPECT_EQ(v.evidence["latencyP99.canary"], "n=18 median=130.1");
  EXPECT_EQ(v.evidence["latencyP99.changePercent"], "30");
  EXPECT_EQ(v.evidence["latencyP99.method"], "paired") << "these windows carry no histogram";
  // Held to this look's share of the level test, 0.05 / 24 looks x kLocationShare, which
  // the evidence says (to 3 figures).
  double p = 1;
  double alpha = 0;
  ASSERT_TRUE(absl::SimpleAtod(v.evidence["latencyP99.pValue"], &p));
  ASSERT_TRUE(absl::SimpleAtod(v.evidence["latencyP99.alpha"], &alpha));
  EXPECT_LE(p, 0.05 / 24 * kLocationShare);
  EXPECT_NEAR(alpha, 0.05 / 24 * kLocationShare, 1e-5);
}

TEST(JudgeVerdictSourceTest, TheGoRuntimeAndMemoryFiguresComeAlongUnjudged) {
  FakeWindowSource store;
  store.windows = Reports(6, 1.3);
  for (double b : {0.20, 0.22, 0.21}) {
    store.windows.baseline["goGcCpuShare"].push_back(Window{kStart, kStart + kInterval, b, "b-p0"});
  }
  for (double c : {0.05, 0.06}) {
    store.windows.canary["goGcCpuShare"].push_back(Window{kStart, kStart + kInterval, c, "c-p0"});
  }
  store.windows.canary["goHeapBytes"].push_back(Window{kStart, kStart + kInterval, 5e7, "c-p0"});
  JudgeVerdictSource source(store);
  const AnalysisSpec spec = MetricsSpec();
  Verdict v = source.Judge(Request(spec, absl::Seconds(185)));
  EXPECT_EQ(v.evidence["goGcCpuShare.verdict"], "NotJudged");
  EXPECT_EQ(v.evidence["goGcCpuShare.baseline"], "n=3 median=0.21");
  EXPECT_EQ(v.evidence["goGcCpuShare.canary"], "n=2 median=0.055");
  EXPECT_EQ(v.evidence["goGcCpuShare.changePercent"], "-73.81");
  EXPECT_EQ(v.evidence["goHeapBytes.baseline"], "n=0 median=-");
  EXPECT_EQ(v.evidence.count("goHeapBytes.changePercent"), 0u);
  EXPECT_EQ(v.evidence.count("memoryRss.verdict"), 0u);  // measured by neither arm
  // The judged metric's verdict is the judge's own.
  EXPECT_EQ(v.evidence["latencyP99.verdict"], "Fail");
}

TEST(JudgeVerdictSourceTest, OnlyWindowsEndedByTheLookBoundaryCount) {
  FakeWindowSource store;
  store.windows = Reports(4, 1.0);  // the 4th interval's windows end at 2m
  JudgeVerdictSource source(store);
  const AnalysisSpec spec = MetricsSpec();
  // 100s in: look 3, windows up to 90s; the ones ending at 120s are not seen yet.
  Verdict v = source.Judge(Request(spec, absl::Seconds(100)));
  EXPECT_EQ(v.kind, VerdictKind::kWait);
  EXPECT_EQ(v.reason, "StepInProgress");
  EXPECT_EQ(v.evidence["latencyP99.baseline"].substr(0, 4), "n=9 ");
  // Recheck at the next boundary (120s) plus the grace.
  EXPECT_EQ(v.recheck_after, absl::Seconds(22));
}

TEST(JudgeVerdictSourceTest, PassesOnlyOnceTheStepIsOver) {
  FakeWindowSource store;
  store.windows = Reports(4, 1.0);
  JudgeVerdictSource source(store);
  // Within 20%: three pods per arm over four intervals show alike arms to be so.
  AnalysisSpec spec = MetricsSpec();
  spec.metrics[0].max_regression_percent = 20;
  EXPECT_EQ(source.Judge(Request(spec, absl::Seconds(119))).kind, VerdictKind::kWait);
  Verdict v = source.Judge(Request(spec, absl::Minutes(2)));
  EXPECT_EQ(v.kind, VerdictKind::kPass);
  EXPECT_EQ(v.reason, "MetricsPassed");
  EXPECT_EQ(v.evidence["look"], "4/24");
  EXPECT_EQ(v.evidence["latencyP99.verdict"], "Pass");
}

TEST(JudgeVerdictSourceTest, TooFewWindowsAtTheStepEndIsInconclusive) {
  FakeWindowSource store;
  store.windows = Reports(1, 1.0);  // 3 windows per arm, 6 needed
  JudgeVerdictSource source(store);
  const AnalysisSpec spec = MetricsSpec();
  EXPECT_EQ(source.Judge(Request(spec, absl::Seconds(60))).kind, VerdictKind::kWait);
  Verdict v = source.Judge(Request(spec, absl::Minutes(2)));
  EXPECT_EQ(v.kind, VerdictKind::kInconclusive);
  EXPECT_EQ(v.reason, "NotEnoughWindows");
  // After an extension the step goes on: Wait again.
  v = source.Judge(Request(spec, absl::Minutes(3), 1, 1));
  EXPECT_EQ(v.kind, VerdictKind::kWait);
}

TEST(JudgeVerdictSourceTest, AnUnreadableStoreWaitsThenIsInconclusive) {
  FakeWindowSource store;
  store.status = absl::UnavailableError("window store not synced");
  JudgeVerdictSource source(store);
  const AnalysisSpec spec = MetricsSpec();
  Verdict v = source.Judge(Request(spec, absl::Seconds(60)));
  EXPECT_EQ(v.kind, VerdictKind::kWait);
  EXPECT_EQ(v.reason, "WindowsUnavailable");
  EXPECT_THAT(v.message, HasSubstr("window store not synced"));
  v = source.Judge(Request(spec, absl::Minutes(2)));
  EXPECT_EQ(v.kind, VerdictKind::kInconclusive);
  EXPECT_EQ(v.reason, "WindowsUnavailable");
}

TEST(JudgeVerdictSourceTest, ModeTimeIsDelegatedToTheTimeSource) {
  FakeWindowSource store;
  JudgeVerdictSource source(store);
  AnalysisSpec spec = MetricsSpec();
  spec.mode = rollout::AnalysisMode::kTime;
  Verdict v = source.Judge(Request(spec, absl::Minutes(2)));
  EXPECT_EQ(v.kind, VerdictKind::kPass);
  EXPECT_EQ(v.reason, "StepDurationElapsed");
  EXPECT_TRUE(store.queries.empty());
}

// At 100% the target runs no pod: nothing to compare the canary with, so the last step is
// a soak judged by time, whatever the windows say.
TEST(JudgeVerdictSourceTest, TheLastStepWithoutBaselineIsJudgedByTime) {
  FakeWindowSource store;
  store.windows = Reports(4, 2.0);
  JudgeVerdictSource source(store);
  const AnalysisSpec spec = MetricsSpec();
  VerdictRequest r = Request(spec, absl::Minutes(1), 3);
  r.weight = 100;
  EXPECT_EQ(source.Judge(r).kind, VerdictKind::kWait);
  r.now = kStart + absl::Minutes(2);
  Verdict v = source.Judge(r);
  EXPECT_EQ(v.kind, VerdictKind::kPass);
  EXPECT_EQ(v.evidence.at("judge"), "time");
  EXPECT_THAT(v.message, ::testing::HasSubstr("no baseline left at 100%"));
  EXPECT_TRUE(store.queries.empty());
}

// With a fresh baseline beside it, the 100% step has something to compare with and is
// judged on the windows like any other: a canary twice as slow fails there too.
TEST(JudgeVerdictSourceTest, TheLastStepWithAFreshBaselineIsJudgedOnTheWindows) {
  FakeWindowSource store;
  store.windows = Reports(4, 2.0);
  JudgeVerdictSource source(store);
  const AnalysisSpec spec = MetricsSpec();
  VerdictRequest r = Request(spec, absl::Minutes(2), 3);
  r.weight = 100;
  r.baseline_replicas = 1;
  Verdict v = source.Judge(r);
  EXPECT_EQ(v.kind, VerdictKind::kFail) << v.message;
  EXPECT_FALSE(store.queries.empty());
  EXPECT_EQ(v.evidence.at("judge"), "metrics");
}

TEST(JudgeVerdictSourceTest, ARequestWithoutAnalysisIsInconclusive) {
  FakeWindowSource store;
  JudgeVerdictSource source(store);
  VerdictRequest r = Request(MetricsSpec(), absl::Minutes(1));
  r.analysis = nullptr;
  EXPECT_EQ(source.Judge(r).kind, VerdictKind::kInconclusive);
}

TEST(ToVerdictTest, MapsKindReasonAndInfiniteChanges) {
  Decision d;
  d.kind = DecisionKind::kFail;
  d.reason = kReasonAnalysisFailed;
  d.message = "errorRate is worse";
  d.alpha_look = 0.001;
  MetricEvidence e;
  e.name = "errorRate";
  e.verdict = MetricVerdict::kFail;
  e.change_percent = std::numeric_limits<double>::infinity();
  d.metrics.push_back(e);
  Verdict v = ToVerdict(d);
  EXPECT_EQ(v.kind, VerdictKind::kFail);
  EXPECT_EQ(v.reason, "AnalysisFailed");
  EXPECT_EQ(v.message, "errorRate is worse");
  EXPECT_EQ(v.evidence["alpha"], "0.001");
  EXPECT_EQ(v.evidence["errorRate.changePercent"], "+inf");
  EXPECT_EQ(v.evidence.count("errorRate.pods"), 0u);  // no pods behind it: not said
  d.metrics[0].baseline_pods = 2;
  d.metrics[0].canary_pods = 3;
  EXPECT_EQ(ToVerdict(d).evidence["errorRate.pods"], "baseline 2, canary 3");
  // The pods' part of the standard error and the Pass's level, said once they exist.
  EXPECT_EQ(v.evidence.count("errorRate.podSdPercent"), 0u);
  EXPECT_EQ(v.evidence.count("errorRate.passAlpha"), 0u);
  d.metrics[0].pod_sd_percent = 2;
  d.metrics[0].pod_sd_observed_percent = 0.5;
  d.metrics[0].upper_bound_percent = 7.5;
  d.metrics[0].pass_alpha = 0.0168;
  const Verdict with_pods = ToVerdict(d);
  EXPECT_EQ(with_pods.evidence.at("errorRate.podSdPercent"), "2");
  EXPECT_EQ(with_pods.evidence.at("errorRate.podSdObservedPercent"), "0.5");
  EXPECT_EQ(with_pods.evidence.at("errorRate.passAlpha"), "0.0168");
  EXPECT_EQ(with_pods.evidence.at("errorRate.atWorstPercent"), "7.5");
  // The step's last third, said at a step's end.
  EXPECT_EQ(with_pods.evidence.count("errorRate.late"), 0u);
  d.metrics[0].late_intervals = 80;
  d.metrics[0].late_change_percent = 11.04;
  EXPECT_EQ(ToVerdict(d).evidence.at("errorRate.late"), "+11.0% over the last 80 intervals");
  EXPECT_EQ(v.evidence["errorRate.pValue"], "-");
  EXPECT_EQ(v.evidence["errorRate.baseline"], "n=0 median=-");
  d.kind = DecisionKind::kInconclusive;
  EXPECT_EQ(ToVerdict(d).kind, VerdictKind::kInconclusive);
  d.kind = DecisionKind::kWait;
  EXPECT_EQ(ToVerdict(d).kind, VerdictKind::kWait);
  d.kind = DecisionKind::kPass;
  EXPECT_EQ(ToVerdict(d).kind, VerdictKind::kPass);
}

}  // namespace
}  // namespace booster::analysis
