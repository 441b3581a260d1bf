// Prometheus's HTTP API as a Querier (client.h): the request it sends, what it makes of the
// answers, and the options it refuses.
#include "operator/prometheus/client.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "operator/kube/fake_transport.h"

namespace booster::promql {
namespace {

using ::testing::HasSubstr;
using ::testing::Pair;

class TempFile {
 public:
  explicit TempFile(const std::string& content) {
    path_ = std::filesystem::temp_directory_path() /
            ("booster-prom-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    Write(content);
  }
  ~TempFile() { std::filesystem::remove(path_); }
  void Write(const std::string& content) const { std::ofstream(path_) << content; }
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

TEST(SplitAddressTest, OriginAndPrefix) {
  auto a = SplitAddress("http://prometheus.monitoring:9090");
  ASSERT_TRUE(a.ok());
  EXPECT_THAT(*a, Pair("http://prometheus.monitoring:9090", ""));
  a = SplitAddress("https://thanos.example/prometheus/");
  ASSERT_TRUE(a.ok());
  EXPECT_THAT(*a, Pair("https://thanos.example", "/prometheus"));
  EXPECT_THAT(SplitAddress("prometheus:9090").status().message(), HasSubstr("not http://"));
  EXPECT_THAT(SplitAddress("http:///x").status().message(), HasSubstr("no host"));
  EXPECT_THAT(SplitAddress("http://p:9090/?x=1").status().message(), HasSubstr("query"));
}

TEST(HttpQuerierTest, AsksAnInstantQueryAtTheBoundaryWithTheTokenOfTheMoment) {
  TempFile token("first\n");
  auto transport = std::make_unique<kube::testing::FakeTransport>([](const kube::HttpRequest&) {
    return kube::HttpResponse{
        200,
        R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1700000005,"0.25"]}]}})",
        ""};
  });
  kube::testing::FakeTransport* fake = transport.get();
  HttpQuerier q(std::move(transport),
                {.address = "https://p.example/prom", .bearer_token_file = token.path()}, "/prom");
  const absl::Time at = absl::FromUnixMillis(1'700'000'005'250);
  QueryResult r = q.Query(R"(sum(x{pod=~"a|b"}))", at);
  EXPECT_EQ(r.outcome, QueryOutcome::kValue) << r.message;
  EXPECT_DOUBLE_EQ(r.value, 0.25);
  token.Write("second");
  q.Query("up", at);
  std::vector<kube::HttpRequest> sent = fake->requests();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].method, "GET");
  EXPECT_EQ(sent[0].path,
            "/prom/api/v1/query?query=sum%28x%7Bpod%3D~%22a%7Cb%22%7D%29&time=1700000005.250");
  auto header = [](const kube::HttpRequest& req, const std::string& name) {
    for (const auto& [k, v] : req.headers) {
      if (k == name) return v;
    }
    return std::string();
  };
  EXPECT_EQ(header(sent[0], "Authorization"), "Bearer first");
  EXPECT_EQ(header(sent[1], "Authorization"), "Bearer second") << "re-read at each query";
}

TEST(HttpQuerierTest, AnUnreachableServerAndARefusedQueryAreErrorsSayingSo) {
  HttpQuerier down(
      std::make_unique<kube::testing::FakeTransport>([](const kube::HttpRequest&) {
        return absl::StatusOr<kube::HttpResponse>(absl::UnavailableError("connection refused"));
      }),
      {.address = "http://p:9090"}, "");
  QueryResult r = down.Query("up", absl::Now());
  EXPECT_EQ(r.outcome, QueryOutcome::kError);
  EXPECT_THAT(r.message, HasSubstr("Prometheus at http://p:9090 did not answer"));
  EXPECT_THAT(r.message, HasSubstr("connection refused"));

  HttpQuerier refusing(
      std::make_unique<kube::testing::FakeTransport>([](const kube::HttpRequest&) {
        return kube::HttpResponse{
            400, R"({"status":"error","errorType":"bad_data","error":"parse error at char 4"})",
            ""};
      }),
      {.address = "http://p:9090"}, "");
  r = refusing.Query("sum(", absl::Now());
  EXPECT_EQ(r.outcome, QueryOutcome::kError);
  EXPECT_THAT(r.message, HasSubstr("parse error at char 4"));
}

TEST(NewHttpQuerierTest, RefusesOptionsItCannotUse) {
  EXPECT_TRUE(NewHttpQuerier({.address = "http://127.0.0.1:9090"}).ok());
  EXPECT_THAT(NewHttpQuerier({.address = "127.0.0.1:9090"}).status().message(),
              HasSubstr("not http://"));
  EXPECT_THAT(NewHttpQuerier({.address = "https://p:9090", .ca_file = "/nonexistent/ca.crt"})
                  .status()
                  .message(),
              HasSubstr("--prometheus-ca-file"));
  TempFile not_pem("not a certificate");
  EXPECT_THAT(
      NewHttpQuerier({.address = "https://p:9090", .ca_file = not_pem.path()}).status().message(),
      HasSubstr("not PEM"));
  EXPECT_THAT(
      NewHttpQuerier({.address = "http://p:9090", .ca_file = not_pem.path()}).status().message(),
      HasSubstr("not https://"));
  EXPECT_THAT(
      NewHttpQuerier({.address = "http://p:9090", .bearer_token_file = "/nonexistent/token"})
          .status()
          .message(),
      HasSubstr("--prometheus-bearer-token-file"));
}

}  // namespace
}  // namespace booster::promql
