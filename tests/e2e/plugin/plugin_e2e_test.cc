// kubectl-booster on the real cluster (issue 15): a real booster-operator (a host process
// watching the test's namespace), a Deployment `web` of 3 HTTP pods, a profile in mode
// Time, and from then on the plugin binary alone drives and reads the rollout:
//
//   - get, status, explain while it runs; pause, and the rollout holds past its
//     stepDuration; resume; promote at the last step; status -w follows it to Promoted;
//     promote again is refused;
//   - retry starts a second rollout, abort rolls it back, abort again is refused, retry
//     starts a third one;
//   - the errors a user meets: a missing profile, a user without the right to patch (a
//     ServiceAccount's token), no cluster at the kubeconfig's server;
//   - `--help` of every verb, and `kubectl booster` finding the plugin on the PATH.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/e2e_util.h"
#include "tests/e2e/rollout/rollout_e2e_util.h"

namespace booster::e2e {
namespace {

using ::testing::HasSubstr;

constexpr int kReplicas = 3;

std::string EnvOr(const char* name, const std::string& fallback = "") {
  const char* v = std::getenv(name);
  return v == nullptr ? fallback : v;
}

// What a command printed and how it exited.
struct Ran {
  int code = -1;
  std::string out;
  std::string err;
};

std::string Slurp(const std::string& path) {
  absl::StatusOr<std::string> s = ReadFile(path);
  return s.ok() ? *s : "";
}

// Runs argv with stdout and stderr kept apart (RunCommand keeps stderr only on failure).
Ran Exec(const std::vector<std::string>& argv, const std::vector<std::string>& env = {}) {
  const std::string base = absl::StrCat(::testing::TempDir(), "/plugin-e2e-", getpid());
  const std::string out_path = base + ".out", err_path = base + ".err";
  Ran r;
  pid_t pid = fork();
  if (pid == 0) {
    int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(out, 1);
    dup2(err, 2);
    for (const std::string& kv : env) putenv(const_cast<char*>(kv.c_str()));
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = Slurp(out_path);
  r.err = Slurp(err_path);
  unlink(out_path.c_str());
  unlink(err_path.c_str());
  return r;
}

std::string Describe(const Ran& r) {
  return absl::StrCat("exit ", r.code, "\nstdout:\n", r.out, "stderr:\n", r.err);
}

std::string Profile(const std::string& ns) {
  return absl::StrCat(R"(
apiVersion: booster.dev/v1alpha1
kind: BoosterProfile
metadata: {name: web, namespace: )",
                      ns, R"(}
spec:
  targetRef: {kind: Deployment, name: web}
  tuning:
    sysctls: {net.core.somaxconn: "3001"}
    runtime:
      go: {gomaxprocs: auto, gomemlimit: auto}
      preload: {listenBacklog: 3000, tcpNoDelay: true}
  rollout:
    steps: [50, 100]
    stepDuration: 15s
    progressDeadline: 5m
    analysis: {mode: Time, interval: 1s}
)");
}

class PluginE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::Status s = BuildImages();
    ASSERT_TRUE(s.ok()) << s;
    const std::string crd = EnvOr("BOOSTER_CRD");
    ASSERT_FALSE(crd.empty());
    absl::StatusOr<std::string> r = Kubectl({"apply", "-f", crd});
    ASSERT_TRUE(r.ok()) << r.status();
    r = Kubectl({"wait", "--for=condition=Established", "--timeout=60s",
                 "crd/boosterprofiles.booster.dev"});
    ASSERT_TRUE(r.ok()) << r.status();
  }

  void SetUp() override {
    ASSERT_TRUE(ns_.status().ok()) << ns_.status();
    plugin_ = EnvOr("BOOSTER_PLUGIN_BIN");
    ASSERT_FALSE(plugin_.empty()) << "BOOSTER_PLUGIN_BIN is not set";
    op_ = std::make_unique<OperatorProcess>(ns_.name());
  }

  void TearDown() override {
    if (HasFailure()) {
      std::printf("%s\n%s\n", Diagnose(ns_.name()).c_str(), op_->Logs().c_str());
    }
    if (op_->Running()) (void)op_->Stop(absl::Seconds(20));
    // With no operator left, nothing would remove the finalizer and the namespace would
    // never go away.
    (void)Kubectl({"-n", ns_.name(), "patch", "boosterprofile", "web", "--type=merge", "-p",
                   R"({"metadata":{"finalizers":null}})"});
  }

  const std::string& ns() const { return ns_.name(); }

