#include "operator/feedback/window_store.h"

#include <atomic>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace booster::feedback {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);
const StepId kStep1{.generation = 3, .step = 1, .started = kT0};
const StepId kStep2{.generation = 3, .step = 2, .started = kT0};
constexpr char kProfile[] = "shop/web-boost";

Window W(const std::string& pod, uint64_t seq, const std::string& incarnation = "inc-1",
         const std::string& hash = "h-canary") {
  Window w;
  w.pod = pod;
  w.pod_uid = pod + "-uid";
  w.pod_created = kT0 - absl::Minutes(10);
  w.node = pod + "-node";
  w.incarnation = incarnation;
  w.sequence = seq;
  w.start = kT0 + absl::Seconds(30 * static_cast<int64_t>(seq - 1));
  w.end = w.start + absl::Seconds(30);
  w.template_hash = hash;
  w.SetMetric("latencyP99", 0.010 * static_cast<double>(seq), 1000);
  w.SetMetric("throughput", 500, 30);
  return w;
}

class WindowStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { store_.BeginStep(kProfile, kStep1, {"h-base", "h-canary"}); }
  WindowStore store_;
};

TEST_F(WindowStoreTest, FilesWindowsUnderTheCurrentStepPerArm) {
  EXPECT_EQ(store_.Add(kProfile, Arm::kCanary, W("c1", 1)), AddResult::kAccepted);
  EXPECT_EQ(store_.Add(kProfile, Arm::kCanary, W("c1", 2)), AddResult::kAccepted);
  EXPECT_EQ(store_.Add(kProfile, Arm::kBaseline, W("b1", 1, "inc-b", "h-base")),
            AddResult::kAccepted);
  absl::StatusOr<StepWindows> q = store_.Query(kProfile, kStep1);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->step, kStep1);
  const ArmWindows& canary = q->arm(Arm::kCanary);
  EXPECT_EQ(canary.windows, 2u);
  ASSERT_EQ(canary.metrics.at("latencyP99").size(), 2u);
  const MetricPoint& p = canary.metrics.at("latencyP99")[1];
  EXPECT_EQ(p.pod, "c1");
  EXPECT_EQ(p.pod_uid, "c1-uid");
  EXPECT_DOUBLE_EQ(p.value, 0.020);
  EXPECT_EQ(p.samples, 1000);
  EXPECT_EQ(p.start, kT0 + absl::Seconds(30));
  EXPECT_EQ(p.end, kT0 + absl::Seconds(60));
  EXPECT_EQ(p.pod_created, kT0 - absl::Minutes(10));
  EXPECT_EQ(p.node, "c1-node");
  // A metric no window measured is absent, not zero.
  EXPECT_EQ(canary.metrics.count("errorRate"), 0u);
  EXPECT_EQ(q->arm(Arm::kBaseline).windows, 1u);
  EXPECT_EQ(q->arm(Arm::kBaseline).metrics.at("throughput").size(), 1u);
}

TEST_F(WindowStoreTest, CurrentSummaryCountsPodsAndWindowsPerArm) {
  EXPECT_FALSE(store_.CurrentSummary("shop/other").has_value());
  store_.Add(kProfile, Arm::kCanary, W("c1", 1));
  store_.Add(kProfile, Arm::kCanary, W("c1", 2));
  store_.Add(kProfile, Arm::kCanary, W("c2", 1, "inc-c2"));
  std::optional<WindowStore::StepSummary> s = store_.CurrentSummary(kProfile);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->step, kStep1);
  EXPECT_EQ(s->arms[1].pods, 2u);
  EXPECT_EQ(s->arms[1].windows, 3u);
  EXPECT_EQ(s->arms[0].pods, 0u);
  EXPECT_EQ(s->arms[0].windows, 0u);
  EXPECT_FALSE(s->arms[1].memory_rss_peak.has_value());  // no window measured it
  Window high = W("c2", 2, "inc-c2");
  ASSERT_TRUE(high.SetMetric("memoryRss", 200e6, 5));
  Window low = W("c1", 3);
  ASSERT_TRUE(low.SetMetric("memoryRss", 90e6, 5));
  store_.Add(kProfile, Arm::kCanary, high);
  store_.Add(kProfile, Arm::kCanary, low);
  s = store_.CurrentSummary(kProfile);
  EXPECT_EQ(s->arms[1].memory_rss_peak, 200e6);
  EXPECT_EQ(s->arms[1].memory_rss_peak_pod, "c2");
  EXPECT_FALSE(s->arms[0].memory_rss_peak.has_value());
  store_.BeginStep(kProfile, kStep2, {"h-base", "h-canary"});  // a new step starts empty
  s = store_.CurrentSummary(kProfile);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->step, kStep2);
  EXPECT_EQ(s->arms[1].windows, 0u);
}

