#include "operator/analysis/judge.h"

#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace booster::analysis {
namespace {

using rollout::AnalysisSpec;
using rollout::MetricSpec;
using ::testing::HasSubstr;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);
constexpr absl::Duration kInterval = absl::Seconds(30);

MetricSpec Metric(std::string name, bool required = true) {
  MetricSpec m;
  m.name = std::move(name);
  m.required = required;
  return m;
}

AnalysisSpec Spec(std::vector<MetricSpec> metrics, int min_samples = 10) {
  AnalysisSpec s;
  s.mode = rollout::AnalysisMode::kMetrics;
  s.interval = kInterval;
  s.min_samples = min_samples;
  s.confidence = 0.95;
  s.metrics = std::move(metrics);
  return s;
}

// Window i spans [kT0 + (offset + i) intervals, + 1 interval], from a pod long warm.
std::vector<Window> Series(const std::vector<double>& values, int offset = 0,
                           absl::Time pod_start = kT0 - absl::Hours(1)) {
  std::vector<Window> out;
  for (size_t i = 0; i < values.size(); ++i) {
    const absl::Time start = kT0 + kInterval * (offset + static_cast<int>(i));
    out.push_back(Window{start, start + kInterval, values[i], "pod", pod_start});
  }
  return out;
}

std::vector<double> Scaled(const std::vector<double>& v, double factor) {
  std::vector<double> out;
  for (double x : v) out.push_back(x * factor);
  return out;
}

Look StepOver() { return Look{1, 1, true, 1}; }
Look MidStep() { return Look{1, 1, false, 1}; }

// Twelve latency windows around 100 ms, all distinct.
const std::vector<double> kLatency = {95, 97, 98, 99, 100, 100.5, 101, 102, 103, 104, 96, 99.5};
// The same windows shifted by a hair: no regression.
const std::vector<double> kLatencySame = {95.1,  97.1,  98.1,  99.1,  100.1, 100.6,
                                          101.1, 102.1, 103.1, 104.1, 96.1,  99.6};
// Noisy windows (median ~100) and the same shifted up 10%: too noisy to tell apart.
const std::vector<double> kNoisy = {50, 150, 60, 140, 70, 130, 80, 120, 90, 110, 100, 100.5};
const std::vector<double> kZeros(12, 0.0);
const std::vector<double> kErrors = {0.01, 0.02, 0,    0.03, 0.01, 0.02,
                                     0.01, 0.04, 0.02, 0,    0.01, 0.03};
const std::vector<double> kOneError = {0, 0, 0, 0, 0, 0.02, 0, 0, 0, 0, 0, 0};
// Same centre as kLatency, six times the spread.
const std::vector<double> kWide = {70, 82, 88, 94, 100, 103, 106, 112, 118, 124, 76, 97};

struct Row {
  std::string situation;  // the row of docs/analysis.md's verdict table
  AnalysisSpec spec;
  ArmWindows windows;
  Look look;
  DecisionKind kind;
  std::string reason;
  JudgeOptions options = JudgeOptions();
};

ArmWindows Arms(std::string metric, const std::vector<Window>& baseline,
                const std::vector<Window>& canary) {
  ArmWindows w;
  w.baseline[metric] = baseline;
  w.canary[metric] = canary;
  return w;
}

