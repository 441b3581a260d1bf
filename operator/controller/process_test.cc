#include "operator/controller/process.h"

#include <stdlib.h>

#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include <chrono>
#include <thread>
#include "operator/kube/fake_transport.h"

namespace booster::controller {
namespace {

// GET http://127.0.0.1:<port><path>: the status line's code, or -1.
int HttpCode(int port, const std::string& path) {
  const std::string cmd = absl::StrCat("curl -s -o /dev/null -w '%{http_code}' --max-time 5 ",
                                       "http://127.0.0.1:", port, path);
  FILE* f = popen(cmd.c_str(), "r");
  if (f == nullptr) return -1;
  char buf[16] = {0};
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  pclose(f);
  return n == 0 ? -1 : std::atoi(buf);
}

// An API server that answers nothing but 503: the informers never sync.
std::unique_ptr<kube::Client> UnavailableApi() {
  kube::Config config;
  config.server = "https://127.0.0.1:1";
  config.qps = 0;
  return std::make_unique<kube::Client>(
      config, std::make_unique<kube::testing::FakeTransport>(
                  [](const kube::HttpRequest&) -> absl::StatusOr<kube::HttpResponse> {
                    return kube::HttpResponse{503, R"({"kind":"Status","code":503})", ""};
                  },
                  [](const kube::HttpRequest&) -> absl::StatusOr<kube::StreamResponse> {
                    return absl::UnavailableError("the API server is away");
                  }));
}

// An API server with nothing in it: every list is empty, every watch stays open.
class EmptyApi {
 public:
  ~EmptyApi() {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& w : watches_) w->Close();
  }
  std::unique_ptr<kube::Client> Client() {
    kube::Config config;
    config.server = "https://127.0.0.1:1";
    config.qps = 0;
    return std::make_unique<kube::Client>(
        config,
        std::make_unique<kube::testing::FakeTransport>(
            [](const kube::HttpRequest& r) -> absl::StatusOr<kube::HttpResponse> {
              return kube::HttpResponse{404, R"({"kind":"Status","code":404})", r.path};
            },
            [this](const kube::HttpRequest& r) -> absl::StatusOr<kube::StreamResponse> {
              auto state = std::make_shared<kube::testing::FakeStreamState>();
              if (r.path.find("watch=true") == std::string::npos) {
                state->Push(R"({"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]})");
                state->Close();
              } else {
                std::lock_guard<std::mutex> l(mu_);
                watches_.push_back(state);
              }
              return kube::testing::OkStream(state);
            }));
  }

 private:
  std::mutex mu_;
  std::vector<std::shared_ptr<kube::testing::FakeStreamState>> watches_;
};

// A self-signed certificate for 127.0.0.1 in a temp dir: {cert, key}.
std::pair<std::string, std::string> SelfSignedCert() {
  char dir[] = "/tmp/process-test-XXXXXX";
  if (mkdtemp(dir) == nullptr) return {};
  const std::string d = dir;
  const std::string cmd = absl::StrCat(
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 ",
      "-subj /CN=booster-operator -addext subjectAltName=IP:127.0.0.1 -keyout ", d,
      "/tls.key -out ", d, "/tls.crt >/dev/null 2>&1");
  if (std::system(cmd.c_str()) != 0) return {};
  return {d + "/tls.crt", d + "/tls.key"};
}

OperatorOptions TestOptions() {
  OperatorOptions o;
  o.metrics_bind_address = "127.0.0.1:0";
  o.health_probe_bind_address = "127.0.0.1:0";
  o.leader_elect = false;
  o.identity = "test";
  o.workers = 1;
  return o;
}

