// Seeded rollouts of the judge on synthetic windows, for its Monte Carlo test and
// bench/judge's tables: pods with persistent offsets, autocorrelated windows, shocks every
// pod shares, pods replaced mid-step, and a canary regression from a chosen time on. The
// judge is driven the way the operator drives it: a look per interval, a Fail at any look,
// a decision at the step's end, an extension per Inconclusive up to maxExtensions, then
// onInconclusive Rollback. ROLLOUT_SIM_DEBUG=1 prints every look's decision to stderr. Values come from our own Box-Muller over std::mt19937_64 (whose
// output the standard fixes), so every platform draws the same numbers.
//
//   SimOutcome o = SimulateRollouts(spec, shape, model, Regression{}, 10'000, 1);
//   double false_rollback = o.RolledBackRate();
#ifndef BOOSTER_OPERATOR_ANALYSIS_TESTING_ROLLOUT_SIM_H_
#define BOOSTER_OPERATOR_ANALYSIS_TESTING_ROLLOUT_SIM_H_

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "operator/analysis/judge.h"
#include "operator/rollout/profile/types.h"

namespace booster::analysis::testing {

class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  double Uniform();  // [0, 1)
  double Normal();
  int Poisson(double mean);

 private:
  std::mt19937_64 gen_;
};

// How one metric's windows vary, on the log scale (a lognormal around `median`).
struct PodModel {
  double median = 0.050;
  double pod_sd = 0.03;     // persistent offset of each pod (0.03: pods differ by ~3%)
  double window_sd = 0.10;  // one window's own noise (marginal SD of the AR(1) series)
  double rho = 0.5;         // AR(1) coefficient of a pod's consecutive windows
  double common_sd = 0.05;  // a shock per interval that every pod of both arms shares
  double churn = 0;         // per pod and interval, the chance it is replaced by a new pod
  // Count metrics (errorRate): events per window ~ Poisson(events_mean) over `requests`.
  double events_mean = 0.3;
  int64_t requests = 1000;
  // Latency quantiles (latencyP50/P99/P999): with histogram_requests > 0 a window is
  // `histogram_requests` requests whose latencies are lognormal with SD `request_sigma` (on
  // the log scale) around a level placed so that the window's true quantile is the value
  // the model above gives; the window carries their histogram (the e2e workload's bounds,
  // the Prometheus client's defaults) and its value is the histogram's quantile, as an
  // agent reports it. 0: the value alone, no histogram.
  int histogram_requests = 0;
  double request_sigma = 0.8;
};

struct SimShape {
  int steps = 3;
  int intervals_per_step = 24;  // stepDuration / interval
  int baseline_pods = 1;
  int canary_pods = 1;
};

// The first metric of the spec worse by `factor` in the canary (times it, or divided for
// throughput; counts: their event rate) from `onset` after the start of step `step`
// (0-based) on. Every metric has its own pod offsets, noise and shocks.
struct Regression {
  double factor = 1;
  int step = 0;
  absl::Duration onset = absl::ZeroDuration();
};

struct SimOutcome {
  int rollouts = 0;
  int rolled_back = 0;  // by a Fail or an Inconclusive after the last extension
  int failed = 0;       // of which by a Fail
  int promoted = 0;
  // Per rollout whose regression had begun and that failed: seconds from the onset to the
  // look that failed (the end of the interval that look covered).
  std::vector<double> detection_seconds;
  double RolledBackRate() const { return rollouts ? static_cast<double>(rolled_back) / rollouts : 0; }
  double FailedRate() const { return rollouts ? static_cast<double>(failed) / rollouts : 0; }
};

// The analysis the tables assume: Metrics mode, 5 s windows with a 5 s warm-up,
// minSamples 6, confidence 0.99, one extension, the given metrics within their margins.
rollout::AnalysisSpec SimulationSpec(
    const std::vector<std::pair<std::string, double>>& metric_margins);

SimOutcome SimulateRollouts(const rollout::AnalysisSpec& spec, const SimShape& shape,
                            const PodModel& model, const Regression& regression, int rollouts,
                            uint64_t seed, const JudgeOptions& options = JudgeOptions());

// A window's latency histogram (common/histogram.h, the e2e workload's bounds) of
// `requests` lognormal latencies around exp(log_median) with log-scale SD `sigma`.
std::shared_ptr<const Buckets> LatencyHistogram(Rng& rng, double log_median, double sigma,
                                                int requests);

// The q-quantile (0..1) of a sample by the nearest rank; NaN when empty.
double Quantile(std::vector<double> v, double q);

}  // namespace booster::analysis::testing

#endif  // BOOSTER_OPERATOR_ANALYSIS_TESTING_ROLLOUT_SIM_H_
