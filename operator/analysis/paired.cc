#include "operator/analysis/paired.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>

#include "operator/analysis/distributions.h"

namespace booster::analysis {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

absl::Time Midpoint(const Window& w) { return w.start + (w.end - w.start) / 2; }

double Mean(const std::vector<double>& v, size_t from = 0, size_t to = SIZE_MAX) {
  to = std::min(to, v.size());
  if (from >= to) return kNaN;
  double sum = 0;
  for (size_t i = from; i < to; ++i) sum += v[i];
  return sum / static_cast<double>(to - from);
}

double MedianOf(std::vector<double> v) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  const size_t mid = v.size() / 2;
  return v.size() % 2 == 1 ? v[mid] : v[mid - 1] + (v[mid] - v[mid - 1]) / 2;
}

// A lag-1 autocorrelation `r` of n values corrected for its small-sample bias, `times`
// Kendall's (1 + 3 r) / n, and held to [0, 0.9]: negative autocorrelation is not trusted to
// narrow a variance.
double CorrectedRho(double r, double n, double times) {
  return std::clamp(r + times * (1 + 3 * r) / n, 0.0, 0.9);
}
// The long-run variance of an AR(1) series of variance `var`: var (1 + rho) / (1 - rho).
double LongRunOf(double var, double rho) { return var * (1 + rho) / (1 - rho); }
// Values that carry as much information as n autocorrelated ones: n (1 - rho) / (1 + rho).
double EffectiveOf(double n, double rho) { return n * (1 - rho) / (1 + rho); }

// Running sums of a series, enough for its mean, variance and lag-1 autocovariance.
struct Moments {
  double n = 0, sum = 0, squares = 0, lagged = 0, first = 0, last = 0;
  void Add(double x) {
    if (n == 0) first = x;
    if (n > 0) lagged += x * last;
    ++n;
    sum += x;
    squares += x * x;
    last = x;
  }
  double Mean() const { return sum / n; }
  // The long-run variance under an AR(1) model: the variance times (1 + rho) / (1 - rho),
  // with rho the lag-1 autocorrelation corrected for its small-sample bias (Kendall:
  // + (1 + 3 rho) / n) and held to [0, 0.9]; negative autocorrelation is not trusted to
  // narrow it. NaN below two values.
  double LongRunVariance() const {
    if (n < 2) return kNaN;
    return LongRunOf(Variance(), Rho());
  }
  double Variance() const {
    const double m = Mean();
    return std::max(0.0, (squares - n * m * m) / (n - 1));
  }
  double Rho() const {
    if (n < 3) return 0;
    const double m = Mean();
    const double g0 = (squares - n * m * m) / n;
    if (!(g0 > 0)) return 0;
    const double g1 = (lagged - m * ((sum - first) + (sum - last)) + (n - 1) * m * m) / n;
    return CorrectedRho(g1 / g0, n, 1);
  }
  // The variance of the reference's own AR(1) innovations (x_i - m) - rho (x_{i-1} - m),
  // measured rather than taken as var (1 - rho^2), which is wrong whenever rho is.
  double InnovationVariance(double rho) const {
    if (n < 3) return kNaN;
    const double m = Mean();
    const double a = (squares - first * first) - 2 * m * (sum - first) + (n - 1) * m * m;
    const double b = (squares - last * last) - 2 * m * (sum - last) + (n - 1) * m * m;
    const double c = lagged - m * ((sum - first) + (sum - last)) + (n - 1) * m * m;
    return std::max(0.0, (a + rho * rho * b - 2 * rho * c) / (n - 2));
  }
  // Values that carry as much information as n autocorrelated ones: n (1 - rho) / (1 + rho).
  double Effective() const { return EffectiveOf(n, Rho()); }
};

