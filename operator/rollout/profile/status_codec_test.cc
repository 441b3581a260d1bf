// The status codec (status_codec.h).
#include "operator/rollout/profile/status_codec.h"

#include "gtest/gtest.h"

namespace booster::rollout {
namespace {

Json J(const char* text) { return Json::parse(text); }

RolloutStatus FullStatus() {
  RolloutStatus s;
  s.phase = Phase::kProgressing;
  s.observed_generation = 7;
  s.current_step = 2;
  s.canary_weight = 50;
  s.total_replicas = 10;
  s.original_replicas = 9;
  s.stable_replicas = 5;
  s.canary_replicas = 5;
  s.baseline_replicas = 5;
  s.target_floor = 4;
  s.canary_name = "web-booster";
  s.target_uid = "uid-1";
  s.team_template_hash = "aaaa";
  s.rollout_hash = "bbbb";
  s.experiment_hash = "cccc";
  s.baseline_tuning = R"({"cpu":{"numa":"none","placement":"none"}})";
  s.phase_start_time = absl::FromUnixSeconds(1'700'000'000);
  s.step_start_time = absl::FromUnixSeconds(1'700'000'100);
  s.analysis_start_time = absl::FromUnixSeconds(1'700'000'160);
  s.not_ready_since = absl::FromUnixSeconds(1'700'000'170);
  s.extensions = 1;
  s.analysis_template = AnalysisTemplateStatus{"BoosterClusterAnalysisTemplate", "slo", 3};
  s.handled = HandledControls{"a1", "p1", "r1"};
  s.last_transition = Transition{"Progressing", "Progressing", "StepPassed", "step 1 passed",
                                 absl::FromUnixSeconds(1'700'000'100)};
  s.last_decision = Decision{"Pass",
                             1,
                             "StepDurationElapsed",
                             "ok",
                             absl::FromUnixSeconds(1'700'000'100),
                             {{"observed", "2m"}}};
  s.conditions.push_back(Condition{"Ready", "False", "Progressing", "step 2", 7,
                                   absl::FromUnixSeconds(1'700'000'000)});
  return s;
}

TEST(StatusTest, RoundTripsThroughJson) {
  RolloutStatus s = FullStatus();
  EXPECT_EQ(ParseStatus(StatusToJson(s)), s);
  // And through text, as the API server stores it.
  EXPECT_EQ(ParseStatus(Json::parse(StatusToJson(s).dump())), s);
  EXPECT_EQ(ParseStatus(StatusToJson(RolloutStatus{})), RolloutStatus{});
  // A decision dry run kept from rolling back says so; others carry no dryRun key.
  EXPECT_FALSE(StatusToJson(s)["lastDecision"].contains("dryRun"));
  s.last_decision->verdict = "Fail";
  s.last_decision->dry_run = true;
  EXPECT_EQ(StatusToJson(s)["lastDecision"]["dryRun"], true);
  EXPECT_EQ(ParseStatus(Json::parse(StatusToJson(s).dump())), s);
}

TEST(StatusTest, WritesTheFieldsThePrinterColumnsRead) {
  Json j = StatusToJson(FullStatus());
  EXPECT_EQ(j["phase"], "Progressing");
  EXPECT_EQ(j["canaryWeight"], 50);
  EXPECT_EQ(j["currentStep"], 2);
  EXPECT_EQ(j["lastTransition"]["reason"], "StepPassed");
  EXPECT_EQ(j["stepStartTime"], "2023-11-14T22:15:00Z");
}

TEST(StatusTest, MalformedStatusIsReadLeniently) {
  RolloutStatus s = ParseStatus(J(R"({"phase": "Exploding", "currentStep": "two",
                                      "conditions": [42, {"status": "True"}]})"));
  EXPECT_EQ(s.phase, Phase::kPending);
  EXPECT_EQ(s.current_step, 0);
  EXPECT_TRUE(s.conditions.empty());
}

}  // namespace
}  // namespace booster::rollout
