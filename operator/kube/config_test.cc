#include "operator/kube/config.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace booster::kube {
namespace {

namespace fs = std::filesystem;

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kube_config_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& name, const std::string& content) {
    std::ofstream(dir_ + "/" + name) << content;
  }
  std::string dir_;
};

std::string B64(const std::string& s) { return absl::Base64Escape(s); }

std::string Kubeconfig(const std::string& cluster_extra, const std::string& user_extra,
                       const std::string& server = "https://127.0.0.1:6443") {
  return absl::StrCat(R"(apiVersion: v1
kind: Config
current-context: main
contexts:
- name: main
  context: {cluster: c1, user: u1, namespace: team-a}
- name: other
  context: {cluster: c2, user: u2}
clusters:
- name: c1
  cluster:
    server: )",
                      server, "\n", cluster_extra, R"(
- name: c2
  cluster:
    server: https://10.0.0.1:443/
users:
- name: u1
  user:
)",
                      user_extra, R"(
- name: u2
  user:
    token: static-two
)");
}

TEST_F(ConfigTest, InlineDataIsDecoded) {
  absl::StatusOr<Config> c = ParseKubeconfig(
      Kubeconfig("    certificate-authority-data: " + B64("CA-PEM"),
                 "    client-certificate-data: " + B64("CERT") + "\n    client-key-data: " +
                     B64("KEY")),
      dir_);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://127.0.0.1:6443");
  EXPECT_EQ(c->ca_pem, "CA-PEM");
  EXPECT_EQ(c->client_cert_pem, "CERT");
  EXPECT_EQ(c->client_key_pem, "KEY");
  EXPECT_EQ(c->default_namespace, "team-a");
}

TEST_F(ConfigTest, FilesAreReadRelativeToTheKubeconfig) {
  Write("ca.crt", "CA-FROM-FILE");
  Write("token", "tok\n");
  Write("kubeconfig", Kubeconfig("    certificate-authority: ca.crt", "    tokenFile: token"));
  absl::StatusOr<Config> c = LoadKubeconfig(dir_ + "/kubeconfig");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->ca_pem, "CA-FROM-FILE");
  EXPECT_EQ(c->token_file, dir_ + "/token");
}

TEST_F(ConfigTest, ExplicitContextAndTrailingSlash) {
  absl::StatusOr<Config> c = ParseKubeconfig(Kubeconfig("", "    token: t"), dir_, "other");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://10.0.0.1:443");
  EXPECT_EQ(c->token, "static-two");
  EXPECT_EQ(c->default_namespace, "default");
}

// Found by kubeconfig_fuzzer: "https://127.0.0.1:1644//" kept one slash.
TEST_F(ConfigTest, EveryTrailingSlashGoesAndAServerWithoutAHostIsAnError) {
  absl::StatusOr<Config> c =
      ParseKubeconfig(Kubeconfig("", "    token: t", "https://127.0.0.1:1644//"), dir_);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://127.0.0.1:1644");
  for (const char* no_host : {"https://", "https:///", "https:////"}) {
    c = ParseKubeconfig(Kubeconfig("", "    token: t", no_host), dir_);
    EXPECT_TRUE(absl::IsInvalidArgument(c.status())) << no_host;
    EXPECT_NE(c.status().message().find("has no host"), std::string::npos) << c.status();
  }
}

TEST_F(ConfigTest, InsecureAndPlainHttpAreRejected) {
  absl::StatusOr<Config> c =
      ParseKubeconfig(Kubeconfig("    insecure-skip-tls-verify: true", "    token: t"), dir_);
  EXPECT_TRUE(absl::IsInvalidArgument(c.status()));
  EXPECT_NE(c.status().message().find("insecure-skip-tls-verify"), std::string::npos);
  c = ParseKubeconfig(Kubeconfig("", "    token: t", "http://127.0.0.1:8080"), dir_);
  EXPECT_TRUE(absl::IsInvalidArgument(c.status()));
}

