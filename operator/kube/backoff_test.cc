#include "operator/kube/backoff.h"

#include "gtest/gtest.h"

namespace booster::kube {
namespace {

TEST(BackoffTest, DoublesUpToTheCap) {
  Backoff b(absl::Milliseconds(800), absl::Seconds(30));
  EXPECT_EQ(b.Next(), absl::Milliseconds(800));
  EXPECT_EQ(b.Next(), absl::Milliseconds(1600));
  EXPECT_EQ(b.Next(), absl::Milliseconds(3200));
  EXPECT_EQ(b.Next(), absl::Milliseconds(6400));
  EXPECT_EQ(b.Next(), absl::Milliseconds(12800));
  EXPECT_EQ(b.Next(), absl::Milliseconds(25600));
  EXPECT_EQ(b.Next(), absl::Seconds(30));
  EXPECT_EQ(b.Next(), absl::Seconds(30));
}

TEST(BackoffTest, ResetStartsOver) {
  Backoff b(absl::Milliseconds(800), absl::Seconds(30));
  b.Next();
  b.Next();
  b.Reset();
  EXPECT_EQ(b.Next(), absl::Milliseconds(800));
}

TEST(BackoffTest, JitterStretchesWithinBounds) {
  Backoff b(absl::Seconds(1), absl::Seconds(1), 2.0, 0.5, 42);
  bool varied = false;
  absl::Duration first = b.Next();
  for (int i = 0; i < 100; ++i) {
    absl::Duration d = b.Next();
    EXPECT_GE(d, absl::Seconds(1));
    EXPECT_LE(d, absl::Milliseconds(1500));
    if (d != first) varied = true;
  }
  EXPECT_TRUE(varied);
}

}  // namespace
}  // namespace booster::kube
