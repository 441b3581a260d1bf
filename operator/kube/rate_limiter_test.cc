#include "operator/kube/rate_limiter.h"

#include "gtest/gtest.h"

namespace booster::kube {
namespace {

TEST(TokenBucketTest, BurstThenRate) {
  FakeClock clock;
  TokenBucket b(10, 3, &clock);
  EXPECT_EQ(b.Reserve(), absl::ZeroDuration());
  EXPECT_EQ(b.Reserve(), absl::ZeroDuration());
  EXPECT_EQ(b.Reserve(), absl::ZeroDuration());
  EXPECT_EQ(b.Reserve(), absl::Milliseconds(100));
  EXPECT_EQ(b.Reserve(), absl::Milliseconds(200));
  clock.Advance(absl::Milliseconds(200));
  EXPECT_EQ(b.Reserve(), absl::Milliseconds(100));
}

TEST(TokenBucketTest, RefillIsCappedAtBurst) {
  FakeClock clock;
  TokenBucket b(1, 2, &clock);
  EXPECT_TRUE(b.TryAccept());
  EXPECT_TRUE(b.TryAccept());
  EXPECT_FALSE(b.TryAccept());
  clock.Advance(absl::Hours(1));
  EXPECT_TRUE(b.TryAccept());
  EXPECT_TRUE(b.TryAccept());
  EXPECT_FALSE(b.TryAccept());
  clock.Advance(absl::Milliseconds(999));
  EXPECT_FALSE(b.TryAccept());
  clock.Advance(absl::Milliseconds(1));
  EXPECT_TRUE(b.TryAccept());
}

TEST(TokenBucketTest, ZeroQpsDisablesLimiting) {
  FakeClock clock;
  TokenBucket b(0, 1, &clock);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(b.Reserve(), absl::ZeroDuration());
}

TEST(ItemExponentialRateLimiterTest, PerItemDoublingAndForget) {
  ItemExponentialRateLimiter r(absl::Milliseconds(5), absl::Seconds(1000));
  EXPECT_EQ(r.When("a"), absl::Milliseconds(5));
  EXPECT_EQ(r.When("a"), absl::Milliseconds(10));
  EXPECT_EQ(r.When("a"), absl::Milliseconds(20));
  EXPECT_EQ(r.When("b"), absl::Milliseconds(5)) << "items are independent";
  EXPECT_EQ(r.NumRequeues("a"), 3);
  r.Forget("a");
  EXPECT_EQ(r.NumRequeues("a"), 0);
  EXPECT_EQ(r.When("a"), absl::Milliseconds(5));
}

TEST(ItemExponentialRateLimiterTest, CappedAndNoOverflow) {
  ItemExponentialRateLimiter r(absl::Milliseconds(5), absl::Seconds(1000));
  absl::Duration last;
  for (int i = 0; i < 200; ++i) last = r.When("x");
  EXPECT_EQ(last, absl::Seconds(1000));
}

TEST(DefaultControllerRateLimiterTest, MaxOfPerItemAndOverallBucket) {
  FakeClock clock;
  auto r = DefaultControllerRateLimiter(&clock);
  // 100 distinct items fit in the burst: each waits only its own 5 ms.
  for (int i = 0; i < 100; ++i) EXPECT_EQ(r->When("k" + std::to_string(i)), absl::Milliseconds(5));
  // The 101st waits for the bucket (10 qps -> 100 ms), longer than its 5 ms.
  EXPECT_EQ(r->When("k100"), absl::Milliseconds(100));
  // A failing item backs off per item once that exceeds the bucket's wait.
  clock.Advance(absl::Hours(1));
  absl::Duration d;
  for (int i = 0; i < 12; ++i) d = r->When("hot");
  EXPECT_EQ(d, absl::Milliseconds(5 * 2048));
  EXPECT_EQ(r->NumRequeues("hot"), 12);
  r->Forget("hot");
  EXPECT_EQ(r->NumRequeues("hot"), 0);
}

}  // namespace
}  // namespace booster::kube
