#include "operator/plugin/profile_view.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "operator/plugin/table.h"

namespace booster::plugin {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);  // 2027-01-15T08:00:00Z

Json Profile() {
  return Json::parse(R"({
    "apiVersion": "booster.dev/v1alpha1", "kind": "BoosterProfile",
    "metadata": {"name": "web", "namespace": "shop", "uid": "u-1",
                 "creationTimestamp": "2027-01-15T07:54:00Z"},
    "spec": {"targetRef": {"kind": "Deployment", "name": "web"},
             "rollout": {"steps": [10, 50, 100], "stepDuration": "1m"}},
    "status": {
      "phase": "Progressing", "currentStep": 2, "canaryWeight": 50,
      "totalReplicas": 4, "stableReplicas": 2, "canaryReplicas": 2, "canaryName": "web-booster",
      "phaseStartTime": "2027-01-15T07:58:00Z",
      "lastTransition": {"from": "Progressing", "to": "Progressing", "reason": "StepPassed",
                         "message": "step 1 passed", "time": "2027-01-15T07:58:00Z"},
      "lastDecision": {"verdict": "Pass", "step": 1, "reason": "StepDurationElapsed",
                       "message": "step 1 (10%) ran for 1m", "time": "2027-01-15T07:58:00Z",
                       "evidence": {"judge": "time", "observed": "1m", "required": "1m"}},
      "conditions": [{"type": "Ready", "status": "False", "reason": "Progressing",
                      "message": "", "lastTransitionTime": "2027-01-15T07:54:01Z"}]
    }
  })");
}

Json Event(const std::string& name, const std::string& reason, const std::string& message,
           const std::string& first, const std::string& uid = "u-1", int count = 1) {
  return Json{{"metadata", {{"name", name}, {"namespace", "shop"}}},
              {"involvedObject",
               {{"kind", "BoosterProfile"},
                {"name", "web"},
                {"uid", uid},
                {"apiVersion", "booster.dev/v1alpha1"}}},
              {"type", reason == "AnalysisFailed" ? "Warning" : "Normal"},
              {"reason", reason},
              {"message", message},
              {"firstTimestamp", first},
              {"lastTimestamp", first},
              {"count", count}};
}

TEST(GetRowTest, PhaseStepWeightVerdictAndAge) {
  EXPECT_EQ(GetHeader(false, false), (std::vector<std::string>{"NAME", "TARGET", "PHASE", "STEP",
                                                               "WEIGHT", "VERDICT", "AGE"}));
  EXPECT_EQ(GetRow(Profile(), kNow, false, false),
            (std::vector<std::string>{"web", "web", "Progressing", "2/3", "50%", "Pass", "6m"}));
  EXPECT_EQ(GetHeader(true, true).front(), "NAMESPACE");
  EXPECT_EQ(GetRow(Profile(), kNow, true, true),
            (std::vector<std::string>{"shop", "web", "web", "Progressing", "2/3", "50%", "Pass",
                                      "6m", "2/4", "StepPassed"}));
}

TEST(GetRowTest, AProfileTheOperatorHasNotSeenYet) {
  Json p = Profile();
  p.erase("status");
  p["spec"]["rollout"].erase("steps");  // the CRD's default: 10, 50, 100
  EXPECT_EQ(GetRow(p, kNow, false, false),
            (std::vector<std::string>{"web", "web", "-", "0/3", "0%", "-", "6m"}));
}

TEST(StepOfMessageTest, TheFirstStepNumberTheMessageNames) {
  EXPECT_EQ(StepOfMessage("enrolled; step 1 of 3: 10% on the canary (1 of 3)"), 1);
  EXPECT_EQ(StepOfMessage("step 2 passed: ran 1m; step 3 of 3: 100% on the canary"), 2);
  EXPECT_EQ(StepOfMessage("enrolled; paused before the first step: annotation"), 0);
  EXPECT_EQ(StepOfMessage("paused at step 12: spec.rollout.paused is true"), 12);
  EXPECT_EQ(StepOfMessage("enrolling Deployment web"), 0);
  EXPECT_EQ(StepOfMessage("substep 4"), 0);
}

