#include "sidecar/report/agent_metrics.h"

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/sample/http_get.h"
#include "sidecar/sample/window_metrics.h"

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
  r.cpu_limited = true;
  r.cpu_stat_ticks = 10;
  r.nr_periods = 100;
  r.nr_throttled = 50;
  r.throttled_ratio = 0.5;
  r.rss_max_bytes = 1 << 20;
  r.rss_ticks = 11;
  GoRuntimeWindow g;
  g.seconds = 10;
  g.heap_bytes = 3e6;  // client_golang's default collector: no GC CPU counter
  r.go_runtime = g;
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
  // The resident set and the Go heap are judged metrics like the others.
  EXPECT_THAT(body, HasSubstr("booster_agent_window_value{arm=\"canary\",metric=\"memoryRss\","
                              "pod=\"web-1\"} 1048576"));
  EXPECT_THAT(body, HasSubstr("booster_agent_window_samples{arm=\"canary\",metric=\"memoryRss\","
                              "pod=\"web-1\"} 11"));
  EXPECT_THAT(body, HasSubstr("booster_agent_window_value{arm=\"canary\",metric=\"goHeapBytes\","
                              "pod=\"web-1\"} 3000000"));
  // ... missing ones have no value series (never a 0) and 0 samples.
  EXPECT_THAT(body, Not(HasSubstr("booster_agent_window_value{arm=\"canary\","
                                  "metric=\"latencyP99\"")));
  EXPECT_THAT(body, Not(HasSubstr("booster_agent_window_value{arm=\"canary\","
                                  "metric=\"goGcCpuShare\"")));
  EXPECT_THAT(body, HasSubstr("booster_agent_window_samples{arm=\"canary\","
                              "metric=\"goGcCpuShare\",pod=\"web-1\"} 0"));
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

