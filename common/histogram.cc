#include "common/histogram.h"

#include <cmath>
#include <limits>

namespace booster {

double BucketQuantile(double q, const Buckets& buckets) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  if (buckets.empty()) return kNaN;
  const double total = buckets.back().second;
  if (!(total > 0)) return kNaN;
  const double rank = q * total;
  double prev_bound = 0;
  double prev_count = 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    const auto [bound, count] = buckets[i];
    if (count >= rank) {
      if (std::isinf(bound)) return i > 0 ? buckets[i - 1].first : kNaN;
      if (i == 0 && bound <= 0) return bound;
      const double in_bucket = count - prev_count;
      if (in_bucket <= 0) return bound;
      return prev_bound + (bound - prev_bound) * (rank - prev_count) / in_bucket;
    }
    prev_bound = bound;
    prev_count = count;
  }
  return buckets.back().first;
}

double TailBucketQuantile(double q, const Buckets& buckets) {
  if (buckets.empty()) return BucketQuantile(q, buckets);
  const double total = buckets.back().second;
  if (!(total > 0)) return BucketQuantile(q, buckets);
  const double rank = q * total;
  double prev_bound = 0;
  double prev_count = 0;
  for (const auto& [bound, count] : buckets) {
    if (count >= rank) {
      const double above_lower = total - prev_count;  // observations above prev_bound
      const double above_upper = total - count;       // above bound
      const double above = total - rank;
      if (std::isinf(bound) || !(prev_bound > 0) || !(above_upper > 0) ||
          !(above_lower > above_upper) || !(above > 0)) {
        break;
      }
      const double alpha = std::log(above_lower / above_upper) / std::log(bound / prev_bound);
      return prev_bound * std::pow(above_lower / above, 1 / alpha);
    }
    prev_bound = bound;
    prev_count = count;
  }
  return BucketQuantile(q, buckets);
}

std::string CheckBuckets(const Buckets& buckets) {
  if (buckets.empty()) return "no bucket";
  if (buckets.size() > kMaxBuckets) {
    return "more than " + std::to_string(kMaxBuckets) + " buckets";
  }
  if (!std::isinf(buckets.back().first) || buckets.back().first < 0) {
    return "the last bucket is not +Inf";
  }
  for (size_t i = 0; i < buckets.size(); ++i) {
    const auto [bound, count] = buckets[i];
    if (std::isnan(bound)) return "a bound is not a number";
    if (i > 0 && !(bound > buckets[i - 1].first)) return "bounds are not strictly ascending";
    if (!std::isfinite(count) || count < 0) return "a count is negative or not finite";
    if (i > 0 && count < buckets[i - 1].second) return "cumulative counts decrease";
  }
  return "";
}

bool AddBuckets(const Buckets& from, Buckets& to) {
  if (to.empty()) {
    to = from;
    return true;
  }
  if (to.size() != from.size()) return false;
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i].first != to[i].first) return false;
  }
  for (size_t i = 0; i < from.size(); ++i) to[i].second += from[i].second;
  return true;
}

}  // namespace booster
