#include "operator/feedback/leader_endpoint.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "operator/kube/fake_transport.h"

namespace booster::feedback {
namespace {

using kube::HttpRequest;
using kube::HttpResponse;
using kube::Json;
using kube::testing::FakeTransport;

const LeaderEndpoint kLeader{.ns = "booster-system",
                             .service = "booster-operator-feedback",
                             .pod = "booster-operator-abc",
                             .ip = "10.244.0.7",
                             .port = 9443};
constexpr char kPath[] =
    "/apis/discovery.k8s.io/v1/namespaces/booster-system/endpointslices/booster-operator-feedback";

// An API server holding at most one EndpointSlice.
class LeaderEndpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto* t = new FakeTransport([this](const HttpRequest& r) -> absl::StatusOr<HttpResponse> {
      if (r.method == "GET") {
        if (slice_.is_null()) return HttpResponse{404, R"({"kind":"Status","code":404})", ""};
        return HttpResponse{200, slice_.dump(), ""};
      }
      Json body = Json::parse(r.body);
      if (r.method == "PUT" &&
          body["metadata"].value("resourceVersion", "") != slice_["metadata"]["resourceVersion"]) {
        return HttpResponse{409, R"({"kind":"Status","code":409})", ""};
      }
      slice_ = body;
      slice_["metadata"]["resourceVersion"] = std::to_string(++rv_);
      return HttpResponse{r.method == "POST" ? 201 : 200, slice_.dump(), ""};
    });
    transport_ = t;
    kube::Config config;
    config.server = "https://127.0.0.1:1";
    config.token = "operator-token";
    config.qps = 0;
    client_ = std::make_unique<kube::Client>(config, std::unique_ptr<kube::Transport>(t));
  }

  std::vector<std::string> Methods() {
    std::vector<std::string> m;
    for (const HttpRequest& r : transport_->requests()) m.push_back(r.method + " " + r.path);
    return m;
  }

  Json slice_;
  int rv_ = 0;
  FakeTransport* transport_ = nullptr;
  std::unique_ptr<kube::Client> client_;
};

TEST_F(LeaderEndpointTest, CreatesTheSliceThenLeavesItAloneThenMovesItToANewLeader) {
  ASSERT_TRUE(PublishLeaderEndpoint(*client_, kLeader).ok());
  EXPECT_EQ(slice_["metadata"]["labels"]["kubernetes.io/service-name"], kLeader.service);
  EXPECT_EQ(slice_["addressType"], "IPv4");
  EXPECT_EQ(slice_["endpoints"][0]["addresses"][0], "10.244.0.7");
  EXPECT_EQ(slice_["endpoints"][0]["targetRef"]["name"], "booster-operator-abc");
  EXPECT_EQ(slice_["ports"][0]["name"], "agents");
  EXPECT_EQ(slice_["ports"][0]["port"], 9443);
  ASSERT_TRUE(PublishLeaderEndpoint(*client_, kLeader).ok());  // nothing to change
  LeaderEndpoint next = kLeader;
  next.pod = "booster-operator-def";
  next.ip = "10.244.0.9";
  ASSERT_TRUE(PublishLeaderEndpoint(*client_, next).ok());
  EXPECT_EQ(slice_["endpoints"][0]["addresses"][0], "10.244.0.9");
  EXPECT_EQ(Methods(), (std::vector<std::string>{std::string("GET ") + kPath,
                                                 "POST /apis/discovery.k8s.io/v1/namespaces/"
                                                 "booster-system/endpointslices",
                                                 std::string("GET ") + kPath,
                                                 std::string("GET ") + kPath,
                                                 std::string("PUT ") + kPath}));
}

TEST_F(LeaderEndpointTest, AnIpv6LeaderAndMissingPieces) {
  LeaderEndpoint v6 = kLeader;
  v6.ip = "fd00::7";
  EXPECT_EQ(LeaderEndpointSlice(v6)["addressType"], "IPv6");
  LeaderEndpoint no_ip = kLeader;
  no_ip.ip = "";
  absl::Status s = PublishLeaderEndpoint(*client_, no_ip);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("POD_IP"), std::string::npos) << s;
  EXPECT_TRUE(transport_->requests().empty());
}

TEST(ServiceRefTest, NamespaceSlashName) {
  std::string ns, name;
  ASSERT_TRUE(ParseServiceRef("booster-system/booster-operator-feedback", &ns, &name).ok());
  EXPECT_EQ(ns, "booster-system");
  EXPECT_EQ(name, "booster-operator-feedback");
  for (const char* bad : {"", "svc", "/svc", "ns/", "a/b/c"}) {
    absl::Status s = ParseServiceRef(bad, &ns, &name);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("NAMESPACE/NAME"), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace booster::feedback
