#include "operator/feedback/token_review.h"

#include <atomic>
#include <memory>
#include <string>

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"
#include "operator/kube/fake_transport.h"

namespace booster::feedback {
namespace {

using kube::HttpRequest;
using kube::HttpResponse;
using kube::Json;
using kube::testing::FakeTransport;

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);

// An unsigned JWT with the given claims (the reviewer never verifies signatures).
std::string Jwt(const Json& claims) {
  return absl::StrCat(absl::WebSafeBase64Escape(R"({"alg":"RS256","kid":"k"})"), ".",
                      absl::WebSafeBase64Escape(claims.dump()), ".c2lnbmF0dXJl");
}

std::string TokenExpiringAt(absl::Time exp, const std::string& jti = "a") {
  return Jwt({{"aud", {"booster-operator"}},
              {"exp", absl::ToUnixSeconds(exp)},
              {"iat", absl::ToUnixSeconds(kStart)},
              {"jti", jti},
              {"sub", "system:serviceaccount:shop:web"}});
}

Json Authenticated() {
  return {{"apiVersion", "authentication.k8s.io/v1"},
          {"kind", "TokenReview"},
          {"status",
           {{"authenticated", true},
            {"user",
             {{"username", "system:serviceaccount:shop:web"},
              {"uid", "sa-uid"},
              {"groups", {"system:serviceaccounts", "system:authenticated"}},
              {"extra",
               {{"authentication.kubernetes.io/pod-name", {"web-abc"}},
                {"authentication.kubernetes.io/pod-uid", {"uid-1"}}}}}},
            {"audiences", {"booster-operator"}}}}};
}

Json NotAuthenticated() {
  return {{"kind", "TokenReview"},
          {"status", {{"authenticated", false}, {"error", "token has expired"}}}};
}

// A reviewer over a fake API server whose answer the test sets.
class TokenReviewTest : public ::testing::Test {
 protected:
  void SetUp() override { Make({}); }

  void Make(const TokenReviewOptions& options) {
    auto* t = new FakeTransport([this](const HttpRequest&) -> absl::StatusOr<HttpResponse> {
      ++calls_;
      if (!fail_.ok()) return fail_;
      return HttpResponse{status_, answer_.dump(), ""};
    });
    transport_ = t;
    kube::Config config;
    config.server = "https://127.0.0.1:1";
    config.token = "operator-token";
    config.qps = 0;
    client_ = std::make_unique<kube::Client>(config, std::unique_ptr<kube::Transport>(t), &clock_);
    reviewer_ = std::make_unique<KubeTokenReviewer>(client_.get(), options);
  }

  FakeClock clock_{kStart};
  FakeTransport* transport_ = nullptr;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<KubeTokenReviewer> reviewer_;
  Json answer_ = Authenticated();
  int status_ = 201;
  absl::Status fail_;
  std::atomic<int> calls_{0};
};

TEST_F(TokenReviewTest, PostsATokenReviewForTheOperatorAudience) {
  const std::string token = TokenExpiringAt(kStart + absl::Hours(1));
  absl::StatusOr<TokenReviewResult> r = reviewer_->Review(token);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<HttpRequest> reqs = transport_->requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(reqs[0].path, "/apis/authentication.k8s.io/v1/tokenreviews");
  Json body = Json::parse(reqs[0].body);
  EXPECT_EQ(body["kind"], "TokenReview");
  EXPECT_EQ(body["apiVersion"], "authentication.k8s.io/v1");
  EXPECT_EQ(body["spec"]["token"], token);
  EXPECT_EQ(body["spec"]["audiences"], Json::array({"booster-operator"}));
  bool operator_auth = false;
  for (const auto& [k, v] : reqs[0].headers) {
    if (k == "Authorization") operator_auth = v == "Bearer operator-token";
  }
  EXPECT_TRUE(operator_auth) << "the request authenticates as the operator, not the agent";

  EXPECT_TRUE(r->authenticated);
  EXPECT_EQ(r->username, "system:serviceaccount:shop:web");
  EXPECT_EQ(r->uid, "sa-uid");
  EXPECT_EQ(r->groups.size(), 2u);
  EXPECT_EQ(r->extra.at(kExtraPodName), std::vector<std::string>{"web-abc"});
  EXPECT_EQ(r->extra.at(kExtraPodUid), std::vector<std::string>{"uid-1"});
  EXPECT_EQ(r->audiences, std::vector<std::string>{"booster-operator"});
}

TEST_F(TokenReviewTest, CacheHitMakesNoRequest) {
  const std::string token = TokenExpiringAt(kStart + absl::Hours(1));
  ASSERT_TRUE(reviewer_->Review(token).ok());
  clock_.Advance(absl::Minutes(5));
  absl::StatusOr<TokenReviewResult> again = reviewer_->Review(token);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->authenticated);
  EXPECT_EQ(again->username, "system:serviceaccount:shop:web");
  EXPECT_EQ(calls_, 1);
  // Another token is another entry.
  ASSERT_TRUE(reviewer_->Review(TokenExpiringAt(kStart + absl::Hours(1), "b")).ok());
  EXPECT_EQ(calls_, 2);
  EXPECT_EQ(reviewer_->CacheSize(), 2u);
}

