// The one table of the analysis metrics: the names spec.rollout.analysis.metrics[].name
// accepts, the agents report in their windows (docs/feedback.md) and the judge compares,
// each with the direction in which it is better. The profile parser, the judge and
// operator/feedback read it from here; crds/check.py parses the rows of kMetrics below
// and fails when the CRD's lists of them (crds/boosterprofile.yaml: the metrics item's CEL
// rules, their message and `name`'s description) differ, so a new metric is added here and
// in the CRD together. A Prometheus metric (docs/prometheus-metrics.md) has a name of the
// team's instead, never one of these. Header-only: the standard library and
// absl::string_view, nothing else.
//
//   std::optional<int> i = MetricIndex("latencyP99");      // 1; nullopt for "p99"
//   bool worse = MetricDirection(name) == Direction::kLowerIsBetter ? c > b : c < b;
#ifndef BOOSTER_OPERATOR_ROLLOUT_PROFILE_METRIC_NAMES_H_
#define BOOSTER_OPERATOR_ROLLOUT_PROFILE_METRIC_NAMES_H_

#include <array>
#include <cstddef>
#include <optional>

#include "absl/strings/string_view.h"

namespace booster::rollout {

enum class Direction { kLowerIsBetter, kHigherIsBetter };

struct MetricName {
  absl::string_view name;
  Direction direction;
};

// In the CRD's order, which is also the order of the parser's "use one of ..." message.
// One row a line, `{"name", Direction::k...}`: crds/check.py reads them with a regex.
inline constexpr auto kMetrics = std::to_array<MetricName>({
    {"latencyP50", Direction::kLowerIsBetter},
    {"latencyP99", Direction::kLowerIsBetter},
    {"latencyP999", Direction::kLowerIsBetter},
    {"throughput", Direction::kHigherIsBetter},
    {"errorRate", Direction::kLowerIsBetter},
    {"cpuPerRequest", Direction::kLowerIsBetter},
    {"cpuThrottling", Direction::kLowerIsBetter},
    {"runQueueDelay", Direction::kLowerIsBetter},
    {"listenOverflows", Direction::kLowerIsBetter},
    {"retransmits", Direction::kLowerIsBetter},
    {"memoryRss", Direction::kLowerIsBetter},
    {"goGcCpuShare", Direction::kLowerIsBetter},
    {"goHeapBytes", Direction::kLowerIsBetter},
});

inline constexpr int kMetricCount = static_cast<int>(kMetrics.size());

// The names alone, indexed like kMetrics (what the window store's arrays are indexed by).
inline constexpr std::array<absl::string_view, kMetrics.size()> kMetricNames = [] {
  std::array<absl::string_view, kMetrics.size()> names{};
  for (size_t i = 0; i < kMetrics.size(); ++i) names[i] = kMetrics[i].name;
  return names;
}();

// The position of `name` in kMetrics, or nullopt (names are case-sensitive).
constexpr std::optional<int> MetricIndex(absl::string_view name) {
  for (size_t i = 0; i < kMetrics.size(); ++i) {
    if (kMetrics[i].name == name) return static_cast<int>(i);
  }
  return std::nullopt;
}

constexpr bool IsKnownMetric(absl::string_view name) { return MetricIndex(name).has_value(); }

// The direction of a metric of the table; a name it does not hold reads as lower is better.
constexpr Direction MetricDirection(absl::string_view name) {
  std::optional<int> i = MetricIndex(name);
  return i ? kMetrics[*i].direction : Direction::kLowerIsBetter;
}

// The quantile a latency metric reads from a latency histogram (0.99 for latencyP99), or
// nullopt for a metric that is not a latency quantile.
constexpr std::optional<double> LatencyQuantile(absl::string_view name) {
  if (name == "latencyP50") return 0.5;
  if (name == "latencyP99") return 0.99;
  if (name == "latencyP999") return 0.999;
  return std::nullopt;
}
constexpr bool IsLatencyQuantile(absl::string_view name) {
  return LatencyQuantile(name).has_value();
}

// A name listed twice would make the second row unreachable through MetricIndex.
static_assert(
    [] {
      for (size_t i = 0; i < kMetrics.size(); ++i) {
        if (MetricIndex(kMetrics[i].name) != static_cast<int>(i)) return false;
      }
      return true;
    }(),
    "kMetrics lists a name twice");

}  // namespace booster::rollout

#endif  // BOOSTER_OPERATOR_ROLLOUT_PROFILE_METRIC_NAMES_H_