// Siegmund's approximation of a one-sided CUSUM's in-control run length with reference k
// and threshold h, for unit-variance increments: the per-look hazard of a false alarm is
// about its inverse.
double CusumHazard(double k, double h) {
  const double b = 2 * k * (h + 1.166);
  const double arl = (std::exp(b) - b - 1) / (2 * k * k);
  return arl > 1 ? 1 / arl : 1;
}

// Per arm: interval index -> pod -> (sum, windows) of the transformed values.
using PodSums = std::map<int64_t, std::map<std::string, std::pair<double, int>>>;

PodSums Bucket(const std::vector<const Window*>& arm, absl::Time origin,
               absl::Duration interval, bool log) {
  PodSums out;
  for (const Window* w : arm) {
    absl::Duration rest;
    const int64_t k = absl::IDivDuration(Midpoint(*w) - origin, interval, &rest);
    auto& [sum, n] = out[k][w->pod];
    sum += log ? std::log(w->value) : w->value;
    ++n;
  }
  return out;
}

// The mean over pods of each pod's mean, per interval.
std::map<int64_t, double> ArmMeans(const PodSums& sums) {
  std::map<int64_t, double> out;
  for (const auto& [k, pods] : sums) {
    double total = 0;
    for (const auto& [pod, s] : pods) total += s.first / s.second;
    out[k] = total / static_cast<double>(pods.size());
  }
  return out;
}

// Each pod's mean deviation from its arm over the paired intervals; the pooled variance of
// those over the arms that have two pods or more. Returns (sum of squares, degrees).
std::pair<double, int> PodDeviations(const PodSums& sums, const std::map<int64_t, double>& arm,
                                     const std::vector<int64_t>& paired) {
  std::map<std::string, std::pair<double, int>> per_pod;
  for (int64_t k : paired) {
    auto it = sums.find(k);
    if (it == sums.end()) continue;
    for (const auto& [pod, s] : it->second) {
      auto& [dev, n] = per_pod[pod];
      dev += s.first / s.second - arm.at(k);
      ++n;
    }
  }
  if (per_pod.size() < 2) return {0, 0};
  double ss = 0;
  for (const auto& [pod, d] : per_pod) ss += (d.first / d.second) * (d.first / d.second);
  return {ss, static_cast<int>(per_pod.size()) - 1};
}

// The between-pod SD the standard error allows for: the pooled observed one (sum of squares
// over degrees of freedom, NaN without any), never below the floor.
double PodSdWithFloor(double ss, int df, double floor, double divisor, double* observed) {
  *observed = df > 0 ? std::sqrt(ss / df) / divisor : kNaN;
  return std::isnan(*observed) ? floor : std::max(floor, *observed);
}

// What pods differing by `sd` add to the variance of a difference of arm means.
double PodVarianceOf(double sd, int baseline_pods, int canary_pods) {
  return sd * sd * (1.0 / std::max(1, baseline_pods) + 1.0 / std::max(1, canary_pods));
}

int CountPods(const std::vector<const Window*>& arm) {
  std::vector<std::string> pods;
  for (const Window* w : arm) pods.push_back(w->pod);
  std::sort(pods.begin(), pods.end());
  return static_cast<int>(std::unique(pods.begin(), pods.end()) - pods.begin());
}

}  // namespace

