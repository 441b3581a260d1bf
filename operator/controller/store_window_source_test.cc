#include "operator/controller/store_window_source.h"

#include "gtest/gtest.h"
#include "operator/rollout/profile/spec.h"

namespace booster::controller {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);
constexpr char kProfile[] = "shop/web-boost";

feedback::Window W(const std::string& pod, uint64_t seq, double p99) {
  feedback::Window w;
  w.pod = pod;
  w.pod_uid = pod + "-uid";
  w.pod_created = kT0 - absl::Minutes(5);
  w.node = pod + "-node";
  w.incarnation = "inc-" + pod;
  w.sequence = seq;
  w.start = kT0 + absl::Seconds(10 * static_cast<int64_t>(seq - 1));
  w.end = w.start + absl::Seconds(10);
  w.SetMetric("latencyP99", p99, 500);
  w.SetMetric("throughput", 50, 500);
  return w;
}

TEST(StoreWindowSourceTest, TheCurrentStepsWindowsPerArmSinceTheAnalysisStart) {
  feedback::WindowStore store;
  StoreWindowSource source(&store);
  const analysis::WindowQuery query{"shop", "web-boost", 1, kT0 + absl::Seconds(10)};
  // No step opened yet: no windows (the judge waits), not an error.
  absl::StatusOr<analysis::ArmWindows> none = source.Windows(query);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->baseline.empty() && none->canary.empty());

  store.BeginStep(kProfile, {.generation = 2, .step = 1, .started = kT0}, {"", ""});
  for (uint64_t seq = 1; seq <= 3; ++seq) {
    store.Add(kProfile, feedback::Arm::kBaseline, W("base-a", seq, 0.010));
    store.Add(kProfile, feedback::Arm::kCanary, W("canary-a", seq, 0.020));
  }
  absl::StatusOr<analysis::ArmWindows> got = source.Windows(query);
  ASSERT_TRUE(got.ok()) << got.status();
  // The window that started before the analysis did is left out.
  ASSERT_EQ(got->baseline.at("latencyP99").size(), 2u);
  ASSERT_EQ(got->canary.at("latencyP99").size(), 2u);
  const analysis::Window& w = got->canary.at("latencyP99")[0];
  EXPECT_DOUBLE_EQ(w.value, 0.020);
  EXPECT_EQ(w.pod, "canary-a");
  EXPECT_EQ(w.start, kT0 + absl::Seconds(10));
  EXPECT_EQ(w.end, kT0 + absl::Seconds(20));
  EXPECT_EQ(w.pod_start, kT0 - absl::Minutes(5));  // for the judge's warm-up
  EXPECT_EQ(w.node, "canary-a-node");
  EXPECT_EQ(w.requests, 500);
  EXPECT_EQ(got->baseline.at("throughput").size(), 2u);
  EXPECT_EQ(got->baseline.count("errorRate"), 0u);  // never measured: absent, not zero

  // Asked about another step than the store's current one: nothing.
  absl::StatusOr<analysis::ArmWindows> other =
      source.Windows({"shop", "web-boost", 2, kT0});
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(other->baseline.empty() && other->canary.empty());
}

// The judge over the store, as the operator wires it: a clearly worse canary fails, and a
// Metrics profile whose agents report nothing is never promoted.
TEST(StoreWindowSourceTest, TheJudgeDecidesOnTheStoresWindows) {
  absl::StatusOr<rollout::ProfileSpec> spec = rollout::ParseSpec(rollout::Json::parse(R"({
      "targetRef": {"kind": "Deployment", "name": "web"},
      "rollout": {"steps": [50, 100], "stepDuration": "60s",
                  "analysis": {"mode": "Metrics", "interval": "10s", "minSamples": 4,
                               "warmup": "0s", "metrics": [{"name": "latencyP99"}]}}})"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  feedback::WindowStore store;
  StoreWindowSource source(&store);
  analysis::JudgeVerdictSource verdicts(source);
  rollout::VerdictRequest req{.profile_namespace = "shop",
                              .profile_name = "web-boost",
                              .step = 1,
                              .steps = 2,
                              .weight = 50,
                              .analysis_start = kT0,
                              .extensions = 0,
                              .step_duration = absl::Seconds(60),
                              .analysis = &spec->rollout.analysis,
                              .now = kT0 + absl::Seconds(61)};
  store.BeginStep(kProfile, {.generation = 1, .step = 1, .started = kT0}, {"", ""});
  rollout::Verdict silent = verdicts.Judge(req);
  EXPECT_EQ(silent.kind, rollout::VerdictKind::kInconclusive) << silent.message;

  // Six windows per pod, two pods per arm: 12 windows per arm (with 36 looks planned, 6
  // against 6 could never reach this look's alpha, docs/analysis.md).
  // The values wobble by a few percent from window to window, as measured latencies do.
  for (uint64_t seq = 1; seq <= 6; ++seq) {
    const double wobble = 0.0003 * static_cast<double>((seq * 5) % 3);
    store.Add(kProfile, feedback::Arm::kBaseline, W("base-a", seq, 0.010 + wobble));
    store.Add(kProfile, feedback::Arm::kBaseline, W("base-b", seq, 0.011 + wobble));
    store.Add(kProfile, feedback::Arm::kCanary, W("canary-b", seq, 0.101 + 0.0001 * seq));
    store.Add(kProfile, feedback::Arm::kCanary, W("canary-a", seq, 0.100 + wobble));
  }
  rollout::Verdict v = verdicts.Judge(req);
  EXPECT_EQ(v.kind, rollout::VerdictKind::kFail) << v.message;
  EXPECT_EQ(v.reason, "AnalysisFailed");
  EXPECT_EQ(v.evidence.at("latencyP99.verdict"), "Fail");
  EXPECT_EQ(v.evidence.at("latencyP99.canary"), "n=12 median=0.1009");
}

}  // namespace
}  // namespace booster::controller