TEST_F(ConfigTest, ClearErrors) {
  EXPECT_TRUE(absl::IsInvalidArgument(ParseKubeconfig("[1, 2", dir_).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(ParseKubeconfig("a: b", dir_).status()));
  absl::StatusOr<Config> c = ParseKubeconfig(Kubeconfig("", "    token: t"), dir_, "nope");
  EXPECT_NE(c.status().message().find("\"nope\" not found"), std::string::npos) << c.status();
  c = ParseKubeconfig(Kubeconfig("    certificate-authority: missing.crt", "    token: t"), dir_);
  EXPECT_NE(c.status().message().find("missing.crt"), std::string::npos) << c.status();
  c = ParseKubeconfig(Kubeconfig("    certificate-authority-data: '%%%'", "    token: t"), dir_);
  EXPECT_NE(c.status().message().find("base64"), std::string::npos) << c.status();
  c = ParseKubeconfig(Kubeconfig("", "    client-certificate-data: " + B64("C")), dir_);
  EXPECT_NE(c.status().message().find("together"), std::string::npos) << c.status();
  c = ParseKubeconfig(Kubeconfig("", "    exec: {command: foo}"), dir_);
  EXPECT_TRUE(absl::IsUnimplemented(c.status()));
  EXPECT_TRUE(absl::IsNotFound(LoadKubeconfig(dir_ + "/absent").status()));
}

TEST_F(ConfigTest, InCluster) {
  Write("ca.crt", "SA-CA");
  Write("token", "sa-token");
  Write("namespace", "booster-system\n");
  std::map<std::string, std::string> env = {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                                            {"KUBERNETES_SERVICE_PORT", "443"}};
  auto getenv = [&](const char* n) { return env.count(n) ? env[n] : std::string(); };
  absl::StatusOr<Config> c = InClusterConfig(getenv, dir_);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://10.96.0.1:443");
  EXPECT_EQ(c->ca_pem, "SA-CA");
  EXPECT_EQ(c->token_file, dir_ + "/token");
  EXPECT_EQ(c->default_namespace, "booster-system");
  env["KUBERNETES_SERVICE_HOST"] = "fd00::1";
  EXPECT_EQ(InClusterConfig(getenv, dir_)->server, "https://[fd00::1]:443");
  env.clear();
  EXPECT_TRUE(absl::IsFailedPrecondition(InClusterConfig(getenv, dir_).status()));
}

TEST_F(ConfigTest, TokenFileIsReReadAfterTheRefreshPeriod) {
  Write("token", "first\n");
  Config c;
  c.token_file = dir_ + "/token";
  FakeClock clock;
  TokenSource tokens(c, &clock);
  EXPECT_EQ(*tokens.Token(), "first");
  Write("token", "second");
  clock.Advance(absl::Seconds(59));
  EXPECT_EQ(*tokens.Token(), "first") << "cached within the refresh period";
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(*tokens.Token(), "second") << "re-read once a minute has passed";
}

TEST_F(ConfigTest, TokenSourceKeepsLastGoodTokenWhenTheFileVanishes) {
  Write("token", "good");
  Config c;
  c.token_file = dir_ + "/token";
  FakeClock clock;
  TokenSource tokens(c, &clock);
  EXPECT_EQ(*tokens.Token(), "good");
  fs::remove(dir_ + "/token");
  clock.Advance(absl::Minutes(2));
  EXPECT_EQ(*tokens.Token(), "good");
  Write("token", "rotated");
  EXPECT_EQ(*tokens.Token(), "rotated") << "a failed re-read is retried on the next call";
}

TEST_F(ConfigTest, TokenSourceErrors) {
  Config c;
  c.token_file = dir_ + "/absent";
  FakeClock clock;
  TokenSource missing(c, &clock);
  EXPECT_TRUE(absl::IsNotFound(missing.Token().status()));
  Config s;
  s.token = "static";
  TokenSource static_source(s, &clock);
  EXPECT_EQ(*static_source.Token(), "static");
}

}  // namespace
}  // namespace booster::kube
