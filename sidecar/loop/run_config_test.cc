#include "sidecar/loop/run_config.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace booster::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

using Env = std::map<std::string, std::string>;
using Flags = std::map<std::string, std::string>;

EnvLookup Lookup(const Env& env) {
  return [env](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
}

absl::StatusOr<RunOptions> From(Flags flags, const Env& env) {
  flags.emplace("state-dir", "/booster");
  return RunOptionsFrom(flags, Lookup(env), "host-1");
}

constexpr char kPem[] = "-----BEGIN CERTIFICATE-----\nMIIB...\n-----END CERTIFICATE-----\n";

// What operator/rollout/pod_template.cc gives the injected sidecar.
Env PodEnv() {
  return {{"BOOSTER_ARM", "canary"},
          {"BOOSTER_AGENT_MODE", "tune"},
          {"BOOSTER_PROFILE", "shop/web-latency"},
          {"BOOSTER_CONTROL", "/booster/control"},
          {"BOOSTER_OPERATOR", "booster-operator.booster-system.svc:9443"},
          {"BOOSTER_OPERATOR_CA", kPem},
          {"BOOSTER_TOKEN_FILE", "/var/run/secrets/booster/token"},
          {"BOOSTER_TUNING",
           "{\"cpu\":{\"placement\":\"pinned\",\"numa\":\"align\"},\"runtime\":{\"preload\":{"
           "\"listenBacklog\":4096}}}"},
          {"BOOSTER_TARGET_CPU_LIMIT", "500"},
          {"BOOSTER_TARGET_MEMORY_LIMIT", "67108864"},
          {"BOOSTER_TEMPLATE_HASH", "9f2c1a"},
          {"BOOSTER_METRICS_ADDRESS", ":9901"},
          {"BOOSTER_WINDOW", "30s"},
          {"BOOSTER_APP_METRICS",
           R"({"port": 8080, "path": "/metrics", "latencyHistogram": "", "requestCounter": "",
               "errorLabel": "code", "errorMatch": "5.."})"},
          {"BOOSTER_CONTAINERS", "web, worker"},
          {"POD_NAME", "web-7d9f-abcde"},
          {"POD_NAMESPACE", "shop"},
          {"POD_UID", "0b6f7c1e-uid"},
          {"NODE_NAME", "node-a"}};
}

