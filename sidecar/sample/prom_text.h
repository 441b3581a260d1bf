// The Prometheus text exposition format (version 0.0.4), as served on an application's
// /metrics, and the per-window figures the agent derives from two scrapes: counters as
// rates, histograms as window quantiles (p50, p90, p99) from bucket deltas — the way
// PromQL's rate() and histogram_quantile() do — and summaries as the window mean plus
// the quantiles the application exposes. Pure.
//
//   absl::StatusOr<PromScrape> a = ParsePrometheusText(text_at_window_start);
//   absl::StatusOr<PromScrape> b = ParsePrometheusText(text_at_window_end);
//   PromWindow w = ComputeWindow(*a, *b, /*seconds=*/10);
//   w.histograms["http_request_duration_seconds{code=\"200\"}"].p99;
#ifndef BOOSTER_SIDECAR_SAMPLE_PROM_TEXT_H_
#define BOOSTER_SIDECAR_SAMPLE_PROM_TEXT_H_

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/histogram.h"

namespace booster::agent {

using PromLabels = std::vector<std::pair<std::string, std::string>>;  // sorted by name

struct PromSample {
  std::string name;
  PromLabels labels;
  double value = 0;
};

struct PromScrape {
  std::map<std::string, std::string> types;  // family name -> counter, histogram, ...
  std::vector<PromSample> samples;
};

// A series (name and labels) given more than once keeps its first sample, as Prometheus
// keeps it; the later ones are dropped.
absl::StatusOr<PromScrape> ParsePrometheusText(absl::string_view text);

// The family (the name of its `# TYPE` line) a sample belongs to: `x` for `x_bucket`,
// `x_sum` and `x_count` of a histogram or summary `x`, and for `x_total` of a counter typed
// `x` (Python's prometheus_client and OpenMetrics name the family without `_total`).
// A sample of no typed family is its own family.
std::string FamilyOf(const std::string& sample_name,
                     const std::map<std::string, std::string>& types);
// The type of FamilyOf(sample_name): counter, gauge, histogram, summary or untyped.
std::string TypeOf(const std::string& sample_name, const std::map<std::string, std::string>& types);

// "name{a=\"x\",b=\"y\"}" (labels sorted, values escaped as in the exposition format, so
// distinct series never share a key), the key used in the window maps.
std::string SeriesKey(absl::string_view name, const PromLabels& labels);

// The samples named `name` summed over their label sets (non-finite values left out);
// nullopt when the scrape has no such sample. For a gauge with one series, its value.
std::optional<double> SumOfSamples(const PromScrape& scrape, absl::string_view name);

// How much the counter samples named `name` went up from `before` to `after`, summed over
// their label sets, as PromQL's increase() without extrapolation: a series that went down
// was reset and counts its value after whole, a series new in `after` counts from zero, so
// the result is never negative. nullopt when `after` has no such sample.
std::optional<double> CounterIncrease(const PromScrape& before, const PromScrape& after,
                                      absl::string_view name);

struct HistogramWindow {
  double count = 0;  // observations in the window
  double rate = 0;   // observations per second
  double mean = 0;   // NaN when no observation
  double p50 = 0;    // NaN when no observation
  double p90 = 0;
  double p99 = 0;
};

struct SummaryWindow {
  double count = 0;
  double rate = 0;
  double mean = 0;                          // NaN when no observation
  std::map<std::string, double> quantiles;  // as exposed at the window's end ("0.5" -> v)
};

struct PromWindow {
  std::map<std::string, double> counter_rates;  // per second, resets handled
  std::map<std::string, HistogramWindow> histograms;
  std::map<std::string, SummaryWindow> summaries;
};

PromWindow ComputeWindow(const PromScrape& before, const PromScrape& after, double seconds);

// Window quantiles use the one reading of a histogram (common/histogram.h).
using ::booster::BucketQuantile;

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_SAMPLE_PROM_TEXT_H_
