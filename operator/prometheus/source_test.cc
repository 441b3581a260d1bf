// The Prometheus metrics' windows (source.h): what is asked when, what the judge gets.
#include "operator/prometheus/source.h"

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace booster::promql {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);

// Answers each query from `answer` and records (query, time).
class FakeQuerier final : public Querier {
 public:
  std::function<QueryResult(const std::string&, absl::Time)> answer = [](const std::string& q,
                                                                         absl::Time) {
    // The canary arm's pods are slower.
    return QueryResult{QueryOutcome::kValue, absl::StrContains(q, "canary") ? 0.2 : 0.1, ""};
  };
  QueryResult Query(const std::string& promql, absl::Time at) override {
    std::lock_guard<std::mutex> l(mu);
    asked.emplace_back(promql, at);
    return answer(promql, at);
  }
  std::mutex mu;
  std::vector<std::pair<std::string, absl::Time>> asked;
};

class RecordingObserver final : public QueryObserver {
 public:
  void Answered(const QueryReport& r) override { reports.push_back(r); }
  std::vector<QueryReport> reports;
};

ArmPods Pods(const std::string&, const std::string& marker) {
  if (marker == "none") return {};
  return ArmPods{{absl::StrCat("web-", marker, "-1"), absl::StrCat("web-", marker, "-2")},
                 kStart - absl::Minutes(5)};
}

rollout::MetricSpec Latency() {
  rollout::MetricSpec m;
  m.name = "checkoutLatency";
  m.prometheus_query = R"(avg(latency{namespace="{{namespace}}",pod=~"{{pods}}"}[{{window}}]))";
  m.direction = rollout::Direction::kLowerIsBetter;
  return m;
}

Tracked Step(int step = 1, absl::Time analysis_start = kStart) {
  Tracked t;
  t.ns = "shop";
  t.name = "web";
  t.generation = 3;
  t.step = step;
  t.step_started = kStart - absl::Seconds(20);
  t.analysis_start = analysis_start;
  t.interval = absl::Seconds(5);
  t.metrics = {Latency()};
  t.markers = {"baseline", "canary"};
  return t;
}

analysis::WindowQuery Query(int step = 1) {
  return {.profile_namespace = "shop", .profile_name = "web", .step = step, .since = kStart};
}

TEST(PrometheusWindowsTest, EachBoundaryIsAskedOnceForEachArmAtItsOwnTime) {
  FakeQuerier querier;
  RecordingObserver observer;
  FakeClock clock(kStart);
  PrometheusWindows source(&querier, Pods, &observer, &clock);
  source.Track("shop/web", Step());
  // Nothing is due before the first boundary (plus the delay).
  EXPECT_EQ(source.RunDue(kStart + absl::Seconds(5)), kStart + absl::Milliseconds(5500));
  EXPECT_TRUE(querier.asked.empty());
  // Two boundaries passed: each asked for both arms, at the boundary's time.
  const absl::Time next = source.RunDue(kStart + absl::Seconds(11));
  EXPECT_EQ(next, kStart + absl::Milliseconds(15500));
  ASSERT_EQ(querier.asked.size(), 4u);
  EXPECT_EQ(querier.asked[0].first,
            R"(avg(latency{namespace="shop",pod=~"web-baseline-1|web-baseline-2"}[5s]))");
  EXPECT_EQ(querier.asked[0].second, kStart + absl::Seconds(5));
  EXPECT_EQ(querier.asked[1].first,
            R"(avg(latency{namespace="shop",pod=~"web-canary-1|web-canary-2"}[5s]))");
  EXPECT_EQ(querier.asked[3].second, kStart + absl::Seconds(10));
  // Asked again at the same time: nothing new.
  source.RunDue(kStart + absl::Seconds(11));
  EXPECT_EQ(querier.asked.size(), 4u);

  absl::StatusOr<analysis::ArmWindows> w = source.Windows(Query());
  ASSERT_TRUE(w.ok());
  ASSERT_EQ(w->baseline.at("checkoutLatency").size(), 2u);
  ASSERT_EQ(w->canary.at("checkoutLatency").size(), 2u);
  const analysis::Window& c = w->canary.at("checkoutLatency")[1];
  EXPECT_EQ(c.start, kStart + absl::Seconds(5));
  EXPECT_EQ(c.end, kStart + absl::Seconds(10));
  EXPECT_DOUBLE_EQ(c.value, 0.2);
  EXPECT_EQ(c.pod, "canary arm");
  EXPECT_EQ(c.pod_start, kStart - absl::Minutes(5));
  EXPECT_DOUBLE_EQ(w->baseline.at("checkoutLatency")[0].value, 0.1);
  // A window starting before the look's `since` is not the look's.
  analysis::WindowQuery later = Query();
  later.since = kStart + absl::Seconds(5);
  EXPECT_EQ(source.Windows(later)->canary.at("checkoutLatency").size(), 1u);
  // Another step's look gets nothing from this one.
  EXPECT_TRUE(source.Windows(Query(2))->canary.empty());
  // First answers are "changed" (the first of their kind), then not.
  ASSERT_EQ(observer.reports.size(), 4u);
  EXPECT_TRUE(observer.reports[0].changed);
  EXPECT_FALSE(observer.reports[2].changed);
  EXPECT_EQ(observer.reports[1].arm, "canary");
}