  // kubectl-booster ARGS -n <ns>.
  Ran Plugin(std::vector<std::string> args) {
    args.insert(args.begin(), plugin_);
    args.push_back("-n");
    args.push_back(ns());
    return Exec(args);
  }

  // The profile as `kubectl-booster get web -o json` prints it.
  absl::StatusOr<Json> Get() {
    Ran r = Plugin({"get", "web", "-o", "json"});
    if (r.code != 0) return absl::UnavailableError(Describe(r));
    return Json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  }

  // Waits, reading through the plugin, until the phase is `phase` (and the step `step`,
  // when given).
  absl::Status WaitPhase(const std::string& phase, absl::Duration timeout, int step = -1) {
    return WaitFor(
        [&]() -> absl::StatusOr<bool> {
          absl::StatusOr<Json> p = Get();
          if (!p.ok()) return p.status();
          std::string got = p->value("/status/phase"_json_pointer, "");
          int at = p->value("/status/currentStep"_json_pointer, 0);
          if (got == phase && (step < 0 || at == step)) return true;
          if (got == "Failed") {
            return absl::FailedPreconditionError(p->value("status", Json::object()).dump());
          }
          return absl::UnavailableError(absl::StrCat(got, " at step ", at));
        },
        timeout, absl::Seconds(1));
  }

  void DeployWebAndOperator() {
    absl::Status s = ApplyJson(DeploymentObject(ns(), "web", kReplicas, HttpServerTemplate("web")));
    ASSERT_TRUE(s.ok()) << s;
    s = WaitRolledOut(ns(), "web", absl::Minutes(3));
    ASSERT_TRUE(s.ok()) << s << Diagnose(ns());
    s = op_->Start();
    ASSERT_TRUE(s.ok()) << s << "\n" << op_->Logs();
    ASSERT_TRUE(Apply(Profile(ns())).ok());
  }

  TestNamespace ns_{"plugin"};
  std::string plugin_;
  std::unique_ptr<OperatorProcess> op_;
};

TEST_F(PluginE2eTest, AWholeRolloutDrivenWithThePluginAlone) {
  const absl::Time start = absl::Now();
  DeployWebAndOperator();
  if (HasFatalFailure()) return;

  // Step 1 (50%): get and status show it.
  absl::Status s = WaitPhase("Progressing", absl::Minutes(3), 1);
  ASSERT_TRUE(s.ok()) << s;
  Ran r = Plugin({"get"});
  ASSERT_EQ(r.code, 0) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr("NAME   TARGET   PHASE         STEP   WEIGHT   VERDICT   AGE\n"
                               "web    web      Progressing   1/2    50%      -"));

