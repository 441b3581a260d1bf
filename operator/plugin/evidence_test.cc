#include "operator/plugin/evidence.h"

#include <cmath>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "operator/analysis/judge.h"
#include "operator/analysis/judge_verdict_source.h"
#include "operator/rollout/profile/types.h"

namespace booster::plugin {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;

// A decision of the metrics judge, turned into evidence by the operator's own code
// (analysis::ToVerdict), so the keys read here are the keys the operator writes.
std::map<std::string, std::string> JudgeEvidence() {
  analysis::Decision d;
  d.kind = analysis::DecisionKind::kFail;
  d.reason = "Regression";
  d.message = "latencyP99 is 41% worse on the canary";
  d.alpha_look = 0.0021;
  analysis::MetricEvidence p99;
  p99.name = "latencyP99";
  p99.verdict = analysis::MetricVerdict::kFail;
  p99.baseline = {.n = 12, .median = 0.0123};
  p99.canary = {.n = 11, .median = 0.01734};
  p99.change_percent = 40.97;
  p99.p_value = 0.00031;
  analysis::MetricEvidence throughput;
  throughput.name = "throughput";
  throughput.verdict = analysis::MetricVerdict::kPass;
  throughput.baseline = {.n = 12, .median = 480};
  throughput.canary = {.n = 11, .median = 478.5};
  throughput.change_percent = -0.3125;
  throughput.p_value = 0.61;
  analysis::MetricEvidence errors;
  errors.name = "errorRate";
  errors.verdict = analysis::MetricVerdict::kFail;
  errors.baseline = {.n = 12, .median = 0};
  errors.canary = {.n = 11, .median = 0.01};
  errors.change_percent = std::numeric_limits<double>::infinity();
  analysis::MetricEvidence cpu;  // not enough windows: no test made
  cpu.name = "cpuPerRequest";
  cpu.verdict = analysis::MetricVerdict::kSkipped;
  d.metrics = {throughput, p99, errors, cpu};
  rollout::Verdict v = analysis::ToVerdict(d);
  v.evidence["look"] = "3/12";
  return v.evidence;
}

Json ProfileWith(const std::map<std::string, std::string>& evidence, const std::string& verdict) {
  Json p = Json::parse(R"({
    "metadata": {"name": "web", "namespace": "shop"},
    "spec": {"rollout": {"analysis": {"mode": "Metrics", "metrics": [
      {"name": "latencyP99"}, {"name": "errorRate"}, {"name": "throughput"}]}}},
    "status": {"phase": "RolledBack", "currentStep": 1}
  })");
  p["status"]["lastDecision"] = {{"verdict", verdict},
                                 {"step", 1},
                                 {"reason", "Regression"},
                                 {"message", "latencyP99 is 41% worse on the canary"},
                                 {"time", "2027-01-15T08:00:00Z"},
                                 {"evidence", evidence}};
  return p;
}

TEST(MetricRowsTest, EachArmsWindowsAndMedianTheChangeAndThePValueOfTheJudgesEvidence) {
  std::vector<MetricEvidence> rows = MetricRows(JudgeEvidence(), {"latencyP99", "throughput"});
  ASSERT_EQ(rows.size(), 4u);
  // The spec's order first, then the rest alphabetically.
  EXPECT_EQ(rows[0].metric, "latencyP99");
  EXPECT_EQ(rows[0].baseline_windows, "12");
  EXPECT_EQ(rows[0].baseline_median, "0.0123");
  EXPECT_EQ(rows[0].canary_windows, "11");
  EXPECT_EQ(rows[0].canary_median, "0.01734");
  EXPECT_EQ(rows[0].change, "+40.97%");
  EXPECT_EQ(rows[0].p_value, "0.00031");
  EXPECT_EQ(rows[0].verdict, "Fail");
  EXPECT_EQ(rows[1].metric, "throughput");
  EXPECT_EQ(rows[1].change, "-0.3125%");
  EXPECT_EQ(rows[1].baseline_median, "480");
  EXPECT_EQ(rows[2].metric, "cpuPerRequest");
  EXPECT_EQ(rows[2].baseline_windows, "0");
  EXPECT_EQ(rows[2].baseline_median, "-");
  EXPECT_EQ(rows[2].change, "-");
  EXPECT_EQ(rows[2].p_value, "-");
  EXPECT_EQ(rows[2].verdict, "Skipped");
  EXPECT_EQ(rows[3].metric, "errorRate");
  EXPECT_EQ(rows[3].change, "+inf%");
}

