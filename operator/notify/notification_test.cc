#include "operator/notify/notification.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace booster::notify {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Json Parse(const char* s) { return Json::parse(s); }

TEST(ParseChannelsTest, DefaultsNamesKeysAndKinds) {
  absl::StatusOr<std::vector<Channel>> c = ParseChannels(Parse(R"([
    {"provider": "slack", "secretRef": {"name": "chat"}},
    {"name": "pager", "provider": "webhook", "secretRef": {"name": "hooks", "key": "url"},
     "events": ["RolledBack", "StepVerdict"]}])"));
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->size(), 2u);
  EXPECT_EQ((*c)[0].name, "default");
  EXPECT_EQ((*c)[0].secret_key, "address");
  EXPECT_EQ((*c)[0].kinds, DefaultKinds());
  EXPECT_EQ((*c)[0].kinds.count(Kind::kStepVerdict), 0u) << "step verdicts only when asked";
  EXPECT_EQ((*c)[1].name, "pager");
  EXPECT_EQ((*c)[1].secret_key, "url");
  EXPECT_EQ((*c)[1].kinds, (std::set<Kind>{Kind::kRolledBack, Kind::kStepVerdict}));
  EXPECT_TRUE(ParseChannels(Json()).ok());
  EXPECT_TRUE(ParseChannels(Json())->empty());
}

TEST(ParseChannelsTest, RefusalsNameTheField) {
  auto refused = [](const char* s) {
    absl::StatusOr<std::vector<Channel>> c = ParseChannels(Json::parse(s));
    return c.ok() ? std::string("accepted") : std::string(c.status().message());
  };
  EXPECT_THAT(refused(R"([{"provider": "email", "secretRef": {"name": "x"}}])"),
              HasSubstr("spec.notifications[0].provider: \"email\" is not one of"));
  EXPECT_THAT(refused(R"([{"provider": "slack"}])"),
              HasSubstr("spec.notifications[0].secretRef.name: required"));
  EXPECT_THAT(refused(R"([{"provider": "slack", "secretRef": {"name": "x"}, "events": ["Done"]}])"),
              HasSubstr("\"Done\" is not one of StepVerdict, Promoted"));
  EXPECT_THAT(refused(R"([{"name": "a", "provider": "slack", "secretRef": {"name": "x"}},
                          {"name": "a", "provider": "slack", "secretRef": {"name": "y"}}])"),
              HasSubstr("spec.notifications[1]: two notifications of one provider need"));
  EXPECT_THAT(refused(R"([{"provider": "slack", "secretRef": {"name": "x"}},
                          {"provider": "slack", "secretRef": {"name": "y"}}])"),
              HasSubstr("spec.notifications[1]: two notifications of one provider need"));
  EXPECT_EQ(refused(R"([{"name": "a", "provider": "slack", "secretRef": {"name": "x"}},
                        {"name": "a", "provider": "teams", "secretRef": {"name": "y"}}])"),
            "accepted");
  EXPECT_THAT(refused(R"({"provider": "slack"})"), HasSubstr("spec.notifications: must be a list"));
}

TEST(KindOfTest, TransitionsAndReasons) {
  EXPECT_EQ(KindOf({.reason = "Promoted", .transition_to = "Promoted"}), Kind::kPromoted);
  EXPECT_EQ(KindOf({.reason = "AnalysisFailed", .transition_to = "RollingBack"}),
            Kind::kRollingBack);
  EXPECT_EQ(KindOf({.reason = "RolledBack", .transition_to = "RolledBack"}), Kind::kRolledBack);
  EXPECT_EQ(KindOf({.reason = "TargetDeleted", .transition_to = "Failed"}), Kind::kFailed);
  // A step that passed is a step verdict whichever phase it moved to.
  EXPECT_EQ(KindOf({.reason = "StepPassed", .transition_to = "Progressing"}), Kind::kStepVerdict);
  EXPECT_EQ(KindOf({.reason = "StepPassed", .transition_to = "Promoting"}), Kind::kStepVerdict);
  EXPECT_EQ(KindOf({.reason = "StepExtended"}), Kind::kStepVerdict);
  EXPECT_EQ(KindOf({.reason = "DryRunAnalysisFailed"}), Kind::kStepVerdict);
  EXPECT_EQ(KindOf({.reason = "TargetHeld", .transition_to = "Pending"}), Kind::kConflict);
  EXPECT_EQ(KindOf({.reason = "ManagedElsewhere"}), Kind::kConflict);
  EXPECT_EQ(KindOf({.reason = "KnobsNotReached"}), Kind::kKnobsNotReached);
  EXPECT_EQ(KindOf({.reason = "RollbackStalled"}), Kind::kRollbackStalled);
  EXPECT_EQ(KindOf({.reason = "NewRevision", .transition_to = "Progressing"}), std::nullopt);
  EXPECT_EQ(KindOf({.reason = "ReplicasFollowed"}), std::nullopt);
}

const char kRolledBack[] = R"({
  "apiVersion": "booster.dev/v1alpha1", "kind": "BoosterProfile",
  "metadata": {"name": "bad", "namespace": "shop"},
  "spec": {"targetRef": {"kind": "Deployment", "name": "web"}},
  "status": {"phase": "RolledBack", "currentStep": 1,
    "lastDecision": {"verdict": "Fail", "step": 1, "reason": "AnalysisFailed",
      "message": "listenOverflows is worse", "evidence": {"judge": "metrics",
        "listenOverflows.verdict": "Fail", "listenOverflows.changePercent": "+inf",
        "listenOverflows.pValue": "1.2e-05", "latencyP99.verdict": "Pass",
        "latencyP99.changePercent": "3.5", "latencyP99.pValue": "0.41"}}}})";