TEST(BuildHistoryTest, OldestFirstWithTheVerdictOfEachStepAndOnlyThisProfilesEvents) {
  Json events = Json::array({
      Event("web.18a2", "StepPassed", "step 1 passed: ran 1m; step 2 of 3: 50% on the canary",
            "2027-01-15T07:58:00Z"),
      Event("web.18a0", "Enrolling", "enrolling Deployment web", "2027-01-15T07:54:01Z"),
      // Same second as the StepStarted: the name (the recorder's clock) orders them.
      Event("web.18a1b", "StepExtended", "step 1 inconclusive (too few windows); extended",
            "2027-01-15T07:55:00Z", "u-1", 3),
      Event("web.18a1a", "StepStarted", "enrolled; step 1 of 3: 10% on the canary",
            "2027-01-15T07:55:00Z"),
      Event("web.0old", "AnalysisFailed", "step 1 failed: p99 +40%", "2027-01-14T07:00:00Z",
            "u-0"),  // an earlier profile of the same name
  });
  Json other = Event("api.1", "StepStarted", "step 1", "2027-01-15T07:55:00Z");
  other["involvedObject"]["name"] = "api";
  events.push_back(other);

  std::vector<HistoryEntry> h = BuildHistory(Profile(), events);
  ASSERT_EQ(h.size(), 4u);
  EXPECT_EQ(h[0].reason, "Enrolling");
  EXPECT_EQ(h[0].step, 0);
  EXPECT_EQ(h[0].verdict, "");
  EXPECT_EQ(h[1].reason, "StepStarted");
  EXPECT_EQ(h[1].step, 1);
  EXPECT_EQ(h[2].reason, "StepExtended");
  EXPECT_EQ(h[2].verdict, "Inconclusive");
  EXPECT_EQ(h[2].count, 3);
  EXPECT_EQ(h[3].reason, "StepPassed");
  EXPECT_EQ(h[3].step, 1);
  EXPECT_EQ(h[3].verdict, "Pass");
  EXPECT_EQ(TimeText(h[3].time), "2027-01-15T07:58:00Z");
  EXPECT_NE(h[2].key, h[1].key);
}

TEST(BuildHistoryTest, VerdictsOfEveryStepVerdictReason) {
  EXPECT_EQ(VerdictOfReason("StepPassed"), "Pass");
  EXPECT_EQ(VerdictOfReason("AnalysisFailed"), "Fail");
  EXPECT_EQ(VerdictOfReason("AnalysisInconclusive"), "Inconclusive");
  EXPECT_EQ(VerdictOfReason("InconclusiveAccepted"), "Inconclusive");
  EXPECT_EQ(VerdictOfReason("StepExtended"), "Inconclusive");
  EXPECT_EQ(VerdictOfReason("Promoted"), "");
  EXPECT_EQ(VerdictOfReason("Aborted"), "");
}

