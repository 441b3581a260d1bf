// The judge's view of one metric: the pod as the unit and the two arms paired interval by
// interval. Windows are put into the analysis intervals they fall in (by midpoint, from the
// earliest window of either arm); in each interval every pod's windows are averaged, every
// arm is the mean of its pods (each pod weighs the same, however many windows it sent), and
// the contrast of the interval is canary minus baseline, oriented so that positive is worse.
// Pairing by time removes what both arms share (a load swing, a noisy neighbour of the
// whole node); what it cannot remove, a persistent difference between pods, enters the
// standard error as a between-pod variance, estimated from the arms' own pods and never
// below a floor. The contrasts' autocorrelation enters through a long-run (Bartlett)
// variance. Counts (errors per request, listen overflows per second) are not averaged
// but summed over the step as events per exposure in each arm (RateFigures).
//
//   PairedFigures f = PairUp(baseline, canary, metric, interval, options);
//   LevelTest level = TestLevel(f, alpha_pass);
//   OnsetTest onset = ScanOnset(f);  // onset.p_value <= alpha / 2: the canary got worse
#ifndef BOOSTER_OPERATOR_ANALYSIS_PAIRED_H_
#define BOOSTER_OPERATOR_ANALYSIS_PAIRED_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "operator/analysis/judge.h"

