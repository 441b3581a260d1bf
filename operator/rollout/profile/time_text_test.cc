// Go durations as text (time_text.h).
#include "operator/rollout/profile/time_text.h"

#include "gtest/gtest.h"

namespace booster::rollout {
namespace {

TEST(DurationTest, ParsesGoSyntax) {
  struct Case {
    const char* text;
    absl::Duration want;
  } cases[] = {{"30s", absl::Seconds(30)},         {"2m", absl::Minutes(2)},
               {"1h30m", absl::Minutes(90)},       {"1.5s", absl::Milliseconds(1500)},
               {"250ms", absl::Milliseconds(250)}, {"1m30s", absl::Seconds(90)}};
  for (const Case& c : cases) {
    absl::StatusOr<absl::Duration> d = ParseGoDuration(c.text);
    ASSERT_TRUE(d.ok()) << c.text << ": " << d.status();
    EXPECT_EQ(*d, c.want) << c.text;
  }
  for (const char* bad : {"", "5", "-5s", "s", "1.s", "5us", "inf", "1d", "2 m", "5S"}) {
    EXPECT_FALSE(ParseGoDuration(bad).ok()) << bad;
  }
  EXPECT_EQ(FormatGoDuration(absl::Minutes(90)), "1h30m");
  EXPECT_EQ(FormatGoDuration(absl::Seconds(30)), "30s");
}

}  // namespace
}  // namespace booster::rollout
