#include "operator/analysis/judge_replay.h"

#include <cmath>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace booster::analysis {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'796'169'600);
constexpr absl::Duration kInterval = absl::Seconds(30);
constexpr int kPods = 4;

JudgeInput Recording(absl::Duration step_duration, int max_extensions) {
  JudgeInput in;
  in.analysis.mode = rollout::AnalysisMode::kMetrics;
  in.analysis.interval = kInterval;
  in.analysis.min_samples = 6;
  in.analysis.confidence = 0.95;
  in.analysis.max_extensions = max_extensions;
  rollout::MetricSpec m;
  m.name = "latencyP99";
  in.analysis.metrics.push_back(m);
  in.step_duration = step_duration;
  return in;
}

// A p99 around 100 ms with a few percent of deterministic noise.
double Latency(int interval, int pod) { return 100 * (1 + 0.05 * std::sin(interval * 1.7 + pod)); }

// kPods pods per arm, one window each per interval for `intervals` intervals from kStart.
// The canary reports the baseline's values of the interval, pod by pod rotated (an A/A: each
// interval holds the same values in both arms), times `factor` from interval `onset` on.
void Record(JudgeInput& in, int intervals, int onset, double factor) {
  for (int i = 0; i < intervals; ++i) {
    const absl::Time start = kStart + kInterval * i;
    for (int pod = 0; pod < kPods; ++pod) {
      const std::string p = std::to_string(pod);
      in.windows.baseline["latencyP99"].push_back(Window{start, start + kInterval, Latency(i, pod),
                                                         "base-" + p, absl::InfinitePast(), 1000,
                                                         "node-" + p});
      const double canary = Latency(i, (pod + 1) % kPods) * (i >= onset ? factor : 1.0);
      in.windows.canary["latencyP99"].push_back(Window{start, start + kInterval, canary,
                                                       "canary-" + p, absl::InfinitePast(), 1000,
                                                       "node-" + p});
    }
  }
}

TEST(ReplayStepTest, ARegressionFailsAtALookAfterItsOnsetAndNotBefore) {
  JudgeInput in = Recording(absl::Minutes(5), 0);  // 10 looks
  const int onset = 2;                             // the canary triples from +60s
  Record(in, 12, onset, 3.0);
  const StepReplay r = ReplayStep(in);
  EXPECT_EQ(r.step_start, kStart);
  ASSERT_TRUE(r.first_fail.has_value());
  ASSERT_EQ(*r.first_fail, r.looks.size() - 1);  // the operator rolls back: nothing follows
  const ReplayLook& fail = r.looks.back();
  EXPECT_EQ(fail.decision.kind, DecisionKind::kFail);
  // The failing look has seen regressed windows: its boundary is past the onset's first one.
  EXPECT_GE(fail.at, kInterval * (onset + 1));
  EXPECT_LE(fail.at, absl::Minutes(5));
  for (size_t i = 0; i + 1 < r.looks.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(r.looks[i].decision.kind, DecisionKind::kWait);
    EXPECT_FALSE(r.looks[i].look.step_over);
  }

  // The same canary without the regression: no look fails.
  JudgeInput aa = Recording(absl::Minutes(5), 0);
  Record(aa, 12, onset, 1.0);
  EXPECT_FALSE(ReplayStep(aa).first_fail.has_value());
}

TEST(ReplayStepTest, AnAaStepTakesEveryLookAndPassesAtItsEnd) {
  JudgeInput in = Recording(absl::Minutes(4), 0);
  in.steps = 3;
  Record(in, 10, 10, 1.0);  // 5m recorded; the windows after the step's 4m are never seen
  const StepReplay r = ReplayStep(in);
  const int per_step = LooksPerStep(in.analysis, in.step_duration);
  EXPECT_EQ(r.looks_per_step, per_step);
  EXPECT_EQ(r.planned, PlannedLooks(in.analysis, 3, in.step_duration));
  ASSERT_EQ(static_cast<int>(r.looks.size()), per_step);
  EXPECT_FALSE(r.first_fail.has_value());
  for (int k = 1; k <= per_step; ++k) {
    SCOPED_TRACE(k);
    const ReplayLook& l = r.looks[k - 1];
    EXPECT_EQ(l.look.index, k);
    EXPECT_EQ(l.look.planned, r.planned);
    EXPECT_EQ(l.at, kInterval * k);
    EXPECT_EQ(l.look.step_over, k == per_step);
    EXPECT_NE(l.decision.kind, DecisionKind::kFail);
    // Look k sees the windows that ended within k intervals of the step's start.
    ASSERT_EQ(l.decision.metrics.size(), 1u);
    EXPECT_EQ(l.decision.metrics[0].baseline.n, kPods * k);
    EXPECT_EQ(l.decision.metrics[0].canary.n, kPods * k);
  }
  EXPECT_EQ(r.looks.back().decision.kind, DecisionKind::kPass);
}

