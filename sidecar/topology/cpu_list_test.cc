#include "sidecar/topology/cpu_list.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace booster::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(CpuListTest, ParsesRangesAndSingles) {
  EXPECT_THAT(*ParseCpuList("0-3,8,10-11\n"), ElementsAre(0, 1, 2, 3, 8, 10, 11));
  EXPECT_THAT(*ParseCpuList(" 5 "), ElementsAre(5));
  EXPECT_THAT(*ParseCpuList("3,1,1-2"), ElementsAre(1, 2, 3));
  EXPECT_THAT(*ParseCpuList("\n"), IsEmpty());
}

TEST(CpuListTest, RejectsMalformedLists) {
  for (const char* bad : {"a", "1-", "-1", "3-1", "1,,2", "0-2000000000", "1.5"}) {
    EXPECT_FALSE(ParseCpuList(bad).ok()) << bad;
  }
}

TEST(CpuListTest, FormatsCompactRanges) {
  EXPECT_EQ(FormatCpuList({0, 1, 2, 5}), "0-2,5");
  EXPECT_EQ(FormatCpuList({7, 3, 4, 3}), "3-4,7");
  EXPECT_EQ(FormatCpuList({}), "");
  EXPECT_EQ(FormatCpuList({0, 2, 4}), "0,2,4");
}

TEST(CpuListTest, RoundTrips) {
  for (const char* s : {"0", "0-63", "1,3,5-9,100"}) {
    EXPECT_EQ(FormatCpuList(*ParseCpuList(s)), s);
  }
}

TEST(CpuListTest, Intersects) {
  EXPECT_THAT(IntersectSorted({0, 1, 2, 5}, {1, 5, 6}), ElementsAre(1, 5));
}

}  // namespace
}  // namespace booster::agent
