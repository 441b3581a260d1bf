#include "common/go_runtime.h"

#include <cstdint>
#include <optional>

#include "gtest/gtest.h"

namespace booster {
namespace {

// The one rule for GOMAXPROCS, as the operator (no CPU count known) and the agent (the
// CPUs of its plan) apply it. docs/crd.md has the same table.
TEST(GoMaxProcsTest, TheWholeCoresOfTheLimitAtLeastOneNeverAboveTheCpusGranted) {
  struct Case {
    std::optional<int64_t> millis;
    std::optional<int> granted;
    std::optional<int> want;
  };
  const Case cases[] = {
      // CPU limit 0.5, 1, 1.5, 2 and none; the CPUs unknown (the operator's view).
      {500, std::nullopt, 1},
      {1000, std::nullopt, 1},
      {1500, std::nullopt, 1},
      {2000, std::nullopt, 2},
      {std::nullopt, std::nullopt, std::nullopt},
      // The same limits with 2 CPUs granted (the agent on the e2e node).
      {500, 2, 1},
      {1000, 2, 1},
      {1500, 2, 1},
      {2000, 2, 2},
      {std::nullopt, 2, 2},
      // Never above the CPUs granted: 2 cores of quota on a 1-CPU cpuset.
      {2000, 1, 1},
      {3999, 8, 3},
      {4000, 8, 4},
      {1, 8, 1},  // 1m: still one P
      // A limit of 0 (or negative) is no limit.
      {0, 4, 4},
      {-5, std::nullopt, std::nullopt},
      // Granted 0 CPUs is not a count.
      {1500, 0, 1},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(GoMaxProcsFor(c.millis, c.granted), c.want)
        << "limit " << c.millis.value_or(-1) << "m, granted " << c.granted.value_or(-1);
  }
}

TEST(GoMemLimitTest, PercentOfTheMemoryLimitExactInIntegers) {
  struct Case {
    const char* spec;
    std::optional<int64_t> limit;
    std::optional<int64_t> want;
  };
  const int64_t kMi = 1 << 20;
  const Case cases[] = {
      {"auto", 64 * kMi, 60397977},    // floor(67108864 * 0.9)
      {"auto", 512 * kMi, 483183820},  // floor(536870912 * 0.9)
      {"85%", 64 * kMi, 57042534},     // floor(67108864 * 0.85)
      {"100%", 64 * kMi, 64 * kMi},
      {"1%", 99, 0},  // floor(0.99)
      {"50%", 101, 50},
      {"auto", std::nullopt, std::nullopt},  // no memory limit: unset
      {"85%", 0, std::nullopt},
      {"auto", int64_t{1} << 62,
       (int64_t{1} << 62) / 100 * 90 + (int64_t{1} << 62) % 100 * 90 / 100},
  };
  for (const Case& c : cases) {
    std::optional<int> p = GoMemLimitPercent(c.spec);
    ASSERT_TRUE(p.has_value()) << c.spec;
    EXPECT_EQ(GoMemLimitBytes(c.limit, *p), c.want) << c.spec << " of " << c.limit.value_or(-1);
  }
}

TEST(GoMemLimitTest, OnlyAutoAndWholePercentagesAreShares) {
  EXPECT_EQ(GoMemLimitPercent("auto"), 90);
  EXPECT_EQ(GoMemLimitPercent("85%"), 85);
  EXPECT_EQ(GoMemLimitPercent("100%"), 100);
  for (const char* s :
       {"", "%", "0%", "101%", "085%", "8.5%", "-5%", "768MiB", "536870912", "AUTO", "85"}) {
    EXPECT_EQ(GoMemLimitPercent(s), std::nullopt) << s;
  }
  EXPECT_EQ(GoMemLimitBytes(100, 0), std::nullopt);
  EXPECT_EQ(GoMemLimitBytes(100, 101), std::nullopt);
}

}  // namespace
}  // namespace booster
