#include "operator/controller/operator_metrics.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "prometheus/registry.h"

namespace booster::controller {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'800'000'000);

// The value of the series of `family` with `verdict`; -1 when absent.
double DryRunCount(OperatorMetrics& metrics, const std::string& verdict) {
  for (const prometheus::MetricFamily& f : metrics.registry->Collect()) {
    if (f.name != "booster_operator_dry_run_verdicts_total") continue;
    for (const prometheus::ClientMetric& m : f.metric) {
      for (const prometheus::ClientMetric::Label& l : m.label) {
        if (l.name == "verdict" && l.value == verdict) return m.counter.value;
      }
    }
  }
  return -1;
}

rollout::RolloutStatus WithDecision(const std::string& verdict, absl::Time time, bool dry_run) {
  rollout::RolloutStatus s;
  s.phase = rollout::Phase::kProgressing;
  s.last_decision = rollout::Decision{.verdict = verdict, .step = 1, .time = time};
  s.last_decision->dry_run = dry_run;
  return s;
}

TEST(OperatorMetricsTest, CountsEachDryRunDecisionOnceAndNoneMadeBeforeTheProcess) {
  OperatorMetrics metrics(kStart);
  // Written by an earlier process: already counted there.
  metrics.Reconciled("shop", "web", WithDecision("Fail", kStart - absl::Minutes(1), true), {});
  EXPECT_EQ(DryRunCount(metrics, "Fail"), -1);
  // A decision of this process, seen on every pass that follows: one. The pass that made it
  // holds its time to the nanosecond, the later ones read it back from the status in whole
  // seconds (the chart e2e counted two before).
  metrics.Reconciled(
      "shop", "web",
      WithDecision("Fail", kStart + absl::Minutes(1) + absl::Milliseconds(456), true), {});
  const rollout::RolloutStatus fail = WithDecision("Fail", kStart + absl::Minutes(1), true);
  for (int i = 0; i < 3; ++i) metrics.Reconciled("shop", "web", fail, {});
  EXPECT_EQ(DryRunCount(metrics, "Fail"), 1);
  // The one at the step's end, and an Inconclusive: each its own.
  metrics.Reconciled("shop", "web", WithDecision("Fail", kStart + absl::Minutes(2), true), {});
  metrics.Reconciled("shop", "web", WithDecision("Inconclusive", kStart + absl::Minutes(3), true),
                     {});
  EXPECT_EQ(DryRunCount(metrics, "Fail"), 2);
  EXPECT_EQ(DryRunCount(metrics, "Inconclusive"), 1);
  // A verdict that rolled back (no dry run), or a Pass: not a dry-run verdict.
  metrics.Reconciled("shop", "web", WithDecision("Fail", kStart + absl::Minutes(4), false), {});
  metrics.Reconciled("shop", "web", WithDecision("Pass", kStart + absl::Minutes(5), false), {});
  EXPECT_EQ(DryRunCount(metrics, "Fail"), 2);
  EXPECT_EQ(DryRunCount(metrics, "Pass"), -1);
  // The series go with the profile.
  metrics.Forgotten("shop", "web");
  EXPECT_EQ(DryRunCount(metrics, "Fail"), -1);
  EXPECT_EQ(DryRunCount(metrics, "Inconclusive"), -1);
}


// "trial/change/result=value" of every trial series.
std::vector<std::string> Trials(OperatorMetrics& metrics) {
  std::vector<std::string> out;
  for (const prometheus::MetricFamily& f : metrics.registry->Collect()) {
    if (f.name != "booster_operator_search_trial_objective_percent") continue;
    for (const prometheus::ClientMetric& m : f.metric) {
      std::map<std::string, std::string> l;
      for (const prometheus::ClientMetric::Label& label : m.label) l[label.name] = label.value;
      out.push_back(l["trial"] + "/" + l["change"] + "/" + l["result"] + "=" +
                    std::to_string(static_cast<int>(m.gauge.value)));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(OperatorMetricsTest, OneSeriesPerSearchTrialFollowingTheTable) {
  OperatorMetrics metrics(kStart);
  rollout::RolloutStatus s;
  s.search = rollout::Json::parse(R"({"phase": "Searching", "trials": [
      {"number": 1, "knob": "/runtime/go/gogc", "value": "400", "result": "Kept",
       "objectiveImprovementPercent": 25.4},
      {"number": 2, "knob": "/sysctls/net.core.somaxconn", "value": "4096",
       "objectiveSoFarPercent": -3}]})");
  metrics.Reconciled("shop", "web", s, {});
  EXPECT_EQ(Trials(metrics), (std::vector<std::string>{
                                 "1/runtime.go.gogc = 400/Kept=25",
                                 "2/sysctl net.core.somaxconn = 4096/Running=-3"}));
  // The running trial ends: its Running series goes, the ended one comes.
  s.search["trials"][1]["result"] = "RolledBack";
  s.search["trials"][1]["objectiveImprovementPercent"] = -4.0;
  metrics.Reconciled("shop", "web", s, {});
  EXPECT_EQ(Trials(metrics), (std::vector<std::string>{
                                 "1/runtime.go.gogc = 400/Kept=25",
                                 "2/sysctl net.core.somaxconn = 4096/RolledBack=-4"}));
  // A search started again has no trial yet; a deleted profile has none either.
  s.search["trials"] = rollout::Json::array();
  metrics.Reconciled("shop", "web", s, {});
  EXPECT_TRUE(Trials(metrics).empty());
  s.search = rollout::Json::parse(R"({"trials": [{"number": 1, "knob": "/cpu/placement",
                                                    "value": "spread"}]})");
  metrics.Reconciled("shop", "web", s, {});
  EXPECT_EQ(Trials(metrics).size(), 1u);
  metrics.Forgotten("shop", "web");
  EXPECT_TRUE(Trials(metrics).empty());
}