PairedFigures PairUp(const std::vector<const Window*>& baseline,
                     const std::vector<const Window*>& canary, bool worse_is_higher,
                     absl::Duration interval, double pod_sd_floor) {
  PairedFigures f;
  f.baseline_pods = CountPods(baseline);
  f.canary_pods = CountPods(canary);
  if (baseline.empty() || canary.empty() || interval <= absl::ZeroDuration()) return f;
  absl::Time origin = absl::InfiniteFuture();
  bool positive = true;
  for (const auto* arm : {&baseline, &canary}) {
    for (const Window* w : *arm) {
      origin = std::min(origin, w->start);
      positive = positive && w->value > 0;
    }
  }
  const bool log = positive;
  const PodSums b = Bucket(baseline, origin, interval, log);
  const PodSums c = Bucket(canary, origin, interval, log);
  const std::map<int64_t, double> bm = ArmMeans(b);
  const std::map<int64_t, double> cm = ArmMeans(c);
  std::vector<int64_t> paired;
  std::vector<double> raw;  // canary - baseline per interval, transformed, not oriented
  double bsum = 0;
  double csum = 0;
  for (const auto& [k, bv] : bm) {
    auto it = cm.find(k);
    if (it == cm.end()) continue;
    paired.push_back(k);
    raw.push_back(it->second - bv);
    bsum += log ? std::exp(bv) : bv;
    csum += log ? std::exp(it->second) : it->second;
    f.starts.push_back(origin + interval * k);
  }
  if (paired.empty()) return f;
  const double n = static_cast<double>(paired.size());
  f.baseline_mean = bsum / n;
  f.canary_mean = csum / n;
  double divisor = 1;
  if (log) {
    f.scale = Scale::kLog;
  } else if (f.baseline_mean != 0) {
    f.scale = Scale::kRelative;
    divisor = std::fabs(f.baseline_mean);
  } else {
    f.scale = Scale::kAbsolute;
  }
  const double sign = worse_is_higher ? 1 : -1;
  for (double d : raw) f.contrasts.push_back(sign * d / divisor);

  const auto [bss, bdf] = PodDeviations(b, bm, paired);
  const auto [css, cdf] = PodDeviations(c, cm, paired);
  // The floor is a fraction of the baseline: log1p of it on the log scale, itself on the
  // relative one; a zero baseline has no scale to take a fraction of.
  const double floor = f.scale == Scale::kLog        ? std::log1p(pod_sd_floor)
                       : f.scale == Scale::kRelative ? pod_sd_floor
                                                     : 0;
  f.pod_sd = PodSdWithFloor(bss + css, bdf + cdf, floor, divisor, &f.pod_sd_observed);
  return f;
}

double MarginOnScale(Scale scale, bool worse_is_higher, double percent) {
  if (std::isinf(percent)) return kInf;
  switch (scale) {
    case Scale::kLog:
      if (worse_is_higher) return std::log1p(percent / 100);
      return percent >= 100 ? kInf : -std::log1p(-percent / 100);
    case Scale::kRelative:
      return percent / 100;
    case Scale::kAbsolute:
      return 0;  // any rise from zero is an infinite change
  }
  return 0;
}

double ChangePercent(Scale scale, bool worse_is_higher, double oriented) {
  if (std::isnan(oriented)) return kNaN;
  const double signed_change = worse_is_higher ? oriented : -oriented;
  switch (scale) {
    case Scale::kLog:
      return 100 * std::expm1(signed_change);
    case Scale::kRelative:
      return 100 * signed_change;
    case Scale::kAbsolute:
      return signed_change == 0 ? 0 : (signed_change > 0 ? kInf : -kInf);
  }
  return kNaN;
}

