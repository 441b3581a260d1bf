#include "operator/analysis/judge_json.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "operator/analysis/distributions.h"
#include "operator/rollout/profile/spec.h"

namespace booster::analysis {
namespace {

using ::testing::HasSubstr;

TEST(ParseJudgeInputTest, AppliesTheCrdDefaults) {
  absl::StatusOr<JudgeInput> in = ParseJudgeInput(R"({
    "analysis": {"metrics": [{"name": "latencyP99"}, {"name": "errorRate", "required": false,
                              "maxRegressionPercent": 0, "minImprovementPercent": 2.5}]},
    "baseline": {"latencyP99": [0.051, 0.049]},
    "canary": {}
  })");
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(in->analysis.min_samples, 10);
  EXPECT_DOUBLE_EQ(in->analysis.confidence, 0.95);
  EXPECT_EQ(in->analysis.interval, absl::Seconds(30));
  EXPECT_EQ(in->analysis.max_extensions, 2);
  ASSERT_EQ(in->analysis.metrics.size(), 2u);
  EXPECT_DOUBLE_EQ(in->analysis.metrics[0].max_regression_percent, 5);
  EXPECT_TRUE(in->analysis.metrics[0].required);
  EXPECT_FALSE(in->analysis.metrics[0].min_improvement_percent.has_value());
  EXPECT_FALSE(in->analysis.metrics[1].required);
  EXPECT_DOUBLE_EQ(in->analysis.metrics[1].max_regression_percent, 0);
  EXPECT_DOUBLE_EQ(*in->analysis.metrics[1].min_improvement_percent, 2.5);
  const std::vector<Window>& b = in->windows.baseline.at("latencyP99");
  ASSERT_EQ(b.size(), 2u);
  EXPECT_DOUBLE_EQ(b[1].value, 0.049);
  // No times: the i-th window spans the i-th interval, so the arms' i-th windows pair.
  EXPECT_EQ(b[1].start - b[0].start, in->analysis.interval);
  EXPECT_TRUE(in->windows.canary.empty());
}

TEST(ParseJudgeInputTest, WithoutMetricsTheOperatorsDefaultSetIsJudged) {
  absl::StatusOr<JudgeInput> in = ParseJudgeInput(R"({"analysis": {}, "baseline": {}, "canary": {}})");
  ASSERT_TRUE(in.ok()) << in.status();
  ASSERT_EQ(in->analysis.metrics.size(), rollout::DefaultMetrics().size());
  EXPECT_EQ(in->analysis.metrics[0].name, "latencyP99");
}

TEST(ParseJudgeInputTest, RejectsMalformedInputWithTheFieldAtFault) {
  struct Case {
    std::string input;
    std::string message;
  };
  const Case cases[] = {
      {"{", "input is not JSON"},
      {"[1]", "input must be an object"},
      {R"({"analysis": {"metrics": [{"name": "latencyP99"}]}, "baseline": {}})",
       "canary: is required"},
      {R"({"analysis": {"metrics": [{"name": "latencyP99"}]}, "baseline": {}, "canary": {},
           "canery": {}})",
       "canery: unknown field"},
      {R"({"analysis": {"confidence": 2, "metrics": [{"name": "latencyP99"}]},
           "baseline": {}, "canary": {}})",
       "analysis.confidence"},
      {R"({"analysis": {"metrics": [{"name": "latencyP98"}]}, "baseline": {}, "canary": {}})",
       "analysis.metrics[0].name"},
      {R"({"analysis": {"metrics": []}, "baseline": {}, "canary": {}})",
       "mode Metrics needs at least one metric"},
      {R"({"analysis": {"metrics": [{"name": "latencyP99"}]}, "baseline": [], "canary": {}})",
       "baseline: must be an object"},
      {R"({"analysis": {"metrics": [{"name": "latencyP99"}]}, "baseline": {"p99": [1]},
           "canary": {}})",
       "baseline.p99: is not a metric"},
      {R"({"analysis": {"metrics": [{"name": "latencyP99"}]}, "baseline": {},
           "canary": {"latencyP99": [1, "2"]}})",
       "canary.latencyP99[1]: must be a finite number"},
      {R"({"analysis": {"metrics": [{"name": "latencyP99"}]}, "baseline": {},
           "canary": {"latencyP99": 3}})",
       "canary.latencyP99: must be a list"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.input);
    absl::StatusOr<JudgeInput> in = ParseJudgeInput(c.input);
    ASSERT_FALSE(in.ok());
    EXPECT_EQ(in.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(in.status().message(), HasSubstr(c.message));
  }
}

