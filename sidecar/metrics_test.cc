#include "sidecar/metrics.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sidecar/http_get.h"

namespace booster::agent {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(MetricsTest, ServesFiguresLabelledWithPodAndArmAndHealth) {
  AgentMetrics m("web-1");
  absl::StatusOr<std::unique_ptr<MetricsServer>> s = MetricsServer::Start("127.0.0.1:0", &m);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_GT((*s)->port(), 0);
  std::string base = "http://127.0.0.1:" + std::to_string((*s)->port());

  WindowReport r;
  r.cpu_cores = 1.25;
  r.throttled_ratio = 0.5;
  r.rss_max_bytes = 1 << 20;
  PromWindow app;
  app.counter_rates["http_requests_total{code=\"200\"}"] = 42;
  app.histograms["http_request_duration_seconds"].p99 = 0.25;
  r.app = app;
  m.SetArm("canary");
  m.ObserveWindow(r);
  m.ObserveSample(0.001, true);

  absl::StatusOr<std::string> body = HttpGet(base + "/metrics", absl::Seconds(5));
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_THAT(*body, HasSubstr("booster_pod_cpu_cores{arm=\"canary\",pod=\"web-1\"} 1.25"));
  EXPECT_THAT(*body,
              HasSubstr("booster_pod_cpu_throttled_ratio{arm=\"canary\",pod=\"web-1\"} 0.5"));
  EXPECT_THAT(*body, HasSubstr("booster_agent_samples_total{pod=\"web-1\"} 1"));
  EXPECT_THAT(*body, HasSubstr("quantile=\"0.99\""));
  EXPECT_THAT(*body, HasSubstr("booster_pod_app_rate{arm=\"canary\",pod=\"web-1\","));

  // After an arm change the old arm's series are gone.
  m.SetArm("baseline");
  m.ObserveWindow(r);
  body = HttpGet(base + "/metrics", absl::Seconds(5));
  ASSERT_TRUE(body.ok());
  EXPECT_THAT(*body, Not(HasSubstr("arm=\"canary\"")));
  EXPECT_THAT(*body, HasSubstr("arm=\"baseline\""));

  absl::StatusOr<std::string> health = HttpGet(base + "/healthz", absl::Seconds(5));
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_THAT(*health, HasSubstr("booster_agent_healthy 1"));
  m.SetHealthy(false);
  EXPECT_THAT(*HttpGet(base + "/healthz", absl::Seconds(5)), HasSubstr("booster_agent_healthy 0"));
}

TEST(MetricsTest, BindFailureIsAStatus) {
  AgentMetrics m("p");
  absl::StatusOr<std::unique_ptr<MetricsServer>> s = MetricsServer::Start("256.0.0.1:1", &m);
  EXPECT_FALSE(s.ok());
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

}  // namespace
}  // namespace booster::agent