namespace {

// The one-sided t test of t.estimate against t.se with t.df degrees of freedom: p_value
// (the canary worse at all) and the upper bound at 1 - alpha_pass.
void TestEstimate(LevelTest& t, double alpha_pass) {
  if (t.se > 0) {
    t.p_value = StudentTUpper(t.estimate / t.se, t.df);
    t.upper = t.estimate + StudentTQuantile(1 - alpha_pass, t.df) * t.se;
  } else {
    // Identical arms in every interval: no noise to weigh the difference against.
    t.p_value = t.estimate > 0 ? 0 : 1;
    t.upper = t.estimate;
  }
}

// The noise of a series around the best fit of two levels (one change anywhere from its
// 4th to its 4th-last value): the variance of the residuals (two means taken out: n - 2
// degrees), their lag-1 autocorrelation, the long-run variance and the effective degrees of
// freedom as Moments gives them for one level. The fit picks the best of n splits, so it
// also takes slow wander out as if it were a shift and the residuals look less
// autocorrelated than the series is: their autocorrelation gets kShiftRhoBias times
// Kendall's small-sample correction, which put seeded no-op series' false alarms back to
// the one-level test's (paired_test, LevelTest.*).
struct ShiftFit {
  bool ok = false;
  double lrv = kNaN;
  double df = kNaN;
};

ShiftFit FitShift(const std::vector<double>& x) {
  ShiftFit fit;
  const size_t n = x.size();
  if (n < static_cast<size_t>(kShiftMinIntervals)) return fit;
  // Prefix sums: the sum of squares around two means is sum x^2 - S1^2/k - S2^2/(n - k).
  std::vector<double> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + x[i];
  size_t best = 0;
  double best_fit = -kInf;
  for (size_t k = 3; k + 3 <= n; ++k) {
    const double a = prefix[k];
    const double b = prefix[n] - a;
    const double explained = a * a / static_cast<double>(k) + b * b / static_cast<double>(n - k);
    if (explained > best_fit) {
      best_fit = explained;
      best = k;
    }
  }
  const double mean_a = prefix[best] / static_cast<double>(best);
  const double mean_b = (prefix[n] - prefix[best]) / static_cast<double>(n - best);
  double g0 = 0;
  double g1 = 0;
  double last = 0;
  for (size_t i = 0; i < n; ++i) {
    const double r = x[i] - (i < best ? mean_a : mean_b);
    g0 += r * r;
    if (i > 0) g1 += r * last;
    last = r;
  }
  const double m = static_cast<double>(n);
  const double rho = CorrectedRho(g0 > 0 ? g1 / g0 : 0, m, kShiftRhoBias);
  fit.ok = true;
  fit.lrv = LongRunOf(g0 / (m - 2), rho);
  fit.df = std::max(1.0, EffectiveOf(m, rho) - 1);
  return fit;
}

}  // namespace

double PodVariance(const PairedFigures& f) {
  return PodVarianceOf(f.pod_sd, f.baseline_pods, f.canary_pods);
}

LevelTest TestLevel(const PairedFigures& f, double alpha_pass) {
  LevelTest t;
  const std::vector<double>& d = f.contrasts;
  t.intervals = static_cast<int>(d.size());
  if (d.size() < 3) return t;
  // One wild interval (a GC pause, a scrape that caught a burst) must not carry the mean:
  // contrasts beyond 3 robust SDs from their median are pulled in to that bound.
  std::vector<double> w = d;
  const double med = MedianOf(w);
  std::vector<double> dev;
  for (double x : w) dev.push_back(std::fabs(x - med));
  const double mad = 1.4826 * MedianOf(dev);
  if (mad > 0) {
    for (double& x : w) x = std::clamp(x, med - 3 * mad, med + 3 * mad);
  }
  t.estimate = Mean(w);
  const double n = static_cast<double>(w.size());
  Moments moments;
  for (double x : w) moments.Add(x);
  t.interval_lrv = moments.LongRunVariance();
  t.se = std::sqrt(t.interval_lrv / n + PodVariance(f));
  // Autocorrelated intervals carry less information than as many independent ones.
  t.df = std::max(1.0, moments.Effective() - 1);
  TestEstimate(t, alpha_pass);
  // A regression that started mid-step: the noise around two levels too (paired.h).
  const ShiftFit shift = FitShift(w);
  if (shift.ok) {
    LevelTest s = t;
    s.se = std::sqrt(shift.lrv / n + PodVariance(f));
    s.df = shift.df;
    TestEstimate(s, alpha_pass);
    // Two yardsticks, each held to half the alpha (Bonferroni): p is twice the smaller.
    t.p_value = std::min(1.0, 2 * std::min(t.p_value, s.p_value));
  }
  return t;
}