std::vector<Row> VerdictTable() {
  const AnalysisSpec p99 = Spec({Metric("latencyP99")});
  std::vector<Row> rows;
  rows.push_back({"required metric with no windows, step not over", p99, ArmWindows(), MidStep(),
                  DecisionKind::kWait, kReasonNotEnoughWindows});
  rows.push_back({"required metric with no windows, step over", p99, ArmWindows(), StepOver(),
                  DecisionKind::kInconclusive, kReasonNotEnoughWindows});
  rows.push_back({"required metric below minSamples, step not over", p99,
                  Arms("latencyP99", Series(kLatency), Series({100, 101, 99})), MidStep(),
                  DecisionKind::kWait, kReasonNotEnoughWindows});
  rows.push_back({"required metric below minSamples, step over", p99,
                  Arms("latencyP99", Series(kLatency), Series({100, 101, 99})), StepOver(),
                  DecisionKind::kInconclusive, kReasonNotEnoughWindows});
  rows.push_back({"arms alike, step not over", p99,
                  Arms("latencyP99", Series(kLatency), Series(kLatencySame)), MidStep(),
                  DecisionKind::kWait, kReasonStepInProgress});
  rows.push_back({"arms alike, step over", p99,
                  Arms("latencyP99", Series(kLatency), Series(kLatencySame)), StepOver(),
                  DecisionKind::kPass, kReasonMetricsPassed});
  rows.push_back({"canary 20% worse (significant), step not over", p99,
                  Arms("latencyP99", Series(kLatency), Series(Scaled(kLatency, 1.2))), MidStep(),
                  DecisionKind::kFail, kReasonAnalysisFailed});
  rows.push_back({"canary 20% worse (significant), step over", p99,
                  Arms("latencyP99", Series(kLatency), Series(Scaled(kLatency, 1.2))), StepOver(),
                  DecisionKind::kFail, kReasonAnalysisFailed});
  rows.push_back({"canary 3% worse (significant) within maxRegressionPercent 5", p99,
                  Arms("latencyP99", Series(kLatency), Series(Scaled(kLatency, 1.03))), StepOver(),
                  DecisionKind::kPass, kReasonMetricsPassed});
  rows.push_back({"canary 10% worse but not significant (noisy windows)", p99,
                  Arms("latencyP99", Series(kNoisy), Series(Scaled(kNoisy, 1.1))), StepOver(),
                  DecisionKind::kPass, kReasonMetricsPassed});
  rows.push_back({"canary 20% better", p99,
                  Arms("latencyP99", Series(kLatency), Series(Scaled(kLatency, 0.8))), StepOver(),
                  DecisionKind::kPass, kReasonMetricsPassed});
  const AnalysisSpec tput = Spec({Metric("throughput")});
  rows.push_back({"throughput 20% lower in the canary", tput,
                  Arms("throughput", Series(kLatency), Series(Scaled(kLatency, 0.8))), StepOver(),
                  DecisionKind::kFail, kReasonAnalysisFailed});
  rows.push_back({"throughput 20% higher in the canary", tput,
                  Arms("throughput", Series(kLatency), Series(Scaled(kLatency, 1.2))), StepOver(),
                  DecisionKind::kPass, kReasonMetricsPassed});
  const AnalysisSpec errors = Spec({Metric("errorRate")});
  rows.push_back({"zero errors in both arms", errors,
                  Arms("errorRate", Series(kZeros), Series(kZeros)), StepOver(),
                  DecisionKind::kPass, kReasonMetricsPassed});
  rows.push_back({"errors only in the canary, in most windows", errors,
                  Arms("errorRate", Series(kZeros), Series(kErrors)), MidStep(),
                  DecisionKind::kFail, kReasonAnalysisFailed});
  rows.push_back({"errors only in the canary, in one window (not significant)", errors,
                  Arms("errorRate", Series(kZeros), Series(kOneError)), StepOver(),
                  DecisionKind::kPass, kReasonMetricsPassed});
  rows.push_back({"canary spread 6x the baseline's, median unmoved, step not over", p99,
                  Arms("latencyP99", Series(kLatency), Series(kWide)), MidStep(),
                  DecisionKind::kWait, kReasonStepInProgress});
  rows.push_back({"canary spread 6x the baseline's, median unmoved, step over", p99,
                  Arms("latencyP99", Series(kLatency), Series(kWide)), StepOver(),
                  DecisionKind::kInconclusive, kReasonInconclusive});
  AnalysisSpec improve = p99;
  improve.metrics[0].min_improvement_percent = 10;
  rows.push_back({"minImprovementPercent 10, canary 20% better", improve,
                  Arms("latencyP99", Series(kLatency), Series(Scaled(kLatency, 0.8))), StepOver(),
                  DecisionKind::kPass, kReasonMetricsPassed});
  rows.push_back({"minImprovementPercent 10, canary no better", improve,
                  Arms("latencyP99", Series(kLatency), Series(kLatencySame)), StepOver(),
                  DecisionKind::kInconclusive, kReasonInconclusive});
  AnalysisSpec with_optional = Spec({Metric("latencyP99"), Metric("retransmits", false)});
  rows.push_back({"optional metric with no windows, required one passes", with_optional,
                  Arms("latencyP99", Series(kLatency), Series(kLatencySame)), StepOver(),
                  DecisionKind::kPass, kReasonMetricsPassed});
  rows.push_back({"only optional metrics, none with windows", Spec({Metric("retransmits", false)}),
                  ArmWindows(), StepOver(), DecisionKind::kInconclusive, kReasonNotEnoughWindows});
  AnalysisSpec two = Spec({Metric("latencyP99"), Metric("errorRate")});
  rows.push_back({"one metric fails while another lacks windows", two,
                  Arms("latencyP99", Series(kLatency), Series(Scaled(kLatency, 1.2))), StepOver(),
                  DecisionKind::kFail, kReasonAnalysisFailed});
  Row warm{"every canary window from a pod still warming up",
           p99,
           Arms("latencyP99", Series(kLatency), Series(Scaled(kLatency, 1.2), 0, kT0)),
           StepOver(),
           DecisionKind::kInconclusive,
           kReasonNotEnoughWindows};
  warm.options.warmup = kInterval * 20;
  rows.push_back(warm);
  rows.push_back({"arms' windows do not overlap in time", p99,
                  Arms("latencyP99", Series(kLatency), Series(Scaled(kLatency, 1.2), 100)),
                  StepOver(), DecisionKind::kInconclusive, kReasonNotEnoughWindows});
  return rows;
}