TEST(ParseJudgeInputTest, WindowObjectsCarryTheirTimesPodsAndRequests) {
  absl::StatusOr<JudgeInput> in = ParseJudgeInput(R"({
    "analysis": {"metrics": [{"name": "latencyP99"}, {"name": "errorRate"}]},
    "baseline": {"latencyP99": [
      {"pod": "web-a", "node": "n1", "start": 1796169600, "end": 1796169630, "value": 0.05,
       "requests": 1200, "podStart": 1796160000},
      {"pod": "web-b", "start": 12.5, "end": 42.25, "value": 0.06}]},
    "canary": {"errorRate": [{"pod": "web-c", "start": 0, "end": 30, "value": 0,
                              "requests": 0}]}
  })");
  ASSERT_TRUE(in.ok()) << in.status();
  const std::vector<Window>& b = in->windows.baseline.at("latencyP99");
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].pod, "web-a");
  EXPECT_EQ(b[0].node, "n1");
  EXPECT_EQ(b[0].start, absl::FromUnixSeconds(1796169600));
  EXPECT_EQ(b[0].end, absl::FromUnixSeconds(1796169630));
  EXPECT_EQ(b[0].pod_start, absl::FromUnixSeconds(1796160000));
  EXPECT_DOUBLE_EQ(b[0].value, 0.05);
  EXPECT_EQ(b[0].requests, 1200);
  EXPECT_EQ(b[1].pod, "web-b");
  EXPECT_EQ(b[1].node, "");
  EXPECT_EQ(b[1].start, absl::UnixEpoch() + absl::Milliseconds(12500));
  EXPECT_EQ(b[1].end, absl::UnixEpoch() + absl::Milliseconds(42250));
  EXPECT_EQ(b[1].pod_start, absl::InfinitePast());  // unknown: the pod counts as warm
  EXPECT_EQ(b[1].requests, 0);
  const std::vector<Window>& c = in->windows.canary.at("errorRate");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].pod, "web-c");
  EXPECT_EQ(c[0].end, absl::UnixEpoch() + absl::Seconds(30));
}

TEST(ParseJudgeInputTest, WindowObjectsWithoutTimesSpanTheFirstInterval) {
  absl::StatusOr<JudgeInput> in = ParseJudgeInput(R"({
    "analysis": {"interval": "10s", "metrics": [{"name": "latencyP99"}]},
    "baseline": {"latencyP99": [0.05, 0.06]},
    "canary": {"latencyP99": [{"pod": "web-c", "value": 0.07, "requests": 40}]}
  })");
  ASSERT_TRUE(in.ok()) << in.status();
  const Window& c = in->windows.canary.at("latencyP99").at(0);
  EXPECT_EQ(c.start, absl::UnixEpoch());
  EXPECT_EQ(c.end, absl::UnixEpoch() + absl::Seconds(10));
  EXPECT_EQ(c.start, in->windows.baseline.at("latencyP99").at(0).start);
  EXPECT_EQ(c.requests, 40);
}

