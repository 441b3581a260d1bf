#include "operator/analysis/paired.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "operator/analysis/distributions.h"
#include "operator/analysis/testing/rollout_sim.h"

namespace booster::analysis {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);
constexpr absl::Duration kInterval = absl::Seconds(5);

// Pod `pod`'s windows i = 0.. with the given values, aligned to the interval grid plus
// `phase` (pods do not align their windows).
std::vector<Window> PodSeries(const std::string& pod, const std::vector<double>& values,
                              absl::Duration phase = absl::ZeroDuration()) {
  std::vector<Window> out;
  for (size_t i = 0; i < values.size(); ++i) {
    const absl::Time start = kT0 + phase + kInterval * static_cast<int>(i);
    out.push_back(Window{start, start + kInterval, values[i], pod, absl::InfinitePast()});
  }
  return out;
}

std::vector<const Window*> Ptrs(const std::vector<std::vector<Window>>& pods) {
  std::vector<const Window*> out;
  for (const auto& pod : pods) {
    for (const Window& w : pod) out.push_back(&w);
  }
  return out;
}

TEST(PairedTest, IntervalsPairAcrossArmsAndEveryPodWeighsTheSame) {
  // Baseline: two pods at 100 and 300 in every interval, one of them sending two windows
  // per interval; canary: one pod at 220. Each arm is the mean of its pods on the log
  // scale: baseline sqrt(100 * 300) = 173.2, canary 220.
  const std::vector<std::vector<Window>> b = {
      PodSeries("b1", std::vector<double>(6, 100)),
      PodSeries("b2", std::vector<double>(6, 300)),
      PodSeries("b2", std::vector<double>(6, 300), absl::Seconds(1))};
  const std::vector<std::vector<Window>> c = {PodSeries("c1", std::vector<double>(6, 220))};
  const PairedFigures f = PairUp(Ptrs(b), Ptrs(c), true, kInterval, 0.02);
  EXPECT_EQ(f.scale, Scale::kLog);
  ASSERT_EQ(f.contrasts.size(), 6u);
  for (double d : f.contrasts) EXPECT_NEAR(d, std::log(220 / std::sqrt(100.0 * 300)), 1e-12);
  EXPECT_EQ(f.baseline_pods, 2);
  EXPECT_EQ(f.canary_pods, 1);
  // The baseline's pods differ by a factor 3: log(3)/2 from their mean each, one degree of
  // freedom: SD log(3)/sqrt(2), far above the floor.
  EXPECT_NEAR(f.pod_sd_observed, std::log(3.0) / std::sqrt(2.0), 1e-9);
  EXPECT_NEAR(f.pod_sd, f.pod_sd_observed, 1e-15);
}

TEST(PairedTest, AShockBothArmsShareCancels) {
  // Both arms swing together (a load spike in interval 3): the contrast does not move.
  const std::vector<double> base = {100, 101, 99, 300, 100, 102, 98, 100};
  std::vector<double> canary;
  for (double x : base) canary.push_back(x * 1.1);
  const std::vector<std::vector<Window>> b = {PodSeries("b", base)};
  const std::vector<std::vector<Window>> c = {PodSeries("c", canary)};
  const PairedFigures f = PairUp(Ptrs(b), Ptrs(c), true, kInterval, 0.02);
  for (double d : f.contrasts) EXPECT_NEAR(d, std::log(1.1), 1e-12);
  const LevelTest t = TestLevel(f, 0.05);
  EXPECT_NEAR(t.estimate, std::log(1.1), 1e-12);
  // No time noise is left: the standard error is the pod floor's alone.
  EXPECT_NEAR(t.se, std::log1p(0.02) * std::sqrt(2.0), 1e-12);
  EXPECT_EQ(f.pod_sd_observed != f.pod_sd_observed, true);  // NaN: no arm had two pods
}

