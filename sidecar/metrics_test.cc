#include "sidecar/metrics.h"

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/http_get.h"
#include "sidecar/window_metrics.h"

namespace booster::agent {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

std::string Get(int port, const std::string& path, int* code = nullptr) {
  absl::StatusOr<HttpResponse> r =
      HttpFetch("http://127.0.0.1:" + std::to_string(port) + path, absl::Seconds(5));
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return "";
  if (code != nullptr) *code = r->code;
  return r->body;
}

WindowRecord Record() {
  WindowRecord rec;
  WindowReport& r = rec.report;
  r.cpu_cores = 1.25;
  r.throttled_ratio = 0.5;
  r.rss_max_bytes = 1 << 20;
  PromWindow app;
  app.counter_rates["http_requests_total{code=\"200\"}"] = 42;
  app.histograms["http_request_duration_seconds"].p99 = 0.25;
  r.app = app;
  // Throughput measured, latency not (no histogram), kernel figures measured.
  RequestWindow q;
  q.seconds = 10;
  q.request_source = "http_requests_total";
  q.requests = 420;
  r.requests = q;
  r.measured_ticks = 10;
  r.measured_seconds = 10;
  r.runq_wait_seconds = 0.5;
  rec.sequence = 7;
  rec.metrics = ComputeWindowMetrics(r);
  return rec;
}

TEST(MetricsTest, ServesFiguresLabelledWithPodAndArm) {
  AgentMetrics m("web-1");
  absl::StatusOr<std::unique_ptr<MetricsServer>> s = MetricsServer::Start("127.0.0.1:0", &m);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_GT((*s)->port(), 0);

  m.SetArm("canary");
  m.ObserveWindow(Record());
  m.ObserveSample(0.001, true);
  m.ObserveScrape(false);

  int code = 0;
  std::string body = Get((*s)->port(), "/metrics", &code);
  EXPECT_EQ(code, 200);
  EXPECT_THAT(body, HasSubstr("booster_pod_cpu_cores{arm=\"canary\",pod=\"web-1\"} 1.25"));
  EXPECT_THAT(body, HasSubstr("booster_pod_cpu_throttled_ratio{arm=\"canary\",pod=\"web-1\"} 0.5"));
  EXPECT_THAT(body, HasSubstr("booster_agent_samples_total{pod=\"web-1\"} 1"));
  EXPECT_THAT(body, HasSubstr("booster_agent_app_scrape_errors_total{pod=\"web-1\"} 1"));
  EXPECT_THAT(body, HasSubstr("booster_agent_windows_total{pod=\"web-1\"} 1"));
  EXPECT_THAT(body, HasSubstr("booster_agent_window_sequence{pod=\"web-1\"} 7"));
  EXPECT_THAT(body, HasSubstr("quantile=\"0.99\""));
  EXPECT_THAT(body, HasSubstr("booster_pod_app_rate{arm=\"canary\",pod=\"web-1\","));
  // Per-metric window values: measured ones have a value and their sample count ...
  EXPECT_THAT(body, HasSubstr("booster_agent_window_value{arm=\"canary\",metric=\"throughput\","
                              "pod=\"web-1\"} 42"));
  EXPECT_THAT(body, HasSubstr("booster_agent_window_samples{arm=\"canary\",metric=\"throughput\","
                              "pod=\"web-1\"} 420"));
  EXPECT_THAT(body, HasSubstr("booster_agent_window_value{arm=\"canary\",metric=\"runQueueDelay\","
                              "pod=\"web-1\"} 0.05"));
  // ... missing ones have no value series (never a 0) and 0 samples.
  EXPECT_THAT(body, Not(HasSubstr("booster_agent_window_value{arm=\"canary\","
                                  "metric=\"latencyP99\"")));
  EXPECT_THAT(body, HasSubstr("booster_agent_window_samples{arm=\"canary\",metric=\"latencyP99\","
                              "pod=\"web-1\"} 0"));

  // A metric measured in one window and missing in the next loses its value series.
  WindowRecord next = Record();
  next.report.requests.reset();
  next.report.app_error = "connection refused";
  next.metrics = ComputeWindowMetrics(next.report);
  m.ObserveWindow(next);
  body = Get((*s)->port(), "/metrics");
  EXPECT_THAT(body, Not(HasSubstr("metric=\"throughput\",pod=\"web-1\"} 42")));
  EXPECT_THAT(body, Not(HasSubstr("booster_agent_window_value{arm=\"canary\","
                                  "metric=\"throughput\"")));

  // After an arm change the old arm's series are gone.
  m.SetArm("baseline");
  m.ObserveWindow(Record());
  body = Get((*s)->port(), "/metrics");
  EXPECT_THAT(body, Not(HasSubstr("arm=\"canary\"")));
  EXPECT_THAT(body, HasSubstr("booster_agent_window_value{arm=\"baseline\",metric=\"throughput\""));
}

TEST(MetricsTest, HealthzAnswers503UnlessTheLoopRuns) {
  FakeClock clock;
  AgentMetrics m("web-1", &clock);
  m.SetStallTimeout(absl::Seconds(60));
  absl::StatusOr<std::unique_ptr<MetricsServer>> s = MetricsServer::Start("127.0.0.1:0", &m);
  ASSERT_TRUE(s.ok()) << s.status();
  int port = (*s)->port();
  int code = 0;

  EXPECT_THAT(Get(port, "/healthz", &code), StartsWith("starting"));
  EXPECT_EQ(code, 503);

  m.SetPhase(AgentMetrics::Phase::kRunning);
  EXPECT_EQ(Get(port, "/healthz", &code), "ok\n");
  EXPECT_EQ(code, 200);
  EXPECT_THAT(Get(port, "/metrics"), HasSubstr("booster_agent_healthy{pod=\"web-1\"} 1"));

  // Sampling trouble is reported, not fatal: a restart would not fix it, and the agent's
  // readiness is part of the pod's.
  m.SetDegraded("sampling fails: permission denied");
  EXPECT_THAT(Get(port, "/healthz", &code), HasSubstr("degraded: sampling fails"));
  EXPECT_EQ(code, 200);

  // No tick for longer than the stall timeout: a stuck loop.
  clock.Advance(absl::Seconds(61));
  EXPECT_THAT(Get(port, "/healthz", &code), StartsWith("stalled: no tick completed for 1m1s"));
  EXPECT_EQ(code, 503);
  EXPECT_THAT(Get(port, "/metrics"), HasSubstr("booster_agent_healthy{pod=\"web-1\"} 0"));
  m.Heartbeat();
  Get(port, "/healthz", &code);
  EXPECT_EQ(code, 200);

  m.SetPhase(AgentMetrics::Phase::kStopping);
  EXPECT_THAT(Get(port, "/healthz", &code), StartsWith("stopping"));
  EXPECT_EQ(code, 503);
}

void ExpectLines(const std::string& body, std::initializer_list<const char*> lines) {
  for (const char* line : lines) EXPECT_THAT(body, HasSubstr(line));
}

TEST(MetricsTest, FeedbackFiguresAreReadFromTheClientAtEveryScrape) {
  AgentMetrics m("web-1");
  absl::StatusOr<std::unique_ptr<MetricsServer>> s = MetricsServer::Start("127.0.0.1:0", &m);
  ASSERT_TRUE(s.ok()) << s.status();
  // An agent that does not stream has no feedback series (no "disconnected" to alert on).
  EXPECT_THAT(Get((*s)->port(), "/metrics"), Not(HasSubstr("booster_agent_feedback_")));

  absl::Mutex mu;
  FeedbackClientStats stats;
  m.EnableFeedbackMetrics([&] {
    absl::MutexLock l(&mu);
    return stats;
  });
  std::string body = Get((*s)->port(), "/metrics");
  ExpectLines(body, {"booster_agent_feedback_connected{pod=\"web-1\"} 0",
                     "booster_agent_feedback_reconnects_total{pod=\"web-1\"} 0",
                     "booster_agent_feedback_reports_sent_total{pod=\"web-1\"} 0",
                     "booster_agent_feedback_reports_acked_total{pod=\"web-1\"} 0",
                     "booster_agent_feedback_reports_dropped_total{pod=\"web-1\"} 0",
                     "booster_agent_feedback_reports_buffered{pod=\"web-1\"} 0",
                     // The operator's reasons exist before the first one.
                     "booster_agent_feedback_rejects_total{pod=\"web-1\","
                     "reason=\"stale_template\"} 0",
                     "booster_agent_feedback_rejects_total{pod=\"web-1\","
                     "reason=\"no_step\"} 0",
                     "booster_agent_feedback_rejects_total{pod=\"web-1\","
                     "reason=\"invalid_report\"} 0",
                     "# TYPE booster_agent_feedback_connected gauge",
                     "# TYPE booster_agent_feedback_reports_sent_total counter",
                     "# TYPE booster_agent_feedback_reports_buffered gauge",
                     "# TYPE booster_agent_feedback_rejects_total counter"});

  {
    absl::MutexLock l(&mu);
    stats.connected = true;
    stats.reconnects = 2;
    stats.reports_sent = 1250;
    stats.reports_acked = 1200;
    stats.reports_dropped = 3;
    stats.buffered = 47;
    stats.rejects = {{"stale_template", 4}, {"some_new_reason", 1}};
  }
  body = Get((*s)->port(), "/metrics");
  ExpectLines(body, {"booster_agent_feedback_connected{pod=\"web-1\"} 1",
                     "booster_agent_feedback_reconnects_total{pod=\"web-1\"} 2",
                     "booster_agent_feedback_reports_sent_total{pod=\"web-1\"} 1250",
                     "booster_agent_feedback_reports_acked_total{pod=\"web-1\"} 1200",
                     "booster_agent_feedback_reports_dropped_total{pod=\"web-1\"} 3",
                     "booster_agent_feedback_reports_buffered{pod=\"web-1\"} 47",
                     "booster_agent_feedback_rejects_total{pod=\"web-1\","
                     "reason=\"stale_template\"} 4",
                     "booster_agent_feedback_rejects_total{pod=\"web-1\","
                     "reason=\"some_new_reason\"} 1",
                     "booster_agent_feedback_rejects_total{pod=\"web-1\","
                     "reason=\"no_step\"} 0"});

  // Disconnected, buffer emptied by acks: the gauges follow, the counters keep their totals.
  {
    absl::MutexLock l(&mu);
    stats.connected = false;
    stats.reports_acked = 1250;
    stats.buffered = 0;
  }
  ExpectLines(Get((*s)->port(), "/metrics"),
              {"booster_agent_feedback_connected{pod=\"web-1\"} 0",
               "booster_agent_feedback_reports_acked_total{pod=\"web-1\"} 1250",
               "booster_agent_feedback_reports_buffered{pod=\"web-1\"} 0",
               "booster_agent_feedback_reports_sent_total{pod=\"web-1\"} 1250"});
}

TEST(MetricsTest, ServesOnEveryInterfaceForAColonPort) {
  AgentMetrics m("p");
  absl::StatusOr<std::unique_ptr<MetricsServer>> s = MetricsServer::Start(":0", &m);
  ASSERT_TRUE(s.ok()) << s.status();
  int code = 0;
  Get((*s)->port(), "/metrics", &code);
  EXPECT_EQ(code, 200);
}

TEST(MetricsTest, AddressErrorsAreStatuses) {
  AgentMetrics m("p");
  EXPECT_EQ(MetricsServer::Start("256.0.0.1:1", &m).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MetricsServer::Start("localhost", &m).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::unique_ptr<MetricsServer>> first = MetricsServer::Start("127.0.0.1:0", &m);
  ASSERT_TRUE(first.ok());
  absl::StatusOr<std::unique_ptr<MetricsServer>> second =
      MetricsServer::Start("127.0.0.1:" + std::to_string((*first)->port()), &m);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
}

TEST(MetricsTest, CivetListeningPortForms) {
  EXPECT_EQ(*CivetListeningPort(":9901"), "9901");
  EXPECT_EQ(*CivetListeningPort("0.0.0.0:9901"), "0.0.0.0:9901");
  EXPECT_EQ(*CivetListeningPort("127.0.0.1:0"), "127.0.0.1:0");
  for (const char* bad : {"", ":", ":65536", ":-1", "9901x", "[::]:9901", "host:80", "1.2.3:80"}) {
    EXPECT_FALSE(CivetListeningPort(bad).ok()) << bad;
  }
}

TEST(HttpGetTest, ParsesUrlsAndReportsErrors) {
  absl::StatusOr<HttpUrl> u = ParseHttpUrl("http://10.0.0.1:8080/metrics?x=1");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "10.0.0.1");
  EXPECT_EQ(u->port, "8080");
  EXPECT_EQ(u->path, "/metrics?x=1");
  EXPECT_EQ(ParseHttpUrl("http://[::1]:9/m")->host, "::1");
  EXPECT_EQ(ParseHttpUrl("http://host")->port, "80");
  EXPECT_FALSE(ParseHttpUrl("https://x/").ok());
  EXPECT_FALSE(ParseHttpUrl("http://x:99999/").ok());
  // Nothing listens on port 1 of loopback: a connection error, not a hang.
  EXPECT_EQ(HttpGet("http://127.0.0.1:1/", absl::Seconds(2)).status().code(),
            absl::StatusCode::kUnavailable);
}

TEST(HttpGetTest, NonSuccessStatusIsAnErrorForGetAndAResponseForFetch) {
  AgentMetrics m("p");
  absl::StatusOr<std::unique_ptr<MetricsServer>> s = MetricsServer::Start("127.0.0.1:0", &m);
  ASSERT_TRUE(s.ok());
  std::string url = "http://127.0.0.1:" + std::to_string((*s)->port()) + "/healthz";
  absl::StatusOr<std::string> get = HttpGet(url, absl::Seconds(5));  // starting: 503
  EXPECT_EQ(get.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(get.status().message(), HasSubstr("503"));
  absl::StatusOr<HttpResponse> fetch = HttpFetch(url, absl::Seconds(5));
  ASSERT_TRUE(fetch.ok());
  EXPECT_EQ(fetch->code, 503);
}

}  // namespace
}  // namespace booster::agent
