#include "sidecar/sample/window_metrics.h"

#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace booster::agent {
namespace {

using ::testing::HasSubstr;

// A 10-second window where everything was measured: 200 requests (10 errors), latency
// buckets 100 <= 0.01 s, 190 <= 0.1 s, 200 <= 1 s; 0.5 cores; 40 of 100 CFS periods
// throttled; 0.2 s of run-queue wait; 30 listen overflows; 5 of 1000 segments resent;
// at most 64 MiB resident over 11 ticks (the baseline's too); 0.5 s of the Go GC's CPU
// between scrapes 10 s apart (a tenth of the app's), a 20 MiB heap at the last scrape.
WindowReport Full() {
  WindowReport r;
  r.seconds = 10;
  r.ticks = 10;
  r.measured_ticks = 10;
  r.measured_seconds = 10;
  r.cpu_seconds = 5;
  r.runq_wait_seconds = 2;
  r.cpu_limited = true;
  r.cpu_stat_ticks = 10;
  r.nr_periods = 100;
  r.nr_throttled = 40;
  r.net_ticks = 10;
  r.net_seconds = 10;
  r.listen_overflows = 30;
  r.tcp_retrans_segs = 5;
  r.tcp_out_segs = 1000;
  r.rss_max_bytes = 64 << 20;
  r.rss_last_bytes = 60 << 20;
  r.rss_ticks = 11;
  GoRuntimeWindow g;
  g.seconds = 10;
  g.gc_cpu_seconds = 0.5;
  g.heap_bytes = 20 << 20;
  r.go_runtime = g;
  RequestWindow q;
  q.seconds = 10;
  q.histogram = "http_request_duration_seconds";
  q.latency_buckets = {{0.01, 100}, {0.1, 190}, {1, 200}, {INFINITY, 200}};
  q.latency_count = 200;
  q.request_source = "http_requests_total";
  q.requests = 200;
  q.error_source = "http_requests_total{code=~\"5..\"}";
  q.errors = 10;
  q.error_base = 200;
  r.requests = q;
  return r;
}

struct Expect {
  std::optional<double> value;  // nullopt: missing
  int64_t samples = 0;
  std::string missing;  // a substring of the reason
};

struct Case {
  std::string name;
  std::function<void(WindowReport&)> change;
  std::map<std::string, Expect> expect;  // metrics not listed keep their Full() value
};

const std::map<std::string, Expect>& FullValues() {
  static const auto* v = new std::map<std::string, Expect>{
      {"latencyP50", {0.01, 200, ""}},
      {"latencyP99", {0.1 + 0.9 * 8 / 10, 200, ""}},
      {"latencyP999", {0.1 + 0.9 * 9.8 / 10, 200, ""}},
      {"throughput", {20, 200, ""}},
      {"errorRate", {0.05, 200, ""}},
      {"cpuPerRequest", {0.5 / 20, 200, ""}},
      {"cpuThrottling", {0.4, 10, ""}},
      {"runQueueDelay", {0.2, 10, ""}},
      {"listenOverflows", {3, 10, ""}},
      {"retransmits", {0.005, 10, ""}},
      {"memoryRss", {64 << 20, 11, ""}},
      {"goGcCpuShare", {0.1, 10, ""}},
      {"goHeapBytes", {20 << 20, 1, ""}},
  };
  return *v;
}

std::vector<Case> Cases() {
  Expect none_requests{std::nullopt, 0, "no request in the window"};
  return {
      {"everything measured", [](WindowReport&) {}, {}},
      {"app metrics not scraped at all",
       [](WindowReport& r) {
         r.requests.reset();
         r.go_runtime.reset();
       },
       {{"goGcCpuShare", {std::nullopt, 0, "the application's metrics are not scraped"}},
        {"goHeapBytes", {std::nullopt, 0, "the application's metrics are not scraped"}},
        {"latencyP50", {std::nullopt, 0, "not scraped"}},
        {"latencyP99", {std::nullopt, 0, "not scraped"}},
        {"latencyP999", {std::nullopt, 0, "not scraped"}},
        {"throughput", {std::nullopt, 0, "not scraped"}},
        {"errorRate", {std::nullopt, 0, "not scraped"}},
        {"cpuPerRequest", {std::nullopt, 0, "not scraped"}}}},
      {"scrape failed",
       [](WindowReport& r) {
         r.requests.reset();
         r.go_runtime.reset();
         r.app_error = "connect http://127.0.0.1:8080/metrics: Connection refused";
       },
       {{"goGcCpuShare", {std::nullopt, 0, "no application scrape: connect"}},
        {"goHeapBytes", {std::nullopt, 0, "no application scrape: connect"}},
        {"latencyP50", {std::nullopt, 0, "no application scrape: connect"}},
        {"latencyP99", {std::nullopt, 0, "no application scrape: connect"}},
        {"latencyP999", {std::nullopt, 0, "no application scrape: connect"}},
        {"throughput", {std::nullopt, 0, "Connection refused"}},
        {"errorRate", {std::nullopt, 0, "Connection refused"}},
        {"cpuPerRequest", {std::nullopt, 0, "Connection refused"}}}},
      {"no requests in the window: rates are 0, ratios missing",
       [](WindowReport& r) {
         r.requests->latency_buckets = {{0.01, 0}, {0.1, 0}, {1, 0}, {INFINITY, 0}};
         r.requests->latency_count = 0;
         r.requests->requests = 0;
         r.requests->errors = 0;
         r.requests->error_base = 0;
       },
       {{"latencyP50", {std::nullopt, 0, "no request observed"}},
        {"latencyP99", {std::nullopt, 0, "no request observed"}},
        {"latencyP999", {std::nullopt, 0, "no request observed"}},
        {"throughput", {0.0, 0, ""}},
        {"errorRate", none_requests},
        {"cpuPerRequest", none_requests}}},
      {"no histogram: latencies missing, throughput from the counter",
       [](WindowReport& r) {
         r.requests->histogram.clear();
         r.requests->latency_buckets.clear();
         r.requests->latency_count = 0;
         r.requests->notes = {"no request latency histogram in the scrape"};
       },
       {{"latencyP50", {std::nullopt, 0, "no latency histogram (no request latency"}},
        {"latencyP99", {std::nullopt, 0, "no latency histogram"}},
        {"latencyP999", {std::nullopt, 0, "no latency histogram"}}}},
      {"no counter nor histogram: nothing request-based",
       [](WindowReport& r) {
         *r.requests = RequestWindow{};
         r.requests->seconds = 10;
       },
       {{"latencyP50", {std::nullopt, 0, "no latency histogram"}},
        {"latencyP99", {std::nullopt, 0, "no latency histogram"}},
        {"latencyP999", {std::nullopt, 0, "no latency histogram"}},
        {"throughput", {std::nullopt, 0, "no request counter or histogram"}},
        {"errorRate", {std::nullopt, 0, "no error label"}},
        {"cpuPerRequest", {std::nullopt, 0, "no request counter or histogram"}}}},
      {"no error label: error rate missing, not 0",
       [](WindowReport& r) {
         r.requests->error_source.clear();
         r.requests->errors = 0;
         r.requests->error_base = 0;
       },
       {{"errorRate", {std::nullopt, 0, "no error label"}}}},
      {"zero errors is a measured 0",
       [](WindowReport& r) { r.requests->errors = 0; },
       {{"errorRate", {0.0, 200, ""}}}},
      {"a quantile in the +Inf bucket is the highest finite bound",
       [](WindowReport& r) {
         r.requests->latency_buckets = {{0.01, 1}, {INFINITY, 200}};
       },
       {{"latencyP50", {0.01, 200, ""}},
        {"latencyP99", {0.01, 200, ""}},
        {"latencyP999", {0.01, 200, ""}}}},
      {"no target read: CPU, run queue, resident set and GC share missing",
       [](WindowReport& r) {
         r.measured_ticks = 0;
         r.measured_seconds = 0;
         r.cpu_seconds = 0;
         r.runq_wait_seconds = 0;
         r.rss_max_bytes = 0;
         r.rss_last_bytes = 0;
         r.rss_ticks = 0;
       },
       {{"cpuPerRequest", {std::nullopt, 0, "no target process was read"}},
        {"runQueueDelay", {std::nullopt, 0, "no target process was read"}},
        {"memoryRss", {std::nullopt, 0, "no target process was read"}},
        {"goGcCpuShare", {std::nullopt, 0, "no CPU measured: no target process was read"}}}},
      {"only the baseline tick read a target: its resident set counts, no CPU",
       [](WindowReport& r) {
         r.measured_ticks = 0;
         r.measured_seconds = 0;
         r.cpu_seconds = 0;
         r.runq_wait_seconds = 0;
         r.rss_ticks = 1;
       },
       {{"cpuPerRequest", {std::nullopt, 0, "no target process was read"}},
        {"runQueueDelay", {std::nullopt, 0, "no target process was read"}},
        {"memoryRss", {64 << 20, 1, ""}},
        {"goGcCpuShare", {std::nullopt, 0, "no CPU measured"}}}},
      {"a program without the Go runtime's series: both Go metrics missing, saying which",
       [](WindowReport& r) {
         r.go_runtime->gc_cpu_seconds.reset();
         r.go_runtime->heap_bytes.reset();
       },
       {{"goGcCpuShare",
         {std::nullopt, 0,
          "the app exports no go_cpu_classes_gc_total_cpu_seconds_total (client_golang: "
          "collectors.WithGoCollectorRuntimeMetrics)"}},
        {"goHeapBytes",
         {std::nullopt, 0,
          "the app exports no go_memstats_heap_alloc_bytes (client_golang's default Go "
          "collector)"}}}},
      {"client_golang's default collector: the heap without the GC's CPU",
       [](WindowReport& r) { r.go_runtime->gc_cpu_seconds.reset(); },
       {{"goGcCpuShare", {std::nullopt, 0, "collectors.WithGoCollectorRuntimeMetrics"}}}},
      {"no GC in the window is a measured 0",
       [](WindowReport& r) { r.go_runtime->gc_cpu_seconds = 0; },
       {{"goGcCpuShare", {0.0, 10, ""}}}},
      {"an app that used no CPU has no GC share",
       [](WindowReport& r) { r.cpu_seconds = 0; },
       {{"cpuPerRequest", {0.0, 200, ""}},
        {"goGcCpuShare", {std::nullopt, 0, "the app used no CPU in the window"}}}},
      {"the GC's estimate above the measured CPU is reported as computed",
       [](WindowReport& r) {
         r.go_runtime->gc_cpu_seconds = 12;  // pauses count GOMAXPROCS CPUs each
       },
       {{"goGcCpuShare", {2.4, 10, ""}}}},  // 1.2 GC cores / 0.5 app cores
      {"idle threads: run-queue delay is a measured 0",
       [](WindowReport& r) { r.runq_wait_seconds = 0; },
       {{"runQueueDelay", {0.0, 10, ""}}}},
      {"no CPU limit: throttling missing",
       [](WindowReport& r) { r.cpu_limited = false; },
       {{"cpuThrottling", {std::nullopt, 0, "no CPU limit"}}}},
      {"a limit but cpu.stat unreadable: missing",
       [](WindowReport& r) { r.cpu_stat_ticks = 0; },
       {{"cpuThrottling", {std::nullopt, 0, "cpu.stat was not read"}}}},
      {"a limit and no period ran (idle): 0 throttled",
       [](WindowReport& r) {
         r.nr_periods = 0;
         r.nr_throttled = 0;
       },
       {{"cpuThrottling", {0.0, 10, ""}}}},
      {"network counters unreadable: overflows and retransmits missing",
       [](WindowReport& r) {
         r.net_ticks = 0;
         r.net_seconds = 0;
         r.listen_overflows = 0;
         r.tcp_retrans_segs = 0;
         r.tcp_out_segs = 0;
       },
       {{"listenOverflows", {std::nullopt, 0, "netstat was not read"}},
        {"retransmits", {std::nullopt, 0, "snmp was not read"}}}},
      {"no segment sent: retransmit ratio missing, overflows a measured 0",
       [](WindowReport& r) {
         r.listen_overflows = 0;
         r.tcp_retrans_segs = 0;
         r.tcp_out_segs = 0;
       },
       {{"listenOverflows", {0.0, 10, ""}},
        {"retransmits", {std::nullopt, 0, "no TCP segment sent"}}}},
      {"app figures over the scrape interval, CPU over the measured ticks",
       [](WindowReport& r) {
         r.requests->seconds = 20;  // a scrape failed: the next window spans two
         r.go_runtime->seconds = 20;
         r.go_runtime->gc_cpu_seconds = 1;  // 0.05 GC cores
         r.measured_seconds = 5;            // half the ticks had no target
         r.cpu_seconds = 5;                 // 1 core
       },
       {{"throughput", {10, 200, ""}},
        {"cpuPerRequest", {0.1, 200, ""}},
        {"runQueueDelay", {0.4, 10, ""}},
        {"goGcCpuShare", {0.05, 10, ""}}}},
  };
}

TEST(WindowMetricsTest, EveryMetricUnderEveryCase) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    WindowReport r = Full();
    c.change(r);
    WindowMetrics m = ComputeWindowMetrics(r);
    ASSERT_EQ(m.metrics.size(), kWindowMetricNames.size());
    for (size_t i = 0; i < kWindowMetricNames.size(); ++i) {
      const std::string name(kWindowMetricNames[i]);
      SCOPED_TRACE(name);
      EXPECT_EQ(m.metrics[i].name, name);  // the CRD's order
      auto it = c.expect.find(name);
      const Expect& want = it != c.expect.end() ? it->second : FullValues().at(name);
      const MetricValue* got = m.Find(name);
      ASSERT_NE(got, nullptr);
      if (want.value.has_value()) {
        ASSERT_TRUE(got->value.has_value()) << got->missing;
        EXPECT_NEAR(*got->value, *want.value, 1e-12);
        EXPECT_EQ(got->samples, want.samples);
        EXPECT_EQ(got->missing, "");
      } else {
        EXPECT_FALSE(got->value.has_value()) << *got->value;
        EXPECT_EQ(got->samples, 0);
        EXPECT_THAT(got->missing, HasSubstr(want.missing));
      }
    }
  }
}

TEST(WindowMetricsTest, NamesMatchTheCrd) {
  // crds/boosterprofile.yaml's enum of spec.analysis.metrics[].name, in order.
  const std::vector<std::string> crd = {
      "latencyP50",    "latencyP99",    "latencyP999",   "throughput",      "errorRate",
      "cpuPerRequest", "cpuThrottling", "runQueueDelay", "listenOverflows", "retransmits",
      "memoryRss",     "goGcCpuShare",  "goHeapBytes"};
  ASSERT_EQ(kWindowMetricNames.size(), crd.size());
  for (size_t i = 0; i < crd.size(); ++i) EXPECT_EQ(kWindowMetricNames[i], crd[i]);
  WindowMetrics m = ComputeWindowMetrics(WindowReport{});
  EXPECT_EQ(m.Find("latencyP90"), nullptr);
  // An empty report measures nothing: every metric missing, none 0.
  for (const MetricValue& v : m.metrics) {
    EXPECT_FALSE(v.value.has_value()) << v.name;
    EXPECT_FALSE(v.missing.empty()) << v.name;
  }
}

}  // namespace
}  // namespace booster::agent