TEST_F(WindowStoreTest, ReplaysCountOnceEvenAcrossSteps) {
  EXPECT_EQ(store_.Add(kProfile, Arm::kCanary, W("c1", 1)), AddResult::kAccepted);
  EXPECT_EQ(store_.Add(kProfile, Arm::kCanary, W("c1", 2)), AddResult::kAccepted);
  EXPECT_EQ(store_.Add(kProfile, Arm::kCanary, W("c1", 1)), AddResult::kDuplicate);
  EXPECT_EQ(store_.Add(kProfile, Arm::kCanary, W("c1", 2)), AddResult::kDuplicate);
  // Same sequence, another incarnation (the agent restarted) or another pod: new windows.
  EXPECT_EQ(store_.Add(kProfile, Arm::kCanary, W("c1", 1, "inc-2")), AddResult::kAccepted);
  EXPECT_EQ(store_.Add(kProfile, Arm::kCanary, W("c2", 1)), AddResult::kAccepted);
  store_.BeginStep(kProfile, kStep2, {"h-base", "h-canary"});
  EXPECT_EQ(store_.Add(kProfile, Arm::kCanary, W("c1", 2)), AddResult::kDuplicate);
  EXPECT_EQ(store_.Add(kProfile, Arm::kCanary, W("c1", 3)), AddResult::kAccepted);
  EXPECT_EQ(store_.WindowCount(kProfile, kStep1, Arm::kCanary), 4u);
  EXPECT_EQ(store_.WindowCount(kProfile, kStep2, Arm::kCanary), 1u);
}

TEST_F(WindowStoreTest, StaleTemplateHashIsDropped) {
  EXPECT_EQ(store_.Add(kProfile, Arm::kCanary, W("c1", 1, "inc-1", "h-old")),
            AddResult::kStaleTemplate);
  // Each arm has its own hash.
  EXPECT_EQ(store_.Add(kProfile, Arm::kBaseline, W("b1", 1, "inc-1", "h-canary")),
            AddResult::kStaleTemplate);
  EXPECT_EQ(store_.WindowCount(kProfile, kStep1, Arm::kCanary), 0u);
  // A dropped window is not remembered: once the hash is current it is accepted.
  store_.BeginStep(kProfile, kStep1, {"h-base", "h-old"});
  EXPECT_EQ(store_.Add(kProfile, Arm::kCanary, W("c1", 1, "inc-1", "h-old")), AddResult::kAccepted);
  // An empty hash accepts any.
  store_.BeginStep(kProfile, kStep1, {"", ""});
  EXPECT_EQ(store_.Add(kProfile, Arm::kCanary, W("c1", 2, "inc-1", "anything")),
            AddResult::kAccepted);
  EXPECT_EQ(store_.WindowCount(kProfile, kStep1, Arm::kCanary), 2u)
      << "re-opening the current step keeps its windows";
}

