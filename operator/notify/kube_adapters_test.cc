#include "operator/notify/kube_adapters.h"

#include <mutex>
#include <vector>

// cpprestsdk's U() macro would break GoogleTest's templates.
#define _TURN_OFF_PLATFORM_STRING
#include <cpprest/http_listener.h>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "operator/kube/fake_transport.h"
#include "operator/kube/test_port.h"

namespace booster::notify {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(SplitUrlTest, OriginAndTheRest) {
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(*SplitUrl("https://hooks.slack.com/services/T/B/X"),
            P("https://hooks.slack.com", "/services/T/B/X"));
  EXPECT_EQ(*SplitUrl(" http://10.96.0.9:8080\n"), P("http://10.96.0.9:8080", "/"));
  EXPECT_EQ(*SplitUrl("http://h:1?sig=a%2Fb"), P("http://h:1", "/?sig=a%2Fb"));
  EXPECT_TRUE(absl::IsInvalidArgument(SplitUrl("ftp://h/x").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(SplitUrl("hooks.slack.com/x").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(SplitUrl("https:///x").status()));
}

// A real HTTP server on loopback (cpprestsdk's listener) that records what it is sent.
TEST(HttpPosterTest, PostsJsonToARealServerAndReadsItsAnswer) {
  const int port = kube::testing::UnusedLoopbackPort();
  const std::string origin = absl::StrCat("http://127.0.0.1:", port);
  web::http::experimental::listener::http_listener listener(origin + "/hooks");
  std::mutex mu;
  std::vector<std::string> bodies, paths, types;
  listener.support(web::http::methods::POST, [&](web::http::http_request req) {
    std::string body = req.extract_utf8string(true).get();
    {
      std::lock_guard<std::mutex> l(mu);
      bodies.push_back(body);
      paths.push_back(req.request_uri().to_string());
      types.push_back(req.headers().content_type());
    }
    web::http::http_response r(body == "{\"slow\":1}" ? 429 : 200);
    if (body == "{\"slow\":1}") r.headers().add("Retry-After", "7");
    req.reply(r).wait();
  });
  listener.open().wait();
  HttpPoster poster(absl::Seconds(5));
  absl::StatusOr<PostAnswer> a = poster.Post(origin + "/hooks/T1?x=1", R"({"text":"hi"})");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->status, 200);
  absl::StatusOr<PostAnswer> slow = poster.Post(origin + "/hooks/T1", R"({"slow":1})");
  ASSERT_TRUE(slow.ok()) << slow.status();
  EXPECT_EQ(slow->status, 429);
  EXPECT_EQ(slow->retry_after, "7");
  listener.close().wait();
  std::lock_guard<std::mutex> l(mu);
  ASSERT_EQ(bodies.size(), 2u);
  EXPECT_EQ(bodies[0], R"({"text":"hi"})");
  EXPECT_EQ(paths[0], "/hooks/T1?x=1");
  EXPECT_EQ(types[0], "application/json");
}

TEST(HttpPosterTest, AConnectionThatFailsIsUnavailableAndHidesThePath) {
  HttpPoster poster(absl::Seconds(5));
  absl::StatusOr<PostAnswer> a =
      poster.Post(absl::StrCat("http://127.0.0.1:", kube::testing::UnusedLoopbackPort(),
                               "/services/T0/B0/SECRETTOKEN"),
                  "{}");
  ASSERT_FALSE(a.ok());
  EXPECT_TRUE(absl::IsUnavailable(a.status())) << a.status();
  EXPECT_THAT(std::string(a.status().message()), Not(HasSubstr("SECRETTOKEN")));
  EXPECT_THAT(std::string(a.status().message()), HasSubstr("127.0.0.1"));
}

TEST(KubeSecretReaderTest, ReadsAndDecodesTheKeyAndSaysWhatIsMissing) {
  auto* t = new kube::testing::FakeTransport(
      [](const kube::HttpRequest& r) -> absl::StatusOr<kube::HttpResponse> {
        if (r.path == "/api/v1/namespaces/shop/secrets/hooks") {
          // "http://10.96.0.9/hook\n" in base64
          return kube::HttpResponse{200, R"({"kind":"Secret","data":{"address":
            "aHR0cDovLzEwLjk2LjAuOS9ob29rCg=="}})",
                                    ""};
        }
        return kube::HttpResponse{404, R"({"kind":"Status","reason":"NotFound",
          "message":"secrets \"gone\" not found","code":404})",
                                  ""};
      });
  kube::Config c;
  c.server = "https://127.0.0.1:1";
  c.qps = 0;
  kube::Client client(c, std::unique_ptr<kube::Transport>(t));
  KubeSecretReader secrets(&client);
  absl::StatusOr<std::string> url = secrets.Read("shop", "hooks", "address");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_EQ(*url, "http://10.96.0.9/hook");
  absl::Status no_key = secrets.Read("shop", "hooks", "url").status();
  EXPECT_TRUE(absl::IsFailedPrecondition(no_key)) << no_key;
  EXPECT_THAT(std::string(no_key.message()), HasSubstr("Secret shop/hooks has no key \"url\""));
  absl::Status gone = secrets.Read("shop", "gone", "address").status();
  EXPECT_TRUE(absl::IsNotFound(gone)) << gone;
  EXPECT_THAT(std::string(gone.message()), HasSubstr("Secret shop/gone"));
}

}  // namespace
}  // namespace booster::notify
