#include "operator/plugin/actions.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace booster::plugin {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000) + absl::Microseconds(123456);
constexpr char kToken[] = "2027-01-15T08:00:00.123456Z";

Json Profile(const std::string& phase, int step = 2) {
  Json p = Json::parse(R"({"metadata": {"name": "web", "namespace": "shop",
                                        "resourceVersion": "42"},
                           "spec": {"rollout": {}}})");
  p["status"] = {{"phase", phase}, {"currentStep", step}};
  return p;
}

// Which verb each phase accepts (what the state machine acts on, and nothing that would
// act later by surprise).
TEST(PlanActionTest, EveryVerbInEveryPhase) {
  const std::map<Verb, std::vector<std::string>> accepted = {
      {Verb::kPause, {"Pending", "Enrolling", "Progressing", "Paused"}},
      {Verb::kPromote, {"Progressing", "Paused"}},
      {Verb::kAbort, {"Enrolling", "Progressing", "Paused", "Promoting"}},
      {Verb::kRetry, {"Promoted", "RolledBack", "Failed"}},
  };
  for (const auto& [verb, phases] : accepted) {
    for (const char* phase : {"Pending", "Enrolling", "Progressing", "Paused", "Promoting",
                              "Promoted", "RollingBack", "RolledBack", "Failed"}) {
      absl::StatusOr<Action> a = PlanAction(verb, Profile(phase), kNow);
      const bool want = std::find(phases.begin(), phases.end(), phase) != phases.end();
      EXPECT_EQ(a.ok(), want) << VerbName(verb) << " in " << phase << ": " << a.status();
      if (!a.ok()) {
        EXPECT_EQ(a.status().code(), absl::StatusCode::kFailedPrecondition);
        EXPECT_THAT(a.status().message(),
                    HasSubstr(absl::StrCat("cannot ", VerbName(verb), " boosterprofile \"web\"")));
      }
    }
  }
}

TEST(PlanActionTest, OneShotVerbsWriteANewTokenGuardedByTheResourceVersion) {
  struct Case {
    Verb verb;
    const char* phase;
    const char* annotation;
    const char* summary;
  };
  for (const Case& c : {
           Case{Verb::kPromote, "Progressing", "booster.dev/promote-now",
                "promoted at step 2: the remaining steps and their analysis are skipped"},
           Case{Verb::kAbort, "Paused", "booster.dev/abort",
                "aborted (Paused at step 2): it rolls back to the Deployment of before"},
           Case{Verb::kRetry, "RolledBack", "booster.dev/retry",
                "retried (was RolledBack): a new rollout starts from Pending at step 1"},
       }) {
    absl::StatusOr<Action> a = PlanAction(c.verb, Profile(c.phase), kNow);
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_EQ(a->patch, Json::parse(absl::StrCat(R"({"metadata": {"resourceVersion": "42",
                                                   "annotations": {")",
                                                 c.annotation, R"(": ")", kToken, R"("}}})")));
    EXPECT_EQ(a->summary, absl::StrCat("boosterprofile \"web\" ", c.summary, " (annotation ",
                                       c.annotation, "=", kToken, ")"));
  }
}

TEST(PlanActionTest, ATokenAlreadyUsedIsNeverWrittenAgain) {
  Json p = Profile("Progressing");
  p["metadata"]["annotations"] = {{"booster.dev/abort", kToken}};
  p["status"]["handled"] = {{"abort", absl::StrCat(kToken, "-2")}};
  absl::StatusOr<Action> a = PlanAction(Verb::kAbort, p, kNow);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->patch["metadata"]["annotations"]["booster.dev/abort"], absl::StrCat(kToken, "-3"));
  EXPECT_EQ(NewToken(kNow, "", ""), kToken);
}

TEST(PlanActionTest, PauseSetsTheAnnotationAndSaysWhereItHolds) {
  absl::StatusOr<Action> a = PlanAction(Verb::kPause, Profile("Progressing"), kNow);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->patch, Json::parse(R"({"metadata": {"resourceVersion": "42",
                                      "annotations": {"booster.dev/paused": "true"}}})"));
  EXPECT_THAT(a->summary, HasSubstr("the rollout holds at step 2"));
  a = PlanAction(Verb::kPause, Profile("Enrolling", 0), kNow);
  ASSERT_TRUE(a.ok());
  EXPECT_THAT(a->summary, HasSubstr("once the Deployment is enrolled, before the first step"));

  Json paused = Profile("Paused");
  paused["metadata"]["annotations"] = {{"booster.dev/paused", "true"}};
  a = PlanAction(Verb::kPause, paused, kNow);
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->patch.is_null());
  EXPECT_THAT(a->summary, HasSubstr("already paused"));
}

TEST(PlanActionTest, ResumeClearsWhateverPausesTheProfile) {
  Json p = Profile("Paused");
  p["metadata"]["annotations"] = {{"booster.dev/paused", "true"}};
  p["spec"]["rollout"]["paused"] = true;
  absl::StatusOr<Action> a = PlanAction(Verb::kResume, p, kNow);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->patch, Json::parse(R"({"metadata": {"resourceVersion": "42",
                                        "annotations": {"booster.dev/paused": null}},
                                      "spec": {"rollout": {"paused": false}}})"));
  EXPECT_EQ(a->summary,
            "boosterprofile \"web\" resumed (annotation booster.dev/paused removed, "
            "spec.rollout.paused set to false): the rollout goes on at step 2, whose observation "
            "window starts again");

  absl::StatusOr<Action> refused = PlanAction(Verb::kResume, Profile("Progressing"), kNow);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("it is not paused (Progressing)"));

  Json by_hpa = Profile("Paused");
  by_hpa["status"]["lastTransition"] = {
      {"reason", "Paused"},
      {"message", "paused at step 2: HorizontalPodAutoscaler web targets the Deployment"}};
  refused = PlanAction(Verb::kResume, by_hpa, kNow);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("HorizontalPodAutoscaler web"));
}

TEST(PlanActionTest, RefusalsSayWhy) {
  struct Case {
    Verb verb;
    const char* phase;
    const char* message;
  };
  for (const Case& c : {
           Case{Verb::kPromote, "Promoted", "it is already Promoted"},
           Case{Verb::kPromote, "Promoting", "already being promoted"},
           Case{Verb::kPromote, "RolledBack", "retry starts a new rollout"},
           Case{Verb::kAbort, "RolledBack", "it is already RolledBack"},
           Case{Verb::kAbort, "Promoted", "deleting the profile takes the tuning off"},
           Case{Verb::kRetry, "Progressing", "a rollout is in flight (Progressing)"},
           Case{Verb::kPause, "Promoted", "the rollout is over (Promoted)"},
           Case{Verb::kPause, "RollingBack", "finishes before anything else"},
       }) {
    absl::StatusOr<Action> a = PlanAction(c.verb, Profile(c.phase), kNow);
    ASSERT_FALSE(a.ok()) << VerbName(c.verb) << " " << c.phase;
    EXPECT_THAT(a.status().message(), HasSubstr(c.message));
  }
  Json no_status = Profile("Progressing");
  no_status.erase("status");
  absl::StatusOr<Action> a = PlanAction(Verb::kAbort, no_status, kNow);
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(a.status().message(), HasSubstr("has no status yet"));
  Json deleting = Profile("Progressing");
  deleting["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:00Z";
  a = PlanAction(Verb::kAbort, deleting, kNow);
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(a.status().message(), HasSubstr("is being deleted"));
}

}  // namespace
}  // namespace booster::plugin