TEST(ParseJudgeInputTest, StepDurationAndStepsForTheReplay) {
  const std::string text = R"({"analysis": {"metrics": [{"name": "latencyP99"}]},
                               "baseline": {}, "canary": {}, "stepDuration": "4m",
                               "steps": 3})";
  absl::StatusOr<JudgeInput> in = ParseJudgeInput(text, {.replay = true});
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(in->step_duration, absl::Minutes(4));
  EXPECT_EQ(in->steps, 3);
  // The flag overrides the field.
  in = ParseJudgeInput(text, {.step_duration = "90s", .replay = true});
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(in->step_duration, absl::Seconds(90));
  // The defaults: the CRD's 2m, one step.
  in = ParseJudgeInput(R"({"analysis": {"metrics": [{"name": "latencyP99"}]},
                           "baseline": {}, "canary": {}})",
                       {.replay = true});
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(in->step_duration, absl::Minutes(2));
  EXPECT_EQ(in->steps, 1);
  // As in the CRD, a step shorter than the default interval shrinks the interval to it.
  in = ParseJudgeInput(R"({"analysis": {"metrics": [{"name": "latencyP99"}]},
                           "baseline": {}, "canary": {}, "stepDuration": "20s"})",
                       {.replay = true});
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(in->analysis.interval, absl::Seconds(20));
  // Without a replay and without a stepDuration, any valid interval goes.
  in = ParseJudgeInput(R"({"analysis": {"interval": "5m", "metrics": [{"name": "latencyP99"}]},
                           "baseline": {}, "canary": {}})");
  ASSERT_TRUE(in.ok()) << in.status();
}

TEST(ParseJudgeInputTest, RejectsMalformedWindowObjectsWithThePathAtFault) {
  struct Case {
    std::string canary;  // the canary arm
    std::string message;
  };
  const Case cases[] = {
      {R"({"latencyP99": [{"pod": "c", "value": 1}, 2]})",
       "canary.latencyP99[1]: is a number, but canary.latencyP99[0] is a window object"},
      {R"({"latencyP99": [1, 2, 3, {"pod": "c", "value": 1}]})",
       "canary.latencyP99[3]: is a window object, but canary.latencyP99[0] is a number"},
      {R"({"latencyP99": [{"pod": "c", "value": 1}, "x"]})",
       "canary.latencyP99[1]: must be a window object"},
      {R"({"latencyP99": [{"value": 1, "start": 0, "end": 30}]})",
       "canary.latencyP99[0].pod: is required"},
      {R"({"latencyP99": [{"pod": "", "value": 1}]})", "canary.latencyP99[0].pod: must be a pod"},
      {R"({"latencyP99": [{"pod": 7, "value": 1}]})", "canary.latencyP99[0].pod: must be a pod"},
      {R"({"latencyP99": [{"pod": "c", "start": 0, "end": 30}]})",
       "canary.latencyP99[0].value: is required"},
      {R"({"latencyP99": [{"pod": "c", "value": "1"}]})",
       "canary.latencyP99[0].value: must be a finite number"},
      {R"({"latencyP99": [{"pod": "c", "value": 1, "start": 0}]})",
       "canary.latencyP99[0].end: is required with start"},
      {R"({"latencyP99": [{"pod": "c", "value": 1, "end": 30}]})",
       "canary.latencyP99[0].start: is required with end"},
      {R"({"latencyP99": [{"pod": "c", "value": 1, "start": 30, "end": 30}]})",
       "canary.latencyP99[0].end: must be after start"},
      {R"({"latencyP99": [{"pod": "c", "value": 1, "start": 30, "end": 10}]})",
       "canary.latencyP99[0].end: must be after start"},
      {R"({"latencyP99": [{"pod": "c", "value": 1, "start": "0", "end": 30}]})",
       "canary.latencyP99[0].start: must be a finite number of seconds"},
      {R"({"latencyP99": [{"pod": "c", "value": 1, "start": 0, "end": 1e300}]})",
       "canary.latencyP99[0].end: must be a finite number of seconds"},
      {R"({"latencyP99": [{"pod": "c", "value": 1, "start": 0, "end": 30, "pod_start": 0}]})",
       "canary.latencyP99[0].pod_start: unknown field"},
      {R"({"latencyP99": [{"pod": "c", "value": 1, "podStart": 0}]})",
       "canary.latencyP99[0].podStart: needs start and end"},
      {R"({"latencyP99": [{"pod": "c", "value": 1, "requests": -1}]})",
       "canary.latencyP99[0].requests: must be a whole number"},
      {R"({"latencyP99": [{"pod": "c", "value": 1, "requests": 2.5}]})",
       "canary.latencyP99[0].requests: must be a whole number"},
      {R"({"latencyP99": [{"pod": "c", "value": 1, "node": 3}]})",
       "canary.latencyP99[0].node: must be a node name"},
      {R"({"latencyP99": [{"pod": "c", "value": 1, "buckets": 3}]})",
       "canary.latencyP99[0].buckets: must be [[upper bound in seconds, cumulative count]"},
      {R"({"latencyP99": [{"pod": "c", "value": 1, "buckets": [["inf", 1]]}]})",
       "canary.latencyP99[0].buckets: must be [[upper bound"},
      {R"({"latencyP99": [{"pod": "c", "value": 1, "buckets": [[0.1, 5], ["+Inf", 4]]}]})",
       "canary.latencyP99[0].buckets: cumulative counts decrease"},
      {R"({"latencyP99": [{"pod": "c", "value": 1, "buckets": [[0.1, 5]]}]})",
       "canary.latencyP99[0].buckets: the last bucket is not +Inf"},
      // Times in one list and none in another: the arms would not overlap.
      {R"({"latencyP99": [{"pod": "c", "value": 1, "start": 0, "end": 30}]})",
       "baseline.latencyP99[0]: has no start and end, but canary.latencyP99[0] has"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.canary);
    absl::StatusOr<JudgeInput> in =
        ParseJudgeInput(absl::StrCat(R"({"analysis": {"metrics": [{"name": "latencyP99"}]},
                         "baseline": {"latencyP99": [0.05]}, "canary": )",
                                     c.canary, "}"));
    ASSERT_FALSE(in.ok());
    EXPECT_EQ(in.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(in.status().message(), HasSubstr(c.message));
  }
}

