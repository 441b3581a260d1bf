#include "sidecar/report/reporter.h"

#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace booster::agent {
namespace {

TEST(ReporterTest, IncarnationsAreRandomHex) {
  std::set<std::string> seen;
  for (int i = 0; i < 50; ++i) {
    std::string inc = NewIncarnation();
    EXPECT_THAT(inc, testing::MatchesRegex("[0-9a-f]{32}"));
    seen.insert(inc);
  }
  EXPECT_EQ(seen.size(), 50u);
}

}  // namespace
}  // namespace booster::agent