TEST(PairedTest, ThroughputIsOrientedSoThatPositiveIsWorse) {
  const std::vector<std::vector<Window>> b = {PodSeries("b", std::vector<double>(5, 1000))};
  const std::vector<std::vector<Window>> c = {PodSeries("c", std::vector<double>(5, 800))};
  const PairedFigures f = PairUp(Ptrs(b), Ptrs(c), false, kInterval, 0.02);
  EXPECT_NEAR(f.contrasts[0], std::log(1000.0 / 800), 1e-12);
  EXPECT_NEAR(ChangePercent(f.scale, false, f.contrasts[0]), -20, 1e-9);
  // 20% lower throughput is exactly the margin of 20% on the log scale.
  EXPECT_NEAR(MarginOnScale(Scale::kLog, false, 20), f.contrasts[0], 1e-12);
  EXPECT_NEAR(MarginOnScale(Scale::kLog, true, 20), std::log(1.2), 1e-12);
  EXPECT_TRUE(std::isinf(MarginOnScale(Scale::kLog, false, 100)));
}

TEST(PairedTest, ZerosUseTheRelativeScaleAndAZeroBaselineTheAbsolute) {
  const std::vector<std::vector<Window>> b = {PodSeries("b", {0, 0.2, 0, 0.2})};
  const std::vector<std::vector<Window>> c = {PodSeries("c", {0.1, 0.3, 0.1, 0.3})};
  PairedFigures f = PairUp(Ptrs(b), Ptrs(c), true, kInterval, 0.02);
  EXPECT_EQ(f.scale, Scale::kRelative);
  EXPECT_NEAR(f.contrasts[0], 0.1 / 0.1, 1e-12);  // over the baseline's mean 0.1
  const std::vector<std::vector<Window>> zero = {PodSeries("b", {0, 0, 0, 0})};
  f = PairUp(Ptrs(zero), Ptrs(c), true, kInterval, 0.02);
  EXPECT_EQ(f.scale, Scale::kAbsolute);
  EXPECT_NEAR(f.contrasts[1], 0.3, 1e-12);
  EXPECT_TRUE(std::isinf(ChangePercent(f.scale, true, 0.2)));
}

TEST(PairedTest, TheLatePartIsTheStepsLastThirdWhateverItsValues) {
  // 31 intervals: the last 10 (floor of a third), 1.5x in the canary from interval 25 on.
  std::vector<double> canary(31, 100);
  for (size_t i = 25; i < canary.size(); ++i) canary[i] = 150;
  const std::vector<std::vector<Window>> b = {PodSeries("b", std::vector<double>(31, 100))};
  const std::vector<std::vector<Window>> c = {PodSeries("c", canary)};
  const PairedFigures f = PairUp(Ptrs(b), Ptrs(c), true, kInterval, 0.02);
  const LatePart late = TestLatePart(f, 0.01);
  EXPECT_EQ(late.intervals, 10);
  EXPECT_EQ(late.since, kT0 + kInterval * 21);
  EXPECT_NEAR(late.estimate, std::log(1.5) * 6 / 10, 1e-12);
  // The time part over its 10 intervals, plus the pods' (the 2% floor on the log scale, one
  // pod per arm).
  EXPECT_NEAR(late.se, std::sqrt(0.01 / 10 + 2 * std::pow(std::log1p(0.02), 2)), 1e-12);
  // Fewer than three intervals: the last one.
  const std::vector<std::vector<Window>> b2 = {PodSeries("b", {100, 100})};
  const std::vector<std::vector<Window>> c2 = {PodSeries("c", {100, 200})};
  const LatePart two = TestLatePart(PairUp(Ptrs(b2), Ptrs(c2), true, kInterval, 0.02), 0.01);
  EXPECT_EQ(two.intervals, 1);
  EXPECT_NEAR(two.estimate, std::log(2.0), 1e-12);
  EXPECT_EQ(TestLatePart(PairedFigures(), 0.01).intervals, 0);
}

