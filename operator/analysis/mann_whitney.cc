#include "operator/analysis/mann_whitney.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/const_init.h"
#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace booster::analysis {
namespace {

// Inner-loop steps of the exact dynamic programme (about 20 ms) past which the normal
// approximation takes over. 12 windows per arm cost ~7e3; 50 per arm ~5e5.
constexpr double kExactWorkLimit = 2e7;

// Tables of the tie-free distribution are kept for pooled samples up to this size.
constexpr int kCacheMaxPooled = 256;

using Pmf = std::vector<double>;

// pmf[s] = P(the k items drawn at random without replacement from `doubled` sum to s),
// `doubled` being twice the (mid)ranks, ascending, so every sum is an integer.
Pmf SubsetSumPmf(const std::vector<int64_t>& doubled, int k) {
  int64_t smax = 0;
  for (int i = 0; i < k; ++i) smax += doubled[doubled.size() - 1 - i];
  const size_t width = static_cast<size_t>(smax) + 1;
  // counts[j * width + s]: subsets of size j of the items seen so far summing to s. Counts
  // stay below C(N, N/2), which the work bound keeps far inside double's range.
  std::vector<double> counts((static_cast<size_t>(k) + 1) * width, 0.0);
  counts[0] = 1;
  int64_t reach = 0;  // largest sum reachable so far
  for (size_t i = 0; i < doubled.size(); ++i) {
    const int64_t d = doubled[i];
    reach = std::min(reach + d, smax);
    for (int j = std::min(static_cast<int>(i) + 1, k); j >= 1; --j) {
      double* row = &counts[static_cast<size_t>(j) * width];
      const double* prev = &counts[static_cast<size_t>(j - 1) * width];
      for (int64_t s = reach; s >= d; --s) row[s] += prev[s - d];
    }
  }
  Pmf pmf(counts.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(k) * width), counts.end());
  double total = 0;
  for (double c : pmf) total += c;
  for (double& p : pmf) p /= total;
  return pmf;
}

ABSL_CONST_INIT absl::Mutex cache_mu(absl::kConstInit);

// The tie-free distribution (doubled ranks 2, 4, ..., 2n) for k of n, computed once.
std::shared_ptr<const Pmf> TieFreePmf(int n, int k) {
  std::vector<int64_t> doubled(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) doubled[static_cast<size_t>(i)] = 2 * (i + 1);
  if (n > kCacheMaxPooled) return std::make_shared<const Pmf>(SubsetSumPmf(doubled, k));
  static auto* cache ABSL_GUARDED_BY(cache_mu) =
      new std::map<std::pair<int, int>, std::shared_ptr<const Pmf>>();
  absl::MutexLock lock(&cache_mu);
  std::shared_ptr<const Pmf>& slot = (*cache)[{n, k}];
  if (slot == nullptr) slot = std::make_shared<const Pmf>(SubsetSumPmf(doubled, k));
  return slot;
}

}  // namespace

RankTest MannWhitneyGreater(absl::Span<const double> x, absl::Span<const double> y,
                            RankMethod method) {
  RankTest result;
  const int64_t nx = static_cast<int64_t>(x.size());
  const int64_t ny = static_cast<int64_t>(y.size());
  if (nx == 0 || ny == 0) return result;
  const int64_t n = nx + ny;

  std::vector<std::pair<double, bool>> pooled;  // (value, from x)
  pooled.reserve(static_cast<size_t>(n));
  for (double v : x) pooled.emplace_back(v, true);
  for (double v : y) pooled.emplace_back(v, false);
  std::sort(pooled.begin(), pooled.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });

  // Twice the midranks: a tie group at sorted positions [i, j) has ranks i+1..j, whose mean
  // doubled is i+1+j, an integer.
  std::vector<int64_t> doubled(static_cast<size_t>(n));
  int64_t rank_sum_x2 = 0;  // twice the rank sum of x
  double tie_term = 0;      // sum over tie groups of t^3 - t
  for (int64_t i = 0; i < n;) {
    int64_t j = i + 1;
    while (j < n && pooled[static_cast<size_t>(j)].first == pooled[static_cast<size_t>(i)].first) {
      ++j;
    }
    const int64_t t = j - i;
    tie_term += static_cast<double>(t * t * t - t);
    for (int64_t m = i; m < j; ++m) {
      doubled[static_cast<size_t>(m)] = i + 1 + j;
      if (pooled[static_cast<size_t>(m)].second) rank_sum_x2 += i + 1 + j;
    }
    i = j;
  }
  result.u = static_cast<double>(rank_sum_x2 - nx * (nx + 1)) / 2.0;

  const int64_t k = std::min(nx, ny);
  const double work = static_cast<double>(n) * static_cast<double>(k) * 2.0 *
                      static_cast<double>(k) * static_cast<double>(n);
  const bool exact =
      method == RankMethod::kExact || (method == RankMethod::kAuto && work <= kExactWorkLimit);
  if (exact) {
    std::shared_ptr<const Pmf> pmf =
        tie_term == 0 ? TieFreePmf(static_cast<int>(n), static_cast<int>(k))
                      : std::make_shared<const Pmf>(SubsetSumPmf(doubled, static_cast<int>(k)));
    const int64_t smax = static_cast<int64_t>(pmf->size()) - 1;
    double p = 0;
    if (k == nx) {
      // P(rank sum of x >= observed), summed from the far tail for accuracy.
      for (int64_t s = smax; s >= rank_sum_x2 && s >= 0; --s) p += (*pmf)[static_cast<size_t>(s)];
    } else {
      // The smaller sample is y: the rank sum of x is large exactly when y's is small.
      const int64_t rank_sum_y2 = n * (n + 1) - rank_sum_x2;
      for (int64_t s = 0; s <= std::min(rank_sum_y2, smax); ++s) {
        p += (*pmf)[static_cast<size_t>(s)];
      }
    }
    result.p_value = std::clamp(p, 0.0, 1.0);
    result.exact = true;
    return result;
  }

  const double mean = static_cast<double>(nx * ny) / 2.0;
  const double nd = static_cast<double>(n);
  const double var = static_cast<double>(nx * ny) / 12.0 * ((nd + 1) - tie_term / (nd * (nd - 1)));
  if (var <= 0) {
    result.p_value = 1;  // every value tied: U equals its mean and P(U >= U) is 1
    return result;
  }
  const double z = (result.u - mean - 0.5) / std::sqrt(var);
  result.p_value = std::clamp(0.5 * std::erfc(z / std::sqrt(2.0)), 0.0, 1.0);
  return result;
}

}  // namespace booster::analysis