TEST(RunConfigTest, TheInjectedSidecarsEnvironment) {
  absl::StatusOr<RunOptions> o = From({}, PodEnv());
  ASSERT_TRUE(o.ok()) << o.status();
  const AgentConfig& c = o->agent;
  EXPECT_EQ(c.identity.pod_namespace, "shop");
  EXPECT_EQ(c.identity.pod_name, "web-7d9f-abcde");
  EXPECT_EQ(c.identity.pod_uid, "0b6f7c1e-uid");
  EXPECT_EQ(c.identity.node_name, "node-a");
  EXPECT_EQ(c.identity.profile, "shop/web-latency");
  EXPECT_EQ(c.identity.arm, "canary");
  EXPECT_EQ(c.identity.mode, "tune");
  EXPECT_EQ(c.identity.template_hash, "9f2c1a");
  EXPECT_EQ(c.window, absl::Seconds(30));
  EXPECT_EQ(o->metrics_address, ":9901");
  EXPECT_EQ(c.app_metrics.port, 8080);
  EXPECT_EQ(c.app_metrics.error_label, "code");
  EXPECT_EQ(c.control_path, "/booster/control");
  EXPECT_EQ(c.journal_path, "/booster/agent.journal");
  EXPECT_TRUE(c.selector.pod_peers);
  EXPECT_TRUE(c.discover_app_port);
  EXPECT_THAT(c.selector.containers, ElementsAre("web", "worker"));
  EXPECT_EQ(c.selector.pod_uid, "0b6f7c1e-uid");
  EXPECT_EQ(o->operator_address, "booster-operator.booster-system.svc:9443");
  EXPECT_EQ(o->token_file, "/var/run/secrets/booster/token");
  EXPECT_EQ(o->operator_ca_pem, std::string(kPem).substr(0, std::string(kPem).size() - 1));
  EXPECT_EQ(o->operator_ca_file, "");
  EXPECT_EQ(o->operator_ca_source, "BOOSTER_OPERATOR_CA");
  EXPECT_EQ(o->tuning_json,
            "{\"cpu\":{\"placement\":\"pinned\",\"numa\":\"align\"},\"runtime\":{\"preload\":{"
            "\"listenBacklog\":4096}}}");
  // The tuning's placement becomes the directive applied once the app is up.
  ASSERT_TRUE(c.initial_directive.has_value());
  EXPECT_EQ(c.initial_directive->placement, PlacementMode::kPinned);
  EXPECT_EQ(c.initial_directive->numa, NumaMode::kAlign);
  EXPECT_EQ(c.initial_directive->arm, "canary");
  EXPECT_EQ(c.target_cpu_limit_millis, 500);
  EXPECT_EQ(c.target_memory_limit_bytes, 67108864);
  EXPECT_EQ(o->report_file, "-");
  EXPECT_FALSE(o->report_file_set);

  std::string line = DescribeRunOptions(*o);
  for (const char* part :
       {"pod=shop/web-7d9f-abcde", "uid=0b6f7c1e-uid", "node=node-a", "profile=shop/web-latency",
        "arm=canary", "mode=tune", "template-hash=9f2c1a", "window=30s", "metrics-address=:9901",
        "app-metrics=[port=8080 path=/metrics latencyHistogram=auto requestCounter=auto "
        "errorLabel=code errorMatch=5..]",
        "targets=pod-peers(web,worker)", "control=/booster/control", "tuning=90 bytes",
        "placement=pinned numa=align", "target-limits=500m/67108864", " reports=operator ",
        " directives=operator ", " operator-ca=BOOSTER_OPERATOR_CA "}) {
    EXPECT_THAT(line, HasSubstr(part));
  }
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(RunConfigTest, NothingSetGivesDefaults) {
  // Empty variables count as unset (a template may carry `value: ""`).
  absl::StatusOr<RunOptions> o =
      From({}, {{"BOOSTER_WINDOW", ""}, {"BOOSTER_ARM", " "}, {"BOOSTER_APP_METRICS", ""}});
  ASSERT_TRUE(o.ok()) << o.status();
  const AgentConfig& c = o->agent;
  EXPECT_EQ(c.identity.pod_name, "host-1");
  EXPECT_EQ(c.identity.pod_namespace, "");
  EXPECT_EQ(c.identity.arm, "baseline");
  EXPECT_EQ(c.identity.mode, "observe");
  EXPECT_EQ(c.identity.profile, "");
  EXPECT_EQ(c.window, absl::Seconds(10));
  EXPECT_EQ(c.tick, absl::Seconds(1));
  EXPECT_EQ(o->metrics_address, "");
  EXPECT_EQ(c.app_metrics.port, 0);
  EXPECT_EQ(c.app_metrics.path, "/metrics");
  EXPECT_EQ(c.control_path, "/booster/control");
  EXPECT_TRUE(c.selector.containers.empty());
  EXPECT_TRUE(c.discover_app_port);
  EXPECT_FALSE(c.initial_directive.has_value());
  EXPECT_FALSE(c.target_cpu_limit_millis.has_value());
  EXPECT_THAT(DescribeRunOptions(*o), HasSubstr("targets=pod-peers(all containers)"));
}

TEST(RunConfigTest, FlagsWinOverVariables) {
  Flags flags = {{"pod-namespace", "ns2"},
                 {"pod", "p2"},
                 {"pod-uid", "u2"},
                 {"node", "n2"},
                 {"profile", "ns2/prof2"},
                 {"arm", "baseline"},
                 {"mode", "observe"},
                 {"template-hash", "h2"},
                 {"window", "2.5"},
                 {"metrics-address", "127.0.0.1:0"},
                 {"app-metrics", "{\"port\": 9090}"},
                 {"containers", "api"},
                 {"control-file", "/tmp/ctl"},
                 {"operator", "op:1"},
                 {"token-file", "/t"}};
  absl::StatusOr<RunOptions> o = From(flags, PodEnv());
  ASSERT_TRUE(o.ok()) << o.status();
  const AgentConfig& c = o->agent;
  EXPECT_EQ(c.identity.pod_namespace, "ns2");
  EXPECT_EQ(c.identity.pod_name, "p2");
  EXPECT_EQ(c.identity.pod_uid, "u2");
  EXPECT_EQ(c.identity.node_name, "n2");
  EXPECT_EQ(c.identity.profile, "ns2/prof2");
  EXPECT_EQ(c.identity.arm, "baseline");
  EXPECT_EQ(c.identity.mode, "observe");
  EXPECT_EQ(c.identity.template_hash, "h2");
  EXPECT_EQ(c.window, absl::Milliseconds(2500));
  EXPECT_EQ(o->metrics_address, "127.0.0.1:0");
  EXPECT_EQ(c.app_metrics.port, 9090);
  EXPECT_EQ(c.app_metrics.error_label, "");  // the flag's object replaces the variable's
  EXPECT_THAT(c.selector.containers, ElementsAre("api"));
  EXPECT_EQ(c.control_path, "/tmp/ctl");
  EXPECT_EQ(o->operator_address, "op:1");
  EXPECT_EQ(o->token_file, "/t");

  // --app-metrics-url wins over the port and path of either.
  o = From({{"app-metrics-url", "http://127.0.0.1:7/m"}}, PodEnv());
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->agent.app_metrics.url, "http://127.0.0.1:7/m");
  EXPECT_THAT(DescribeRunOptions(*o), HasSubstr("app-metrics=[http://127.0.0.1:7/m "));
}

