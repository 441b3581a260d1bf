#include "operator/controller/log.h"

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace booster::controller {
namespace {

TEST(LogTest, JsonLineStartsWithTsLevelMsgThenTheFieldsInOrder) {
  const absl::Time t = absl::FromUnixMillis(1'800'000'000'123);
  std::string line = FormatLogLine(LogFormat::kJson, t, Level::kWarning, "action failed",
                                   {{"profile", "shop/web"}, {"action", "ScaleTarget web"}});
  EXPECT_EQ(line,
            R"({"ts":"2027-01-15T08:00:00.123Z","level":"warning","msg":"action failed",)"
            R"("profile":"shop/web","action":"ScaleTarget web"})");
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(LogTest, JsonEscapesAndSurvivesInvalidUtf8) {
  std::string line = FormatLogLine(LogFormat::kJson, absl::UnixEpoch(), Level::kInfo,
                                   "say \"hi\"\n", {{"bytes", std::string("a\xff" "b")}});
  nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j["msg"], "say \"hi\"\n");
  EXPECT_EQ(j["bytes"].get<std::string>().front(), 'a');
}

TEST(LogTest, ReservedKeysAreNotOverwrittenByFields) {
  nlohmann::json j = nlohmann::json::parse(FormatLogLine(
      LogFormat::kJson, absl::UnixEpoch(), Level::kError, "real", {{"msg", "fake"}}));
  EXPECT_EQ(j["msg"], "real");
  EXPECT_EQ(j["level"], "error");
}

TEST(LogTest, TextFormat) {
  EXPECT_EQ(FormatLogLine(LogFormat::kText, absl::UnixEpoch(), Level::kInfo, "phase",
                          {{"profile", "a/b"}, {"phase", "Promoted"}}),
            "1970-01-01T00:00:00.000Z info phase profile=a/b phase=Promoted");
}

}  // namespace
}  // namespace booster::controller