TEST(BuildMessageTest, ADecisionCarriesItsEvidenceOneLinePerMetric) {
  const absl::Time t = absl::FromUnixSeconds(1796000000);
  Message m =
      BuildMessage(Json::parse(kRolledBack),
                   {"Warning", "RolledBack", "Deployment web is back to 4 replicas", "RolledBack"},
                   Kind::kRolledBack, t);
  EXPECT_EQ(m.ns, "shop");
  EXPECT_EQ(m.profile, "bad");
  EXPECT_EQ(m.target, "web");
  EXPECT_EQ(m.phase, "RolledBack");
  ASSERT_TRUE(m.decision.has_value());
  EXPECT_EQ(m.decision->reason, "AnalysisFailed");
  EXPECT_THAT(m.decision->metrics, ElementsAre("latencyP99: Pass, +3.5% (p=0.41)",
                                               "listenOverflows: Fail, +inf% (p=1.2e-05)"));
  // A promotion is not about a decision's evidence.
  EXPECT_FALSE(BuildMessage(Json::parse(kRolledBack), {"Normal", "Promoted", "", "Promoted"},
                            Kind::kPromoted, t)
                   .decision.has_value());
}

TEST(RenderPayloadTest, EachProviderGetsItsShape) {
  const absl::Time t = absl::FromUnixSeconds(1796000000);
  Message m = BuildMessage(
      Json::parse(kRolledBack),
      {"Warning", "AnalysisFailed", "step 1 failed: listenOverflows is worse", "RollingBack"},
      Kind::kRollingBack, t);
  Json hook = Json::parse(RenderPayload(Provider::kWebhook, m));
  EXPECT_EQ(hook["kind"], "BoosterNotification");
  EXPECT_EQ(hook["event"], "RollingBack");
  EXPECT_EQ(hook["reason"], "AnalysisFailed");
  EXPECT_EQ(hook["namespace"], "shop");
  EXPECT_EQ(hook["profile"], "bad");
  EXPECT_EQ(hook["time"], "2026-11-30T00:53:20Z");
  EXPECT_EQ(hook["decision"]["verdict"], "Fail");
  EXPECT_EQ(hook["decision"]["metrics"][1], "listenOverflows: Fail, +inf% (p=1.2e-05)");
  EXPECT_THAT(hook["summary"].get<std::string>(),
              HasSubstr("BoosterProfile shop/bad (Deployment web): rolling back (AnalysisFailed)"));

  Json slack = Json::parse(RenderPayload(Provider::kSlack, m));
  EXPECT_THAT(slack["text"].get<std::string>(), HasSubstr("rolling back (AnalysisFailed)"));
  EXPECT_EQ(slack["attachments"][0]["color"], "danger");
  EXPECT_THAT(slack["attachments"][0]["text"].get<std::string>(),
              HasSubstr("• listenOverflows: Fail, +inf% (p=1.2e-05)"));

  Json teams = Json::parse(RenderPayload(Provider::kTeams, m));
  EXPECT_EQ(teams["type"], "message");
  const Json& card = teams["attachments"][0];
  EXPECT_EQ(card["contentType"], "application/vnd.microsoft.card.adaptive");
  EXPECT_EQ(card["content"]["type"], "AdaptiveCard");
  EXPECT_THAT(card["content"]["body"][0]["text"].get<std::string>(),
              HasSubstr("rolling back (AnalysisFailed)"));
  EXPECT_EQ(card["content"]["body"][0]["color"], "Attention");

  // Text that needs escaping stays valid JSON in every shape.
  m.text = "quote \" backslash \\ newline \n tab \t and <b>html</b>";
  for (Provider p : {Provider::kSlack, Provider::kTeams, Provider::kWebhook}) {
    EXPECT_NO_THROW(Json::parse(RenderPayload(p, m))) << ProviderName(p);
  }
  EXPECT_EQ(Json::parse(RenderPayload(Provider::kWebhook, m))["message"], m.text);
}

TEST(RetryTest, DoublingFromTwoSecondsCappedAtAMinuteAndRetryAfterHonoured) {
  EXPECT_EQ(RetryDelay(1), absl::Seconds(2));
  EXPECT_EQ(RetryDelay(2), absl::Seconds(4));
  EXPECT_EQ(RetryDelay(3), absl::Seconds(8));
  EXPECT_EQ(RetryDelay(5), absl::Seconds(32));
  EXPECT_EQ(RetryDelay(6), absl::Seconds(60));
  EXPECT_EQ(RetryDelay(60), absl::Seconds(60));
  EXPECT_EQ(RetryDelay(1, "30"), absl::Seconds(30));
  EXPECT_EQ(RetryDelay(1, "86400"), absl::Minutes(10));
  EXPECT_EQ(RetryDelay(3, "Wed, 21 Oct 2015 07:28:00 GMT"), absl::Seconds(8));
  EXPECT_EQ(Classify(200), Answer::kDelivered);
  EXPECT_EQ(Classify(204), Answer::kDelivered);
  EXPECT_EQ(Classify(429), Answer::kRetry);
  EXPECT_EQ(Classify(503), Answer::kRetry);
  EXPECT_EQ(Classify(408), Answer::kRetry);
  EXPECT_EQ(Classify(404), Answer::kRefused);
  EXPECT_EQ(Classify(403), Answer::kRefused);
}

}  // namespace
}  // namespace booster::notify
