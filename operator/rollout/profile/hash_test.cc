// RolloutHash and Fnv1aHex (hash.h).
#include "operator/rollout/profile/hash.h"

#include "gtest/gtest.h"
#include "operator/rollout/profile/spec.h"
#include "operator/rollout/profile/test_specs.h"

namespace booster::rollout {
namespace {

using testing::kIssueExample;

Json J(const char* text) { return Json::parse(text); }

TEST(RolloutHashTest, ChangesWithWhatTheRolloutCarriesOutOnly) {
  ProfileSpec a = *ParseSpec(J(kIssueExample));
  ProfileSpec b = a;
  b.rollout.paused = true;
  b.rollout.step_duration = absl::Minutes(5);
  b.rollout.hpa_policy = HpaPolicy::kFixed;
  EXPECT_EQ(RolloutHash(a), RolloutHash(b));
  ProfileSpec c = a;
  c.tuning.sysctls["net.core.somaxconn"] = "8192";
  EXPECT_NE(RolloutHash(a), RolloutHash(c));
  ProfileSpec d = a;
  d.rollout.steps = {25, 100};
  EXPECT_NE(RolloutHash(a), RolloutHash(d));
  ProfileSpec e = a;
  e.tuning.preload.tcp_no_delay = false;
  EXPECT_NE(RolloutHash(a), RolloutHash(e));
}

TEST(ExperimentHashTest, ChangesWithWhatBothArmsMeasureAndTheBaselineOnly) {
  const ProfileSpec a = *ParseSpec(J(kIssueExample));
  // Thresholds, durations and the tuning are not the experiment's setup.
  ProfileSpec same = a;
  same.rollout.analysis.confidence = 0.99;
  same.rollout.analysis.min_samples = 3;
  same.rollout.analysis.dry_run = true;
  same.rollout.analysis.metrics.push_back(MetricSpec{"throughput"});
  same.rollout.step_duration = absl::Minutes(7);
  same.tuning.sysctls["net.core.somaxconn"] = "8192";
  EXPECT_EQ(ExperimentHash(a), ExperimentHash(same));
  ProfileSpec interval = a;
  interval.rollout.analysis.interval = absl::Seconds(7);
  EXPECT_NE(ExperimentHash(a), ExperimentHash(interval));
  ProfileSpec source = a;
  source.rollout.analysis.source = {{"port", 9090}};
  EXPECT_NE(ExperimentHash(a), ExperimentHash(source));
  ProfileSpec baseline = a;
  baseline.rollout.analysis.baseline = BaselinePolicy::kTarget;
  EXPECT_NE(ExperimentHash(a), ExperimentHash(baseline));
  ProfileSpec mode = a;
  mode.rollout.analysis.mode =
      a.rollout.analysis.mode == AnalysisMode::kTime ? AnalysisMode::kMetrics : AnalysisMode::kTime;
  EXPECT_NE(ExperimentHash(a), ExperimentHash(mode));
}

TEST(HashTest, Fnv1aIsStableAndSensitive) {
  EXPECT_EQ(Fnv1aHex(""), "cbf29ce484222325");
  EXPECT_EQ(Fnv1aHex("a"), "af63dc4c8601ec8c");
  EXPECT_NE(Fnv1aHex("ab"), Fnv1aHex("ba"));
}

}  // namespace
}  // namespace booster::rollout
