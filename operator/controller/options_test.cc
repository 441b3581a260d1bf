#include "operator/controller/options.h"

#include <map>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace booster::controller {
namespace {

using ::testing::HasSubstr;

GetEnv Env(std::map<std::string, std::string> env) {
  return [env](const char* name) {
    auto it = env.find(name);
    return it == env.end() ? std::string() : it->second;
  };
}

TEST(OptionsTest, DefaultsAreTheContract) {
  absl::StatusOr<OperatorOptions> o = ParseOptions({}, Env({}), "host_42");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->kubeconfig, "");
  EXPECT_EQ(o->ns, "");
  EXPECT_EQ(o->metrics_bind_address, "0.0.0.0:8080");
  EXPECT_EQ(o->health_probe_bind_address, "0.0.0.0:8081");
  EXPECT_TRUE(o->leader_elect);
  EXPECT_EQ(o->leader_election_namespace, "booster-system");
  EXPECT_EQ(o->leader_election_id, "booster-operator");
  EXPECT_EQ(o->identity, "host_42");
  EXPECT_EQ(o->agent_image, "booster-agent:dev");
  EXPECT_EQ(o->agent_image_pull_policy, "IfNotPresent");
  EXPECT_EQ(o->workers, 4);
  EXPECT_EQ(o->log_format, "json");
  EXPECT_EQ(o->feedback_bind_address, "0.0.0.0:9443");
  EXPECT_EQ(o->feedback_cert_file, "");  // no certificate: no feedback server
}

TEST(OptionsTest, FlagsBeatEnvironmentWhichBeatsDefaults) {
  auto env = Env({{"KUBECONFIG", "/env/kc"},
                  {"POD_NAMESPACE", "ops"},
                  {"POD_NAME", "op-0"},
                  {"BOOSTER_WORKERS", "2"}});
  absl::StatusOr<OperatorOptions> o = ParseOptions({}, env, "h_1");
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->kubeconfig, "/env/kc");
  EXPECT_EQ(o->leader_election_namespace, "ops");
  EXPECT_EQ(o->identity, "op-0");
  EXPECT_EQ(o->workers, 2);
  o = ParseOptions({"--kubeconfig=/flag/kc", "--identity", "me", "--workers=8",
                    "--leader-elect=false", "--namespace=shop",
                    "--metrics-bind-address=127.0.0.1:0", "--log-format=text"},
                   env, "h_1");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->kubeconfig, "/flag/kc");
  EXPECT_EQ(o->identity, "me");
  EXPECT_EQ(o->workers, 8);
  EXPECT_FALSE(o->leader_elect);
  EXPECT_EQ(o->ns, "shop");
  EXPECT_EQ(o->metrics_bind_address, "127.0.0.1:0");
  EXPECT_EQ(o->log_format, "text");
  // ":PORT" is every interface, as in controller-runtime.
  o = ParseOptions({"--metrics-bind-address=:9090", "--health-probe-bind-address=:0"}, env, "h");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->metrics_bind_address, "0.0.0.0:9090");
  EXPECT_EQ(o->health_probe_bind_address, "0.0.0.0:0");
  // BOOSTER_KUBECONFIG outranks KUBECONFIG.
  o = ParseOptions({}, Env({{"KUBECONFIG", "/a"}, {"BOOSTER_KUBECONFIG", "/b"}}), "h");
  EXPECT_EQ(o->kubeconfig, "/b");
}

TEST(OptionsTest, BadInputNamesTheFlag) {
  auto env = Env({});
  EXPECT_THAT(ParseOptions({"--nope=1"}, env, "h").status().message(), HasSubstr("--nope"));
  EXPECT_THAT(ParseOptions({"--workers=0"}, env, "h").status().message(), HasSubstr("--workers"));
  EXPECT_THAT(ParseOptions({"--leader-elect=maybe"}, env, "h").status().message(),
              HasSubstr("--leader-elect"));
  EXPECT_THAT(ParseOptions({"--log-format=xml"}, env, "h").status().message(),
              HasSubstr("--log-format"));
  EXPECT_THAT(ParseOptions({"--metrics-bind-address=8080"}, env, "h").status().message(),
              HasSubstr("HOST:PORT"));
  EXPECT_THAT(ParseOptions({"--agent-image-pull-policy=Sometimes"}, env, "h").status().message(),
              HasSubstr("pull-policy"));
  EXPECT_THAT(ParseOptions({"--identity"}, env, "h").status().message(), HasSubstr("needs a value"));
  EXPECT_FALSE(ParseOptions({"stray"}, env, "h").ok());
  EXPECT_THAT(ParseOptions({"--feedback-cert-file=/tls/tls.crt"}, env, "h").status().message(),
              HasSubstr("go together"));
  EXPECT_THAT(ParseOptions({"--feedback-bind-address=9443"}, env, "h").status().message(),
              HasSubstr("HOST:PORT"));
}