TEST(RenderExplainTest, TheVerdictTheJudgeAndOneRowPerMetric) {
  const std::string out = RenderExplain(ProfileWith(JudgeEvidence(), "Fail"));
  EXPECT_THAT(out, HasSubstr("boosterprofile \"web\" in namespace \"shop\": RolledBack, step 1"));
  EXPECT_THAT(out, HasSubstr("Fail at step 1, 2027-01-15T08:00:00Z"));
  EXPECT_THAT(out, HasSubstr("Regression"));
  EXPECT_THAT(out, HasSubstr("look 3/12, alpha of this look 0.0021"));
  EXPECT_THAT(out, HasSubstr("METRIC          BASELINE WINDOWS   BASELINE MEDIAN   CANARY "
                             "WINDOWS   CANARY MEDIAN   CHANGE     P-VALUE   VERDICT\n"
                             "latencyP99      12                 0.0123            11        "
                             "       0.01734         +40.97%    0.00031   Fail\n"
                             "errorRate       12                 0                 11        "
                             "       0.01            +inf%"));
  EXPECT_THAT(out, Not(HasSubstr("alpha:")));  // judge keys are not repeated as raw lines
}

TEST(RenderExplainTest, AVerdictByTimeSaysHowLongTheStepRan) {
  const std::string out =
      RenderExplain(ProfileWith({{"judge", "time"},
                                 {"observed", "1m"},
                                 {"required", "1m"},
                                 {"note", "no baseline at 100%: the last step is judged by time"}},
                                "Pass"));
  EXPECT_THAT(out, HasSubstr("time (a step passes once it has run stepDuration with both arms "
                             "ready): ran 1m of 1m"));
  EXPECT_THAT(out, HasSubstr("note:      no baseline at 100%"));
  EXPECT_THAT(out, HasSubstr("No per-metric evidence"));
  EXPECT_THAT(out, Not(HasSubstr("METRIC")));
}

TEST(RenderExplainTest, ADryRunProfileSaysSoAndWhatTheVerdictWouldHaveDone) {
  Json p = ProfileWith(JudgeEvidence(), "Fail");
  const std::string plain = RenderExplain(p);
  EXPECT_THAT(plain, Not(HasSubstr("Dry run")));
  p["spec"]["rollout"]["analysis"]["dryRun"] = true;
  p["status"]["phase"] = "Progressing";
  p["status"]["lastDecision"]["dryRun"] = true;
  p["status"]["lastDecision"]["message"] =
      "dry run: would have rolled back: latencyP99 is 41% worse on the canary";
  const std::string out = RenderExplain(p);
  EXPECT_THAT(out, HasSubstr("Dry run (spec.rollout.analysis.dryRun): verdicts are reported"));
  EXPECT_THAT(out, HasSubstr("Message:   dry run: would have rolled back: latencyP99 is 41% "
                             "worse on the canary"));
  EXPECT_THAT(out, HasSubstr("Dry run:   without dryRun this Fail would have rolled the rollout "
                             "back at step 1; it went on instead"));
  EXPECT_THAT(out, HasSubstr("latencyP99      12"));  // the evidence as always
  // A Pass in a dry-run profile: the profile is in dry run, the verdict spared nothing.
  p["status"]["lastDecision"]["verdict"] = "Pass";
  p["status"]["lastDecision"].erase("dryRun");
  const std::string pass = RenderExplain(p);
  EXPECT_THAT(pass, HasSubstr("Dry run (spec.rollout.analysis.dryRun)"));
  EXPECT_THAT(pass, Not(HasSubstr("Dry run:   ")));
}

