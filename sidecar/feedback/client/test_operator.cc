#include "sidecar/feedback/client/test_operator.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace booster::agent::test_operator {

absl::StatusOr<feedback::TokenReviewResult> FakeReviewer::Review(absl::string_view token) {
  std::lock_guard<std::mutex> l(mu_);
  tokens_.emplace_back(token);
  auto it = answers_.find(std::string(token));
  if (it == answers_.end()) {
    feedback::TokenReviewResult r;
    r.error = "invalid bearer token";
    return r;
  }
  return it->second;
}

void FakeReviewer::Set(const std::string& token, feedback::TokenReviewResult r) {
  std::lock_guard<std::mutex> l(mu_);
  answers_.insert_or_assign(token, std::move(r));
}

std::vector<std::string> FakeReviewer::tokens() const {
  std::lock_guard<std::mutex> l(mu_);
  return tokens_;
}

std::optional<feedback::PodInfo> FakePods::Find(absl::string_view ns,
                                                absl::string_view name) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = pods_.find(absl::StrCat(ns, "/", name));
  if (it == pods_.end()) return std::nullopt;
  return it->second;
}

void FakePods::Put(feedback::PodInfo p) {
  std::lock_guard<std::mutex> l(mu_);
  std::string key = absl::StrCat(p.pod_namespace, "/", p.name);
  pods_[key] = std::move(p);
}

feedback::TokenReviewResult ReviewFor(const std::string& pod) {
  feedback::TokenReviewResult r;
  r.authenticated = true;
  r.username = "system:serviceaccount:shop:web";
  r.extra[feedback::kExtraPodName] = {pod};
  r.extra[feedback::kExtraPodUid] = {pod + "-uid"};
  r.audiences = {feedback::kAudience};
  return r;
}

feedback::PodInfo EnrolledPod(const std::string& name, const std::string& arm,
                              const std::string& profile) {
  feedback::PodInfo p;
  p.pod_namespace = "shop";
  p.name = name;
  p.uid = name + "-uid";
  p.phase = "Running";
  p.labels = {{feedback::kArmLabel, arm}};
  p.annotations = {{feedback::kProfileAnnotation, profile},
                   {feedback::kTemplateHashAnnotation, "h-" + arm}};
  p.owners = {{"ReplicaSet", "web-rs", "rs-uid", true}};
  p.created = absl::FromUnixSeconds(1'699'999'000);
  return p;
}

absl::StatusOr<std::unique_ptr<feedback::FeedbackServer>> StartTestServer(
    const feedback::TestPki& pki, int port, FakeReviewer* reviewer, const FakePods* pods,
    feedback::WindowStore* store, feedback::FeedbackObserver* observer) {
  feedback::FeedbackServerOptions options;
  options.address = absl::StrCat("127.0.0.1:", port);
  options.cert_file = pki.server_cert.string();
  options.key_file = pki.server_key.string();
  feedback::FeedbackServerDeps deps;
  deps.reviewer = reviewer;
  deps.pods = pods;
  deps.store = store;
  deps.observer = observer;
  return feedback::FeedbackServer::Start(options, deps);
}

bool Eventually(const std::function<bool()>& done, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!done()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(2));
  }
  return true;
}

}  // namespace booster::agent::test_operator