TEST(ParseJudgeInputTest, RejectsABadStepDurationOrStepsNamingWhereItCameFrom) {
  struct Case {
    std::string extra;  // top-level fields
    JudgeInputOptions options;
    std::string message;
  };
  const Case cases[] = {
      {R"("stepDuration": "2 minutes")", {.replay = true}, "stepDuration: "},
      {R"("stepDuration": 120)", {.replay = true}, "stepDuration: "},
      {R"("stepDuration": "48h")", {.replay = true}, "stepDuration: must be between"},
      {R"("stepDuration": "2m")", {.step_duration = "fast", .replay = true}, "--step-duration: "},
      {R"("steps": 0)", {.replay = true}, "steps: must be a whole number from 1 to 20"},
      {R"("steps": 2.5)", {.replay = true}, "steps: must be a whole number from 1 to 20"},
      {R"("stepDuration": "1m")",
       {.replay = true},
       "analysis.interval: 5m is longer than stepDuration (1m)"},
      // A replay needs the analysis to fit the default step too.
      {R"("steps": 1)", {.replay = true}, "analysis.interval: 5m is longer than stepDuration (2m)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.extra);
    absl::StatusOr<JudgeInput> in = ParseJudgeInput(absl::StrCat(R"({"analysis": {"interval": "5m",
                                         "metrics": [{"name": "latencyP99"}]},
                                         "baseline": {}, "canary": {}, )",
                                                                 c.extra, "}"),
                                                    c.options);
    ASSERT_FALSE(in.ok());
    EXPECT_EQ(in.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(in.status().message(), HasSubstr(c.message));
  }
}

