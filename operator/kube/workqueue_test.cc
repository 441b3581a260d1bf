#include "operator/kube/workqueue.h"

#include <atomic>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace booster::kube {
namespace {

WorkQueue::Options Fast() {
  WorkQueue::Options o;
  o.max_idle_wait = absl::Milliseconds(1);
  return o;
}

TEST(WorkQueueTest, DeduplicatesWaitingKeys) {
  FakeClock clock;
  WorkQueue q(&clock, nullptr, Fast());
  q.Add("a");
  q.Add("b");
  q.Add("a");
  EXPECT_EQ(q.Len(), 2u);
  EXPECT_EQ(*q.Get(), "a");
  EXPECT_EQ(*q.Get(), "b");
}

TEST(WorkQueueTest, KeyAddedWhileProcessingIsRequeuedOnlyAfterDone) {
  FakeClock clock;
  WorkQueue q(&clock, nullptr, Fast());
  q.Add("a");
  std::string k = *q.Get();
  q.Add("a");
  q.Add("a");
  EXPECT_EQ(q.Len(), 0u) << "a key being processed must not be handed out again";
  q.Done(k);
  EXPECT_EQ(q.Len(), 1u) << "and it comes back exactly once";
  EXPECT_EQ(*q.Get(), "a");
  q.Done("a");
  EXPECT_EQ(q.Len(), 0u);
}

TEST(WorkQueueTest, ShutDownDrainsThenReturnsNullopt) {
  FakeClock clock;
  WorkQueue q(&clock, nullptr, Fast());
  q.Add("a");
  q.ShutDown();
  q.Add("b");  // ignored
  EXPECT_EQ(*q.Get(), "a");
  EXPECT_FALSE(q.Get().has_value());
  EXPECT_TRUE(q.ShuttingDown());
}

TEST(WorkQueueTest, ShutDownWakesBlockedGetters) {
  FakeClock clock;
  WorkQueue q(&clock, nullptr, Fast());
  std::atomic<int> woke{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < 3; ++i) {
    ts.emplace_back([&] {
      if (!q.Get().has_value()) woke++;
    });
  }
  q.ShutDown();
  for (auto& t : ts) t.join();
  EXPECT_EQ(woke.load(), 3);
}

TEST(WorkQueueTest, AddAfterWaitsForTheClock) {
  FakeClock clock;
  WorkQueue q(&clock, nullptr, Fast());
  q.AddAfter("a", absl::Seconds(10));
  EXPECT_EQ(q.DelayedLen(), 1u);
  EXPECT_EQ(q.Len(), 0u);
  clock.Advance(absl::Seconds(9));
  // Let the delay thread observe the new time; the key must still be waiting.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(q.Len(), 0u);
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(*q.Get(), "a");  // blocks until the delay thread moves it
  EXPECT_EQ(q.DelayedLen(), 0u);
}

TEST(WorkQueueTest, AddAfterKeepsTheEarliestTime) {
  FakeClock clock;
  WorkQueue q(&clock, nullptr, Fast());
  q.AddAfter("a", absl::Seconds(100));
  q.AddAfter("a", absl::Seconds(5));
  q.AddAfter("a", absl::Seconds(50));
  EXPECT_EQ(q.DelayedLen(), 1u);
  clock.Advance(absl::Seconds(5));
  EXPECT_EQ(*q.Get(), "a");
}

TEST(WorkQueueTest, NonPositiveDelayAddsAtOnce) {
  FakeClock clock;
  WorkQueue q(&clock, nullptr, Fast());
  q.AddAfter("a", absl::ZeroDuration());
  EXPECT_EQ(q.Len(), 1u);
}

TEST(WorkQueueTest, AddRateLimitedBacksOffPerKey) {
  FakeClock clock;
  WorkQueue q(&clock,
              std::make_unique<ItemExponentialRateLimiter>(absl::Seconds(1), absl::Seconds(60)),
              Fast());
  q.AddRateLimited("a");  // 1 s
  q.AddRateLimited("a");  // would be 2 s, but the earlier 1 s wins
  EXPECT_EQ(q.NumRequeues("a"), 2);
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(*q.Get(), "a");
  q.Done("a");
  q.AddRateLimited("a");  // 4 s now
  clock.Advance(absl::Seconds(3));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(q.Len(), 0u);
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(*q.Get(), "a");
  q.Forget("a");
  EXPECT_EQ(q.NumRequeues("a"), 0);
}

TEST(WorkQueueTest, NoKeyIsProcessedByTwoWorkersAtOnce) {
  FakeClock clock;
  WorkQueue q(&clock, nullptr, Fast());
  std::mutex mu;
  std::set<std::string> in_flight;
  std::atomic<bool> violated{false};
  std::atomic<int> processed{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      while (auto k = q.Get()) {
        {
          std::lock_guard<std::mutex> l(mu);
          if (!in_flight.insert(*k).second) violated = true;
        }
        std::this_thread::yield();
        {
          std::lock_guard<std::mutex> l(mu);
          in_flight.erase(*k);
        }
        processed++;
        q.Done(*k);
      }
    });
  }
  for (int i = 0; i < 20000; ++i) q.Add("k" + std::to_string(i % 5));
  // Drain: wait until nothing is queued, then stop.
  while (q.Len() > 0) std::this_thread::yield();
  q.ShutDown();
  for (auto& t : workers) t.join();
  EXPECT_FALSE(violated.load());
  EXPECT_GE(processed.load(), 5);
  EXPECT_LE(processed.load(), 20000);
}

}  // namespace
}  // namespace booster::kube
