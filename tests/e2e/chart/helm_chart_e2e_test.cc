// The Helm chart (charts/booster) on the real cluster: `helm install` with the operator
// image built from this tree; the operator pods become Ready under the chart's RBAC and
// security context, one of them holds the Lease, a BoosterProfile goes to Promoted (which
// exercises every permission the rollout needs), the standby takes over when the leader
// pod is deleted, a real Prometheus scraping the leader answers every query of the
// operator's Grafana dashboard, and `helm uninstall` leaves no cluster-scoped object behind.
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/e2e_util.h"
#include "tests/e2e/rollout/rollout_e2e_util.h"

namespace booster::e2e {
namespace {

using ::testing::HasSubstr;

constexpr char kOperatorImage[] = "booster.local/operator:e2e";

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

absl::StatusOr<std::string> Helm(std::vector<std::string> args) {
  args.insert(args.begin(), Env("BOOSTER_HELM"));
  return RunCommand(args);
}

extern "C" char** environ;

// A free TCP port on 127.0.0.1 (bound once to port 0, then released).
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  close(fd);
  return ntohs(a.sin_port);
}

// Debian's Prometheus as a host process scraping `target` (HOST:PORT) every second, with
// its data in a temporary directory; stopped and removed when destroyed.
class Prometheus {
 public:
  explicit Prometheus(const std::string& target) {
    char tmpl[] = "/tmp/booster-prom-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return;
    dir_ = tmpl;
    port_ = FreePort();
    std::ofstream(dir_ + "/prometheus.yml")
        << "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        << "scrape_configs:\n"
        << "  - job_name: booster-operator\n"
        << "    static_configs: [{targets: ['" << target << "']}]\n";
    std::vector<std::string> args = {
        "prometheus", "--config.file=" + dir_ + "/prometheus.yml",
        "--storage.tsdb.path=" + dir_ + "/data",
        absl::StrCat("--web.listen-address=127.0.0.1:", port_), "--log.level=warn"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, (dir_ + "/log").c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    if (posix_spawnp(&pid_, "prometheus", &fa, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
  }
  ~Prometheus() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  Prometheus(const Prometheus&) = delete;
  Prometheus& operator=(const Prometheus&) = delete;

  bool started() const { return pid_ > 0 && port_ > 0; }
  std::string Log() const {
    absl::StatusOr<std::string> log = ReadFile(dir_ + "/log");
    return log.ok() ? *log : log.status().ToString();
  }

  // The instant-query result vector of `expr` (the API's data.result).
  absl::StatusOr<Json> Query(const std::string& expr) const {
    absl::StatusOr<std::string> out =
        RunCommand({"curl", "-sf", "--get", "--data-urlencode", "query=" + expr,
                    absl::StrCat("http://127.0.0.1:", port_, "/api/v1/query")});
    if (!out.ok()) return absl::UnavailableError(out.status().ToString());
    Json j = Json::parse(*out, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || j.value("status", "") != "success") {
      return absl::InternalError(absl::StrCat("query ", expr, " answered ", *out));
    }
    return j["data"]["result"];
  }

 private:
  std::string dir_;
  int port_ = -1;
  pid_t pid_ = -1;
};

class HelmChartE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(Env("BOOSTER_HELM").empty()) << "BOOSTER_HELM is not set";
    ASSERT_TRUE(BuildImages().ok());
    absl::StatusOr<std::string> built =
        RunCommand({ClusterDir() + "/image", kOperatorImage, Env("BOOSTER_OPERATOR_BIN")});
    ASSERT_TRUE(built.ok()) << built.status();
    ASSERT_TRUE(system_ns_.status().ok()) << system_ns_.status();
    ASSERT_TRUE(app_ns_.status().ok()) << app_ns_.status();
    // A release name of its own, so nothing of this test collides with a user's install.
    absl::StatusOr<std::string> out = Helm(
        {"install", release_, Env("BOOSTER_CHART"), "--namespace", system_ns_.name(),
         "--set", "operator.image.repository=booster.local/operator",
         "--set", "operator.image.tag=e2e", "--set", "operator.image.pullPolicy=Never",
         "--set", "agent.image.repository=booster.local/agent",
         "--set", "agent.image.tag=e2e", "--set", "agent.image.pullPolicy=Never",
         "--set", "operator.logFormat=text", "--wait", "--timeout", "3m"});
    installed_ = out.ok();
    ASSERT_TRUE(out.ok()) << out.status() << "\n" << Diagnose(system_ns_.name());
  }

  void TearDown() override {
    if (HasFailure()) {
      std::cerr << Diagnose(system_ns_.name()) << Diagnose(app_ns_.name());
      absl::StatusOr<std::string> logs = Kubectl(
          {"-n", system_ns_.name(), "logs", "-l", "app.kubernetes.io/component=operator",
           "--tail=200", "--prefix"});
      std::cerr << (logs.ok() ? *logs : logs.status().ToString());
    }
    // Never leave a profile whose finalizer no operator will remove: its namespace could
    // not go away.
    (void)Kubectl({"-n", app_ns_.name(), "delete", "bp", "--all", "--timeout=60s"});
    (void)Kubectl({"-n", app_ns_.name(), "patch", "bp", "web", "--type=merge", "-p",
                   R"({"metadata":{"finalizers":null}})"});
    if (installed_) (void)Helm({"uninstall", release_, "--namespace", system_ns_.name()});
  }

  std::string Deployment() const { return release_ + "-booster-operator"; }

  absl::StatusOr<std::string> LeaseHolder() {
    return Kubectl({"-n", system_ns_.name(), "get", "lease", "booster-operator", "-o",
                    "jsonpath={.spec.holderIdentity}"});
  }

  absl::StatusOr<std::vector<std::string>> OperatorPods() {
    absl::StatusOr<std::string> names = Kubectl(
        {"-n", system_ns_.name(), "get", "pods", "-l", "app.kubernetes.io/component=operator",
         "--field-selector=status.phase=Running", "-o", "jsonpath={.items[*].metadata.name}"});
    if (!names.ok()) return names.status();
    return std::vector<std::string>(absl::StrSplit(*names, ' ', absl::SkipEmpty()));
  }

  // Waits until a Running operator pod other than `not` holds the Lease; returns it.
  absl::StatusOr<std::string> WaitLeader(const std::string& not_this, absl::Duration timeout) {
    std::string leader;
    absl::Status s = WaitFor(
        [&]() -> absl::StatusOr<bool> {
          absl::StatusOr<std::string> holder = LeaseHolder();
          absl::StatusOr<std::vector<std::string>> pods = OperatorPods();
          if (!holder.ok() || !pods.ok()) return absl::UnavailableError("no lease yet");
          for (const std::string& p : *pods) {
            if (p == *holder && p != not_this) {
              leader = p;
              return true;
            }
          }
          return absl::UnavailableError(absl::StrCat("holder '", *holder, "'"));
        },
        timeout);
    if (!s.ok()) return s;
    return leader;
  }

  std::string release_ = "chart-e2e";
  TestNamespace system_ns_{"booster-chart"};
  TestNamespace app_ns_{"chart-app"};
  bool installed_ = false;
};

TEST_F(HelmChartE2eTest, InstalledOperatorLeadsPromotesAProfileAndFailsOver) {
  // Both replicas Ready (their /readyz passed) and one of them leads.
  absl::StatusOr<std::string> ready = Kubectl(
      {"-n", system_ns_.name(), "get", "deploy", Deployment(), "-o",
       "jsonpath={.status.readyReplicas}"});
  ASSERT_TRUE(ready.ok()) << ready.status();
  EXPECT_EQ(*ready, "2");
  absl::StatusOr<std::string> leader = WaitLeader("", absl::Seconds(60));
  ASSERT_TRUE(leader.ok()) << leader.status();

  // The leader serves the agents' feedback stream on 9443 with the certificate the chart
  // made: a TLS handshake that checks it against the chart's CA and the Service's DNS
  // name succeeds.
  {
    absl::StatusOr<std::string> ca = Kubectl(
        {"-n", system_ns_.name(), "get", "secret", Deployment() + "-feedback-tls", "-o",
         "jsonpath={.data.ca\\.crt}"});
    ASSERT_TRUE(ca.ok()) << ca.status();
    const std::string ca_file = ::testing::TempDir() + "/feedback-ca.b64";
    { std::ofstream(ca_file) << *ca; }
    absl::StatusOr<std::string> ip = Kubectl(
        {"-n", system_ns_.name(), "get", "pod", *leader, "-o", "jsonpath={.status.podIP}"});
    ASSERT_TRUE(ip.ok()) << ip.status();
    const std::string service_dns =
        absl::StrCat(Deployment(), ".", system_ns_.name(), ".svc");
    absl::Status handshake = WaitFor(
        [&]() -> absl::StatusOr<bool> {
          absl::StatusOr<std::string> out = RunCommand(
              {"bash", "-c",
               absl::StrCat("base64 -d ", ca_file, " > ", ca_file, ".pem && openssl s_client ",
                            "-connect ", *ip, ":9443 -CAfile ", ca_file, ".pem -verify_hostname ",
                            service_dns, " -verify_return_error </dev/null 2>&1")});
          if (!out.ok()) return absl::UnavailableError(out.status().message());
          if (out->find("Verify return code: 0 (ok)") == std::string::npos) {
            return absl::UnavailableError(*out);
          }
          return true;
        },
        absl::Seconds(60), absl::Seconds(2));
    EXPECT_TRUE(handshake.ok()) << handshake;
  }

  // A profile over a real Deployment is rolled out by the in-cluster operator: this needs
  // every permission of the chart's ClusterRole (profiles and their status and finalizer,
  // Deployments incl. create/delete of the canary, ReplicaSets, pods, HPAs, Events).
  const std::string& ns = app_ns_.name();
  ASSERT_TRUE(ApplyJson(DeploymentObject(ns, "web", 2, HttpServerTemplate("web"))).ok());
  ASSERT_TRUE(WaitRolledOut(ns, "web", absl::Minutes(3)).ok()) << Diagnose(ns);
  ASSERT_TRUE(Apply(absl::StrCat(R"(
apiVersion: booster.dev/v1alpha1
kind: BoosterProfile
metadata: {name: web, namespace: )", ns, R"(}
spec:
  targetRef: {kind: Deployment, name: web}
  tuning:
    runtime:
      go: {gomaxprocs: auto}
      preload: {listenBacklog: 1024, tcpNoDelay: true}
  rollout:
    steps: [50, 100]
    stepDuration: 5s
    progressDeadline: 3m
    analysis: {interval: 1s}
)")).ok());
  absl::Status promoted = WaitFor(
      [&]() -> absl::StatusOr<bool> {
        absl::StatusOr<std::string> phase =
            Kubectl({"-n", ns, "get", "bp", "web", "-o", "jsonpath={.status.phase}"});
        if (!phase.ok()) return phase.status();
        if (*phase == "Failed" || *phase == "RolledBack") {
          return absl::FailedPreconditionError("profile ended " + *phase);
        }
        if (*phase != "Promoted") return absl::UnavailableError("phase " + *phase);
        return true;
      },
      absl::Minutes(6), absl::Seconds(1));
  ASSERT_TRUE(promoted.ok()) << promoted;
  absl::StatusOr<std::string> env = Kubectl(
      {"-n", ns, "get", "deploy", "web", "-o",
       "jsonpath={.spec.template.spec.containers[?(@.name==\"web\")].env}"});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_THAT(*env, HasSubstr("GOMAXPROCS"));

  // A real Prometheus scrapes the leader: every query of the operator dashboard the chart
  // ships (charts/booster/dashboards/operator.json) returns series.
  {
    absl::StatusOr<std::string> ip = Kubectl(
        {"-n", system_ns_.name(), "get", "pod", *leader, "-o", "jsonpath={.status.podIP}"});
    ASSERT_TRUE(ip.ok()) << ip.status();
    Prometheus prom(*ip + ":8080");
    ASSERT_TRUE(prom.started()) << prom.Log();
    absl::StatusOr<std::string> text =
        ReadFile(Env("BOOSTER_CHART") + "/dashboards/operator.json");
    ASSERT_TRUE(text.ok()) << text.status();
    Json board = Json::parse(*text);
    std::vector<std::string> exprs;
    for (const Json& panel : board["panels"]) {
      for (const Json& t : panel["targets"]) {
        exprs.push_back(absl::StrReplaceAll(t["expr"].get<std::string>(),
                                            {{"$namespace", ".*"}}));
      }
    }
    ASSERT_GE(exprs.size(), 6u);
    std::string missing;
    absl::Status answered = WaitFor(
        [&]() -> absl::StatusOr<bool> {
          missing.clear();
          for (const std::string& e : exprs) {
            absl::StatusOr<Json> r = prom.Query(e);
            if (!r.ok() && !absl::IsUnavailable(r.status())) return r.status();
            if (!r.ok() || r->empty()) absl::StrAppend(&missing, "\n  ", e);
          }
          if (!missing.empty()) return absl::UnavailableError("no series yet for:" + missing);
          return true;
        },
        absl::Seconds(60), absl::Seconds(2));
    ASSERT_TRUE(answered.ok()) << answered << "\n" << prom.Log();
    absl::StatusOr<Json> promoted_series =
        prom.Query("booster_operator_profile_phase{phase=\"Promoted\", profile=\"web\"}");
    ASSERT_TRUE(promoted_series.ok()) << promoted_series.status();
    ASSERT_EQ(promoted_series->size(), 1u) << promoted_series->dump();
    EXPECT_EQ((*promoted_series)[0]["value"][1], "1");
  }

  // The leader's pod goes away: the standby takes the Lease (15 s lease + 2 s retry).
  ASSERT_TRUE(Kubectl({"-n", system_ns_.name(), "delete", "pod", *leader, "--grace-period=0",
                       "--force", "--wait=false"})
                  .ok());
  absl::StatusOr<std::string> next = WaitLeader(*leader, absl::Seconds(45));
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_NE(*next, *leader);

  // The new leader serves the profile: deleting it unenrolls the target (original
  // template back, no Booster annotation) and removes the finalizer.
  ASSERT_TRUE(Kubectl({"-n", ns, "delete", "bp", "web", "--timeout=90s"}).ok())
      << Diagnose(ns);
  absl::StatusOr<std::string> annotations = Kubectl(
      {"-n", ns, "get", "deploy", "web", "-o", "jsonpath={.metadata.annotations}"});
  ASSERT_TRUE(annotations.ok()) << annotations.status();
  EXPECT_THAT(*annotations, ::testing::Not(HasSubstr("booster.dev/")));

  // Uninstall leaves no cluster-scoped object of the release (the CRD stays, by design).
  ASSERT_TRUE(Helm({"uninstall", release_, "--namespace", system_ns_.name(), "--wait"}).ok());
  installed_ = false;
  absl::StatusOr<std::string> roles = Kubectl(
      {"get", "clusterroles,clusterrolebindings", "-l",
       "app.kubernetes.io/instance=" + release_, "-o", "name"});
  ASSERT_TRUE(roles.ok()) << roles.status();
  EXPECT_EQ(*roles, "");
  EXPECT_TRUE(Kubectl({"get", "crd", "boosterprofiles.booster.dev"}).ok());
}

}  // namespace
}  // namespace booster::e2e
