#include "operator/kube/api_status.h"

#include "gtest/gtest.h"
#include "operator/kube/json.h"

namespace booster::kube {
namespace {

std::string StatusBody(int code, const char* reason, const char* message) {
  return Json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
              {"code", code},     {"reason", reason},   {"message", message}}
      .dump();
}

TEST(ApiStatusTest, SuccessIsOk) {
  EXPECT_TRUE(StatusFromHttp(200, "{}", "").ok());
  EXPECT_TRUE(StatusFromHttp(201, "{}", "").ok());
}

TEST(ApiStatusTest, CodesMapToWhatTheCallerShouldDo) {
  EXPECT_TRUE(absl::IsNotFound(StatusFromHttp(404, StatusBody(404, "NotFound", "x"), "")));
  EXPECT_TRUE(IsConflict(StatusFromHttp(409, StatusBody(409, "Conflict", "x"), "")));
  EXPECT_TRUE(absl::IsAlreadyExists(StatusFromHttp(409, StatusBody(409, "AlreadyExists", "x"), "")));
  EXPECT_TRUE(IsExpired(StatusFromHttp(410, StatusBody(410, "Expired", "x"), "")));
  EXPECT_TRUE(absl::IsInvalidArgument(StatusFromHttp(422, StatusBody(422, "Invalid", "x"), "")));
  EXPECT_TRUE(absl::IsUnavailable(StatusFromHttp(429, "", "")));
  EXPECT_TRUE(absl::IsUnavailable(StatusFromHttp(500, "oops", "")));
  EXPECT_TRUE(absl::IsUnavailable(StatusFromHttp(503, "", "")));
  EXPECT_TRUE(absl::IsUnauthenticated(StatusFromHttp(401, "", "")));
  EXPECT_TRUE(absl::IsPermissionDenied(StatusFromHttp(403, "", "")));
  EXPECT_TRUE(absl::IsInvalidArgument(StatusFromHttp(400, "", "")));
  EXPECT_TRUE(absl::IsFailedPrecondition(StatusFromHttp(412, "", "")));
}

TEST(ApiStatusTest, InvalidCarriesTheServersMessage) {
  absl::Status s = StatusFromHttp(
      422, StatusBody(422, "Invalid", "ConfigMap \"A\" is invalid: metadata.name: Invalid value"),
      "");
  EXPECT_NE(s.message().find("metadata.name: Invalid value"), std::string::npos) << s;
  EXPECT_EQ(HttpCode(s), 422);
}

TEST(ApiStatusTest, NonStatusBodyIsKeptAsMessage) {
  absl::Status s = StatusFromHttp(502, "bad gateway from proxy", "");
  EXPECT_NE(s.message().find("bad gateway from proxy"), std::string::npos);
}

TEST(ApiStatusTest, RetryAfterIsHonoured) {
  absl::Status s = StatusFromHttp(429, StatusBody(429, "TooManyRequests", "slow down"), "3");
  ASSERT_TRUE(RetryAfter(s).has_value());
  EXPECT_EQ(*RetryAfter(s), absl::Seconds(3));
  EXPECT_FALSE(RetryAfter(StatusFromHttp(429, "", "")).has_value());
  EXPECT_FALSE(RetryAfter(StatusFromHttp(429, "", "Wed, 21 Oct 2015 07:28:00 GMT")).has_value());
  EXPECT_FALSE(RetryAfter(StatusFromHttp(429, "", "-1")).has_value());
}

TEST(ApiStatusTest, WatchErrorStatus) {
  absl::Status s = StatusFromApiStatus(410, "Expired", "too old resource version");
  EXPECT_TRUE(IsExpired(s));
  EXPECT_NE(s.message().find("too old"), std::string::npos);
}

TEST(JsonTest, ParseAndAccessors) {
  absl::StatusOr<Json> j = ParseJson(R"({"metadata":{"name":"a","generation":3,"big":1e300}})");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(JsonString(*j, "/metadata/name"), "a");
  EXPECT_EQ(JsonString(*j, "/metadata/missing"), "");
  EXPECT_EQ(JsonString(*j, "/metadata/generation"), "");
  EXPECT_EQ(JsonInt(*j, "/metadata/generation"), 3);
  EXPECT_EQ(JsonInt(*j, "/metadata/big", -7), -7);
  EXPECT_EQ(JsonInt(*j, "/metadata/name", -1), -1);
  EXPECT_FALSE(ParseJson("{").ok());
  EXPECT_FALSE(ParseJson("").ok());
}

}  // namespace
}  // namespace booster::kube