TEST_F(TokenReviewTest, CachedUntilTheTokenExpires) {
  const std::string token = TokenExpiringAt(kStart + absl::Minutes(3));
  ASSERT_TRUE(reviewer_->Review(token).ok());
  clock_.Advance(absl::Minutes(3) - absl::Seconds(1));
  ASSERT_TRUE(reviewer_->Review(token).ok());
  EXPECT_EQ(calls_, 1);
  clock_.Advance(absl::Seconds(1));  // at exp: asked again (the API server says expired)
  answer_ = NotAuthenticated();
  absl::StatusOr<TokenReviewResult> r = reviewer_->Review(token);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->authenticated);
  EXPECT_EQ(r->error, "token has expired");
  EXPECT_EQ(calls_, 2);
}

TEST_F(TokenReviewTest, CacheIsCappedAtMaxTtl) {
  const std::string token = TokenExpiringAt(kStart + absl::Hours(24));
  ASSERT_TRUE(reviewer_->Review(token).ok());
  clock_.Advance(absl::Minutes(10) - absl::Seconds(1));
  ASSERT_TRUE(reviewer_->Review(token).ok());
  EXPECT_EQ(calls_, 1);
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(reviewer_->Review(token).ok());
  EXPECT_EQ(calls_, 2);
}

TEST_F(TokenReviewTest, TokenWithoutExpiryIsCachedForMaxTtl) {
  const std::string token = "not-a-jwt";
  ASSERT_TRUE(reviewer_->Review(token).ok());
  clock_.Advance(absl::Minutes(9));
  ASSERT_TRUE(reviewer_->Review(token).ok());
  EXPECT_EQ(calls_, 1);
  clock_.Advance(absl::Minutes(1));
  ASSERT_TRUE(reviewer_->Review(token).ok());
  EXPECT_EQ(calls_, 2);
}

TEST_F(TokenReviewTest, RejectionIsCachedBriefly) {
  answer_ = NotAuthenticated();
  const std::string token = TokenExpiringAt(kStart + absl::Hours(1));
  ASSERT_FALSE(reviewer_->Review(token)->authenticated);
  clock_.Advance(absl::Seconds(9));
  ASSERT_FALSE(reviewer_->Review(token)->authenticated);
  EXPECT_EQ(calls_, 1);
  clock_.Advance(absl::Seconds(1));
  answer_ = Authenticated();
  EXPECT_TRUE(reviewer_->Review(token)->authenticated);
  EXPECT_EQ(calls_, 2);
}

TEST_F(TokenReviewTest, ApiFailureIsAnErrorAndNotCached) {
  const std::string token = TokenExpiringAt(kStart + absl::Hours(1));
  fail_ = absl::UnavailableError("connection refused");
  absl::StatusOr<TokenReviewResult> r = reviewer_->Review(token);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsUnavailable(r.status())) << r.status();
  EXPECT_NE(r.status().message().find("connection refused"), std::string::npos);

  fail_ = absl::OkStatus();
  status_ = 403;
  answer_ = {{"kind", "Status"}, {"reason", "Forbidden"}, {"message", "cannot create"}};
  r = reviewer_->Review(token);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsPermissionDenied(r.status())) << r.status();
  EXPECT_NE(r.status().message().find("tokenreviews"), std::string::npos) << r.status();

  status_ = 500;
  answer_ = {{"kind", "Status"}, {"message", "etcd timeout"}};
  EXPECT_FALSE(reviewer_->Review(token).ok());

  status_ = 201;
  answer_ = {{"kind", "TokenReview"}};  // no status at all
  r = reviewer_->Review(token);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsInternal(r.status())) << r.status();

  EXPECT_EQ(reviewer_->CacheSize(), 0u);
  answer_ = Authenticated();
  const int before = calls_;
  EXPECT_TRUE(reviewer_->Review(token)->authenticated);
  EXPECT_EQ(calls_, before + 1);
}