TEST(PairedTest, OnsetScanFindsARecentShiftAndIgnoresOneWildInterval) {
  std::vector<double> base(30, 100);
  std::vector<double> canary;
  for (int i = 0; i < 30; ++i) canary.push_back(100 * (1 + 0.03 * ((i * 7) % 5 - 2) / 2.0));
  std::vector<double> late = canary;
  for (int i = 26; i < 30; ++i) late[static_cast<size_t>(i)] *= 2;
  const std::vector<std::vector<Window>> b = {PodSeries("b", base)};
  const std::vector<std::vector<Window>> c = {PodSeries("c", late)};
  OnsetTest o = ScanOnset(PairUp(Ptrs(b), Ptrs(c), true, kInterval, 0.02));
  ASSERT_TRUE(o.tested);
  EXPECT_EQ(o.recent, 4);
  EXPECT_EQ(o.since, kT0 + kInterval * 26);
  EXPECT_NEAR(o.recent_level, std::log(2.0), 0.05);
  EXPECT_LT(o.p_value, 1e-5);
  // The excursion splits the step in two levels: 26 intervals before it, and the noise
  // around the two (what the judge's gate weighs the excursion against) is the pattern's
  // few percent, not the shift that the noise around one level is made of.
  const PairedFigures shifted = PairUp(Ptrs(b), Ptrs(c), true, kInterval, 0.02);
  EXPECT_EQ(o.before, 26);
  EXPECT_LT(o.split_lrv, 0.01);
  double mean = 0;
  for (double x : shifted.contrasts) mean += x / static_cast<double>(shifted.contrasts.size());
  double one_level = 0;
  for (double x : shifted.contrasts) {
    one_level += (x - mean) * (x - mean) / static_cast<double>(shifted.contrasts.size() - 1);
  }
  EXPECT_GT(one_level, 10 * o.split_lrv);
  std::vector<double> wild = canary;
  wild[28] *= 50;
  const std::vector<std::vector<Window>> w = {PodSeries("c", wild)};
  o = ScanOnset(PairUp(Ptrs(b), Ptrs(w), true, kInterval, 0.02));
  // Clamped to kOnsetClamp SDs, one interval cannot carry a CUSUM far: its hazard stays
  // far above any look's alpha.
  EXPECT_GT(o.p_value, 1e-3);
  // No more intervals than standardize the first one scanned: no scan.
  const std::vector<std::vector<Window>> short_b = {PodSeries("b", std::vector<double>(10, 100))};
  std::vector<double> jump(10, 100);
  jump[9] = 200;
  const std::vector<std::vector<Window>> short_c = {PodSeries("c", jump)};
  EXPECT_FALSE(ScanOnset(PairUp(Ptrs(short_b), Ptrs(short_c), true, kInterval, 0.02)).tested);
}

// A regression from the middle of the step is a level shift in the contrasts: around one
// mean it looks like noise and like autocorrelation, and the test would lose it in its own
// yardstick. Around the best fit of two levels it does not.
TEST(LevelTest, ALevelShiftMidStepIsNotTakenForNoise) {
  testing::Rng rng(7);
  std::vector<double> base(36, 100);
  std::vector<double> canary;
  for (int i = 0; i < 36; ++i) canary.push_back(100 * std::exp(0.1 * rng.Normal()) * (i >= 24 ? 2 : 1));
  const std::vector<std::vector<Window>> b = {PodSeries("b", base)};
  const std::vector<std::vector<Window>> c = {PodSeries("c", canary)};
  const PairedFigures f = PairUp(Ptrs(b), Ptrs(c), true, kInterval, 0.02);
  const LevelTest t = TestLevel(f, 0.01);
  // se, df: the single level's, whose p-value would not show it at a look's alpha.
  const double one_level_p = StudentTUpper(t.estimate / t.se, t.df);
  const double one_level_upper = t.estimate + StudentTQuantile(0.99, t.df) * t.se;
  std::cout << "one level p=" << one_level_p << " df=" << t.df << ", two levels p=" << t.p_value
            << "\n";
  EXPECT_GT(one_level_p, 1e-2);
  EXPECT_LT(t.p_value, 1e-5);
  // The bound a Pass needs is the single level's.
  EXPECT_DOUBLE_EQ(t.upper, one_level_upper);
  // Too few intervals to fit two levels: the single level alone.
  const std::vector<std::vector<Window>> short_c = {
      PodSeries("c", std::vector<double>(canary.begin() + 20, canary.begin() + 27))};
  const LevelTest s = TestLevel(PairUp(Ptrs(b), Ptrs(short_c), true, kInterval, 0.02), 0.01);
  EXPECT_DOUBLE_EQ(s.p_value, StudentTUpper(s.estimate / s.se, s.df));
}