TEST_F(WindowStoreTest, WithNoStepOpenWindowsAreHeldUntilOneIs) {
  // A leader that just took over: the agents' replays come before its first reconcile.
  EXPECT_EQ(store_.Add("shop/other", Arm::kCanary, W("c1", 1)), AddResult::kHeld);
  EXPECT_EQ(store_.Add("shop/other", Arm::kCanary, W("c1", 2, "inc-1", "h-old")),
            AddResult::kHeld);
  EXPECT_EQ(store_.Add("shop/other", Arm::kCanary, W("c1", 1)), AddResult::kHeld)
      << "held twice, filed once";
  EXPECT_EQ(store_.Add("shop/other", Arm::kBaseline, W("b1", 1, "inc-b", "h-base")),
            AddResult::kHeld);
  EXPECT_FALSE(store_.CurrentStep("shop/other"));
  EXPECT_TRUE(absl::IsNotFound(store_.Query("shop/other", kStep1).status()));
  store_.BeginStep("shop/other", kStep1, {"h-base", "h-canary"});
  EXPECT_EQ(store_.WindowCount("shop/other", kStep1, Arm::kCanary), 1u)
      << "window 2 ran another template; window 1's second copy is a duplicate";
  EXPECT_EQ(store_.WindowCount("shop/other", kStep1, Arm::kBaseline), 1u);
  EXPECT_EQ(store_.Add("shop/other", Arm::kCanary, W("c1", 1)), AddResult::kDuplicate);
  EXPECT_EQ(store_.Add("shop/other", Arm::kCanary, W("c1", 3)), AddResult::kAccepted);

  // Forget drops what is held.
  store_.Forget(kProfile);
  EXPECT_EQ(store_.Add(kProfile, Arm::kCanary, W("c1", 1)), AddResult::kHeld);
  store_.Forget(kProfile);
  store_.BeginStep(kProfile, kStep1, {"h-base", "h-canary"});
  EXPECT_EQ(store_.WindowCount(kProfile, kStep1, Arm::kCanary), 0u);
}

TEST_F(WindowStoreTest, WindowsThatEndedBeforeTheStepStartedAreRefused) {
  // The agents send their acknowledged history again on every new stream.
  const StepId later{.generation = 3, .step = 2, .started = kT0 + absl::Seconds(60)};
  store_.BeginStep(kProfile, later, {"h-base", "h-canary"});
  EXPECT_EQ(store_.Add(kProfile, Arm::kCanary, W("c1", 1)), AddResult::kBeforeStep);  // 0-30 s
  EXPECT_EQ(store_.Add(kProfile, Arm::kCanary, W("c1", 2)), AddResult::kBeforeStep)
      << "30-60 s: ends as the step starts";
  EXPECT_EQ(store_.Add(kProfile, Arm::kCanary, W("c1", 3, "inc-1", "h-old")),
            AddResult::kStaleTemplate);
  EXPECT_EQ(store_.Add(kProfile, Arm::kCanary, W("c1", 4)), AddResult::kAccepted);
  EXPECT_EQ(store_.WindowCount(kProfile, later, Arm::kCanary), 1u);
}

TEST(WindowStoreBoundsTest, HeldWindowsAreBoundedAndNeverPushOutAMeasuredStep) {
  WindowStore store({.max_profiles = 2, .max_held_per_profile = 2});
  store.BeginStep("ns/a", kStep1, {"", ""});
  for (uint64_t s = 1; s <= 3; ++s) {
    EXPECT_EQ(store.Add("ns/held", Arm::kCanary, W("c1", s)), AddResult::kHeld);
  }
  EXPECT_EQ(store.Add("ns/other", Arm::kCanary, W("c1", 1)), AddResult::kHeld)
      << "pushes out ns/held, which has no step";
  EXPECT_EQ(store.ProfileCount(), 2u);
  EXPECT_TRUE(store.CurrentStep("ns/a"));
  store.BeginStep("ns/held", kStep1, {"", ""});  // pushes out ns/other
  EXPECT_EQ(store.WindowCount("ns/held", kStep1, Arm::kCanary), 0u) << "forgotten with it";
  EXPECT_EQ(store.Add("ns/third", Arm::kCanary, W("c1", 1)), AddResult::kNoStep)
      << "both profiles are measured: no room to hold";
  EXPECT_TRUE(store.CurrentStep("ns/a"));
  EXPECT_TRUE(store.CurrentStep("ns/held"));

  // The newest held windows are kept.
  WindowStore small({.max_held_per_profile = 2});
  for (uint64_t s = 1; s <= 3; ++s) ASSERT_EQ(small.Add(kProfile, Arm::kCanary, W("c1", s)), AddResult::kHeld);
  small.BeginStep(kProfile, kStep1, {"", ""});
  absl::StatusOr<StepWindows> q = small.Query(kProfile, kStep1);
  ASSERT_TRUE(q.ok());
  const auto& p99 = q->arm(Arm::kCanary).metrics.at("latencyP99");
  ASSERT_EQ(p99.size(), 2u);
  EXPECT_DOUBLE_EQ(p99.front().value, 0.020);
}

