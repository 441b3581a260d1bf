#include "operator/controller/operator_metrics.h"

#include <algorithm>
#include <map>
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

}  // namespace
}  // namespace booster::controller
