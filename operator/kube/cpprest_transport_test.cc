// Hermetic checks of the cpprestsdk transport's error mapping. TLS against a real server
// (verification, wrong CA, client certificates, streaming) is covered by tests/e2e/kube
// against the real kube-apiserver.
#include "operator/kube/cpprest_transport.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "operator/kube/test_port.h"

namespace booster::kube {
namespace {

TEST(CpprestTransportTest, PlainHttpIsRefused) {
  Config c;
  c.server = "http://127.0.0.1:8080";
  EXPECT_TRUE(absl::IsInvalidArgument(NewCpprestTransport(c).status()));
}

TEST(CpprestTransportTest, MalformedCaIsAClearError) {
  Config c;
  c.server = "https://127.0.0.1:6443";
  c.ca_pem = "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n";
  absl::Status s = NewCpprestTransport(c).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("TLS material"), std::string::npos) << s;
}

TEST(CpprestTransportTest, ConnectionRefusedIsUnavailable) {
  Config c;
  c.server = absl::StrCat("https://127.0.0.1:", testing::UnusedLoopbackPort());
  c.request_timeout = absl::Seconds(5);
  auto t = NewCpprestTransport(c);
  ASSERT_TRUE(t.ok()) << t.status();
  HttpRequest r;
  r.method = "GET";
  r.path = "/version";
  r.timeout = absl::Seconds(5);
  absl::StatusOr<HttpResponse> resp = (*t)->Send(r);
  EXPECT_TRUE(absl::IsUnavailable(resp.status())) << resp.status();
  absl::StatusOr<StreamResponse> stream = (*t)->Stream(r);
  EXPECT_TRUE(absl::IsUnavailable(stream.status())) << stream.status();
}

}  // namespace
}  // namespace booster::kube
