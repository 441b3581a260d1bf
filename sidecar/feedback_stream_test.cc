// `booster-agent run` — the real binary — streaming to the operator's real FeedbackServer
// (operator/feedback) running in this test process on 127.0.0.1, over TLS with a CA made
// by openssl at test time, a fake TokenReview and a fake enrolled pod. The agent watches a
// real HTTP application (sidecar/testdata/metrics_server.py) and scrapes its metrics.
// Checks what a user of the stream relies on: the windows the operator stores are the
// agent's, value for value (a measured 0 stays 0, a missing metric stays absent); Hello
// carries the pod and topology; a directive is applied and answered with Applied, one the
// agent cannot apply live is refused with the reason; the shutdown revert reaches the
// operator before the agent exits; the agent's /metrics shows the stream; and with a CA
// the operator's certificate does not chain to, nothing — not even the token — is sent.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "operator/feedback/server.h"
#include "operator/feedback/test_pki.h"
#include "operator/feedback/window_store.h"
#include "sidecar/feedback/client/test_operator.h"
#include "sidecar/sample/http_get.h"
#include "sidecar/testing/test_app_server.h"

namespace booster::agent {
namespace {

namespace fs = std::filesystem;
using feedback::Arm;
using feedback::KnobOutcome;
using test_operator::Eventually;
using ::testing::HasSubstr;

constexpr char kServiceName[] = "booster-operator.booster-system.svc";
constexpr char kProfile[] = "shop/web-boost";
const feedback::StepId kStep{
    .generation = 1, .step = 1, .started = absl::FromUnixSeconds(1'700'000'000)};

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The agent binary as a child process, stdout and stderr to files of `dir`.
class AgentProcess {
 public:
  AgentProcess(fs::path dir, std::vector<std::string> args, std::vector<std::string> env)
      : dir_(std::move(dir)) {
    const char* bin = std::getenv("BOOSTER_AGENT_BIN");
    if (bin == nullptr) return;
    args.insert(args.begin(), {bin, "run"});
    env.push_back("PATH=/usr/sbin:/usr/bin:/sbin:/bin");
    // Everything the child needs is made before fork: the test process has gRPC threads,
    // and the child may only make async-signal-safe calls until it execs.
    std::vector<char*> argv, envp;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    const std::string out_path = (dir_ / "stdout").string();
    const std::string err_path = (dir_ / "stderr").string();
    pid_ = fork();
    if (pid_ == 0) {
      int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(out, STDOUT_FILENO);
      dup2(err, STDERR_FILENO);
      execve(argv[0], argv.data(), envp.data());  // only the variables given
      _exit(127);
    }
  }
  ~AgentProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  bool started() const { return pid_ > 0; }
  std::string err() const { return Slurp(dir_ / "stderr"); }
  std::string out() const { return Slurp(dir_ / "stdout"); }

  // The port of its /metrics, from its log line.
  int MetricsPort() const {
    int port = 0;
    Eventually([&] {
      std::string e = err();
      size_t at = e.find("/metrics and /healthz on port ");
      if (at == std::string::npos) return false;
      std::string rest = e.substr(at + 30);
      return absl::SimpleAtoi(rest.substr(0, rest.find('\n')), &port);
    });
    return port;
  }
  std::string Metrics() const {
    absl::StatusOr<std::string> body =
        HttpGet(absl::StrCat("http://127.0.0.1:", MetricsPort(), "/metrics"), absl::Seconds(5));
    return body.ok() ? *body : "";
  }

  // SIGTERM, then its exit status (-1 if it did not exit normally).
  int Terminate() {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  fs::path dir_;
  pid_t pid_ = -1;
};

// The value of the first series of `body` that starts with `series` ("name{labels}").
double Sample(const std::string& body, const std::string& series) {
  size_t at = body.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  size_t start = at + series.size() + 2;
  double v = -1;
  if (!absl::SimpleAtod(body.substr(start, body.find('\n', start) - start), &v)) return -1;
  return v;
}

class FeedbackStreamTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<feedback::TestPki> pki = feedback::MakeTestPki(kServiceName, "agent-stream");
    if (!pki.ok()) {
      ADD_FAILURE() << pki.status();
      return;
    }
    pki_ = new feedback::TestPki(*std::move(pki));
  }
  static void TearDownTestSuite() {
    if (pki_ == nullptr) return;
    std::error_code ec;
    fs::remove_all(pki_->dir, ec);
    delete pki_;
    pki_ = nullptr;
  }

  void SetUp() override {
    ASSERT_NE(pki_, nullptr) << "no test PKI";
    ASSERT_NE(std::getenv("BOOSTER_AGENT_BIN"), nullptr);
    // Forked before the server starts its threads (the helper allocates in the child).
    ASSERT_TRUE(app_.Start(0));
    // One request before the agent starts, so the application exposes its request series;
    // none after, so every window measures throughput 0 and no latency at all.
    ASSERT_TRUE(HttpGet(app_.url("/"), absl::Seconds(5)).ok());
    dir_ = pki_->dir / ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::create_directories(dir_ / "state");
    std::ofstream(dir_ / "token") << "tok-web-1\n";
    std::ofstream(dir_ / "ca.pem") << pki_->ca_pem;
    reviewer_.Set("tok-web-1", test_operator::ReviewFor("web-1"));
    pods_.Put(test_operator::EnrolledPod("web-1", "canary", kProfile));
    store_.BeginStep(kProfile, kStep, {"h-baseline", "h-canary"});
    absl::StatusOr<std::unique_ptr<feedback::FeedbackServer>> s =
        test_operator::StartTestServer(*pki_, 0, &reviewer_, &pods_, &store_);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
  }

  // The flags of the pod's agent against this operator and application.
  std::vector<std::string> Args() const {
    return {"--state-dir=" + (dir_ / "state").string(),
            absl::StrCat("--target-pid=", app_.pid()),
            absl::StrCat("--app-metrics-url=http://127.0.0.1:", app_.app_port(), "/metrics"),
            "--tick=0.05",
            "--window=0.25",
            "--metrics-address=127.0.0.1:0",
            absl::StrCat("--operator=127.0.0.1:", server_->port()),
            "--token-file=" + (dir_ / "token").string()};
  }
  // The injected environment's identity.
  std::vector<std::string> PodEnv() const {
    return {"POD_NAMESPACE=shop",
            "POD_NAME=web-1",
            "POD_UID=web-1-uid",
            "BOOSTER_ARM=canary",
            "BOOSTER_PROFILE=shop/web-boost",
            "BOOSTER_TEMPLATE_HASH=h-canary"};
  }

  // Sends an apply of `setting` as `generation` and waits for the Applied that answers it
  // (after the one for the revert before it); nullopt when none came.
  std::optional<feedback::AppliedReport> Apply(int64_t generation,
                                               std::pair<std::string, std::string> setting) {
    feedback::DirectiveSpec d{.generation = generation,
                              .action = feedback::DirectiveAction::kApply,
                              .settings = {std::move(setting)}};
    if (!server_->SendDirective("shop", "web-1", d).ok()) return std::nullopt;
    std::optional<feedback::AppliedReport> a;
    Eventually([&] {
      a = LastApplied();
      return a.has_value() && a->generation == generation && !a->knobs.empty();
    });
    if (!a.has_value() || a->generation != generation) return std::nullopt;
    return a;
  }

  size_t Stored() const { return store_.WindowCount(kProfile, kStep, Arm::kCanary); }

  std::optional<feedback::AppliedReport> LastApplied() const {
    return server_->LastApplied("shop", "web-1");
  }

  static feedback::TestPki* pki_;
  fs::path dir_;
  test_operator::FakeReviewer reviewer_;
  test_operator::FakePods pods_;
  feedback::WindowStore store_;
  std::unique_ptr<feedback::FeedbackServer> server_;
  TestAppServer app_;
};

feedback::TestPki* FeedbackStreamTest::pki_ = nullptr;

// Per metric, the (value, samples) of every window that has it, in window order.
using Series = std::map<std::string, std::vector<std::pair<double, int64_t>>>;

TEST_F(FeedbackStreamTest, WindowsDirectivesAndAppliedGoThroughTheOperatorsServer) {
  // --report-file given explicitly: the JSON lines are written as well, for comparison.
  std::vector<std::string> args = Args();
  args.push_back("--operator-ca-file=" + (dir_ / "ca.pem").string());
  args.push_back("--report-file=" + (dir_ / "reports.jsonl").string());
  AgentProcess agent(dir_, args, PodEnv());
  ASSERT_TRUE(agent.started());

  ASSERT_TRUE(Eventually([&] { return Stored() >= 3; })) << agent.err();
  std::vector<feedback::ConnectedAgent> connected = server_->Connected();
  ASSERT_EQ(connected.size(), 1u);
  EXPECT_EQ(connected[0].identity.pod_name, "web-1");
  ASSERT_TRUE(connected[0].hello.has_value());
  EXPECT_EQ(connected[0].hello->claimed_pod, "web-1");
  EXPECT_EQ(connected[0].hello->claimed_uid, "web-1-uid");
  EXPECT_EQ(connected[0].hello->agent_version, "0.1.0");
  EXPECT_EQ(connected[0].hello->incarnation.size(), 32u);
  EXPECT_GT(connected[0].hello->topology.pus, 0) << "the topology found at start";
  EXPECT_GT(connected[0].hello->topology.cores, 0);
  EXPECT_FALSE(connected[0].hello->topology.cpuset.empty()) << "the application's cpuset";

  // A directive the agent can apply live: applied at its next tick, answered per knob.
  std::optional<feedback::AppliedReport> applied = Apply(1, {"placement", "true"});
  ASSERT_TRUE(applied.has_value()) << agent.err();
  ASSERT_EQ(applied->knobs.size(), 1u);
  EXPECT_EQ(applied->knobs[0].name, "placement");
  EXPECT_EQ(applied->knobs[0].outcome, KnobOutcome::kApplied) << applied->knobs[0].reason;

  // One it cannot: refused at once, nothing changed, and the reason per setting.
  applied = Apply(2, {"jvm.heap", "2g"});
  ASSERT_TRUE(applied.has_value()) << agent.err();
  ASSERT_EQ(applied->knobs.size(), 1u);
  EXPECT_EQ(applied->knobs[0].name, "jvm.heap");
  EXPECT_EQ(applied->knobs[0].outcome, KnobOutcome::kNotReachable);
  EXPECT_THAT(applied->knobs[0].reason, HasSubstr("not a setting this agent applies live"));

  // The stream's figures on the agent's own /metrics.
  ASSERT_TRUE(Eventually([&] {
    return Sample(agent.Metrics(), "booster_agent_feedback_reports_acked_total{pod=\"web-1\"}") >=
           3;
  }));
  std::string metrics = agent.Metrics();
  EXPECT_EQ(Sample(metrics, "booster_agent_feedback_connected{pod=\"web-1\"}"), 1) << metrics;
  EXPECT_GE(Sample(metrics, "booster_agent_feedback_reports_sent_total{pod=\"web-1\"}"), 3);
  EXPECT_EQ(Sample(metrics, "booster_agent_feedback_reports_dropped_total{pod=\"web-1\"}"), 0);
  EXPECT_EQ(Sample(metrics,
                   "booster_agent_feedback_rejects_total{pod=\"web-1\","
                   "reason=\"stale_template\"}"),
            0);

  // SIGTERM: the agent reverts, and its shutdown Applied (generation 1 was in force, and
  // nothing is now) reaches the operator before it exits.
  EXPECT_EQ(agent.Terminate(), 0) << agent.err();
  applied = LastApplied();
  ASSERT_TRUE(applied.has_value());
  EXPECT_EQ(applied->generation, 1);
  EXPECT_TRUE(applied->knobs.empty()) << "nothing in force after the revert";

  // Every window the agent closed is stored, value for value; a missing metric is absent.
  Series agent_side;
  size_t windows = 0;
  std::istringstream lines(Slurp(dir_ / "reports.jsonl"));
  for (std::string line; std::getline(lines, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    if (j["type"] != "report") continue;
    ++windows;
    EXPECT_EQ(j["sequence"].get<uint64_t>(), windows);
    for (const auto& [name, m] : j["metrics"].items()) {
      if (m["value"].is_null()) continue;
      agent_side[name].emplace_back(m["value"].get<double>(), m["samples"].get<int64_t>());
    }
  }
  ASSERT_GE(windows, 3u);
  EXPECT_EQ(Stored(), windows) << "every window, once";
  absl::StatusOr<feedback::StepWindows> q = store_.Query(kProfile, kStep);
  ASSERT_TRUE(q.ok()) << q.status();
  Series operator_side;
  for (const auto& [name, points] : q->arm(Arm::kCanary).metrics) {
    for (const feedback::MetricPoint& p : points) {
      EXPECT_EQ(p.pod, "web-1");
      operator_side[name].emplace_back(p.value, p.samples);
    }
  }
  ASSERT_EQ(operator_side.size(), agent_side.size());
  for (const auto& [name, values] : agent_side) {
    ASSERT_EQ(operator_side[name].size(), values.size()) << name;
    for (size_t i = 0; i < values.size(); ++i) {
      // The JSON lines carry 9 significant digits; the stream the double itself.
      EXPECT_NEAR(operator_side[name][i].first, values[i].first,
                  1e-8 * std::max(1.0, std::fabs(values[i].first)))
          << name << " window " << i;
      EXPECT_EQ(operator_side[name][i].second, values[i].second) << name << " window " << i;
    }
  }
  // No request reached the application: its latency was not measured and is absent at
  // the operator, while its throughput is a measured 0, and the kernel's figures are there.
  EXPECT_EQ(operator_side.count("latencyP99"), 0u);
  EXPECT_EQ(operator_side.count("errorRate"), 0u);
  ASSERT_EQ(operator_side.count("throughput"), 1u);
  EXPECT_EQ(operator_side["throughput"].back().first, 0);
  EXPECT_EQ(operator_side.count("runQueueDelay"), 1u);

  // The pod's log: no JSON on stdout, and not one line per window on stderr.
  EXPECT_EQ(agent.out(), "");
  std::string err = agent.err();
  EXPECT_THAT(err, HasSubstr("window reports go to the operator at 127.0.0.1:"));
  EXPECT_THAT(err, HasSubstr("applied: generation 1 (apply) ok: placement"));
  EXPECT_THAT(err, HasSubstr("directive generation 2 from the operator (apply, arm canary: "
                             "jvm.heap): refused, nothing changed"));
  EXPECT_THAT(err, HasSubstr(" reports=operator+"));
}

TEST_F(FeedbackStreamTest, ACaTheOperatorsCertificateDoesNotChainToSendsNothing) {
  // The CA in the variable, as the operator injects it — but not the one that signed the
  // operator's certificate.
  std::vector<std::string> env = PodEnv();
  env.push_back("BOOSTER_OPERATOR_CA=" + pki_->other_ca_pem);
  AgentProcess agent(dir_, Args(), env);
  ASSERT_TRUE(agent.started());

  // Windows close and are held, the stream never opens.
  ASSERT_TRUE(Eventually([&] {
    return Sample(agent.Metrics(), "booster_agent_feedback_reports_buffered{pod=\"web-1\"}") >= 2;
  })) << agent.err();
  ASSERT_TRUE(Eventually([&] { return absl::StrContains(agent.err(), "failed: UNAVAILABLE"); }))
      << agent.err();
  std::string metrics = agent.Metrics();
  EXPECT_EQ(Sample(metrics, "booster_agent_feedback_connected{pod=\"web-1\"}"), 0);
  EXPECT_EQ(Sample(metrics, "booster_agent_feedback_reports_sent_total{pod=\"web-1\"}"), 0);
  EXPECT_EQ(agent.Terminate(), 0) << agent.err();

  EXPECT_EQ(Stored(), 0u);
  EXPECT_TRUE(server_->Connected().empty());
  EXPECT_FALSE(LastApplied().has_value());
  EXPECT_TRUE(reviewer_.tokens().empty()) << "the token never reached an unverified server";
  // Streaming without --report-file: no JSON lines on stdout.
  EXPECT_EQ(agent.out(), "");
  EXPECT_THAT(agent.err(), HasSubstr(" operator-ca=BOOSTER_OPERATOR_CA "));
  EXPECT_THAT(agent.err(), HasSubstr("certificate verify failed")) << "the log says why";
}

}  // namespace
}  // namespace booster::agent
