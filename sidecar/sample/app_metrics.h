// The application's request figures from its own Prometheus endpoint: which series are
// its request latency histogram, its request counter and its error label (named by the
// profile, or found by the common names client libraries use), and what they say about
// one window between two scrapes — latency buckets summed over every label set, requests,
// errors — and what the Go runtime's series say (GoRuntimeWindow). Pure: scrapes in, a
// RequestWindow out; window_metrics.h turns it into values.
//
//   absl::StatusOr<AppMetricsSource> src = ParseAppMetricsSource(R"({"port": 8080})");
//   AppSeriesChoice choice = ChooseAppSeries(*after, *src);
//   RequestWindow w = ComputeRequestWindow(*before, *after, /*seconds=*/30, choice, *src);
//   w.requests;         // e.g. 3000 requests in the window
//   w.latency_buckets;  // cumulative (upper bound in seconds, observations in the window)
#ifndef BOOSTER_SIDECAR_SAMPLE_APP_METRICS_H_
#define BOOSTER_SIDECAR_SAMPLE_APP_METRICS_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sidecar/sample/prom_text.h"

namespace booster::agent {

// Where the application's metrics are and what they are called: the JSON object of
// BOOSTER_APP_METRICS / --app-metrics, every field optional. Empty names are found by
// ChooseAppSeries.
struct AppMetricsSource {
  int port = 0;                     // 0: find the port (the pod's listening sockets)
  std::string path = "/metrics";    // with a leading '/'
  std::string url;                  // --app-metrics-url: wins over port and path
  std::string latency_histogram;    // a histogram family, e.g. http_request_duration_seconds
  std::string request_counter;      // a counter, e.g. http_requests_total
  std::string error_label;          // "": code, then status, status_code, ...
  std::string error_match = "5..";  // a regular expression matched against the whole value
};

// {"port": 8080, "path": "/metrics", "latencyHistogram": "...", "requestCounter": "...",
//  "errorLabel": "code", "errorMatch": "5.."}; "" and "{}" give the defaults. Unknown keys,
// wrong types, a port outside 1..65535, a path without '/' or a bad regular expression are
// kInvalidArgument.
absl::StatusOr<AppMetricsSource> ParseAppMetricsSource(absl::string_view json);

// One line for logs: port=8080 path=/metrics latencyHistogram=auto ...
std::string DescribeAppMetricsSource(const AppMetricsSource& source);

// The error labels tried, in order, when the source names none.
inline constexpr absl::string_view kDefaultErrorLabels[] = {
    "code", "status", "status_code", "http_status", "http_response_status_code"};

// The series the agent reads for requests. Empty when not found.
struct AppSeriesChoice {
  std::string histogram;       // family name; its _bucket series carry `le`
  double histogram_scale = 1;  // bound unit -> seconds (1e-3 for *_milliseconds)
  std::string counter;         // sample name of the counter, e.g. http_requests_total
  std::string note;            // what is missing and why, for the report
};

// Names given in `source` are used as given (and reported missing when absent, never
// replaced by a guess). Otherwise, among histograms (a `# TYPE` histogram, or `_bucket`
// series with `le`) and counters, the first that matches, in this order:
//   histogram: http_request_duration_seconds, http_server_request_duration_seconds,
//              http_server_requests_seconds, *_request_duration_seconds, *_latency_seconds
//   counter:   http_requests_total, http_server_requests_total, *_requests_total
// Names with a `client` part (outgoing calls) and promhttp's own scrape counter are never
// chosen. A counter named like the histogram (http_request_... -> http_requests_total)
// comes first; ties go to the series with more observations, then to the smaller name.
AppSeriesChoice ChooseAppSeries(const PromScrape& scrape, const AppMetricsSource& source);

// ChooseAppSeries, but a series chosen before stays chosen while the scrape still has
// it, so windows stay comparable when another candidate briefly has more traffic.
AppSeriesChoice KeepOrChooseAppSeries(const AppSeriesChoice& previous, const PromScrape& scrape,
                                      const AppMetricsSource& source);

// What the application's series say about one window.
struct RequestWindow {
  double seconds = 0;  // between the two scrapes
  // Latency: the histogram's buckets summed over its label sets, cumulative, bounds in
  // seconds, ending at +Inf. Empty without a histogram.
  std::string histogram;
  std::vector<std::pair<double, double>> latency_buckets;
  double latency_count = 0;  // observations in the window
  // Requests in the window: the counter summed over its label sets, else the histogram's
  // count. request_source is "" when neither exists.
  std::string request_source;
  double requests = 0;
  // Errors: series of one family whose error label matches error_match, and the requests
  // of that same family (the denominator of the error rate). error_source is "" when no
  // family has an error label.
  std::string error_source;  // e.g. http_requests_total{code=~"5.."}
  double errors = 0;
  double error_base = 0;
  std::vector<std::string> notes;  // why a part is missing
};

// Counters that went down between the scrapes were reset: their value after counts
// whole (as PromQL's increase()). Series new in `after` count from zero.
RequestWindow ComputeRequestWindow(const PromScrape& before, const PromScrape& after,
                                   double seconds, const AppSeriesChoice& choice,
                                   const AppMetricsSource& source);

// The Go runtime's series the agent reads, as github.com/prometheus/client_golang names
// them. The GC's CPU counter is runtime/metrics' /cpu/classes/gc/total:cpu-seconds, which
// client_golang exports only when the app enables runtime metrics
// (collectors.WithGoCollectorRuntimeMetrics); the heap gauge comes with its default Go
// collector (runtime.MemStats.HeapAlloc, /memory/classes/heap/objects:bytes).
inline constexpr absl::string_view kGoGcCpuSecondsCounter =
    "go_cpu_classes_gc_total_cpu_seconds_total";
inline constexpr absl::string_view kGoHeapBytesGauge = "go_memstats_heap_alloc_bytes";

// What the Go runtime's series say about one window between two scrapes.
struct GoRuntimeWindow {
  double seconds = 0;  // between the two scrapes
  // The increase of kGoGcCpuSecondsCounter (CounterIncrease: resets and new series count
  // from zero); nullopt when the later scrape does not have it.
  std::optional<double> gc_cpu_seconds;
  // kGoHeapBytesGauge at the later scrape; nullopt when it does not have it.
  std::optional<double> heap_bytes;
};

GoRuntimeWindow ComputeGoRuntimeWindow(const PromScrape& before, const PromScrape& after,
                                       double seconds);

}  // namespace booster::agent

#endif  // BOOSTER_SIDECAR_SAMPLE_APP_METRICS_H_