TEST(JudgeOnceTest, WindowObjectsAreJudgedWithTheirTimesAndTheSpecsWarmup) {
  // Two pods per arm, six 30s windows each; canary pod c2 started 40s before its first
  // window, so with a warm-up of 90s its first two windows count in neither arm.
  std::string baseline, canary;
  for (int i = 0; i < 6; ++i) {
    for (int pod = 0; pod < 2; ++pod) {
      const int start = 1000 + 30 * i;
      const std::string times = absl::StrCat(R"("start": )", start, R"(, "end": )", start + 30);
      absl::StrAppend(&baseline, baseline.empty() ? "" : ",", R"({"pod": "b)", pod, R"(", )", times,
                      R"(, "value": )", 10 + i + pod, "}");
      absl::StrAppend(&canary, canary.empty() ? "" : ",", R"({"pod": "c)", pod, R"(", )", times,
                      R"(, "podStart": )", pod == 0 ? 0 : 960, R"(, "value": )", 3 * (10 + i + pod), "}");
    }
  }
  absl::StatusOr<JudgeInput> in = ParseJudgeInput(absl::StrCat(
      R"({"analysis": {"minSamples": 3, "warmup": "90s", "metrics": [{"name": "latencyP99"}]},
          "baseline": {"latencyP99": [)",
      baseline, R"(]}, "canary": {"latencyP99": [)", canary, "]}}"));
  ASSERT_TRUE(in.ok()) << in.status();
  Decision d = JudgeOnce(*in);
  ASSERT_EQ(d.metrics.size(), 1u);
  EXPECT_EQ(d.metrics[0].baseline.n, 12);
  EXPECT_EQ(d.metrics[0].canary.n, 10);
  EXPECT_EQ(d.kind, DecisionKind::kFail);  // the canary is 3x the baseline in every window
}

TEST(JudgeOnceTest, PodsOfOneAgeAreComparedAndTheOthersCountedAsLeftOut) {
  // Step 2 recorded: baseline b0 and canary c0 started at 0, canary c1 at 600 (a pod of the
  // next step, three times slower). b0 and c0 are compared; c1 is left out, and the JSON
  // says so.
  std::string baseline, canary;
  for (int i = 0; i < 6; ++i) {
    const int start = 1000 + 30 * i;
    const std::string times = absl::StrCat(R"("start": )", start, R"(, "end": )", start + 30);
    absl::StrAppend(&baseline, i == 0 ? "" : ",", R"({"pod": "b0", "podStart": 0, )", times,
                    R"(, "value": )", 10 + i % 3, "}");
    absl::StrAppend(&canary, i == 0 ? "" : ",", R"({"pod": "c0", "podStart": 5, )", times,
                    R"(, "value": )", 10.01 + i % 3, "},", R"({"pod": "c1", "podStart": 600, )",
                    times, R"(, "value": )", 30 + i % 3, "}");
  }
  absl::StatusOr<JudgeInput> in = ParseJudgeInput(absl::StrCat(
      R"({"analysis": {"minSamples": 3, "metrics": [{"name": "latencyP99"}]},
          "baseline": {"latencyP99": [)",
      baseline, R"(]}, "canary": {"latencyP99": [)", canary, "]}}"));
  ASSERT_TRUE(in.ok()) << in.status();
  const Decision d = JudgeOnce(*in);
  ASSERT_EQ(d.metrics.size(), 1u);
  EXPECT_EQ(d.metrics[0].canary.n, 6);
  EXPECT_NE(d.kind, DecisionKind::kFail) << d.message;
  const nlohmann::ordered_json pods = DecisionToJson(d)["metrics"][0]["pods"];
  EXPECT_EQ(pods["baseline"], 1);
  EXPECT_EQ(pods["canary"], 1);
  EXPECT_EQ(pods["leftOut"], 1);
}

TEST(JudgeOnceTest, LatencyQuantilesAreReadFromTheArmsHistogramsWhenEveryWindowHasOne) {
  // Two pods per arm, 24 windows of 5 s each. Baseline: 95 of 100 requests under 10 ms, the
  // rest under 100 ms (p99 82 ms); canary: 90 under 10 ms (p99 91 ms).
  auto arm = [](const std::string& prefix, int fast, bool buckets) {
    std::string out;
    for (int i = 0; i < 24; ++i) {
      for (int pod = 0; pod < 2; ++pod) {
        const int start = 1000 + 5 * i;
        absl::StrAppend(&out, out.empty() ? "" : ",", R"({"pod": ")", prefix, pod,
                        R"(", "start": )", start, R"(, "end": )", start + 5,
                        R"(, "value": 0.09, "requests": 100)");
        if (buckets) {
          absl::StrAppend(&out, R"(, "buckets": [[0.01, )", fast,
                          R"(], [0.1, 100], ["+Inf", 100]])");
        }
        absl::StrAppend(&out, "}");
      }
    }
    return out;
  };
  auto judge = [&](bool canary_buckets) {
    absl::StatusOr<JudgeInput> in = ParseJudgeInput(absl::StrCat(
        R"({"analysis": {"interval": "5s", "minSamples": 3, "warmup": "0s",
                         "metrics": [{"name": "latencyP99"}]},
            "baseline": {"latencyP99": [)",
        arm("b", 95, true), R"(]}, "canary": {"latencyP99": [)", arm("c", 90, canary_buckets),
        "]}}"));
    EXPECT_TRUE(in.ok()) << in.status();
    return JudgeOnce(*in);
  };
  const Decision d = judge(true);
  ASSERT_EQ(d.metrics.size(), 1u);
  EXPECT_EQ(d.metrics[0].method, "histogram");
  EXPECT_NEAR(d.metrics[0].change_percent, 100 * (0.091 / 0.082 - 1), 1e-9);
  EXPECT_THAT(d.metrics[0].note, HasSubstr("0.091 vs 0.082 from the arms' histograms"));
  EXPECT_EQ(DecisionToJson(d)["metrics"][0]["changeOf"], "quantile");
  // One arm without histograms: the windows' own values, paired (equal here).
  const Decision plain = judge(false);
  EXPECT_EQ(plain.metrics[0].method, "paired");
  EXPECT_NEAR(plain.metrics[0].change_percent, 0, 1e-9);
}