TEST(HistoryLineTest, FixedColumnsSoWatchLinesAlignUnderTheHeader) {
  HistoryEntry e;
  e.time = absl::FromUnixSeconds(1'800'000'000);
  e.reason = "AnalysisFailed";
  e.step = 2;
  e.verdict = "Fail";
  e.message = "step 2 failed: latencyP99 +41%";
  e.count = 2;
  const std::string header = HistoryHeader();
  const std::string line = HistoryLine(e);
  EXPECT_EQ(header.find("STEP"), line.find("2 "));
  EXPECT_EQ(header.find("VERDICT"), line.find("Fail"));
  EXPECT_EQ(header.find("REASON"), line.find("AnalysisFailed (x2)"));
  EXPECT_EQ(header.find("MESSAGE"), line.find("step 2 failed"));
  EXPECT_EQ(line.substr(0, 20), "2027-01-15T08:00:00Z");
}

TEST(RenderStatusTest, TheStateBlockConditionsAndHistory) {
  Json p = Profile();
  p["metadata"]["annotations"] = {{"booster.dev/paused", "true"}};
  std::vector<HistoryEntry> h = BuildHistory(
      p,
      Json::array({Event("web.1", "StepPassed", "step 1 passed: ran 1m", "2027-01-15T07:58:00Z")}));
  const std::string out = RenderStatus(p, h, kNow);
  EXPECT_THAT(out, HasSubstr("Name:"));
  EXPECT_THAT(out, HasSubstr("Progressing for 2m (since 2027-01-15T07:58:00Z)"));
  EXPECT_THAT(out, HasSubstr("2 of 3, 50% on the canary (steps 10, 50, 100)"));
  EXPECT_THAT(out, HasSubstr("4 = 2 on the target + 2 on the canary web-booster"));
  EXPECT_THAT(out, HasSubstr("annotation booster.dev/paused=true"));
  EXPECT_THAT(out, HasSubstr("Pass at step 1, 2027-01-15T07:58:00Z (StepDurationElapsed)"));
  EXPECT_THAT(out, HasSubstr("  Ready   False    Progressing"));
  EXPECT_THAT(out, HasSubstr("History (from the profile's Events, oldest first):\nTIME"));
  EXPECT_THAT(out, HasSubstr("2027-01-15T07:58:00Z   1      Pass           StepPassed"));
  // A step with a fresh baseline lists the three Deployments (no sum: it may hold N + 1).
  p["status"]["stableReplicas"] = 0;
  p["status"]["baselineReplicas"] = 2;
  EXPECT_THAT(RenderStatus(p, h, kNow),
              HasSubstr("4 (the app's total); 0 on the target, 2 on the canary web-booster, 2 on "
                        "the fresh baseline web-booster-baseline"));
}

TEST(RenderStatusTest, TheAnalysisLineNamesTheTemplateAndItsGeneration) {
  Json p = Profile();
  EXPECT_THAT(RenderStatus(p, {}, kNow), HasSubstr("mode Metrics, stepDuration 1m"));
  p["spec"]["rollout"]["analysis"] =
      Json::parse(R"({"templateRef": {"kind": "BoosterClusterAnalysisTemplate", "name": "slo"}})");
  p["status"]["analysisTemplate"] =
      Json::parse(R"({"kind": "BoosterClusterAnalysisTemplate", "name": "slo", "generation": 3})");
  EXPECT_THAT(RenderStatus(p, {}, kNow),
              HasSubstr("BoosterClusterAnalysisTemplate slo (generation 3), stepDuration 1m"));
}

TEST(RenderStatusTest, NoStatusAndNoEventsAreSaidSo) {
  Json p = Profile();
  p.erase("status");
  const std::string out = RenderStatus(p, {}, kNow);
  EXPECT_THAT(out, HasSubstr("the operator has not written a status yet"));
  EXPECT_THAT(out, HasSubstr("none yet"));
  EXPECT_THAT(out, HasSubstr("no Events"));
  EXPECT_THAT(out, Not(HasSubstr("Conditions:")));
}

TEST(RolloutEndedTest, PromotedRolledBackAndFailedEndAWatch) {
  for (const char* phase : {"Promoted", "RolledBack", "Failed"}) {
    Json p = Profile();
    p["status"]["phase"] = phase;
    EXPECT_TRUE(RolloutEnded(p)) << phase;
  }
  for (const char* phase :
       {"Pending", "Enrolling", "Progressing", "Paused", "Promoting", "RollingBack"}) {
    Json p = Profile();
    p["status"]["phase"] = phase;
    EXPECT_FALSE(RolloutEnded(p)) << phase;
  }
}

}  // namespace
}  // namespace booster::plugin