// Without a shift, the two-level yardstick is not narrower than the truth: over seeded
// no-op series (AR(1) with rho 0.3-0.7, 24-120 intervals) the canary is shown worse at 0.05
// about as often as it should be, and at 0.01 no more often than around one level (which
// is itself a little over 1% with few, strongly autocorrelated intervals).
TEST(LevelTest, WithoutAShiftTheCanaryIsShownWorseAsRarelyAsItShouldBe) {
  testing::Rng rng(11);
  constexpr int kSeries = 1000;
  for (int n : {24, 36, 120}) {
    const std::vector<std::vector<Window>> b = {
        PodSeries("b", std::vector<double>(static_cast<size_t>(n), 100))};
    for (double rho : {0.3, 0.5, 0.7}) {
      int below_1 = 0, below_5 = 0, plain_1 = 0, plain_5 = 0;
      for (int r = 0; r < kSeries; ++r) {
        std::vector<double> canary;
        double ar = rng.Normal();
        for (int i = 0; i < n; ++i) {
          ar = rho * ar + std::sqrt(1 - rho * rho) * rng.Normal();
          canary.push_back(100 * std::exp(0.1 * ar));
        }
        const std::vector<std::vector<Window>> c = {PodSeries("c", canary)};
        // No pod variance: only the time series' noise is under test.
        const LevelTest t = TestLevel(PairUp(Ptrs(b), Ptrs(c), true, kInterval, 0), 0.01);
        const double plain = StudentTUpper(t.estimate / t.se, t.df);
        below_1 += t.p_value <= 0.01;
        below_5 += t.p_value <= 0.05;
        plain_1 += plain <= 0.01;
        plain_5 += plain <= 0.05;
      }
      std::cout << n << " intervals, rho " << rho << ": p <= 0.01 in " << below_1
                << ", p <= 0.05 in " << below_5 << " of " << kSeries << " (one level: " << plain_1
                << ", " << plain_5 << ")\n";
      EXPECT_LE(below_1, plain_1 + 15) << n << " " << rho;
      EXPECT_LE(below_5, 80) << n << " " << rho;
    }
  }
}

TEST(PairedTest, RatesAreEventsPerExposure) {
  std::vector<Window> b = PodSeries("b", {0.001, 0.002, 0, 0.001});
  std::vector<Window> c = PodSeries("c", {0.004, 0.003, 0.005, 0.004});
  for (Window& w : b) w.requests = 1000;
  for (Window& w : c) w.requests = 1000;
  std::vector<const Window*> bp, cp;
  for (const Window& w : b) bp.push_back(&w);
  for (const Window& w : c) cp.push_back(&w);
  EXPECT_TRUE(IsRateMetric("errorRate", bp, cp));
  EXPECT_FALSE(IsRateMetric("latencyP99", bp, cp));
  const RateFigures r = TestRates("errorRate", bp, cp, 0.05);
  EXPECT_EQ(r.baseline_events, 4);
  EXPECT_EQ(r.canary_events, 16);
  EXPECT_DOUBLE_EQ(r.baseline_exposure, 4000);
  EXPECT_NEAR(r.ratio, 4, 1e-12);
  // 16 of 20 events in the canary with half the exposure: P(X >= 16), X ~ Bin(20, 1/2).
  EXPECT_NEAR(r.p_value, 6196.0 / 1048576, 1e-12);
  // errorRate without requests is not a count the judge can sum.
  b[0].requests = 0;
  bp.clear();
  for (const Window& w : b) bp.push_back(&w);
  EXPECT_FALSE(IsRateMetric("errorRate", bp, cp));
}


