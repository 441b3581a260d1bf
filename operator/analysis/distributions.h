// The distributions the judge needs beyond ranks: the normal, Student's t and the binomial,
// from the regularized incomplete beta function. Pure and thread-safe; accurate to about
// 1e-12 relative over the range the judge uses (checked against published tables in
// distributions_test.cc).
//
//   double p = StudentTUpper(t, df);          // P(T >= t)
//   double crit = StudentTQuantile(1 - a, df);
//   double tail = BinomialUpper(k, n, p0);    // P(X >= k), X ~ Binomial(n, p0)
#ifndef BOOSTER_OPERATOR_ANALYSIS_DISTRIBUTIONS_H_
#define BOOSTER_OPERATOR_ANALYSIS_DISTRIBUTIONS_H_

#include <cstdint>
#include <vector>

namespace booster::analysis {

// I_x(a, b), a, b > 0, x in [0, 1].
double RegularizedIncompleteBeta(double a, double b, double x);

double NormalUpper(double z);       // P(Z >= z)
double NormalQuantile(double p);    // z with P(Z <= z) = p, p in (0, 1)
double StudentTUpper(double t, double df);     // P(T >= t), df > 0 (inf: the normal)
double StudentTQuantile(double p, double df);  // t with P(T <= t) = p

// P(X >= k) for X ~ Binomial(n, p); 1 for k <= 0, 0 for k > n.
double BinomialUpper(int64_t k, int64_t n, double p);
// The one-sided Clopper-Pearson upper bound on p after k successes in n trials at level
// 1 - alpha: the p with P(X <= k) = alpha. 1 when k >= n; for n = 0, 1.
double BinomialUpperBound(int64_t k, int64_t n, double alpha);

// Repeated looks at accumulating evidence (a group-sequential design): the one-sided level
// each look is held to so that, under the null, a statistic that is a standardized Brownian
// motion observed at information `times` (increasing, any scale) crosses at any look with
// probability `alpha`. The boundary is one constant c at every look (Pocock's), found by
// numerical integration (Armitage, McPherson and Rowe's recursion); returned as
// P(Z >= c). One look (or none): alpha. Looks at evidence more correlated than a Brownian
// motion's (part of the noise does not average out) cross less often, so it stays within
// alpha. Memoized: the judge asks for the same few designs at every look.
double RepeatedLooksAlpha(double alpha, const std::vector<double>& times);
// The probability that the standardized Brownian motion above reaches c at one of `times`.
double RepeatedLooksCrossing(double c, const std::vector<double>& times);

}  // namespace booster::analysis

#endif  // BOOSTER_OPERATOR_ANALYSIS_DISTRIBUTIONS_H_