namespace booster::analysis {

enum class Scale {
  kLog,       // contrasts are log(canary / baseline): every value of both arms is positive
  kRelative,  // (canary - baseline) / mean baseline: values include zeros
  kAbsolute,  // canary - baseline: the baseline is zero throughout
};

struct PairedFigures {
  Scale scale = Scale::kLog;
  double baseline_mean = 0;  // over the paired intervals, on the original scale
  double canary_mean = 0;
  std::vector<absl::Time> starts;  // per paired interval
  std::vector<double> contrasts;   // per paired interval, positive = canary worse
  int baseline_pods = 0;
  int canary_pods = 0;
  // The between-pod standard deviation on the contrasts' scale: the arms' own (pooled over
  // arms with two pods or more; NaN when none has) and the one used (never below the floor).
  double pod_sd_observed = kNaN;
  double pod_sd = 0;
};

// `worse_is_higher`: true for latency and other lower-is-better metrics.
// `pod_sd_floor`: the least between-pod SD assumed, as a fraction (0.05: 5%).
PairedFigures PairUp(const std::vector<const Window*>& baseline,
                     const std::vector<const Window*>& canary, bool worse_is_higher,
                     absl::Duration interval, double pod_sd_floor);

// A regression margin of `percent` on the contrasts' scale (+inf: no margin).
double MarginOnScale(Scale scale, bool worse_is_higher, double percent);
// An oriented contrast on its scale back to the signed change in percent of the baseline
// (not direction adjusted, like MetricEvidence::change_percent).
double ChangePercent(Scale scale, bool worse_is_higher, double oriented);

struct LevelTest {
  int intervals = 0;
  double estimate = kNaN;  // mean oriented contrast (winsorized), on the scale
  double se = kNaN;        // its standard error: time (long-run) and pods, around one level
  double interval_lrv = kNaN;  // the time part: the contrasts' long-run variance per interval
  double df = kNaN;
  double p_value = kNaN;   // one-sided: the canary is worse than the baseline at all
  double upper = kNaN;     // the upper confidence bound of the estimate at 1 - alpha_pass
};

// Whether the canary is worse at all (p_value): a regression that started mid-step is a
// level shift in the contrasts, which around one mean looks like noise and like
// autocorrelation (rho near 1, a degree of freedom or two), so the test would lose it in
// its own yardstick. From kShiftMinIntervals on, the mean is also weighed against the noise
// around the best fit of two levels, each yardstick held to half the alpha (p_value is
// twice the smaller). `upper`, `se`, `df` and `interval_lrv` are the single level's: a
// shift only widens that bound, so a Pass is never easier for it.
LevelTest TestLevel(const PairedFigures& f, double alpha_pass);
inline constexpr int kShiftMinIntervals = 24;
// How many times Kendall's correction the two-level fit's residual autocorrelation gets.
inline constexpr double kShiftRhoBias = 6;

// The variance a mean contrast has from the pods alone: pod_sd^2 (1/nb + 1/nc).
double PodVariance(const PairedFigures& f);

// The step's last part: the mean contrast of its last kLateShare of the paired intervals
// (at least one) and that mean's standard error (the level test's long-run variance per
// interval over their count, plus the pods). Which intervals count depends on their number
// only, never on their values, so an A/A step's last part is no likelier to look worse than
// any other part of it.
struct LatePart {
  int intervals = 0;
  double estimate = kNaN;
  double se = kNaN;
  absl::Time since = absl::InfinitePast();  // the first interval's start
};
inline constexpr double kLateShare = 1.0 / 3;
// A Pass needs the last part's mean plus this many of its SEs within the margin.
inline constexpr double kLateSlack = 0.5;
LatePart TestLatePart(const PairedFigures& f, double interval_lrv);

// The onset detector: a self-starting one-sided CUSUM of the contrasts, each standardized by
// the intervals before it, run with two reference values (quick for large shifts, patient
// for small ones); a look's false-alarm hazard is Siegmund's approximation at the
// statistic, so the detector spends a fixed share of each look's alpha and its detection
// time does not grow with how long the step has run.
struct OnsetTest {
  bool tested = false;    // more than kOnsetMinPast intervals
  double p_value = kNaN;  // the smaller CUSUM's hazard: compare with alpha / references
  // The current excursion of that CUSUM above zero: its intervals, their mean contrast, the
  // mean contrast of the intervals before it; since = its first interval's start.
  int recent = 0;
  double recent_level = kNaN;
  double before_level = kNaN;
  // The contrasts' long-run variance around those two levels (the step's intervals split at
  // the excursion's start; lag-1 autocorrelation with Kendall's correction) and how many
  // intervals came before the excursion.
  double split_lrv = kNaN;
  int before = 0;
  absl::Time since = absl::InfinitePast();
};

// Reference values k of the CUSUMs, in long-run SDs of the contrasts (each is quickest on
// a shift of 2k).
inline constexpr double kOnsetReferences[] = {0.5, 1.5};
// Intervals that standardize the first one scanned.
inline constexpr int kOnsetMinPast = 10;
// The latest intervals left out of the reference each interval is compared with: an onset
// has this long to show before it enters the level it is measured from.
inline constexpr size_t kOnsetGuard = 16;
// An onset alarm needs the excursion's mean beyond the margin by this many of its SEs.
inline constexpr double kOnsetGate = 5;
// The excursion's SE is read from the noise around the two levels the excursion splits the
// step into (OnsetTest::split_lrv) once at least this many intervals came before it.
inline constexpr int kOnsetSplitMinBefore = 12;
// No interval moves a CUSUM by more than this many SDs.
inline constexpr double kOnsetClamp = 3.0;

OnsetTest ScanOnset(const PairedFigures& f);

// Latency quantiles from the windows' histograms: each arm's quantile is read from the sum
// of its windows' histograms over the paired intervals (every pod and window, each request
// weighing the same), not averaged from the windows' own quantiles: a 5 s window's p99 of a
// few hundred requests is the 5th slowest of them and wanders by tens of percent, and a p999
// per window is hardly a number at all. The estimate is log(canary / baseline) of the step's
// quantiles, oriented (positive = the canary slower); its standard error comes from a
// delete-a-block jackknife over kMergedBlocks consecutive blocks of the paired intervals
// (whatever moves the quantile over time, autocorrelated or not, moves it between blocks)
// plus the between-pod variance, read from each pod's own step quantile and never below
// the floor, as the paired test does.
//
//   MergedQuantile m = TestMergedQuantile(b, c, 0.99, interval, 0.02, alpha_pass);
//   if (m.usable && m.level.upper <= log1p(0.10)) ...  // shown within 10%
struct MergedQuantile {
  // Every window of both arms carried a histogram, all of the same bounds, and each arm's
  // sum over the paired intervals holds requests: otherwise nothing below is set.
  bool usable = false;
  double baseline = kNaN;  // the arms' quantiles over the paired intervals (seconds)
  double canary = kNaN;
  double baseline_requests = 0;
  double canary_requests = 0;
  int blocks = 0;
  int baseline_pods = 0;
  int canary_pods = 0;
  double pod_sd_observed = kNaN;  // on the log scale, as PairedFigures
  double pod_sd = 0;
  LevelTest level;  // intervals, estimate, se, df (blocks - 1), p_value, upper; no interval_lrv
};

// The most blocks the jackknife deletes in turn (fewer when there are fewer intervals).
inline constexpr int kMergedBlocks = 12;

MergedQuantile TestMergedQuantile(const std::vector<const Window*>& baseline,
                                  const std::vector<const Window*>& canary, double q,
                                  absl::Duration interval, double pod_sd_floor,
                                  double alpha_pass);

// Counts as events per exposure, summed over each arm.
struct RateFigures {
  int64_t baseline_events = 0;
  int64_t canary_events = 0;
  double baseline_exposure = 0;  // requests, or pod-seconds
  double canary_exposure = 0;
  bool per_request = false;
  int baseline_pods = 0;
  int canary_pods = 0;
  double ratio = kNaN;          // canary rate / baseline rate (+inf: the baseline had none)
  double p_value = kNaN;        // one-sided, canary rate higher (conditional binomial)
  double ratio_upper = kNaN;    // upper confidence bound of the ratio at 1 - alpha_pass
};

// True for metrics whose windows are event counts the judge can sum: errorRate when every
// window says its requests, listenOverflows always (per second of the window).
bool IsRateMetric(const std::string& metric, const std::vector<const Window*>& baseline,
                  const std::vector<const Window*>& canary);
RateFigures TestRates(const std::string& metric, const std::vector<const Window*>& baseline,
                      const std::vector<const Window*>& canary, double alpha_pass);

}  // namespace booster::analysis

#endif  // BOOSTER_OPERATOR_ANALYSIS_PAIRED_H_
