#include "operator/analysis/judge.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "operator/analysis/distributions.h"
#include "operator/analysis/mann_whitney.h"
#include "operator/analysis/paired.h"
#include "operator/rollout/profile/metric_names.h"

namespace booster::analysis {
namespace {

using rollout::AnalysisSpec;
using rollout::MetricSpec;

constexpr double kInf = std::numeric_limits<double>::infinity();

double Median(std::vector<double> v) {
  if (v.empty()) return kNaN;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(mid), v.end());
  const double hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  const double lo = *std::max_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(mid));
  return lo + (hi - lo) / 2;
}

std::vector<double> AbsoluteDeviations(const std::vector<double>& v, double centre) {
  std::vector<double> d;
  d.reserve(v.size());
  for (double x : v) d.push_back(std::fabs(x - centre));
  return d;
}

ArmSummary Summarise(const std::vector<double>& v) {
  ArmSummary s;
  s.n = static_cast<int>(v.size());
  if (v.empty()) return s;
  s.median = Median(v);
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  s.mad = Median(AbsoluteDeviations(v, s.median));
  return s;
}

absl::Time Midpoint(const Window& w) { return w.start + (w.end - w.start) / 2; }

// Windows a comparison may use: finite values, sane times, pods past their warm-up.
std::vector<const Window*> Usable(const MetricWindows& arm, const std::string& metric,
                                  absl::Duration warmup, int& warming) {
  std::vector<const Window*> out;
  auto it = arm.find(metric);
  if (it == arm.end()) return out;
  for (const Window& w : it->second) {
    if (!std::isfinite(w.value) || w.end < w.start) continue;
    if (w.pod_start != absl::InfinitePast() && w.start - w.pod_start < warmup) {
      ++warming;
      continue;
    }
    out.push_back(&w);
  }
  return out;
}

// Both arms over the same time range only: the overlap of the two arms' window ranges. Pods
// do not align their windows, so a window belongs to the range when its midpoint does.
void SameTimeRange(std::vector<const Window*>& a, std::vector<const Window*>& b) {
  if (a.empty() || b.empty()) return;
  auto range = [](const std::vector<const Window*>& ws) {
    absl::Time lo = absl::InfiniteFuture();
    absl::Time hi = absl::InfinitePast();
    for (const Window* w : ws) {
      lo = std::min(lo, w->start);
      hi = std::max(hi, w->end);
    }
    return std::make_pair(lo, hi);
  };
  const auto [alo, ahi] = range(a);
  const auto [blo, bhi] = range(b);
  const absl::Time lo = std::max(alo, blo);
  const absl::Time hi = std::min(ahi, bhi);
  auto outside = [&](const Window* w) {
    const absl::Time mid = Midpoint(*w);
    return mid < lo || mid > hi;
  };
  a.erase(std::remove_if(a.begin(), a.end(), outside), a.end());
  b.erase(std::remove_if(b.begin(), b.end(), outside), b.end());
}

std::vector<double> Values(const std::vector<const Window*>& ws) {
  std::vector<double> v;
  v.reserve(ws.size());
  for (const Window* w : ws) v.push_back(w->value);
  return v;
}

// Each window's distance from its own pod's median, every pod of the arm together (pods
// with fewer than 3 windows left out, unless no pod has more). The spread check reads these:
// pods that differ in level (one baseline pod against four canary pods, two of them fresh)
// are not a wider canary, and the level test already weighs them as pods.
std::vector<double> WithinPodDeviations(const std::vector<const Window*>& ws) {
  std::map<std::string, std::vector<double>> by_pod;
  for (const Window* w : ws) by_pod[w->pod].push_back(w->value);
  std::vector<double> d;
  for (const auto& [pod, v] : by_pod) {
    if (v.size() < 3) continue;
    const std::vector<double> own = AbsoluteDeviations(v, Median(v));
    d.insert(d.end(), own.begin(), own.end());
  }
  if (!d.empty()) return d;
  const std::vector<double> all = Values(ws);
  return AbsoluteDeviations(all, Median(all));
}

std::string Num(double v) { return absl::StrFormat("%.3g", v); }

// "2+2 pods", or "1+2 pods of one age (2 of another left out)".
std::string Pods(int baseline, int canary, int left_out) {
  std::string out = absl::StrCat(baseline, "+", canary, " pods");
  if (left_out > 0) absl::StrAppend(&out, " of one age (", left_out, " of another left out)");
  return out;
}

