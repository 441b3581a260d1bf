#include "operator/controller/process.h"

#include <future>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
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

}  // namespace
}  // namespace booster::controller
