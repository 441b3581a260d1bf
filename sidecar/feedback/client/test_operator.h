// Test-only: the stand-ins an in-process operator FeedbackServer (operator/feedback) needs
// to accept an agent's stream without a cluster — a TokenReview that knows the tokens it
// is given, and pods enrolled in a profile — shared by the client's tests and the agent's
// streaming test.
//
//   FakeReviewer reviewer;  reviewer.Set("tok-1", ReviewFor("web-1"));
//   FakePods pods;          pods.Put(EnrolledPod("web-1", "canary", "shop/web-boost"));
//   auto server = StartTestServer(pki, /*port=*/0, &reviewer, &pods, &store);
#ifndef BOOSTER_SIDECAR_FEEDBACK_CLIENT_TEST_OPERATOR_H_
#define BOOSTER_SIDECAR_FEEDBACK_CLIENT_TEST_OPERATOR_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "operator/feedback/authorize.h"
#include "operator/feedback/server.h"
#include "operator/feedback/test_pki.h"
#include "operator/feedback/token_review.h"

namespace booster::agent::test_operator {

// TokenReview answers by token (unknown tokens are not authenticated); remembers every
// token it was asked about.
class FakeReviewer final : public feedback::TokenReviewer {
 public:
  absl::StatusOr<feedback::TokenReviewResult> Review(absl::string_view token) override;
  void Set(const std::string& token, feedback::TokenReviewResult r);
  std::vector<std::string> tokens() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, feedback::TokenReviewResult> answers_;
  std::vector<std::string> tokens_;
};

class FakePods final : public feedback::PodLookup {
 public:
  std::optional<feedback::PodInfo> Find(absl::string_view ns,
                                        absl::string_view name) const override;
  void Put(feedback::PodInfo p);

 private:
  mutable std::mutex mu_;
  std::map<std::string, feedback::PodInfo> pods_;
};

// An authenticated review of a token bound to pod shop/<pod> (uid "<pod>-uid").
feedback::TokenReviewResult ReviewFor(const std::string& pod);

// A running pod shop/<name> of ReplicaSet web-rs, labelled with `arm`, annotated with
// `profile` and the template hash "h-<arm>".
feedback::PodInfo EnrolledPod(const std::string& name, const std::string& arm,
                              const std::string& profile);

// The operator's server on 127.0.0.1:<port> (0: any) with the PKI's server certificate and
// these stand-ins; `observer` may be null. None is owned; all must outlive the server.
absl::StatusOr<std::unique_ptr<feedback::FeedbackServer>> StartTestServer(
    const feedback::TestPki& pki, int port, FakeReviewer* reviewer, const FakePods* pods,
    feedback::WindowStore* store, feedback::FeedbackObserver* observer = nullptr);

// Polls `done` until it holds or `timeout` (real time) passes.
bool Eventually(const std::function<bool()>& done, absl::Duration timeout = absl::Seconds(30));

}  // namespace booster::agent::test_operator

#endif  // BOOSTER_SIDECAR_FEEDBACK_CLIENT_TEST_OPERATOR_H_
