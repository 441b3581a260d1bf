#include "operator/feedback/reach_tracker.h"

#include "gtest/gtest.h"

namespace booster::feedback {
namespace {

AgentIdentity Agent(const std::string& pod, Arm arm, const std::string& profile = "shop/web") {
  AgentIdentity a;
  a.pod_namespace = "shop";
  a.pod_name = pod;
  a.arm = arm;
  a.profile = profile;
  return a;
}

AppliedReport Report(std::vector<KnobResult> knobs) {
  AppliedReport r;
  r.generation = 1;
  r.knobs = std::move(knobs);
  return r;
}

TEST(ReachTrackerTest, SummarisesTheKnobsThatDidNotReachTheCanaryPods) {
  ReachTracker t;
  EXPECT_EQ(t.Summary("shop/web").pods, 0);
  const KnobResult applied{"runtime.listen_backlog", KnobOutcome::kApplied, ""};
  const KnobResult unreached{"placement", KnobOutcome::kNotReachable,
                             "static binary: libbooster.so is not loaded"};
  t.Applied(Agent("c1", Arm::kCanary), Report({applied, unreached}));
  t.Applied(Agent("c2", Arm::kCanary), Report({applied, unreached}));
  t.Applied(Agent("c3", Arm::kCanary), Report({applied}));
  // Baseline pods and other profiles do not count.
  t.Applied(Agent("b1", Arm::kBaseline), Report({unreached}));
  t.Applied(Agent("o1", Arm::kCanary, "shop/other"), Report({unreached}));
  ReachSummary s = t.Summary("shop/web");
  EXPECT_EQ(s.pods, 3);
  ASSERT_EQ(s.not_reached.size(), 1u);
  EXPECT_EQ(s.not_reached[0].knob, "placement");
  EXPECT_EQ(s.not_reached[0].outcome, KnobOutcome::kNotReachable);
  EXPECT_EQ(s.not_reached[0].reason, "static binary: libbooster.so is not loaded");
  EXPECT_EQ(s.not_reached[0].pods, 2);

  // A newer Applied replaces the pod's older one; a closed stream forgets the pod.
  t.Applied(Agent("c1", Arm::kCanary), Report({applied}));
  t.StreamClosed(Agent("c2", Arm::kCanary));
  s = t.Summary("shop/web");
  EXPECT_EQ(s.pods, 2);
  EXPECT_TRUE(s.not_reached.empty());
  t.StreamClosed(Agent("c1", Arm::kCanary));
  t.StreamClosed(Agent("c3", Arm::kCanary));
  EXPECT_EQ(t.Summary("shop/web").pods, 0);
}

TEST(ReachTrackerTest, AFailedKnobCountsAsNotReached) {
  ReachTracker t;
  t.Applied(Agent("c1", Arm::kCanary),
            Report({{"sysctl.net.core.somaxconn", KnobOutcome::kFailed, "EPERM"}}));
  ReachSummary s = t.Summary("shop/web");
  ASSERT_EQ(s.not_reached.size(), 1u);
  EXPECT_EQ(s.not_reached[0].outcome, KnobOutcome::kFailed);
}

TEST(ReachTrackerTest, KeepsTheProgramFactsOfOpenStreamsOfEveryArm) {
  ReachTracker t;
  EXPECT_EQ(t.Facts("shop/web"), std::nullopt);
  t.AppFactsReported(Agent("a1", Arm::kBaseline), {.go_version = "", .cpus = 2});
  EXPECT_EQ(t.Facts("shop/web")->cpus, 2);  // any facts, until one knows the version
  t.AppFactsReported(Agent("b1", Arm::kCanary), {.go_version = "go1.26.0", .cpus = 2});
  EXPECT_EQ(t.Facts("shop/web")->go_version, "go1.26.0");
  EXPECT_EQ(t.Facts("shop/other"), std::nullopt);
  t.StreamClosed(Agent("b1", Arm::kCanary));
  EXPECT_EQ(t.Facts("shop/web")->go_version, "");
  t.StreamClosed(Agent("a1", Arm::kBaseline));
  EXPECT_EQ(t.Facts("shop/web"), std::nullopt);
}

class Counting final : public FeedbackObserver {
 public:
  void Applied(const AgentIdentity&, const AppliedReport&) override { ++applied; }
  void StreamClosed(const AgentIdentity&) override { ++closed; }
  int applied = 0, closed = 0;
};

TEST(FanOutObserverTest, CallsEveryObserver) {
  Counting a, b;
  FanOutObserver f({&a, &b});
  f.Applied(Agent("c1", Arm::kCanary), Report({}));
  f.StreamClosed(Agent("c1", Arm::kCanary));
  EXPECT_EQ(a.applied + b.applied, 2);
  EXPECT_EQ(a.closed + b.closed, 2);
}

}  // namespace
}  // namespace booster::feedback