std::string Percent(double change) {
  if (std::isinf(change)) return change > 0 ? "up from zero" : "down from zero";
  return absl::StrFormat("%+.1f%%", change);
}

struct Alphas {
  double look = 0;         // this look's share of 1 - confidence
  double location = 0;     // per metric, canary worse over the step (level looks: 0 between)
  double onset = 0;        // per metric and CUSUM reference, canary worse lately
  double spread = 0;       // per metric, spread blow-up (step ends)
  double pass = 0;         // shown no worse, and the improvement required (step ends)
};

// When a step's step-end looks come, in intervals since the step's analysis began, less the
// warm-up (a pod added at the step counts after it): its end, then one stepDuration per
// extension.
std::vector<double> StepEndTimes(const AnalysisSpec& spec, const Look& look) {
  std::vector<double> times;
  const int ends = std::max(1, look.step_ends);
  // Look::per_step spans the step with every extension: one stepDuration is 1/ends of it.
  const double duration = look.per_step > 0 ? static_cast<double>(look.per_step) / ends : 1;
  double warmup = 0;
  if (look.per_step > 0 && spec.interval > absl::ZeroDuration()) {
    warmup = std::clamp(absl::FDivDuration(spec.warmup.value_or(spec.interval), spec.interval),
                        0.0, duration / 2);
  }
  for (int k = 1; k <= ends; ++k) times.push_back(k * duration - warmup);
  return times;
}

Alphas SpendAlpha(const AnalysisSpec& spec, const Look& look, const JudgeOptions& options) {
  const double total = std::clamp(1.0 - spec.confidence, 0.0, 1.0);
  const double metrics = static_cast<double>(std::max<size_t>(1, spec.metrics.size()));
  Alphas a;
  a.look = total / static_cast<double>(std::max(1, look.planned));
  const int per_step = std::max(1, look.per_step > 0 ? look.per_step : look.planned);
  const int steps = std::max(1, (look.planned + per_step - 1) / per_step);
  const int in_step = (std::max(1, look.index) - 1) % per_step + 1;
  if (!options.level_looks) {
    a.location = a.look * kLocationShare / metrics;
  } else if (look.step_over || IsLevelLook(in_step, per_step)) {
    // The scheduled looks and the earlier step ends, never more than the step's looks.
    const int level_looks =
        steps *
        std::min(per_step, LevelLooksPerStep(per_step) + std::max(0, look.step_ends - 1));
    a.location = total * kLocationShare / static_cast<double>(level_looks) / metrics;
  }
  a.onset = a.look * kOnsetShare / metrics / static_cast<double>(std::size(kOnsetReferences));
  a.spread = a.look * kSpreadShare / metrics;
  // A Pass needs every required metric shown within its margin (an intersection-union
  // test: no split over metrics), at one of the step's step-end looks: a level per look for
  // repeated looks at accumulating evidence (distributions.h).
  a.pass = RepeatedLooksAlpha(total, StepEndTimes(spec, look));
  return a;
}

// A p-value below this look's alpha; no alpha (between level looks), nothing is shown.
bool ShownWorse(double p_value, double alpha) { return alpha > 0 && p_value <= alpha; }

// Windows from fewer intervals both arms cover than this give no variance to test with.
constexpr int kMinIntervals = 3;

// A value on the contrasts' scale as a regression in percent, positive = worse.
double Oriented(Scale scale, bool lower_is_better, double on_scale) {
  const double change = ChangePercent(scale, lower_is_better, on_scale);
  return lower_is_better ? change : -change;
}

// The notes of the verdicts both comparisons (paired, rates) reach, one wording each.
MetricEvidence& Worse(MetricEvidence& e, const MetricSpec& metric, const std::string& figures,
                      double alpha) {
  e.verdict = MetricVerdict::kFail;
  e.note = absl::StrCat(metric.name, " is worse (", Percent(e.change_percent), ", ", figures,
                        " <= ", Num(alpha), "), beyond the ", Num(metric.max_regression_percent),
                        "% allowed");
  return e;
}

MetricEvidence& SoFar(MetricEvidence& e, const MetricSpec& metric, const std::string& figures) {
  e.verdict = MetricVerdict::kWait;
  e.note = absl::StrCat(metric.name, " ", Percent(e.change_percent), " (", figures, ")");
  return e;
}