// "family{metric,arm,verdict,reason}=value" of every analysis series of profile web.
std::vector<std::string> Analysis(OperatorMetrics& metrics) {
  std::vector<std::string> out;
  for (const prometheus::MetricFamily& f : metrics.registry->Collect()) {
    if (f.name.rfind("booster_operator_analysis_", 0) != 0) continue;
    for (const prometheus::ClientMetric& m : f.metric) {
      std::map<std::string, std::string> l;
      for (const prometheus::ClientMetric::Label& label : m.label) l[label.name] = label.value;
      std::string labels = "step=" + l["step"] + " " + l["metric"];
      for (const char* name : {"arm", "verdict", "reason"}) {
        if (l.count(name) > 0) labels += " " + l[name];
      }
      std::ostringstream value;
      value << m.gauge.value;
      out.push_back(f.name.substr(26) + "{" + labels + "}=" + value.str());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(OperatorMetricsTest, EachMetricOfTheLastDecisionIsASeries) {
  OperatorMetrics metrics(kStart);
  rollout::RolloutStatus s = WithDecision("Fail", kStart + absl::Seconds(30), false);
  s.last_decision->step = 2;
  s.last_decision->reason = "AnalysisFailed";
  s.last_decision->evidence = {
      {"judge", "metrics"}, {"alpha", "0.001"}, {"look", "3/24"},
      {"latencyP99.verdict", "Fail"}, {"latencyP99.baseline", "n=6 median=0.012"},
      {"latencyP99.canary", "n=6 median=0.03"}, {"latencyP99.changePercent", "150"},
      {"latencyP99.pValue", "0.0002"},
      {"listenOverflows.verdict", "Pass"}, {"listenOverflows.baseline", "n=6 median=0"},
      {"listenOverflows.canary", "n=6 median=2"}, {"listenOverflows.changePercent", "+inf"},
      {"listenOverflows.pValue", "0.3"},
      // A figure beside the judged ones; an arm without windows has no median.
      {"memoryRss.verdict", "NotJudged"}, {"memoryRss.baseline", "n=0 median=nan"},
      {"memoryRss.canary", "n=5 median=1048576"}};
  metrics.Reconciled("shop", "web", s, {});
  EXPECT_EQ(Analysis(metrics),
            (std::vector<std::string>{
                "change_percent{step=2 latencyP99}=150",
                "change_percent{step=2 listenOverflows}=inf",
                "median{step=2 latencyP99 baseline}=0.012",
                "median{step=2 latencyP99 canary}=0.03",
                "median{step=2 listenOverflows baseline}=0",
                "median{step=2 listenOverflows canary}=2",
                "median{step=2 memoryRss canary}=1.04858e+06",
                "metric_verdict{step=2 latencyP99 Fail AnalysisFailed}=1",
                "metric_verdict{step=2 listenOverflows Pass AnalysisFailed}=1",
                "metric_verdict{step=2 memoryRss NotJudged AnalysisFailed}=1",
                "p_value{step=2 latencyP99}=0.0002",
                "p_value{step=2 listenOverflows}=0.3"}));
  // The next decision replaces them: a verdict by time has no metric.
  s.last_decision->step = 3;
  s.last_decision->evidence = {{"judge", "time"}, {"observed", "2m"}};
  metrics.Reconciled("shop", "web", s, {});
  EXPECT_TRUE(Analysis(metrics).empty());
  s.last_decision->evidence = {{"latencyP99.verdict", "Wait"},
                               {"latencyP99.baseline", "n=1 median=0.01"}};
  metrics.Reconciled("shop", "web", s, {});
  EXPECT_EQ(Analysis(metrics).size(), 2u);
  metrics.Forgotten("shop", "web");
  EXPECT_TRUE(Analysis(metrics).empty());
}

}  // namespace
}  // namespace booster::controller