TEST(RunConfigTest, AnExplicitSelectorScrapesOnlyWhatItIsTold) {
  absl::StatusOr<RunOptions> o = From({{"target-cgroup", "ctr-1"}}, {});
  ASSERT_TRUE(o.ok());
  EXPECT_FALSE(o->agent.selector.pod_peers);
  EXPECT_FALSE(o->agent.discover_app_port);
  EXPECT_THAT(DescribeRunOptions(*o), HasSubstr("app-metrics=[not scraped: no port and no url]"));
  o = From({{"target-pid", "12,15"}}, {});
  ASSERT_TRUE(o.ok());
  EXPECT_THAT(o->agent.selector.pids, ElementsAre(12, 15));
}

TEST(RunConfigTest, BadValuesNameTheirSource) {
  struct Case {
    Flags flags;
    Env env;
    const char* message;  // the start of the error
  } cases[] = {
      {{}, {{"BOOSTER_WINDOW", "abc"}}, "BOOSTER_WINDOW=\"abc\": not a duration"},
      {{}, {{"BOOSTER_WINDOW", "0s"}}, "BOOSTER_WINDOW=\"0s\": must be a positive"},
      {{}, {{"BOOSTER_WINDOW", "-30s"}}, "BOOSTER_WINDOW=\"-30s\": must be a positive"},
      {{{"window", "abc"}}, {{"BOOSTER_WINDOW", "30s"}}, "--window=\"abc\": not a duration"},
      {{{"tick", "0"}}, {}, "--tick=\"0\": must be a positive"},
      {{}, {{"BOOSTER_ARM", "blue"}}, "BOOSTER_ARM=\"blue\": the arm must be baseline, canary"},
      {{}, {{"BOOSTER_AGENT_MODE", "apply"}}, "BOOSTER_AGENT_MODE=\"apply\": the mode must be"},
      {{}, {{"BOOSTER_PROFILE", "web"}}, "BOOSTER_PROFILE=\"web\": the profile must be"},
      {{}, {{"BOOSTER_PROFILE", "/web"}}, "BOOSTER_PROFILE=\"/web\": the profile must be"},
      {{}, {{"BOOSTER_METRICS_ADDRESS", "9901"}}, "BOOSTER_METRICS_ADDRESS=\"9901\": needs"},
      {{}, {{"BOOSTER_METRICS_ADDRESS", ":99999"}}, "BOOSTER_METRICS_ADDRESS=\":99999\": needs"},
      {{}, {{"BOOSTER_APP_METRICS", "{bad"}}, "BOOSTER_APP_METRICS=\"{bad\": not a JSON object"},
      {{}, {{"BOOSTER_APP_METRICS", "{\"port\": 0}"}}, "BOOSTER_APP_METRICS=\"{\"port\": 0}\": "},
      {{}, {{"BOOSTER_CONTAINERS", "web,Worker"}}, "BOOSTER_CONTAINERS=\"web,Worker\": \"Worker\""},
      {{{"app-metrics-url", "https://x/"}}, {}, "--app-metrics-url=\"https://x/\""},
      {{{"target-pid", "x"}}, {}, "--target-pid=\"x\""},
      {{{"windwo", "30s"}}, {}, "run: unknown flag --windwo"},
      {{}, {{"BOOSTER_TUNING", "{bad"}}, "BOOSTER_TUNING: not the operator's tuning JSON"},
      {{}, {{"BOOSTER_TUNING", R"({"cpu": {"placement": "tight"}})"}}, "BOOSTER_TUNING: not the"},
      {{}, {{"BOOSTER_TARGET_CPU_LIMIT", "0.5"}}, "BOOSTER_TARGET_CPU_LIMIT=\"0.5\": needs the"},
      {{}, {{"BOOSTER_TARGET_MEMORY_LIMIT", "64Mi"}}, "BOOSTER_TARGET_MEMORY_LIMIT=\"64Mi\""},
      {{{"target-cpu-limit", "0"}}, {}, "--target-cpu-limit=\"0\""},
  };
  for (const Case& c : cases) {
    absl::StatusOr<RunOptions> o = From(c.flags, c.env);
    ASSERT_FALSE(o.ok()) << c.message;
    EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(o.status().message()), StartsWith(c.message));
  }
  absl::StatusOr<RunOptions> no_dir = RunOptionsFrom({}, Lookup({}), "h");
  EXPECT_THAT(std::string(no_dir.status().message()), HasSubstr("--state-dir"));
}