MetricEvidence& NotShownWithin(MetricEvidence& e, const MetricSpec& metric,
                               const std::string& figures, double alpha_pass) {
  e.verdict = MetricVerdict::kInconclusive;
  e.note = absl::StrCat(metric.name, " not shown within ", Num(metric.max_regression_percent),
                        "% (", Percent(e.change_percent), ", at worst ",
                        Percent(e.upper_bound_percent), " at ", Num(1 - alpha_pass),
                        " confidence, ", figures, ")");
  return e;
}

MetricEvidence& NotImproved(MetricEvidence& e, const MetricSpec& metric, double alpha_pass) {
  e.verdict = MetricVerdict::kInconclusive;
  e.note = absl::StrCat(metric.name, " did not show the ", Num(*metric.min_improvement_percent),
                        "% improvement required (", Percent(e.change_percent), ", at worst ",
                        Percent(e.upper_bound_percent), " at ", Num(1 - alpha_pass),
                        " confidence)");
  return e;
}

// Counts: events per request (or per pod-second) summed over each arm, compared by the
// conditional binomial test; zeros are events too, of which there were none.
MetricEvidence JudgeRate(const MetricSpec& metric, const std::vector<const Window*>& b,
                         const std::vector<const Window*>& c, const Look& look,
                         const Alphas& alpha, MetricEvidence e) {
  e.method = "rate";
  e.change_of_means = true;
  const RateFigures r = TestRates(metric.name, b, c, alpha.pass);
  e.baseline_pods = r.baseline_pods;
  e.canary_pods = r.canary_pods;
  e.baseline_events = r.baseline_events;
  e.canary_events = r.canary_events;
  e.baseline_exposure = r.baseline_exposure;
  e.canary_exposure = r.canary_exposure;
  e.p_value = r.p_value;
  e.change_percent = std::isinf(r.ratio) ? kInf : 100 * (r.ratio - 1);
  e.upper_bound_percent = std::isinf(r.ratio_upper) ? kInf : 100 * (r.ratio_upper - 1);
  const char* per = r.per_request ? " requests" : " pod-seconds";
  const std::string figures =
      absl::StrCat(r.canary_events, " events in ", Num(r.canary_exposure), per, " vs ",
                   r.baseline_events, " in ", Num(r.baseline_exposure), ", p=", Num(e.p_value));
  if (ShownWorse(e.p_value, alpha.location) && e.change_percent > metric.max_regression_percent) {
    return Worse(e, metric, figures, alpha.location);
  }
  if (!look.step_over) {
    return SoFar(e, metric, figures);
  }
  if (!(e.upper_bound_percent <= metric.max_regression_percent)) {
    return NotShownWithin(e, metric, figures, alpha.pass);
  }
  if (metric.min_improvement_percent.has_value() &&
      !(e.upper_bound_percent <= -*metric.min_improvement_percent)) {
    // Shown better by the amount asked: the rate ratio's upper bound that far below 1.
    return NotImproved(e, metric, alpha.pass);
  }
  e.verdict = MetricVerdict::kPass;
  e.note = r.baseline_events + r.canary_events == 0
               ? absl::StrCat(metric.name, " none in either arm (", Num(r.canary_exposure), per,
                              " vs ", Num(r.baseline_exposure), ")")
               : absl::StrCat(metric.name, " ", Percent(e.change_percent), ", at worst ",
                              Percent(e.upper_bound_percent), " (", figures, ")");
  return e;
}

// Why windows went missing, for the note of a metric short of them.
struct Dropped {
  int warming = 0;        // from pods still in their warm-up
  int out_of_range = 0;   // outside the arms' common time range
  bool disjoint = false;  // both arms had windows, but at no common time
};

std::string Counts(const MetricEvidence& e, int needed, const Dropped& dropped) {
  std::string out = absl::StrCat(e.name, " has ", e.baseline.n, " baseline and ", e.canary.n,
                                 " canary windows of the ", needed, " needed per arm");
  if (dropped.disjoint) {
    absl::StrAppend(&out, " (the arms' windows do not overlap in time)");
  } else if (dropped.out_of_range > 0) {
    absl::StrAppend(&out, " (", dropped.out_of_range,
                    " outside the time range both arms cover not counted)");
  }
  if (dropped.warming > 0) {
    absl::StrAppend(&out, " (", dropped.warming, " from pods in warm-up not counted)");
  }
  return out;
}