TEST_F(WindowStoreTest, LatencyPointsCarryTheWindowsHistogram) {
  Window w = W("c1", 1);
  w.latency_buckets = std::make_shared<const Buckets>(Buckets{{0.01, 900}, {INFINITY, 1000}});
  ASSERT_EQ(store_.Add(kProfile, Arm::kCanary, w), AddResult::kAccepted);
  ASSERT_EQ(store_.Add(kProfile, Arm::kCanary, W("c1", 2)), AddResult::kAccepted);
  absl::StatusOr<StepWindows> q = store_.Query(kProfile, kStep1);
  ASSERT_TRUE(q.ok()) << q.status();
  const ArmWindows& canary = q->arm(Arm::kCanary);
  const std::vector<MetricPoint>& p99 = canary.metrics.at("latencyP99");
  ASSERT_EQ(p99.size(), 2u);
  ASSERT_NE(p99[0].latency_buckets, nullptr);
  EXPECT_EQ(*p99[0].latency_buckets, *w.latency_buckets);
  EXPECT_EQ(p99[1].latency_buckets, nullptr) << "the second window sent no histogram";
  EXPECT_EQ(canary.metrics.at("throughput")[0].latency_buckets, nullptr)
      << "only latency quantiles are read from it";
}

TEST_F(WindowStoreTest, InvalidWindowsAreRefused) {
  std::vector<std::pair<const char*, Window>> bad;
  Window w = W("c1", 1);
  w.pod_uid.clear();
  bad.push_back({"no uid", w});
  w = W("c1", 1);
  w.incarnation.clear();
  bad.push_back({"no incarnation", w});
  bad.push_back({"sequence 0", W("c1", 0)});
  w = W("c1", 1);
  w.end = w.start;
  bad.push_back({"empty interval", w});
  w = W("c1", 1);
  w.SetMetric("errorRate", std::numeric_limits<double>::quiet_NaN(), 10);
  bad.push_back({"NaN", w});
  w = W("c1", 1);
  w.SetMetric("errorRate", std::numeric_limits<double>::infinity(), 10);
  bad.push_back({"inf", w});
  w = W("c1", 1);
  w.SetMetric("errorRate", 0.1, -1);
  bad.push_back({"negative samples", w});
  w = W("c1", 1);
  w.latency_buckets = std::make_shared<const Buckets>(Buckets{{0.1, 5}, {1, 3}, {INFINITY, 9}});
  bad.push_back({"decreasing histogram", w});
  w = W("c1", 1);
  w.start = absl::UnixEpoch() - absl::Seconds(10);  // found by fuzz_agent_message
  w.end = absl::UnixEpoch();
  bad.push_back({"ends at the Unix epoch", w});
  for (auto& [name, window] : bad) {
    EXPECT_FALSE(ValidateWindow(window).ok()) << name;
    EXPECT_EQ(store_.Add(kProfile, Arm::kCanary, window), AddResult::kInvalid) << name;
  }
  EXPECT_EQ(store_.WindowCount(kProfile, kStep1, Arm::kCanary), 0u);
  EXPECT_TRUE(ValidateWindow(W("c1", 1)).ok());
}

TEST(WindowTest, OnlyKnownMetrics) {
  Window w;
  EXPECT_TRUE(w.SetMetric("retransmits", 0.01, 5));
  EXPECT_FALSE(w.SetMetric("latencyP95", 1, 1));
  ASSERT_TRUE(w.Metric("retransmits"));
  EXPECT_DOUBLE_EQ(w.Metric("retransmits")->value, 0.01);
  EXPECT_FALSE(w.Metric("latencyP50"));
  EXPECT_FALSE(w.Metric("nonsense"));
}

TEST(WindowStoreBoundsTest, OldestWindowOfAnArmIsDropped) {
  WindowStore store({.max_windows_per_arm = 3});
  store.BeginStep(kProfile, kStep1, {"", ""});
  for (uint64_t s = 1; s <= 5; ++s) {
    EXPECT_EQ(store.Add(kProfile, Arm::kCanary, W("c1", s)), AddResult::kAccepted);
  }
  EXPECT_EQ(store.Add(kProfile, Arm::kBaseline, W("b1", 1)), AddResult::kAccepted);
  absl::StatusOr<StepWindows> q = store.Query(kProfile, kStep1);
  ASSERT_TRUE(q.ok());
  const auto& p99 = q->arm(Arm::kCanary).metrics.at("latencyP99");
  ASSERT_EQ(p99.size(), 3u);
  EXPECT_DOUBLE_EQ(p99.front().value, 0.030) << "windows 1 and 2 were dropped";
  EXPECT_EQ(q->arm(Arm::kBaseline).windows, 1u) << "the other arm has its own bound";
  // Dropped for space is still remembered for dedupe.
  EXPECT_EQ(store.Add(kProfile, Arm::kCanary, W("c1", 1)), AddResult::kDuplicate);
}