TEST(PrometheusWindowsTest, ErrorsAndEmptyAnswersAreReportedWithTheQueryAndAreNoWindow) {
  FakeQuerier querier;
  querier.answer = [](const std::string& q, absl::Time) {
    if (absl::StrContains(q, "canary")) {
      return QueryResult{QueryOutcome::kEmpty, 0, "the query matched no series"};
    }
    return QueryResult{QueryOutcome::kValue, 1, ""};
  };
  RecordingObserver observer;
  FakeClock clock(kStart);
  PrometheusWindows source(&querier, Pods, &observer, &clock);
  source.Track("shop/web", Step());
  source.RunDue(kStart + absl::Seconds(16));
  absl::StatusOr<analysis::ArmWindows> w = source.Windows(Query());
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->baseline.at("checkoutLatency").size(), 3u);
  EXPECT_FALSE(w->canary.contains("checkoutLatency")) << "missing data is no window";
  std::vector<bool> canary_changed;
  for (const QueryReport& r : observer.reports) {
    if (r.arm != "canary") continue;
    EXPECT_EQ(r.result.outcome, QueryOutcome::kEmpty);
    EXPECT_THAT(r.query, HasSubstr("web-canary-1|web-canary-2"));
    EXPECT_EQ(r.metric, "checkoutLatency");
    canary_changed.push_back(r.changed);
  }
  EXPECT_THAT(canary_changed, ElementsAre(true, false, false)) << "one Event, not three";
}

TEST(PrometheusWindowsTest, AnArmWithoutPodsIsAskedNothing) {
  FakeQuerier querier;
  RecordingObserver observer;
  FakeClock clock(kStart);
  PrometheusWindows source(&querier, Pods, &observer, &clock);
  Tracked t = Step();
  t.markers[0] = "none";
  source.Track("shop/web", t);
  source.RunDue(kStart + absl::Seconds(6));
  ASSERT_EQ(querier.asked.size(), 1u);
  EXPECT_THAT(querier.asked[0].first, HasSubstr("canary"));
  ASSERT_EQ(observer.reports.size(), 2u);
  EXPECT_EQ(observer.reports[0].arm, "baseline");
  EXPECT_EQ(observer.reports[0].result.outcome, QueryOutcome::kEmpty);
  EXPECT_THAT(observer.reports[0].result.message, HasSubstr("no running pods"));
}

TEST(PrometheusWindowsTest, ANewStepStartsAfreshAndAnUnstartedAnalysisAsksNothing) {
  FakeQuerier querier;
  FakeClock clock(kStart);
  PrometheusWindows source(&querier, Pods, nullptr, &clock);
  source.Track("shop/web", Step(1, absl::InfinitePast()));
  EXPECT_EQ(source.RunDue(kStart + absl::Minutes(1)), absl::InfiniteFuture());
  EXPECT_TRUE(querier.asked.empty());
  source.Track("shop/web", Step(1));
  source.RunDue(kStart + absl::Seconds(6));
  EXPECT_EQ(source.Windows(Query(1))->canary.at("checkoutLatency").size(), 1u);
  // Step 2 from t+20s: step 1's windows are gone, step 2's boundaries count from its start.
  source.Track("shop/web", Step(2, kStart + absl::Seconds(20)));
  EXPECT_TRUE(source.Windows(Query(1))->canary.empty());
  source.RunDue(kStart + absl::Seconds(26));
  ASSERT_EQ(querier.asked.size(), 4u);
  EXPECT_EQ(querier.asked.back().second, kStart + absl::Seconds(25));
  EXPECT_EQ(source.Windows(Query(2))->canary.at("checkoutLatency").size(), 1u);
  // No Prometheus metric any more (an edit): forgotten.
  Tracked none = Step(2, kStart + absl::Seconds(20));
  none.metrics.clear();
  source.Track("shop/web", none);
  EXPECT_TRUE(source.Windows(Query(2))->canary.empty());
}