TEST(JudgeTableTest, EveryRowOfTheVerdictTable) {
  for (const Row& row : VerdictTable()) {
    SCOPED_TRACE(row.situation);
    Decision d = Judge(row.spec, row.windows, row.look, row.options);
    EXPECT_EQ(DecisionKindName(d.kind), DecisionKindName(row.kind)) << d.message;
    EXPECT_EQ(d.reason, row.reason) << d.message;
    EXPECT_FALSE(d.message.empty());
    EXPECT_EQ(d.metrics.size(), row.spec.metrics.size());
  }
}

TEST(JudgeTest, FailEvidenceNamesTheMetricAndItsFigures) {
  Decision d =
      Judge(Spec({Metric("latencyP99")}),
            Arms("latencyP99", Series(kLatency), Series(Scaled(kLatency, 1.2))), StepOver());
  ASSERT_EQ(d.kind, DecisionKind::kFail);
  const MetricEvidence& e = d.metrics[0];
  EXPECT_EQ(e.verdict, MetricVerdict::kFail);
  EXPECT_EQ(e.baseline.n, 12);
  EXPECT_EQ(e.canary.n, 12);
  EXPECT_DOUBLE_EQ(e.baseline.median, 99.75);
  EXPECT_DOUBLE_EQ(e.canary.median, 99.75 * 1.2);
  EXPECT_NEAR(e.change_percent, 20, 1e-9);
  EXPECT_NEAR(e.p_value, 1.0 / 2704156, 1e-15);  // complete separation, 1 / C(24, 12)
  EXPECT_NEAR(e.alpha, 0.05 * kLocationShare, 1e-15);
  EXPECT_THAT(d.message, HasSubstr("latencyP99 is worse (+20.0%"));
  EXPECT_THAT(d.message, HasSubstr("beyond the 5% allowed"));
}

TEST(JudgeTest, ZeroBaselineMeasuresTheChangeOnMeans) {
  Decision d = Judge(Spec({Metric("errorRate")}),
                     Arms("errorRate", Series(kZeros), Series(kErrors)), StepOver());
  const MetricEvidence& e = d.metrics[0];
  EXPECT_TRUE(e.change_of_means);
  EXPECT_TRUE(std::isinf(e.change_percent) && e.change_percent > 0);
  EXPECT_THAT(d.message, HasSubstr("up from zero"));
  // A sparse but non-zero baseline: the means carry the change.
  std::vector<double> base = kZeros;
  base[3] = 0.01;
  d = Judge(Spec({Metric("errorRate")}), Arms("errorRate", Series(base), Series(kErrors)),
            StepOver());
  EXPECT_TRUE(d.metrics[0].change_of_means);
  EXPECT_NEAR(d.metrics[0].change_percent, 100 * (0.2 / 12 - 0.01 / 12) / (0.01 / 12), 1e-6);
  EXPECT_EQ(d.kind, DecisionKind::kFail);
}