// The pods of one age the arms are compared on. A step's baseline Deployment is scaled, not
// replaced, between steps, so from the second step on an arm may hold pods of the step
// before beside pods started with this step (one baseline pod of step 1 against two canary
// pods of step 1 and two of step 2), and a pod's age moves its latency by more than a
// tuning's effect (docs/analysis.md, "Pods of one age"). The pods of both arms are grouped
// by when they started (a start more than kCohortGap after the one before begins a new
// group); when pods of more than one age are present and at least one group has pods in
// both arms, only the pods of one such group are compared (the one with the most pods in
// its smaller arm, then the most pods, then the oldest), provided it holds every pod of one
// arm. Which group it is depends on the
// pods alone (every window of the metric, warm-up included), never on their values, so it
// does not change from look to look as pods leave their warm-up.
struct AgeMatch {
  bool active = false;  // false: every pod is compared
  std::set<std::pair<int, std::string>> pods;  // (0 baseline / 1 canary, pod) compared
  int left_out = 0;                            // pods of other ages not compared
};

AgeMatch MatchAges(const ArmWindows& windows, const std::string& metric) {
  std::map<std::pair<int, std::string>, absl::Time> starts;
  int arm = 0;
  for (const MetricWindows* m : {&windows.baseline, &windows.canary}) {
    if (auto it = m->find(metric); it != m->end()) {
      for (const Window& w : it->second) {
        auto [at, fresh] = starts.emplace(std::make_pair(arm, w.pod), w.pod_start);
        if (!fresh) at->second = std::min(at->second, w.pod_start);
      }
    }
    ++arm;
  }
  std::vector<std::pair<absl::Time, std::pair<int, std::string>>> by_start;
  for (const auto& [pod, start] : starts) by_start.emplace_back(start, pod);
  std::sort(by_start.begin(), by_start.end());
  struct Group {
    size_t first = 0;
    size_t end = 0;
    int arms[2] = {0, 0};
  };
  std::vector<Group> groups;
  for (size_t i = 0; i < by_start.size(); ++i) {
    // Pods of unknown start (InfinitePast, sorted first) are one group of their own.
    const absl::Time t = by_start[i].first;
    const bool same = i > 0 && (t == by_start[i - 1].first ||
                                (by_start[i - 1].first != absl::InfinitePast() &&
                                 t - by_start[i - 1].first <= kCohortGap));
    if (!same) groups.push_back(Group{i, i, {0, 0}});
    groups.back().end = i + 1;
    ++groups.back().arms[by_start[i].second.first];
  }
  AgeMatch match;
  if (groups.size() < 2) return match;
  const Group* best = nullptr;
  auto key = [](const Group& g) {
    return std::make_pair(std::min(g.arms[0], g.arms[1]), g.arms[0] + g.arms[1]);
  };
  for (const Group& g : groups) {  // oldest first: a tie keeps the older
    if (g.arms[0] == 0 || g.arms[1] == 0) continue;
    if (best == nullptr || key(g) > key(*best)) best = &g;
  }
  // Only when that group holds every pod of one arm: the other arm's extra pods are of
  // another age (a step's scaling added them). When both arms hold pods of several ages
  // (pods replaced one by one), leaving out all but one group would throw away most pods
  // for no balance gained, so every pod is compared.
  int totals[2] = {0, 0};
  for (const Group& g : groups) {
    totals[0] += g.arms[0];
    totals[1] += g.arms[1];
  }
  if (best == nullptr || (best->arms[0] != totals[0] && best->arms[1] != totals[1])) {
    return match;
  }
  match.active = true;
  for (size_t i = best->first; i < best->end; ++i) match.pods.insert(by_start[i].second);
  match.left_out = static_cast<int>(by_start.size() - match.pods.size());
  return match;
}

// Keeps the windows of the pods `match` compares.
void KeepMatched(const AgeMatch& match, int arm, std::vector<const Window*>& ws) {
  if (!match.active) return;
  ws.erase(std::remove_if(ws.begin(), ws.end(),
                          [&](const Window* w) {
                            return match.pods.count(std::make_pair(arm, w->pod)) == 0;
                          }),
           ws.end());
}