std::shared_ptr<const Buckets> Shared(Buckets b) {
  return std::make_shared<const Buckets>(std::move(b));
}

// A window whose value is the quantile q of its histogram, as an agent sends it.
Window HistogramWindow(const std::string& pod, int i, std::shared_ptr<const Buckets> b,
                       double q) {
  const absl::Time start = kT0 + kInterval * i;
  Window w{start, start + kInterval, BucketQuantile(q, *b), pod, absl::InfinitePast()};
  w.buckets = std::move(b);
  return w;
}

TEST(MergedQuantileTest, ReadsEachArmsQuantileFromTheSumOfItsWindowsHistograms) {
  // Baseline: two pods, 100 requests a window each, 99 of them under 1 ms and one under
  // 5 ms; canary: one pod whose slowest 2% take up to 5 ms.
  const auto fast = Shared({{0.001, 99}, {0.005, 100}, {INFINITY, 100}});
  const auto slow = Shared({{0.001, 98}, {0.005, 100}, {INFINITY, 100}});
  std::vector<Window> b;
  std::vector<Window> c;
  for (int i = 0; i < 24; ++i) {
    b.push_back(HistogramWindow("b1", i, fast, 0.99));
    b.push_back(HistogramWindow("b2", i, fast, 0.99));
    c.push_back(HistogramWindow("c1", i, slow, 0.99));
  }
  std::vector<const Window*> bp, cp;
  for (const Window& w : b) bp.push_back(&w);
  for (const Window& w : c) cp.push_back(&w);
  const MergedQuantile m = TestMergedQuantile(bp, cp, 0.99, kInterval, 0.02, 0.05);
  ASSERT_TRUE(m.usable);
  Buckets bsum, csum;
  for (const Window& w : b) AddBuckets(*w.buckets, bsum);
  for (const Window& w : c) AddBuckets(*w.buckets, csum);
  EXPECT_DOUBLE_EQ(m.baseline, BucketQuantile(0.99, bsum));
  EXPECT_DOUBLE_EQ(m.canary, BucketQuantile(0.99, csum));
  EXPECT_DOUBLE_EQ(m.baseline_requests, 4800);
  EXPECT_DOUBLE_EQ(m.canary_requests, 2400);
  EXPECT_NEAR(m.level.estimate, std::log(m.canary / m.baseline), 1e-12);
  EXPECT_GT(m.level.estimate, 0);
  EXPECT_EQ(m.level.intervals, 24);
  EXPECT_EQ(m.blocks, kMergedBlocks);
  EXPECT_EQ(m.level.df, kMergedBlocks - 1);
  EXPECT_EQ(m.baseline_pods, 2);
  EXPECT_EQ(m.canary_pods, 1);
  // Every block alike: no variance from time, the pods' floor alone (2% over 1/2 + 1/1).
  EXPECT_NEAR(m.level.se, std::log1p(0.02) * std::sqrt(1.5), 1e-12);
}

