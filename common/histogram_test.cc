#include "common/histogram.h"

#include <cmath>

#include "gtest/gtest.h"

namespace booster {
namespace {

TEST(BucketQuantileTest, InterpolatesInsideTheBucketLikeHistogramQuantile) {
  // 100 observations: 50 in (0, 0.1], 40 in (0.1, 0.5], 10 in (0.5, 1].
  const Buckets b = {{0.1, 50}, {0.5, 90}, {1, 100}, {INFINITY, 100}};
  EXPECT_DOUBLE_EQ(BucketQuantile(0.5, b), 0.1);
  EXPECT_DOUBLE_EQ(BucketQuantile(0.25, b), 0.05);
  EXPECT_DOUBLE_EQ(BucketQuantile(0.9, b), 0.5);
  EXPECT_DOUBLE_EQ(BucketQuantile(0.99, b), 0.95);
  // Past the last finite bound: the bound itself.
  EXPECT_DOUBLE_EQ(BucketQuantile(0.99, {{0.1, 1}, {INFINITY, 10}}), 0.1);
  EXPECT_TRUE(std::isnan(BucketQuantile(0.5, {{0.1, 0}, {INFINITY, 0}})));
  EXPECT_TRUE(std::isnan(BucketQuantile(0.5, {})));
}

TEST(TailBucketQuantileTest, FollowsAPowerLawTailInsideTheBucketAndAgreesAtTheBounds) {
  // 1000 observations: 900 up to 10 ms, 990 up to 50 ms, 999 up to 100 ms.
  const Buckets b = {{0.01, 900}, {0.05, 990}, {0.1, 999}, {INFINITY, 1000}};
  // At the bounds both readings agree: the 0.9 and 0.99 quantiles are 10 and 50 ms.
  EXPECT_NEAR(TailBucketQuantile(0.9, b), 0.01, 1e-15);
  EXPECT_NEAR(TailBucketQuantile(0.99, b), 0.05, 1e-15);
  // Inside (10, 50] ms: 100 above 10 ms and 10 above 50 ms, a survival falling as x^-1.43;
  // 31.6 above the 0.9684 quantile (the geometric middle of the counts) puts it at the
  // geometric middle of the bounds, sqrt(10 * 50) ms, where the linear reading says 45 ms.
  const double q = 1 - std::sqrt(100.0 * 10) / 1000;
  EXPECT_NEAR(TailBucketQuantile(q, b), std::sqrt(0.01 * 0.05), 1e-12);
  EXPECT_NEAR(BucketQuantile(q, b), 0.01 + 0.04 * (q * 1000 - 900) / 90, 1e-12);
  // Where the power law is not defined it reads as BucketQuantile: the first bucket (from
  // 0), the bucket holding every observation left, the +Inf bucket.
  EXPECT_DOUBLE_EQ(TailBucketQuantile(0.5, b), BucketQuantile(0.5, b));
  const Buckets top = {{0.01, 900}, {0.05, 1000}, {INFINITY, 1000}};
  EXPECT_DOUBLE_EQ(TailBucketQuantile(0.95, top), BucketQuantile(0.95, top));
  EXPECT_DOUBLE_EQ(TailBucketQuantile(0.9995, b), 0.1);
  EXPECT_TRUE(std::isnan(TailBucketQuantile(0.5, {})));
}

TEST(CheckBucketsTest, SaysWhatIsWrongWithAHistogram) {
  EXPECT_EQ(CheckBuckets({{0.1, 5}, {INFINITY, 7}}), "");
  EXPECT_EQ(CheckBuckets({}), "no bucket");
  EXPECT_EQ(CheckBuckets({{0.1, 5}, {1, 7}}), "the last bucket is not +Inf");
  EXPECT_EQ(CheckBuckets({{0.1, 5}, {0.1, 6}, {INFINITY, 7}}), "bounds are not strictly ascending");
  EXPECT_EQ(CheckBuckets({{0.1, 5}, {NAN, 6}, {INFINITY, 7}}), "a bound is not a number");
  EXPECT_EQ(CheckBuckets({{0.1, 5}, {INFINITY, 4}}), "cumulative counts decrease");
  EXPECT_EQ(CheckBuckets({{0.1, -1}, {INFINITY, 4}}), "a count is negative or not finite");
  EXPECT_EQ(CheckBuckets({{0.1, 1}, {INFINITY, INFINITY}}), "a count is negative or not finite");
  Buckets many;
  for (size_t i = 0; i < kMaxBuckets; ++i) many.emplace_back(0.001 * (i + 1), i);
  many.emplace_back(INFINITY, kMaxBuckets);
  EXPECT_EQ(CheckBuckets(many), "more than 128 buckets");
}

TEST(AddBucketsTest, SumsHistogramsOfTheSameBoundsOnly) {
  Buckets sum;
  ASSERT_TRUE(AddBuckets({{0.1, 5}, {INFINITY, 7}}, sum));
  ASSERT_TRUE(AddBuckets({{0.1, 1}, {INFINITY, 3}}, sum));
  EXPECT_EQ(sum, (Buckets{{0.1, 6}, {INFINITY, 10}}));
  EXPECT_FALSE(AddBuckets({{0.2, 1}, {INFINITY, 3}}, sum));
  EXPECT_FALSE(AddBuckets({{0.1, 1}, {1, 2}, {INFINITY, 3}}, sum));
  EXPECT_EQ(sum, (Buckets{{0.1, 6}, {INFINITY, 10}}));
}

}  // namespace
}  // namespace booster