namespace {

// The long-run variance of x around two levels, `before` up to index `split` and `after`
// from it on: residual variance over n - 2 (two means taken out), lag-1 autocorrelation
// with Kendall's correction.
double SplitLongRunVariance(const std::vector<double>& x, size_t split, double before,
                            double after) {
  double g0 = 0;
  double g1 = 0;
  double last = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double r = x[i] - (i < split ? before : after);
    g0 += r * r;
    if (i > 0) g1 += r * last;
    last = r;
  }
  const double n = static_cast<double>(x.size());
  if (n < 3) return kNaN;
  return LongRunOf(g0 / (n - 2), CorrectedRho(g0 > 0 ? g1 / g0 : 0, n, 1));
}

}  // namespace

LatePart TestLatePart(const PairedFigures& f, double interval_lrv) {
  LatePart late;
  const size_t n = f.contrasts.size();
  if (n == 0) return late;
  const size_t count =
      std::max<size_t>(1, static_cast<size_t>(std::floor(static_cast<double>(n) * kLateShare)));
  late.intervals = static_cast<int>(count);
  late.estimate = Mean(f.contrasts, n - count);
  late.se = std::sqrt(interval_lrv / static_cast<double>(count) + PodVariance(f));
  late.since = f.starts[n - count];
  return late;
}

OnsetTest ScanOnset(const PairedFigures& f) {
  OnsetTest best;
  const std::vector<double>& d = f.contrasts;
  const size_t start = static_cast<size_t>(kOnsetMinPast);
  if (d.size() <= start) return best;
  best.tested = true;
  for (double k : kOnsetReferences) {
    // Self-starting: each interval is compared with the mean and noise of a reference of
    // the intervals before it, all but the latest kOnsetGuard of them (so an onset enters
    // neither the level it is measured from nor the yardstick it is measured with until it
    // has had that long to show; which intervals are left out depends on time only, not on
    // their values). A persistent pod difference is in every interval alike and is no
    // change at all.
    Moments reference;
    size_t in_reference = 0;
    double stat = 0;
    size_t run_start = d.size();  // first interval of the current excursion
    for (size_t j = start; j < d.size(); ++j) {
      const size_t until = std::max(start, j > kOnsetGuard ? j - kOnsetGuard : 0);
      for (; in_reference < until; ++in_reference) reference.Add(d[in_reference]);
      // Pre-whitened: the contrasts are autocorrelated, so the CUSUM runs on the AR(1)
      // innovations (the part of each interval its predecessor did not predict), which are
      // independent and keep the false-alarm hazard what Siegmund's formula says; a mean
      // shift of delta shows in them as delta (1 - rho), against an SD shrunk by
      // sqrt(1 - rho^2), so the shift is still measured in long-run SDs.
      const double mean = reference.Mean();
      const double rho = reference.Rho();
      const double innovation = (d[j] - mean) - rho * (d[j - 1] - mean);
      const double sd = std::sqrt(reference.InnovationVariance(rho) * (1 + 1 / reference.n));
      // The SD is itself estimated from a few intervals: innovation / sd is a t with the
      // reference's degrees of freedom, mapped to the normal score of the same tail so that
      // early, uncertain intervals do not alarm. One wild interval moves the statistic by at
      // most kOnsetClamp - k.
      double z = 0;
      if (sd > 0) {
        const double df = std::max(1.0, reference.n - 2);
        z = -NormalQuantile(StudentTUpper(innovation / sd, df));
      } else if (innovation != 0) {
        z = innovation > 0 ? kOnsetClamp : -kOnsetClamp;
      }
      z = std::clamp(z, -kOnsetClamp, kOnsetClamp);
      const double next = std::max(0.0, stat + z - k);
      if (next > 0 && stat == 0) run_start = j;
      if (next == 0) run_start = d.size();
      stat = next;
    }
    const double p = stat > 0 ? CusumHazard(k, stat) : 1;
    if (!std::isnan(best.p_value) && p >= best.p_value) continue;
    best.p_value = p;
    best.recent = 0;
    best.recent_level = kNaN;
    best.before_level = kNaN;
    best.since = absl::InfinitePast();
    if (run_start < d.size()) {
      best.recent = static_cast<int>(d.size() - run_start);
      best.recent_level = Mean(d, run_start);
      best.before_level = Mean(d, 0, run_start);
      best.before = static_cast<int>(run_start);
      best.split_lrv = SplitLongRunVariance(d, run_start, best.before_level, best.recent_level);
      best.since = f.starts[run_start];
    }
  }
  return best;
}