TEST(MergedQuantileTest, NeedsAHistogramOfTheSameBoundsInEveryWindow) {
  const auto h = Shared({{0.0025, 100}, {INFINITY, 100}});
  std::vector<Window> b, c;
  for (int i = 0; i < 6; ++i) {
    b.push_back(HistogramWindow("b", i, h, 0.99));
    c.push_back(HistogramWindow("c", i, h, 0.99));
  }
  auto ptrs = [](const std::vector<Window>& v) {
    std::vector<const Window*> out;
    for (const Window& w : v) out.push_back(&w);
    return out;
  };
  EXPECT_TRUE(TestMergedQuantile(ptrs(b), ptrs(c), 0.99, kInterval, 0.02, 0.05).usable);
  std::vector<Window> missing = c;
  missing[3].buckets = nullptr;
  EXPECT_FALSE(TestMergedQuantile(ptrs(b), ptrs(missing), 0.99, kInterval, 0.02, 0.05).usable);
  std::vector<Window> other = c;
  other[0].buckets = std::make_shared<const Buckets>(Buckets{{0.01, 100}, {INFINITY, 100}});
  EXPECT_FALSE(TestMergedQuantile(ptrs(b), ptrs(other), 0.99, kInterval, 0.02, 0.05).usable);
  std::vector<Window> empty = c;
  for (Window& w : empty) w.buckets = Shared({{0.0025, 0}, {INFINITY, 0}});
  EXPECT_FALSE(TestMergedQuantile(ptrs(b), ptrs(empty), 0.99, kInterval, 0.02, 0.05).usable)
      << "no request in the canary: no quantile to compare";
}

// Seeded: `runs` steps of 3 minutes (36 intervals of 5 s), 2 pods per arm, 400 requests per
// pod and window with lognormal latencies (median 2 ms, sigma 0.8: p99 about 6x the
// median), each pod off by a persistent 2% (SD), a shock shared by every pod of an interval
// (10% SD). The canary's latencies are `factor` times the baseline's.
struct StepRuns {
  int merged_within = 0;   // merged: upper bound within the 10% margin
  int windows_within = 0;  // the same from the mean of the windows' p99s
  int merged_worse = 0;    // merged: p <= 0.001 and the estimate beyond the margin
  int windows_worse = 0;
  double merged_se = 0;  // mean standard errors
  double windows_se = 0;
  std::vector<double> merged_estimates;  // the spread the standard errors should match
  double MergedEstimateSd() const {
    double m = 0, ss = 0;
    for (double e : merged_estimates) m += e / static_cast<double>(merged_estimates.size());
    for (double e : merged_estimates) ss += (e - m) * (e - m);
    return std::sqrt(ss / static_cast<double>(merged_estimates.size() - 1));
  }
};

StepRuns SimulateSteps(int runs, double factor, double q, uint64_t seed,
                       double median = 0.002) {
  testing::Rng rng(seed);
  constexpr int kIntervals = 36;
  constexpr int kRequests = 400;
  constexpr double kAlphaPass = 0.05 / 3;
  const double margin = std::log1p(0.10);
  StepRuns out;
  for (int run = 0; run < runs; ++run) {
    std::vector<double> shocks;
    for (int i = 0; i < kIntervals; ++i) shocks.push_back(0.10 * rng.Normal());
    std::vector<Window> b, c;
    for (int arm = 0; arm < 2; ++arm) {
      for (int pod = 0; pod < 2; ++pod) {
        const double offset = 0.02 * rng.Normal();
        const std::string name = std::string(arm == 0 ? "b" : "c") + std::to_string(pod);
        for (int i = 0; i < kIntervals; ++i) {
          const double mu = std::log(median) + offset + shocks[static_cast<size_t>(i)] +
                            (arm == 1 ? std::log(factor) : 0);
          (arm == 0 ? b : c)
              .push_back(HistogramWindow(name, i, testing::LatencyHistogram(rng, mu, 0.8, kRequests), q));
        }
      }
    }
    std::vector<const Window*> bp, cp;
    for (const Window& w : b) bp.push_back(&w);
    for (const Window& w : c) cp.push_back(&w);
    const MergedQuantile m = TestMergedQuantile(bp, cp, q, kInterval, 0.02, kAlphaPass);
    const LevelTest l = TestLevel(PairUp(bp, cp, true, kInterval, 0.02), kAlphaPass);
    if (!m.usable) continue;
    out.merged_within += m.level.upper <= margin;
    out.windows_within += l.upper <= margin;
    out.merged_worse += m.level.p_value <= 0.001 && m.level.estimate > margin;
    out.windows_worse += l.p_value <= 0.001 && l.estimate > margin;
    out.merged_se += m.level.se / runs;
    out.merged_estimates.push_back(m.level.estimate);
    out.windows_se += l.se / runs;
  }
  return out;
}