TEST(RenderExplainTest, NoVerdictYet) {
  Json p = ProfileWith({}, "Pass");
  p["status"].erase("lastDecision");
  p["status"]["phase"] = "Enrolling";
  p["status"]["currentStep"] = 0;
  EXPECT_EQ(RenderExplain(p),
            "boosterprofile \"web\" in namespace \"shop\": Enrolling, step 0\n"
            "No verdict yet: the first step has not been judged.\n");
}

}  // namespace
}  // namespace booster::plugin

namespace booster::plugin {
namespace {

TEST(RenderSearchTest, ThePhaseTheBestAndOneRowPerTrial) {
  const nlohmann::json search = nlohmann::json::parse(R"({
    "phase": "Searching", "objective": "cpuPerRequest", "best": {},
    "trials": [
      {"number": 1, "knob": "/runtime/go/gomemlimit", "value": "24MiB", "result": "RolledBack",
       "reason": "AnalysisFailed", "objectiveImprovementPercent": -210.34,
       "started": "2026-12-05T12:00:00Z"},
      {"number": 2, "knob": "/runtime/go/gogc", "value": "400", "result": "Kept",
       "reason": "MetricsPassed", "objectiveImprovementPercent": 31.25,
       "started": "2026-12-05T12:02:00Z"},
      {"number": 3, "knob": "/sysctls/net.core.somaxconn", "value": "4096",
       "objectiveSoFarPercent": 0, "started": "2026-12-05T12:04:00Z"}]})");
  const std::string out = RenderSearch(search);
  EXPECT_EQ(out,
            "Search: Searching\n"
            "Objective: cpuPerRequest; best so far: runtime.go.gogc = 400 (trial 2)\n"
            "\n"
            "TRIAL   CHANGE                             RESULT       REASON           OBJECTIVE          STARTED\n"
            "1       runtime.go.gomemlimit = 24MiB      RolledBack   AnalysisFailed   210.3% worse       2026-12-05T12:00:00Z\n"
            "2       runtime.go.gogc = 400              Kept         MetricsPassed    31.3% better       2026-12-05T12:02:00Z\n"
            "3       sysctl net.core.somaxconn = 4096   Running      -                unchanged so far   2026-12-05T12:04:00Z\n")
      << out;
  EXPECT_EQ(RenderSearch(nlohmann::json()), "");
}

TEST(RenderSearchTest, CandidatesThatChangeNothingAreListedAsNotTried) {
  const nlohmann::json search = nlohmann::json::parse(R"({
    "phase": "Searching", "objective": "cpuPerRequest", "best": {}, "trials": [],
    "skipped": [{"knob": "/runtime/go/gomaxprocs", "value": "2",
                 "reason": "GOMAXPROCS 2 is what the go1.26.8 program already runs with"}]})");
  EXPECT_EQ(RenderSearch(search),
            "Search: Searching\n"
            "Objective: cpuPerRequest; best so far: the profile's own tuning\n"
            "Not tried: runtime.go.gomaxprocs = 2: GOMAXPROCS 2 is what the go1.26.8 program "
            "already runs with\n");
}

TEST(RenderSearchTest, ExplainShowsTheSearchBeforeTheVerdict) {
  const nlohmann::json profile = nlohmann::json::parse(R"({
    "metadata": {"name": "web", "namespace": "shop"},
    "status": {"phase": "Pending", "search": {"phase": "Done", "reason": "Exhausted",
      "message": "every candidate tried after 0 trials, 0 kept", "objective": "latencyP99",
      "trials": []}}})");
  const std::string out = RenderExplain(profile);
  EXPECT_NE(out.find("Search: Done (Exhausted): every candidate tried after 0 trials"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("best so far: the profile's own tuning"), std::string::npos) << out;
  EXPECT_LT(out.find("Search:"), out.find("No verdict yet")) << out;
}

}  // namespace
}  // namespace booster::plugin