TEST(RunConfigTest, StreamingToTheOperatorNeedsItsCaAndAToken) {
  // --operator-ca-file wins over BOOSTER_OPERATOR_CA; an explicit --report-file is kept.
  absl::StatusOr<RunOptions> o = From(
      {{"operator-ca-file", "/etc/booster/ca.pem"}, {"report-file", "/tmp/r.jsonl"}}, PodEnv());
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->operator_ca_file, "/etc/booster/ca.pem");
  EXPECT_EQ(o->operator_ca_pem, "");
  EXPECT_EQ(o->operator_ca_source, "--operator-ca-file=\"/etc/booster/ca.pem\"");
  EXPECT_TRUE(o->report_file_set);
  EXPECT_THAT(DescribeRunOptions(*o), HasSubstr(" reports=operator+/tmp/r.jsonl "));
  EXPECT_THAT(DescribeRunOptions(*o), HasSubstr(" operator-ca=/etc/booster/ca.pem "));

  // Without an operator the CA and token are not needed, and nothing streams.
  Env no_operator = PodEnv();
  no_operator.erase("BOOSTER_OPERATOR");
  no_operator.erase("BOOSTER_OPERATOR_CA");
  no_operator.erase("BOOSTER_TOKEN_FILE");
  o = From({{"directive-file", "/d"}}, no_operator);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->operator_address, "");
  EXPECT_THAT(DescribeRunOptions(*o), HasSubstr(" reports=- directives=/d operator=- "));
  // --operator= turns off what the environment asks for.
  o = From({{"operator", ""}}, PodEnv());
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->operator_address, "");

  Env no_ca = PodEnv();
  no_ca.erase("BOOSTER_OPERATOR_CA");
  Env no_token = PodEnv();
  no_token.erase("BOOSTER_TOKEN_FILE");
  Env path_as_ca = PodEnv();
  path_as_ca["BOOSTER_OPERATOR_CA"] = "/etc/booster/ca.pem";
  struct Case {
    Flags flags;
    Env env;
    const char* starts;
    const char* names;  // what the message must tell the user to set
  } cases[] = {
      {{},
       no_ca,
       "BOOSTER_OPERATOR=\"booster-operator.booster-system.svc:9443\": streaming",
       "set BOOSTER_OPERATOR_CA to the CA's PEM text, or give --operator-ca-file=PATH"},
      {{{"operator", "127.0.0.1:9443"}},
       no_ca,
       "--operator=\"127.0.0.1:9443\": streaming",
       "BOOSTER_OPERATOR_CA"},
      {{},
       no_token,
       "BOOSTER_OPERATOR=\"booster-operator.booster-system.svc:9443\": streaming",
       "set BOOSTER_TOKEN_FILE or give --token-file=PATH"},
      {{}, path_as_ca, "BOOSTER_OPERATOR_CA: not PEM text", "--operator-ca-file=PATH"},
      {{{"operator-ca-file", ""}}, PodEnv(), "--operator-ca-file=\"\": needs the path", ""},
      {{{"operator", "booster-operator"}},
       PodEnv(),
       "--operator=\"booster-operator\": needs "
       "host:port",
       ""},
      {{{"operator", "op:0"}}, PodEnv(), "--operator=\"op:0\": needs host:port", ""},
      {{}, {{"BOOSTER_OPERATOR", ":9443"}}, "BOOSTER_OPERATOR=\":9443\": needs host:port", ""},
      {{{"directive-file", "/d"}},
       PodEnv(),
       "--directive-file=\"/d\": directives come from",
       "BOOSTER_OPERATOR is set"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<RunOptions> bad = From(c.flags, c.env);
    ASSERT_FALSE(bad.ok()) << c.starts;
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(bad.status().message()), StartsWith(c.starts));
    EXPECT_THAT(std::string(bad.status().message()), HasSubstr(c.names));
  }
}