MetricEvidence JudgeMetric(const AnalysisSpec& spec, const MetricSpec& metric,
                           const ArmWindows& windows, const Look& look, const Alphas& alpha,
                           const JudgeOptions& options) {
  MetricEvidence e;
  e.name = metric.name;
  e.required = metric.required;
  const absl::Duration warmup = options.warmup.value_or(spec.interval);
  Dropped dropped;
  std::vector<const Window*> b = Usable(windows.baseline, metric.name, warmup, dropped.warming);
  std::vector<const Window*> c = Usable(windows.canary, metric.name, warmup, dropped.warming);
  const AgeMatch ages = MatchAges(windows, metric.name);
  KeepMatched(ages, 0, b);
  KeepMatched(ages, 1, c);
  e.pods_left_out = ages.left_out;
  const size_t usable = b.size() + c.size();
  const bool both = !b.empty() && !c.empty();
  SameTimeRange(b, c);
  dropped.out_of_range = static_cast<int>(usable - b.size() - c.size());
  dropped.disjoint = both && (b.empty() || c.empty());
  const std::vector<double> bv = Values(b);
  const std::vector<double> cv = Values(c);
  e.baseline = Summarise(bv);
  e.canary = Summarise(cv);

  if (e.baseline.n < spec.min_samples || e.canary.n < spec.min_samples) {
    e.note = Counts(e, spec.min_samples, dropped);
    if (!look.step_over) {
      e.verdict = MetricVerdict::kWait;
    } else {
      e.verdict = metric.required ? MetricVerdict::kInconclusive : MetricVerdict::kSkipped;
    }
    return e;
  }

  const bool lower_is_better =
      rollout::DirectionOf(metric) == rollout::Direction::kLowerIsBetter;
  e.alpha = alpha.location;
  e.pass_alpha = alpha.pass;
  if (IsRateMetric(metric.name, b, c)) return JudgeRate(metric, b, c, look, alpha, e);

  e.method = "paired";
  const PairedFigures f =
      PairUp(b, c, lower_is_better, spec.interval, options.pod_sd_floor);
  e.baseline_pods = f.baseline_pods;
  e.canary_pods = f.canary_pods;
  e.intervals = static_cast<int>(f.contrasts.size());
  if (e.intervals < kMinIntervals) {
    e.note = absl::StrCat(metric.name, " has windows in ", e.intervals,
                          " interval(s) both arms cover, of the ", kMinIntervals, " needed");
    e.verdict = !look.step_over ? MetricVerdict::kWait
                : metric.required ? MetricVerdict::kInconclusive
                                  : MetricVerdict::kSkipped;
    return e;
  }
  e.change_of_means = true;
  // A between-pod SD on the contrasts' scale as a percentage of the baseline.
  auto sd_percent = [](Scale scale, double sd) {
    return 100 * (scale == Scale::kLog ? std::expm1(sd) : sd);
  };
  e.pod_sd_percent = sd_percent(f.scale, f.pod_sd);
  e.pod_sd_observed_percent = sd_percent(f.scale, f.pod_sd_observed);
  // The windows' own values, paired by interval: the onset scan's yardstick always, and the
  // level test unless a latency quantile can be read from the arms' merged histograms.
  const LevelTest windows_level = TestLevel(f, alpha.pass);
  MergedQuantile merged;
  if (const std::optional<double> q = rollout::LatencyQuantile(metric.name);
      q.has_value() && f.scale == Scale::kLog && options.merge_histograms) {
    merged = TestMergedQuantile(b, c, *q, spec.interval, options.pod_sd_floor, alpha.pass);
  }
  const LevelTest& level = merged.usable ? merged.level : windows_level;
  std::string figures;
  if (merged.usable) {
    e.method = "histogram";
    e.pod_sd_percent = sd_percent(Scale::kLog, merged.pod_sd);
    e.pod_sd_observed_percent = sd_percent(Scale::kLog, merged.pod_sd_observed);
    figures = absl::StrCat(Num(merged.canary), " vs ", Num(merged.baseline),
                           " from the arms' histograms (", Num(merged.canary_requests), " vs ",
                           Num(merged.baseline_requests), " requests) over ", e.intervals,
                           " paired intervals, ",
                           Pods(merged.baseline_pods, merged.canary_pods, e.pods_left_out),
                           ", p=", Num(level.p_value));
  } else {
    figures = absl::StrCat("mean ", Num(f.canary_mean), " vs ", Num(f.baseline_mean), " over ",
                           e.intervals, " paired intervals, ",
                           Pods(f.baseline_pods, f.canary_pods, e.pods_left_out),
                           ", p=", Num(level.p_value));
  }
  e.change_percent = ChangePercent(f.scale, lower_is_better, level.estimate);
  e.p_value = level.p_value;
  const double margin = MarginOnScale(f.scale, lower_is_better, metric.max_regression_percent);
  e.upper_bound_percent = Oriented(f.scale, lower_is_better, level.upper);
  if (ShownWorse(e.p_value, alpha.location) && level.estimate > margin) {
    return Worse(e, metric, figures, alpha.location);
  }
  const OnsetTest onset = ScanOnset(f);
  e.onset_alpha = alpha.onset;
  if (onset.tested) {
    e.onset_p_value = onset.p_value;
    // An alarm needs the excursion beyond the margin by kOnsetGate standard errors of its
    // own mean too: autocorrelated windows wander, and a wander past the margin is not a
    // regression shown. The excursion's mean is as uncertain as a mean of that many of the
    // step's intervals, plus what the pods may differ by. Around one level an onset widens
    // that yardstick itself (its shift looks like noise and autocorrelation), so once
    // enough intervals came before the excursion, the noise around the two levels it splits
    // the step into, when that is the smaller.
    double lrv = windows_level.interval_lrv;
    if (onset.before >= kOnsetSplitMinBefore && std::isfinite(onset.split_lrv)) {
      lrv = std::min(lrv, onset.split_lrv);
    }
    const double recent_se = std::sqrt(lrv / std::max(1, onset.recent) + PodVariance(f));
    if (onset.p_value <= alpha.onset && onset.recent > 0 &&
        onset.recent_level - kOnsetGate * recent_se > margin) {
      e.verdict = MetricVerdict::kFail;
      e.note = absl::StrCat(
          metric.name, " got worse since ", absl::FormatTime("%H:%M:%SZ", onset.since, absl::UTCTimeZone()),
          " (", onset.recent, " intervals ",
          Percent(ChangePercent(f.scale, lower_is_better, onset.recent_level)),
          ", the step's earlier ones ",
          Percent(ChangePercent(f.scale, lower_is_better, onset.before_level)),
          ", p=", Num(onset.p_value), " <= ", Num(alpha.onset), "), beyond the ",
          Num(metric.max_regression_percent), "% allowed");
      return e;
    }
  }
  if (!look.step_over) {
    return SoFar(e, metric, figures);
  }
  LatePart late = TestLatePart(f, windows_level.interval_lrv);
  if (merged.usable) {
    // A latency quantile judged from the merged histograms is read the same way over the
    // last third: a window's own p99 of a few hundred requests wanders by tens of percent,
    // and its mean over a third of a short step would refuse most Passes of no-ops.
    auto in_late = [&late](const std::vector<const Window*>& arm) {
      std::vector<const Window*> out;
      for (const Window* w : arm) {
        if (Midpoint(*w) >= late.since) out.push_back(w);
      }
      return out;
    };
    const MergedQuantile m =
        TestMergedQuantile(in_late(b), in_late(c), *rollout::LatencyQuantile(metric.name),
                           spec.interval, options.pod_sd_floor, alpha.pass);
    if (m.usable && std::isfinite(m.level.se)) {
      late.estimate = m.level.estimate;
      late.se = m.level.se;
    }
  }
  e.late_intervals = late.intervals;
  e.late_change_percent = ChangePercent(f.scale, lower_is_better, late.estimate);

  // Contradictory evidence: the canary's spread blew up while its centre did not fail.
  const std::vector<double> bd = WithinPodDeviations(b);
  const std::vector<double> cd = WithinPodDeviations(c);
  const double bmad = Median(bd);
  const double cmad = Median(cd);
  e.spread_ratio = bmad > 0 ? cmad / bmad : (cmad > 0 ? kInf : 1.0);
  e.spread_p_value = MannWhitneyGreater(cd, bd).p_value;
  if (e.spread_ratio > options.spread_ratio && e.spread_p_value <= alpha.spread) {
    e.verdict = MetricVerdict::kInconclusive;
    e.note = absl::StrCat(metric.name, " spread ", Num(e.spread_ratio),
                          "x the baseline's (MAD within pods, p=", Num(e.spread_p_value),
                          ") while it moved ", Percent(e.change_percent));
    return e;
  }

  if (metric.min_improvement_percent.has_value()) {
    // Shown better by the amount asked: the regression's upper bound at most -improvement.
    const double needed = MarginOnScale(f.scale, lower_is_better, -*metric.min_improvement_percent);
    e.improvement_p_value = level.se > 0
                                ? StudentTUpper((needed - level.estimate) / level.se, level.df)
                                : (level.estimate < needed ? 0 : 1);
    if (!(level.upper <= needed) || f.scale == Scale::kAbsolute) {
      return NotImproved(e, metric, alpha.pass);
    }
  }
  // Shown no worse: the regression's upper confidence bound within the margin.
  if (!(level.upper <= margin)) {
    return NotShownWithin(e, metric, figures, alpha.pass);
  }
  // ... and not worse at the step's end: a regression over the step's last part moves the
  // step's mean by only that part's share of it, so the mean can be within the margin while
  // the canary of the last minutes is not. Not proof enough to fail, too much to promote.
  if (!(late.estimate + (std::isfinite(late.se) ? kLateSlack * late.se : 0) <= margin)) {
    e.verdict = MetricVerdict::kInconclusive;
    e.note = absl::StrCat(metric.name, " within ", Num(metric.max_regression_percent),
                          "% over the step (", Percent(e.change_percent), ", at worst ",
                          Percent(e.upper_bound_percent), ") but ", Percent(e.late_change_percent),
                          " over its last ", late.intervals, " intervals, since ",
                          absl::FormatTime("%H:%M:%SZ", late.since, absl::UTCTimeZone()),
                          ": not shown no worse at the step's end");
    return e;
  }
  e.verdict = MetricVerdict::kPass;
  e.note = absl::StrCat(metric.name, " ", Percent(e.change_percent), ", at worst ",
                        Percent(e.upper_bound_percent), " (", figures, ")");
  return e;
}