  // pause: Paused at step 1, and it holds there past its stepDuration (15s).
  r = Plugin({"pause", "web"});
  ASSERT_EQ(r.code, 0) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr("boosterprofile \"web\" paused (annotation "
                               "booster.dev/paused=true): the rollout holds at step 1"));
  s = WaitPhase("Paused", absl::Minutes(1), 1);
  ASSERT_TRUE(s.ok()) << s;
  r = Plugin({"pause", "web"});
  EXPECT_EQ(r.code, 0) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr("already paused"));
  const absl::Time held_from = absl::Now();
  while (absl::Now() - held_from < absl::Seconds(25)) {
    absl::StatusOr<Json> p = Get();
    ASSERT_TRUE(p.ok()) << p.status();
    ASSERT_EQ(p->value("/status/phase"_json_pointer, ""), "Paused");
    ASSERT_EQ(p->value("/status/currentStep"_json_pointer, 0), 1);
    absl::SleepFor(absl::Seconds(2));
  }

  // resume: Progressing at step 1 again, then step 2 (100%) once step 1 passes.
  r = Plugin({"resume", "web"});
  ASSERT_EQ(r.code, 0) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr("resumed (annotation booster.dev/paused removed): the rollout "
                               "goes on at step 1"));
  r = Plugin({"resume", "web"});
  EXPECT_EQ(r.code, 1) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr("cannot resume boosterprofile \"web\""));
  s = WaitPhase("Progressing", absl::Minutes(2), 2);
  ASSERT_TRUE(s.ok()) << s;

  // promote at step 2; status -w follows the promotion to its end.
  r = Plugin({"promote", "web"});
  ASSERT_EQ(r.code, 0) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr("promoted at step 2"));
  r = Exec({"timeout", "300", plugin_, "status", "web", "-w", "-n", ns()});
  ASSERT_EQ(r.code, 0) << Describe(r);
  std::printf("%s", r.out.c_str());
  EXPECT_THAT(r.out, HasSubstr("PromotedByHand"));
  EXPECT_THAT(r.out, HasSubstr(" Promoted "));
  EXPECT_TRUE(absl::EndsWith(r.out, "boosterprofile \"web\" is Promoted\n")) << r.out;
  // status: the step history from the Events, with step 1's verdict and its time.
  r = Plugin({"status", "web"});
  ASSERT_EQ(r.code, 0) << Describe(r);
  std::printf("%s", r.out.c_str());
  EXPECT_THAT(r.out, HasSubstr("Promoted for"));
  EXPECT_THAT(r.out, HasSubstr("Last verdict:"));
  for (const char* reason : {"Enrolling", "StepStarted", "Paused", "Resumed", "StepPassed",
                             "PromotedByHand", "Promoted"}) {
    EXPECT_THAT(r.out, HasSubstr(absl::StrCat(reason, " "))) << reason;
  }
  bool pass_line = false;
  for (absl::string_view line : absl::StrSplit(r.out, '\n')) {
    if (absl::StrContains(line, "StepPassed")) {
      pass_line = true;
      // TIME, STEP 1, VERDICT Pass.
      EXPECT_TRUE(absl::StartsWith(line, "20")) << line;
      EXPECT_THAT(std::string(line), HasSubstr("Z   1      Pass           StepPassed"));
    }
  }
  EXPECT_TRUE(pass_line) << r.out;

  // explain: the time judge's evidence for step 1.
  r = Plugin({"explain", "web"});
  ASSERT_EQ(r.code, 0) << Describe(r);
  std::printf("%s", r.out.c_str());
  EXPECT_THAT(r.out, HasSubstr("Pass at step 1"));
  EXPECT_THAT(r.out, HasSubstr("time (a step passes once it has run stepDuration with both "
                               "arms ready): ran "));
  EXPECT_THAT(r.out, HasSubstr(" of 15s\n"));

  r = Plugin({"get", "web"});
  EXPECT_THAT(r.out, HasSubstr("web    web      Promoted   2/2    0%       Pass"));
  r = Plugin({"promote", "web"});
  EXPECT_EQ(r.code, 1) << Describe(r);
  EXPECT_EQ(r.err, "Error: cannot promote boosterprofile \"web\": it is already Promoted\n");

  // retry: a second rollout; abort rolls it back; abort again is refused.
  r = Plugin({"retry", "web"});
  ASSERT_EQ(r.code, 0) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr("retried (was Promoted)"));
  s = WaitPhase("Progressing", absl::Minutes(3), 1);
  ASSERT_TRUE(s.ok()) << s;
  r = Plugin({"abort", "web"});
  ASSERT_EQ(r.code, 0) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr("aborted (Progressing at step 1)"));
  s = WaitPhase("RolledBack", absl::Minutes(3));
  ASSERT_TRUE(s.ok()) << s;
  r = Plugin({"abort", "web"});
  EXPECT_EQ(r.code, 1) << Describe(r);
  EXPECT_EQ(r.err, "Error: cannot abort boosterprofile \"web\": it is already RolledBack\n");
  r = Plugin({"status", "web"});
  ASSERT_EQ(r.code, 0) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr("Aborted"));
  EXPECT_THAT(r.out, HasSubstr("RolledBack"));

  // retry once more: a third rollout starts.
  r = Plugin({"retry", "web"});
  ASSERT_EQ(r.code, 0) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr("retried (was RolledBack)"));
  s = WaitPhase("Progressing", absl::Minutes(3), 1);
  ASSERT_TRUE(s.ok()) << s;
  std::printf("whole rollout with the plugin: %s\n",
              absl::FormatDuration(absl::Trunc(absl::Now() - start, absl::Seconds(1))).c_str());
}