TEST(RunConfigTest, WindowDurations) {
  EXPECT_EQ(*ParseWindowDuration("30s"), absl::Seconds(30));
  EXPECT_EQ(*ParseWindowDuration("1m30s"), absl::Seconds(90));
  EXPECT_EQ(*ParseWindowDuration("500ms"), absl::Milliseconds(500));
  EXPECT_EQ(*ParseWindowDuration("2h"), absl::Hours(2));
  EXPECT_EQ(*ParseWindowDuration("15"), absl::Seconds(15));
  EXPECT_EQ(*ParseWindowDuration("0.5"), absl::Milliseconds(500));
  for (const char* bad : {"", "abc", "0", "0s", "-1s", "inf", "nan", "30 s", "30x"}) {
    EXPECT_FALSE(ParseWindowDuration(bad).ok()) << bad;
  }
}

// The real binary: a bad variable is exit 2 with the variable named; the effective
// configuration is one line on stderr, and flags win there too.
class RunCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin = std::getenv("BOOSTER_AGENT_BIN");
    ASSERT_NE(bin, nullptr) << "BOOSTER_AGENT_BIN not set";
    bin_ = bin;
    char tmpl[] = "/tmp/booster-runcfg-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override {
    if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
  }
  // Runs `env VARS bin run ARGS`, returns the exit code and stderr.
  int Run(const std::string& vars, const std::string& args, std::string* err) {
    std::string cmd =
        absl::StrCat("env -u BOOSTER_WINDOW -u BOOSTER_ARM ", vars, " ", bin_,
                     " run --state-dir=", dir_, " ", args, " 2>", dir_, "/stderr >/dev/null");
    int status = std::system(cmd.c_str());
    FILE* f = std::fopen((dir_ + "/stderr").c_str(), "r");
    err->clear();
    if (f != nullptr) {
      char buf[4096];
      size_t n;
      while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) err->append(buf, n);
      std::fclose(f);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::string bin_;
  std::string dir_;
};

TEST_F(RunCommandTest, BadVariableExitsTwoNamingIt) {
  std::string err;
  EXPECT_EQ(Run("BOOSTER_WINDOW=abc", "", &err), 2);
  EXPECT_THAT(err, HasSubstr("BOOSTER_WINDOW=\"abc\": not a duration"));
  EXPECT_EQ(Run("BOOSTER_ARM=blue", "", &err), 2);
  EXPECT_THAT(err, HasSubstr("BOOSTER_ARM=\"blue\""));
}

TEST_F(RunCommandTest, LogsTheEffectiveConfigurationOnce) {
  std::string err;
  int code =
      Run("BOOSTER_WINDOW=5s BOOSTER_ARM=canary POD_NAMESPACE=shop POD_NAME=web-1",
          absl::StrCat("--window=2s --max-ticks=1 --tick=0.01 --target-pid=", getpid()), &err);
  EXPECT_EQ(code, 0) << err;
  size_t at = err.find("booster-agent: run pod=shop/web-1 ");
  ASSERT_NE(at, std::string::npos) << err;
  EXPECT_EQ(err.find("booster-agent: run ", at + 1), std::string::npos);  // once
  std::string line = err.substr(at, err.find('\n', at) - at);
  EXPECT_THAT(line, HasSubstr(" window=2s "));  // the flag, not BOOSTER_WINDOW
  EXPECT_THAT(line, HasSubstr(" arm=canary "));
  EXPECT_THAT(line, testing::ContainsRegex(" incarnation=[0-9a-f]{32} "));
}

TEST_F(RunCommandTest, OperatorWithoutAUsableCaExitsTwoNamingWhatToSet) {
  std::string err;
  const std::string op =
      "env -u BOOSTER_OPERATOR_CA BOOSTER_OPERATOR=127.0.0.1:9 "
      "BOOSTER_TOKEN_FILE=/nonexistent/token";
  EXPECT_EQ(Run(op, "", &err), 2);
  EXPECT_THAT(err, HasSubstr("BOOSTER_OPERATOR=\"127.0.0.1:9\": streaming to the operator needs "
                             "the CA"));
  EXPECT_EQ(Run(op, "--operator-ca-file=" + dir_ + "/missing.pem", &err), 2);
  EXPECT_THAT(err, HasSubstr("--operator-ca-file=\"" + dir_ + "/missing.pem\": cannot read it"));
  std::FILE* f = std::fopen((dir_ + "/not-a-cert.pem").c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n", f);
  std::fclose(f);
  EXPECT_EQ(Run(op, "--operator-ca-file=" + dir_ + "/not-a-cert.pem", &err), 2);
  EXPECT_THAT(err, HasSubstr("--operator-ca-file=\"" + dir_ +
                             "/not-a-cert.pem\": feedback client: the operator's CA holds no PEM "
                             "certificate"));
}

}  // namespace
}  // namespace booster::agent
