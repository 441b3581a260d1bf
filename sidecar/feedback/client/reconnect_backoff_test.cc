#include "sidecar/feedback/client/reconnect_backoff.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace booster::agent {
namespace {

TEST(ReconnectBackoffTest, WithoutJitterDoublesFromOneSecondToThirty) {
  ReconnectBackoff b(/*seed=*/1, {.jitter = 0});
  std::vector<absl::Duration> got;
  for (int i = 0; i < 8; ++i) got.push_back(b.Next());
  const std::vector<absl::Duration> want = {absl::Seconds(1),  absl::Seconds(2),  absl::Seconds(4),
                                            absl::Seconds(8),  absl::Seconds(16), absl::Seconds(30),
                                            absl::Seconds(30), absl::Seconds(30)};
  EXPECT_EQ(got, want);
}

TEST(ReconnectBackoffTest, JitterOnlyShortensAndStaysWithinItsShare) {
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    ReconnectBackoff b(seed);  // defaults: 1 s, 30 s, jitter 0.2
    absl::Duration base = absl::Seconds(1);
    for (int i = 0; i < 10; ++i) {
      EXPECT_EQ(b.Peek(), base);
      const absl::Duration d = b.Next();
      EXPECT_LE(d, base) << "seed " << seed << " attempt " << i;
      EXPECT_GE(d, base * 0.8) << "seed " << seed << " attempt " << i;
      base = std::min(base * 2, absl::Seconds(30));
    }
  }
}

TEST(ReconnectBackoffTest, AgentsWithDifferentSeedsSpreadOut) {
  std::set<int64_t> first_delays;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    ReconnectBackoff b(seed);
    first_delays.insert(absl::ToInt64Microseconds(b.Next()));
  }
  EXPECT_GE(first_delays.size(), 15u) << "20 agents cut off together retry at 20 moments";
  ReconnectBackoff a(7);
  ReconnectBackoff same(7);
  EXPECT_EQ(a.Next(), same.Next()) << "a seed makes the sequence reproducible";
}

TEST(ReconnectBackoffTest, ResetStartsOverAtTheInitialDelay) {
  ReconnectBackoff b(/*seed=*/3,
                     {.initial = absl::Milliseconds(500), .max = absl::Seconds(4), .jitter = 0});
  EXPECT_EQ(b.Next(), absl::Milliseconds(500));
  EXPECT_EQ(b.Next(), absl::Seconds(1));
  EXPECT_EQ(b.Next(), absl::Seconds(2));
  EXPECT_EQ(b.Next(), absl::Seconds(4));
  EXPECT_EQ(b.Next(), absl::Seconds(4));
  b.Reset();
  EXPECT_EQ(b.Next(), absl::Milliseconds(500));
}

}  // namespace
}  // namespace booster::agent
