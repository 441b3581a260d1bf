// The Prometheus metrics' queries as the operator reports them (metric_queries.h).
#include "operator/controller/metric_queries.h"

#include <memory>
#include <mutex>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "operator/kube/client.h"
#include "operator/kube/fake_transport.h"
#include "prometheus/text_serializer.h"

namespace booster::controller {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

kube::ObjectPtr Pod(const std::string& name, const std::string& marker, const std::string& phase,
                    const std::string& started, bool deleting = false) {
  kube::Json p = {{"apiVersion", "v1"},
                  {"kind", "Pod"},
                  {"metadata",
                   {{"name", name},
                    {"namespace", "shop"},
                    {"creationTimestamp", "2026-12-01T10:00:00Z"},
                    {"annotations", {{"booster.dev/template-hash", marker}}}}},
                  {"status", {{"phase", phase}, {"startTime", started}}}};
  if (deleting) p["metadata"]["deletionTimestamp"] = "2026-12-01T10:09:00Z";
  return std::make_shared<const kube::Json>(p);
}

TEST(ArmPodsOfTest, TheRunningPodsOfTheArmsTemplateAndTheNewestStart) {
  kube::Store pods;
  pods.AddIndexer(kube::kNamespaceIndex, kube::NamespaceIndexFunc);
  pods.Upsert(Pod("web-booster-b", "canary-hash", "Running", "2026-12-01T10:05:00Z"));
  pods.Upsert(Pod("web-booster-a", "canary-hash", "Running", "2026-12-01T10:01:00Z"));
  pods.Upsert(Pod("web-booster-c", "canary-hash", "Pending", ""));
  pods.Upsert(Pod("web-booster-d", "canary-hash", "Running", "2026-12-01T10:08:00Z", true));
  pods.Upsert(Pod("web-x", "baseline-hash", "Running", "2026-12-01T09:00:00Z"));
  promql::ArmPods canary = ArmPodsOf(pods, "shop", "canary-hash");
  EXPECT_THAT(canary.names, ::testing::ElementsAre("web-booster-a", "web-booster-b"));
  EXPECT_EQ(canary.newest_start, absl::FromUnixSeconds(1796119500));  // 10:05
  EXPECT_TRUE(ArmPodsOf(pods, "other", "canary-hash").names.empty());
  EXPECT_TRUE(ArmPodsOf(pods, "shop", "").names.empty());
}

promql::QueryReport Report(promql::QueryOutcome outcome, bool changed, bool recovered = false) {
  promql::QueryReport r;
  r.ns = "shop";
  r.profile = "web";
  r.metric = "checkoutLatency";
  r.arm = "canary";
  r.query = R"(sum(rate(x{pod=~"web-booster-a"}[5s])))";
  r.at = absl::FromUnixSeconds(1796119500);
  r.result.outcome = outcome;
  r.result.message = outcome == promql::QueryOutcome::kValue ? "" : "the query matched no series";
  r.changed = changed;
  r.recovered = recovered;
  return r;
}

class MetricQueriesTest : public ::testing::Test {
 protected:
  MetricQueriesTest() {
    kube::Config config;
    config.server = "https://127.0.0.1:1";
    config.qps = 0;
    client_ = std::make_unique<kube::Client>(
        config, std::make_unique<kube::testing::FakeTransport>([this](const kube::HttpRequest& r) {
          std::lock_guard<std::mutex> l(mu_);
          if (r.method == "POST") events_.push_back(kube::Json::parse(r.body));
          return kube::HttpResponse{201, r.body, ""};
        }),
        &clock_);
    recorder_ = std::make_unique<kube::EventRecorder>(client_.get(), "booster-operator", &clock_);
    profiles_.Upsert(std::make_shared<const kube::Json>(
        kube::Json{{"apiVersion", "booster.dev/v1alpha1"},
                   {"kind", "BoosterProfile"},
                   {"metadata", {{"name", "web"}, {"namespace", "shop"}, {"uid", "u1"}}}}));
  }
  std::string Exposition() { return prometheus::TextSerializer().Serialize(registry_.Collect()); }

  FakeClock clock_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<kube::EventRecorder> recorder_;
  kube::Store profiles_;
  prometheus::Registry registry_;
  std::mutex mu_;
  std::vector<kube::Json> events_;
};

TEST_F(MetricQueriesTest, EveryAnswerCountsAFailureStreakIsOneWarningWithTheQuery) {
  MetricQueries reports(registry_, recorder_.get(), &profiles_);
  reports.Answered(Report(promql::QueryOutcome::kValue, true));
  reports.Answered(Report(promql::QueryOutcome::kEmpty, true));
  reports.Answered(Report(promql::QueryOutcome::kEmpty, false));
  reports.Answered(Report(promql::QueryOutcome::kValue, true, true));
  const std::string text = Exposition();
  EXPECT_THAT(
      text,
      HasSubstr(
          R"(booster_operator_metric_queries_total{arm="canary",metric="checkoutLatency",namespace="shop",profile="web",result="empty"} 2)"));
  EXPECT_THAT(text, HasSubstr(R"(result="value"} 2)"));
  std::lock_guard<std::mutex> l(mu_);
  ASSERT_EQ(events_.size(), 2u) << "the first value is no news; one Warning per streak";
  EXPECT_EQ(events_[0].value("reason", ""), "MetricQueryFailed");
  EXPECT_EQ(events_[0].value("type", ""), "Warning");
  EXPECT_EQ(
      events_[0].value("message", ""),
      R"(metric checkoutLatency, canary arm: Empty: the query matched no series; query: sum(rate(x{pod=~"web-booster-a"}[5s])))");
  EXPECT_EQ(events_[1].value("reason", ""), "MetricQueryAnswered");
  EXPECT_EQ(events_[1].value("type", ""), "Normal");
}

TEST(QueryFailureMessageTest, ALongQueryIsCut) {
  promql::QueryReport r = Report(promql::QueryOutcome::kError, true);
  r.query = std::string(2000, 'x');
  const std::string m = QueryFailureMessage(r);
  EXPECT_LT(m.size(), 800u);
  EXPECT_THAT(m, HasSubstr("xxx..."));
  EXPECT_THAT(m, Not(HasSubstr(std::string(601, 'x'))));
}

}  // namespace
}  // namespace booster::controller
