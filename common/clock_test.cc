#include "common/clock.h"

#include <thread>

#include "gtest/gtest.h"

namespace booster {
namespace {

TEST(FakeClockTest, AdvanceMovesNow) {
  FakeClock clock(absl::FromUnixSeconds(100));
  clock.Advance(absl::Seconds(5));
  EXPECT_EQ(clock.Now(), absl::FromUnixSeconds(105));
  clock.SetTime(absl::FromUnixSeconds(7));
  EXPECT_EQ(clock.Now(), absl::FromUnixSeconds(7));
}

TEST(FakeClockTest, SleeperWakesOnlyWhenDeadlinePassed) {
  FakeClock clock;
  std::atomic<bool> woke{false};
  std::thread t([&] {
    clock.SleepFor(absl::Seconds(10));
    woke = true;
  });
  while (clock.Sleepers() == 0) std::this_thread::yield();
  clock.Advance(absl::Seconds(9));
  EXPECT_FALSE(woke.load());
  EXPECT_EQ(clock.Sleepers(), 1);
  clock.Advance(absl::Seconds(1));
  t.join();
  EXPECT_TRUE(woke.load());
}

TEST(RealClockTest, NowIsCloseToAbslNow) {
  EXPECT_LT(absl::AbsDuration(RealClock::Get().Now() - absl::Now()), absl::Seconds(1));
}

}  // namespace
}  // namespace booster