// Too few windows in an arm, or too few intervals both arms cover, to compare them at all.
bool ShortOfData(const MetricEvidence& e, const AnalysisSpec& spec) {
  return e.baseline.n < spec.min_samples || e.canary.n < spec.min_samples ||
         ((e.method == "paired" || e.method == "histogram") && e.intervals < kMinIntervals);
}

std::vector<std::string> NotesOf(const std::vector<MetricEvidence>& metrics,
                                 MetricVerdict verdict) {
  std::vector<std::string> notes;
  for (const MetricEvidence& e : metrics) {
    if (e.verdict == verdict) notes.push_back(e.note);
  }
  return notes;
}

}  // namespace

absl::string_view DecisionKindName(DecisionKind kind) {
  switch (kind) {
    case DecisionKind::kWait:
      return "Wait";
    case DecisionKind::kPass:
      return "Pass";
    case DecisionKind::kFail:
      return "Fail";
    case DecisionKind::kInconclusive:
      return "Inconclusive";
  }
  return "Wait";
}

absl::string_view MetricVerdictName(MetricVerdict verdict) {
  switch (verdict) {
    case MetricVerdict::kWait:
      return "Wait";
    case MetricVerdict::kPass:
      return "Pass";
    case MetricVerdict::kFail:
      return "Fail";
    case MetricVerdict::kInconclusive:
      return "Inconclusive";
    case MetricVerdict::kSkipped:
      return "Skipped";
  }
  return "Wait";
}