TEST_F(TokenReviewTest, MalformedTokensAreRefusedWithoutARequest) {
  Make({.max_token_bytes = 64});
  for (const std::string& token :
       {std::string(""), std::string("two words"), std::string("line\nbreak"),
        std::string("\xff\xfe", 2), std::string(65, 'a')}) {
    absl::StatusOr<TokenReviewResult> r = reviewer_->Review(token);
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->authenticated);
  }
  EXPECT_EQ(calls_, 0);
  EXPECT_TRUE(reviewer_->Review(std::string(64, 'a'))->authenticated);
  EXPECT_EQ(calls_, 1);
}

TEST_F(TokenReviewTest, CacheIsBoundedAndEvictsTheSoonestToExpire) {
  Make({.max_entries = 2});
  const std::string soon = TokenExpiringAt(kStart + absl::Minutes(2), "soon");
  const std::string late = TokenExpiringAt(kStart + absl::Minutes(8), "late");
  const std::string third = TokenExpiringAt(kStart + absl::Minutes(5), "third");
  ASSERT_TRUE(reviewer_->Review(soon).ok());
  ASSERT_TRUE(reviewer_->Review(late).ok());
  ASSERT_TRUE(reviewer_->Review(third).ok());
  EXPECT_EQ(reviewer_->CacheSize(), 2u);
  EXPECT_EQ(calls_, 3);
  ASSERT_TRUE(reviewer_->Review(late).ok());
  ASSERT_TRUE(reviewer_->Review(third).ok());
  EXPECT_EQ(calls_, 3) << "late and third stayed cached";
  ASSERT_TRUE(reviewer_->Review(soon).ok());
  EXPECT_EQ(calls_, 4) << "soon was evicted";
  EXPECT_EQ(reviewer_->CacheSize(), 2u);
}

TEST(JwtExpiryTest, ReadsTheExpClaim) {
  EXPECT_EQ(JwtExpiry(Jwt({{"exp", 1'700'000'600}})), absl::FromUnixSeconds(1'700'000'600));
  EXPECT_EQ(JwtExpiry(Jwt({{"exp", 1'700'000'600.5}})), absl::FromUnixSeconds(1'700'000'600));
  // Padded base64url is accepted too.
  std::string padded = absl::StrCat("e30.", absl::Base64Escape(R"({"exp":1700000600})"), ".s");
  for (char& c : padded) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  EXPECT_EQ(JwtExpiry(padded), absl::FromUnixSeconds(1'700'000'600));
}

TEST(JwtExpiryTest, NoExpiryForAnythingElse) {
  EXPECT_FALSE(JwtExpiry(""));
  EXPECT_FALSE(JwtExpiry("opaque-token"));
  EXPECT_FALSE(JwtExpiry("a.b"));
  EXPECT_FALSE(JwtExpiry("a..c"));
  EXPECT_FALSE(JwtExpiry("a.!!!.c"));
  EXPECT_FALSE(JwtExpiry(Jwt({{"sub", "x"}})));
  EXPECT_FALSE(JwtExpiry(Jwt({{"exp", "1700000600"}})));
  EXPECT_FALSE(JwtExpiry(Jwt({{"exp", -5}})));
  EXPECT_FALSE(JwtExpiry(Jwt({{"exp", 1e300}})));
  EXPECT_FALSE(JwtExpiry(Jwt(Json::array({1, 2}))));
  EXPECT_FALSE(JwtExpiry(absl::StrCat("e30.", absl::WebSafeBase64Escape("{not json"), ".s")));
}

TEST(ParseTokenReviewTest, ToleratesMissingFields) {
  absl::StatusOr<TokenReviewResult> r =
      ParseTokenReview(Json{{"status", {{"authenticated", true}}}});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->authenticated);
  EXPECT_TRUE(r->username.empty());
  EXPECT_TRUE(r->extra.empty());
  EXPECT_FALSE(ParseTokenReview(Json{{"status", {{"authenticated", "true"}}}})->authenticated);
  EXPECT_FALSE(ParseTokenReview(Json::array()).ok());
  EXPECT_FALSE(ParseTokenReview(Json{{"status", 1}}).ok());
}

}  // namespace
}  // namespace booster::feedback
