// The one-sided Mann-Whitney U (Wilcoxon rank-sum) test with ties: the judge's evidence that
// one sample of windows tends to be larger than another, with no assumption about how the
// values are distributed (latency windows are skewed and heavy-tailed; ranks do not care).
//
// Small samples get the exact permutation distribution of the (mid)rank sum, computed by
// dynamic programming over the tie pattern actually observed, so ties (a column of zero
// error rates) are exact too. Past a work bound the normal approximation with tie and
// continuity correction takes over. Pure and thread-safe; distributions without ties are
// cached per sample size.
//
//   RankTest t = MannWhitneyGreater(canary_p99, baseline_p99);
//   if (t.p_value <= alpha) { /* the canary's windows tend to be larger */ }
#ifndef BOOSTER_OPERATOR_ANALYSIS_MANN_WHITNEY_H_
#define BOOSTER_OPERATOR_ANALYSIS_MANN_WHITNEY_H_

#include "absl/types/span.h"

namespace booster::analysis {

enum class RankMethod {
  kAuto,    // exact while the dynamic programme stays small, normal approximation past it
  kExact,   // always exact (tests; can be slow for large samples)
  kNormal,  // always the normal approximation
};

struct RankTest {
  // U of x: the number of pairs (x_i, y_j) with x_i > y_j, ties counting one half.
  double u = 0;
  // P(U >= u) when x and y come from one distribution: small means x tends to be larger.
  // 1 when either sample is empty.
  double p_value = 1;
  bool exact = false;
};

// One-sided test of "x tends to be larger than y". NaNs must be removed by the caller.
RankTest MannWhitneyGreater(absl::Span<const double> x, absl::Span<const double> y,
                            RankMethod method = RankMethod::kAuto);

}  // namespace booster::analysis

#endif  // BOOSTER_OPERATOR_ANALYSIS_MANN_WHITNEY_H_