TEST(WindowStoreBoundsTest, StepsPerProfile) {
  WindowStore store({.max_steps_per_profile = 2});
  const StepId s3{.generation = 3, .step = 3, .started = kT0};
  store.BeginStep(kProfile, kStep1, {"", ""});
  ASSERT_EQ(store.Add(kProfile, Arm::kCanary, W("c1", 1)), AddResult::kAccepted);
  store.BeginStep(kProfile, kStep2, {"", ""});
  ASSERT_EQ(store.Add(kProfile, Arm::kCanary, W("c1", 2)), AddResult::kAccepted);
  // Going back to a kept step makes it current again, with its windows.
  store.BeginStep(kProfile, kStep1, {"", ""});
  EXPECT_EQ(store.CurrentStep(kProfile), kStep1);
  ASSERT_EQ(store.Add(kProfile, Arm::kCanary, W("c1", 3)), AddResult::kAccepted);
  EXPECT_EQ(store.WindowCount(kProfile, kStep1, Arm::kCanary), 2u);
  // A third step drops the least recently current one (step 2).
  store.BeginStep(kProfile, s3, {"", ""});
  EXPECT_TRUE(absl::IsNotFound(store.Query(kProfile, kStep2).status()));
  EXPECT_TRUE(store.Query(kProfile, kStep1).ok());
  EXPECT_EQ(store.CurrentStep(kProfile), s3);
  // A restarted rollout (same generation and step, later start) is another step.
  const StepId restarted{.generation = 3, .step = 3, .started = kT0 + absl::Hours(1)};
  EXPECT_NE(restarted, s3);
  store.BeginStep(kProfile, restarted, {"", ""});
  EXPECT_EQ(store.WindowCount(kProfile, restarted, Arm::kCanary), 0u);
}

TEST(WindowStoreBoundsTest, LeastRecentlyActiveProfileIsForgotten) {
  WindowStore store({.max_profiles = 2});
  store.BeginStep("ns/a", kStep1, {"", ""});
  store.BeginStep("ns/b", kStep1, {"", ""});
  ASSERT_EQ(store.Add("ns/a", Arm::kCanary, W("c1", 1)), AddResult::kAccepted);  // a is used
  store.BeginStep("ns/c", kStep1, {"", ""});
  EXPECT_EQ(store.ProfileCount(), 2u);
  EXPECT_TRUE(store.CurrentStep("ns/a"));
  EXPECT_FALSE(store.CurrentStep("ns/b"));
  EXPECT_TRUE(store.CurrentStep("ns/c"));
}

TEST(WindowStoreBoundsTest, DedupeMemoryIsBoundedConservatively) {
  WindowStore store({.max_sequences_per_incarnation = 4, .max_incarnations_per_profile = 2});
  store.BeginStep(kProfile, kStep1, {"", ""});
  for (uint64_t s = 2; s <= 6; ++s) {
    ASSERT_EQ(store.Add(kProfile, Arm::kCanary, W("c1", s)), AddResult::kAccepted);
  }
  // Sequence 1 was never accepted (say it came while no step was open), but it is below
  // the remembered range: refused as a duplicate rather than risk counting a replay twice.
  EXPECT_EQ(store.Add(kProfile, Arm::kCanary, W("c1", 1)), AddResult::kDuplicate);
  EXPECT_EQ(store.Add(kProfile, Arm::kCanary, W("c1", 2)), AddResult::kDuplicate);
  EXPECT_EQ(store.Add(kProfile, Arm::kCanary, W("c1", 7)), AddResult::kAccepted);

  // Incarnations: the least recently used is forgotten first.
  ASSERT_EQ(store.Add(kProfile, Arm::kCanary, W("c1", 1, "inc-2")), AddResult::kAccepted);
  ASSERT_EQ(store.Add(kProfile, Arm::kCanary, W("c1", 7)), AddResult::kDuplicate);  // inc-1 used
  ASSERT_EQ(store.Add(kProfile, Arm::kCanary, W("c1", 1, "inc-3")), AddResult::kAccepted);
  EXPECT_EQ(store.Add(kProfile, Arm::kCanary, W("c1", 6)), AddResult::kDuplicate)
      << "inc-1 is still remembered";
  EXPECT_EQ(store.Add(kProfile, Arm::kCanary, W("c1", 1, "inc-2")), AddResult::kAccepted)
      << "inc-2 was forgotten";
}

