// PromQL templating and instant-query answers (query.h).
#include "operator/prometheus/query.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace booster::promql {
namespace {

using ::testing::HasSubstr;

TEST(RenderQueryTest, FillsTheNamespaceTheArmsPodsAndTheWindow) {
  absl::StatusOr<std::string> q = RenderQuery(
      R"(sum(rate(http_requests_total{namespace="{{namespace}}", pod=~"{{ pods }}", code=~"5.."}[{{window}}])))",
      {"shop", {"web-booster-7d9f-abc12", "web-booster-7d9f-def34"}, absl::Seconds(30)});
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(*q,
            R"(sum(rate(http_requests_total{namespace="shop", pod=~"web-booster-7d9f-abc12|web-booster-7d9f-def34", code=~"5.."}[30s])))");
}

TEST(RenderQueryTest, APodNameWithRegexCharactersMatchesOnlyItself) {
  // Pod names may hold dots (a StatefulSet's, a bare pod's); in a matcher a dot matches
  // anything, so it is escaped for the regex, and that backslash again for the string.
  absl::StatusOr<std::string> q =
      RenderQuery(R"(up{pod=~"{{pods}}"})", {"ns", {"api.v2-0", "a+b"}, absl::Seconds(5)});
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(*q, R"(up{pod=~"api\\.v2-0|a\\+b"})");
  EXPECT_EQ(EscapeRegex(R"(x.y*z(1)|[a]{2}^$?\)"), R"(x\.y\*z\(1\)\|\[a\]\{2\}\^\$\?\\)");
}

TEST(RenderQueryTest, QuotesAndBackslashesCannotLeaveTheStringLiteral) {
  EXPECT_EQ(EscapeStringLiteral(R"(a"b\c)"), R"(a\"b\\c)");
  EXPECT_EQ(EscapeStringLiteral("line\nnext\t\x01"), R"(line\nnext\t\x01)");
  absl::StatusOr<std::string> q =
      RenderQuery(R"(x{namespace="{{namespace}}"})", {R"(a"} or vector(1) #)", {"p"}, absl::Seconds(1)});
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(*q, R"(x{namespace="a\"} or vector(1) #"})");
}

TEST(RenderQueryTest, TheWindowIsWholeSecondsAtLeastOne) {
  EXPECT_EQ(FormatRange(absl::Seconds(30)), "30s");
  EXPECT_EQ(FormatRange(absl::Minutes(2)), "120s");
  EXPECT_EQ(FormatRange(absl::Milliseconds(1500)), "2s");
  EXPECT_EQ(FormatRange(absl::Milliseconds(200)), "1s");
}

TEST(RenderQueryTest, UnknownPlaceholdersAndNoPodsAreRefused) {
  absl::Status s = CheckQueryTemplate("rate(x{pod=~\"{{pod}}\"}[1m])");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("unknown placeholder {{pod}}"));
  EXPECT_THAT(s.message(), HasSubstr("{{pods}}"));
  s = CheckQueryTemplate("rate(x[{{window)");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("unclosed {{"));
  EXPECT_FALSE(CheckQueryTemplate("  ").ok());
  EXPECT_TRUE(CheckQueryTemplate("sum(up)").ok());
  absl::StatusOr<std::string> q = RenderQuery("up{pod=~\"{{pods}}\"}", {"ns", {}, absl::Seconds(5)});
  ASSERT_FALSE(q.ok());
  EXPECT_THAT(q.status().message(), HasSubstr("no pods"));
}

TEST(ParseQueryResponseTest, OneSeriesIsItsValue) {
  QueryResult r = ParseQueryResponse(200, R"({"status":"success","data":{"resultType":"vector",
      "result":[{"metric":{},"value":[1733500000.5,"0.0125"]}]}})");
  EXPECT_EQ(r.outcome, QueryOutcome::kValue) << r.message;
  EXPECT_DOUBLE_EQ(r.value, 0.0125);
  r = ParseQueryResponse(200, R"({"status":"success","data":{"resultType":"scalar",
      "result":[1733500000.5,"42"]}})");
  EXPECT_EQ(r.outcome, QueryOutcome::kValue);
  EXPECT_DOUBLE_EQ(r.value, 42);
}

TEST(ParseQueryResponseTest, NoSeriesManySeriesAndNaNAreNotValues) {
  QueryResult r = ParseQueryResponse(
      200, R"({"status":"success","data":{"resultType":"vector","result":[]}})");
  EXPECT_EQ(r.outcome, QueryOutcome::kEmpty);
  EXPECT_THAT(r.message, HasSubstr("no series"));
  r = ParseQueryResponse(200, R"({"status":"success","data":{"resultType":"vector","result":[
      {"metric":{"pod":"a"},"value":[1,"1"]},{"metric":{"pod":"b"},"value":[1,"2"]}]}})");
  EXPECT_EQ(r.outcome, QueryOutcome::kMultiple);
  EXPECT_THAT(r.message, HasSubstr("2 series"));
  EXPECT_THAT(r.message, HasSubstr(R"({"pod":"a"})"));
  EXPECT_THAT(r.message, HasSubstr("sum(...)"));
  r = ParseQueryResponse(200, R"({"status":"success","data":{"resultType":"vector",
      "result":[{"metric":{},"value":[1,"NaN"]}]}})");
  EXPECT_EQ(r.outcome, QueryOutcome::kNotFinite);
  r = ParseQueryResponse(200, R"({"status":"success","data":{"resultType":"matrix","result":[]}})");
  EXPECT_EQ(r.outcome, QueryOutcome::kError);
  EXPECT_THAT(r.message, HasSubstr("range vector"));
}

TEST(ParseQueryResponseTest, PrometheussErrorIsPassedOn) {
  QueryResult r = ParseQueryResponse(400, R"({"status":"error","errorType":"bad_data",
      "error":"1:14: parse error: unexpected \"}\""})");
  EXPECT_EQ(r.outcome, QueryOutcome::kError);
  EXPECT_THAT(r.message, HasSubstr("bad_data: 1:14: parse error"));
  EXPECT_THAT(r.message, HasSubstr("HTTP 400"));
  r = ParseQueryResponse(502, "<html>Bad Gateway</html>");
  EXPECT_EQ(r.outcome, QueryOutcome::kError);
  EXPECT_THAT(r.message, HasSubstr("HTTP 502, not Prometheus's JSON: <html>Bad Gateway"));
  r = ParseQueryResponse(200, R"({"status":"success","data":{"resultType":"vector",
      "result":[{"metric":{},"value":[1,"many"]}]}})");
  EXPECT_EQ(r.outcome, QueryOutcome::kError);
}

}  // namespace
}  // namespace booster::promql