// In pods where the agent cannot read the app container's cgroup, throttling is not
// measured: no series, never a 0 that reads as "not throttled".
TEST(MetricsTest, UnmeasuredThrottlingHasNoSeries) {
  AgentMetrics m("web-1");
  absl::StatusOr<std::unique_ptr<MetricsServer>> s = MetricsServer::Start("127.0.0.1:0", &m);
  ASSERT_TRUE(s.ok()) << s.status();
  WindowRecord unread = Record();
  unread.report.cpu_stat_ticks = 0;
  unread.report.nr_periods = unread.report.nr_throttled = 0;
  unread.report.throttled_ratio = 0;
  unread.report.throttled_seconds = 0;
  unread.metrics = ComputeWindowMetrics(unread.report);
  ASSERT_FALSE(unread.metrics.Find("cpuThrottling")->value.has_value());

  m.ObserveWindow(unread);
  std::string body = Get((*s)->port(), "/metrics");
  EXPECT_THAT(body, Not(HasSubstr("booster_pod_cpu_throttled_ratio{")));
  EXPECT_THAT(body, Not(HasSubstr("booster_pod_cpu_throttled_seconds{")));
  EXPECT_THAT(body, HasSubstr("booster_pod_cpu_cores{arm=\"baseline\",pod=\"web-1\"} 1.25"));

  // Measured: the series appears; a window that cannot read cpu.stat again removes it.
  m.ObserveWindow(Record());
  body = Get((*s)->port(), "/metrics");
  EXPECT_THAT(body,
              HasSubstr("booster_pod_cpu_throttled_ratio{arm=\"baseline\",pod=\"web-1\"} 0.5"));
  m.ObserveWindow(unread);
  body = Get((*s)->port(), "/metrics");
  EXPECT_THAT(body, Not(HasSubstr("booster_pod_cpu_throttled_ratio{")));

  // Read and nothing throttled (an idle app, or no CPU limit): a measured 0.
  WindowRecord idle = Record();
  idle.report.nr_throttled = 0;
  idle.report.throttled_ratio = 0;
  m.ObserveWindow(idle);
  body = Get((*s)->port(), "/metrics");
  EXPECT_THAT(body,
              HasSubstr("booster_pod_cpu_throttled_ratio{arm=\"baseline\",pod=\"web-1\"} 0\n"));
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

TEST(MetricsTest, InfoFollowsTheArmAndKnobsShowTheDirectiveInForce) {
  AgentMetrics m("web-1");
  m.SetIdentity("node-a", "0.1.0");
  absl::StatusOr<std::unique_ptr<MetricsServer>> s = MetricsServer::Start("127.0.0.1:0", &m);
  ASSERT_TRUE(s.ok()) << s.status();
  std::string body = Get((*s)->port(), "/metrics");
  EXPECT_THAT(body, HasSubstr("booster_agent_info{arm=\"baseline\",node=\"node-a\",pod=\"web-1\","
                              "version=\"0.1.0\"} 1"));
  // An agent in observe mode has nothing in force.
  EXPECT_THAT(body, Not(HasSubstr("booster_agent_knob_outcome{")));

  // An apply on the canary: one knob took effect, one cannot act on the program.
  m.SetArm("canary");
  AppliedStatus applied;
  applied.arm = "canary";
  applied.action = "apply";
  applied.knobs = {"runtime.gomaxprocs", "runtime.listen_backlog"};
  applied.unreachable["runtime.listen_backlog"] = "a Go program";
  m.ObserveTuning(applied);
  body = Get((*s)->port(), "/metrics");
  EXPECT_THAT(body, HasSubstr("booster_agent_info{arm=\"canary\",node=\"node-a\""));
  EXPECT_THAT(body, Not(HasSubstr("booster_agent_info{arm=\"baseline\"")));
  ExpectLines(body, {"booster_agent_knob_outcome{arm=\"canary\",knob=\"runtime.gomaxprocs\","
                     "outcome=\"applied\",pod=\"web-1\"} 1",
                     "booster_agent_knob_outcome{arm=\"canary\",knob=\"runtime.listen_backlog\","
                     "outcome=\"not_reachable\",pod=\"web-1\"} 1"});

  // A directive that fails leaves none of its knobs in force: all of them failed, and the
  // previous directive's series are gone.
  AppliedStatus failed;
  failed.arm = "canary";
  failed.action = "apply";
  failed.ok = false;
  failed.knobs = {"sysctl.net.core.somaxconn"};
  failed.failed_knobs = {"sysctl.net.core.somaxconn"};
  m.ObserveTuning(failed);
  body = Get((*s)->port(), "/metrics");
  EXPECT_THAT(body, HasSubstr("booster_agent_knob_outcome{arm=\"canary\","
                              "knob=\"sysctl.net.core.somaxconn\",outcome=\"failed\""));
  EXPECT_THAT(body, Not(HasSubstr("runtime.gomaxprocs")));

  // A failure that is no knob's is the directive's.
  AppliedStatus no_target;
  no_target.arm = "canary";
  no_target.action = "apply";
  no_target.ok = false;
  m.ObserveTuning(no_target);
  EXPECT_THAT(Get((*s)->port(), "/metrics"),
              HasSubstr("booster_agent_knob_outcome{arm=\"canary\",knob=\"directive\","
                        "outcome=\"failed\""));

  // A rollback puts nothing in force.
  AppliedStatus rollback;
  rollback.arm = "baseline";
  rollback.action = "rollback";
  m.ObserveTuning(rollback);
  EXPECT_THAT(Get((*s)->port(), "/metrics"), Not(HasSubstr("booster_agent_knob_outcome{")));
}

// The value of the sample of `name` with pod="web-1" in `body`; -1 when absent.
double PodSample(const std::string& body, const std::string& name) {
  const std::string prefix = name + "{pod=\"web-1\"} ";
  size_t at = body.find("\n" + prefix);
  if (at == std::string::npos) return -1;
  return std::stod(body.substr(at + 1 + prefix.size()));
}

TEST(MetricsTest, TheAgentsOwnCpuAndMemoryAreReadAtEveryScrape) {
  AgentMetrics m("web-1");
  absl::StatusOr<std::unique_ptr<MetricsServer>> s = MetricsServer::Start("127.0.0.1:0", &m);
  ASSERT_TRUE(s.ok()) << s.status();
  const double rss = PodSample(Get((*s)->port(), "/metrics"), "booster_agent_resident_memory_bytes");
  // This test process is the agent here: it has some memory resident, more than a page.
  EXPECT_GT(rss, 4096);
  // Burn CPU until the kernel's count of this process moves on (ticks are 10 ms).
  const double before = PodSample(Get((*s)->port(), "/metrics"), "booster_agent_cpu_seconds_total");
  ASSERT_GE(before, 0);
  double after = before;
  volatile uint64_t sink = 0;
  for (int round = 0; round < 200 && after <= before; ++round) {
    for (int i = 0; i < 2'000'000; ++i) sink = sink + i;
    after = PodSample(Get((*s)->port(), "/metrics"), "booster_agent_cpu_seconds_total");
  }
  EXPECT_GT(after, before);
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