TEST_F(WindowStoreTest, QueryFiltersByTimeAndPodAge) {
  Window young = W("c-young", 3);  // window starts at kT0 + 60 s
  young.pod_created = kT0 + absl::Seconds(40);
  ASSERT_EQ(store_.Add(kProfile, Arm::kCanary, young), AddResult::kAccepted);
  ASSERT_EQ(store_.Add(kProfile, Arm::kCanary, W("c-old", 1)), AddResult::kAccepted);  // 0-30 s
  ASSERT_EQ(store_.Add(kProfile, Arm::kCanary, W("c-old", 4)), AddResult::kAccepted);  // 90-120
  Window unknown_age = W("c-unknown", 4);
  unknown_age.pod_created = absl::InfinitePast();
  ASSERT_EQ(store_.Add(kProfile, Arm::kCanary, unknown_age), AddResult::kAccepted);

  auto pods = [&](const QueryOptions& o) {
    std::vector<std::string> out;
    absl::StatusOr<StepWindows> q = store_.Query(kProfile, kStep1, o);
    EXPECT_TRUE(q.ok()) << q.status();
    if (!q.ok()) return out;
    for (const MetricPoint& p : q->arm(Arm::kCanary).metrics.at("latencyP99")) {
      out.push_back(p.pod);
    }
    return out;
  };
  // Ordered by window start, then pod.
  EXPECT_EQ(pods({}), (std::vector<std::string>{"c-old", "c-young", "c-old", "c-unknown"}));
  EXPECT_EQ(pods({.not_before = kT0 + absl::Seconds(60)}),
            (std::vector<std::string>{"c-young", "c-old", "c-unknown"}));
  EXPECT_EQ(pods({.not_after = kT0 + absl::Seconds(90)}),
            (std::vector<std::string>{"c-old", "c-young"}));
  EXPECT_EQ(pods({.min_pod_age = absl::Minutes(1)}),
            (std::vector<std::string>{"c-old", "c-old", "c-unknown"}));
  absl::StatusOr<StepWindows> q =
      store_.Query(kProfile, kStep1, {.not_before = kT0 + absl::Hours(1)});
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->arm(Arm::kCanary).windows, 0u);
  EXPECT_TRUE(q->arm(Arm::kCanary).metrics.empty());
}

TEST(WindowStoreConcurrencyTest, ConcurrentReplaysCountOnce) {
  WindowStore store;
  store.BeginStep(kProfile, kStep1, {"", ""});
  constexpr int kThreads = 8;
  constexpr int kPods = 4;
  constexpr uint64_t kSeqs = 200;
  std::atomic<int> accepted{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go) std::this_thread::yield();
      // Every thread sends every window of every pod: each is a replay of the others.
      for (uint64_t s = 1; s <= kSeqs; ++s) {
        for (int p = 0; p < kPods; ++p) {
          const int pod = (p + t) % kPods;
          Arm arm = pod % 2 == 0 ? Arm::kBaseline : Arm::kCanary;
          if (store.Add(kProfile, arm, W(absl::StrCat("p", pod), s)) == AddResult::kAccepted) {
            ++accepted;
          }
        }
        if (s % 50 == 0) (void)store.Query(kProfile, kStep1);
      }
    });
  }
  go = true;
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(accepted, kPods * static_cast<int>(kSeqs));
  EXPECT_EQ(store.WindowCount(kProfile, kStep1, Arm::kBaseline) +
                store.WindowCount(kProfile, kStep1, Arm::kCanary),
            kPods * kSeqs);
}

TEST(StepIdTest, OrderAndText) {
  EXPECT_LT(kStep1, kStep2);
  EXPECT_EQ(kStep1.ToString(), "gen 3 step 1 from 2023-11-14T22:13:20Z");
  EXPECT_EQ(AddResultName(AddResult::kStaleTemplate), "stale_template");
}

}  // namespace
}  // namespace booster::feedback
