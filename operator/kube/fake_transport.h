// Test double for Transport: requests are answered by a handler function; streams are
// fed chunk by chunk by the test. For unit tests of the pure-ish layers above the
// transport only; the real transport is tested against a TLS server and the real API
// server (tests/e2e/kube).
#ifndef BOOSTER_OPERATOR_KUBE_FAKE_TRANSPORT_H_
#define BOOSTER_OPERATOR_KUBE_FAKE_TRANSPORT_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "operator/kube/transport.h"

namespace booster::kube::testing {

// A stream the test writes into. Shared between the test and the consumer.
class FakeStreamState {
 public:
  void Push(std::string chunk) {
    std::lock_guard<std::mutex> l(mu_);
    chunks_.push_back(std::move(chunk));
    cv_.notify_all();
  }
  void Close() {
    std::lock_guard<std::mutex> l(mu_);
    closed_ = true;
    cv_.notify_all();
  }
  void Fail(absl::Status s) {
    std::lock_guard<std::mutex> l(mu_);
    error_ = std::move(s);
    cv_.notify_all();
  }
  void Cancel() {
    std::lock_guard<std::mutex> l(mu_);
    cancelled_ = true;
    cv_.notify_all();
  }
  absl::StatusOr<std::string> Read() {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return !chunks_.empty() || closed_ || cancelled_ || !error_.ok(); });
    if (cancelled_) return absl::CancelledError("cancelled");
    if (!chunks_.empty()) {
      std::string c = std::move(chunks_.front());
      chunks_.pop_front();
      return c;
    }
    if (!error_.ok()) return error_;
    return std::string();
  }
  bool cancelled() {
    std::lock_guard<std::mutex> l(mu_);
    return cancelled_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> chunks_;
  bool closed_ = false;
  bool cancelled_ = false;
  absl::Status error_;
};

class FakeStream final : public ResponseStream {
 public:
  explicit FakeStream(std::shared_ptr<FakeStreamState> s) : s_(std::move(s)) {}
  absl::StatusOr<std::string> Read() override { return s_->Read(); }
  void Cancel() override { s_->Cancel(); }

 private:
  std::shared_ptr<FakeStreamState> s_;
};

class FakeTransport final : public Transport {
 public:
  using SendHandler = std::function<absl::StatusOr<HttpResponse>(const HttpRequest&)>;
  using StreamHandler = std::function<absl::StatusOr<StreamResponse>(const HttpRequest&)>;

  FakeTransport(SendHandler send, StreamHandler stream = nullptr)
      : send_(std::move(send)), stream_(std::move(stream)) {}

  absl::StatusOr<HttpResponse> Send(const HttpRequest& r) override {
    {
      std::lock_guard<std::mutex> l(mu_);
      requests_.push_back(r);
    }
    return send_(r);
  }
  absl::StatusOr<StreamResponse> Stream(const HttpRequest& r) override {
    {
      std::lock_guard<std::mutex> l(mu_);
      requests_.push_back(r);
    }
    if (!stream_) return absl::UnimplementedError("no stream handler");
    return stream_(r);
  }
  std::vector<HttpRequest> requests() {
    std::lock_guard<std::mutex> l(mu_);
    return requests_;
  }

 private:
  SendHandler send_;
  StreamHandler stream_;
  std::mutex mu_;
  std::vector<HttpRequest> requests_;
};

inline StreamResponse OkStream(std::shared_ptr<FakeStreamState> state) {
  StreamResponse r;
  r.status = 200;
  r.stream = std::make_unique<FakeStream>(std::move(state));
  return r;
}

}  // namespace booster::kube::testing

#endif  // BOOSTER_OPERATOR_KUBE_FAKE_TRANSPORT_H_
