#include "operator/analysis/mann_whitney.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace booster::analysis {
namespace {

// U of x by definition: pairs with x_i > y_j, ties one half.
double DirectU(const std::vector<double>& x, const std::vector<double>& y) {
  double u = 0;
  for (double a : x) {
    for (double b : y) u += a > b ? 1.0 : (a == b ? 0.5 : 0.0);
  }
  return u;
}

// The permutation p-value by brute force: every way of labelling nx of the pooled values x.
double EnumeratedP(const std::vector<double>& x, const std::vector<double>& y) {
  std::vector<double> pooled(x);
  pooled.insert(pooled.end(), y.begin(), y.end());
  const int n = static_cast<int>(pooled.size());
  const double observed = DirectU(x, y);
  int64_t total = 0;
  int64_t at_least = 0;
  for (uint32_t mask = 0; mask < (1u << n); ++mask) {
    if (__builtin_popcount(mask) != static_cast<int>(x.size())) continue;
    std::vector<double> a, b;
    for (int i = 0; i < n; ++i) ((mask >> i) & 1u ? a : b).push_back(pooled[i]);
    ++total;
    if (DirectU(a, b) >= observed - 1e-9) ++at_least;
  }
  return static_cast<double>(at_least) / static_cast<double>(total);
}

TEST(MannWhitneyTest, CompleteSeparationHasTheSmallestExactPValue) {
  // P(U = 9) for 3 vs 3 is 1 / C(6, 3) = 1/20; for 4 vs 4 it is 1/70.
  RankTest t = MannWhitneyGreater({3, 4, 5}, {0, 1, 2});
  EXPECT_TRUE(t.exact);
  EXPECT_DOUBLE_EQ(t.u, 9);
  EXPECT_DOUBLE_EQ(t.p_value, 1.0 / 20);
  EXPECT_DOUBLE_EQ(MannWhitneyGreater({5, 6, 7, 8}, {1, 2, 3, 4}).p_value, 1.0 / 70);
  // The other way round nothing is larger: P(U >= 0) = 1.
  t = MannWhitneyGreater({0, 1, 2}, {3, 4, 5});
  EXPECT_DOUBLE_EQ(t.u, 0);
  EXPECT_DOUBLE_EQ(t.p_value, 1);
  // 12 vs 12 (the power test's size): 1 / C(24, 12).
  std::vector<double> lo, hi;
  for (int i = 0; i < 12; ++i) {
    lo.push_back(i);
    hi.push_back(100 + i);
  }
  EXPECT_NEAR(MannWhitneyGreater(hi, lo).p_value, 1.0 / 2704156, 1e-18);
}

TEST(MannWhitneyTest, MatchesRsWilcoxTestOnItsOwnExample) {
  // R's ?wilcox.test (Hollander & Wolfe, permeability constants):
  // wilcox.test(x, y, alternative = "greater") gives W = 35, p-value = 0.1272 (= 382/3003).
  const std::vector<double> x = {0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46};
  const std::vector<double> y = {1.15, 0.88, 0.90, 0.74, 1.21};
  RankTest t = MannWhitneyGreater(x, y);
  EXPECT_TRUE(t.exact);
  EXPECT_DOUBLE_EQ(t.u, 35);
  EXPECT_NEAR(t.p_value, 382.0 / 3003, 1e-12);
  // The other direction (smaller sample first): U = 15, P(U >= 15) = 2693/3003.
  t = MannWhitneyGreater(y, x);
  EXPECT_DOUBLE_EQ(t.u, 15);
  EXPECT_NEAR(t.p_value, 2693.0 / 3003, 1e-12);
  // The normal approximation with continuity correction, by hand:
  // z = (35 - 25 - 0.5) / sqrt(10 * 5 / 12 * 16) = 1.16351, 1 - Phi(z) = 0.122312.
  t = MannWhitneyGreater(x, y, RankMethod::kNormal);
  EXPECT_FALSE(t.exact);
  EXPECT_NEAR(t.p_value, 0.1223118, 1e-6);
}

TEST(MannWhitneyTest, TiesAreExactToo) {
  // Canary {0, 1, 1} vs baseline {0, 0, 0, 0}: the pool is five 0s and two 1s, U = 10 is
  // reached only when x holds both 1s: C(5, 1) / C(7, 3) = 5/35 = 1/7.
  RankTest t = MannWhitneyGreater({0, 1, 1}, {0, 0, 0, 0});
  EXPECT_TRUE(t.exact);
  EXPECT_DOUBLE_EQ(t.u, 10);
  EXPECT_NEAR(t.p_value, 1.0 / 7, 1e-12);
  // Everything tied: no evidence at all, by both methods.
  EXPECT_DOUBLE_EQ(MannWhitneyGreater({0, 0, 0}, {0, 0, 0, 0}).p_value, 1);
  EXPECT_DOUBLE_EQ(MannWhitneyGreater({0, 0, 0}, {0, 0, 0, 0}, RankMethod::kNormal).p_value, 1);
}

TEST(MannWhitneyTest, ExactEqualsEnumerationOnRandomTiedSamples) {
  std::mt19937_64 rng(20240611);
  for (int trial = 0; trial < 60; ++trial) {
    const int nx = 1 + static_cast<int>(rng() % 7);
    const int ny = 1 + static_cast<int>(rng() % 7);
    const int levels = 2 + static_cast<int>(rng() % 5);  // few levels: many ties
    std::vector<double> x, y;
    for (int i = 0; i < nx; ++i) x.push_back(static_cast<double>(rng() % levels));
    for (int i = 0; i < ny; ++i) y.push_back(static_cast<double>(rng() % levels) * 1.0);
    SCOPED_TRACE(::testing::Message() << "trial " << trial << " nx=" << nx << " ny=" << ny);
    RankTest t = MannWhitneyGreater(x, y, RankMethod::kExact);
    EXPECT_DOUBLE_EQ(t.u, DirectU(x, y));
    EXPECT_NEAR(t.p_value, EnumeratedP(x, y), 1e-12);
  }
}

TEST(MannWhitneyTest, NormalApproximationTracksTheExactTail) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal;
  std::vector<double> x, y;
  for (int i = 0; i < 30; ++i) {
    x.push_back(normal(rng) + 0.8);
    y.push_back(normal(rng));
  }
  const double exact = MannWhitneyGreater(x, y, RankMethod::kExact).p_value;
  const double approx = MannWhitneyGreater(x, y, RankMethod::kNormal).p_value;
  ASSERT_LT(exact, 0.05);
  EXPECT_NEAR(approx / exact, 1.0, 0.1);
}

TEST(MannWhitneyTest, LargeSamplesSwitchToTheNormalApproximation) {
  std::vector<double> x, y;
  for (int i = 0; i < 400; ++i) {
    x.push_back(i + 0.5);
    y.push_back(i);
  }
  RankTest t = MannWhitneyGreater(x, y);
  EXPECT_FALSE(t.exact);
  EXPECT_GT(t.p_value, 0.3);  // a half-rank shift in 400 is nothing
  for (double& v : x) v += 40;
  EXPECT_LT(MannWhitneyGreater(x, y).p_value, 1e-3);
}

TEST(MannWhitneyTest, AnEmptySampleIsNoEvidence) {
  EXPECT_DOUBLE_EQ(MannWhitneyGreater({}, {1, 2}).p_value, 1);
  EXPECT_DOUBLE_EQ(MannWhitneyGreater({1, 2}, {}).p_value, 1);
}

}  // namespace
}  // namespace booster::analysis