TEST(OperatorProcessTest, ServesItsEndpointsNotReadyUntilSyncedAndStopsOnRequest) {
  absl::StatusOr<std::unique_ptr<OperatorProcess>> p =
      OperatorProcess::Create(TestOptions(), UnavailableApi());
  ASSERT_TRUE(p.ok()) << p.status();
  const int metrics = (*p)->metrics_port(), health = (*p)->health_port();
  ASSERT_GT(metrics, 0);
  ASSERT_GT(health, 0);
  std::future<int> run = std::async(std::launch::async, [&] { return (*p)->Run(); });
  EXPECT_EQ(HttpCode(health, "/healthz"), 200);
  EXPECT_EQ(HttpCode(health, "/readyz"), 503);  // no informer can sync
  EXPECT_EQ(HttpCode(metrics, "/metrics"), 200);
  (*p)->RequestStop("test");
  ASSERT_EQ(run.wait_for(std::chrono::seconds(30)), std::future_status::ready)
      << "Run did not return after the stop request";
  EXPECT_EQ(run.get(), 0);
  EXPECT_NE(HttpCode(health, "/healthz"), 200);  // the endpoints went with it
}

TEST(OperatorProcessTest, ATakenPortIsAnErrorAtCreation) {
  absl::StatusOr<std::unique_ptr<OperatorProcess>> first =
      OperatorProcess::Create(TestOptions(), UnavailableApi());
  ASSERT_TRUE(first.ok()) << first.status();
  OperatorOptions o = TestOptions();
  o.health_probe_bind_address = absl::StrCat("127.0.0.1:", (*first)->health_port());
  absl::StatusOr<std::unique_ptr<OperatorProcess>> second =
      OperatorProcess::Create(o, UnavailableApi());
  EXPECT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("health probes"), std::string::npos)
      << second.status();
}

TEST(OperatorProcessTest, ServesTheAgentsFeedbackOverTlsOnceSynced) {
  auto [cert, key] = SelfSignedCert();
  ASSERT_FALSE(cert.empty()) << "openssl could not make a certificate";
  OperatorOptions o = TestOptions();
  o.feedback_bind_address = "127.0.0.1:0";
  o.feedback_cert_file = cert;
  o.feedback_key_file = key;
  EmptyApi api;
  absl::StatusOr<std::unique_ptr<OperatorProcess>> p = OperatorProcess::Create(o, api.Client());
  ASSERT_TRUE(p.ok()) << p.status();
  std::future<int> run = std::async(std::launch::async, [&] { return (*p)->Run(); });
  for (int i = 0; i < 200 && (*p)->feedback_port() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling, not timing
  }
  const int port = (*p)->feedback_port();
  ASSERT_GT(port, 0) << "the feedback server did not start";
  // A TLS handshake that verifies the server against its certificate succeeds (gRPC may
  // end the connection right after it, so the verdict is read from the output).
  const std::string verify = absl::StrCat("openssl s_client -alpn h2 -connect 127.0.0.1:", port,
                                          " -CAfile ", cert, " </dev/null 2>&1");
  std::string out;
  if (FILE* f = popen(verify.c_str(), "r"); f != nullptr) {
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof(buf), f)) > 0;) out.append(buf, n);
    pclose(f);
  }
  EXPECT_NE(out.find("Verify return code: 0 (ok)"), std::string::npos) << out;
  EXPECT_EQ(HttpCode((*p)->health_port(), "/readyz"), 200);
  (*p)->RequestStop("test");
  ASSERT_EQ(run.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(run.get(), 0);
  EXPECT_EQ((*p)->feedback_port(), 0);
  std::filesystem::remove_all(std::filesystem::path(cert).parent_path());
}

TEST(OperatorProcessTest, AnUnusableCertificateEndsTheProcessWithAnError) {
  OperatorOptions o = TestOptions();
  o.feedback_bind_address = "127.0.0.1:0";
  o.feedback_cert_file = "/nonexistent/tls.crt";
  o.feedback_key_file = "/nonexistent/tls.key";
  EmptyApi api;
  absl::StatusOr<std::unique_ptr<OperatorProcess>> p = OperatorProcess::Create(o, api.Client());
  ASSERT_TRUE(p.ok()) << p.status();
  std::future<int> run = std::async(std::launch::async, [&] { return (*p)->Run(); });
  ASSERT_EQ(run.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(run.get(), 1);
}

}  // namespace
}  // namespace booster::controller
