#include "operator/analysis/distributions.h"

#include <cmath>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace booster::analysis {
namespace {

TEST(DistributionsTest, NormalMatchesTables) {
  EXPECT_NEAR(NormalUpper(0), 0.5, 1e-15);
  EXPECT_NEAR(NormalUpper(1.959963984540054), 0.025, 1e-12);
  EXPECT_NEAR(NormalUpper(3.090232306167814), 0.001, 1e-12);
  EXPECT_NEAR(NormalQuantile(0.975), 1.959963984540054, 1e-10);
  EXPECT_NEAR(NormalQuantile(0.001), -3.090232306167814, 1e-10);
  EXPECT_NEAR(NormalQuantile(1e-8), -5.612001244174789, 1e-8);
}

TEST(DistributionsTest, StudentTMatchesTables) {
  // Critical values of the t distribution (two-sided 5% and one-sided 0.5%).
  EXPECT_NEAR(StudentTQuantile(0.975, 1), 12.70620473617471, 1e-8);
  EXPECT_NEAR(StudentTQuantile(0.975, 5), 2.570581835636314, 1e-9);
  EXPECT_NEAR(StudentTQuantile(0.975, 30), 2.042272456301238, 1e-9);
  EXPECT_NEAR(StudentTQuantile(0.995, 11), 3.105806516224500, 1e-9);
  EXPECT_NEAR(StudentTUpper(2.570581835636314, 5), 0.025, 1e-12);
  EXPECT_NEAR(StudentTUpper(-2.570581835636314, 5), 0.975, 1e-12);
  EXPECT_NEAR(StudentTUpper(0, 7), 0.5, 1e-15);
  // df 1 is the Cauchy: P(T >= 1) = 1/4.
  EXPECT_NEAR(StudentTUpper(1, 1), 0.25, 1e-12);
  EXPECT_NEAR(StudentTQuantile(0.3, 4), -StudentTQuantile(0.7, 4), 1e-12);
}

TEST(DistributionsTest, BinomialTailsAndBounds) {
  EXPECT_NEAR(BinomialUpper(20, 20, 0.5), std::pow(0.5, 20), 1e-18);
  EXPECT_NEAR(BinomialUpper(1, 10, 0.1), 1 - std::pow(0.9, 10), 1e-12);
  EXPECT_NEAR(BinomialUpper(3, 5, 0.5), 0.5, 1e-12);  // 16/32
  EXPECT_EQ(BinomialUpper(0, 5, 0.3), 1);
  EXPECT_EQ(BinomialUpper(6, 5, 0.3), 0);
  // Clopper-Pearson: 0 of n gives 1 - alpha^(1/n); the rule of three for alpha 0.05.
  EXPECT_NEAR(BinomialUpperBound(0, 100, 0.05), 1 - std::pow(0.05, 0.01), 1e-10);
  EXPECT_NEAR(BinomialUpperBound(0, 1000, 0.05), 0.0029914, 1e-6);
  // 5 of 10: the two-sided 95% interval's upper limit is 0.8129 (published tables), the
  // one-sided bound at alpha 0.025.
  EXPECT_NEAR(BinomialUpperBound(5, 10, 0.025), 0.812914, 1e-5);
  EXPECT_EQ(BinomialUpperBound(10, 10, 0.05), 1);
  EXPECT_EQ(BinomialUpperBound(0, 0, 0.05), 1);
}

TEST(DistributionsTest, IncompleteBetaEdgesAndSymmetry) {
  EXPECT_EQ(RegularizedIncompleteBeta(2, 3, 0), 0);
  EXPECT_EQ(RegularizedIncompleteBeta(2, 3, 1), 1);
  EXPECT_NEAR(RegularizedIncompleteBeta(1, 1, 0.3), 0.3, 1e-14);
  EXPECT_NEAR(RegularizedIncompleteBeta(2.5, 4, 0.35) + RegularizedIncompleteBeta(4, 2.5, 0.65),
              1, 1e-13);
}

TEST(DistributionsTest, RepeatedLooksMatchPocockTables) {
  // Pocock's constants for K equally spaced looks at two-sided 0.05 (one-sided 0.025), as
  // published (Jennison and Turnbull, table 2.1).
  const std::pair<int, double> pocock[] = {{2, 2.178}, {3, 2.289}, {4, 2.361}, {5, 2.413},
                                           {10, 2.555}};
  for (const auto& [k, c] : pocock) {
    std::vector<double> times;
    for (int i = 1; i <= k; ++i) times.push_back(i);
    const double nominal = RepeatedLooksAlpha(0.025, times);
    EXPECT_NEAR(NormalQuantile(1 - nominal), c, 0.002) << k << " looks";
    EXPECT_NEAR(RepeatedLooksCrossing(c, times), 0.025, 0.0005) << k << " looks";
    // Between one look's level and Bonferroni's.
    EXPECT_LT(nominal, 0.025);
    EXPECT_GT(nominal, 0.025 / k);
  }
  // The scale of the times does not matter; one look is the level itself.
  EXPECT_NEAR(RepeatedLooksAlpha(0.05, {12, 24, 36}), RepeatedLooksAlpha(0.05, {1, 2, 3}), 1e-6);
  EXPECT_EQ(RepeatedLooksAlpha(0.05, {7}), 0.05);
  // A first look with less evidence (a warm-up) is less correlated with the next: a little
  // stricter than equal spacing.
  EXPECT_LT(RepeatedLooksAlpha(0.05, {0.5, 1.5, 2.5}), RepeatedLooksAlpha(0.05, {1, 2, 3}));
}

}  // namespace
}  // namespace booster::analysis