TEST(PrometheusWindowsTest, ALeaderTakingOverMidStepAsksTheBoundariesItMissedInRounds) {
  FakeQuerier querier;
  FakeClock clock(kStart);
  SourceOptions options;
  options.max_queries_per_round = 10;
  PrometheusWindows source(&querier, Pods, nullptr, &clock, options);
  source.Track("shop/web", Step());
  const absl::Time now = kStart + absl::Minutes(1) + absl::Seconds(1);  // 12 boundaries
  // 5 boundaries x 2 arms per round; the next round is due at once.
  EXPECT_EQ(source.RunDue(now), now);
  EXPECT_EQ(querier.asked.size(), 10u);
  EXPECT_EQ(source.RunDue(now), now);
  EXPECT_EQ(source.RunDue(now), kStart + absl::Seconds(65) + absl::Milliseconds(500));
  EXPECT_EQ(querier.asked.size(), 24u);
  EXPECT_EQ(source.Windows(Query())->canary.at("checkoutLatency").size(), 12u);
}

TEST(PrometheusWindowsTest, TheThreadAsksAsTheClockPassesBoundaries) {
  FakeQuerier querier;
  FakeClock clock(kStart);
  PrometheusWindows source(&querier, Pods, nullptr, &clock);
  source.Start();
  source.Track("shop/web", Step());
  clock.Advance(absl::Seconds(6));
  // The judge reads while the thread asks: the windows appear once both arms answered.
  size_t seen = 0;
  for (int i = 0; i < 400 && seen < 1; ++i) {
    absl::StatusOr<analysis::ArmWindows> w = source.Windows(Query());
    ASSERT_TRUE(w.ok());
    if (w->baseline.contains("checkoutLatency") && w->canary.contains("checkoutLatency")) {
      seen = w->canary.at("checkoutLatency").size();
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  source.Stop();
  EXPECT_EQ(seen, 1u);
  std::lock_guard<std::mutex> l(querier.mu);
  EXPECT_EQ(querier.asked.size(), 2u);
}

TEST(CombinedWindowSourceTest, TheAgentsAndPrometheusWindowsTogether) {
  class Fixed final : public analysis::WindowSource {
   public:
    explicit Fixed(absl::StatusOr<analysis::ArmWindows> w) : w_(std::move(w)) {}
    absl::StatusOr<analysis::ArmWindows> Windows(const analysis::WindowQuery&) override {
      return w_;
    }
    absl::StatusOr<analysis::ArmWindows> w_;
  };
  analysis::ArmWindows agents;
  agents.canary["latencyP99"].push_back({});
  analysis::ArmWindows prom;
  prom.canary["checkoutLatency"].push_back({});
  prom.baseline["checkoutLatency"].push_back({});
  Fixed a(agents), b(prom);
  CombinedWindowSource both(&a, &b);
  absl::StatusOr<analysis::ArmWindows> w = both.Windows(Query());
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->canary.size(), 2u);
  EXPECT_EQ(w->baseline.size(), 1u);
  Fixed down(absl::UnavailableError("no store"));
  CombinedWindowSource failing(&down, &b);
  EXPECT_TRUE(absl::IsUnavailable(failing.Windows(Query()).status()));
}

TEST(PrometheusMetricsTest, OnlyTheMetricsWithAQueryInModeMetrics) {
  rollout::AnalysisSpec spec;
  spec.metrics = {rollout::MetricSpec{.name = "latencyP99"}, Latency()};
  EXPECT_EQ(PrometheusMetrics(spec).size(), 1u);
  spec.mode = rollout::AnalysisMode::kTime;
  EXPECT_TRUE(PrometheusMetrics(spec).empty());
}

}  // namespace
}  // namespace booster::promql
