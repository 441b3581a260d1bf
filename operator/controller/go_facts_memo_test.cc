#include "operator/controller/go_facts_memo.h"

#include <optional>

#include "gtest/gtest.h"

namespace booster::controller {
namespace {

const rollout::GoFacts kGo126{.version = "go1.26.8", .cpus = 2, .default_godebug = ""};

TEST(GoFactsMemoTest, LiveFactsWithAVersionAreReturnedAndRemembered) {
  GoFactsMemo memo;
  EXPECT_EQ(memo.Resolve("ns/p", "web=img:1", kGo126), kGo126);
  // The trial's pods are gone: no agent reports, the target runs the same program.
  EXPECT_EQ(memo.Resolve("ns/p", "web=img:1", std::nullopt), kGo126);
}

TEST(GoFactsMemoTest, AnotherProgramIsNotJudgedByTheOldFacts) {
  GoFactsMemo memo;
  memo.Resolve("ns/p", "web=img:1", kGo126);
  EXPECT_EQ(memo.Resolve("ns/p", "web=img:2", std::nullopt), std::nullopt);
  // Nor another profile.
  EXPECT_EQ(memo.Resolve("ns/q", "web=img:1", std::nullopt), std::nullopt);
}

TEST(GoFactsMemoTest, AnUnreadVersionDoesNotHideAKnownOneOfTheSameProgram) {
  GoFactsMemo memo;
  memo.Resolve("ns/p", "web=img:1", kGo126);
  const rollout::GoFacts unread{.version = "", .cpus = 2, .default_godebug = ""};
  EXPECT_EQ(memo.Resolve("ns/p", "web=img:1", unread), kGo126);
  EXPECT_EQ(memo.Resolve("ns/p", "web=img:2", unread), unread);
}

TEST(GoFactsMemoTest, NewerLiveFactsReplaceTheRememberedOnes) {
  GoFactsMemo memo;
  memo.Resolve("ns/p", "web=img:1", kGo126);
  const rollout::GoFacts one_cpu{.version = "go1.26.8", .cpus = 1, .default_godebug = ""};
  memo.Resolve("ns/p", "web=img:1", one_cpu);
  EXPECT_EQ(memo.Resolve("ns/p", "web=img:1", std::nullopt), one_cpu);
}

TEST(GoFactsMemoTest, AForgottenProfileHasNoFacts) {
  GoFactsMemo memo;
  memo.Resolve("ns/p", "web=img:1", kGo126);
  memo.Forget("ns/p");
  EXPECT_EQ(memo.Resolve("ns/p", "web=img:1", std::nullopt), std::nullopt);
}

}  // namespace
}  // namespace booster::controller