int LooksPerStep(const AnalysisSpec& spec, absl::Duration step_duration) {
  if (spec.interval <= absl::ZeroDuration()) return 1;
  const absl::Duration observed = step_duration * (1 + std::max(0, spec.max_extensions));
  absl::Duration rest;
  int64_t looks = absl::IDivDuration(observed, spec.interval, &rest);
  if (rest > absl::ZeroDuration()) ++looks;  // a last, partial interval is a look too
  return static_cast<int>(std::clamp<int64_t>(looks, 1, 1'000'000));
}

bool IsLevelLook(int in_step, int per_step) {
  if (in_step <= kDenseLevelLooks || in_step == per_step) return in_step >= 1;
  int k = kDenseLevelLooks;
  while (k < in_step) {
    k = std::max(k + 1, static_cast<int>(std::ceil(k * kLevelLookGrowth)));
  }
  return k == in_step;
}

int LevelLooksPerStep(int per_step) {
  int n = std::min(per_step, kDenseLevelLooks);
  for (int k = kDenseLevelLooks;;) {
    k = std::max(k + 1, static_cast<int>(std::ceil(k * kLevelLookGrowth)));
    if (k >= per_step) break;
    ++n;
  }
  return per_step > kDenseLevelLooks ? n + 1 : n;  // the last look
}

