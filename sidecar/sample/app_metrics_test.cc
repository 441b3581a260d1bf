#include "sidecar/sample/app_metrics.h"

#include <cmath>
#include <cstdlib>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/base/file_util.h"
#include "sidecar/testing/testdata.h"

namespace booster::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

using ::booster::agent_testing::Fixture;

PromScrape Parse(const std::string& text) {
  absl::StatusOr<PromScrape> s = ParsePrometheusText(text);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : PromScrape{};
}

RequestWindow Window(const std::string& before, const std::string& after, double seconds,
                     const AppMetricsSource& src = {}) {
  PromScrape a = Parse(before), b = Parse(after);
  return ComputeRequestWindow(a, b, seconds, ChooseAppSeries(b, src), src);
}

// ---- the source: BOOSTER_APP_METRICS ------------------------------------------------

TEST(AppMetricsSourceTest, EmptyMeansFindEverything) {
  for (const char* text : {"", "  ", "{}"}) {
    absl::StatusOr<AppMetricsSource> s = ParseAppMetricsSource(text);
    ASSERT_TRUE(s.ok()) << text;
    EXPECT_EQ(s->port, 0);
    EXPECT_EQ(s->path, "/metrics");
    EXPECT_EQ(s->latency_histogram, "");
    EXPECT_EQ(s->request_counter, "");
    EXPECT_EQ(s->error_label, "");
    EXPECT_EQ(s->error_match, "5..");
  }
}

TEST(AppMetricsSourceTest, EveryField) {
  absl::StatusOr<AppMetricsSource> s = ParseAppMetricsSource(
      R"({"port": 8080, "path": "/stats/prometheus", "latencyHistogram": "rpc_seconds_bucket",
          "requestCounter": "rpc_total", "errorLabel": "grpc_code", "errorMatch": "Internal|Unknown",
          "futureField": true, "errorLabelIgnored": null})");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->port, 8080);
  EXPECT_EQ(s->path, "/stats/prometheus");
  EXPECT_EQ(s->latency_histogram, "rpc_seconds");  // a _bucket name means its family
  EXPECT_EQ(s->request_counter, "rpc_total");
  EXPECT_EQ(s->error_label, "grpc_code");
  EXPECT_EQ(s->error_match, "Internal|Unknown");
  // The operator writes Kubernetes-style JSON; a port as a string is accepted too, and
  // empty strings and nulls mean "not given".
  s = ParseAppMetricsSource(R"({"port": "9090", "errorMatch": "", "latencyHistogram": null})");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->port, 9090);
  EXPECT_EQ(s->error_match, "5..");
}

