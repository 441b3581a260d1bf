#include "sidecar/topology/cpu_list.h"

#include "absl/status/status.h"
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

// hwloc's own parser reads these as numbers, ranges or nothing ("0x3" is 3, "1-" every CPU
// from 1 up, "3-1" the empty set); the kernel's format, and ParseCpuList, have none of them.
TEST(CpuListTest, RejectsWhatHwlocAloneWouldAccept) {
  for (const char* bad : {"0-", "0x3", "+1", "1-3-5", "0,3-1", "1,", ",1", "1 2", "1 - 3", "a,1"}) {
    absl::StatusOr<std::vector<int>> parsed = ParseCpuList(bad);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(CpuListTest, BoundsTheNumbers) {
  EXPECT_THAT(*ParseCpuList("65535-65536"), ElementsAre(65535, 65536));
  for (const char* bad : {"65537", "0-65537", "99999", "100000"}) {
    EXPECT_FALSE(ParseCpuList(bad).ok()) << bad;
  }
  EXPECT_EQ(FormatCpuList({-1, 2, kMaxCpuNumber + 1}), "2") << "out of range: left out";
}

TEST(CpuListTest, ErrorsNameTheList) {
  absl::StatusOr<std::vector<int>> parsed = ParseCpuList("0-3,5-4");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().message(), "bad CPU list \"0-3,5-4\": \"5-4\" is not a range lo-hi");
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