void Figure(const std::string& name, double value) {
  std::cout << "[figure] " << name << " = " << value << std::endl;
  ::testing::Test::RecordProperty(name, std::to_string(value));
}

TEST(MergedQuantileTest, ItsStandardErrorIsCalibratedAndShowsMoreNoOpsWithinTenPercent) {
  // Medians of 2, 4, 6 and 7.8 ms put the p99 inside a bucket, and (7.8 ms) right at the
  // 50 ms bound where a dense bucket meets a sparse, wide one. Read the PromQL way, the
  // step p99 there spread by 8.1% (the standard error followed it) against 1.5% at 6 ms;
  // read on the tail's scale (TailBucketQuantile) it spreads by about 3% wherever it sits.
  constexpr int kRuns = 100;
  int merged_within = 0;
  int windows_within = 0;
  for (double median : {0.002, 0.004, 0.006, 0.0078}) {
    SCOPED_TRACE(median);
    const StepRuns aa = SimulateSteps(kRuns, 1.0, 0.99, 23, median);
    const std::string at = absl::StrCat("median_", median * 1000, "ms");
    Figure("merged_p99_aa_within10_rate_" + at, static_cast<double>(aa.merged_within) / kRuns);
    Figure("windows_p99_aa_within10_rate_" + at, static_cast<double>(aa.windows_within) / kRuns);
    Figure("merged_p99_aa_se_" + at, aa.merged_se);
    Figure("merged_p99_aa_estimate_sd_" + at, aa.MergedEstimateSd());
    Figure("windows_p99_aa_se_" + at, aa.windows_se);
    // The standard error is what the estimates really spread by (the pods' 2% included).
    EXPECT_NEAR(aa.merged_se / aa.MergedEstimateSd(), 1, 0.25);
    EXPECT_LT(aa.MergedEstimateSd(), 0.045);
    EXPECT_EQ(aa.merged_worse, 0);
    merged_within += aa.merged_within;
    windows_within += aa.windows_within;
  }
  // Over the four: more no-ops shown within 10% than from the windows' mean (measured 261
  // vs 236 of 400; the rest is the data itself: the p99 of 28,800 requests per arm is
  // uncertain by about 1.8%, and the pods' 2% floor counts with 2 pods per arm).
  Figure("merged_p99_aa_within10_rate", merged_within / (4.0 * kRuns));
  Figure("windows_p99_aa_within10_rate", windows_within / (4.0 * kRuns));
  EXPECT_GE(merged_within, 4 * kRuns / 2);
  EXPECT_GT(merged_within, windows_within);

  // 30% slower: shown worse nearly every time, never shown within 10%.
  const StepRuns slower = SimulateSteps(2 * kRuns, 1.3, 0.99, 24);
  Figure("merged_p99_x1.3_worse_rate", static_cast<double>(slower.merged_worse) / (2 * kRuns));
  EXPECT_EQ(slower.merged_within, 0);
  EXPECT_GE(slower.merged_worse, 2 * kRuns * 9 / 10);

  // p999: a window of 400 requests has none (its "p999" is its slowest request or two); the
  // step's histogram has 29 requests above it per arm, too few to show 10% (measured 13 of
  // 100 no-ops shown within it), but it is the step's p999 and never calls a no-op worse.
  const StepRuns p999 = SimulateSteps(kRuns, 1.0, 0.999, 25);
  Figure("merged_p999_aa_within10_rate", static_cast<double>(p999.merged_within) / kRuns);
  Figure("windows_p999_aa_within10_rate", static_cast<double>(p999.windows_within) / kRuns);
  EXPECT_EQ(p999.merged_worse, 0);
  EXPECT_NEAR(p999.merged_se / p999.MergedEstimateSd(), 1, 0.3);
}

}  // namespace
}  // namespace booster::analysis