TEST(ReplayStepTest, AnInconclusiveStepIsExtendedUntilItsExtensionsRunOut) {
  JudgeInput in = Recording(absl::Minutes(2), 2);  // 4 intervals a step, 12 looks in all
  Record(in, 12, 12, 1.0);
  in.windows.canary.clear();  // a required metric without canary windows
  const StepReplay r = ReplayStep(in);
  ASSERT_EQ(static_cast<int>(r.looks.size()), LooksPerStep(in.analysis, in.step_duration));
  ASSERT_EQ(r.looks.size(), 12u);
  for (int k = 1; k <= 12; ++k) {
    SCOPED_TRACE(k);
    const ReplayLook& l = r.looks[k - 1];
    EXPECT_EQ(l.look.index, k);
    EXPECT_EQ(l.extensions, (k - 1) / 4);
    EXPECT_EQ(l.look.step_over, k % 4 == 0);
    EXPECT_EQ(l.decision.kind, k % 4 == 0 ? DecisionKind::kInconclusive : DecisionKind::kWait);
  }
  EXPECT_FALSE(r.first_fail.has_value());
}

TEST(ReplayStepTest, AStepEndBetweenBoundariesIsALookOnTheLastBoundarysWindows) {
  // 45s windows in a 2m step: looks at 45s and 90s, then at the step's end (120s), which
  // judges the windows of the second look again with the step over, as the operator does.
  JudgeInput in = Recording(absl::Minutes(2), 0);
  in.analysis.interval = absl::Seconds(45);
  in.analysis.min_samples = 4;
  for (int i = 0; i < 4; ++i) {
    const absl::Time start = kStart + absl::Seconds(45) * i;
    for (int pod = 0; pod < kPods; ++pod) {
      const double v = Latency(i, pod);
      const std::string p = std::to_string(pod);
      in.windows.baseline["latencyP99"].push_back(
          Window{start, start + absl::Seconds(45), v, "base-" + p});
      in.windows.canary["latencyP99"].push_back(
          Window{start, start + absl::Seconds(45), v, "canary-" + p});
    }
  }
  const StepReplay r = ReplayStep(in);
  ASSERT_EQ(r.looks.size(), 3u);
  EXPECT_EQ(r.looks[0].at, absl::Seconds(45));
  EXPECT_EQ(r.looks[1].at, absl::Seconds(90));
  EXPECT_EQ(r.looks[2].at, absl::Seconds(120));
  EXPECT_EQ(r.looks[2].look.index, 2);
  EXPECT_TRUE(r.looks[2].look.step_over);
  EXPECT_EQ(r.looks[2].decision.metrics[0].canary.n, 2 * kPods);
  // Two intervals are fewer than the judge compares arms over: the step ends short of data.
  EXPECT_EQ(r.looks[2].decision.kind, DecisionKind::kInconclusive);
  EXPECT_EQ(r.looks[2].decision.reason, kReasonNotEnoughWindows);
}

TEST(ReplayToJsonTest, LooksInOrderAndTheFirstFail) {
  JudgeInput in = Recording(absl::Minutes(5), 0);
  Record(in, 12, 2, 3.0);
  const StepReplay r = ReplayStep(in);
  ASSERT_TRUE(r.first_fail.has_value());
  const nlohmann::ordered_json j = ReplayToJson(in, r);
  EXPECT_EQ(j.begin().key(), "verdict");
  EXPECT_EQ(j["verdict"], "Fail");
  EXPECT_EQ(j["reason"], "AnalysisFailed");
  ASSERT_EQ(j["metrics"].size(), 1u);
  EXPECT_EQ(j["metrics"][0]["verdict"], "Fail");
  EXPECT_DOUBLE_EQ(j["stepStart"].get<double>(), 1'796'169'600);
  EXPECT_EQ(j["stepDuration"], "5m");
  EXPECT_EQ(j["interval"], "30s");
  EXPECT_EQ(j["looksPerStep"], 10);
  EXPECT_EQ(j["plannedLooks"], 10);
  ASSERT_EQ(j["looks"].size(), r.looks.size());
  EXPECT_EQ(j["looks"][0]["look"], 1);
  EXPECT_DOUBLE_EQ(j["looks"][0]["at"].get<double>(), 30);
  EXPECT_EQ(j["looks"][0]["stepOver"], false);
  EXPECT_EQ(j["looks"][0]["verdict"], "Wait");
  EXPECT_EQ(j["looks"].back()["verdict"], "Fail");
  EXPECT_EQ(j["firstFail"]["look"], r.looks.back().look.index);
  EXPECT_DOUBLE_EQ(j["firstFail"]["at"].get<double>(), absl::ToDoubleSeconds(r.looks.back().at));

  JudgeInput aa = Recording(absl::Minutes(5), 0);
  Record(aa, 12, 12, 1.0);
  EXPECT_TRUE(ReplayToJson(aa, ReplayStep(aa))["firstFail"].is_null());
}

TEST(ReplayStepTest, TheSpecsWarmupDropsTheWindowsOfYoungPods) {
  JudgeInput in = Recording(absl::Minutes(2), 0);
  in.analysis.warmup = absl::Seconds(60);
  Record(in, 4, 4, 1.0);
  // Every pod started with the step (pods of one age: all are compared): the first two
  // windows of each are inside the warm-up.
  for (MetricWindows* arm : {&in.windows.baseline, &in.windows.canary}) {
    for (Window& w : (*arm)["latencyP99"]) w.pod_start = kStart;
  }
  const StepReplay r = ReplayStep(in);
  ASSERT_EQ(r.looks.size(), 4u);
  EXPECT_EQ(r.looks.back().decision.metrics[0].baseline.n, 2 * kPods);
  EXPECT_EQ(r.looks.back().decision.metrics[0].canary.n, 2 * kPods);
  EXPECT_EQ(r.looks.back().decision.metrics[0].pods_left_out, 0);
}

}  // namespace
}  // namespace booster::analysis