TEST(AppMetricsSourceTest, BadValuesSayWhatIsWrong) {
  struct Case {
    const char* json;
    const char* message;
  } cases[] = {
      {"8080", "not a JSON object"},
      {"[1]", "not a JSON object"},
      {"{\"port\": 8080", "not a JSON object"},
      {R"({"port": 0})", "\"port\" must be a number in 1..65535"},
      {R"({"port": 70000})", "\"port\" must be a number in 1..65535"},
      {R"({"port": "http"})", "\"port\" must be a number in 1..65535"},
      {R"({"port": 80.5})", "\"port\" must be a number in 1..65535"},
      {R"({"path": "metrics"})", "\"path\" must start with '/'"},
      {R"({"errorMatch": "5(.."})", "\"errorMatch\" is not a regular expression"},
      {R"({"latencyHistogram": 3})", "\"latencyHistogram\" must be a string"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<AppMetricsSource> s = ParseAppMetricsSource(c.json);
    ASSERT_FALSE(s.ok()) << c.json;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.status().message(), HasSubstr(c.message)) << c.json;
  }
}

// ---- auto-detection on real client libraries' output ---------------------------------

// Go, client_golang 1.19 with promhttp.InstrumentHandlerDuration/Counter: between the two
// scrapes 96 requests answered 200 (6 of them slept 30 ms) and 4 answered 500.
TEST(AppMetricsTest, GoClientGolang) {
  PromScrape a = Parse(Fixture("client_golang_1.txt"));
  PromScrape b = Parse(Fixture("client_golang_2.txt"));
  AppSeriesChoice c = ChooseAppSeries(b, {});
  EXPECT_EQ(c.histogram, "http_request_duration_seconds");
  EXPECT_EQ(c.counter, "http_requests_total");  // not promhttp_metric_handler_requests_total
  EXPECT_EQ(c.note, "");
  RequestWindow w = ComputeRequestWindow(a, b, 10, c, {});
  EXPECT_EQ(w.request_source, "http_requests_total");
  EXPECT_DOUBLE_EQ(w.requests, 100);
  EXPECT_EQ(w.error_source, "http_requests_total{code=~\"5..\"}");
  EXPECT_DOUBLE_EQ(w.errors, 4);
  EXPECT_DOUBLE_EQ(w.error_base, 100);
  EXPECT_DOUBLE_EQ(w.latency_count, 100);
  // Both label sets summed per bound; observations before the window left out.
  ASSERT_EQ(w.latency_buckets.size(), 12u);
  EXPECT_THAT(w.latency_buckets.front(), Pair(0.005, 94));
  EXPECT_THAT(w.latency_buckets[3], Pair(0.05, 100));
  EXPECT_TRUE(std::isinf(w.latency_buckets.back().first));
  EXPECT_DOUBLE_EQ(BucketQuantile(0.5, w.latency_buckets), 0.005 * 50 / 94);
  EXPECT_DOUBLE_EQ(BucketQuantile(0.99, w.latency_buckets), 0.025 + 0.025 * 5 / 6);
  EXPECT_TRUE(w.notes.empty());
}

// Python, prometheus_client 0.20 with prometheus-fastapi-instrumentator's names: status
// grouped as "2xx"/"5xx", a labelled coarse histogram and an unlabelled fine one, series
// that first appear inside the window. 48 requests answered 2xx (3 slept 200 ms), 2 5xx.
TEST(AppMetricsTest, PythonPrometheusClient) {
  PromScrape a = Parse(Fixture("prometheus_client_1.txt"));
  PromScrape b = Parse(Fixture("prometheus_client_2.txt"));
  AppSeriesChoice c = ChooseAppSeries(b, {});
  EXPECT_EQ(c.histogram, "http_request_duration_seconds");
  EXPECT_EQ(c.counter, "http_requests_total");
  RequestWindow w = ComputeRequestWindow(a, b, 10, c, {});
  EXPECT_DOUBLE_EQ(w.requests, 50);
  EXPECT_EQ(w.error_source, "http_requests_total{status=~\"5..\"}");
  EXPECT_DOUBLE_EQ(w.errors, 2);
  EXPECT_THAT(w.latency_buckets,
              ElementsAre(Pair(0.1, 47), Pair(0.5, 50), Pair(1.0, 50), Pair(INFINITY, 50)));
  EXPECT_DOUBLE_EQ(BucketQuantile(0.99, w.latency_buckets), 0.1 + 0.4 * 2.5 / 3);
}

// The Prometheus server itself (Go): its histogram and counter are prefixed.
TEST(AppMetricsTest, PrefixedNamesOfARealGoServer) {
  PromScrape b = Parse(Fixture("app_metrics_2.txt"));
  AppSeriesChoice c = ChooseAppSeries(b, {});
  EXPECT_EQ(c.histogram, "prometheus_http_request_duration_seconds");
  EXPECT_EQ(c.counter, "prometheus_http_requests_total");
  RequestWindow w = ComputeRequestWindow(Parse(Fixture("app_metrics_1.txt")), b, 4, c, {});
  EXPECT_GT(w.requests, 0);
  EXPECT_EQ(w.error_source, "prometheus_http_requests_total{code=~\"5..\"}");
  EXPECT_DOUBLE_EQ(w.errors, 0);
}

// ---- detection rules on hand-written text ------------------------------------------

TEST(AppMetricsTest, UntypedTextIsDetectedToo) {
  RequestWindow w = Window(
      "api_latency_seconds_bucket{le=\"0.1\"} 1\napi_latency_seconds_bucket{le=\"+Inf\"} 1\n"
      "api_requests_total{code=\"200\"} 1\n",
      "api_latency_seconds_bucket{le=\"0.1\"} 5\napi_latency_seconds_bucket{le=\"+Inf\"} 11\n"
      "api_requests_total{code=\"200\"} 11\n",
      5);
  EXPECT_EQ(w.histogram, "api_latency_seconds");
  EXPECT_DOUBLE_EQ(w.latency_count, 10);
  EXPECT_EQ(w.request_source, "api_requests_total");
  EXPECT_DOUBLE_EQ(w.requests, 10);
  EXPECT_DOUBLE_EQ(w.errors, 0);
  EXPECT_DOUBLE_EQ(w.error_base, 10);
}

TEST(AppMetricsTest, OutgoingCallsAreNotTheAppsRequests) {
  const char* text =
      "# TYPE http_client_request_duration_seconds histogram\n"
      "http_client_request_duration_seconds_bucket{le=\"+Inf\"} 9\n"
      "# TYPE http_client_requests_total counter\nhttp_client_requests_total 9\n"
      "# TYPE promhttp_metric_handler_requests_total counter\n"
      "promhttp_metric_handler_requests_total{code=\"200\"} 3\n";
  AppSeriesChoice c = ChooseAppSeries(Parse(text), {});
  EXPECT_EQ(c.histogram, "");
  EXPECT_EQ(c.counter, "");
  EXPECT_THAT(c.note, HasSubstr("no request latency histogram"));
  RequestWindow w = Window(text, text, 10);
  EXPECT_EQ(w.request_source, "");
  EXPECT_THAT(w.notes, testing::Contains(HasSubstr("requests unknown")));
}

TEST(AppMetricsTest, PreferenceOrderAndTies) {
  // An exact well-known name beats a pattern match with more traffic.
  AppSeriesChoice c = ChooseAppSeries(
      Parse("# TYPE db_latency_seconds histogram\ndb_latency_seconds_bucket{le=\"+Inf\"} 900\n"
            "# TYPE http_server_request_duration_seconds histogram\n"
            "http_server_request_duration_seconds_bucket{le=\"+Inf\"} 3\n"),
      {});
  EXPECT_EQ(c.histogram, "http_server_request_duration_seconds");
  // Same rank: more observations win.
  c = ChooseAppSeries(Parse("# TYPE a_request_duration_seconds histogram\n"
                            "a_request_duration_seconds_bucket{le=\"+Inf\"} 5\n"
                            "# TYPE b_request_duration_seconds histogram\n"
                            "b_request_duration_seconds_bucket{le=\"+Inf\"} 50\n"),
                      {});
  EXPECT_EQ(c.histogram, "b_request_duration_seconds");
  // The counter named like the histogram, over a better-ranked unrelated one.
  c = ChooseAppSeries(Parse("# TYPE shop_request_duration_seconds histogram\n"
                            "shop_request_duration_seconds_bucket{le=\"+Inf\"} 5\n"
                            "# TYPE http_requests_total counter\nhttp_requests_total 900\n"
                            "# TYPE shop_requests_total counter\nshop_requests_total 5\n"),
                      {});
  EXPECT_EQ(c.counter, "shop_requests_total");
}

TEST(AppMetricsTest, NamedSeriesAreUsedAsGivenNeverGuessed) {
  AppMetricsSource src;
  src.latency_histogram = "rpc_duration_milliseconds";
  src.request_counter = "rpc";  // Python names the family without _total
  const char* before =
      "# TYPE rpc_duration_milliseconds histogram\n"
      "rpc_duration_milliseconds_bucket{le=\"10\"} 0\n"
      "rpc_duration_milliseconds_bucket{le=\"100\"} 0\n"
      "rpc_duration_milliseconds_bucket{le=\"+Inf\"} 0\n"
      "# TYPE rpc counter\nrpc_total{code=\"OK\"} 0\n"
      "# TYPE http_requests_total counter\nhttp_requests_total 0\n";
  const char* after =
      "# TYPE rpc_duration_milliseconds histogram\n"
      "rpc_duration_milliseconds_bucket{le=\"10\"} 5\n"
      "rpc_duration_milliseconds_bucket{le=\"100\"} 10\n"
      "rpc_duration_milliseconds_bucket{le=\"+Inf\"} 10\n"
      "# TYPE rpc counter\nrpc_total{code=\"OK\"} 10\n"
      "# TYPE http_requests_total counter\nhttp_requests_total 999\n";
  RequestWindow w = Window(before, after, 10, src);
  EXPECT_EQ(w.histogram, "rpc_duration_milliseconds");
  EXPECT_THAT(w.latency_buckets,
              ElementsAre(Pair(0.01, 5), Pair(0.1, 10), Pair(INFINITY, 10)));  // in seconds
  EXPECT_EQ(w.request_source, "rpc_total");
  EXPECT_DOUBLE_EQ(w.requests, 10);

  // Named but absent: missing, with the reason — not replaced by http_requests_total.
  src.latency_histogram = "nope_seconds";
  src.request_counter = "nope_total";
  AppSeriesChoice c = ChooseAppSeries(Parse(after), src);
  EXPECT_EQ(c.histogram, "");
  EXPECT_EQ(c.counter, "");
  EXPECT_THAT(c.note, HasSubstr("latency histogram nope_seconds is not in the scrape"));
  EXPECT_THAT(c.note, HasSubstr("request counter nope_total is not in the scrape"));
}

TEST(AppMetricsTest, ResetsAndNewSeries) {
  const char* before =
      "# TYPE http_requests_total counter\n"
      "http_requests_total{code=\"200\"} 1000\n"
      "# TYPE http_request_duration_seconds histogram\n"
      "http_request_duration_seconds_bucket{le=\"0.1\"} 900\n"
      "http_request_duration_seconds_bucket{le=\"+Inf\"} 1000\n";
  // The app restarted: its counters start again from 0 and now read 30; a 500 series
  // appears for the first time.
  const char* after =
      "# TYPE http_requests_total counter\n"
      "http_requests_total{code=\"200\"} 30\n"
      "http_requests_total{code=\"500\"} 3\n"
      "# TYPE http_request_duration_seconds histogram\n"
      "http_request_duration_seconds_bucket{le=\"0.1\"} 20\n"
      "http_request_duration_seconds_bucket{le=\"+Inf\"} 33\n";
  RequestWindow w = Window(before, after, 10);
  EXPECT_DOUBLE_EQ(w.requests, 33);
  EXPECT_DOUBLE_EQ(w.errors, 3);
  EXPECT_THAT(w.latency_buckets, ElementsAre(Pair(0.1, 20), Pair(INFINITY, 33)));
}

// client_golang v1.19.1's Go collector with collectors.WithGoCollectorRuntimeMetrics for
// /cpu/classes/gc/.* (testdata/README.md): the GC's CPU between the scrapes and the heap
// at the second one.
TEST(GoRuntimeTest, ClientGolangWithRuntimeMetrics) {
  PromScrape a = Parse(Fixture("client_golang_runtime_1.txt"));
  PromScrape b = Parse(Fixture("client_golang_runtime_2.txt"));
  GoRuntimeWindow g = ComputeGoRuntimeWindow(a, b, 2);
  EXPECT_EQ(g.seconds, 2);
  ASSERT_TRUE(g.gc_cpu_seconds.has_value());
  EXPECT_DOUBLE_EQ(*g.gc_cpu_seconds, 0.064477451 - 0.008629766);
  ASSERT_TRUE(g.heap_bytes.has_value());
  EXPECT_DOUBLE_EQ(*g.heap_bytes, 8.503216e+06);
}

// The default collector (client_golang_*.txt) has the heap but not the GC's CPU; a program
// of another language has neither.
TEST(GoRuntimeTest, MissingSeriesAreNotZero) {
  GoRuntimeWindow g = ComputeGoRuntimeWindow(Parse(Fixture("client_golang_1.txt")),
                                             Parse(Fixture("client_golang_2.txt")), 10);
  EXPECT_EQ(g.gc_cpu_seconds, std::nullopt);
  EXPECT_EQ(g.heap_bytes, 1.818448e+06);
  g = ComputeGoRuntimeWindow(Parse(Fixture("prometheus_client_1.txt")),
                             Parse(Fixture("prometheus_client_2.txt")), 10);
  EXPECT_EQ(g.gc_cpu_seconds, std::nullopt);
  EXPECT_EQ(g.heap_bytes, std::nullopt);
}

TEST(GoRuntimeTest, ARestartCountsTheNewCounterWhole) {
  const char* before =
      "# TYPE go_cpu_classes_gc_total_cpu_seconds_total counter\n"
      "go_cpu_classes_gc_total_cpu_seconds_total 12.5\n"
      "go_memstats_heap_alloc_bytes 4e6\n";
  const char* after =
      "# TYPE go_cpu_classes_gc_total_cpu_seconds_total counter\n"
      "go_cpu_classes_gc_total_cpu_seconds_total 0.25\n"
      "go_memstats_heap_alloc_bytes 1e6\n";
  GoRuntimeWindow g = ComputeGoRuntimeWindow(Parse(before), Parse(after), 10);
  EXPECT_EQ(g.gc_cpu_seconds, 0.25);
  EXPECT_EQ(g.heap_bytes, 1e6);
  // A counter new in the second scrape counts from zero, as the request counter does.
  g = ComputeGoRuntimeWindow(PromScrape{}, Parse(after), 10);
  EXPECT_EQ(g.gc_cpu_seconds, 0.25);
}

TEST(AppMetricsTest, ErrorsFromTheHistogramWhenTheCounterHasNoErrorLabel) {
  const char* text_before =
      "# TYPE http_requests_total counter\nhttp_requests_total 0\n"
      "# TYPE http_request_duration_seconds histogram\n"
      "http_request_duration_seconds_bucket{status_code=\"200\",le=\"+Inf\"} 0\n"
      "http_request_duration_seconds_bucket{status_code=\"503\",le=\"+Inf\"} 0\n";
  const char* text_after =
      "# TYPE http_requests_total counter\nhttp_requests_total 40\n"
      "# TYPE http_request_duration_seconds histogram\n"
      "http_request_duration_seconds_bucket{status_code=\"200\",le=\"+Inf\"} 36\n"
      "http_request_duration_seconds_bucket{status_code=\"503\",le=\"+Inf\"} 4\n";
  RequestWindow w = Window(text_before, text_after, 10);
  EXPECT_EQ(w.request_source, "http_requests_total");
  EXPECT_EQ(w.error_source, "http_request_duration_seconds_count{status_code=~\"5..\"}");
  EXPECT_DOUBLE_EQ(w.errors, 4);
  EXPECT_DOUBLE_EQ(w.error_base, 40);
}

TEST(AppMetricsTest, ErrorLabelAndMatchAsConfigured) {
  const char* before = "http_requests_total{code=\"200\"} 0\nhttp_requests_total{code=\"429\"} 0\n";
  const char* after =
      "http_requests_total{code=\"200\"} 90\nhttp_requests_total{code=\"429\"} 10\n";
  AppMetricsSource src;
  src.error_match = "5..|429";
  RequestWindow w = Window(before, after, 10, src);
  EXPECT_DOUBLE_EQ(w.errors, 10);
  // A label the series do not have: no error rate, and the note says which label.
  src.error_label = "status";
  w = Window(before, after, 10, src);
  EXPECT_EQ(w.error_source, "");
  EXPECT_THAT(w.notes, testing::Contains(HasSubstr("no error label (status)")));
  // The match is anchored, as PromQL's =~: "5.." does not match "1500".
  w = Window("x_requests_total{code=\"1500\"} 0\n", "x_requests_total{code=\"1500\"} 7\n", 1);
  EXPECT_DOUBLE_EQ(w.errors, 0);
  EXPECT_DOUBLE_EQ(w.error_base, 7);
}

TEST(AppMetricsTest, OnlyBoundsEveryLabelSetHasAreSummed) {
  RequestWindow w = Window("",
                           "# TYPE http_request_duration_seconds histogram\n"
                           "http_request_duration_seconds_bucket{path=\"/a\",le=\"0.1\"} 4\n"
                           "http_request_duration_seconds_bucket{path=\"/a\",le=\"0.5\"} 6\n"
                           "http_request_duration_seconds_bucket{path=\"/a\",le=\"+Inf\"} 6\n"
                           "http_request_duration_seconds_bucket{path=\"/b\",le=\"0.5\"} 2\n"
                           "http_request_duration_seconds_bucket{path=\"/b\",le=\"+Inf\"} 3\n",
                           10);
  EXPECT_THAT(w.latency_buckets, ElementsAre(Pair(0.5, 8), Pair(INFINITY, 9)));
  EXPECT_DOUBLE_EQ(w.requests, 9);  // no counter: the histogram's count
  EXPECT_EQ(w.request_source, "http_request_duration_seconds_count");
}

TEST(AppMetricsTest, AChosenSeriesStaysWhileItExists) {
  PromScrape first = Parse("# TYPE api_requests_total counter\napi_requests_total 5\n");
  AppSeriesChoice c = KeepOrChooseAppSeries({}, first, {});
  EXPECT_EQ(c.counter, "api_requests_total");
  PromScrape later = Parse(
      "# TYPE api_requests_total counter\napi_requests_total 9\n"
      "# TYPE http_requests_total counter\nhttp_requests_total 100\n");
  EXPECT_EQ(ChooseAppSeries(later, {}).counter, "http_requests_total");
  EXPECT_EQ(KeepOrChooseAppSeries(c, later, {}).counter, "api_requests_total");
  PromScrape gone = Parse("# TYPE http_requests_total counter\nhttp_requests_total 100\n");
  EXPECT_EQ(KeepOrChooseAppSeries(c, gone, {}).counter, "http_requests_total");
}

TEST(PromTextTest, FamilyOfSamples) {
  std::map<std::string, std::string> types = {
      {"h", "histogram"}, {"c", "counter"}, {"d_total", "counter"}, {"s", "summary"}};
  EXPECT_EQ(FamilyOf("h_bucket", types), "h");
  EXPECT_EQ(FamilyOf("h_count", types), "h");
  EXPECT_EQ(FamilyOf("s_sum", types), "s");
  EXPECT_EQ(FamilyOf("c_total", types), "c");
  EXPECT_EQ(FamilyOf("d_total", types), "d_total");
  EXPECT_EQ(FamilyOf("h_total", types), "h_total");  // a histogram has no _total
  EXPECT_EQ(FamilyOf("c_bucket", types), "c_bucket");
  EXPECT_EQ(TypeOf("c_total", types), "counter");
  EXPECT_EQ(TypeOf("x", types), "untyped");
}

}  // namespace
}  // namespace booster::agent
