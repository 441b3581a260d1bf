#include "operator/plugin/table.h"

#include "gtest/gtest.h"

namespace booster::plugin {
namespace {

TEST(RenderTableTest, ColumnsAlignToTheWidestCellWithThreeSpacesAndNoTrailingBlanks) {
  EXPECT_EQ(RenderTable({"NAME", "PHASE", "AGE"},
                        {{"web", "Progressing", "5m"}, {"checkout-api", "Promoted", ""}}),
            "NAME           PHASE         AGE\n"
            "web            Progressing   5m\n"
            "checkout-api   Promoted\n");
}

TEST(RenderTableTest, ShortRowsArePaddedAndAnEmptyHeaderPrintsRowsOnly) {
  EXPECT_EQ(RenderTable({}, {{"Name:", "web"}, {"Last verdict:", "Pass"}}),
            "Name:           web\n"
            "Last verdict:   Pass\n");
  EXPECT_EQ(RenderTable({"A", "B", "C"}, {{"x"}}), "A   B   C\nx\n");
  EXPECT_EQ(RenderTable({"A"}, {}), "A\n");
}

TEST(HumanDurationTest, AgesAsKubectlPrintsThem) {
  EXPECT_EQ(HumanDuration(absl::Seconds(-5)), "<invalid>");
  EXPECT_EQ(HumanDuration(absl::Milliseconds(-500)), "0s");
  EXPECT_EQ(HumanDuration(absl::Seconds(45)), "45s");
  EXPECT_EQ(HumanDuration(absl::Seconds(119)), "119s");
  EXPECT_EQ(HumanDuration(absl::Seconds(125)), "2m5s");
  EXPECT_EQ(HumanDuration(absl::Minutes(6)), "6m");
  EXPECT_EQ(HumanDuration(absl::Minutes(150)), "150m");
  EXPECT_EQ(HumanDuration(absl::Minutes(192)), "3h12m");
  EXPECT_EQ(HumanDuration(absl::Hours(5)), "5h");
  EXPECT_EQ(HumanDuration(absl::Hours(30)), "30h");
  EXPECT_EQ(HumanDuration(absl::Hours(51)), "2d3h");
  EXPECT_EQ(HumanDuration(absl::Hours(24 * 30)), "30d");
  EXPECT_EQ(HumanDuration(absl::Hours(24 * (365 * 3 + 10))), "3y10d");
  EXPECT_EQ(HumanDuration(absl::Hours(24 * 365 * 9)), "9y");
}

TEST(TimeTextTest, Rfc3339InUtcOrADash) {
  EXPECT_EQ(TimeText(absl::FromUnixSeconds(1'700'000'000)), "2023-11-14T22:13:20Z");
  EXPECT_EQ(TimeText(absl::InfinitePast()), "-");
}

}  // namespace
}  // namespace booster::plugin
