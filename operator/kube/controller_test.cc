#include "operator/kube/controller.h"

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "gtest/gtest.h"

namespace booster::kube {
namespace {

bool Eventually(const std::function<bool()>& pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return pred();
}

ControllerOptions Opts(int workers) {
  ControllerOptions o;
  o.workers = workers;
  o.queue.max_idle_wait = absl::Milliseconds(1);
  return o;
}

TEST(ControllerTest, DoneIsReconciledOnce) {
  FakeClock clock;
  std::atomic<int> n{0};
  Controller c(&clock, [&](const std::string&) -> absl::StatusOr<Result> {
    n++;
    return Result::Done();
  }, Opts(2));
  c.Start();
  c.Enqueue("ns/a");
  ASSERT_TRUE(Eventually([&] { return c.Reconciles() == 1; }));
  c.Stop();
  EXPECT_EQ(n.load(), 1);
  EXPECT_EQ(c.queue().NumRequeues("ns/a"), 0);
}

TEST(ControllerTest, ErrorsAreRetriedWithPerKeyBackoff) {
  FakeClock clock;
  std::atomic<int> n{0};
  Controller c(
      &clock,
      [&](const std::string&) -> absl::StatusOr<Result> {
        if (++n < 3) return absl::UnavailableError("try again");
        return Result::Done();
      },
      Opts(1),
      std::make_unique<ItemExponentialRateLimiter>(absl::Seconds(1), absl::Seconds(100)));
  c.Start();
  c.Enqueue("ns/a");
  ASSERT_TRUE(Eventually([&] { return n.load() == 1 && c.queue().DelayedLen() == 1; }));
  clock.Advance(absl::Seconds(1));  // first retry after 1 s
  ASSERT_TRUE(Eventually([&] { return n.load() == 2 && c.queue().DelayedLen() == 1; }));
  clock.Advance(absl::Seconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // negative check
  EXPECT_EQ(n.load(), 2) << "second retry waits 2 s";
  clock.Advance(absl::Seconds(1));
  ASSERT_TRUE(Eventually([&] { return n.load() == 3; }));
  ASSERT_TRUE(Eventually([&] { return c.queue().NumRequeues("ns/a") == 0; }))
      << "success forgets the failures";
  EXPECT_EQ(c.Errors(), 2);
  c.Stop();
}

TEST(ControllerTest, RequeueAfter) {
  FakeClock clock;
  std::atomic<int> n{0};
  Controller c(&clock, [&](const std::string&) -> absl::StatusOr<Result> {
    n++;
    return n.load() == 1 ? Result::RequeueAfter(absl::Seconds(30)) : Result::Done();
  }, Opts(1));
  c.Start();
  c.Enqueue("ns/a");
  ASSERT_TRUE(Eventually([&] { return n.load() == 1 && c.queue().DelayedLen() == 1; }));
  clock.Advance(absl::Seconds(30));
  ASSERT_TRUE(Eventually([&] { return n.load() == 2; }));
  c.Stop();
}

TEST(ControllerTest, OneKeyNeverReconciledConcurrently) {
  FakeClock clock;
  std::mutex mu;
  std::set<std::string> running;
  std::atomic<bool> overlap{false};
  std::atomic<int> total{0};
  Controller c(&clock, [&](const std::string& key) -> absl::StatusOr<Result> {
    {
      std::lock_guard<std::mutex> l(mu);
      if (!running.insert(key).second) overlap = true;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    {
      std::lock_guard<std::mutex> l(mu);
      running.erase(key);
    }
    total++;
    return Result::Done();
  }, Opts(4));
  c.Start();
  for (int i = 0; i < 2000; ++i) c.Enqueue("k" + std::to_string(i % 3));
  ASSERT_TRUE(Eventually([&] { return c.queue().Len() == 0; }));
  c.Stop();
  EXPECT_FALSE(overlap.load());
  EXPECT_GE(total.load(), 3);
}

TEST(ControllerTest, ExceptionsBecomeErrors) {
  FakeClock clock;
  Controller c(&clock, [&](const std::string&) -> absl::StatusOr<Result> {
    throw std::runtime_error("boom");
  }, Opts(1));
  c.Start();
  c.Enqueue("ns/a");
  ASSERT_TRUE(Eventually([&] { return c.Errors() == 1; }));
  c.Stop();
}

TEST(RetryOnConflictTest, RetriesConflictsOnly) {
  int n = 0;
  EXPECT_TRUE(RetryOnConflict(&RealClock::Get(), [&] {
    return ++n < 3 ? absl::AbortedError("409") : absl::OkStatus();
  }).ok());
  EXPECT_EQ(n, 3);
  n = 0;
  EXPECT_TRUE(absl::IsNotFound(RetryOnConflict(&RealClock::Get(), [&] {
    ++n;
    return absl::NotFoundError("gone");
  })));
  EXPECT_EQ(n, 1);
  n = 0;
  EXPECT_TRUE(absl::IsAborted(RetryOnConflict(&RealClock::Get(), [&] {
    ++n;
    return absl::AbortedError("409");
  }, 4)));
  EXPECT_EQ(n, 4);
}

}  // namespace
}  // namespace booster::kube
