#include "operator/analysis/judge_json.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

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
  EXPECT_EQ(b[0].start, b[1].start);  // no times: every window is simultaneous
  EXPECT_TRUE(in->windows.canary.empty());
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
      {R"({"analysis": {}, "baseline": {}, "canary": {}})", "analysis.metrics: is empty"},
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

TEST(JudgeOnceTest, OneLookWithTheWholeBudgetAndTheStepOver) {
  absl::StatusOr<JudgeInput> in = ParseJudgeInput(R"({
    "analysis": {"minSamples": 3, "metrics": [{"name": "latencyP99"}, {"name": "errorRate"}]},
    "baseline": {"latencyP99": [10, 11, 12, 13], "errorRate": []},
    "canary": {"latencyP99": [20, 21, 22, 23]}
  })");
  ASSERT_TRUE(in.ok()) << in.status();
  Decision d = JudgeOnce(*in);
  // 4 vs 4, complete separation: p = 1/70 = 0.0143 <= 0.05 * 0.75 / 2 metrics = 0.01875.
  EXPECT_EQ(d.kind, DecisionKind::kFail);
  nlohmann::ordered_json j = DecisionToJson(d);
  EXPECT_EQ(j["verdict"], "Fail");
  EXPECT_EQ(j["reason"], "AnalysisFailed");
  ASSERT_EQ(j["metrics"].size(), 2u);
  EXPECT_EQ(j["metrics"][0]["name"], "latencyP99");
  EXPECT_EQ(j["metrics"][0]["verdict"], "Fail");
  EXPECT_EQ(j["metrics"][0]["baseline"]["n"], 4);
  EXPECT_DOUBLE_EQ(j["metrics"][0]["baseline"]["median"].get<double>(), 11.5);
  EXPECT_DOUBLE_EQ(j["metrics"][0]["canary"]["median"].get<double>(), 21.5);
  EXPECT_NEAR(j["metrics"][0]["changePercent"].get<double>(), 100.0 * 10 / 11.5, 1e-9);
  EXPECT_EQ(j["metrics"][0]["changeOf"], "median");
  EXPECT_NEAR(j["metrics"][0]["pValue"].get<double>(), 1.0 / 70, 1e-12);
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