TEST(JudgeTest, AlphaIsSplitOverPlannedLooksAndMetrics) {
  // Complete separation of 6 vs 6 windows: p = 1/C(12, 6) = 0.00108.
  const std::vector<double> base = {95, 97, 99, 100, 101, 103};
  const ArmWindows w = Arms("latencyP99", Series(base), Series(Scaled(base, 1.3)));
  const AnalysisSpec one = Spec({Metric("latencyP99")}, 6);
  // One look: alpha 0.0375 for the location test, the regression fails.
  EXPECT_EQ(Judge(one, w, Look{1, 1, false, 1}).kind, DecisionKind::kFail);
  // 100 planned looks: alpha 0.000375 < 0.00108, the same windows cannot fail.
  Decision d = Judge(one, w, Look{7, 100, true, 1});
  EXPECT_EQ(d.kind, DecisionKind::kPass);
  EXPECT_NEAR(d.alpha_look, 0.05 / 100, 1e-15);
  EXPECT_NEAR(d.metrics[0].alpha, 0.05 / 100 * kLocationShare, 1e-15);
  // Four metrics share one look's budget.
  AnalysisSpec four = Spec({Metric("latencyP99"), Metric("latencyP50", false),
                            Metric("cpuPerRequest", false), Metric("runQueueDelay", false)},
                           6);
  d = Judge(four, w, Look{1, 40, false, 1});
  EXPECT_NEAR(d.metrics[0].alpha, 0.05 / 40 * kLocationShare / 4, 1e-15);
  EXPECT_EQ(d.kind, DecisionKind::kWait);  // 0.00108 > 0.000234: not yet a Fail
  EXPECT_EQ(Judge(four, w, Look{1, 8, false, 1}).kind, DecisionKind::kFail);  // 0.00117
}

TEST(JudgeTest, LooksPerStepAndPlannedLooks) {
  AnalysisSpec spec;  // the CRD's defaults: 30s windows, two extensions
  EXPECT_EQ(LooksPerStep(spec, absl::Minutes(2)), 12);
  EXPECT_EQ(PlannedLooks(spec, 3, absl::Minutes(2)), 36);
  spec.max_extensions = 0;
  EXPECT_EQ(LooksPerStep(spec, absl::Seconds(100)), 4);  // rounded up
  EXPECT_EQ(LooksPerStep(spec, absl::Seconds(10)), 1);
  EXPECT_EQ(PlannedLooks(spec, 0, absl::Minutes(1)), 2);  // at least one step
}

TEST(JudgeTest, WarmupDefaultsToOneInterval) {
  // Canary pod started at kT0: its first window starts 0s after, younger than one interval.
  ArmWindows w = Arms("latencyP99", Series(kLatency), Series(kLatencySame, 0, kT0));
  Decision d = Judge(Spec({Metric("latencyP99")}), w, StepOver());
  EXPECT_EQ(d.metrics[0].canary.n, 11);
  JudgeOptions none;
  none.warmup = absl::ZeroDuration();
  d = Judge(Spec({Metric("latencyP99")}), w, StepOver(), none);
  EXPECT_EQ(d.metrics[0].canary.n, 12);
  // A pod whose start is unknown counts as warm.
  w = Arms("latencyP99", Series(kLatency), Series(kLatencySame, 0, absl::InfinitePast()));
  EXPECT_EQ(Judge(Spec({Metric("latencyP99")}), w, StepOver()).metrics[0].canary.n, 12);
}

TEST(JudgeTest, ShortMetricsSayWhereTheirWindowsWent) {
  JudgeOptions long_warmup;
  long_warmup.warmup = kInterval * 20;
  Decision d = Judge(Spec({Metric("latencyP99")}),
                     Arms("latencyP99", Series(kLatency), Series(kLatency, 0, kT0)), StepOver(),
                     long_warmup);
  EXPECT_THAT(d.message, HasSubstr("has 12 baseline and 0 canary windows of the 10 needed"));
  EXPECT_THAT(d.message, HasSubstr("(12 from pods in warm-up not counted)"));
  d = Judge(Spec({Metric("latencyP99")}),
            Arms("latencyP99", Series(kLatency), Series(kLatency, 100)), StepOver());
  EXPECT_THAT(d.message, HasSubstr("(the arms' windows do not overlap in time)"));
  d = Judge(Spec({Metric("latencyP99")}, 20),
            Arms("latencyP99", Series(kLatency), Series(kLatency, 6)), StepOver());
  EXPECT_THAT(d.message, HasSubstr("has 6 baseline and 6 canary windows of the 20 needed per arm "
                                   "(12 outside the time range both arms cover not counted)"));
}