TEST(JudgeOnceTest, OneLookWithTheWholeBudgetAndTheStepOver) {
  absl::StatusOr<JudgeInput> in = ParseJudgeInput(R"({
    "analysis": {"minSamples": 3, "metrics": [{"name": "latencyP99"}, {"name": "errorRate"}]},
    "baseline": {"latencyP99": [10, 11, 12, 13], "errorRate": []},
    "canary": {"latencyP99": [20, 22, 24, 26]}
  })");
  ASSERT_TRUE(in.ok()) << in.status();
  Decision d = JudgeOnce(*in);
  // The i-th windows are paired: the canary 2x in each of 4 intervals, one pod per arm, so
  // only the 2% pod floor is noise: t = log 2 / (log 1.02 sqrt 2), 3 degrees of freedom,
  // against 0.05 * kLocationShare / 2 metrics.
  EXPECT_EQ(d.kind, DecisionKind::kFail);
  nlohmann::ordered_json j = DecisionToJson(d);
  EXPECT_EQ(j["verdict"], "Fail");
  EXPECT_EQ(j["reason"], "AnalysisFailed");
  ASSERT_EQ(j["metrics"].size(), 2u);
  EXPECT_EQ(j["metrics"][0]["name"], "latencyP99");
  EXPECT_EQ(j["metrics"][0]["verdict"], "Fail");
  EXPECT_EQ(j["metrics"][0]["baseline"]["n"], 4);
  EXPECT_DOUBLE_EQ(j["metrics"][0]["baseline"]["median"].get<double>(), 11.5);
  EXPECT_DOUBLE_EQ(j["metrics"][0]["canary"]["median"].get<double>(), 23);
  EXPECT_NEAR(j["metrics"][0]["changePercent"].get<double>(), 100, 1e-9);
  EXPECT_EQ(j["metrics"][0]["changeOf"], "mean");
  EXPECT_NEAR(j["metrics"][0]["pValue"].get<double>(),
              StudentTUpper(std::log(2.0) / (std::log(1.02) * std::sqrt(2.0)), 3), 1e-12);
  EXPECT_LE(j["metrics"][0]["pValue"].get<double>(), 0.05 * kLocationShare / 2);
  // errorRate has no windows: figures that do not exist are null, the verdict Inconclusive.
  EXPECT_EQ(j["metrics"][1]["verdict"], "Inconclusive");
  EXPECT_TRUE(j["metrics"][1]["baseline"]["median"].is_null());
  EXPECT_TRUE(j["metrics"][1]["changePercent"].is_null());
  EXPECT_TRUE(j["metrics"][1]["pValue"].is_null());
  EXPECT_TRUE(j["metrics"][1]["changeOf"].is_null());
  // Key order is for humans: verdict first.
  EXPECT_EQ(j.begin().key(), "verdict");
}

}  // namespace
}  // namespace booster::analysis
