#include "operator/feedback/token_review.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace booster::feedback {
namespace {

// The cache key: the token's SHA-256, so a heap dump of the operator holds no tokens and
// two tokens can never share an entry.
std::string CacheKey(absl::string_view token) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(token.data(), token.size(), md, &len, EVP_sha256(), nullptr) != 1) {
    return "";
  }
  return std::string(reinterpret_cast<const char*>(md), len);
}

// Bearer tokens are printable ASCII (JWTs are base64url and dots); anything else is
// refused before it reaches a JSON encoder or the API server.
bool PlausibleToken(absl::string_view token, size_t max_bytes) {
  if (token.empty() || token.size() > max_bytes) return false;
  return std::all_of(token.begin(), token.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

std::vector<std::string> StringArray(const kube::Json& j) {
  std::vector<std::string> out;
  if (!j.is_array()) return out;
  for (const kube::Json& v : j) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

}  // namespace

kube::Json TokenReviewRequest(absl::string_view token, const std::vector<std::string>& audiences) {
  return kube::Json{{"apiVersion", "authentication.k8s.io/v1"},
                    {"kind", "TokenReview"},
                    {"spec", {{"token", std::string(token)}, {"audiences", audiences}}}};
}

absl::StatusOr<TokenReviewResult> ParseTokenReview(const kube::Json& review) {
  if (!review.is_object() || !review.contains("status") || !review["status"].is_object()) {
    return absl::InternalError("TokenReview answer has no status");
  }
  const kube::Json& status = review["status"];
  TokenReviewResult r;
  r.authenticated = status.contains("authenticated") && status["authenticated"].is_boolean() &&
                    status["authenticated"].get<bool>();
  r.username = kube::JsonString(status, "/user/username");
  r.uid = kube::JsonString(status, "/user/uid");
  if (status.contains("user") && status["user"].is_object()) {
    const kube::Json& user = status["user"];
    if (user.contains("groups")) r.groups = StringArray(user["groups"]);
    if (user.contains("extra") && user["extra"].is_object()) {
      for (const auto& [k, v] : user["extra"].items()) r.extra[k] = StringArray(v);
    }
  }
  if (status.contains("audiences")) r.audiences = StringArray(status["audiences"]);
  r.error = kube::JsonString(status, "/error");
  return r;
}

std::optional<absl::Time> JwtExpiry(absl::string_view token) {
  std::vector<absl::string_view> parts = absl::StrSplit(token, '.');
  if (parts.size() != 3 || parts[1].empty()) return std::nullopt;
  std::string payload;
  if (!absl::WebSafeBase64Unescape(parts[1], &payload)) return std::nullopt;
  absl::StatusOr<kube::Json> claims = kube::ParseJson(payload);
  if (!claims.ok() || !claims->is_object() || !claims->contains("exp")) return std::nullopt;
  const kube::Json& exp = (*claims)["exp"];
  if (!exp.is_number()) return std::nullopt;
  const double seconds = exp.get<double>();
  // Beyond year ~2500 or negative: not a real expiry.
  if (!std::isfinite(seconds) || seconds < 0 || seconds > 1.7e10) return std::nullopt;
  return absl::FromUnixSeconds(static_cast<int64_t>(seconds));
}

KubeTokenReviewer::KubeTokenReviewer(kube::Client* client, TokenReviewOptions options)
    : client_(client), options_(std::move(options)) {}

size_t KubeTokenReviewer::CacheSize() const {
  absl::MutexLock l(&mu_);
  return cache_.size();
}

absl::StatusOr<TokenReviewResult> KubeTokenReviewer::Review(absl::string_view token) {
  if (!PlausibleToken(token, options_.max_token_bytes)) {
    TokenReviewResult r;
    r.error = "malformed bearer token";
    return r;
  }
  const std::string key = CacheKey(token);
  if (key.empty()) return absl::InternalError("TokenReview: SHA-256 failed");
  {
    absl::MutexLock l(&mu_);
    auto it = cache_.find(key);
    if (it != cache_.end()) {
      if (client_->clock()->Now() < it->second.expires) return it->second.result;
      cache_.erase(it);
    }
  }

  absl::StatusOr<kube::Json> answer =
      client_->Create(kTokenReviews, "", TokenReviewRequest(token, options_.audiences));
  if (!answer.ok()) {
    return absl::Status(answer.status().code(),
                        absl::StrCat("TokenReview request failed (the operator needs RBAC "
                                     "create on tokenreviews.authentication.k8s.io): ",
                                     answer.status().message()));
  }
  absl::StatusOr<TokenReviewResult> result = ParseTokenReview(*answer);
  if (!result.ok()) return result.status();

  const absl::Time now = client_->clock()->Now();
  absl::Time expires =
      now + (result->authenticated ? options_.max_cache_ttl
                                   : std::min(options_.negative_cache_ttl, options_.max_cache_ttl));
  if (result->authenticated) {
    if (std::optional<absl::Time> exp = JwtExpiry(token)) expires = std::min(expires, *exp);
  }
  if (expires > now && options_.max_entries > 0) {
    absl::MutexLock l(&mu_);
    InsertLocked(key, Entry{*result, expires}, now);
  }
  return result;
}

void KubeTokenReviewer::InsertLocked(std::string key, Entry entry, absl::Time now) {
  if (cache_.size() >= options_.max_entries && cache_.find(key) == cache_.end()) {
    for (auto it = cache_.begin(); it != cache_.end();) {
      it = it->second.expires <= now ? cache_.erase(it) : std::next(it);
    }
    if (cache_.size() >= options_.max_entries) {
      auto soonest = std::min_element(
          cache_.begin(), cache_.end(),
          [](const auto& a, const auto& b) { return a.second.expires < b.second.expires; });
      cache_.erase(soonest);
    }
  }
  cache_[std::move(key)] = std::move(entry);
}

}  // namespace booster::feedback