TEST(OptionsTest, FeedbackServerFlags) {
  absl::StatusOr<OperatorOptions> o = ParseOptions(
      {"--feedback-bind-address=:9555", "--feedback-cert-file=/tls/tls.crt"},
      Env({{"BOOSTER_FEEDBACK_KEY_FILE", "/tls/tls.key"}}), "h");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->feedback_bind_address, "0.0.0.0:9555");
  EXPECT_EQ(o->feedback_cert_file, "/tls/tls.crt");
  EXPECT_EQ(o->feedback_key_file, "/tls/tls.key");
}

TEST(OptionsTest, NamespaceOptInFlags) {
  absl::StatusOr<OperatorOptions> none = ParseOptions({}, Env({}), "h");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->enabled_namespaces.empty());
  EXPECT_EQ(none->namespace_label, "");
  absl::StatusOr<OperatorOptions> o =
      ParseOptions({"--enabled-namespaces= shop, web ,"},
                   Env({{"BOOSTER_NAMESPACE_LABEL", "booster.dev/enabled"}}), "h");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_THAT(o->enabled_namespaces, ::testing::ElementsAre("shop", "web"));
  EXPECT_EQ(o->namespace_label, "booster.dev/enabled");
  EXPECT_THAT(ParseOptions({"--namespace-label=booster.dev/enabled=true"}, Env({}), "h")
                  .status()
                  .message(),
              HasSubstr("--namespace-label must be a label key"));
}

TEST(OptionsTest, PrometheusFlags) {
  absl::StatusOr<OperatorOptions> none = ParseOptions({}, Env({}), "h");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->prometheus_address, "");
  EXPECT_EQ(none->prometheus_timeout, absl::Seconds(5));
  absl::StatusOr<OperatorOptions> o = ParseOptions(
      {"--prometheus-address=https://prometheus.monitoring:9090", "--prometheus-timeout=2s",
       "--prometheus-ca-file=/etc/ca.crt"},
      Env({{"BOOSTER_PROMETHEUS_BEARER_TOKEN_FILE", "/etc/token"}}), "h");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->prometheus_address, "https://prometheus.monitoring:9090");
  EXPECT_EQ(o->prometheus_ca_file, "/etc/ca.crt");
  EXPECT_EQ(o->prometheus_bearer_token_file, "/etc/token");
  EXPECT_EQ(o->prometheus_timeout, absl::Seconds(2));
  EXPECT_THAT(ParseOptions({"--prometheus-ca-file=/etc/ca.crt"}, Env({}), "h").status().message(),
              HasSubstr("need --prometheus-address"));
  EXPECT_THAT(ParseOptions({"--prometheus-address=http://p:9090", "--prometheus-timeout=soon"},
                           Env({}), "h")
                  .status()
                  .message(),
              HasSubstr("--prometheus-timeout must be a duration"));
}

TEST(OptionsTest, AgentFeedbackFlags) {
  absl::StatusOr<OperatorOptions> d = ParseOptions({}, Env({}), "h");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->agent_feedback_address, "booster-operator.booster-system.svc:9443");
  EXPECT_EQ(d->agent_feedback_ca_file, "");  // no CA: agents are not told to stream
  absl::StatusOr<OperatorOptions> o =
      ParseOptions({"--agent-feedback-address=10.96.0.50:9443"},
                   Env({{"BOOSTER_AGENT_FEEDBACK_CA_FILE", "/tls/ca.crt"}}), "h");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->agent_feedback_address, "10.96.0.50:9443");
  EXPECT_EQ(o->agent_feedback_ca_file, "/tls/ca.crt");
  EXPECT_THAT(ParseOptions({"--agent-feedback-address=operator"}, Env({}), "h").status().message(),
              HasSubstr("--agent-feedback-address must be HOST:PORT"));
  absl::StatusOr<OperatorOptions> svc =
      ParseOptions({"--feedback-service=booster-system/booster-operator-feedback"},
                   Env({{"POD_IP", "10.244.0.7"}}), "h");
  ASSERT_TRUE(svc.ok()) << svc.status();
  EXPECT_EQ(svc->feedback_service, "booster-system/booster-operator-feedback");
  EXPECT_EQ(svc->pod_ip, "10.244.0.7");
  EXPECT_THAT(ParseOptions({"--feedback-service=booster-system/booster-operator-feedback"},
                           Env({}), "h").status().message(),
              HasSubstr("set POD_IP"));
  EXPECT_THAT(ParseOptions({"--feedback-service=svc"}, Env({{"POD_IP", "10.0.0.1"}}), "h")
                  .status()
                  .message(),
              HasSubstr("NAMESPACE/NAME"));
}

TEST(OptionsTest, BareLeaderElectMeansTrue) {
  absl::StatusOr<OperatorOptions> o =
      ParseOptions({"--leader-elect", "--workers=1"}, Env({{"BOOSTER_LEADER_ELECT", "false"}}), "h");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->leader_elect);
}

TEST(OptionsTest, UsageListsEveryFlagWithItsEnvironmentVariable) {
  const std::string usage = Usage();
  for (const FlagInfo& f : Flags()) {
    EXPECT_THAT(usage, HasSubstr("--" + f.name));
    for (const std::string& e : f.env) EXPECT_THAT(usage, HasSubstr(e));
  }
}

}  // namespace
}  // namespace booster::controller