namespace {

// Every window carries a histogram and all have the bounds of the first.
bool SameBounds(const std::vector<const Window*>& baseline,
                const std::vector<const Window*>& canary) {
  const Buckets* first = nullptr;
  for (const auto* arm : {&baseline, &canary}) {
    for (const Window* w : *arm) {
      if (w->buckets == nullptr || w->buckets->empty()) return false;
      if (first == nullptr) {
        first = w->buckets.get();
        continue;
      }
      if (w->buckets->size() != first->size()) return false;
      for (size_t i = 0; i < first->size(); ++i) {
        if ((*w->buckets)[i].first != (*first)[i].first) return false;
      }
    }
  }
  return first != nullptr;
}

// Per arm: interval index -> the sum of its windows' histograms, and per pod the windows'
// interval indices.
struct ArmHistograms {
  std::map<int64_t, Buckets> intervals;
  std::map<std::string, std::vector<std::pair<int64_t, const Buckets*>>> pods;
};

ArmHistograms SumByInterval(const std::vector<const Window*>& arm, absl::Time origin,
                            absl::Duration interval) {
  ArmHistograms out;
  for (const Window* w : arm) {
    absl::Duration rest;
    const int64_t k = absl::IDivDuration(Midpoint(*w) - origin, interval, &rest);
    AddBuckets(*w->buckets, out.intervals[k]);
    out.pods[w->pod].emplace_back(k, w->buckets.get());
  }
  return out;
}

// `total` minus `part`, bucket by bucket (same bounds).
Buckets Without(const Buckets& total, const Buckets& part) {
  Buckets out = total;
  for (size_t i = 0; i < out.size(); ++i) out[i].second = std::max(0.0, out[i].second - part[i].second);
  return out;
}

double LogQuantile(double q, const Buckets& b) {
  const double v = TailBucketQuantile(q, b);
  return v > 0 ? std::log(v) : kNaN;
}

// A quantity's value over all blocks and with each block left out in turn.
struct Jackknife {
  double total = kNaN;
  std::vector<double> replicates;  // NaN where leaving the block out leaves no request
  bool ok() const {
    if (std::isnan(total)) return false;
    for (double r : replicates) {
      if (std::isnan(r)) return false;
    }
    return true;
  }
  // (G - 1) / G times the sum of the replicates' squared deviations from their mean.
  double Variance() const {
    const double g = static_cast<double>(replicates.size());
    if (g < 2) return kNaN;
    const double m = Mean(replicates);
    double ss = 0;
    for (double r : replicates) ss += (r - m) * (r - m);
    return ss * (g - 1) / g;
  }
};

// The log quantile q of the sum of `blocks` (a block without a window is empty), jackknifed.
Jackknife LogQuantileJackknife(const std::vector<Buckets>& blocks, double q) {
  Jackknife j;
  Buckets total;
  for (const Buckets& b : blocks) {
    if (!b.empty()) AddBuckets(b, total);
  }
  j.total = LogQuantile(q, total);
  for (const Buckets& b : blocks) {
    j.replicates.push_back(b.empty() ? j.total : LogQuantile(q, Without(total, b)));
  }
  return j;
}

// Each pod's histograms over the paired intervals summed per block, one entry per block.
std::vector<std::vector<Buckets>> PodBlocks(const ArmHistograms& arm,
                                            const std::map<int64_t, int>& block_of,
                                            int blocks) {
  std::vector<std::vector<Buckets>> out;
  for (const auto& [pod, windows] : arm.pods) {
    std::vector<Buckets> per_block(static_cast<size_t>(blocks));
    for (const auto& [k, b] : windows) {
      auto it = block_of.find(k);
      if (it != block_of.end()) AddBuckets(*b, per_block[static_cast<size_t>(it->second)]);
    }
    out.push_back(std::move(per_block));
  }
  return out;
}

// The between-pod part of the pods' log quantiles: (sum of squared deviations from their
// arm's mean minus what their own sampling and time variance explains, degrees of freedom),
// as PodDeviations. A pod's step quantile is itself uncertain (its jackknife variance); that
// part is already in the arms' jackknife and is taken out here (a moment estimate of the
// between-pod variance, as random-effects meta-analysis does), so it is not counted twice.
std::pair<double, int> PodQuantileDeviations(const std::vector<std::vector<Buckets>>& pods,
                                             double q) {
  std::vector<double> logs;
  double within = 0;
  for (const std::vector<Buckets>& blocks : pods) {
    const Jackknife j = LogQuantileJackknife(blocks, q);
    if (std::isnan(j.total)) continue;
    logs.push_back(j.total);
    within += j.ok() ? j.Variance() : 0;
  }
  if (logs.size() < 2) return {0, 0};
  const double m = Mean(logs);
  double ss = 0;
  for (double l : logs) ss += (l - m) * (l - m);
  const double n = static_cast<double>(logs.size());
  // E[ss] = (n - 1) (between + mean within): take the within part out, never below zero.
  ss = std::max(0.0, ss - (n - 1) * within / n);
  return {ss, static_cast<int>(logs.size()) - 1};
}

}  // namespace