TEST(JudgeTest, ArmsAreComparedOverTheirCommonTimeRangeOnly) {
  // Baseline windows 0..11, canary windows 6..17: only the overlap (6..11) counts.
  ArmWindows w = Arms("latencyP99", Series(kLatency), Series(kLatencySame, 6));
  Decision d = Judge(Spec({Metric("latencyP99")}, 3), w, StepOver());
  EXPECT_EQ(d.metrics[0].baseline.n, 6);
  EXPECT_EQ(d.metrics[0].canary.n, 6);
  // Unaligned windows (pods start their windows whenever): a window belongs to the range
  // when its midpoint does.
  std::vector<Window> shifted = Series(kLatencySame);
  for (Window& x : shifted) {
    x.start += absl::Seconds(20);
    x.end += absl::Seconds(20);
  }
  d = Judge(Spec({Metric("latencyP99")}, 3), Arms("latencyP99", Series(kLatency), shifted),
            StepOver());
  EXPECT_EQ(d.metrics[0].baseline.n, 11);  // the first window's midpoint precedes the canary's
  EXPECT_EQ(d.metrics[0].canary.n, 11);    // the last one's follows the baseline's
}

TEST(JudgeTest, NonFiniteValuesAndBackwardWindowsAreDropped) {
  std::vector<Window> canary = Series(kLatencySame);
  canary[0].value = std::nan("");
  canary[1].value = std::numeric_limits<double>::infinity();
  std::swap(canary[2].start, canary[2].end);
  Decision d =
      Judge(Spec({Metric("latencyP99")}), Arms("latencyP99", Series(kLatency), canary), StepOver());
  EXPECT_EQ(d.metrics[0].canary.n, 9);
  EXPECT_EQ(d.kind, DecisionKind::kInconclusive);  // 9 < minSamples 10
}

TEST(JudgeTest, AnOutlierWindowDoesNotFailTheCanary) {
  // One 50x window in the canary: a mean-based judge would fail it, ranks do not.
  std::vector<double> canary = kLatencySame;
  canary[4] = 5000;
  Decision d = Judge(Spec({Metric("latencyP99")}),
                     Arms("latencyP99", Series(kLatency), Series(canary)), StepOver());
  EXPECT_EQ(d.kind, DecisionKind::kPass) << d.message;
}

TEST(JudgeTest, SpreadCheckIgnoresANarrowerCanary) {
  Decision d = Judge(Spec({Metric("latencyP99")}),
                     Arms("latencyP99", Series(kWide), Series(kLatency)), StepOver());
  EXPECT_EQ(d.kind, DecisionKind::kPass) << d.message;
  EXPECT_LT(d.metrics[0].spread_ratio, 1);
}

TEST(JudgeTest, SpreadEvidenceIsReported) {
  Decision d = Judge(Spec({Metric("latencyP99")}),
                     Arms("latencyP99", Series(kLatency), Series(kWide)), StepOver());
  ASSERT_EQ(d.kind, DecisionKind::kInconclusive);
  EXPECT_GT(d.metrics[0].spread_ratio, 2);
  EXPECT_LT(d.metrics[0].spread_p_value, 0.05 * (1 - kLocationShare));
  EXPECT_GT(d.metrics[0].p_value, 0.0375);  // the centre did not move
  EXPECT_THAT(d.message, HasSubstr("latencyP99 spread"));
}

TEST(JudgeTest, NoMetricsIsNeverAPass) {
  Decision d = Judge(Spec({}), ArmWindows(), StepOver());
  EXPECT_EQ(d.kind, DecisionKind::kInconclusive);
  EXPECT_EQ(Judge(Spec({}), ArmWindows(), MidStep()).kind, DecisionKind::kWait);
}

}  // namespace
}  // namespace booster::analysis