TEST_F(PluginE2eTest, ErrorsSayWhatFailed) {
  ASSERT_TRUE(Apply(Profile(ns())).ok());  // no operator: only reads and refusals here

  // A missing profile.
  Ran r = Plugin({"status", "ghost"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, absl::StrCat("Error: boosterprofile \"ghost\" not found in namespace \"", ns(),
                                "\"\n"));

  // A user who may read profiles but not patch them: a ServiceAccount's token.
  ASSERT_TRUE(Kubectl({"-n", ns(), "create", "serviceaccount", "viewer"}).ok());
  ASSERT_TRUE(Kubectl({"-n", ns(), "create", "role", "bp-reader", "--verb=get,list",
                       "--resource=boosterprofiles.booster.dev"})
                  .ok());
  ASSERT_TRUE(Kubectl({"-n", ns(), "create", "rolebinding", "viewer", "--role=bp-reader",
                       absl::StrCat("--serviceaccount=", ns(), ":viewer")})
                  .ok());
  absl::StatusOr<std::string> token = Kubectl({"-n", ns(), "create", "token", "viewer"});
  ASSERT_TRUE(token.ok()) << token.status();
  absl::StatusOr<Json> cfg = GetJson({"config", "view", "--raw", "--minify"});
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  const std::string server = (*cfg)["clusters"][0]["cluster"]["server"];
  const std::string ca = (*cfg)["clusters"][0]["cluster"]["certificate-authority-data"];
  auto kubeconfig = [&](const std::string& path, const std::string& srv, const std::string& user) {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(absl::StrCat("apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n",
                            "- name: c\n  cluster:\n    server: ", srv,
                            "\n    certificate-authority-data: ", ca,
                            "\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\n",
                            "users:\n- name: u\n  user:\n", user)
                   .c_str(),
               f);
    std::fclose(f);
  };
  const std::string viewer = absl::StrCat(::testing::TempDir(), "/viewer-", ns(), ".kubeconfig");
  kubeconfig(viewer, server, absl::StrCat("    token: ", absl::StripAsciiWhitespace(*token), "\n"));
  r = Plugin({"get", "web", "--kubeconfig", viewer});
  EXPECT_EQ(r.code, 0) << Describe(r);
  r = Plugin({"pause", "web", "--kubeconfig", viewer});
  // No status yet (no operator): refused before any write. Give it one and try again.
  EXPECT_EQ(r.code, 1);
  ASSERT_TRUE(
      Kubectl({"-n", ns(), "patch", "boosterprofile", "web", "--subresource=status", "--type=merge",
               "-p", R"({"status":{"phase":"Progressing","currentStep":1}})"})
          .ok());
  r = Plugin({"pause", "web", "--kubeconfig", viewer});
  EXPECT_EQ(r.code, 1) << Describe(r);
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat("Error: forbidden: you may not patch "
                                            "boosterprofiles.booster.dev \"web\" in namespace \"",
                                            ns(), "\"")));
  EXPECT_THAT(r.err, HasSubstr("cannot patch resource \"boosterprofiles\""));
  unlink(viewer.c_str());

  // No cluster at the kubeconfig's server.
  const std::string nowhere = absl::StrCat(::testing::TempDir(), "/nowhere-", ns(), ".kubeconfig");
  kubeconfig(nowhere, "https://127.0.0.1:1", "    token: x\n");
  r = Plugin({"get", "--kubeconfig", nowhere, "--request-timeout", "5s"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("Error: cannot reach the Kubernetes API server at "
                               "https://127.0.0.1:1: "));
  unlink(nowhere.c_str());
}

TEST_F(PluginE2eTest, HelpOfEveryVerbAndKubectlFindsThePlugin) {
  for (const char* verb :
       {"get", "status", "pause", "resume", "promote", "abort", "retry", "explain"}) {
    Ran r = Exec({plugin_, verb, "--help"});
    EXPECT_EQ(r.code, 0) << verb << ": " << Describe(r);
    EXPECT_THAT(r.out, HasSubstr(absl::StrCat("Usage: kubectl booster ", verb))) << verb;
  }
  Ran r = Exec({plugin_, "--help"});
  EXPECT_EQ(r.code, 0) << Describe(r);

  // The cluster's real kubectl, with the plugin's directory first on the PATH.
  const std::string dir = plugin_.substr(0, plugin_.rfind('/'));
  const std::string path = absl::StrCat("PATH=", dir, ":", EnvOr("PATH"));
  r = Exec({ClusterDir() + "/kubectl", "plugin", "list"}, {path});
  EXPECT_EQ(r.code, 0) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr(dir + "/kubectl-booster"));
  r = Exec({ClusterDir() + "/kubectl", "booster", "abort", "--help"}, {path});
  EXPECT_EQ(r.code, 0) << Describe(r);
  EXPECT_THAT(r.out, HasSubstr("Usage: kubectl booster abort NAME"));
  ASSERT_TRUE(Apply(Profile(ns())).ok());
  r = Exec({ClusterDir() + "/kubectl", "booster", "get", "-n", ns()}, {path});
  EXPECT_EQ(r.code, 0) << Describe(r);
  EXPECT_THAT(r.out,
              HasSubstr("NAME   TARGET   PHASE   STEP   WEIGHT   VERDICT   AGE\nweb    web"));
}

}  // namespace
}  // namespace booster::e2e
