#include "operator/rollout/verdict.h"

#include "gtest/gtest.h"

namespace booster::rollout {
namespace {

VerdictRequest Request(absl::Time start, absl::Time now, int extensions = 0) {
  static const AnalysisSpec kAnalysis;
  VerdictRequest r;
  r.profile_namespace = "shop";
  r.profile_name = "checkout";
  r.step = 2;
  r.weight = 50;
  r.analysis_start = start;
  r.extensions = extensions;
  r.step_duration = absl::Minutes(2);
  r.analysis = &kAnalysis;
  r.now = now;
  return r;
}

TEST(TimeVerdictSourceTest, WaitsForTheStepDurationThenPasses) {
  TimeVerdictSource source;
  const absl::Time start = absl::FromUnixSeconds(1'000'000);
  Verdict v = source.Judge(Request(start, start + absl::Seconds(30)));
  EXPECT_EQ(v.kind, VerdictKind::kWait);
  EXPECT_EQ(v.recheck_after, absl::Seconds(90));
  EXPECT_EQ(v.evidence["observed"], "30s");

  v = source.Judge(Request(start, start + absl::Minutes(2) - absl::Milliseconds(1)));
  EXPECT_EQ(v.kind, VerdictKind::kWait);
  EXPECT_EQ(v.recheck_after, absl::Milliseconds(1));

  v = source.Judge(Request(start, start + absl::Minutes(2)));
  EXPECT_EQ(v.kind, VerdictKind::kPass);
  EXPECT_EQ(v.reason, "StepDurationElapsed");
  EXPECT_EQ(v.evidence["judge"], "time");
  EXPECT_EQ(v.evidence["required"], "2m");
}

TEST(TimeVerdictSourceTest, EachExtensionAddsOneStepDuration) {
  TimeVerdictSource source;
  const absl::Time start = absl::FromUnixSeconds(1'000'000);
  EXPECT_EQ(source.Judge(Request(start, start + absl::Minutes(3), 1)).kind, VerdictKind::kWait);
  EXPECT_EQ(source.Judge(Request(start, start + absl::Minutes(4), 1)).kind, VerdictKind::kPass);
}

TEST(TimeVerdictSourceTest, NoAnalysisStartMeansWait) {
  TimeVerdictSource source;
  Verdict v = source.Judge(Request(absl::InfinitePast(), absl::FromUnixSeconds(5)));
  EXPECT_EQ(v.kind, VerdictKind::kWait);
  EXPECT_EQ(v.recheck_after, absl::Minutes(2));
}

TEST(ScriptedVerdictSourceTest, ReplaysTheScriptAndRecordsRequests) {
  ScriptedVerdictSource source({MakeVerdict(VerdictKind::kWait),
                                MakeVerdict(VerdictKind::kFail, "LatencyRegressed", "p99 +12%")});
  const absl::Time t = absl::FromUnixSeconds(1);
  EXPECT_EQ(source.Judge(Request(t, t)).kind, VerdictKind::kWait);
  Verdict v = source.Judge(Request(t, t));
  EXPECT_EQ(v.kind, VerdictKind::kFail);
  EXPECT_EQ(v.reason, "LatencyRegressed");
  EXPECT_EQ(source.Judge(Request(t, t)).kind, VerdictKind::kFail) << "the last one repeats";
  source.Push(MakeVerdict(VerdictKind::kPass));
  EXPECT_EQ(source.Judge(Request(t, t)).kind, VerdictKind::kPass);
  ASSERT_EQ(source.requests().size(), 4u);
  EXPECT_EQ(source.requests()[0].step, 2);
  EXPECT_EQ(source.requests()[0].profile_name, "checkout");
}

TEST(VerdictNameTest, Names) {
  EXPECT_EQ(VerdictName(VerdictKind::kWait), "Wait");
  EXPECT_EQ(VerdictName(VerdictKind::kPass), "Pass");
  EXPECT_EQ(VerdictName(VerdictKind::kFail), "Fail");
  EXPECT_EQ(VerdictName(VerdictKind::kInconclusive), "Inconclusive");
}

}  // namespace
}  // namespace booster::rollout