MergedQuantile TestMergedQuantile(const std::vector<const Window*>& baseline,
                                  const std::vector<const Window*>& canary, double q,
                                  absl::Duration interval, double pod_sd_floor,
                                  double alpha_pass) {
  MergedQuantile m;
  if (baseline.empty() || canary.empty() || interval <= absl::ZeroDuration()) return m;
  if (!SameBounds(baseline, canary)) return m;
  absl::Time origin = absl::InfiniteFuture();
  for (const auto* arm : {&baseline, &canary}) {
    for (const Window* w : *arm) origin = std::min(origin, w->start);
  }
  const ArmHistograms b = SumByInterval(baseline, origin, interval);
  const ArmHistograms c = SumByInterval(canary, origin, interval);
  std::vector<int64_t> paired;
  for (const auto& [k, unused] : b.intervals) {
    if (c.intervals.count(k) > 0) paired.push_back(k);
  }
  if (paired.size() < 3) return m;
  // Consecutive blocks of the paired intervals, as even as they divide.
  const int n = static_cast<int>(paired.size());
  const int blocks = std::min(n, kMergedBlocks);
  std::map<int64_t, int> block_of;
  std::vector<Buckets> bb(static_cast<size_t>(blocks));
  std::vector<Buckets> cb(static_cast<size_t>(blocks));
  for (int g = 0; g < blocks; ++g) {
    for (int i = g * n / blocks; i < (g + 1) * n / blocks; ++i) {
      const int64_t k = paired[static_cast<size_t>(i)];
      block_of[k] = g;
      AddBuckets(b.intervals.at(k), bb[static_cast<size_t>(g)]);
      AddBuckets(c.intervals.at(k), cb[static_cast<size_t>(g)]);
    }
  }
  const Jackknife jb = LogQuantileJackknife(bb, q);
  const Jackknife jc = LogQuantileJackknife(cb, q);
  if (!jb.ok() || !jc.ok()) return m;  // an arm without requests, or all in one block
  Jackknife contrast;
  contrast.total = jc.total - jb.total;
  for (int g = 0; g < blocks; ++g) {
    contrast.replicates.push_back(jc.replicates[static_cast<size_t>(g)] -
                                  jb.replicates[static_cast<size_t>(g)]);
  }
  const double jack = contrast.Variance();

  const auto [bss, bdf] = PodQuantileDeviations(PodBlocks(b, block_of, blocks), q);
  const auto [css, cdf] = PodQuantileDeviations(PodBlocks(c, block_of, blocks), q);
  m.pod_sd = PodSdWithFloor(bss + css, bdf + cdf, std::log1p(pod_sd_floor), 1,
                            &m.pod_sd_observed);
  m.baseline_pods = static_cast<int>(b.pods.size());
  m.canary_pods = static_cast<int>(c.pods.size());
  const double pod_variance = PodVarianceOf(m.pod_sd, m.baseline_pods, m.canary_pods);

  m.usable = true;
  m.baseline = std::exp(jb.total);
  m.canary = std::exp(jc.total);
  for (const Buckets& block : bb) m.baseline_requests += block.back().second;
  for (const Buckets& block : cb) m.canary_requests += block.back().second;
  m.blocks = blocks;
  LevelTest& t = m.level;
  t.intervals = n;
  t.estimate = contrast.total;  // latency: higher is worse, so the orientation is the log ratio
  t.se = std::sqrt(jack + pod_variance);
  t.df = std::max(1, blocks - 1);
  TestEstimate(t, alpha_pass);
  return m;
}

