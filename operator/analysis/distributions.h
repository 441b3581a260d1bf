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

}  // namespace booster::analysis

#endif  // BOOSTER_OPERATOR_ANALYSIS_DISTRIBUTIONS_H_
