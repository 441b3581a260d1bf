// Latency histograms as Prometheus keeps them: cumulative buckets (upper bound, observations
// at or below it), bounds ascending and the last one +Inf. One rule for the agent, which
// reads a window's quantiles from the application's histogram, and the operator's judge,
// which merges the windows of a step and reads the step's quantile from the sum.
//
//   Buckets step = {{0.01, 0}, {0.1, 0}, {INFINITY, 0}};
//   for (const Buckets& w : windows) AddBuckets(w, step);  // false: other bounds
//   double p99 = BucketQuantile(0.99, step);               // seconds; NaN when empty
#ifndef BOOSTER_COMMON_HISTOGRAM_H_
#define BOOSTER_COMMON_HISTOGRAM_H_

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace booster {

// (upper bound, cumulative count), ascending, ending at +Inf.
using Buckets = std::vector<std::pair<double, double>>;

// The most buckets a window may carry (an agent sends none beyond it, the operator refuses
// more): Prometheus client defaults have 11 to 15, hand-made ones rarely 40.
inline constexpr size_t kMaxBuckets = 128;

// Quantile q of `buckets`, with linear interpolation inside the bucket the rank falls in
// (PromQL's histogram_quantile; the first bucket's lower bound is 0). A quantile in the
// +Inf bucket yields the highest finite bound. NaN when empty.
double BucketQuantile(double q, const Buckets& buckets);

// Quantile q of `buckets` read on the tail's own scale: inside the bucket the rank falls in,
// log(observations above x) is taken as linear in log(x) between the bucket's bounds (a
// power-law piece of the survival function through both ends), so a quantile moves as
// smoothly from one bucket into the next as the tail itself does; PromQL's linear reading
// assumes the observations spread evenly over the bucket, which where a dense bucket meets
// a sparse, wide one (the tail) makes a few requests more or less swing the quantile by
// much of the bucket. Agrees with BucketQuantile at every bound. Where that piece is not
// defined (the first bucket from 0, a bucket holding every observation left, or the +Inf
// one) it reads as BucketQuantile does.
double TailBucketQuantile(double q, const Buckets& buckets);

// "" when `buckets` is a histogram BucketQuantile can read (1 to kMaxBuckets buckets,
// bounds strictly ascending and the last +Inf, counts finite, non-negative and never
// decreasing); otherwise what is wrong, for an error message.
std::string CheckBuckets(const Buckets& buckets);

// Adds `from` into `to` bucket by bucket; false (and `to` unchanged) when their bounds
// differ. An empty `to` takes `from`'s bounds.
bool AddBuckets(const Buckets& from, Buckets& to);

}  // namespace booster

#endif  // BOOSTER_COMMON_HISTOGRAM_H_