bool IsRateMetric(const std::string& metric, const std::vector<const Window*>& baseline,
                  const std::vector<const Window*>& canary) {
  if (metric == "listenOverflows") return true;
  if (metric != "errorRate") return false;
  for (const auto* arm : {&baseline, &canary}) {
    for (const Window* w : *arm) {
      if (w->requests <= 0) return false;
    }
  }
  return true;
}

RateFigures TestRates(const std::string& metric, const std::vector<const Window*>& baseline,
                      const std::vector<const Window*>& canary, double alpha_pass) {
  RateFigures r;
  r.baseline_pods = CountPods(baseline);
  r.canary_pods = CountPods(canary);
  r.per_request = metric != "listenOverflows";
  auto sum = [&](const std::vector<const Window*>& arm, int64_t& events, double& exposure) {
    for (const Window* w : arm) {
      const double e = r.per_request ? static_cast<double>(w->requests)
                                     : absl::ToDoubleSeconds(w->end - w->start);
      events += std::llround(std::max(0.0, w->value) * e);
      exposure += e;
    }
  };
  sum(baseline, r.baseline_events, r.baseline_exposure);
  sum(canary, r.canary_events, r.canary_exposure);
  const int64_t n = r.baseline_events + r.canary_events;
  if (!(r.baseline_exposure > 0) || !(r.canary_exposure > 0)) return r;
  const double exposure_ratio = r.baseline_exposure / r.canary_exposure;
  if (r.baseline_events > 0) {
    r.ratio = (static_cast<double>(r.canary_events) / static_cast<double>(r.baseline_events)) *
              exposure_ratio;
  } else {
    r.ratio = r.canary_events > 0 ? kInf : 1;
  }
  // Given n events in all, under equal rates the canary's share follows Binomial(n, p0)
  // with p0 its share of the exposure.
  const double p0 = r.canary_exposure / (r.canary_exposure + r.baseline_exposure);
  r.p_value = n == 0 ? 1 : BinomialUpper(r.canary_events, n, p0);
  if (n == 0) {
    r.ratio_upper = 1;  // no event in either arm: the rates are equal as far as counted
  } else {
    const double pu = BinomialUpperBound(r.canary_events, n, alpha_pass);
    r.ratio_upper = pu >= 1 ? kInf : (pu / (1 - pu)) * exposure_ratio;
  }
  return r;
}

}  // namespace booster::analysis
