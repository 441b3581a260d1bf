#include "operator/analysis/judge.h"

#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "operator/analysis/distributions.h"

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

// The same, each window behind `requests` requests (a rate: errors per request).
std::vector<Window> Rates(const std::vector<double>& values, int64_t requests = 1000) {
  std::vector<Window> out = Series(values);
  for (Window& w : out) w.requests = requests;
  return out;
}

MetricSpec Within(std::string name, double percent) {
  MetricSpec m = Metric(std::move(name));
  m.max_regression_percent = percent;
  return m;
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
// Noisy windows (median ~100), and the same values in another order: interval by interval
// the arms differ by up to 3x, so 10% either way can be neither shown nor ruled out.
const std::vector<double> kNoisy = {50, 150, 60, 140, 70, 130, 80, 120, 90, 110, 100, 100.5};
const std::vector<double> kNoisyShuffled = {140, 60, 100, 50, 120, 90, 150, 70, 110, 80, 130, 100.5};
// kLatency in another order: the arms differ by a few percent either way per interval.
const std::vector<double> kLatencyShuffled = {101, 99, 104, 95, 100.5, 97,
                                              103, 98, 96, 102, 99.5, 100};
const std::vector<double> kZeros(12, 0.0);
const std::vector<double> kErrors = {0.01, 0.02, 0,    0.03, 0.01, 0.02,
                                     0.01, 0.04, 0.02, 0,    0.01, 0.03};
const std::vector<double> kSomeErrors = {0, 0, 0, 0, 0, 0.02, 0, 0, 0, 0, 0, 0};
const std::vector<double> kOneError = {0, 0, 0, 0, 0, 0.001, 0, 0, 0, 0, 0, 0};
// Same centre as kLatency, six times the spread.
const std::vector<double> kWide = {70, 82, 88, 94, 100, 103, 106, 112, 118, 124, 76, 97};

// `cycles` copies of `values` back to back, the last `tail` of them times `factor`.
std::vector<double> Cycled(const std::vector<double>& values, int cycles, int tail = 0,
                           double factor = 1) {
  std::vector<double> out;
  for (int i = 0; i < cycles; ++i) out.insert(out.end(), values.begin(), values.end());
  for (size_t i = out.size() - static_cast<size_t>(tail); i < out.size(); ++i) out[i] *= factor;
  return out;
}

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
  // p99 within 10%: with one pod per arm and twelve intervals, near-identical arms are
  // shown within it; within 2% they are not (the pods themselves may differ that much).
  const AnalysisSpec p99 = Spec({Within("latencyP99", 10)});
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
  rows.push_back({"canary 3% worse (significant) within maxRegressionPercent 10", p99,
                  Arms("latencyP99", Series(kLatency), Series(Scaled(kLatency, 1.03))), StepOver(),
                  DecisionKind::kPass, kReasonMetricsPassed});
  rows.push_back({"arms alike, one pod per arm, within 2%: not shown", Spec({Within("latencyP99", 2)}),
                  Arms("latencyP99", Series(kLatency), Series(kLatencySame)), StepOver(),
                  DecisionKind::kInconclusive, kReasonInconclusive});
  rows.push_back({"canary 10% worse, noisy windows: neither shown worse nor within 10%", p99,
                  Arms("latencyP99", Series(kNoisy), Series(Scaled(kNoisyShuffled, 1.1))),
                  StepOver(), DecisionKind::kInconclusive, kReasonInconclusive});
  rows.push_back({"the same, step not over", p99,
                  Arms("latencyP99", Series(kNoisy), Series(Scaled(kNoisyShuffled, 1.1))),
                  MidStep(), DecisionKind::kWait, kReasonStepInProgress});
  rows.push_back({"canary within 10% over 240 intervals, 25% worse over their last 36", p99,
                  Arms("latencyP99", Series(Cycled(kLatency, 20)),
                       Series(Cycled(kLatencyShuffled, 20, 36, 1.25))),
                  MidStep(), DecisionKind::kWait, kReasonStepInProgress});
  rows.push_back({"the same, step over: its last third not within 10%", p99,
                  Arms("latencyP99", Series(Cycled(kLatency, 20)),
                       Series(Cycled(kLatencyShuffled, 20, 36, 1.25))),
                  StepOver(), DecisionKind::kInconclusive, kReasonInconclusive});
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
                  Arms("errorRate", Rates(kZeros), Rates(kZeros)), StepOver(),
                  DecisionKind::kPass, kReasonMetricsPassed});
  rows.push_back({"errors only in the canary, in most windows", errors,
                  Arms("errorRate", Rates(kZeros), Rates(kErrors)), MidStep(),
                  DecisionKind::kFail, kReasonAnalysisFailed});
  rows.push_back({"20 errors in 12,000 canary requests, none in the baseline's", errors,
                  Arms("errorRate", Rates(kZeros), Rates(kSomeErrors)), MidStep(),
                  DecisionKind::kFail, kReasonAnalysisFailed});
  rows.push_back({"one error in 12,000 canary requests: not shown worse, nor within 0%", errors,
                  Arms("errorRate", Rates(kZeros), Rates(kOneError)), StepOver(),
                  DecisionKind::kInconclusive, kReasonInconclusive});
  rows.push_back({"errors at the same rate in both arms, within 50%",
                  Spec({Within("errorRate", 50)}),
                  Arms("errorRate", Rates(kErrors, 100000), Rates(kErrors, 100000)), StepOver(),
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
  AnalysisSpec with_optional = Spec({Within("latencyP99", 10), Metric("retransmits", false)});
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
  EXPECT_EQ(e.method, "paired");
  EXPECT_EQ(e.intervals, 12);
  EXPECT_EQ(e.baseline_pods, 1);
  EXPECT_EQ(e.canary_pods, 1);
  // Every interval 20% worse: no time noise, only the 2% floor between pods (on the log
  // scale, over one pod per arm): t = log(1.2) / (log(1.02) * sqrt(2)) with 11 degrees.
  EXPECT_NEAR(e.pod_sd_percent, 2, 1e-9);
  EXPECT_NEAR(e.p_value, StudentTUpper(std::log(1.2) / (std::log(1.02) * std::sqrt(2.0)), 11),
              1e-12);
  EXPECT_LT(e.p_value, 1e-4);
  EXPECT_NEAR(e.alpha, 0.05 * kLocationShare, 1e-15);
  EXPECT_THAT(d.message, HasSubstr("latencyP99 is worse (+20.0%"));
  EXPECT_THAT(d.message, HasSubstr("over 12 paired intervals, 1+1 pods"));
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
  // On the relative scale (the values include zeros): per interval, canary minus baseline
  // over the baseline's mean, winsorized and averaged; the plain change of means is 1900%.
  EXPECT_GT(d.metrics[0].change_percent, 1000);
  EXPECT_EQ(d.kind, DecisionKind::kFail);
}

TEST(JudgeTest, AlphaIsSplitOverPlannedLooksAndMetrics) {
  // The canary 15% worse in six intervals, by a varying amount.
  const std::vector<double> base = {95, 97, 99, 100, 101, 103};
  const std::vector<double> canary = {112, 109, 118, 113, 119, 116};
  const ArmWindows w = Arms("latencyP99", Series(base), Series(canary));
  const AnalysisSpec one = Spec({Metric("latencyP99")}, 6);
  Decision d = Judge(one, w, Look{1, 1, false, 1});
  const double p = d.metrics[0].p_value;
  ASSERT_GT(p, 1e-6);
  ASSERT_LT(p, 0.025);
  // One look: alpha 0.025 for the level test, the regression fails.
  EXPECT_EQ(d.kind, DecisionKind::kFail);
  // As many planned looks as put the level test's alpha below p: the same windows cannot
  // (steps of one look each, so every look is a level look).
  const int many = static_cast<int>(std::ceil(0.05 * kLocationShare / p)) + 1;
  d = Judge(one, w, Look{7, many, false, 1, 1});
  EXPECT_EQ(d.kind, DecisionKind::kWait) << d.message;
  EXPECT_NEAR(d.alpha_look, 0.05 / many, 1e-15);
  EXPECT_NEAR(d.metrics[0].alpha, 0.05 / many * kLocationShare, 1e-15);
  // The onset's share, split over its two CUSUMs (kOnsetReferences).
  EXPECT_NEAR(d.metrics[0].onset_alpha, 0.05 / many * kOnsetShare / 2, 1e-15);
  // Four metrics share one look's budget: a quarter of it each.
  AnalysisSpec four = Spec({Metric("latencyP99"), Metric("latencyP50", false),
                            Metric("cpuPerRequest", false), Metric("runQueueDelay", false)},
                           6);
  const int fewer = static_cast<int>(std::floor(0.05 * kLocationShare / p));
  d = Judge(four, w, Look{1, fewer, false, 1, 1});
  EXPECT_NEAR(d.metrics[0].alpha, 0.05 / fewer * kLocationShare / 4, 1e-15);
  EXPECT_EQ(d.kind, DecisionKind::kWait);
  EXPECT_EQ(Judge(four, w, Look{1, std::max(1, fewer / 4 - 1), false, 1, 1}).kind,
            DecisionKind::kFail);
}

TEST(JudgeTest, LevelLooksAreDenseEarlyThenGeometric) {
  for (int k = 1; k <= kDenseLevelLooks; ++k) EXPECT_TRUE(IsLevelLook(k, 540)) << k;
  std::vector<int> later;
  for (int k = kDenseLevelLooks + 1; k <= 540; ++k) {
    if (IsLevelLook(k, 540)) later.push_back(k);
  }
  EXPECT_EQ(later, (std::vector<int>{15, 19, 24, 30, 38, 48, 60, 75, 94, 118, 148, 185, 232, 290,
                                     363, 454, 540}));
  EXPECT_EQ(LevelLooksPerStep(540), kDenseLevelLooks + static_cast<int>(later.size()));
  EXPECT_FALSE(IsLevelLook(0, 540));
  EXPECT_FALSE(IsLevelLook(539, 540));
  // Short steps: every look.
  EXPECT_EQ(LevelLooksPerStep(1), 1);
  EXPECT_EQ(LevelLooksPerStep(12), 12);
  EXPECT_EQ(LevelLooksPerStep(13), 13);
  EXPECT_EQ(LevelLooksPerStep(15), 13);
  EXPECT_TRUE(IsLevelLook(13, 13));
  EXPECT_FALSE(IsLevelLook(13, 15));
  // The count is the looks IsLevelLook says yes to, for any step length.
  for (int per_step : {1, 5, 12, 13, 14, 16, 20, 24, 72, 100, 180, 541, 1620}) {
    int n = 0;
    for (int k = 1; k <= per_step; ++k) n += IsLevelLook(k, per_step) ? 1 : 0;
    EXPECT_EQ(LevelLooksPerStep(per_step), n) << per_step;
  }
}

TEST(JudgeTest, WithLevelLooksTheLevelTestSpendsItsShareAtLevelLooksOnly) {
  // The canary about 17% worse in twelve intervals.
  const ArmWindows w =
      Arms("latencyP99", Series({95, 97, 99, 100, 101, 103, 96, 98, 102, 100, 99, 101}),
           Series({112, 109, 118, 113, 119, 116, 121, 110, 117, 114, 122, 115}));
  const AnalysisSpec spec = Spec({Metric("latencyP99")}, 6);
  JudgeOptions levels;
  levels.level_looks = true;
  const double p = Judge(spec, w, Look{1, 1, false, 1}).metrics[0].p_value;
  // By default the share is split over every look: the regression waits.
  Decision every = Judge(spec, w, Look{540 + 30, 1620, false, 3, 540});
  EXPECT_NEAR(every.metrics[0].alpha, 0.05 / 1620 * kLocationShare, 1e-15);
  EXPECT_EQ(every.kind, DecisionKind::kWait) << every.message;
  // Three steps of 540 looks, two extensions: the share is split over the steps' level looks
  // and their two earlier step ends, not over 1,620 looks.
  const int level_looks = 3 * (LevelLooksPerStep(540) + 2);
  Decision d = Judge(spec, w, Look{540 + 30, 1620, false, 3, 540}, levels);  // step 2, look 30
  EXPECT_NEAR(d.alpha_look, 0.05 / 1620, 1e-15);
  EXPECT_NEAR(d.metrics[0].alpha, 0.05 * kLocationShare / level_looks, 1e-15);
  // A short step (12 looks, one extension): every look is a level look, counted once, so
  // the share is what it would be over every look, never less.
  EXPECT_NEAR(Judge(spec, w, Look{5, 36, false, 2, 12}, levels).metrics[0].alpha,
              0.05 * kLocationShare / 36, 1e-15);
  // Between level looks the level test shows nothing, however small p is; the onset scan
  // keeps its share of every look.
  d = Judge(spec, w, Look{540 + 31, 1620, false, 3, 540}, levels);
  EXPECT_EQ(d.metrics[0].alpha, 0);
  EXPECT_NEAR(d.metrics[0].onset_alpha, 0.05 / 1620 * kOnsetShare / 2, 1e-15);
  EXPECT_NEAR(d.metrics[0].p_value, p, 1e-12);
  EXPECT_EQ(d.kind, DecisionKind::kWait) << d.message;
  // A step end is a level look wherever it falls.
  d = Judge(spec, w, Look{540 + 31, 1620, true, 3, 540}, levels);
  EXPECT_NEAR(d.metrics[0].alpha, 0.05 * kLocationShare / level_looks, 1e-15);
  // At a level look the regression fails: its p is below the level looks' alpha, though
  // above what an alpha split over all 1,620 looks would be.
  EXPECT_LT(p, 0.05 * kLocationShare / level_looks);
  EXPECT_GT(p, 0.05 * kLocationShare / 1620);
  EXPECT_EQ(Judge(spec, w, Look{540 + 30, 1620, false, 3, 540}, levels).kind,
            DecisionKind::kFail);
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
  // One 50x window in the canary: a plain mean would fail it; contrasts beyond 3 robust SDs
  // of their median are pulled in to that bound, so it counts as one bad interval.
  std::vector<double> canary = kLatencyShuffled;
  canary[4] = 5000;
  Decision d = Judge(Spec({Within("latencyP99", 10)}),
                     Arms("latencyP99", Series(kLatency), Series(canary)), StepOver());
  EXPECT_EQ(d.kind, DecisionKind::kPass) << d.message;
}

TEST(JudgeTest, SpreadCheckIgnoresANarrowerCanary) {
  Decision d = Judge(Spec({Within("latencyP99", 25)}),
                     Arms("latencyP99", Series(kWide), Series(kLatency)), StepOver());
  EXPECT_EQ(d.kind, DecisionKind::kPass) << d.message;
  EXPECT_LT(d.metrics[0].spread_ratio, 1);
}

TEST(JudgeTest, SpreadEvidenceIsReported) {
  Decision d = Judge(Spec({Metric("latencyP99")}),
                     Arms("latencyP99", Series(kLatency), Series(kWide)), StepOver());
  ASSERT_EQ(d.kind, DecisionKind::kInconclusive);
  EXPECT_GT(d.metrics[0].spread_ratio, 2);
  EXPECT_LT(d.metrics[0].spread_p_value, 0.05 * kSpreadShare);
  EXPECT_GT(d.metrics[0].p_value, 0.05 * kLocationShare);  // the centre did not move
  EXPECT_THAT(d.message, HasSubstr("latencyP99 spread"));
}

TEST(JudgeTest, PodsThatDifferInLevelAreNoWiderCanary) {
  // One baseline pod against four canary pods 15% apart in level, each as noisy as the
  // baseline (a step of 100% with a fresh baseline of one): pooled, the canary's windows
  // spread about 5x the baseline's; within each pod they spread as much, so the spread
  // check stays quiet and the pods' difference is the level test's to weigh.
  std::vector<Window> canary;
  const std::vector<double> levels = {0.85, 0.95, 1.05, 1.15};
  for (size_t p = 0; p < levels.size(); ++p) {
    std::vector<double> v = kLatencyShuffled;
    for (double& x : v) x *= levels[p];
    for (Window w : Series(v)) {
      w.pod = absl::StrCat("canary-", p);
      canary.push_back(w);
    }
  }
  Decision d = Judge(Spec({Within("latencyP99", 50)}),
                     Arms("latencyP99", Series(kLatency), canary), StepOver());
  EXPECT_LT(d.metrics[0].spread_ratio, 1.5);
  EXPECT_EQ(d.kind, DecisionKind::kPass) << d.message;
  EXPECT_EQ(d.metrics[0].canary_pods, 4);
}

// `values` as windows of pod `pod`, started at `pod_start`.
std::vector<Window> PodSeries(const std::vector<double>& values, const std::string& pod,
                              absl::Time pod_start) {
  std::vector<Window> out = Series(values, 0, pod_start);
  for (Window& w : out) w.pod = pod;
  return out;
}

std::vector<Window> Joined(std::vector<std::vector<Window>> pods) {
  std::vector<Window> out;
  for (const std::vector<Window>& p : pods) out.insert(out.end(), p.begin(), p.end());
  return out;
}

TEST(JudgeTest, ArmsWithPodsOfSeveralAgesAreComparedOnPodsOfOneAge) {
  // Step 2 with a fresh baseline: the baseline's one pod and two canary pods started with
  // step 1, two canary pods with step 2, and those two run 50% slower than any pod of step
  // 1 (an age effect, not the tuning's: step 1's canary pods match the baseline's).
  const absl::Time step1 = kT0 - absl::Minutes(20);
  const absl::Time step2 = kT0 - absl::Minutes(5);
  const AnalysisSpec spec = Spec({Within("latencyP99", 10)});
  auto canary = [&](absl::Time fresh_start) {
    return Joined({PodSeries(kLatencySame, "canary-a", step1 + absl::Seconds(2)),
                   PodSeries(kLatencyShuffled, "canary-b", step1 + absl::Seconds(3)),
                   PodSeries(Scaled(kLatency, 1.5), "canary-c", fresh_start),
                   PodSeries(Scaled(kLatencyShuffled, 1.5), "canary-d", fresh_start)});
  };
  const std::vector<Window> baseline = PodSeries(kLatency, "baseline-a", step1);
  const Decision d = Judge(spec, Arms("latencyP99", baseline, canary(step2)), StepOver());
  ASSERT_EQ(d.metrics.size(), 1u);
  EXPECT_EQ(d.kind, DecisionKind::kPass) << d.message;
  EXPECT_EQ(d.metrics[0].baseline_pods, 1);
  EXPECT_EQ(d.metrics[0].canary_pods, 2);
  EXPECT_EQ(d.metrics[0].pods_left_out, 2);
  EXPECT_THAT(d.metrics[0].note, HasSubstr("1+2 pods of one age (2 of another left out)"));

  // The same windows with every pod of one age are all compared, and the slow pods keep
  // the canary from a Pass (+22%, its pods 25% apart): leaving them out above is what
  // let it pass.
  const Decision pooled = Judge(spec, Arms("latencyP99", baseline, canary(step1)), StepOver());
  EXPECT_EQ(pooled.kind, DecisionKind::kInconclusive) << pooled.message;
  EXPECT_EQ(pooled.metrics[0].canary_pods, 4);
  EXPECT_EQ(pooled.metrics[0].pods_left_out, 0);
}

TEST(JudgeTest, RatesAreComparedOnPodsOfOneAgeTooAndSaySo) {
  // Errors per request: the canary's pod of step 2 fails requests, step 1's pods do not.
  const absl::Time step1 = kT0 - absl::Minutes(20);
  auto with_requests = [](std::vector<Window> ws) {
    for (Window& w : ws) w.requests = 1000;
    return ws;
  };
  const Decision d = Judge(
      Spec({Within("errorRate", 0)}),
      Arms("errorRate", with_requests(PodSeries(kSomeErrors, "baseline-a", step1)),
           Joined({with_requests(PodSeries(kSomeErrors, "canary-a", step1)),
                   with_requests(PodSeries(kErrors, "canary-b", kT0 - absl::Minutes(5)))})),
      StepOver());
  ASSERT_EQ(d.metrics.size(), 1u);
  EXPECT_EQ(d.metrics[0].method, "rate");
  EXPECT_EQ(d.metrics[0].baseline_pods, 1);
  EXPECT_EQ(d.metrics[0].canary_pods, 1);
  EXPECT_EQ(d.metrics[0].pods_left_out, 1);
  EXPECT_EQ(d.metrics[0].canary_events, d.metrics[0].baseline_events) << d.message;
}

TEST(JudgeTest, ArmsWithNoAgeInCommonAreComparedWhole) {
  // analysis.baseline Target: the target's pods are hours old, the canary's all fresh. No
  // age has pods in both arms, so every pod is compared, as before; so are pods whose
  // start is unknown (one group, whatever the arm).
  const AnalysisSpec spec = Spec({Within("latencyP99", 10)});
  const std::vector<Window> target =
      Joined({PodSeries(kLatency, "target-a", kT0 - absl::Hours(5)),
              PodSeries(kLatencyShuffled, "target-b", kT0 - absl::Hours(3))});
  const std::vector<Window> canary =
      Joined({PodSeries(kLatencySame, "canary-a", kT0 - absl::Minutes(5)),
              PodSeries(kLatencySame, "canary-b", kT0 - absl::Minutes(5))});
  Decision d = Judge(spec, Arms("latencyP99", target, canary), StepOver());
  EXPECT_EQ(d.metrics[0].baseline_pods, 2);
  EXPECT_EQ(d.metrics[0].canary_pods, 2);
  EXPECT_EQ(d.metrics[0].pods_left_out, 0);

  const std::vector<Window> unknown =
      Joined({PodSeries(kLatencySame, "canary-a", absl::InfinitePast()),
              PodSeries(kLatencyShuffled, "canary-b", absl::InfinitePast())});
  d = Judge(spec, Arms("latencyP99", PodSeries(kLatency, "baseline-a", absl::InfinitePast()),
                       unknown),
            StepOver());
  EXPECT_EQ(d.metrics[0].canary_pods, 2);
  EXPECT_EQ(d.metrics[0].pods_left_out, 0);
}

TEST(JudgeTest, ArmsThatBothHoldPodsOfSeveralAgesAreComparedWhole) {
  // Pods replaced one by one in both arms (evictions, a node drained): no age group holds
  // every pod of either arm, so leaving out all but one would throw most pods away; every
  // pod is compared. So are a step's 1 + 1 pods of step 1 beside 2 + 2 of step 2: each arm
  // holds both ages, in the same proportion.
  const AnalysisSpec spec = Spec({Within("latencyP99", 10)});
  const absl::Time old = kT0 - absl::Hours(1);
  Decision d = Judge(
      spec,
      Arms("latencyP99",
           Joined({PodSeries(kLatency, "baseline-a", old),
                   PodSeries(kLatencyShuffled, "baseline-b", kT0 - absl::Minutes(7))}),
           Joined({PodSeries(kLatencySame, "canary-a", old),
                   PodSeries(kLatencySame, "canary-b", kT0 - absl::Minutes(3))})),
      StepOver());
  EXPECT_EQ(d.metrics[0].baseline_pods, 2);
  EXPECT_EQ(d.metrics[0].canary_pods, 2);
  EXPECT_EQ(d.metrics[0].pods_left_out, 0);

  const absl::Time step2 = kT0 - absl::Minutes(5);
  d = Judge(spec,
            Arms("latencyP99",
                 Joined({PodSeries(kLatency, "baseline-a", old),
                         PodSeries(kLatencyShuffled, "baseline-b", step2),
                         PodSeries(kLatency, "baseline-c", step2)}),
                 Joined({PodSeries(kLatencySame, "canary-a", old),
                         PodSeries(kLatencySame, "canary-b", step2),
                         PodSeries(kLatencyShuffled, "canary-c", step2)})),
            StepOver());
  EXPECT_EQ(d.metrics[0].baseline_pods, 3);
  EXPECT_EQ(d.metrics[0].canary_pods, 3);
  EXPECT_EQ(d.metrics[0].pods_left_out, 0);
}

TEST(JudgeTest, APassAtOneOfTheStepEndsIsHeldToTheRepeatedLooksLevel) {
  // Steps of 12 intervals with four extensions (60 looks a step, five of them step ends), a
  // warm-up of one interval (the default): the level of Pocock's boundary for looks at 11,
  // 23, 35, 47 and 59 intervals, looser than Bonferroni's 0.05 / 5; one step end keeps the
  // whole 0.05.
  AnalysisSpec spec = Spec({Within("latencyP99", 50)});
  spec.max_extensions = 4;
  ASSERT_EQ(LooksPerStep(spec, kInterval * 12), 60);
  const Look five{12, 120, true, 5, 60};
  const Decision d = Judge(spec, Arms("latencyP99", Series(kLatency), Series(kLatencySame)), five);
  ASSERT_EQ(d.metrics.size(), 1u);
  EXPECT_NEAR(d.metrics[0].pass_alpha, RepeatedLooksAlpha(0.05, {11, 23, 35, 47, 59}), 1e-12);
  EXPECT_GT(d.metrics[0].pass_alpha, 0.05 / 5);
  EXPECT_LT(d.metrics[0].pass_alpha, 0.05);
  const Decision one =
      Judge(spec, Arms("latencyP99", Series(kLatency), Series(kLatencySame)), StepOver());
  EXPECT_NEAR(one.metrics[0].pass_alpha, 0.05, 1e-12);
}

TEST(JudgeTest, AStepWithinTheMarginButWorseOverItsLastPartIsNoPass) {
  // 240 intervals, one pod per arm; the canary 25% slower over the last 36 of them. The
  // step's mean moves by under 4%, shown within 10% on its own, and the onset scan does not
  // show the last part beyond the margin by kOnsetGate SEs (no Fail); but the step's last
  // third (80 intervals) is 10.4% slower: no Pass either.
  const AnalysisSpec p99 = Spec({Within("latencyP99", 10)});
  const std::vector<double> baseline = Cycled(kLatency, 20);
  const Decision alike = Judge(
      p99, Arms("latencyP99", Series(baseline), Series(Cycled(kLatencyShuffled, 20))), StepOver());
  ASSERT_EQ(alike.kind, DecisionKind::kPass) << alike.message;

  const Decision late = Judge(
      p99, Arms("latencyP99", Series(baseline), Series(Cycled(kLatencyShuffled, 20, 36, 1.25))),
      StepOver());
  ASSERT_EQ(late.metrics.size(), 1u);
  const MetricEvidence& e = late.metrics[0];
  EXPECT_EQ(late.kind, DecisionKind::kInconclusive) << late.message;
  EXPECT_EQ(e.verdict, MetricVerdict::kInconclusive);
  // The step's mean alone was shown within the margin: the last part is what refused it.
  EXPECT_LE(e.upper_bound_percent, 10) << e.note;
  EXPECT_THAT(e.note, HasSubstr("over its last 80 intervals"));
  EXPECT_EQ(e.late_intervals, 80);
  EXPECT_GT(e.late_change_percent, 10);
  // A step's Pass carries the same figures.
  EXPECT_EQ(alike.metrics[0].late_intervals, 80);
  EXPECT_LT(alike.metrics[0].late_change_percent, 10);
  EXPECT_THAT(e.note, HasSubstr("not shown no worse at the step's end"));
}

TEST(JudgeTest, NoMetricsIsNeverAPass) {
  Decision d = Judge(Spec({}), ArmWindows(), StepOver());
  EXPECT_EQ(d.kind, DecisionKind::kInconclusive);
  EXPECT_EQ(Judge(Spec({}), ArmWindows(), MidStep()).kind, DecisionKind::kWait);
}

}  // namespace
}  // namespace booster::analysis
