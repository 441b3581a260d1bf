// TokenReview client: asks the API server who a bearer token belongs to (POST
// authentication.k8s.io/v1 tokenreviews with spec.audiences ["booster-operator"]) and
// caches the answer, so that an agent reconnecting in a loop costs one API request per
// token, not one per stream.
//
// Cache: keyed by the token's SHA-256 (the token itself is not kept), bounded in entries;
// an authenticated review is kept until the token's own expiry (the JWT `exp` claim,
// read without verifying: the API server has just verified it) and never longer than
// `max_cache_ttl`; an unauthenticated one for `negative_cache_ttl`; a failed request is
// never cached. Only the review is cached: the pod checks of authorize.h run on every
// stream, so a deleted or relabelled pod is refused at once.
//
// Failure is closed: when the API cannot be asked, Review() returns the error and the
// caller refuses the stream (reason tokenreview_unavailable).
//
//   KubeTokenReviewer reviewer(client.get());              // client: kube::Client
//   absl::StatusOr<TokenReviewResult> r = reviewer.Review(token);
//   if (!r.ok()) return Refuse(RejectReason::kTokenReviewUnavailable, r.status());
//   AuthDecision d = Authorize(*r, pods);
#ifndef BOOSTER_OPERATOR_FEEDBACK_TOKEN_REVIEW_H_
#define BOOSTER_OPERATOR_FEEDBACK_TOKEN_REVIEW_H_

#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "operator/feedback/authorize.h"
#include "operator/kube/client.h"
#include "operator/kube/json.h"

namespace booster::feedback {

inline const kube::Resource kTokenReviews{"authentication.k8s.io", "v1", "tokenreviews", false};

// Reviews bearer tokens. Thread-safe. A non-OK status means the review could not be
// made (not that the token is bad); callers must then refuse.
class TokenReviewer {
 public:
  virtual ~TokenReviewer() = default;
  virtual absl::StatusOr<TokenReviewResult> Review(absl::string_view token) = 0;
};

struct TokenReviewOptions {
  std::vector<std::string> audiences = {kAudience};
  absl::Duration max_cache_ttl = absl::Minutes(10);
  absl::Duration negative_cache_ttl = absl::Seconds(10);
  size_t max_entries = 4096;
  // Longer tokens are refused without asking the API server (projected tokens are ~1 KiB).
  size_t max_token_bytes = size_t{16} * 1024;
};

class KubeTokenReviewer final : public TokenReviewer {
 public:
  // `client` is not owned and must outlive the reviewer; its clock times the cache.
  explicit KubeTokenReviewer(kube::Client* client, TokenReviewOptions options = {});

  absl::StatusOr<TokenReviewResult> Review(absl::string_view token) override;

  // Entries currently cached (expired ones included until evicted).
  size_t CacheSize() const;

 private:
  struct Entry {
    TokenReviewResult result;
    absl::Time expires;
  };
  void InsertLocked(std::string key, Entry entry, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  kube::Client* const client_;
  const TokenReviewOptions options_;
  mutable absl::Mutex mu_;
  std::unordered_map<std::string, Entry> cache_ ABSL_GUARDED_BY(mu_);
};

// The TokenReview object POSTed for `token`.
kube::Json TokenReviewRequest(absl::string_view token, const std::vector<std::string>& audiences);

// The status of a TokenReview answer; kInternal when it has no status object.
absl::StatusOr<TokenReviewResult> ParseTokenReview(const kube::Json& review);

// The `exp` claim of a JWT, decoded without verification; nullopt when `token` is not a
// JWT or has no numeric `exp`.
std::optional<absl::Time> JwtExpiry(absl::string_view token);

}  // namespace booster::feedback

#endif  // BOOSTER_OPERATOR_FEEDBACK_TOKEN_REVIEW_H_