int PlannedLooks(const AnalysisSpec& spec, int steps, absl::Duration step_duration) {
  return std::max(1, steps) * LooksPerStep(spec, step_duration);
}

Decision Judge(const AnalysisSpec& spec, const ArmWindows& windows, const Look& look,
               const JudgeOptions& options) {
  const Alphas alpha = SpendAlpha(spec, look, options);
  Decision d;
  d.alpha_look = alpha.look;
  for (const MetricSpec& m : spec.metrics) {
    d.metrics.push_back(JudgeMetric(spec, m, windows, look, alpha, options));
  }
  const std::string where = absl::StrCat(" (look ", look.index, " of ", look.planned, ")");

  // A Fail needs no step end: a regression found early rolls back early.
  if (std::vector<std::string> fails = NotesOf(d.metrics, MetricVerdict::kFail); !fails.empty()) {
    d.kind = DecisionKind::kFail;
    d.reason = kReasonAnalysisFailed;
    d.message = absl::StrCat(absl::StrJoin(fails, "; "), where);
    return d;
  }
  bool short_of_windows = false;  // some metric (required, or not yet known) lacks windows
  int passed = 0;
  for (const MetricEvidence& e : d.metrics) {
    if (ShortOfData(e, spec)) {
      short_of_windows = short_of_windows || e.required || !look.step_over;
    }
    if (e.verdict == MetricVerdict::kPass) ++passed;
  }
  if (!look.step_over) {
    d.kind = DecisionKind::kWait;
    if (d.metrics.empty()) {
      d.reason = kReasonNotEnoughWindows;
      d.message = "no metrics to judge yet";
    } else if (short_of_windows) {
      d.reason = kReasonNotEnoughWindows;
      std::vector<std::string> notes;
      for (const MetricEvidence& e : d.metrics) {
        if (ShortOfData(e, spec)) {
          notes.push_back(e.note);
        }
      }
      d.message = absl::StrCat("waiting for windows: ", absl::StrJoin(notes, "; "), where);
    } else {
      d.reason = kReasonStepInProgress;
      d.message =
          absl::StrCat("no regression so far, the step is not over: ",
                       absl::StrJoin(NotesOf(d.metrics, MetricVerdict::kWait), ", "), where);
    }
    return d;
  }
  // The step is over: decide. No data is never a Pass.
  if (short_of_windows) {
    d.kind = DecisionKind::kInconclusive;
    d.reason = kReasonNotEnoughWindows;
    std::vector<std::string> notes;
    for (const MetricEvidence& e : d.metrics) {
      if (e.required && e.verdict == MetricVerdict::kInconclusive &&
          (ShortOfData(e, spec))) {
        notes.push_back(e.note);
      }
    }
    d.message =
        absl::StrCat("the step ended without enough windows: ", absl::StrJoin(notes, "; "), where);
    return d;
  }
  if (std::vector<std::string> notes = NotesOf(d.metrics, MetricVerdict::kInconclusive);
      !notes.empty()) {
    d.kind = DecisionKind::kInconclusive;
    d.reason = kReasonInconclusive;
    d.message = absl::StrCat(absl::StrJoin(notes, "; "), where);
    return d;
  }
  if (passed == 0) {
    d.kind = DecisionKind::kInconclusive;
    d.reason = kReasonNotEnoughWindows;
    d.message =
        d.metrics.empty()
            ? absl::StrCat("no metrics to judge", where)
            : absl::StrCat("no metric had enough windows: ",
                           absl::StrJoin(NotesOf(d.metrics, MetricVerdict::kSkipped), "; "), where);
    return d;
  }
  d.kind = DecisionKind::kPass;
  d.reason = kReasonMetricsPassed;
  d.message = absl::StrCat("every metric shown within its margin: ",
                           absl::StrJoin(NotesOf(d.metrics, MetricVerdict::kPass), ", "), where);
  return d;
}

}  // namespace booster::analysis
