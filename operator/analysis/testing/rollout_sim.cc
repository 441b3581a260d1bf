#include "operator/analysis/testing/rollout_sim.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <memory>
#include <numbers>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "operator/analysis/distributions.h"
#include "operator/rollout/profile/metric_names.h"

namespace booster::analysis::testing {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

// One metric of one pod: its persistent offset and its AR(1) state (standardized).
struct Noise {
  double offset = 0;
  double ar = 0;
};

struct Pod {
  std::string name;
  absl::Time started;
  std::vector<Noise> metrics;  // indexed like spec.metrics
};

// The e2e workload's bounds (tests/e2e/workloads/httpserver): the Prometheus client's
// defaults from 0.5 ms.
constexpr double kBounds[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                              0.1,    0.25,  0.5,    1,     2.5,   5,    10};

}  // namespace

std::shared_ptr<const Buckets> LatencyHistogram(Rng& rng, double log_median, double sigma,
                                                int requests) {
  Buckets b;
  for (double bound : kBounds) b.emplace_back(bound, 0);
  b.emplace_back(std::numeric_limits<double>::infinity(), 0);
  for (int i = 0; i < requests; ++i) {
    const double latency = std::exp(log_median + sigma * rng.Normal());
    // The first bucket holding it and every one after (cumulative counts).
    size_t j = 0;
    while (j + 1 < b.size() && latency > b[j].first) ++j;
    b[j].second += 1;
  }
  for (size_t j = 1; j < b.size(); ++j) b[j].second += b[j - 1].second;
  return std::make_shared<const Buckets>(std::move(b));
}

double Rng::Uniform() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }

