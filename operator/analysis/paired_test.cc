#include "operator/analysis/paired.h"

#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"

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

}  // namespace
}  // namespace booster::analysis