double Rng::Normal() {
  const double u1 = 1.0 - Uniform();  // (0, 1]
  const double u2 = Uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

int Rng::Poisson(double mean) {
  const double limit = std::exp(-mean);
  int k = 0;
  for (double p = Uniform(); p > limit; p *= Uniform()) ++k;
  return k;
}

rollout::AnalysisSpec SimulationSpec(
    const std::vector<std::pair<std::string, double>>& metric_margins) {
  rollout::AnalysisSpec s;
  s.mode = rollout::AnalysisMode::kMetrics;
  s.interval = absl::Seconds(5);
  s.warmup = absl::Seconds(5);
  s.min_samples = 6;
  s.confidence = 0.99;
  s.max_extensions = 1;
  for (const auto& [name, margin] : metric_margins) {
    rollout::MetricSpec m;
    m.name = name;
    m.max_regression_percent = margin;
    s.metrics.push_back(m);
  }
  return s;
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

SimOutcome SimulateRollouts(const rollout::AnalysisSpec& spec, const SimShape& shape,
                            const PodModel& model, const Regression& regression, int rollouts,
                            uint64_t seed, const JudgeOptions& options) {
  Rng rng(seed);
  const bool debug = std::getenv("ROLLOUT_SIM_DEBUG") != nullptr;
  const absl::Duration interval = spec.interval;
  const absl::Duration step_duration = interval * shape.intervals_per_step;
  const int per_step = LooksPerStep(spec, step_duration);
  const int planned = PlannedLooks(spec, shape.steps, step_duration);
  const double innovation = std::sqrt(std::max(0.0, 1 - model.rho * model.rho));
  SimOutcome out;
  out.rollouts = rollouts;
  int serial = 0;
  for (int r = 0; r < rollouts; ++r) {
    // Pods live through the rollout (a pod's quirk is the same at every step) unless churn
    // replaces them; a new pod starts now and sits out the warm-up.
    auto new_pod = [&](const char* arm, absl::Time now) {
      Pod pod{absl::StrCat(arm, "-", ++serial), now, {}};
      for (size_t i = 0; i < spec.metrics.size(); ++i) {
        pod.metrics.push_back(Noise{model.pod_sd * rng.Normal(), rng.Normal()});
      }
      return pod;
    };
    const absl::Time long_ago = kT0 - absl::Hours(1);
    std::vector<Pod> pods[2];
    for (int p = 0; p < shape.baseline_pods; ++p) pods[0].push_back(new_pod("b", long_ago));
    for (int p = 0; p < shape.canary_pods; ++p) pods[1].push_back(new_pod("c", long_ago));
    const absl::Time onset = kT0 + step_duration * (1 + spec.max_extensions) * regression.step +
                             regression.onset;
    bool rolled_back = false;
    for (int s = 0; s < shape.steps && !rolled_back; ++s) {
      const absl::Time step_start = kT0 + step_duration * (1 + spec.max_extensions) * s;
      ArmWindows w;
      int extensions = 0;
      for (int k = 1; k <= per_step; ++k) {
        const absl::Time start = step_start + interval * (k - 1);
        const absl::Time end = start + interval;
        std::vector<double> common;
        for (size_t i = 0; i < spec.metrics.size(); ++i) common.push_back(model.common_sd * rng.Normal());
        for (int arm = 0; arm < 2; ++arm) {
          for (Pod& pod : pods[arm]) {
            if (model.churn > 0 && rng.Uniform() < model.churn) pod = new_pod(arm ? "c" : "b", start);
            const bool regressing = arm == 1 && regression.factor != 1 && start >= onset;
            for (size_t i = 0; i < spec.metrics.size(); ++i) {
              const rollout::MetricSpec& m = spec.metrics[i];
              Noise& noise = pod.metrics[i];
              noise.ar = model.rho * noise.ar + innovation * rng.Normal();
              const bool regressed = regressing && i == 0;
              Window win{start, end, 0, pod.name, pod.started};
              if (m.name == "errorRate" || m.name == "listenOverflows") {
                const double mean = model.events_mean * (regressed ? regression.factor : 1);
                win.requests = model.requests;
                win.value = m.name == "errorRate"
                                ? rng.Poisson(mean) / static_cast<double>(model.requests)
                                : rng.Poisson(mean) / absl::ToDoubleSeconds(interval);
              } else {
                const bool higher_better = m.name == "throughput";
                const double median = higher_better ? 1000 : model.median;
                double log_value = std::log(median) + noise.offset +
                                   model.window_sd * noise.ar + common[i];
                if (regressed) {
                  log_value += (higher_better ? -1 : 1) * std::log(regression.factor);
                }
                win.value = std::exp(log_value);
                if (const std::optional<double> q = rollout::LatencyQuantile(m.name);
                    q.has_value() && model.histogram_requests > 0) {
                  win.buckets = LatencyHistogram(rng, log_value - NormalQuantile(*q) *
                                                                     model.request_sigma,
                                                 model.request_sigma, model.histogram_requests);
                  win.value = BucketQuantile(*q, *win.buckets);
                  win.requests = model.histogram_requests;
                }
              }
              (arm ? w.canary : w.baseline)[m.name].push_back(win);
            }
          }
        }
        const bool over = k == shape.intervals_per_step * (1 + extensions);
        const Look look{s * per_step + k, planned, over, 1 + spec.max_extensions, per_step};
        const Decision d = Judge(spec, w, look, options);
        if (debug) {
          std::cerr << "rollout " << r << " step " << s << " look " << k << " at "
                    << absl::ToDoubleSeconds(end - kT0) << "s: " << DecisionKindName(d.kind)
                    << ": " << d.message << "\n";
        }
        if (d.kind == DecisionKind::kFail) {
          rolled_back = true;
          ++out.failed;
          if (regression.factor != 1 && end > onset) {
            out.detection_seconds.push_back(absl::ToDoubleSeconds(end - onset));
          }
          break;
        }
        if (!over) continue;
        if (d.kind == DecisionKind::kPass) break;
        if (extensions < spec.max_extensions) {
          ++extensions;
          continue;
        }
        rolled_back = true;  // Inconclusive after the last extension: onInconclusive Rollback
        break;
      }
    }
    if (rolled_back) {
      ++out.rolled_back;
    } else {
      ++out.promoted;
    }
  }
  return out;
}

}  // namespace booster::analysis::testing
